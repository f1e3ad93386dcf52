/**
 * Sends one call to the service: auth headers, timeout, rate gate and limits, retries, and the
 * classification of whatever comes back. The only module that touches `HttpClient`.
 */
import * as Headers from "@effect/platform/Headers"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Clock, Duration, Effect, Redacted, Ref, type Schedule } from "effect"
import type { RetryOptions } from "../MicroappClient.js"
import type { MicroappError } from "../MicroappError.js"
import type { Endpoint } from "./endpoints.js"
import * as Errors from "./errors.js"
import { budgetOf, defaultRateLimitPause, type RateGate, retrySchedule } from "./retry.js"

/** The two values that authenticate a call. */
export interface Credentials {
  readonly authToken: Redacted.Redacted<string>
  readonly userId: string
}

/** A successful (2xx) answer: its body as text, and how many attempts it took. */
export interface Reply {
  readonly status: number
  readonly text: string
  readonly attempts: number
}

export interface RequesterOptions {
  readonly baseUrl: string
  readonly timeout: Duration.Duration
  readonly retry: RetryOptions | false
  readonly gate: RateGate
  /** Client-side limits (requests per second, in flight) around each attempt. */
  readonly limit: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export interface CallOptions {
  /** `undefined` for the one call that needs none: login. */
  readonly credentials: Credentials | undefined
  readonly timeout?: Duration.DurationInput | undefined
  readonly subject?: Errors.AttemptInfo["subject"]
}

// the token header must never reach a span attribute or a printed request
const redactedHeaderNames = ["x-auth-token"]

/** Builds the sender over the caller's HttpClient. */
export const makeRequester = (http: HttpClient.HttpClient, options: RequesterOptions) => {
  const timeoutOf = (call: CallOptions) => call.timeout === undefined ? options.timeout : Duration.decode(call.timeout)

  /** One attempt; `deadline`: when the call's budget runs out, which no wait for the gate may pass. */
  const attemptOnce = (
    endpoint: Endpoint,
    body: unknown,
    call: CallOptions,
    attempt: number,
    deadline: number
  ): Effect.Effect<Reply, MicroappError> => {
    const info: Errors.AttemptInfo = { endpoint, attempt, subject: call.subject }
    const timeout = timeoutOf(call)
    const request = HttpClientRequest.post(`${options.baseUrl}${endpoint.path}`).pipe(
      HttpClientRequest.bodyUnsafeJson(body),
      HttpClientRequest.setHeaders(
        call.credentials === undefined ? {} : {
          "X-Auth-Token": Redacted.value(call.credentials.authToken),
          "X-User-Id": call.credentials.userId
        }
      )
    )
    const exchange = Effect.gen(function*() {
      const response = yield* Effect.mapError(http.execute(request), (error) =>
        error._tag === "RequestError" ? Errors.fromRequestError(error, info) : Errors.fromBodyError(error, info))
      const text = yield* Effect.mapError(response.text, (error) => Errors.fromBodyError(error, info))
      if (response.status >= 200 && response.status < 300) {
        return { status: response.status, text, attempts: attempt }
      }
      const now = yield* Clock.currentTimeMillis
      const retryAfter = Errors.parseRetryAfter(response.headers["retry-after"], now)
      if (response.status === 429) {
        yield* options.gate.holdFor(retryAfter ?? Duration.toMillis(defaultRateLimitPause))
      } else if (retryAfter !== undefined && response.status === 503) {
        yield* options.gate.holdFor(retryAfter)
      }
      return yield* Effect.fail(Errors.fromStatus(response.status, text, retryAfter, info))
    }).pipe(
      Effect.timeoutFail({ duration: timeout, onTimeout: () => Errors.timedOut(info, Duration.toMillis(timeout)) }),
      Effect.locallyWith(Headers.currentRedactedNames, (names) => [...names, ...redactedHeaderNames])
    )
    return Effect.zipRight(
      Effect.mapError(options.gate.pass(deadline), (wait) => Errors.heldBack(info, wait)),
      options.limit(exchange)
    )
  }

  // one schedule per endpoint for the client's life, not one per call (a scan makes many)
  const schedules = new Map<string, Schedule.Schedule<unknown, MicroappError>>()
  const scheduleOf = (endpoint: Endpoint): Schedule.Schedule<unknown, MicroappError> | undefined => {
    const retry = options.retry
    if (retry === false) return undefined
    const known = schedules.get(endpoint.path)
    if (known !== undefined) return known
    const schedule = retrySchedule(retry, endpoint)
    schedules.set(endpoint.path, schedule)
    return schedule
  }

  /**
   * Sends `body` to `endpoint` and reads the 2xx answer with `read`, retrying both as the policy
   * allows; fails with the last attempt's error.
   */
  const send = <A>(
    endpoint: Endpoint,
    body: unknown,
    call: CallOptions,
    read: (reply: Reply) => Effect.Effect<A, MicroappError>
  ): Effect.Effect<A, MicroappError> => {
    const schedule = scheduleOf(endpoint)
    const budget = Duration.toMillis(budgetOf(options.retry, timeoutOf(call)))
    return Effect.flatMap(Clock.currentTimeMillis, (start) => {
      const deadline = start + budget
      if (schedule === undefined) return Effect.flatMap(attemptOnce(endpoint, body, call, 1, deadline), read)
      return Effect.flatMap(Ref.make(0), (attempts) =>
        Effect.retry(
          Effect.flatMap(Ref.updateAndGet(attempts, (n) => n + 1), (attempt) =>
            Effect.flatMap(attemptOnce(endpoint, body, call, attempt, deadline), read)),
          schedule
        ))
    })
  }

  /** Sends and parses a JSON answer; a 2xx body that is not JSON fails (and, for reads, is retried). */
  const sendJson = (endpoint: Endpoint, body: unknown, call: CallOptions) =>
    send(endpoint, body, call, (reply) => {
      const json = Errors.parseJson(reply.text)
      return json === undefined
        ? Effect.fail(Errors.notJson(reply.status, { endpoint, attempt: reply.attempts }))
        : Effect.succeed({ json, attempts: reply.attempts })
    })

  return { send, sendJson } as const
}

/** The sender's interface, for the modules that use it. */
export type Requester = ReturnType<typeof makeRequester>
