/**
 * The flags the commands share: whole numbers, and those of the commands that talk to a service
 * (where it is, the credentials, timeout and retries), with the client they build.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import { Config, Duration, Effect, Either, Layer, Option, type Redacted, Schema } from "effect"
import { MicroappClient } from "../../MicroappClient.js"
import type { Filter, Sort } from "../../Query.js"
import { UsageError } from "../exitCodes.js"

/**
 * A whole-number option of at least `min`; its error names the flag.
 *
 * @since 0.1.0
 * @category options
 */
export const wholeNumber = (name: string, min: number, max?: number) => {
  const message = {
    message: () =>
      max === undefined
        ? `--${name} must be a whole number >= ${min}`
        : `--${name} must be a whole number from ${min} to ${max}`
  }
  return Options.integer(name).pipe(
    Options.withSchema(
      Schema.Int.pipe(
        Schema.greaterThanOrEqualTo(min, message),
        Schema.lessThanOrEqualTo(max ?? Number.POSITIVE_INFINITY, message)
      )
    ),
    Options.withPseudoName("N")
  )
}

/**
 * @since 0.1.0
 * @category options
 */
export const described = (description: string) => Options.withDescription(description)

/** `FIELD_ID=VALUE`, split at the first `=`. */
const parseFilter = (text: string): Either.Either<Filter, UsageError> => {
  const at = text.indexOf("=")
  const fieldID = at < 0 ? "" : text.slice(0, at).trim()
  return fieldID === ""
    ? Either.left(new UsageError({ message: `invalid --filter "${text}": expected FIELD_ID=VALUE` }))
    : Either.right({ fieldID, value: text.slice(at + 1) })
}

/**
 * How a change pass deletes (`Changes.PassOptions.deletes`): `--deletes confirmed` (the default)
 * or `exhaustive`.
 *
 * @since 0.2.0
 * @category options
 */
export const deletes = Options.choice("deletes", ["confirmed", "exhaustive"]).pipe(
  Options.withDefault("confirmed" as const),
  described(
    "confirmed (the default): a row the pass did not see is deleted once a read of it answers that " +
      "it does not exist; exhaustive: without reads, only after a pass that saw every row"
  )
)

/**
 * The delete guard of a change pass (`Changes.PassOptions.maxDeletes`): `--max-deletes N`.
 *
 * @since 0.2.0
 * @category options
 */
export const maxDeletes = wholeNumber("max-deletes", 0, Number.MAX_SAFE_INTEGER).pipe(
  Options.optional,
  described(
    "The most rows this pass may delete (0: none); a pass that would delete more stops before it deletes " +
      "any (exit 1) and says how many. Default: 100, or a tenth of the copy when that is more"
  )
)

/**
 * Which rows a command reads, and how: `--filter`, `--sort`, `--order`, `--page-size` and
 * `--concurrency`, as `rows` takes them.
 *
 * @since 0.2.0
 * @category options
 */
export const selection = {
  filter: Options.text("filter").pipe(
    Options.withPseudoName("FIELD_ID=VALUE"),
    Options.repeated,
    // a default makes it optional in the usage line, where a bare repeated option looks required
    Options.withDefault([]),
    described("Only rows whose field (by fieldID) equals the value; repeat to require several")
  ),
  sort: wholeNumber("sort", 1).pipe(
    Options.optional,
    described("Sort by sort field N, as configured in the Microapp's Results Tab")
  ),
  order: Options.choice("order", ["asc", "desc"]).pipe(Options.optional, described("Order of --sort; default asc")),
  pageSize: wholeNumber("page-size", 1).pipe(Options.optional, described("Rows per request; default 1000")),
  concurrency: wholeNumber("concurrency", 1).pipe(
    Options.optional,
    described(
      "Requests in flight once the server's page size is known, fixed; default adaptive: one, more while " +
        "rows per second improve, fewer on pushback, at most 8"
    )
  )
}

/**
 * The values of the `selection` flags given to a command.
 *
 * @since 0.2.0
 * @category models
 */
