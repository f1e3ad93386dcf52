/**
 * What a scan, or `update --from`, shows on stderr: a live progress line while it runs (only on a
 * terminal) and a one-line summary when it ends.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Schedule } from "effect"
import type * as BulkUpdate from "../BulkUpdate.js"
import type * as Changes from "../Changes.js"
import type { ScanSummary } from "../RowStream.js"
import type * as SqlMirror from "../sql/SqlMirror.js"
import type { Interrupted, ReaderClosed } from "./exitCodes.js"
import { Stdio } from "./stdio.js"

const clearLine = "\r\u001b[2K"

const seconds = (millis: number): string => `${(millis / 1000).toFixed(millis < 10_000 ? 2 : 1)} s`

const plural = (count: number, one: string, many: string): string => `${count} ${count === 1 ? one : many}`

const perSecond = (count: number, elapsedMillis: number): string =>
  elapsedMillis <= 0 ? "-" : String(Math.round((count * 1000) / elapsedMillis))

/**
 * Why a command stopped before its end, when it still prints its closing line.
 *
 * @since 0.1.0
 * @category models
 */
export type EarlyStop = Interrupted | ReaderClosed

/** A closing line begins with `done` only when the command went to its end. */
const ending = (stoppedBy: EarlyStop | undefined): string =>
  stoppedBy === undefined ? "done" : `stopped (${stoppedBy.message})`

/**
 * The live line: rows, pages, rows per second.
 *
 * @since 0.1.0
 * @category formatting
 */
export const progressLine = (summary: ScanSummary): string =>
  `${plural(summary.rows, "row", "rows")}, ${plural(summary.pages, "page", "pages")}, ${
    perSecond(summary.rows, summary.elapsedMillis)
  } rows/s`

/**
 * The live line of `mirror`: rows, pages, rows per second, and what the pass does now (with the
 * point reads so far while it confirms deletes).
 *
 * @since 0.2.0
 * @category formatting
 */
export const mirrorProgressLine = ({ phase, summary }: SqlMirror.Progress): string =>
  `${progressLine(summary)}, ${
    phase === "confirming deletes" ? `confirming deletes (${plural(summary.reads, "read", "reads")})` : phase
  }`

/** A scan's figures: rows, pages, elapsed time, and each disturbance it met, if any. */
const scanParts = (summary: ScanSummary): Array<string> => [
  plural(summary.rows, "row", "rows"),
  plural(summary.pages, "page", "pages"),
  seconds(summary.elapsedMillis),
  ...(summary.serverCap === undefined ? [] : [`server cap ${summary.serverCap} rows per request`]),
  plural(summary.duplicatesDropped, "duplicate dropped", "duplicates dropped"),
  plural(summary.realignments, "realignment", "realignments"),
  ...(summary.appearedBehind === 0 ? [] : [`${summary.appearedBehind} appeared behind the scan (not in it)`]),
  ...(summary.caughtBehind === 0 ? [] : [`${summary.caughtBehind} caught behind the scan (out of place)`]),
  ...(summary.vanishedBehind === 0 ? [] : [`${summary.vanishedBehind} vanished behind the scan`]),
  `up to ${plural(summary.concurrencyReached, "request", "requests")} in flight`,
  ...(summary.retries === 0 ? [] : [plural(summary.retries, "retry", "retries")]),
  ...(summary.inconsistencies === 0 ? [] : [plural(summary.inconsistencies, "inconsistency", "inconsistencies")]),
  ...(summary.invalidRows === 0 ? [] : [plural(summary.invalidRows, "invalid row", "invalid rows")]),
  ...(summary.resumed === 0 ? [] : [`resumed ${summary.resumed === 1 ? "once" : `${summary.resumed} times`}`])
]

const missed = "not exhaustive: rows may have been missed"

/**
 * The closing line: rows, pages, elapsed time, the server's page cap when one was detected,
 * duplicates dropped and realignments (and retries, inconsistencies or invalid rows if any), and
 * whether the scan was exhaustive; `stopped (...)` instead of `done` first when `stoppedBy` cut the
 * scan short.
 *
 * @since 0.1.0
 * @category formatting
 */
