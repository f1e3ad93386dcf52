/**
 * Mapping a stream with bounded concurrency, results in input order, for one fiber per element:
 * `Stream.mapEffect` with `concurrency` forks and races several fibers per element, which costs
 * more CPU than the request an element of `updateRows` sends.
 */
import { Cause, Deferred, Effect, Exit, FiberId, Option, Queue, Stream } from "effect"

/** A started element's result, or how the input ended. */
type Slot<B, E> = Deferred.Deferred<B> | Exit.Exit<void, E>

/**
 * Runs `start(element, index)` for each element, at most `concurrency` at once, and emits the
 * results in input order. `start` is called in input order, each call once a place is free, so
 * what it does before returning its effect happens in order. No more than `concurrency` results
 * wait to be pulled; when the stream ends early, the elements still running are interrupted.
 */
export const mapInOrder = <A, E, R, B, R2>(
  self: Stream.Stream<A, E, R>,
  concurrency: number,
  start: (element: A, index: number) => Effect.Effect<B, never, R2>
): Stream.Stream<B, E, R | R2> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const slots = yield* Queue.bounded<Slot<B, E>>(concurrency)
    const places = yield* Effect.makeSemaphore(concurrency)
    let index = 0
    const launch = (element: A) =>
      Effect.flatMap(places.take(1), () => {
        const result = Deferred.unsafeMake<B>(FiberId.none)
        const work = start(element, index++)
        return Effect.zipRight(
          Effect.fork(Effect.ensuring(Effect.intoDeferred(work, result), places.release(1))),
          Queue.offer(slots, result)
        )
      })
    // pulled here, not run by `Stream.runForEach`: a fiber forked inside a stream's run belongs to
    // that run's scope, and would be interrupted as the input ends
    const pull = yield* Stream.toPull(self)
    const launchAll: Effect.Effect<never, Option.Option<E>, R | R2> = Effect.flatMap(
      pull,
      (chunk) => Effect.zipRight(Effect.forEach(chunk, launch, { discard: true }), launchAll)
    )
    yield* launchAll.pipe(
      // the pull fails with None at the input's end
      Effect.catchAllCause((cause) =>
        Queue.offer(
          slots,
          Option.match(Cause.flipCauseOption(cause), { onNone: () => Exit.void, onSome: Exit.failCause })
        )
      ),
      // a fiber's children are interrupted when it ends: it ends once every element has
      Effect.zipRight(places.take(concurrency)),
      Effect.forkScoped
    )
    const next: Effect.Effect<B, Option.Option<E>> = Effect.flatMap(Queue.take(slots), (slot) =>
      Exit.isExit(slot)
        ? Exit.isSuccess(slot) ? Effect.fail(Option.none()) : Effect.failCause(Cause.map(slot.cause, Option.some))
        : Deferred.await(slot))
    return Stream.repeatEffectOption(next)
  }))
