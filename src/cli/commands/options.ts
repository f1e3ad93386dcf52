/**
 * The flags the commands share: whole numbers, and those of the commands that talk to a service
 * (where it is, the credentials, timeout and retries), with the client they build.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Config, Duration, Effect, Layer, Option, type Redacted, Schema } from "effect"
import { MicroappClient } from "../../MicroappClient.js"
import { UsageError } from "../exitCodes.js"

/**
 * A whole-number option of at least `min`; its error names the flag.
 *
 * @since 0.1.0
 * @category options
 */
export const wholeNumber = (name: string, min: number) =>
  Options.integer(name).pipe(
    Options.withSchema(
      Schema.Int.pipe(Schema.greaterThanOrEqualTo(min, { message: () => `--${name} must be a whole number >= ${min}` }))
    ),
    Options.withPseudoName("N")
  )

/**
 * @since 0.1.0
 * @category options
 */
export const described = (description: string) => Options.withDescription(description)

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
 * @since 0.1.0
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
 * @since 0.1.0
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
 * @since 0.1.0
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
 * @since 0.1.0
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
    }))).pipe(Layer.provide(NodeHttpClient.layerUndici))