export const summaryLine = (summary: ScanSummary, stoppedBy?: EarlyStop): string => {
  // a scan cut short says so first; one that ended says whether it can vouch for every row
  const vouched = stoppedBy !== undefined ? [] : [summary.exhaustive ? "exhaustive" : missed]
  return `${ending(stoppedBy)}: ${[...scanParts(summary), ...vouched].join(", ")}`
}

/**
 * The closing line of a change pass: its counts (`read N (a snapshot)` for a snapshot), the point
 * reads that confirmed its deletes, if any (and the candidates they left unconfirmed, and those held
 * back by a failed control read, with why), then the scan's figures as `summaryLine` has them; a pass
 * that was not exhaustive says that rows may have been missed, and, under exhaustive-only
 * deletes, that it reported no delete.
 *
 * @since 0.2.0
 * @category formatting
 */
export const changesSummaryLine = (summary: Changes.Summary, snapshot = false): string => {
  // a first pass of `changes` writes its rows as snapshot reads ("r"), and says so
  const counts = snapshot ? [`read ${summary.inserted} (a snapshot)`] : [
    `inserted ${summary.inserted}`,
    `updated ${summary.updated}`,
    `deleted ${summary.deleted}`,
    `unchanged ${summary.unchanged}`
  ]
  const confirmed = summary.reads === 0
    ? []
    : [
      `confirmed ${plural(summary.deleted, "delete", "deletes")} with ${plural(summary.reads, "read", "reads")}`,
      ...(summary.unconfirmed === 0 ? [] : [`${summary.unconfirmed} unconfirmed, left for a later pass`]),
      ...(summary.heldBack === 0 ? [] : [
        `${plural(summary.heldBack, "delete", "deletes")} of them held back: ${
          summary.rows === 0
            ? "the pass saw no row to read as a control"
            : "a control read of a row the pass saw did not find it"
        }`
      ])
    ]
  const vouched = summary.exhaustive
    ? "exhaustive"
    : summary.deletes === "skipped"
    ? `${missed}, so no delete is reported`
    : `${missed}: a later pass finds them`
  return `${ending(undefined)}: ${[...counts, ...confirmed, ...scanParts(summary), vouched].join(", ")}`
}

/**
 * The live line of `update --from`: lines done, updated, not updated, lines per second.
 *
 * @since 0.1.0
 * @category formatting
 */
export const updateProgressLine = (summary: BulkUpdate.Summary, elapsedMillis: number): string =>
  `${plural(summary.total, "line", "lines")}, ${summary.updated} updated, ${
    summary.total - summary.updated
  } not updated, ${perSecond(summary.total, elapsedMillis)} lines/s`

/**
 * The closing line of `update --from`: each outcome counted, the retries, the updates a
 * client-wide pause held back, and the time it took; `stopped (...)`
 * instead of `done` first when `stoppedBy` ended it before its input did.
 *
 * @since 0.1.0
 * @category formatting
 */
export const updateSummaryLine = (
  summary: BulkUpdate.Summary,
  elapsedMillis: number,
  stoppedBy?: EarlyStop
): string =>
  `${ending(stoppedBy)}: ${plural(summary.total, "line", "lines")}, ` +
  `${summary.updated} updated (${summary.verifiedByReadBack} after read-back), ` +
  `${summary.refused} refused, ${summary.failed} failed, ${summary.unknown} unknown, ${summary.invalid} invalid, ` +
  `${plural(summary.retries, "retry", "retries")}, ${summary.throttled} throttled, ${seconds(elapsedMillis)}`

/**
 * Runs `effect` while the progress line `line` gives is redrawn on stderr every quarter second;
 * the line is erased when `effect` ends, however it ends.
 *
 * @since 0.1.0
 * @category progress
 */
export const withProgress =
  (line: Effect.Effect<string>, enabled: boolean) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | Stdio> =>
    enabled
      ? Effect.scoped(Effect.gen(function*() {
        const { stderr } = yield* Stdio
        yield* Effect.addFinalizer(() => Effect.ignore(stderr.write(clearLine)))
        const draw = Effect.flatMap(line, (current) => Effect.ignore(stderr.write(`${clearLine}${current}`)))
        yield* Effect.forkScoped(Effect.repeat(draw, Schedule.spaced(Duration.millis(250))))
        return yield* effect
      }))
      : effect
