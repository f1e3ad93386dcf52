/**
 * The Schemas that check what a caller passes against its bounds (`limits.ts`): one for each
 * option type, written against the public type (`checking`), so that the two cannot drift, and
 * `validate`, which turns a refusal into `InvalidInput` naming the option.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import { Duration, Effect, Either, Option, ParseResult, Schedule, Schema } from "effect"
import type * as BulkUpdate from "../BulkUpdate.js"
import type { MicroappClient, RetryOptions } from "../MicroappClient.js"
import { InvalidInput, type MicroappError } from "../MicroappError.js"
import * as Query from "../Query.js"
import { RowMetadata } from "../Row.js"
import type * as RowStream from "../RowStream.js"
import { Sendable } from "./http/plainData.js"
import { bounds, wholeNumberIn } from "./limits.js"

/** What a duration in `[min, max]` must be, said the same way wherever one is refused. */
export const durationReason = (min: Duration.Duration, max: Duration.Duration): string =>
  `must be a duration from ${Duration.format(min)} to ${Duration.format(max)} ("10 seconds", or milliseconds)`

/** Negative (or NaN) inputs, which `Duration` reads as zero. */
const isNegative = (input: unknown): boolean =>
  (typeof input === "number" && !(input >= 0)) || (typeof input === "bigint" && input < 0n) ||
  (typeof input === "string" && input.trim().startsWith("-"))

/** What `Duration.decode` reads, so that the options that take one have the public type `Duration.DurationInput`. */
const durationInput = (reason: string) =>
  Schema.declare((input): input is Duration.DurationInput => Option.isSome(Duration.decodeUnknown(input)), {
    message: () => reason
  })

/** A finite duration in `[min, max]`, from any `Duration.DurationInput`; a negative one is refused, not read as zero. */
export const durationIn = (min: Duration.Duration, max: Duration.Duration) =>
  Schema.transformOrFail(durationInput(durationReason(min, max)), Schema.DurationFromSelf, {
    strict: true,
    decode: (input, _, ast) => {
      const decoded = isNegative(input) ? Option.none() : Duration.decodeUnknown(input)
      return Option.isSome(decoded) && Duration.isFinite(decoded.value) &&
          Duration.between(decoded.value, { minimum: min, maximum: max })
        ? ParseResult.succeed(decoded.value)
        : ParseResult.fail(new ParseResult.Type(ast, input, durationReason(min, max)))
    },
    encode: ParseResult.succeed
  })

/** A request's timeout: above zero, at most `bounds.timeout`. */
export const minTimeout = Duration.millis(1)
export const RequestTimeout = durationIn(minTimeout, bounds.timeout)

/**
 * Compiles only when `schema` takes exactly the public type `I`: the public option types are the
 * one source, and the Schemas that check them against their bounds cannot drift from them.
 */
export const checking = <I>() =>
<S extends Schema.Schema.AnyNoContext>(
  schema:
    & S
    & ([Schema.Schema.Encoded<S>, I] extends [I, Schema.Schema.Encoded<S>] ? SameKeys<I, Schema.Schema.Encoded<S>>
      : "takes another type than its public one")
): S => schema

/** `unknown` when `X` and `Y` have the same keys: an optional key added to one alone is still a drift. */
type SameKeys<X, Y> = [Exclude<keyof X, keyof Y> | Exclude<keyof Y, keyof X>] extends [never] ? unknown
  : "has other keys than its public type"

/** A retry policy, the client's or one call's: the struct first, so that a refusal names the field at fault. */
export const Retry = Schema.Union(
  checking<RetryOptions>()(Schema.Struct({
    maxAttempts: Schema.optional(wholeNumberIn(1, bounds.maxAttempts)),
    initialDelay: Schema.optional(durationIn(Duration.zero, bounds.initialDelay)),
    maxDelay: Schema.optional(durationIn(Duration.zero, bounds.maxDelay)),
    maxElapsed: Schema.optional(durationIn(Duration.zero, bounds.maxElapsed)),
    // a Schedule is the caller's own: its type is all there is to check
    schedule: Schema.optional(
      Schema.declare((input): input is Schedule.Schedule<unknown, MicroappError> => Schedule.isSchedule(input))
    )
  })),
  Schema.Literal(false)
)

/**
 * Turns a Schema failure on input into `InvalidInput` naming the offending option.
 */
export const validateEither = <A, I>(
  schema: Schema.Schema<A, I>,
  /** The call the input is for; `undefined` for input of no call (the client's own options). */
  endpoint: { readonly path: string } | undefined,
  /** What to call the input when the whole of it is at fault. */
  name = "options"
) => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "first", onExcessProperty: "ignore" })
  return (input: unknown): Either.Either<A, InvalidInput> =>
    Either.mapLeft(decode(input), (error) => {
      const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
      return new InvalidInput({
        ...(endpoint === undefined ? {} : { method: "POST", path: endpoint.path }),
        input: issue === undefined || issue.path.length === 0 ? name : issue.path.join("."),
        reason: issue?.message ?? error.message
      })
    })
}

