/**
 * The paging engine: every row of a (filtered, sorted) Microapp as a `Stream`, walked through
 * skip/limit windows, with nothing lost or repeated without the caller knowing.
 *
 * The server has a silent default row cap, may clamp `limit` silently, sends no total and no
 * cursor, and its windows shift when rows are inserted or deleted during a scan. So:
 *
 * 1. every request sends an explicit `limit`, and `skip` advances by the rows received;
 * 2. a short page is not the end: the scan ends only when nothing follows the current position;
 *    a short page followed by more rows reveals the server's cap, which is recorded;
 * 3. each window after the first re-reads `overlap + 1` rows before the position and finds the last
 *    row emitted (by `_id`, or an earlier one) to emit only what follows it; when no such anchor
 *    is found the scan cannot prove completeness and says so;
 * 4. no row is emitted twice (a bounded window of recent ids);
 * 5. pages are fetched ahead into a bounded buffer, and with `concurrency` several consecutive
 *    windows are in flight at once, emitted in order; any doubt falls back to one at a time;
 * 6. memory is O(page size x (prefetch + concurrency)), whatever the table's size.
 *
 * @since 0.1.0
 */
import { Chunk, Clock, Effect, Either, Fiber, Queue, Stream, Take } from "effect"
import type { DecodedRows } from "./internal/decode.js"
import { idOf } from "./internal/decode.js"
import { type MicroappError, ScanInconsistent, type UnexpectedResponse } from "./MicroappError.js"

/**
 * How a scan pages through the table.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScanOptions {
  /** New rows asked for per request. Default 1000. */
  readonly pageSize?: number | undefined
  /** Windows fetched at once, once the server's page size is known. Default 1. */
  readonly concurrency?: number | undefined
  /** Pages fetched ahead of the consumer. Default 1. */
  readonly prefetch?: number | undefined
  /** Rows re-read before each window to detect shifts; up to this many deletes cause no gap. Default 10. */
  readonly overlap?: number | undefined
  /**
   * When the scan cannot prove it saw every row (no anchor found, or a server that returns a
   * single row per request): fail with `ScanInconsistent` (the default), or go on, counting the
   * event in the summary and logging a warning.
   */
  readonly onInconsistent?: "fail" | "continue" | undefined
}

/**
 * What a scan did. Available while it runs and after it ends.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScanSummary {
  /** Requests answered, discarded and confirming ones included. */
  readonly pages: number
  /** Rows emitted. */
  readonly rows: number
  /** Rows seen again (already emitted) and dropped. */
  readonly duplicatesDropped: number
  /** Windows whose rows had shifted (inserts or deletes before the position) and were realigned. */
  readonly realignments: number
  /** Pages fetched ahead that turned out misaligned and were fetched again. */
  readonly pagesDiscarded: number
  /** The most rows the server returns per request, when it was seen to cap pages below what was asked. */
  readonly serverCap: number | undefined
  /** Attempts beyond the first, over all requests. */
  readonly retries: number
  /** Times completeness could not be proven (only under `onInconsistent: "continue"`). */
  readonly inconsistencies: number
  /** Rows that failed their Schema and were skipped or passed on raw. */
  readonly invalidRows: number
  /** Whether the scan reached a proven end. */
  readonly complete: boolean
  readonly elapsedMillis: number
}

/**
 * A scan: its rows, and its summary (live while the rows are consumed, final after).
 *
 * @since 0.1.0
 * @category models
 */
export interface Scan<A> {
  readonly rows: Stream.Stream<A, MicroappError>
  readonly summary: Effect.Effect<ScanSummary>
}

/** One answer of the server, undecoded, and how many attempts it took. */
export interface RawPage {
  readonly rows: ReadonlyArray<unknown>
  readonly attempts: number
}

