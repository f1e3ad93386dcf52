/**
 * Sends one call to the service: auth headers, timeout, rate gate and limits, retries, and the
 * classification of whatever comes back. The only module that touches `HttpClient`.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Headers from "@effect/platform/Headers"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import {
  Cause,
  Clock,
  Duration,
  Effect,
  Either,
  Exit,
  Metric,
  Option,
  Redacted,
  Ref,
  type Schedule,
  Schema,
  Scope
} from "effect"
import type { MicroappClient, RetryOptions } from "../../MicroappClient.js"
import { InvalidInput, type RequestError } from "../../MicroappError.js"
import { declaredLength, readUpTo } from "./body.js"
import * as Bounds from "../bounds.js"
import type { Endpoint } from "./endpoints.js"
import * as Errors from "./errors.js"
import type { InFlight } from "./inFlight.js"
import * as Metrics from "../metrics.js"
import { budgetOf, type RateGate, retrySchedule } from "./retry.js"

/** The two values that authenticate a call (the public `MicroappClient.Credentials`). */
export type Credentials = MicroappClient.Credentials

/** A successful (2xx) answer: its body as text, its `Content-Encoding`, and how many attempts it took. */
export interface Reply {
  readonly status: number
  readonly text: string
  readonly encoding: string | undefined
  readonly attempts: number
}

export interface RequesterOptions {
  readonly baseUrl: string
  readonly timeout: Duration.Duration
  readonly retry: RetryOptions | false
  /** The longest client-wide pause, whatever a `Retry-After` asks. */
  readonly maxPause: Duration.Duration
  /** The most bytes of a 2xx body read; past them the read stops and the call fails. */
  readonly maxResponseBytes: number
  readonly gate: RateGate
  /** The client-wide limit of requests in flight, learned from the server's 429s. */
  readonly inFlight: InFlight
  /** The caller's limit on requests per second, around each attempt, when there is one. */
  readonly perSecond: (<A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) | undefined
}

export interface CallOptions {
  /** `undefined` for the one call that needs none: login. */
  readonly credentials: Credentials | undefined
  readonly timeout?: Duration.DurationInput | undefined
  /** Replaces the client's policy (`false`), or the fields it gives. */
  readonly retry?: RetryOptions | false | undefined
  readonly subject?: Errors.AttemptInfo["subject"]
}

// the credential headers must never reach a span attribute or a printed request
const redactedHeaderNames = ["x-auth-token", "x-user-id"]

/**
 * Whether a value goes into a header as it is, on every transport: printable ASCII, spaces and tabs
 * only between other characters (fetch would strip them at the ends, and send another value).
 */
const headerSafe = /^(?:[\x21-\x7e]+(?:[ \t]+[\x21-\x7e]+)*)?$/

/** Why a credential no header can carry is refused; the value itself is never quoted. */
export const headerSafeReason =
  "must be printable ASCII, without line breaks or control characters or spaces at its ends: no header can carry it"

/** Whether `value` can be sent in a header as it is. */
export const isHeaderSafe = (value: string): boolean => headerSafe.test(value)

/** The credentials of a call, refused before anything is sent when a header cannot carry them. */
const checkCredentials = (
  credentials: Credentials | undefined,
  endpoint: Endpoint
): InvalidInput | undefined => {
  if (credentials === undefined) return undefined
  const input = !isHeaderSafe(Redacted.value(credentials.authToken))
    ? "authToken"
    : !isHeaderSafe(credentials.userId)
    ? "userId"
    : undefined
  return input === undefined
    ? undefined
    : new InvalidInput({ method: "POST", path: endpoint.path, input, reason: headerSafeReason })
}

/**
 * Sent with every request: a compressed answer inflates past what its length says. A browser's
 * fetch drops the header (it is forbidden there) and decodes what comes, so every bound counts
 * decoded bytes as well.
 */
const noCompression = { "accept-encoding": "identity" }

/** Bytes of a refusal's body read for the server's message: the status alone says what happened. */
const errorBodyBytes = 64 * 1024

/**
 * Runs `effect` with fetch told not to follow redirects, keeping the rest of a `RequestInit` the
 * caller provided; other transports (undici, node:http) never follow them.
 */
