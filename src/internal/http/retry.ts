/**
 * The retry policy and the rate gate: what is retried, how long to wait, and holding back every
 * request of a client while the server has asked it to.
 */
import { Duration, Effect, FiberRef, Schedule, ScheduleDecision } from "effect"
import type { RetryOptions } from "../../MicroappClient.js"
import type { MicroappError } from "../../MicroappError.js"
import * as Metrics from "../metrics.js"
import type { Endpoint } from "./endpoints.js"
import { isRetryable } from "./errors.js"

const defaults = {
  maxAttempts: 5,
  initialDelay: Duration.millis(250),
  maxDelay: Duration.seconds(10),
  maxElapsed: Duration.seconds(60)
}

/**
 * What the requests of one unit of work (an update of `updateRows`, its read-backs included) went
 * through: counted where it happens, for the outcome to report.
 */
export interface Tally {
  /** Attempts beyond the first, over all its requests. */
  retries: number
  /** Whether one of its requests was held back by a client-wide pause. */
  throttled: boolean
}

/** The tally of the work under way, if something counts it. */
export const currentTally = FiberRef.unsafeMake<Tally | undefined>(undefined)

const tallied = (mark: (tally: Tally) => void) =>
  FiberRef.getWith(currentTally, (tally) => tally === undefined ? Effect.void : Effect.sync(() => mark(tally)))

const tallyRetry = tallied((tally) => tally.retries++)
const tallyThrottled = tallied((tally) => (tally.throttled = true))

/** The longest a client-wide pause lasts, whatever `Retry-After` asks (`rateLimit.maxPause`). */
export const defaultMaxPause = Duration.seconds(60)

/**
 * The schedule for one endpoint: backoff with jitter, bounded in attempts and time, logging each
 * retry. `maxPause`: the longest `Retry-After` waited for, with `maxElapsed`.
 */
export const retrySchedule = (
  options: RetryOptions,
  endpoint: Endpoint,
  maxPause: Duration.Duration
): Schedule.Schedule<unknown, MicroappError> => {
  const maxElapsed = Duration.decode(options.maxElapsed ?? defaults.maxElapsed)
  const longestWait = Math.min(Duration.toMillis(maxElapsed), Duration.toMillis(maxPause))
  const backoff: Schedule.Schedule<unknown, MicroappError> = options.schedule ??
    Schedule.exponential(options.initialDelay ?? defaults.initialDelay).pipe(
      Schedule.union(Schedule.spaced(options.maxDelay ?? defaults.maxDelay)),
      Schedule.jittered
    )
  return Schedule.delays(backoff).pipe(
    Schedule.intersect(Schedule.recurs(Math.max(0, (options.maxAttempts ?? defaults.maxAttempts) - 1))),
    Schedule.intersect(Schedule.identity<MicroappError>()),
    Schedule.upTo(maxElapsed),
    // a server that asks for a longer pause than the whole budget, or than the client pauses, will
    // not be waited for, and a request held back for that reason would only be held back again
    Schedule.whileInput((error: MicroappError) =>
      isRetryable(error, endpoint) &&
      !((error._tag === "RateLimited" || error._tag === "ServerError") &&
        (error.retryAfterMillis ?? 0) > longestWait) &&
      !(error._tag === "RateLimited" && error.status === undefined)
    ),
    // the last step, which gives up, is no retry and is not logged as one
    Schedule.onDecision(([[delay, retry], error], decision) => {
      if (ScheduleDecision.isDone(decision)) return Effect.void
      // the client-wide pause a Retry-After began holds the retry back past its backoff
      const floor = "retryAfterMillis" in error ? Math.min(error.retryAfterMillis ?? 0, Duration.toMillis(maxPause)) : 0
      return Effect.zipRight(
        Effect.zipRight(tallyRetry, Metrics.add(Metrics.retries, 1, { endpoint: endpoint.path, cause: error._tag })),
        Effect.logDebug("retrying request").pipe(
          Effect.annotateLogs({
            endpoint: endpoint.path,
            attempt: retry + 2,
            delayMillis: Math.round(Math.max(Duration.toMillis(delay), floor)),
            cause: `${error._tag}: ${error.message}`
          })
        )
      )
    })
  )
}

/** The most a call may spend, retries and waits included: `maxElapsed`, or without retries `timeout`. */
export const budgetOf = (retry: RetryOptions | false, timeout: Duration.Duration): Duration.Duration =>
  retry === false ? timeout : Duration.decode(retry.maxElapsed ?? defaults.maxElapsed)

/**
 * Holds back every request of one client until a point in time, as a 429's (or a 503's)
 * `Retry-After` asks, for at most the client's `maxPause`.
 *
 * @since 0.1.0
 * @category models
 */
export interface RateGate {
  /**
   * Waits until the gate opens; fails at once, with the wait left, when it opens only after
   * `deadline`: no call waits past its budget, and none is sent early.
   */
  readonly pass: (deadline: number) => Effect.Effect<void, number>
  /** Pauses every call of the client for `millis` (at most `maxPause`), because of `cause`. */
  readonly holdFor: (millis: number, cause: string) => Effect.Effect<void>
}

export const makeRateGate = (maxPause: Duration.Duration): Effect.Effect<RateGate> =>
  Effect.sync(() => {
    const longest = Duration.toMillis(maxPause)
    // a plain variable, read and moved in one synchronous step each: every call passes the gate, twice
    let until = 0
    const pass = (deadline: number): Effect.Effect<void, number> =>
      Effect.clockWith((clock) => {
        const openAt = until
        const now = clock.unsafeCurrentTimeMillis()
        // the gate may move while we sleep (another 429), so look again after waking; whole
        // milliseconds, since a wait below the clock's nanosecond is no wait, and would have this spin
        return openAt <= now
          ? Effect.void
          : openAt > deadline
          ? Effect.zipRight(tallyThrottled, Effect.fail(openAt - now))
          : Effect.zipRight(
            tallyThrottled,
            Effect.zipRight(Effect.sleep(Duration.millis(Math.ceil(openAt - now))), pass(deadline))
          )
      })
    return {
      pass,
      holdFor: (millis, cause) =>
        Effect.clockWith((clock) => {
          const now = clock.unsafeCurrentTimeMillis()
          const openAt = until
          const next = Math.max(openAt, now + Math.min(millis, longest))
          until = next
          const begun = openAt <= now && next > now
          const added = next - Math.max(openAt, now)
          return Effect.all([
            Metrics.add(Metrics.throttleSeconds, added / 1000, { cause }),
            begun
              ? Effect.zipRight(
                Metrics.add(Metrics.throttlePauses, 1, { cause }),
                Effect.logWarning("pausing every request of this client").pipe(
                  Effect.annotateLogs({ cause, pauseMillis: next - now, askedMillis: millis })
                )
              )
              : Effect.void
          ], { discard: true })
        })
    }
  })
