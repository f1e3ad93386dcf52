/**
 * Mapping a stream with bounded concurrency, results in input order, for the CPU of a plain loop:
 * `concurrency` long-lived workers take the elements one at a time from the chunk at hand, and the
 * results go out as soon as a prefix of them is done, together as one chunk. A fiber, a `Deferred`
 * and a queue's offer and take per element cost more CPU than the request an element of
 * `updateRows` sends.
 */
import { Cause, Chunk, Effect, Option, Stream } from "effect"

/** A place in the window whose result is not in yet. */
const Empty: unique symbol = Symbol("Empty")

/**
 * Runs `start(element, index)` for each element, at most `concurrency` at once, and emits the
 * results in input order. `start` is called in input order, each call once a worker is free, so
 * what it does before returning its effect happens in order; when it returns `undefined`, that
 * element and every one after it are not started and the input is no longer read. When `stop`
 * completes, the same: no more elements start, and a read of the input under way is abandoned.
 * Either way the stream ends after the results of the elements started. `onEmit` sees each chunk
 * of results as it is pulled (a stage of its own would cost a channel step per chunk). No more than
 * `2 * concurrency` elements are started and not yet pulled; when the stream ends early, the
 * elements still running are interrupted.
 */
export const mapInOrder = <A, E, R, B, R2>(
  self: Stream.Stream<A, E, R>,
  concurrency: number,
  start: (element: A, index: number) => Effect.Effect<B, never, R2> | undefined,
  options: {
    readonly stop?: Effect.Effect<unknown, never, R2> | undefined
    readonly onEmit?: ((results: ReadonlyArray<B>) => Effect.Effect<void>) | undefined
  } = {}
): Stream.Stream<B, E, R | R2> =>
  Stream.fromPull(Effect.gen(function*() {
    const pull = yield* Stream.toPull(self)
    // a slow element holds back at most this many after it; results by index modulo the window
    const window = 2 * concurrency
    const results: Array<B | typeof Empty> = new Array(window).fill(Empty)
    const resultOf = (index: number) => results[index % window] as B | typeof Empty
    let chunk: ReadonlyArray<A> = []
    let at = 0
    let started = 0
    let emitted = 0
    let pulling = false
    // no element starts any more: the input ended or failed, or a stop
    let closed = false
    // what ends the stream once the results before `failedAt` are out: the input's failure, or a worker's
    let failure: Cause.Cause<Option.Option<E>> | undefined
    let failedAt = 0
    let consumer: (() => void) | undefined
    let idle: Array<() => void> = []

    const wakeConsumer = () => {
      const resume = consumer
      consumer = undefined
      resume?.()
    }
    const wakeWorkers = () => {
      const waiting = idle
      idle = []
      for (const resume of waiting) resume()
    }
    const close = () => {
      closed = true
      wakeConsumer()
      wakeWorkers()
    }
    const fail = (index: number, cause: Cause.Cause<Option.Option<E>>) => {
      if (failure === undefined || index < failedAt) {
        failure = cause
        failedAt = index
      }
      close()
    }
    /** Waits for `park`'s wake-up unless `ready()` already: looked at again in the callback, as the fiber may yield before it. */
    const until = (ready: () => boolean, park: (wake: () => void) => void) =>
      Effect.async<void>((resume) => {
        if (ready()) resume(Effect.void)
        else park(() => resume(Effect.void))
      })

    const canTake = () => closed || (started - emitted < window && (at < chunk.length || !pulling))
    const waitToTake = until(canTake, (wake) => idle.push(wake))

    const worker = Effect.suspend(() => {
      let current = 0
      const take: Effect.Effect<void, never, R | R2> = Effect.suspend(() => {
        if (closed) return Effect.void
        if (!canTake()) return Effect.zipRight(waitToTake, take)
        if (at < chunk.length) {
          const index = started
          current = index
          const work = start(chunk[at++] as A, index)
          if (work === undefined) {
            close()
            return Effect.void
          }
          started++
          return Effect.flatMap(work, (result) => {
            results[index % window] = result
            if (index === emitted) wakeConsumer()
            return take
          })
        }
        pulling = true
        return Effect.matchCauseEffect(pull, {
          onSuccess: (next) => {
            chunk = Chunk.toReadonlyArray(next)
            at = 0
            pulling = false
            wakeWorkers()
            return take
          },
          onFailure: (cause) => {
            pulling = false
            // the pull fails with None at the input's end
            Option.match(Cause.flipCauseOption(cause), {
              onNone: close,
              onSome: (error) => fail(started, Cause.map(error, Option.some))
            })
            return Effect.void
          }
        })
      })
      // a defect of an element's work ends the stream at that element
      return Effect.catchAllCause(take, (cause) => Effect.sync(() => fail(current, cause)))
    })

    const ready = () =>
      resultOf(emitted) !== Empty || (failure !== undefined && emitted === failedAt) ||
      (closed && emitted === started)
    const waitToEmit = until(ready, (wake) => (consumer = wake))

    const next: Effect.Effect<Chunk.Chunk<B>, Option.Option<E>> = Effect.suspend(() => {
      if (resultOf(emitted) !== Empty) {
        const out: Array<B> = []
        for (let result = resultOf(emitted); result !== Empty; result = resultOf(emitted)) {
          out.push(result)
          results[emitted % window] = Empty
          emitted++
        }
        wakeWorkers()
        const emitting = Chunk.unsafeFromArray(out)
        return options.onEmit === undefined ? Effect.succeed(emitting) : Effect.as(options.onEmit(out), emitting)
      }
      if (failure !== undefined && emitted === failedAt) return Effect.failCause(failure)
      if (closed && emitted === started) return Effect.fail(Option.none())
      return Effect.zipRight(waitToEmit, next)
    })

    for (let i = 0; i < concurrency; i++) yield* Effect.forkScoped(worker)
    if (options.stop !== undefined) yield* Effect.forkScoped(Effect.zipRight(options.stop, Effect.sync(close)))
    return next
  }))