const withoutRedirects = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(
    Effect.serviceOption(FetchHttpClient.RequestInit),
    (init) =>
      Effect.provideService(effect, FetchHttpClient.RequestInit, {
        ...Option.getOrUndefined(init),
        redirect: "manual"
      })
  )

/** Effect's own clock, the one every program runs on unless a test provides another. */
const liveClock = Effect.runSync(Effect.clock)

/** Effect's own tracer, which exports nothing: the span of a request made under it would be work for nothing. */
const nativeTracer = Effect.runSync(Effect.tracer)

/**
 * Runs an attempt in a scope of its own, failing with `onTimeout()` once `timeout` has passed. On
 * the live clock the timer is a plain one that closes the scope, which aborts the request through
 * the signal its transport was given (every transport of @effect/platform honours it): racing a
 * sleeping fiber, as `Effect.timeout` does, costs more CPU than a request. On any other clock (a
 * `TestClock`) it is that race, which time on that clock ends.
 */
const withinTimeout = <A, E>(
  exchange: Effect.Effect<A, E, Scope.Scope>,
  timeout: Duration.Duration,
  onTimeout: () => E
): Effect.Effect<A, E> =>
  Effect.clockWith((clock) =>
    clock !== liveClock
      ? Effect.timeoutFail(Effect.scoped(exchange), { duration: timeout, onTimeout })
      : Effect.acquireUseRelease(Scope.make(), (scope) => {
        let timedOut = false
        const timer = setTimeout(() => {
          timedOut = true
          Effect.runFork(Scope.close(scope, Exit.void))
        }, Duration.toMillis(timeout))
        return Effect.ensuring(
          Effect.catchAllCause(
            Scope.extend(exchange, scope),
            (cause) => timedOut ? Effect.fail(onTimeout()) : Effect.failCause(cause)
          ),
          Effect.sync(() => clearTimeout(timer))
        )
      }, (scope, exit) => Scope.close(scope, exit))
  )

const decodeTimeout = Schema.decodeUnknownEither(Bounds.RequestTimeout)
const checkRetry = Bounds.validateEither(Schema.Struct({ retry: Bounds.Retry }), { path: "" })

/** How one call is retried: its policy, and its schedule for each endpoint (none when it is not retried). */
interface RetryPolicy {
  readonly retry: RetryOptions | false
  readonly schedules: Map<string, Schedule.Schedule<unknown, RequestError> | undefined>
}

/** A call with `retry: false`: one attempt, whatever the client's policy. */
const noRetry: RetryPolicy = { retry: false, schedules: new Map() }