/** What the engine needs from the client. */
export interface ScanSource<A> {
  readonly microAppID: string
  readonly path: string
  readonly fetch: (window: { readonly skip: number; readonly limit: number }) => Effect.Effect<RawPage, MicroappError>
  readonly decode: (
    rows: ReadonlyArray<unknown>,
    indexes: ReadonlyArray<number>,
    attempts: number
  ) => Either.Either<DecodedRows<A>, UnexpectedResponse>
}

/** Resumes after the event loop's next check phase (where `setImmediate` callbacks run). */
const nextTurn = Effect.async<void>((resume) => {
  const resumeNow = () => resume(Effect.void)
  if (typeof setImmediate === "function") {
    const handle = setImmediate(resumeNow)
    return Effect.sync(() => clearImmediate(handle))
  }
  const handle = setTimeout(resumeNow, 0)
  return Effect.sync(() => clearTimeout(handle))
})

/**
 * Lets requests just forked reach the socket before a page is decoded, so that the server prepares
 * the next page meanwhile: the fetch fibers run first, then two turns of the event loop, since
 * undici writes a request on a reused connection from a `setImmediate` callback.
 */
const letRequestsOut = Effect.zipRight(Effect.yieldNow(), Effect.zipRight(nextTurn, nextTurn))

/**
 * The most rows in one chunk of the stream: some of Effect's sinks (`Stream.runFold`) recurse once
 * per element of a chunk, and overflow the stack on chunks of several thousand.
 */
const maxChunkSize = 2048

const chunksOf = <A>(rows: Array<A>): ReadonlyArray<Chunk.Chunk<A>> =>
  rows.length <= maxChunkSize
    ? [Chunk.unsafeFromArray(rows)]
    : Array.from(
      { length: Math.ceil(rows.length / maxChunkSize) },
      (_, i) => Chunk.unsafeFromArray(rows.slice(i * maxChunkSize, (i + 1) * maxChunkSize))
    )

/** Defaults of the scan options. */
export const scanDefaults = { pageSize: 1000, concurrency: 1, prefetch: 1, overlap: 10 } as const

/** The ids emitted most recently, in order: the anchors and the duplicate filter. */
class RecentIds {
  private readonly ring: Array<string>
  private readonly members = new Set<string>()
  private next = 0
  constructor(private readonly capacity: number) {
    this.ring = new Array<string>(capacity)
  }
  get size(): number {
    return this.members.size
  }
  has(id: string): boolean {
    return this.members.has(id)
  }
  add(id: string): void {
    if (this.members.size === this.capacity) this.members.delete(this.ring[this.next] ?? "")
    this.ring[this.next] = id
    this.members.add(id)
    this.next = (this.next + 1) % this.capacity
  }
  /** The id emitted `depth` places before the last (0 is the last). */
  back(depth: number): string | undefined {
    return depth < this.members.size ? this.ring[(this.next - 1 - depth + this.capacity * 2) % this.capacity] : undefined
  }
}

/**
 * What the scan hands the consumer through the queue: a page of rows (or the end), taken out once.
 * Whatever waited for it (a taker of the queue, a fiber) may have reached the old generation; were
 * the page still referenced from there once it is dead, it would be kept and promoted with it.
 */
class Parcel<A> {
  constructor(private take: Take.Take<A, MicroappError> | undefined) {}
  open(): Take.Take<A, MicroappError> {
    const take = this.take
    if (take === undefined) throw new Error("scan: a page was taken twice")
    this.take = undefined
    return take
  }
}

/**
 * A window being fetched. Its page is handed over through `slot`, emptied once taken, rather than
 * as the fiber's result: a fiber that waited through garbage collections has reached the old
 * generation, and a page it still referenced once dead would be kept and promoted with it.
 */
interface InFlight {
  readonly window: Window
  readonly fiber: Fiber.RuntimeFiber<void, MicroappError>
  readonly slot: { page: RawPage | undefined }
}

/** One request: rows from `start`, new ones expected from `from`. */
interface Window {
  readonly start: number
  readonly from: number
  readonly limit: number
  /** Planned ahead of an unprocessed window, on the assumption that it will be full. */
  readonly speculative: boolean
}

