import { Clock, Duration, Effect, Equal, Schedule } from "effect"
import { inspect } from "node:util"

/**
 * Waits until `check` holds of what `poll` gives; fails after `within` (60 s), a hang detector: a
 * child process on a loaded two-core machine can take ten seconds just to start. Checks every 20 ms
 * at first, then less often (up to every 500 ms), so that a long wait does not load the machine it
 * waits on; the failure says `what` it waited for and the last value seen.
 */
export const eventually = <A, E, R>(
  poll: Effect.Effect<A, E, R>,
  check: (value: A) => boolean,
  what = "the condition",
  within: Duration.DurationInput = Duration.seconds(60)
) => {
  let last: { readonly value: A } | undefined
  return poll.pipe(
    Effect.tap((value) => Effect.sync(() => (last = { value }))),
    Effect.filterOrFail(check, () =>
      new Error(
        `still not there after ${Duration.format(within)}: ${what}; last seen: ${
          last === undefined ? "nothing" : inspect(last.value, { depth: 3, maxStringLength: 400 })
        }`
      )),
    Effect.retry(
      Schedule.exponential(Duration.millis(20), 1.5).pipe(
        Schedule.union(Schedule.spaced(Duration.millis(500))),
        Schedule.upTo(within)
      )
    )
  )
}

/**
 * Runs `wait` (for a child process, say) as long as `progress` moves: fails once it has not moved for
 * `idle` (60 s), saying what it waited for and `detail()` (the children's last lines, say). A busy
 * machine slows a test without stopping it, a hang stops it: the bound is on stillness, not on time.
 */
export const whileProgressing = <A, E, R>(
  wait: Effect.Effect<A, E, R>,
  options: {
    readonly what: string
    readonly progress: Effect.Effect<unknown>
    readonly detail?: () => string
    readonly idle?: Duration.DurationInput
  }
): Effect.Effect<A, E | Error, R> => {
  const idle = Duration.toMillis(options.idle ?? Duration.seconds(60))
  const watch = Effect.gen(function*() {
    let last = yield* options.progress
    let since = yield* Clock.currentTimeMillis
    while (true) {
      yield* Effect.sleep(Duration.seconds(1))
      const now = yield* options.progress
      const at = yield* Clock.currentTimeMillis
      if (!Equal.equals(now, last)) {
        last = now
        since = at
      } else if (at - since >= idle) {
        return yield* Effect.fail(
          new Error(
            `waited for ${options.what}: nothing moved for ${Duration.format(Duration.millis(idle))}${
              options.detail === undefined ? "" : `\n${options.detail()}`
            }`
          )
        )
      }
    }
  })
  return Effect.raceFirst(wait, watch)
}