export interface SelectionFlags {
  readonly filter: ReadonlyArray<string>
  readonly sort: Option.Option<number>
  readonly order: Option.Option<"asc" | "desc">
  readonly pageSize: Option.Option<number>
  readonly concurrency: Option.Option<number>
}

/**
 * The scan options the `selection` flags describe; a usage error for a bad `--filter`, or
 * `--order` without `--sort`.
 *
 * @since 0.2.0
 * @category options
 */
export const selectionOf = (flags: SelectionFlags) =>
  Effect.gen(function*() {
    const filters = yield* Effect.forEach(flags.filter, parseFilter)
    if (Option.isNone(flags.sort) && Option.isSome(flags.order)) {
      return yield* new UsageError({ message: "--order needs --sort" })
    }
    const sort: ReadonlyArray<Sort> = Option.match(flags.sort, {
      onNone: () => [],
      onSome: (field) => [{ field, order: Option.getOrElse(flags.order, () => "asc" as const) }]
    })
    return {
      filters,
      sort,
      ...Option.match(flags.pageSize, { onNone: () => ({}), onSome: (pageSize) => ({ pageSize }) }),
      ...Option.match(flags.concurrency, { onNone: () => ({}), onSome: (concurrency) => ({ concurrency }) })
    }
  })

/** The defaults of `--timeout` and `--retries`. */
const defaults = { timeout: 30, retries: 4 }

const baseUrl = Options.text("base-url").pipe(
  Options.withPseudoName("URL"),
  Options.optional,
  described("Where the service is, e.g. https://example.com (default: $MICROAPP_BASE_URL)")
)

const token = Options.redacted("token").pipe(
  Options.withPseudoName("TOKEN"),
  Options.optional,
  described("The auth token (default: $MICROAPP_AUTH_TOKEN); never printed")
)

const userId = Options.text("user-id").pipe(
  Options.withPseudoName("ID"),
  Options.optional,
  described("The user id that goes with the token (default: $MICROAPP_USER_ID)")
)

const timeout = Options.float("timeout").pipe(
  Options.withSchema(
    Schema.Number.pipe(Schema.positive({ message: () => "--timeout must be a number of seconds > 0" }))
  ),
  Options.withPseudoName("SECONDS"),
  Options.optional,
  described(`Seconds each request may take (each attempt), e.g. 30 or 2.5; default ${defaults.timeout}`)
)

const retries = wholeNumber("retries", 0).pipe(
  Options.optional,
  described(
    `Retries of a failed read (5xx, 408, 429, network failure, timeout), with backoff; default ${defaults.retries}`
  )
)

/**
 * Where the service is, the credentials, `--timeout` and `--retries`: flags of the commands that
 * talk to a service, and of `microapp` itself, so that they may come before the command too.
 *
 * @since 0.1.0
 * @category options
 */
export const connection = { baseUrl, token, userId, timeout, retries }

/**
 * The values of the `connection` flags given to a command.
 *
 * @since 0.2.0
 * @category models
 */
export interface ConnectionFlags {
  readonly baseUrl: Option.Option<string>
  readonly token: Option.Option<Redacted.Redacted<string>>
  readonly userId: Option.Option<string>
  readonly timeout: Option.Option<number>
  readonly retries: Option.Option<number>
}

/**
 * `microapp` with the `connection` flags given before its command; the commands read them there.
 *
 * @since 0.2.0
 * @category commands
 */
export const microappCommand = Command.make("microapp", connection)

/**
 * @since 0.1.0
 * @category models
 */
export interface Connection {
  readonly baseUrl: string
  readonly token: Redacted.Redacted<string>
  readonly userId: string
  readonly timeout: number
  readonly retries: number
}