type Verdict =
  | { readonly _tag: "Accept"; readonly rows: Array<unknown>; readonly indexes: Array<number>; readonly full: boolean }
  | { readonly _tag: "End"; readonly rows: Array<unknown>; readonly indexes: Array<number> }
  | { readonly _tag: "Discard" }
  | { readonly _tag: "Confirm"; readonly rowsSeen: number }
  | { readonly _tag: "Inconsistent"; readonly reason: string }

const positive = (n: number | undefined, fallback: number): number =>
  n === undefined ? fallback : Math.max(1, Math.floor(n))

/**
 * Builds a scan over `source`. Each run of `rows` is a fresh scan; `summary` describes the latest.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <A>(source: ScanSource<A>, options: ScanOptions = {}): Scan<A> => {
  const pageSize = positive(options.pageSize, scanDefaults.pageSize)
  const concurrency = positive(options.concurrency, scanDefaults.concurrency)
  const prefetch = positive(options.prefetch, scanDefaults.prefetch)
  const failOnInconsistent = options.onInconsistent !== "continue"

  const stats = {
    pages: 0,
    rows: 0,
    duplicatesDropped: 0,
    realignments: 0,
    pagesDiscarded: 0,
    serverCap: undefined as number | undefined,
    retries: 0,
    inconsistencies: 0,
    invalidRows: 0,
    complete: false,
    startedAt: 0,
    endedAt: undefined as number | undefined
  }

  const summary: Effect.Effect<ScanSummary> = Effect.map(Clock.currentTimeMillis, (now) => ({
    pages: stats.pages,
    rows: stats.rows,
    duplicatesDropped: stats.duplicatesDropped,
    realignments: stats.realignments,
    pagesDiscarded: stats.pagesDiscarded,
    serverCap: stats.serverCap,
    retries: stats.retries,
    inconsistencies: stats.inconsistencies,
    invalidRows: stats.invalidRows,
    complete: stats.complete,
    elapsedMillis: (stats.endedAt ?? now) - stats.startedAt
  }))

  const run = (queue: Queue.Enqueue<Parcel<A>>) =>
    Effect.gen(function*() {
      Object.assign(stats, {
        pages: 0,
        rows: 0,
        duplicatesDropped: 0,
        realignments: 0,
        pagesDiscarded: 0,
        serverCap: undefined,
        retries: 0,
        inconsistencies: 0,
        invalidRows: 0,
        complete: false,
        startedAt: yield* Clock.currentTimeMillis,
        endedAt: undefined
      })
      const overlap = Math.max(0, Math.floor(options.overlap ?? scanDefaults.overlap))
      // rows re-read before each window: the last row emitted and `overlap` before it
      let reread = overlap + 1
      const recent = new RecentIds(Math.max(2 * (pageSize + reread), 64))
      // position: rows of the result consumed so far, i.e. where the next new row is
      let position = 0
      // new rows a full window yields, once known (first page full, or the server's cap seen)
      let stride: number | undefined
      let largestPage = 0
      let shortPage: number | undefined
      let planned = 0
      const inflight: Array<InFlight> = []

      const inconsistent = (reason: string) =>
        new ScanInconsistent({
          method: "POST",
          path: source.path,
          microAppID: source.microAppID,
          position,
          rowsEmitted: stats.rows,
          pages: stats.pages,
          reason
        })

      const plan = (from: number, speculative: boolean): Window => {
        const back = Math.min(reread, from)
        return { start: from - back, from, limit: back + (stride ?? pageSize), speculative }
      }

      const fetch = (window: Window) =>
        Effect.tap(source.fetch({ skip: window.start, limit: window.limit }), (page) =>
          Effect.sync(() => {
            stats.pages++
            stats.retries += page.attempts - 1
          }))

      const fill = Effect.suspend(() =>
        Effect.forEach(
          Array.from({ length: Math.max(0, (stride === undefined ? 1 : concurrency) - inflight.length) }),
          () => {
            const window = plan(planned, inflight.length > 0)
            planned = window.from + (stride ?? pageSize)
            const slot: InFlight["slot"] = { page: undefined }
            const fetchInto = Effect.map(fetch(window), (page) => {
              slot.page = page
            })
            return Effect.map(Effect.fork(fetchInto), (fiber) => {
              inflight.push({ window, fiber, slot })
            })
          },
          { discard: true }
        )
      )

      const dropInflight = Effect.suspend(() => {
        const fibers = inflight.splice(0).map((entry) => entry.fiber)
        planned = position
        return Fiber.interruptAll(fibers)
      })

      /**
       * Finds the last emitted row in the page, or an earlier one if it is gone, looking first
       * where it should be and then outwards.
       */
      const findAnchor = (
        rows: ReadonlyArray<unknown>,
        expected: number
      ): { readonly index: number; readonly depth: number } | undefined => {
        for (let depth = 0; depth < reread; depth++) {
          const id = recent.back(depth)
          if (id === undefined) return undefined
          const around = expected - depth
          for (let distance = 0; distance < rows.length + Math.abs(around); distance++) {
            if (idOf(rows[around + distance]) === id) return { index: around + distance, depth }
            if (distance > 0 && idOf(rows[around - distance]) === id) return { index: around - distance, depth }
          }
        }
        return undefined
      }

      /** Decides what a page means, and takes its new rows. */
      const place = (window: Window, page: RawPage): Verdict => {
        const rows = page.rows
        const previousLargest = largestPage
        largestPage = Math.max(largestPage, rows.length)
        let after = -1
        if (position > 0) {
          const expected = position - window.start - 1
          const anchor = reread === 0 || recent.size === 0 ? undefined : findAnchor(rows, expected)
          if (anchor !== undefined) {
            after = anchor.index
            if (anchor.index !== expected || anchor.depth > 0) stats.realignments++
          } else if (window.speculative) {
            return { _tag: "Discard" }
          } else if (reread === 0) {
            // without re-read rows the position is all there is to go by
            after = expected
          } else if (failOnInconsistent) {
            return {
              _tag: "Inconsistent",
              reason: `none of the last ${reread} rows emitted is in the window re-read from row ${window.start}: ` +
                `more than ${reread - 1} rows before the position were deleted, or many were inserted`
            }
          } else {
            stats.inconsistencies++
          }
        }
        const fresh: Array<unknown> = []
        const indexes: Array<number> = []
        for (let i = after + 1; i < rows.length; i++) {
          const row = rows[i]
          const id = idOf(row)
          if (id !== undefined) {
            if (recent.has(id)) {
              stats.duplicatesDropped++
              continue
            }
            recent.add(id)
          }
          fresh.push(row)
          indexes.push(i)
        }
        const received = rows.length - (after + 1)
        if (received === 0) {
          if (position === 0) return { _tag: "End", rows: fresh, indexes }
          if (window.speculative) return { _tag: "Discard" }
          // fewer rows than the server has shown it can return: nothing follows the position
          if (rows.length < window.limit && rows.length < previousLargest) return { _tag: "End", rows: fresh, indexes }
          return { _tag: "Confirm", rowsSeen: rows.length }
        }
        if (shortPage !== undefined) learnCap(shortPage)
        const full = rows.length >= window.limit
        shortPage = full ? undefined : rows.length
        position = window.start + rows.length
        return { _tag: "Accept", rows: fresh, indexes, full }
      }

      /** The server returned `cap` rows when more were asked and more existed: it caps pages. */
      const learnCap = (cap: number) => {
        stats.serverCap = Math.max(stats.serverCap ?? 0, cap)
        reread = Math.min(reread, Math.floor(stats.serverCap / 2))
        stride = stats.serverCap - reread
      }

      const emit = (verdict: { readonly rows: Array<unknown>; readonly indexes: Array<number> }, attempts: number) =>
        Effect.suspend(() => {
          if (verdict.rows.length === 0) return Effect.void
          return Either.match(source.decode(verdict.rows, verdict.indexes, attempts), {
            onLeft: (error) => Effect.fail<MicroappError>(error),
            onRight: (decoded) => {
              stats.rows += decoded.rows.length
              stats.invalidRows += decoded.invalid.length
              return Effect.zipRight(
                Effect.forEach(decoded.invalid, (error) => Effect.logWarning(error.message), { discard: true }),
                Effect.forEach(
                  chunksOf(decoded.rows),
                  (chunk) => Queue.offer(queue, new Parcel(Take.chunk(chunk))),
                  { discard: true }
                )
              )
            }
          })
        })

      /** Acts on the next page in order, as `place` judges it; false once the scan is over. */
      const act = (window: Window, page: RawPage): Effect.Effect<boolean, MicroappError> => {
        const verdict = place(window, page)
        switch (verdict._tag) {
          case "Discard": {
            stats.pagesDiscarded++
            return Effect.as(dropInflight, true)
          }
          case "Inconsistent": {
            return Effect.fail(inconsistent(verdict.reason))
          }
          case "End": {
            return dropInflight.pipe(
              Effect.zipRight(emit(verdict, page.attempts)),
              Effect.map(() => {
                stats.complete = true
                return false
              })
            )
          }
          case "Confirm": {
            return Effect.zipRight(
              dropInflight,
              Effect.flatMap(
                Effect.suspend(() => fetch({ start: position, from: position, limit: pageSize, speculative: false })),
                (ahead) => {
                  if (ahead.rows.length === 0) {
                    stats.complete = true
                    return Effect.succeed(false)
                  }
                  // more rows exist past a page of only re-read rows: the cap is no larger than that page
                  learnCap(verdict.rowsSeen)
                  if (reread === 0 && failOnInconsistent) {
                    return Effect.fail(
                      inconsistent(
                        "the server returns at most one row per request, so shifted windows cannot be detected"
                      )
                    )
                  }
                  planned = position
                  return Effect.succeed(true)
                }
              )
            )
          }
          case "Accept": {
            if (stride === undefined && verdict.full) stride = pageSize
            // fetch ahead before waiting for the consumer
            return (verdict.full ? fill : Effect.zipRight(dropInflight, fill)).pipe(
              // one window in flight only: with more, the pause would let more of them be answered before a drop
              Effect.zipRight(concurrency === 1 ? letRequestsOut : Effect.void),
              Effect.zipRight(emit(verdict, page.attempts)),
              Effect.as(true)
            )
          }
        }
      }

      /**
       * One page in order: fetch ahead, take the next answer and act on it; false once the scan is
       * over. Combinators rather than a generator, whose locals would hold the page: whatever waits
       * for the network may reach the old generation, and keep a page promoted long after its step.
       */
      const step = Effect.flatMap(fill, () => {
        const head = inflight.shift()
        if (head === undefined) return Effect.dieMessage("scan: no window in flight")
        return Effect.flatMap(Fiber.join(head.fiber), () => {
          const page = head.slot.page
          head.slot.page = undefined
          if (page === undefined) return Effect.dieMessage("scan: a window ended without its page")
          return act(head.window, page)
        })
      })

      let more = true
      while (more) more = yield* step
    }).pipe(
      Effect.ensuring(Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => (stats.endedAt = now)))),
      Effect.exit,
      Effect.flatMap((exit) =>
        Queue.offer(queue, new Parcel(exit._tag === "Success" ? Take.end : Take.failCause(exit.cause)))
      )
    )

  const rows = Stream.unwrapScoped(
    Effect.gen(function*() {
      const queue = yield* Queue.bounded<Parcel<A>>(prefetch)
      yield* Effect.forkScoped(run(queue))
      return Stream.flattenTake(Stream.map(Stream.fromQueue(queue), (parcel) => parcel.open()))
    })
  )

  return { rows, summary }
}
