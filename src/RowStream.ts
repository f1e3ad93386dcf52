/**
 * The paging engine behind `rows` and `scan`: its options and its summary.
 *
 * The server has a silent default row cap, may clamp `limit` silently, sends no total and no
 * cursor, and its skip/limit windows shift when rows are inserted, deleted or re-sorted during a
 * scan. What a scan guarantees all the same, and how, is written once, in docs/scanning.md, "Full-table
 * streams" (numbered 1 to 11) and "Resuming a scan": the engine keeps 1 to 6 as a pure state
 * machine, its driver 7 to 11 and the checkpoints.
 *
 * @since 0.1.0
 */
import { type Effect, Schema, type Stream } from "effect"
import type { Checkpoint } from "./Checkpoint.js"
import type { ScanError } from "./MicroappError.js"

/**
 * How a scan pages through the table.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScanOptions {
  /** New rows asked for per request. Default 1000, at most 10,000. */
  readonly pageSize?: number | undefined
  /**
   * Windows in flight at once, once the server's page size is known: a number, or `"auto"` (the
   * default): start at one, add windows while rows per second improve, back off on pushback.
   * At most 32.
   */
  readonly concurrency?: number | "auto" | undefined
  /** The most windows `"auto"` puts in flight (never more than the client's `maxInFlight`). Default 8, at most 32. */
  readonly maxConcurrency?: number | undefined
  /** Pages fetched ahead of the consumer. Default 1, at most 16. */
  readonly prefetch?: number | undefined
  /** Rows re-read before each window to detect shifts; up to this many deletes cause no gap. Default 10, at most 1,000. */
  readonly overlap?: number | undefined
  /**
   * When the scan cannot prove it saw every row (no anchor found, or a server that returns a
   * single row per request): fail with `ScanInconsistent` (the default), or go on, counting the
   * event in the summary and logging a warning.
   */
  readonly onInconsistent?: "fail" | "continue" | undefined
  /**
   * How emitted ids are remembered to drop duplicates: `"exact"` (the default), every id of the
   * scan, at most 24 bytes each; or `"recent"`, the last `max(2 x (pageSize + overlap + 1), 64)` only, in
   * bounded memory, for tables too large for the id set: a row that moves ahead of the scan by more
   * than that is emitted again.
   */
  readonly dedupe?: "exact" | "recent" | undefined
  /**
   * Goes on from a checkpoint of `pages`: no row it says was emitted is emitted again, and the
   * summary counts the whole scan. It must come from a scan of the same Microapp, filters, sort,
   * `pageSize`, `overlap` and `dedupe`, and hold its ids (`Checkpoint.withIds`); else
   * `InvalidCheckpoint`, before any request (ids no scan could hold, as one twice, fail the run of
   * `rows` or `pages` that finds them). `concurrency`, `maxConcurrency`, `prefetch`,
   * `onInconsistent`, `timeout` and `checkpointEvery` may differ.
   */
  readonly resume?: Checkpoint | undefined
  /**
   * How often `pages` hands out a page with its checkpoint: once the rows of `pages` server pages
   * are gathered, or at least `rows` rows, whichever comes first. Default `{ pages: 1 }`.
   */
  readonly checkpointEvery?: CheckpointEvery | undefined
}

/**
 * How often `pages` hands out a page: after the rows of `pages` server pages, or at least `rows`
 * rows (a server page is never split), whichever comes first.
 *
 * @since 0.1.0
 * @category models
 */
export interface CheckpointEvery {
  readonly pages?: number | undefined
  readonly rows?: number | undefined
}

/**
 * Rows of a scan, with the checkpoint of the state after exactly those rows: a sink that commits
 * both in one transaction, and resumes from the last checkpoint it committed, writes every row
 * once. The last page of a scan that ends holds a complete checkpoint, even with no rows.
 *
 * @since 0.1.0
 * @category models
 */
export interface Page<A> {
  readonly rows: ReadonlyArray<A>
  readonly checkpoint: Checkpoint
}

