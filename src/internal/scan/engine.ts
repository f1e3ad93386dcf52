/**
 * The paging engine's logic, as a state machine with no Effect, no I/O and no clock: it plans the
 * skip/limit windows to request and judges each answered page, in order. The driver
 * (`internal/scan.ts`) owns fibers, prefetch, concurrency and the stream.
 *
 * It keeps guarantees 1 to 6 of the README's "Full-table streams", where they are written once.
 *
 * The state is plain data, changed in place by `plan` and `judge`. Between two judged pages it is
 * all a scan needs to go on: `snapshot` takes it (the windows planned ahead left out), and
 * `resume` starts the same machine from it.
 */
import { Either } from "effect"
import * as IdSet from "./IdSet.js"

/** What the engine is told once, at the start. */
export interface EngineConfig {
  readonly pageSize: number
  readonly overlap: number
  readonly onInconsistent: "fail" | "continue"
  /** "exact": every id emitted; or the last `pageSize + overlap` times two only. */
  readonly dedupe: "exact" | "recent"
}

/** One request: rows from `start`, at most `limit`. */
export interface Window {
  readonly start: number
  readonly limit: number
  /** Planned ahead of an unjudged window, assuming it comes back full and in place. */
  readonly speculative: boolean
}

/** The figures of a scan that the engine keeps (the driver adds time, rows decoded, concurrency). */
export interface Counters {
  pages: number
  retries: number
  emitted: number
  duplicatesDropped: number
  realignments: number
  pagesDiscarded: number
  inconsistencies: number
  appearedBehind: number
  caughtBehind: number
  vanishedBehind: number
  serverCap: number | undefined
  complete: boolean
}

export interface State {
  readonly config: EngineConfig
  /** Rows of the result behind the scan, in the coordinates of the latest page. */
  position: number
  /** Where the next window is planned from. */
  planned: number
  /** New rows a full window yields, once known (a full page seen, or the server's cap). */
  stride: number | undefined
  /** Rows re-read before each window. */
  reread: number
  /** Ids of the rows before the position, as last read, oldest first (at most `reread`). */
  tail: Array<string | undefined>
  largestPage: number
  /** The length of the last page, when it was short: a cap, if more rows follow. */
  shortPage: number | undefined
  /**
   * A page held only rows already passed, and as many as any page: the next window asks whether
   * anything follows the position. `rowsSeen`, that page's length, is the server's cap if
   * something does; `past`: ask from the position itself, not from the rows passed last.
   */
  probe: { readonly rowsSeen: number; readonly past: boolean } | undefined
  /** Windows in a row that found nothing past the position, yet did not show the end. */
  stalled: number
  readonly seen: IdSet.IdSet
  readonly counters: Counters
}

/** What a page's rows mean: `rows` to emit (with their indexes in the page), and what comes next. */
export type Verdict =
  /** Go on; `dropAhead`: the windows planned ahead are misplaced and must be dropped. */
  | {
    readonly _tag: "Continue"
    readonly rows: Array<unknown>
    readonly indexes: Array<number>
    readonly dropAhead: boolean
  }
  /** The last rows: the scan is complete. */
  | { readonly _tag: "End"; readonly rows: Array<unknown>; readonly indexes: Array<number> }
  | { readonly _tag: "Inconsistent"; readonly reason: string }

/** The ids `dedupe: "recent"` keeps. */
export const recentCapacity = (config: { readonly pageSize: number; readonly overlap: number }): number =>
  Math.max(2 * (config.pageSize + config.overlap + 1), 64)

/** A scan at its start. `journal`: keep what `snapshot` needs (for an exact set, 16 bytes an id more). */
export const initial = (config: EngineConfig, journal = false): State => ({
  config,
  position: 0,
  planned: 0,
  stride: undefined,
  reread: config.overlap + 1,
  tail: [],
  largestPage: 0,
  shortPage: undefined,
  probe: undefined,
  stalled: 0,
  seen: config.dedupe === "exact" ? IdSet.exact({ journal }) : IdSet.recent(recentCapacity(config)),
  counters: counters()
})

