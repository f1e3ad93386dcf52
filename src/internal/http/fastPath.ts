/**
 * The transport's two fast paths, each chosen per attempt against Effect's own services (read from
 * `DefaultServices.liveServices`, never by running an effect at import): a plain timer for the
 * timeout on the live clock, and no request span under the native tracer. A caller may provide
 * another clock or tracer around a call after the client was built, so neither is decided once.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Clock, Context, DefaultServices, Duration, Effect, Exit, Scope, Tracer } from "effect"

/** Effect's own clock, the one every program runs on unless a test provides another. */
const liveClock = Context.get(DefaultServices.liveServices, Clock.Clock)

/** Effect's own tracer, which exports nothing: the span of a request made under it would be work for nothing. */
const nativeTracer = Context.get(DefaultServices.liveServices, Tracer.Tracer)

/**
 * Runs an attempt in a scope of its own, failing with `onTimeout()` once `timeout` has passed. On
 * the live clock the timer is a plain one that closes the scope, which aborts the request through
 * the signal its transport was given (every transport of @effect/platform honours it): racing a
 * sleeping fiber, as `Effect.timeout` does, costs more CPU than a request. On any other clock (a
 * `TestClock`) it is that race, which time on that clock ends.
 */
export const withinTimeout = <A, E>(
  exchange: Effect.Effect<A, E, Scope.Scope>,
  timeout: Duration.Duration,
  onTimeout: () => E,
  abortOnly = false
): Effect.Effect<A, E> =>
  Effect.clockWith((clock) =>
    clock === liveClock
      ? withinTimer(exchange, timeout, onTimeout, abortOnly)
      : withinRace(exchange, timeout, onTimeout)
  )

/** The timeout as a race with a sleeping fiber: the path of any clock but the live one. */
export const withinRace = <A, E>(
  exchange: Effect.Effect<A, E, Scope.Scope>,
  timeout: Duration.Duration,
  onTimeout: () => E
): Effect.Effect<A, E> => Effect.timeoutFail(Effect.scoped(exchange), { duration: timeout, onTimeout })

/**
 * The timeout as a plain timer that closes the attempt's scope: the path of the live clock.
 * `abortOnly`: the scope holds nothing but the abort of the request, which a success has read to
 * its end, so a success leaves it unclosed: Node builds a `DOMException` for every abort (some
 * 20 µs of a small call's CPU) to abort a request that is over.
 */
export const withinTimer = <A, E>(
  exchange: Effect.Effect<A, E, Scope.Scope>,
  timeout: Duration.Duration,
  onTimeout: () => E,
  abortOnly = false
): Effect.Effect<A, E> =>
  Effect.acquireUseRelease(
    Effect.map(Scope.make(), (scope) => {
      const timer = { timedOut: false }
      const handle = setTimeout(() => {
        timer.timedOut = true
        Effect.runFork(Scope.close(scope, Exit.void))
      }, Duration.toMillis(timeout))
      return { scope, timer, handle }
    }),
    ({ scope, timer }) =>
      Effect.catchAllCause(
        Scope.extend(exchange, scope),
        (cause) => timer.timedOut ? Effect.fail(onTimeout()) : Effect.failCause(cause)
      ),
    // the timer is cleared as the scope is released, not by a step of its own around the exchange
    ({ handle, scope }, exit) => {
      clearTimeout(handle)
      return abortOnly && Exit.isSuccess(exit) ? Effect.void : Scope.close(scope, exit)
    }
  )

/**
 * How `client` sends a request in the attempt's scope: with the request span of @effect/platform,
 * unless the tracer in force is the native one.
 */
export const spannedUnlessNative = <E, R>(client: HttpClient.HttpClient.With<E, R>) => {
  const traced = HttpClient.withScope(client)
  const untraced = HttpClient.withTracerDisabledWhen(traced, () => true)
  return (
    request: HttpClientRequest.HttpClientRequest
  ): Effect.Effect<HttpClientResponse.HttpClientResponse, E, R | Scope.Scope> =>
    Effect.tracerWith((tracer) => (tracer === nativeTracer ? untraced : traced).execute(request))
}