/** A required setting: its flag's value, else its environment variable; else it fails with why it is missing. */
const required = <A>(
  given: Option.Option<A>,
  flag: string,
  variable: string,
  config: (name: string) => Config.Config<A>
): Effect.Effect<A, string> =>
  Option.match(given, {
    onSome: Effect.succeed,
    onNone: () =>
      Effect.flatMap(
        Effect.orElseSucceed(Config.option(config(variable)), () => Option.none<A>()),
        Option.match({ onNone: () => Effect.fail(`missing ${flag} (or set ${variable})`), onSome: Effect.succeed })
      )
  })

/** The usage error of the required settings `Effect.all` found missing (its "validate" mode). */
const missingSettings = (missing: Readonly<Record<string, Option.Option<string>>>) =>
  new UsageError({ message: Object.values(missing).flatMap(Option.toArray).join("; ") })

/** The connection flags as given after the command, else before it. */
const givenFlags = (own: ConnectionFlags) =>
  Effect.map(microappCommand, (before): ConnectionFlags => ({
    baseUrl: Option.orElse(own.baseUrl, () => before.baseUrl),
    token: Option.orElse(own.token, () => before.token),
    userId: Option.orElse(own.userId, () => before.userId),
    timeout: Option.orElse(own.timeout, () => before.timeout),
    retries: Option.orElse(own.retries, () => before.retries)
  }))

const tuningOf = (flags: ConnectionFlags) => ({
  timeout: Option.getOrElse(flags.timeout, () => defaults.timeout),
  retries: Option.getOrElse(flags.retries, () => defaults.retries)
})

const baseUrlOf = (flags: ConnectionFlags) => required(flags.baseUrl, "--base-url", "MICROAPP_BASE_URL", Config.string)

/**
 * Where the service is, `--timeout` and `--retries`: each flag as given after the command, else
 * before it, else from its environment variable or default.
 *
 * @since 0.2.0
 * @category options
 */
export const endpointOf = (own: ConnectionFlags) =>
  Effect.gen(function*() {
    const flags = yield* givenFlags(own)
    const found = yield* Effect.mapError(
      Effect.all({ baseUrl: baseUrlOf(flags) }, { mode: "validate" }),
      missingSettings
    )
    return { ...found, ...tuningOf(flags) }
  })

/**
 * `endpointOf` and the credentials, found the same way; a usage error names every one missing.
 *
 * @since 0.2.0
 * @category options
 */
export const connectionOf = (
  own: ConnectionFlags
): Effect.Effect<Connection, UsageError, Command.Command.Context<"microapp">> =>
  Effect.gen(function*() {
    const flags = yield* givenFlags(own)
    const found = yield* Effect.all({
      baseUrl: baseUrlOf(flags),
      token: required(flags.token, "--token", "MICROAPP_AUTH_TOKEN", (name) => Config.redacted(name)),
      userId: required(flags.userId, "--user-id", "MICROAPP_USER_ID", Config.string)
    }, { mode: "validate" }).pipe(Effect.mapError(missingSettings))
    return { ...found, ...tuningOf(flags) }
  })

/**
 * The client's retry option for `--retries N`.
 *
 * @since 0.1.0
 * @category options
 */
export const retryOf = (count: number) => count === 0 ? false as const : { maxAttempts: count + 1 }

/**
 * undici's HTTP client, imported when a command first talks to a service: it is a third of the
 * bin, which `--help` and the commands that stop at a usage error start without.
 *
 * @since 0.2.0
 * @category layers
 */
export const undiciLayer = Layer.unwrapEffect(
  Effect.map(Effect.promise(() => import("@effect/platform-node/NodeHttpClient")), (module) => module.layerUndici)
)

/**
 * The client the connection flags describe (see `connectionOf`), over undici.
 *
 * @since 0.1.0
 * @category layers
 */
export const clientLayer = (flags: ConnectionFlags) =>
  Layer.unwrapEffect(Effect.map(connectionOf(flags), (options) =>
    MicroappClient.layer({
      baseUrl: options.baseUrl,
      authToken: options.token,
      userId: options.userId,
      timeout: Duration.seconds(options.timeout),
      retry: retryOf(options.retries)
    }))).pipe(Layer.provide(undiciLayer))
