/**
 * The steps around one attempt and one call: the rate gate, the in-flight limit, the caller's
 * requests per second, the duration metric, the retry policy and the call counter. Each takes the
 * effect it wraps and gives it back with its one concern added.
 */
import * as Headers from "@effect/platform/Headers"
import { Cause, Clock, Context, Effect, Exit, FiberRef, Option, type Schedule } from "effect"
import type { RequestError } from "../../MicroappError.js"
import * as Metrics from "../metrics.js"
import type { Endpoint } from "./endpoints.js"
import * as Errors from "./errors.js"
import type { InFlight, Outcome } from "./inFlight.js"
import type { RateGate } from "./retry.js"

/**
 * The rate gate: waits while the client is paused, and fails at once (`RateLimited`, not sent) when
 * the pause ends after `deadline`. Passed before a permit is waited for and again once one is held
 * (a pause may have begun meanwhile).
 */
export const throughGate = (gate: RateGate, deadline: number, info: Errors.AttemptInfo) => {
  const pass = Effect.mapError(gate.pass(deadline), (wait) => Errors.heldBack(info, wait))
  return <A>(attempt: Effect.Effect<A, RequestError>): Effect.Effect<A, RequestError> => Effect.zipRight(pass, attempt)
}

/**
 * Pauses the whole client when a 429 or a 503 says how long: a bare 429 says "slow down", which
 * the cut of the in-flight limit and the refused request's own backoff do.
 */
export const holdOnRetryAfter = (gate: RateGate) => <A, R>(attempt: Effect.Effect<A, RequestError, R>) =>
  Effect.tapError(
    attempt,
    (error) =>
      (error._tag === "RateLimited" || error._tag === "ServerError") && error.retryAfterMillis !== undefined &&
        (error.status === 429 || error.status === 503)
        ? gate.holdFor(error.retryAfterMillis, String(error.status))
        : Effect.void
  )

/**
 * The in-flight limit: the attempt runs once a permit is free, with `inner` (the steps that must
 * run holding it); what the server answered tells the limit, a failure without an answer nothing.
 */
export const withinInFlight = (
  inFlight: InFlight,
  inner: <A>(attempt: Effect.Effect<A, RequestError>) => Effect.Effect<A, RequestError>
) =>
<A>(attempt: Effect.Effect<A, RequestError>): Effect.Effect<A, RequestError> =>
  inFlight.admit(() => inner(attempt), outcomeOf)

/** What an attempt's end says of the server: a 429 refused it, any other status answered it. */
const outcomeOf = (exit: Exit.Exit<unknown, RequestError>): Outcome | undefined => {
  if (Exit.isSuccess(exit)) return "answered"
  const error = Option.getOrUndefined(Cause.failureOption(exit.cause))
  if (error === undefined) return undefined
  return error._tag === "RateLimited" && error.status !== undefined
    ? error.retryAfterMillis === undefined ? "slowDown" : "refused"
    : "status" in error && error.status !== undefined
    ? "answered"
    : undefined
}

/** The caller's requests per second (`rateLimit.requestsPerSecond`), around each attempt, when there is one. */
export type PerSecond = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/**
 * The duration metric: `http.client.request.duration` of one attempt, under OpenTelemetry's
 * attribute names; an attempt abandoned (a scan that ended with a window in flight) is no success.
 * And, while the attempt runs, `redacted` among the header names @effect/platform redacts wherever
 * it prints a request (a caller's transport or step may log it, or trace it): what
 * `Effect.locallyWith` does, in the step that reads the clock and ends with the metric, since
 * `Effect.locallyWith` alone ran 26 of Effect's operations an attempt.
 */
export const recordDuration =
  (serverAddress: string, endpoint: Endpoint, redacted: ReadonlyArray<string> = []) =>
  <A extends { readonly status: number }>(attempt: Effect.Effect<A, RequestError>): Effect.Effect<A, RequestError> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.withFiberRuntime((fiber) => {
        const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
        const names = fiber.getFiberRef(Headers.currentRedactedNames)
        const start = clock.unsafeCurrentTimeMillis()
        const measured = Effect.onExit(restore(attempt), (exit) => {
          const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
          const status = Exit.isSuccess(exit) ? exit.value.status : error !== undefined && "status" in error
            ? error.status
            : undefined
          const errorType = error !== undefined
            ? error._tag
            : Exit.isFailure(exit)
            ? Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "defect"
            : undefined
          const recorded = Metrics.update(
            Metrics.requestDuration({
              "http.request.method": "POST",
              "server.address": serverAddress,
              "microapp.endpoint": endpoint.path,
              ...(status === undefined ? {} : { "http.response.status_code": String(status) }),
              ...(errorType === undefined ? {} : { "error.type": errorType })
            }),
            (clock.unsafeCurrentTimeMillis() - start) / 1000
          )
          return redacted.length === 0
            ? recorded
            : Effect.zipRight(FiberRef.set(Headers.currentRedactedNames, names), recorded)
        })
        return redacted.length === 0
          ? measured
          : Effect.zipRight(FiberRef.set(Headers.currentRedactedNames, [...names, ...redacted]), measured)
      })
    )

/**
 * The retry policy: `attempt(n)` run as `schedule` allows, numbered from 1, all before `deadline`
 * (when the call's budget, from its first attempt, runs out); one attempt without a schedule.
 * The schedule is run only once the first attempt failed, and is then given that failure first,
 * as `Effect.retry` would have been: most calls succeed at once, and need none of it.
 */
export const retrying = <A>(
  schedule: Schedule.Schedule<unknown, RequestError> | undefined,
  budgetMillis: number,
  attempt: (n: number, deadline: number) => Effect.Effect<A, RequestError>
): Effect.Effect<A, RequestError> =>
  Effect.flatMap(Clock.currentTimeMillis, (start) => {
    const deadline = start + budgetMillis
    if (schedule === undefined) return attempt(1, deadline)
    return Effect.catchAll(attempt(1, deadline), (first) => {
      // the schedule's first input is the failure of attempt 1, replayed; each later run is an attempt
      let n = 0
      return Effect.retry(Effect.suspend(() => ++n === 1 ? Effect.fail(first) : attempt(n, deadline)), schedule)
    })
  })

/** The call counter: `microapp_requests_total` by endpoint and outcome (success, or the error's tag). */
export const countCall = (endpoint: Endpoint) => <A>(call: Effect.Effect<A, RequestError>) =>
  Effect.onExit(call, (exit) =>
    Metrics.add(Metrics.requests, 1, {
      endpoint: endpoint.path,
      outcome: Exit.isSuccess(exit)
        ? "success"
        : Option.getOrElse(Option.map(Cause.failureOption(exit.cause), (error) => error._tag), () => "interrupted")
    }))