const Count = Schema.NonNegativeInt

/**
 * What a scan did. Available while it runs and after it ends. A Schema: the figures are declared
 * once, here, and the engine's counters, a checkpoint's and a workflow's summary are made from it.
 *
 * @since 0.2.0
 * @category models
 */
export const ScanSummary = Schema.Struct({
  /** Requests answered, discarded and probing ones included. */
  pages: Count,
  /** Rows emitted. */
  rows: Count,
  /** Rows seen again (already emitted) and dropped. */
  duplicatesDropped: Count,
  /** Windows whose re-read rows had moved (inserts, deletes or re-sorting behind the position). */
  realignments: Count,
  /**
   * Rows that appeared behind the scan's position while it ran: inserted there, or moved there
   * from ahead. They are not in this scan. A lower bound: see docs/scanning.md for what is not seen.
   */
  appearedBehind: Count,
  /**
   * Rows that appeared behind the scan's position but were found among the re-read rows, and
   * emitted there: out of their sorted place, since they arrived after the scan passed it.
   */
  caughtBehind: Count,
  /**
   * Rows that vanished from behind the scan's position while it ran: deleted, or moved ahead (a
   * moved row is then dropped as a duplicate, and counted in `duplicatesDropped`). A lower bound.
   */
  vanishedBehind: Count,
  /** Pages fetched ahead that turned out misaligned and were fetched again. */
  pagesDiscarded: Count,
  /** The most rows the server returns per request, when it was seen to cap pages below what was asked. */
  serverCap: Schema.UndefinedOr(Schema.Int.pipe(Schema.positive())),
  /**
   * Attempts beyond the first, over the requests whose pages the scan used: the retries of a window
   * fetched ahead and then dropped, or abandoned in flight when the scan ended, are not in it (the
   * metric `microapp_retries_total` counts every retry).
   */
  retries: Count,
  /** Times completeness could not be proven (only under `onInconsistent: "continue"`). */
  inconsistencies: Count,
  /** Rows that failed their Schema and were skipped or passed on raw. */
  invalidRows: Count,
  /** The most windows in flight at once. */
  concurrencyReached: Count,
  /** The windows allowed in flight at the end (where `"auto"` settled). */
  concurrency: Count,
  /** Whether the scan reached a proven end. */
  complete: Schema.Boolean,
  /**
   * Complete, and nothing left unproven: no inconsistency, no row arrived behind the position
   * (it may have been re-sorted there from ahead, unread), no row skipped as invalid, and every
   * id kept (`dedupe: "exact"`). Every row that stood in the table, in its place in the sort,
   * from the start of the scan to its end, was then emitted exactly once. See docs/scanning.md for
   * what no scan can see.
   */
  exhaustive: Schema.Boolean,
  /** Times the scan was resumed from a checkpoint. */
  resumed: Count,
  /** Time spent scanning, summed over the runs of a resumed scan. */
  elapsedMillis: Count
})

/**
 * @since 0.1.0
 * @category models
 */
export interface ScanSummary extends Schema.Schema.Type<typeof ScanSummary> {}

/**
 * A scan: its rows, or its pages with their checkpoints, and its summary (live while the rows are
 * consumed, final after). Each run of `rows` or `pages` is a scan of its own; `summary` describes
 * the run started last.
 *
 * @since 0.1.0
 * @category models
 */
export interface Scan<A> {
  readonly rows: Stream.Stream<A, ScanError>
  /** The same rows, gathered into pages that each carry the checkpoint of the state after them. */
  readonly pages: Stream.Stream<Page<A>, ScanError>
  readonly summary: Effect.Effect<ScanSummary>
}

/**
 * The defaults of the scan options.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults = {
  pageSize: 1000,
  concurrency: "auto",
  maxConcurrency: 8,
  prefetch: 1,
  overlap: 10,
  onInconsistent: "fail",
  dedupe: "exact",
  checkpointEvery: { pages: 1 }
} as const
