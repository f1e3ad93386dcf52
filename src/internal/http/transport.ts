/**
 * The transport: everything between a call of the client and the caller's `HttpClient`. It owns
 * request shaping and auth (shape.ts), redirect refusal (redirects.ts), the body bound and the
 * classification of answers into `MicroappError`s (classify.ts, errors.ts), the timeout and its
 * fast paths (fastPath.ts), the rate gate, the in-flight limit, requests per second, metrics and
 * retries (steps.ts, retry.ts, inFlight.ts, policy.ts), and the wire format with its decoders
 * (wire.ts, decode.ts, fastDecode.ts, plainData.ts, body.ts, endpoints.ts).
 *
 * It may import `effect`, `@effect/platform`, the public modules (src/*.ts) and src/internal's
 * shared pieces (limits.ts, bounds.ts, metrics.ts, fingerprint.ts, rowId.ts); never the scan
 * subsystem (scan/) nor client.ts. The only place that touches `HttpClient`.
 *
 * One attempt, outermost first: rate gate, in-flight limit, rate gate again, requests per second,
 * duration metric, timeout, `Retry-After` pause, classification (with the body bound), then the
 * `HttpClient` pipeline: the caller's `transformClient` step over redirect refusal over the
 * caller's client, sent the request shaped and authenticated. Around the attempts: the retry
 * policy, then the call counter.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import { Clock, Duration, Effect, Either, Redacted } from "effect"
import type { RetryOptions } from "../../MicroappClient.js"
import { type RequestError, UnexpectedResponse } from "../../MicroappError.js"
import { classify, type Reply } from "./classify.js"
import type { Endpoint } from "./endpoints.js"
import * as Errors from "./errors.js"
import { spannedUnlessNative, withinTimeout } from "./fastPath.js"
import type { InFlight } from "./inFlight.js"
import { readJson, stepChars } from "./jsonInSteps.js"
import { type CallSettings, makePolicies } from "./policy.js"
import { refuseRedirects } from "./redirects.js"
import { budgetOf, type RateGate } from "./retry.js"
import { addCredentials, checkCredentials, credentialHeaders, type Credentials, shapeRequest } from "./shape.js"
import {
  countCall,
  holdOnRetryAfter,
  type PerSecond,
  recordDuration,
  retrying,
  throughGate,
  withinInFlight
} from "./steps.js"

export type { Reply } from "./classify.js"
export type { Credentials } from "./shape.js"

export interface TransportOptions {
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
  readonly perSecond: PerSecond | undefined
  /** The caller's own step, applied to the client each attempt is sent with (`MicroappClient.Tuning`). */
  readonly transformClient: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
}

/** An attempt's timeout, and when it ends: a long answer is parsed within it. */
export interface AttemptTime {
  readonly timeoutMillis: number
  readonly until: number
}

export interface CallOptions extends CallSettings {
  /** `undefined` for the one call that needs none: login. */
  readonly credentials: Credentials | undefined
  readonly subject?: Errors.AttemptInfo["subject"]
}

/** Builds the transport of one client over the caller's `HttpClient`. */
export const makeTransport = (http: HttpClient.HttpClient, options: TransportOptions) =>
  Effect.sync(() => {
    const client = refuseRedirects(http)
    const execute = spannedUnlessNative(
      options.transformClient === undefined ? client : options.transformClient(client)
    )
    const policies = makePolicies(options)
    // the host, as OpenTelemetry's server.address: never the path, never credentials; an invalid base
    // URL fails every call before it is sent, so nothing is ever recorded under the empty name
    const serverAddress = Either.getOrElse(Either.try(() => new URL(options.baseUrl).hostname), () => "")
    const around = <A>(attempt: Effect.Effect<A, RequestError>) =>
      options.perSecond === undefined ? attempt : options.perSecond(attempt)

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
      const request = addCredentials(credentials)(shapeRequest(options.baseUrl, endpoint, body))
      const exchange = classify(execute(request), request.url, options.maxResponseBytes, info).pipe(
        holdOnRetryAfter(options.gate),
        // a request still running when its attempt ends, with a body not read to its end, is aborted
        // a caller's step may put finalizers of its own in the attempt's scope: then it is always closed
        (exchange) =>
          withinTimeout(
            exchange,
            timeout,
            () => Errors.timedOut(info, Duration.toMillis(timeout)),
            options.transformClient === undefined
          ),
        // the caller's transport or step may print the request (a log, a span): never its credentials
        recordDuration(serverAddress, endpoint, credentialHeaders)
      )
      const gated = throughGate(options.gate, deadline, info)
      return gated(withinInFlight(options.inFlight, (sent) => gated(around(sent)))(exchange))
    }

    /**
     * Sends `body` to `endpoint` and reads the 2xx answer with `read`, retrying both as the policy
     * allows; fails with the last attempt's error.
     */
    const send = <A>(
      endpoint: Endpoint,
      body: unknown,
      call: CallOptions,
      read: (reply: Reply, attempt: AttemptTime) => Effect.Effect<A, RequestError>
    ): Effect.Effect<A, RequestError> => {
      const refused = checkCredentials(call.credentials, endpoint)
      if (refused !== undefined) return Effect.fail(refused)
      const timeout = policies.timeoutOf(call, endpoint)
      if (Either.isLeft(timeout)) return Effect.fail(timeout.left)
      const policy = policies.policyOf(call, endpoint)
      if (Either.isLeft(policy)) return Effect.fail(policy.left)
      const budget = Duration.toMillis(budgetOf(policy.right.retry, timeout.right))
      const timeoutMillis = Duration.toMillis(timeout.right)
      return countCall(endpoint)(
        retrying(
          policies.scheduleOf(policy.right, endpoint),
          budget,
          (n, deadline) =>
            Effect.flatMap(
              Clock.currentTimeMillis,
              (startedAt) =>
                Effect.flatMap(
                  attemptOnce(endpoint, body, call, timeout.right, n, deadline),
                  (reply) => read(reply, { timeoutMillis, until: startedAt + timeoutMillis })
                )
            )
        )
      )
    }

    /**
     * Sends and parses a JSON answer; a 2xx body that is not JSON fails (and, for reads, is retried),
     * as does one holding too many numbers that a double cannot hold to name each (not retried). A
     * long answer is parsed in steps, within what is left of the attempt's timeout.
     */
    const sendJson = (endpoint: Endpoint, body: unknown, call: CallOptions) =>
      send(endpoint, body, call, (reply, { timeoutMillis, until }) => {
        const info = { endpoint, attempt: reply.attempts }
        return readJson(reply.text).pipe(
          Effect.mapError(() => Errors.notJson(reply.status, reply.encoding, info)),
          (parse) =>
            reply.text.length <= stepChars ?
              parse :
              Effect.flatMap(Clock.currentTimeMillis, (now) =>
                Effect.timeoutFail(parse, {
                  duration: Math.max(0, until - now),
                  onTimeout: () => Errors.timedOut(info, timeoutMillis)
                })),
          Effect.flatMap((read) =>
            "refused" in read
              ? Effect.fail(
                new UnexpectedResponse({
                  ...Errors.where(info),
                  status: reply.status,
                  kind: "Envelope",
                  reason: read.refused
                })
              )
              : Effect.succeed({ json: read.value, attempts: reply.attempts, status: reply.status })
          )
        )
      })

    return { send, sendJson } as const
  })

/** The transport's interface, for the modules that use it. */
export type Transport = Effect.Effect.Success<ReturnType<typeof makeTransport>>