/** The state after a judged page, as a value: what a checkpoint holds of the engine. */
export interface Snapshot {
  readonly position: number
  readonly stride: number | undefined
  readonly reread: number
  readonly tail: ReadonlyArray<string | undefined>
  readonly largestPage: number
  readonly shortPage: number | undefined
  readonly probe: { readonly rowsSeen: number; readonly past: boolean } | undefined
  readonly stalled: number
  readonly counters: Readonly<Counters>
  readonly seen: IdSet.Contents
}

/**
 * The state as it is, for a checkpoint: the windows planned ahead are not in it. `tail` and
 * `probe` are replaced, never changed in place, so they are shared; an exact set needs a journal.
 */
export const snapshot = (state: State): Snapshot => {
  const seen = state.seen.contents()
  if (seen === undefined) throw new Error("scan: a snapshot of an id set kept without a journal")
  return {
    position: state.position,
    stride: state.stride,
    reread: state.reread,
    tail: state.tail,
    largestPage: state.largestPage,
    shortPage: state.shortPage,
    probe: state.probe,
    stalled: state.stalled,
    counters: { ...state.counters },
    seen
  }
}

/**
 * The machine started again from `snapshot`, taken under the same page size, overlap and dedupe,
 * planning from its position; or why the snapshot's ids cannot be a set.
 */
export const resume = (config: EngineConfig, snapshot: Snapshot, journal = false): Either.Either<State, string> =>
  Either.map(IdSet.restore(snapshot.seen, { journal, capacity: recentCapacity(config) }), (seen) => ({
    config,
    position: snapshot.position,
    planned: snapshot.position,
    stride: snapshot.stride,
    reread: snapshot.reread,
    tail: [...snapshot.tail],
    largestPage: snapshot.largestPage,
    shortPage: snapshot.shortPage,
    probe: snapshot.probe,
    stalled: snapshot.stalled,
    seen,
    counters: { ...snapshot.counters }
  }))

/**
 * Whether the scan proved it emitted, once, every row that stood in the table through it, as far
 * as re-read rows can show: it ended, never went on without proof, saw no row arrive behind its
 * position (an arrival may be a row re-sorted there from ahead, never read), and kept every id.
 */
export const proven = (counters: Readonly<Counters>, dedupe: EngineConfig["dedupe"]): boolean =>
  counters.complete && counters.inconsistencies === 0 && counters.appearedBehind === 0 && dedupe === "exact"

/** The counters of a scan that has not judged a page. */
export const counters = (): Counters => ({
  pages: 0,
  retries: 0,
  emitted: 0,
  duplicatesDropped: 0,
  realignments: 0,
  pagesDiscarded: 0,
  inconsistencies: 0,
  appearedBehind: 0,
  caughtBehind: 0,
  vanishedBehind: 0,
  serverCap: undefined,
  complete: false
})

/** How many windows to keep in flight, when `concurrency` are allowed. */
export const wanted = (state: State, concurrency: number): number =>
  state.stride === undefined || state.probe !== undefined ? 1 : concurrency

/** The next window to request; windows after the first in flight are speculative. */
export const plan = (state: State, speculative: boolean): Window => {
  if (state.probe !== undefined) {
    // from the rows passed last, to see that they have not moved, leaving room under a cap for more
    const start = state.probe.past ? state.position : state.position - probeReread(state, state.probe.rowsSeen)
    return { start, limit: state.position - start + state.config.pageSize, speculative }
  }
  const from = state.planned
  const back = Math.min(state.reread, from)
  const stride = state.stride ?? state.config.pageSize
  state.planned = from + stride
  return { start: from - back, limit: back + stride, speculative }
}

/** Rows a probe re-reads: the tail, but no more than half of what the server last returned. */
const probeReread = (state: State, rowsSeen: number): number =>
  Math.min(state.tail.length, Math.max(1, Math.floor(rowsSeen / 2)))