/** Builds the sender over the caller's HttpClient. */
export const makeRequester = (http: HttpClient.HttpClient, options: RequesterOptions) => {
  const scoped = HttpClient.withScope(http)
  const untraced = HttpClient.withTracerDisabledWhen(scoped, () => true)
  // the host, as OpenTelemetry's server.address: never the path, never credentials; an invalid base URL fails
  // every call before it is sent, so nothing is ever recorded under the empty name
  const serverAddress = Either.getOrElse(Either.try(() => new URL(options.baseUrl).hostname), () => "")
  const clientPolicy: RetryPolicy = { retry: options.retry, schedules: new Map() }
  // a scan hands every page the same options: its override is checked, and its schedules built, once
  const overrides = new WeakMap<RetryOptions, Either.Either<RetryPolicy, InvalidInput>>()
  /** The call's own retry policy, checked against its bounds before anything is sent, over the client's. */
  const policyOf = (call: CallOptions, endpoint: Endpoint): Either.Either<RetryPolicy, InvalidInput> => {
    const retry = call.retry
    if (retry === undefined) return Either.right(clientPolicy)
    if (retry === false) return Either.right(noRetry)
    const known = overrides.get(retry)
    if (known !== undefined) return known
    const policy = Either.map(checkRetry({ retry }), (): RetryPolicy => ({
      retry: options.retry === false ? retry : { ...options.retry, ...retry },
      schedules: new Map()
    }))
    // an InvalidInput names the endpoint it was refused for, so only a policy is kept
    if (Either.isRight(policy)) overrides.set(retry, policy)
    return Either.mapLeft(
      policy,
      ({ input, method, reason }) => new InvalidInput({ method, path: endpoint.path, input, reason })
    )
  }
  /** The call's own timeout, checked against its bounds before anything is sent, or the client's. */
  const timeoutOf = (call: CallOptions, endpoint: Endpoint): Either.Either<Duration.Duration, InvalidInput> =>
    call.timeout === undefined ? Either.right(options.timeout) : Either.mapLeft(
      decodeTimeout(call.timeout),
      () =>
        new InvalidInput({
          method: "POST",
          path: endpoint.path,
          input: "timeout",
          reason: Bounds.durationReason(Bounds.minTimeout, Bounds.bounds.timeout)
        })
    )

  /** One attempt; `deadline`: when the call's budget runs out, which no wait for the gate may pass. */
  const attemptOnce = (
    endpoint: Endpoint,
    body: unknown,
    call: CallOptions,
    timeout: Duration.Duration,
    attempt: number,
    deadline: number
  ): Effect.Effect<Reply, RequestError> => {
    const credentials = call.credentials
    const info: Errors.AttemptInfo = {
      endpoint,
      attempt,
      subject: call.subject,
      secrets: credentials === undefined ? [] : [Redacted.value(credentials.authToken), credentials.userId]
    }
    const url = `${options.baseUrl}${endpoint.path}`
    const request = HttpClientRequest.post(url).pipe(
      HttpClientRequest.bodyUnsafeJson(body),
      HttpClientRequest.setHeaders(
        credentials === undefined ? noCompression : {
          ...noCompression,
          "X-Auth-Token": Redacted.value(credentials.authToken),
          "X-User-Id": credentials.userId
        }
      )
    )
    const read = (response: HttpClientResponse.HttpClientResponse, limit: number) =>
      Effect.mapError(
        readUpTo(response.stream, limit, declaredLength(response.headers)),
        (error) => Errors.fromBodyError(error, info)
      )
    const exchange = Effect.gen(function*() {
      const response = yield* Effect.mapError(
        withoutRedirects(Effect.tracerWith((tracer) => (tracer === nativeTracer ? untraced : scoped).execute(request))),
        (error) =>
          error._tag === "RequestError" ? Errors.fromRequestError(error, info) : Errors.fromBodyError(error, info)
      )
      const status = response.status
      // nothing of it is read: the end of the attempt aborts the request
      if (Errors.isRedirect(status)) return yield* Errors.redirected(status, response.headers["location"], url, info)
      if (status >= 200 && status < 300) {
        const reply = yield* read(response, options.maxResponseBytes)
        if (!reply.complete) return yield* Errors.tooLarge(status, options.maxResponseBytes, info)
        return { status, text: reply.text, encoding: response.headers["content-encoding"], attempts: attempt }
      }
      const { text } = yield* read(response, errorBodyBytes)
      const now = yield* Clock.currentTimeMillis
      const retryAfter = Errors.parseRetryAfter(response.headers["retry-after"], now)
      // only a server that says how long pauses the whole client; a bare 429 says "slow down", which
      // the cut of the in-flight limit and the refused request's own backoff do
      if (retryAfter !== undefined && (status === 429 || status === 503)) {
        yield* options.gate.holdFor(retryAfter, String(status))
      }
      return yield* Effect.fail(Errors.fromStatus(status, text, retryAfter, info))
    }).pipe(
      // a request still running when its attempt ends, with a body not read to its end, is aborted
      (exchange) => withinTimeout(exchange, timeout, () => Errors.timedOut(info, Duration.toMillis(timeout))),
      Effect.locallyWith(Headers.currentRedactedNames, (names) => [...names, ...redactedHeaderNames])
    )
    const pass = Effect.mapError(options.gate.pass(deadline), (wait) => Errors.heldBack(info, wait))
    const timed = Effect.clockWith((clock) => {
      const start = clock.unsafeCurrentTimeMillis()
      return Effect.onExit(exchange, (exit) => {
        const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
        const status = Exit.isSuccess(exit) ? exit.value.status : error !== undefined && "status" in error
          ? error.status
          : undefined
        // an attempt abandoned (a scan that ended with a window in flight) is no success either
        const errorType = error !== undefined
          ? error._tag
          : Exit.isFailure(exit)
          ? Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "defect"
          : undefined
        return Metric.update(
          Metrics.requestDuration({
            "http.request.method": "POST",
            "server.address": serverAddress,
            "microapp.endpoint": endpoint.path,
            ...(status === undefined ? {} : { "http.response.status_code": String(status) }),
            ...(errorType === undefined ? {} : { "error.type": errorType })
          }),
          (clock.unsafeCurrentTimeMillis() - start) / 1000
        )
      })
    })
    const limited = options.perSecond === undefined ? timed : options.perSecond(timed)
    // the gate is passed before a permit is waited for (a call whose budget ends inside a pause
    // fails at once) and again once one is held (a pause may have begun meanwhile)
    return Effect.zipRight(
      pass,
      options.inFlight.admit((ticket) =>
        Effect.zipRight(
          pass,
          Effect.tapBoth(limited, {
            // what the server answered tells the limit; a failure without an answer tells nothing
            onFailure: (error) =>
              error._tag === "RateLimited" && error.status !== undefined
                ? options.inFlight.observe(ticket, error.retryAfterMillis === undefined ? "slowDown" : "refused")
                : "status" in error && error.status !== undefined
                ? options.inFlight.observe(ticket, "answered")
                : Effect.void,
            onSuccess: () => options.inFlight.observe(ticket, "answered")
          })
        )
      )
    )
  }
  // one schedule per endpoint and policy for the client's life, not one per call (a scan makes many)
  const scheduleOf = (
    policy: RetryPolicy,
    endpoint: Endpoint
  ): Schedule.Schedule<unknown, RequestError> | undefined => {
    if (policy.retry === false) return undefined
    if (policy.schedules.has(endpoint.path)) return policy.schedules.get(endpoint.path)
    const schedule = retrySchedule(policy.retry, endpoint, options.maxPause)
    policy.schedules.set(endpoint.path, schedule)
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
    read: (reply: Reply) => Effect.Effect<A, RequestError>
  ): Effect.Effect<A, RequestError> => {
    const refused = checkCredentials(call.credentials, endpoint)
    if (refused !== undefined) return Effect.fail(refused)
    const timeout = timeoutOf(call, endpoint)
    if (Either.isLeft(timeout)) return Effect.fail(timeout.left)
    const policy = policyOf(call, endpoint)
    if (Either.isLeft(policy)) return Effect.fail(policy.left)
    const schedule = scheduleOf(policy.right, endpoint)
    const budget = Duration.toMillis(budgetOf(policy.right.retry, timeout.right))
    const attempt = (n: number, deadline: number) =>
      Effect.flatMap(attemptOnce(endpoint, body, call, timeout.right, n, deadline), read)
    const called: Effect.Effect<A, RequestError> = Effect.flatMap(Clock.currentTimeMillis, (start) => {
      const deadline = start + budget
      if (schedule === undefined) return attempt(1, deadline)
      return Effect.flatMap(
        Ref.make(0),
        (attempts) =>
          Effect.retry(Effect.flatMap(Ref.updateAndGet(attempts, (n) => n + 1), (n) => attempt(n, deadline)), schedule)
      )
    })
    return Effect.onExit(called, (exit) =>
      Metrics.add(Metrics.requests, 1, {
        endpoint: endpoint.path,
        outcome: Exit.isSuccess(exit)
          ? "success"
          : Option.getOrElse(Option.map(Cause.failureOption(exit.cause), (error) => error._tag), () => "interrupted")
      }))
  }

  /** Sends and parses a JSON answer; a 2xx body that is not JSON fails (and, for reads, is retried). */
  const sendJson = (endpoint: Endpoint, body: unknown, call: CallOptions) =>
    send(endpoint, body, call, (reply) => {
      const json = Errors.parseJson(reply.text)
      return json === undefined
        ? Effect.fail(Errors.notJson(reply.status, reply.encoding, { endpoint, attempt: reply.attempts }))
        : Effect.succeed({ json, attempts: reply.attempts })
    })

  return { send, sendJson } as const
}

/** The sender's interface, for the modules that use it. */
export type Requester = ReturnType<typeof makeRequester>
