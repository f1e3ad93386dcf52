/**
 * The bounds of every number a caller passes, in one place: the validation Schemas read them, and
 * docs/configuration.md's table lists them with their reasons. No accepted value makes the client start an
 * unbounded number of requests or hold an unbounded amount of memory.
 */
import { Duration, Effect, Either, Option, ParseResult, Schedule, Schema } from "effect"
import type { RetryOptions } from "../MicroappClient.js"
import { InvalidInput, type MicroappError } from "../MicroappError.js"

export const bounds = {
  /** Rows per request (`pageSize`, `query`'s `limit`): the service's own default is 1,000. */
  pageSize: 10_000,
  /** Windows of one scan in flight (`concurrency`, `maxConcurrency`), updates under way at once. */
  concurrency: 32,
  /** Pages buffered ahead of the consumer. */
  prefetch: 16,
  /** Rows re-read before each window. */
  overlap: 1_000,
  /** Rows `collect` may hold. */
  collectMax: 10_000_000,
  /** Sends of one update by `updateRows`. */
  maxSends: 20,
  /** Attempts of one request, the first included. */
  maxAttempts: 20,
  /** Requests in flight for one client (`rateLimit.maxInFlight`). */
  maxInFlight: 1_024,
  requestsPerSecond: 10_000,
  /** The body of one answer (`maxResponseBytes`), from 1 KiB. */
  minResponseBytes: 1_024,
  maxResponseBytes: 256 * 1024 * 1024,
  /** Per request (`timeout`), from 1 ms. */
  timeout: Duration.hours(1),
  initialDelay: Duration.minutes(1),
  maxDelay: Duration.minutes(10),
  maxElapsed: Duration.hours(1),
  maxPause: Duration.hours(1),
  /** Levels of nesting of a row (read) or of an update's \`rowData\` (sent), the object itself the first. */
  valueDepth: 256,
  /** Characters of a checkpoint's text: a scan of about 16 million rows under \`dedupe: "exact"\` (16 a row). */
  checkpointChars: 2 ** 28,
  /** Levels of nesting of a checkpoint's text; its format has four. */
  checkpointDepth: 16
} as const

/** A whole number in `[min, max]`. */
export const wholeNumberIn = (min: number, max: number) =>
  Schema.Number.pipe(
    Schema.filter((n) => Number.isSafeInteger(n) && n >= min && n <= max, {
      message: () => `must be a whole number from ${min} to ${max.toLocaleString("en-US")}`
    })
  )

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