/** The server returned `cap` rows when more were asked and more existed: it caps pages. */
const learnCap = (state: State, cap: number): void => {
  const serverCap = Math.max(state.counters.serverCap ?? 0, cap)
  state.counters.serverCap = serverCap
  state.reread = Math.min(state.reread, Math.floor(serverCap / 2))
  state.tail = state.reread === 0 ? [] : state.tail.slice(-state.reread)
  state.stride = serverCap - state.reread
}

const none = { rows: [], indexes: [] }

/** Nothing to emit but `taken`; the windows ahead are dropped and planned again from the position. */
const replan = (
  state: State,
  taken: { readonly rows: Array<unknown>; readonly indexes: Array<number> } = none
): Verdict => {
  state.planned = state.position
  return { _tag: "Continue", ...taken, dropAhead: true }
}

/**
 * The anchor in `ids`: the last tail row found before the first unseen row that follows a tail
 * row. A tail row past an unseen row may have moved ahead past new rows; an earlier anchor is the
 * cautious reading of a move that could be an insert.
 */
const findAnchor = (
  state: State,
  ids: ReadonlyArray<string | undefined>
): { readonly index: number; readonly order: number } | undefined => {
  const order = new Map<string, number>()
  state.tail.forEach((id, i) => id !== undefined && order.set(id, i))
  let anchor: { index: number; order: number } | undefined
  for (let index = 0; index < ids.length; index++) {
    const id = ids[index]
    const at = id === undefined ? undefined : order.get(id)
    if (at !== undefined) {
      anchor = { index, order: at }
    } else if (anchor !== undefined && (id === undefined || !state.seen.has(id))) {
      break
    }
  }
  return anchor
}

/**
 * Counts the rows that appeared behind the position, or vanished from it, since the last page:
 * the least numbers that explain what the scan saw. `net`: how many more rows are behind the
 * anchor now; `caught`: rows behind it seen for the first time (emitted all the same); and every
 * duplicate dropped so far is a row that left the part behind the position.
 */
const account = (counters: Counters, net: number, caught: number): void => {
  const vanished = Math.max(0, -net, caught - net, counters.duplicatesDropped - counters.vanishedBehind)
  counters.vanishedBehind += vanished
  counters.appearedBehind += vanished + net - caught
  counters.caughtBehind += caught
}

/**
 * Takes every row of the page not emitted before, and counts the rows past `after` (the anchor)
 * that were: duplicates. Rows up to the anchor are re-read rows, but for those never seen.
 */
const take = (state: State, rows: ReadonlyArray<unknown>, ids: ReadonlyArray<string | undefined>, after: number) => {
  const fresh: Array<unknown> = []
  const indexes: Array<number> = []
  let caught = 0
  for (let i = 0; i < rows.length; i++) {
    const id = ids[i]
    // a row without an id cannot be told from a re-read one: only past the anchor is it new
    if (id === undefined ? i <= after : !state.seen.add(id)) {
      if (i > after) state.counters.duplicatesDropped++
      continue
    }
    fresh.push(rows[i])
    indexes.push(i)
    if (i <= after) caught++
  }
  state.counters.emitted += fresh.length
  return { rows: fresh, indexes, caught }
}

/**
 * Windows in a row that may find nothing past the position, and not end, before the scan gives
 * up: a server that ignores `skip` answers every window with rows already passed, and the scan
 * would read them forever. A table takes that many changes between requests to do it.
 */
export const stallLimit = 8

const inconsistent = (state: State, window: Window): Verdict => ({
  _tag: "Inconsistent",
  reason: `none of the last ${state.tail.length} rows passed is in the window re-read from row ${window.start}: ` +
    `more than ${state.tail.length - 1} rows before the position were deleted or moved, or many were inserted`
})

const end = (
  state: State,
  taken: { readonly rows: Array<unknown>; readonly indexes: Array<number> } = none
): Verdict => {
  state.counters.complete = true
  return { _tag: "End", rows: taken.rows, indexes: taken.indexes }
}

/**
 * A probe's answer. From the rows passed last: those rows alone, in place, are the end; more rows
 * after them mean the server caps pages; anything else is a shift, for a window with re-read rows
 * to sort out. From the position: a new row there means the server caps pages (or one was
 * appended meanwhile: the two look alike, and the scan takes the safe reading).
 */
