/**
 * Many updates as one stream: `client.updateRows(updates, options)` sends a `Stream` of updates
 * with bounded concurrency and hands back one `Outcome` per update, in input order. An update
 * whose request failed after it was sent (a 5xx, a timeout, a dropped connection, a garbled
 * answer) may have been applied: the row is read back and compared before anything is sent again.
 *
 * @since 0.1.0
 */
import { Clock, Data, Effect, Sink } from "effect"
import type { GetRowError, InvalidInput, UpdateRowError } from "./MicroappError.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Updates under way at once (each has at most one request in flight). Default 4, at most 32. */
  readonly concurrency?: number | undefined
  /** After the first outcome that is not `Updated`, start no more updates; those under way finish. */
  readonly stopOnFailure?: boolean | undefined
  /**
   * A graceful stop (e.g. on a signal): when this effect completes, no more updates start and
   * the input is no longer read; the updates under way finish and are reported, then the stream ends.
   */
  readonly stop?: Effect.Effect<unknown> | undefined
  /** Resolve an update that may have been applied by reading the row back. Default true. */
  readonly readBack?: boolean | undefined
  /** The most times one update is sent, resends after a read-back showed it was not applied included. Default 5, at most 20. */
  readonly maxSends?: number | undefined
}

/**
 * The defaults of `Options`.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults = {
  concurrency: 4,
  stopOnFailure: false,
  readBack: true,
  maxSends: 5
} as const satisfies { readonly [K in Exclude<keyof Options, "stop">]-?: NonNullable<Options[K]> }

/**
 * What happened to one update. `index` is its 0-based position in the input stream; `sends` is
 * how often it was sent (each send with the client's own retries of what never reached the server);
 * `retries`, the attempts beyond the first of all its requests (sends and read-backs); `throttled`,
 * whether a client-wide pause (a server's `Retry-After`) held one of them back.
 *
 * - `Updated`: the server said "success", or (`verifiedByReadBack`) the request failed in a way
 *   that may have applied it and reading the row back found every written value in place.
 * - `Refused`: the server said no: a 4xx (401, 403, 404, 400...) or a 200 whose status is not "success".
 * - `Failed`: not applied, after retries: a 429 or a connection never made, or a failure after
 *   which the read-back showed the update not applied, `maxSends` times.
 * - `Unknown`: sent, no usable answer, and the row could not be read back (`readBackError`), or
 *   read-back is off: it may or may not have been applied.
 * - `Invalid`: refused before sending (`InvalidInput` says why); nothing was sent.
 *
 * @since 0.1.0
 * @category models
 */
export type Outcome = Data.TaggedEnum<{
  Updated: Sent & { readonly verifiedByReadBack: boolean }
  Refused: Sent & { readonly error: UpdateRowError }
  Failed: Sent & { readonly error: UpdateRowError }
  Unknown: Sent & {
    /** The failure of the last send. */
    readonly error: UpdateRowError
    /** Why the row could not be read back; `undefined` when read-back is off. */
    readonly readBackError: GetRowError | undefined
  }
  Invalid: {
    readonly index: number
    /** The input's `rowID` when it had one. */
    readonly rowID: string | undefined
    readonly error: InvalidInput
  }
}>

/**
 * What every outcome of an update that was sent says.
 *
 * @since 0.1.0
 * @category models
 */
export interface Sent {
  readonly index: number
  readonly rowID: string
  readonly sends: number
  readonly retries: number
  readonly throttled: boolean
}

/**
 * Constructors and matchers: `Outcome.Updated({...})`, `Outcome.$is("Refused")`, `Outcome.$match`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const Outcome = Data.taggedEnum<Outcome>()

/**
 * Counts of outcomes; `verifiedByReadBack` counts the `updated` ones resolved by reading back;
 * `retries` sums the outcomes' retries, `throttled` counts the updates a client-wide pause held
 * back; `elapsedMillis` is the run's time, from the start of `summarize` to the end of the stream
 * (0 in a summary built with `addOutcome` alone).
 *
 * @since 0.1.0
 * @category models
 */
export interface Summary {
  readonly total: number
  readonly updated: number
  readonly verifiedByReadBack: number
  readonly refused: number
  readonly failed: number
  readonly unknown: number
  readonly invalid: number
  readonly retries: number
  readonly throttled: number
  readonly elapsedMillis: number
}

/**
 * @since 0.1.0
 * @category summary
 */
export const emptySummary: Summary = {
  total: 0,
  updated: 0,
  verifiedByReadBack: 0,
  refused: 0,
  failed: 0,
  unknown: 0,
  invalid: 0,
  retries: 0,
  throttled: 0,
  elapsedMillis: 0
}

/**
 * The summary with one more outcome counted.
 *
 * @since 0.1.0
 * @category summary
 */
export const addOutcome = (counted: Summary, outcome: Outcome): Summary => {
  const total = counted.total + 1
  const summary = outcome._tag === "Invalid" ? counted : {
    ...counted,
    retries: counted.retries + outcome.retries,
    throttled: counted.throttled + (outcome.throttled ? 1 : 0)
  }
  switch (outcome._tag) {
    case "Updated":
      return {
        ...summary,
        total,
        updated: summary.updated + 1,
        verifiedByReadBack: summary.verifiedByReadBack + (outcome.verifiedByReadBack ? 1 : 0)
      }
    case "Refused":
      return { ...summary, total, refused: summary.refused + 1 }
    case "Failed":
      return { ...summary, total, failed: summary.failed + 1 }
    case "Unknown":
      return { ...summary, total, unknown: summary.unknown + 1 }
    case "Invalid":
      return { ...summary, total, invalid: summary.invalid + 1 }
  }
}

/**
 * Folds outcomes into their `Summary`: `Stream.run(client.updateRows(updates), BulkUpdate.summarize)`,
 * or after a `Stream.tap` that records each outcome.
 *
 * @since 0.1.0
 * @category summary
 */
export const summarize: Sink.Sink<Summary, Outcome> = Sink.unwrap(
  Effect.map(Clock.currentTimeMillis, (start) =>
    Sink.mapEffect(
      Sink.foldLeft(emptySummary, addOutcome),
      (summary) => Effect.map(Clock.currentTimeMillis, (end) => ({ ...summary, elapsedMillis: end - start }))
    ))
)
