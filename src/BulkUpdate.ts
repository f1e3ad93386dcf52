/**
 * Many updates as one stream: `client.updateRows(updates, options)` sends a `Stream` of updates
 * with bounded concurrency and hands back one `Outcome` per update, in input order. An update
 * whose request failed after it was sent (a 5xx, a timeout, a dropped connection, a garbled
 * answer) may have been applied: the row is read back and compared before anything is sent again.
 *
 * @since 0.1.0
 */
import type { Data, Effect, Schema, Sink } from "effect"
import * as internal from "./internal/bulkUpdate.js"
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
export const defaults: {
  readonly concurrency: 4
  readonly stopOnFailure: false
  readonly readBack: true
  readonly maxSends: 5
} = internal.defaults

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
export const Outcome: Data.TaggedEnum.Constructor<Outcome> = internal.Outcome

/**
 * Counts of outcomes, a Schema: the figures are declared once, and `addOutcome` adds to each of
 * them what an outcome says. `verifiedByReadBack` counts the `updated` ones resolved by reading
 * back; `retries` sums the outcomes' retries, `throttled` counts the updates a client-wide pause
 * held back; `elapsedMillis` is the run's time, from the start of `summarize` to the end of the
 * stream (0 in a summary built with `addOutcome` alone).
 *
 * @since 0.1.0
 * @category models
 */
export const Summary: Schema.Struct<{
  total: typeof Schema.NonNegativeInt
  updated: typeof Schema.NonNegativeInt
  verifiedByReadBack: typeof Schema.NonNegativeInt
  refused: typeof Schema.NonNegativeInt
  failed: typeof Schema.NonNegativeInt
  unknown: typeof Schema.NonNegativeInt
  invalid: typeof Schema.NonNegativeInt
  retries: typeof Schema.NonNegativeInt
  throttled: typeof Schema.NonNegativeInt
  elapsedMillis: typeof Schema.NonNegativeInt
}> = internal.Summary

/**
 * @since 0.1.0
 * @category models
 */
export interface Summary extends Schema.Schema.Type<typeof Summary> {}

/**
 * @since 0.1.0
 * @category summary
 */
export const emptySummary: Summary = internal.emptySummary

/**
 * The summary with one more outcome counted.
 *
 * @since 0.1.0
 * @category summary
 */
export const addOutcome: (counted: Summary, outcome: Outcome) => Summary = internal.addOutcome

/**
 * Folds outcomes into their `Summary`: `Stream.run(client.updateRows(updates), BulkUpdate.summarize)`,
 * or after a `Stream.tap` that records each outcome.
 *
 * @since 0.1.0
 * @category summary
 */
export const summarize: Sink.Sink<Summary, Outcome> = internal.summarize
