/**
 * `POST /api/login` for `microapp login`, which must hand the token to the user: the client's
 * `layerLogin` keeps its token to itself, so this uses the client's own sender and decoder.
 *
 * @since 0.1.0
 */
import * as HttpClient from "@effect/platform/HttpClient"
import { Duration, Effect, Redacted } from "effect"
import { decodeEnvelope } from "../internal/decode.js"
import { makeRequester } from "../internal/request.js"
import { makeRateGate, type RetryOptions } from "../internal/retry.js"
import { InvalidInput } from "../MicroappError.js"
import { LoginBody } from "../Row.js"

const endpoint = { path: "/api/login", write: false }

// the service's own client reads login answers without looking at a status
const decodeLogin = decodeEnvelope(LoginBody, { statusOptional: true })

/**
 * @since 0.1.0
 * @category models
 */
export interface LoginOptions {
  readonly baseUrl: string
  readonly email: string
  readonly password: Redacted.Redacted<string>
  readonly timeout: Duration.DurationInput
  readonly retry: RetryOptions | false
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Session {
  readonly authToken: Redacted.Redacted<string>
  readonly userId: string
}

/** The base URL without trailing slashes, or `InvalidInput` when it is not http(s). */
const checkBaseUrl = (baseUrl: string): Effect.Effect<string, InvalidInput> => {
  const trimmed = baseUrl.trim().replace(/\/+$/, "")
  const url = URL.canParse(trimmed) ? new URL(trimmed) : undefined
  return url !== undefined && (url.protocol === "http:" || url.protocol === "https:")
    ? Effect.succeed(trimmed)
    : Effect.fail(
      new InvalidInput({ method: "POST", path: endpoint.path, input: "baseUrl", reason: "must be an http(s) URL" })
    )
}

/**
 * Logs in with email and password; the token stays `Redacted` until the caller prints it.
 *
 * @since 0.1.0
 * @category login
 */
export const login = Effect.fn("microapp.login")(function*(options: LoginOptions) {
  const baseUrl = yield* checkBaseUrl(options.baseUrl)
  const requester = makeRequester(yield* HttpClient.HttpClient, {
    baseUrl,
    timeout: Duration.decode(options.timeout),
    retry: options.retry,
    gate: yield* makeRateGate,
    limit: (effect) => effect
  })
  const reply = yield* requester.sendJson(
    endpoint,
    { email: options.email, password: Redacted.value(options.password) },
    { credentials: undefined }
  )
  const body = yield* decodeLogin(reply.json, 200, { endpoint, attempt: reply.attempts })
  const data = "data" in body ? body.data : body
  return { authToken: Redacted.make(data.authToken), userId: data.userId } satisfies Session
})
