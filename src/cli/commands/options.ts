/**
 * The flags the commands share: whole numbers, and those of the commands that talk to a service
 * (where it is, the credentials, timeout and retries), with the client they build.
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Config, Duration, Layer, type Redacted, Schema } from "effect"
import { MicroappClient } from "../../MicroappClient.js"

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

/**
 * @since 0.1.0
 * @category options
 */
export const baseUrl = Options.text("base-url").pipe(
  Options.withFallbackConfig(Config.string("MICROAPP_BASE_URL")),
  Options.withPseudoName("URL"),
  described("Where the service is, e.g. https://example.com (default: $MICROAPP_BASE_URL)")
)

/**
 * @since 0.1.0
 * @category options
 */
export const token = Options.redacted("token").pipe(
  Options.withFallbackConfig(Config.redacted("MICROAPP_AUTH_TOKEN")),
  Options.withPseudoName("TOKEN"),
  described("The auth token (default: $MICROAPP_AUTH_TOKEN); never printed")
)

/**
 * @since 0.1.0
 * @category options
 */
export const userId = Options.text("user-id").pipe(
  Options.withFallbackConfig(Config.string("MICROAPP_USER_ID")),
  Options.withPseudoName("ID"),
  described("The user id that goes with the token (default: $MICROAPP_USER_ID)")
)

const timeout = Options.float("timeout").pipe(
  Options.withSchema(
    Schema.Number.pipe(Schema.positive({ message: () => "--timeout must be a number of seconds > 0" }))
  ),
  Options.withDefault(30),
  Options.withPseudoName("SECONDS"),
  described("Seconds each request may take (each attempt), e.g. 30 or 2.5; default 30")
)

const retries = wholeNumber("retries", 0).pipe(
  Options.withDefault(4),
  described("Retries of a failed read (5xx, 408, 429, network failure, timeout), with backoff; default 4")
)

/**
 * `--timeout` and `--retries`.
 *
 * @since 0.1.0
 * @category options
 */
export const tuning = { timeout, retries }

/**
 * Where the service is, the credentials, and `tuning`.
 *
 * @since 0.1.0
 * @category options
 */
export const connection = { baseUrl, token, userId, ...tuning }

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

/**
 * The client's retry option for `--retries N`.
 *
 * @since 0.1.0
 * @category options
 */
export const retryOf = (count: number) => count === 0 ? false as const : { maxAttempts: count + 1 }

/**
 * The client the connection flags describe, over undici.
 *
 * @since 0.1.0
 * @category layers
 */
export const clientLayer = (options: Connection) =>
  MicroappClient.layer({
    baseUrl: options.baseUrl,
    authToken: options.token,
    userId: options.userId,
    timeout: Duration.seconds(options.timeout),
    retry: retryOf(options.retries)
  }).pipe(Layer.provide(NodeHttpClient.layerUndici))
