import { Duration, Effect, Schedule } from "effect"

/**
 * Waits, checking every 20 ms, until `check` holds of what `poll` gives; fails after 60 s, a hang
 * detector: a child process on a loaded two-core machine can take ten seconds just to start.
 */
export const eventually = <A, E, R>(poll: Effect.Effect<A, E, R>, check: (value: A) => boolean) =>
  poll.pipe(
    Effect.filterOrFail(check, () => new Error("still not there after 60 s")),
    Effect.retry(Schedule.spaced(Duration.millis(20)).pipe(Schedule.upTo(Duration.seconds(60))))
  )
