/**
 * The paging engine's logic, as a state machine with no Effect, no I/O and no clock: it plans the
 * skip/limit windows to request and judges each answered page, in order. The driver
 * (`driver.ts`) owns fibers, prefetch, concurrency and the stream.
 *
 * It keeps guarantees 1 to 6 of docs/scanning.md, "Full-table streams", where they are written once.
 *
 * The state is plain data (`state.ts`), changed in place by `plan` and `judge`. Between two judged
 * pages it is all a scan needs to go on: `stateOf` takes it (the windows planned ahead left out),
 * and `resume` starts the same machine from it.
 */
import { Either, type Types } from "effect"
import * as IdSet from "./IdSet.js"
import * as ScanState from "./state.js"

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

/**
 * The engine's state: the scan's (`state.ts`), its cursor and counters changed in place by `plan`
 * and `judge`, its ids in a live set; and where the next window is planned from.
 */
export interface State {
  readonly config: EngineConfig
  /** Where the next window is planned from. */
  planned: number
  readonly cursor: Types.Mutable<ScanState.Cursor>
  readonly counters: Types.Mutable<ScanState.Counters>
  readonly seen: IdSet.IdSet
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

/** A scan at its start. `journal`: keep what `stateOf` needs (for an exact set, 16 bytes an id more). */
export const initial = (config: EngineConfig, journal = false): State => ({
  config,
  planned: 0,
  cursor: {
    position: 0,
    stride: null,
    reread: config.overlap + 1,
    tail: [],
    largestPage: 0,
    shortPage: null,
    probe: null,
    stalled: 0,
    capSeen: null
  },
  counters: { ...ScanState.noCounters },
  seen: config.dedupe === "exact" ? IdSet.exact({ journal }) : IdSet.recent(recentCapacity(config))
})

/**
 * The state as it is, for a checkpoint: the windows planned ahead are not in it. `tail` and
 * `probe` are replaced, never changed in place, so they are shared; an exact set needs a journal.
 */
export const stateOf = (state: State): ScanState.ScanState => {
  const seen = state.seen.contents()
  if (seen === undefined) throw new Error("scan: a snapshot of an id set kept without a journal")
  return { state: { ...state.cursor }, counters: { ...state.counters }, seen }
}

/**
 * The machine started again from `snapshot`, taken under the same page size, overlap and dedupe,
 * planning from its position; or why the snapshot's ids cannot be a set.
 */
export const resume = (
  config: EngineConfig,
  snapshot: ScanState.ScanState,
  journal = false
): Either.Either<State, string> =>
  Either.map(IdSet.restore(snapshot.seen, { journal, capacity: recentCapacity(config) }), (seen) => ({
    config,
    planned: snapshot.state.position,
    cursor: { ...snapshot.state },
    counters: { ...snapshot.counters },
    seen
  }))

/**
 * Whether the scan proved it emitted, once, every row that stood in the table through it, as far
 * as re-read rows can show: it ended, never went on without proof, saw no row arrive behind its
 * position (an arrival may be a row re-sorted there from ahead, never read), and kept every id.
 */
export const proven = (counters: ScanState.Counters, dedupe: EngineConfig["dedupe"]): boolean =>
  counters.complete && counters.inconsistencies === 0 && counters.appearedBehind === 0 && dedupe === "exact"

/** How many windows to keep in flight, when `concurrency` are allowed. */
export const wanted = (state: State, concurrency: number): number =>
  state.cursor.stride === null || state.cursor.probe !== null ? 1 : concurrency

/** The next window to request; windows after the first in flight are speculative. */
export const plan = (state: State, speculative: boolean): Window => {
  const cursor = state.cursor
  if (cursor.probe !== null) {
    // from the rows passed last, to see that they have not moved, leaving room under a cap for more
    const start = cursor.probe.past ? cursor.position : cursor.position - probeReread(state, cursor.probe.rowsSeen)
    return { start, limit: cursor.position - start + state.config.pageSize, speculative }
  }
  const from = state.planned
  const back = Math.min(cursor.reread, from)
  const stride = cursor.stride ?? state.config.pageSize
  state.planned = from + stride
  return { start: from - back, limit: back + stride, speculative }
}

/** Rows a probe re-reads: the tail, but no more than half of what the server last returned. */
const probeReread = (state: State, rowsSeen: number): number =>
  Math.min(state.cursor.tail.length, Math.max(1, Math.floor(rowsSeen / 2)))

/** Times in a row a server answers a length to windows that asked for more, while rows followed, to prove it a cap. */
export const capProof = 3

/**
 * The server returned `cap` rows when more were asked and more existed: it caps pages once it has
 * done so `capProof` times in a row and never returned more. Returns whether the cap is learned.
 */
const suspectCap = (state: State, cap: number): boolean => {
  const cursor = state.cursor
  const times = cursor.capSeen?.pageLength === cap ? cursor.capSeen.times + 1 : 1
  cursor.capSeen = { pageLength: cap, times }
  const proven = times >= capProof && cursor.largestPage <= cap
  if (proven) learnCap(state, cap)
  return proven
}

/** The server caps pages at `cap` rows: the re-read rows and the stride fit under it. */
const learnCap = (state: State, cap: number): void => {
  const cursor = state.cursor
  const serverCap = Math.max(state.counters.serverCap ?? 0, cap)
  state.counters.serverCap = serverCap
  cursor.reread = Math.min(cursor.reread, Math.floor(serverCap / 2))
  cursor.tail = cursor.reread === 0 ? [] : cursor.tail.slice(-cursor.reread)
  cursor.stride = serverCap - cursor.reread
}

const none = { rows: [], indexes: [] }

/** Nothing to emit but `taken`; the windows ahead are dropped and planned again from the position. */
const replan = (
  state: State,
  taken: { readonly rows: Array<unknown>; readonly indexes: Array<number> } = none
): Verdict => {
  state.planned = state.cursor.position
  return { _tag: "Continue", ...taken, dropAhead: true }
}

/**
 * The anchor in `ids`: the last tail row found before the first unseen row that follows a tail
 * row. A tail row past an unseen row may have moved ahead past new rows; an earlier anchor is the
 * cautious reading of a move that could be an insert.
 */
const findAnchor = (
  state: State,
  ids: ReadonlyArray<string | null>
): { readonly index: number; readonly order: number } | undefined => {
  const order = new Map<string, number>()
  state.cursor.tail.forEach((id, i) => id !== null && order.set(id, i))
  let anchor: { index: number; order: number } | undefined
  for (let index = 0; index < ids.length; index++) {
    const id = ids[index]
    const at = typeof id === "string" ? order.get(id) : undefined
    if (at !== undefined) {
      anchor = { index, order: at }
    } else if (anchor !== undefined && (typeof id !== "string" || !state.seen.has(id))) {
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
const account = (counters: Types.Mutable<ScanState.Counters>, net: number, caught: number): void => {
  const vanished = Math.max(0, -net, caught - net, counters.duplicatesDropped - counters.vanishedBehind)
  counters.vanishedBehind += vanished
  counters.appearedBehind += vanished + net - caught
  counters.caughtBehind += caught
}

/**
 * Takes every row of the page not emitted before, and counts the rows past `after` (the anchor)
 * that were: duplicates. Rows up to the anchor are re-read rows, but for those never seen.
 */
const take = (state: State, rows: ReadonlyArray<unknown>, ids: ReadonlyArray<string | null>, after: number) => {
  const fresh: Array<unknown> = []
  const indexes: Array<number> = []
  let caught = 0
  for (let i = 0; i < rows.length; i++) {
    const id = ids[i]
    // a row without an id cannot be told from a re-read one: only past the anchor is it new
    if (typeof id !== "string" ? i <= after : !state.seen.add(id)) {
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
  reason:
    `none of the last ${state.cursor.tail.length} rows passed is in the window re-read from row ${window.start}: ` +
    `more than ${state.cursor.tail.length - 1} rows before the position were deleted or moved, or many were inserted`
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
 * to sort out. From the position: a new row there means the server caps pages, or one was
 * appended meanwhile: the two look alike, so the cap counts once answered so `capProof` times.
 */
const judgeProbe = (
  state: State,
  window: Window,
  ids: ReadonlyArray<string | null>,
  { rowsSeen, short }: ScanState.Cursor["probe"] & {}
): Verdict => {
  const cursor = state.cursor
  cursor.probe = null
  if (window.start < cursor.position) {
    const reread = cursor.position - window.start
    const tail = cursor.tail.slice(-reread)
    if (ids.length < reread || tail.some((id, i) => ids[i] !== id)) return replan(state)
    if (ids.length === reread && cursor.largestPage > reread) return end(state)
    // a server that has never returned more than one row may return only that row whatever follows
    if (ids.length === reread) {
      cursor.probe = { rowsSeen, past: true, short }
      return replan(state)
    }
  } else if (ids.length === 0) {
    return end(state)
  } else if (typeof ids[0] === "string" && state.seen.has(ids[0])) {
    // a row already passed is at the position: the table shifted
    return replan(state)
  }
  // a full page that held only rows already passed was shifted, not capped
  if (short && suspectCap(state, rowsSeen) && cursor.reread === 0) {
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
  const cursor = state.cursor
  const counters = state.counters
  counters.pages++
  counters.retries += attempts - 1
  const ids = rows.map(IdSet.idOf)
  const previousLargest = cursor.largestPage
  cursor.largestPage = Math.max(cursor.largestPage, rows.length)
  if (cursor.probe !== null) return judgeProbe(state, window, ids, cursor.probe)
  const first = cursor.position === 0
  // the index of the last row already passed, and how many more rows are behind it than before
  let after = -1
  let net = 0
  if (!first) {
    const anchor = cursor.tail.length === 0 ? undefined : findAnchor(state, ids)
    if (anchor !== undefined) {
      after = anchor.index
      net = window.start + anchor.index + 1 - cursor.position
      if (net !== 0 || anchor.order !== cursor.tail.length - 1) counters.realignments++
    } else if (window.speculative) {
      counters.pagesDiscarded++
      return replan(state)
    } else {
      if (cursor.tail.length > 0 && state.config.onInconsistent === "fail") return inconsistent(state, window)
      if (cursor.tail.length > 0) counters.inconsistencies++
      // without re-read rows the position is all there is to go by
      after = cursor.position - window.start - 1
    }
  }
  const taken = take(state, rows, ids, after)
  if (!first) account(counters, net, taken.caught)
  const full = rows.length >= window.limit
  const received = rows.length - (after + 1)
  if (first && received === 0) return end(state)
  if (received > 0) {
    // the last page was short, yet more rows followed: the server caps pages, or rows vanished
    // from it or were appended meanwhile. A cap of one leaves no row to re-read: the probe finds it
    if (cursor.shortPage !== null && cursor.shortPage > 1) suspectCap(state, cursor.shortPage)
    cursor.shortPage = full ? null : rows.length
    if (cursor.stride === null && full) cursor.stride = state.config.pageSize
  }
  cursor.position = window.start + rows.length
  cursor.tail = ids.slice(Math.max(0, ids.length - cursor.reread))
  if (received > 0) {
    cursor.stalled = 0
    if (!full) state.planned = cursor.position
    return { _tag: "Continue", rows: taken.rows, indexes: taken.indexes, dropAhead: !full }
  }
  // nothing past the position: a page shorter than one the server has returned: nothing follows the position
  if (!full && rows.length < previousLargest) return end(state, taken)
  if (++cursor.stalled >= stallLimit) {
    // going on cannot help, whatever `onInconsistent` says: the scan would never end
    return {
      _tag: "Inconsistent",
      reason: `${stallLimit} windows in a row held only rows already passed, without showing the end of the table: ` +
        "the server may ignore skip"
    }
  }
  cursor.probe = { rowsSeen: rows.length, past: false, short: !full }
  return replan(state, taken)
}