/** `validateEither`, as an Effect. */
export const validate = <A, I>(
  schema: Schema.Schema<A, I>,
  endpoint: { readonly path: string } | undefined,
  name = "options"
) => {
  const check = validateEither(schema, endpoint, name)
  return (input: unknown): Effect.Effect<A, InvalidInput> => Effect.suspend(() => check(input))
}

// --- the option Schemas -------------------------------------------------------------------------

const PageSize = wholeNumberIn(1, bounds.pageSize)
const Concurrency = wholeNumberIn(1, bounds.concurrency)

/** The client's own options, checked against their bounds (the schedule, a function, is not). */
export const TuningSchema = checking<MicroappClient.Tuning>()(Schema.Struct({
  timeout: Schema.optional(RequestTimeout),
  pageSize: Schema.optional(PageSize),
  maxResponseBytes: Schema.optional(wholeNumberIn(bounds.minResponseBytes, bounds.maxResponseBytes)),
  retry: Schema.optional(Retry),
  // a step of the caller's own: its type is all there is to check
  transformClient: Schema.optional(
    Schema.declare((input): input is (client: HttpClient.HttpClient) => HttpClient.HttpClient =>
      typeof input === "function"
    )
  ),
  rateLimit: Schema.optional(
    checking<MicroappClient.RateLimitOptions>()(Schema.Struct({
      requestsPerSecond: Schema.optional(wholeNumberIn(1, bounds.requestsPerSecond)),
      maxInFlight: Schema.optional(wholeNumberIn(1, bounds.maxInFlight)),
      maxPause: Schema.optional(durationIn(Duration.zero, bounds.maxPause))
    }))
  )
}))

/** The options of a scan but those checked where they are used: `resume` and `checkpointEvery`, `timeout` and `retry`. */
export const RowsOptionsSchema = checking<
  Omit<MicroappClient.RowsOptions, "resume" | "checkpointEvery" | keyof MicroappClient.CallOptions>
>()(Schema.Struct({
  ...Query.Selection.fields,
  pageSize: Schema.optional(PageSize),
  concurrency: Schema.optional(Schema.Union(Concurrency, Schema.Literal("auto"))),
  maxConcurrency: Schema.optional(Concurrency),
  dedupe: Schema.optional(Schema.Literal("exact", "recent")),
  prefetch: Schema.optional(wholeNumberIn(1, bounds.prefetch)),
  overlap: Schema.optional(wholeNumberIn(0, bounds.overlap)),
  onInconsistent: Schema.optional(Schema.Literal("fail", "continue"))
}))

/** What `collect` takes besides a scan's options. */
/** How often a scan hands out a checkpoint: a bounded number of pages or rows, one of them at least. */
export const CheckpointEvery = checking<RowStream.CheckpointEvery>()(
  Schema.Struct({
    pages: Schema.optional(Query.Limit.pipe(Schema.lessThanOrEqualTo(bounds.checkpointEveryPages))),
    rows: Schema.optional(Query.Limit.pipe(Schema.lessThanOrEqualTo(bounds.checkpointEveryRows)))
  }).pipe(Schema.filter((every) => every.pages !== undefined || every.rows !== undefined || "must name pages or rows"))
)

export const CollectMax = Schema.Struct({ max: wholeNumberIn(0, bounds.collectMax) })

/** The options of `updateRows`; `stop`, an Effect, is the caller's own: its type is all there is to check. */
export const UpdateRowsOptionsSchema = checking<Omit<BulkUpdate.Options, "stop">>()(Schema.Struct({
  concurrency: Schema.optional(Concurrency),
  stopOnFailure: Schema.optional(Schema.Boolean),
  readBack: Schema.optional(Schema.Boolean),
  maxSends: Schema.optional(wholeNumberIn(1, bounds.maxSends))
}))

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

const Json: Schema.Schema<Json> = Schema.Union(
  Schema.Null,
  Schema.Boolean,
  Schema.Number,
  Schema.String,
  Schema.Array(Schema.suspend(() => Json)),
  Schema.Record({ key: Schema.String, value: Schema.suspend(() => Json) })
)

/** Row keys the server owns (the metadata): writing them is silently ignored, so it is refused here. */
const systemKeys: ReadonlySet<string> = new Set(Object.keys(RowMetadata.fields))

/**
 * One update's options but those of every call (`timeout`, `retry`), its `rowData` plain data a
 * request can carry. Not under `checking`: `rowData` is taken as any value (`Sendable` says what is
 * wrong with it), so its encoded side is `unknown`, not the public `Record`.
 */
export const UpdateOptionsSchema = Schema.Struct({
  rowID: Query.Identifier,
  rowData: Sendable.pipe(
    Schema.compose(Schema.Record({ key: Schema.String, value: Json }), { strict: false }),
    Schema.filter((data) => Object.keys(data).length > 0 || "must name at least one field"),
    Schema.filter((data) => {
      const key = Object.keys(data).find((k) => systemKeys.has(k))
      return key === undefined ||
        `key "${key}" is a system key the server does not let an update change (use the option of that name where there is one)`
    })
  ),
  embeddingRowID: Schema.optional(Query.Identifier),
  userID: Schema.optional(Query.Identifier),
  ignoreActionRules: Schema.optional(Schema.Boolean)
})