const judgeProbe = (
  state: State,
  window: Window,
  ids: ReadonlyArray<string | undefined>,
  rowsSeen: number
): Verdict => {
  state.probe = undefined
  if (window.start < state.position) {
    const reread = state.position - window.start
    const tail = state.tail.slice(-reread)
    if (ids.length < reread || tail.some((id, i) => ids[i] !== id)) return replan(state)
    if (ids.length === reread && state.largestPage > reread) return end(state)
    // a server that has never returned more than one row may return only that row whatever follows
    if (ids.length === reread) {
      state.probe = { rowsSeen, past: true }
      return replan(state)
    }
  } else if (ids.length === 0) {
    return end(state)
  } else if (ids[0] !== undefined && state.seen.has(ids[0])) {
    // a row already passed is at the position: the table shifted
    return replan(state)
  }
  learnCap(state, rowsSeen)
  if (state.reread === 0) {
    if (state.config.onInconsistent === "fail") {
      return {
        _tag: "Inconsistent",
        reason: "the server returns at most one row per request, so shifted windows cannot be detected"
      }
    }
    // from here on, shifts go unseen
    state.counters.inconsistencies++
  }
  return replan(state)
}

/**
 * Judges the answer to `window`, the next in order, and moves the state on. `attempts`: how many
 * requests it took.
 */
export const judge = (state: State, window: Window, rows: ReadonlyArray<unknown>, attempts: number): Verdict => {
  const counters = state.counters
  counters.pages++
  counters.retries += attempts - 1
  const ids = rows.map(IdSet.idOf)
  if (state.probe !== undefined) return judgeProbe(state, window, ids, state.probe.rowsSeen)
  const previousLargest = state.largestPage
  state.largestPage = Math.max(state.largestPage, rows.length)
  const first = state.position === 0
  // the index of the last row already passed, and how many more rows are behind it than before
  let after = -1
  let net = 0
  if (!first) {
    const anchor = state.tail.length === 0 ? undefined : findAnchor(state, ids)
    if (anchor !== undefined) {
      after = anchor.index
      net = window.start + anchor.index + 1 - state.position
      if (net !== 0 || anchor.order !== state.tail.length - 1) counters.realignments++
    } else if (window.speculative) {
      counters.pagesDiscarded++
      return replan(state)
    } else {
      if (state.tail.length > 0 && state.config.onInconsistent === "fail") return inconsistent(state, window)
      if (state.tail.length > 0) counters.inconsistencies++
      // without re-read rows the position is all there is to go by
      after = state.position - window.start - 1
    }
  }
  const taken = take(state, rows, ids, after)
  if (!first) account(counters, net, taken.caught)
  const full = rows.length >= window.limit
  const received = rows.length - (after + 1)
  if (first && received === 0) return end(state)
  if (received > 0) {
    // the last page was short, yet more rows followed: the server caps pages (or rows were
    // appended meanwhile). A cap of one would leave no row to re-read: the probe confirms that one
    if (state.shortPage !== undefined && state.shortPage > 1) learnCap(state, state.shortPage)
    state.shortPage = full ? undefined : rows.length
    if (state.stride === undefined && full) state.stride = state.config.pageSize
  }
  state.position = window.start + rows.length
  state.tail = ids.slice(Math.max(0, ids.length - state.reread))
  if (received > 0) {
    state.stalled = 0
    if (!full) state.planned = state.position
    return { _tag: "Continue", rows: taken.rows, indexes: taken.indexes, dropAhead: !full }
  }
  // nothing past the position: a page shorter than one the server has returned: nothing follows the position
  if (!full && rows.length < previousLargest) return end(state, taken)
  if (++state.stalled >= stallLimit) {
    // going on cannot help, whatever `onInconsistent` says: the scan would never end
    return {
      _tag: "Inconsistent",
      reason: `${stallLimit} windows in a row held only rows already passed, without showing the end of the table: ` +
        "the server may ignore skip"
    }
  }
  state.probe = { rowsSeen: rows.length, past: false }
  return replan(state, taken)
}
