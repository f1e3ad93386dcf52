/**
 * The ordered concurrent map behind `updateRows`: results in input order, never more than
 * `concurrency` elements running, `start` called in input order, the input's failure after the
 * results before it, the elements still running interrupted when the stream ends early, a stop
 * leaving the results a prefix of the input, and no more than `2 * concurrency` elements started
 * ahead of what was pulled.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Chunk, Deferred, Effect, Exit, FastCheck as FC, Stream } from "effect"
import { mapInOrder } from "../src/internal/inOrder.js"

/** Yields `turns` times: elements finish out of order, without a clock. */
const after = (turns: number) => Effect.repeatN(Effect.yieldNow(), turns)

const tracked = () => {
  const record = { running: 0, most: 0, started: [] as Array<number>, ended: 0, interrupted: 0 }
  const start = (turns: number, index: number) => {
    record.started.push(index)
    return Effect.suspend(() => {
      record.running++
      record.most = Math.max(record.most, record.running)
      return Effect.as(after(turns), index * 10)
    }).pipe(
      Effect.onExit((exit) =>
        Effect.sync(() => {
          record.running--
          if (Exit.isInterrupted(exit)) record.interrupted++
          else record.ended++
        })
      )
    )
  }
  return { record, start }
}

describe("mapInOrder", () => {
  it.effect.prop(
    "emits every result in input order, with at most `concurrency` running, started in order",
    [
      FC.array(FC.integer({ min: 0, max: 20 }), { maxLength: 60 }),
      FC.integer({ min: 1, max: 8 }),
      FC.integer({ min: 1, max: 7 })
    ],
    ([turns, concurrency, chunkSize]) =>
      Effect.gen(function*() {
        const { record, start } = tracked()
        const input = Stream.rechunk(Stream.fromIterable(turns), chunkSize)
        const out = yield* Stream.runCollect(mapInOrder(input, concurrency, start))
        expect(Chunk.toArray(out)).toEqual(turns.map((_, i) => i * 10))
        expect(record.started).toEqual(turns.map((_, i) => i))
        expect(record.most).toBeLessThanOrEqual(concurrency)
        if (turns.length >= concurrency && concurrency > 1) expect(record.most).toBeGreaterThan(1)
        expect(record).toMatchObject({ running: 0, ended: turns.length, interrupted: 0 })
      })
  )

  it.effect("the input's failure comes after the results of the elements before it", () =>
    Effect.gen(function*() {
      const { start } = tracked()
      const input = Stream.concat(Stream.make(5, 0, 3), Stream.fail("broken"))
      const seen: Array<number> = []
      const exit = yield* Effect.exit(
        Stream.runForEach(mapInOrder(input, 2, start), (result) => Effect.sync(() => seen.push(result)))
      )
      expect(seen).toEqual([0, 10, 20])
      expect(exit).toStrictEqual(Exit.fail("broken"))
    }))

  it.effect("a stream taken only in part interrupts the elements still running, and starts no more", () =>
    Effect.gen(function*() {
      const { record, start } = tracked()
      const input = Stream.fromIterable([0, 1000, 1000, 1000, 1000, 1000])
      const out = yield* Stream.runCollect(Stream.take(mapInOrder(input, 3, start), 1))
      expect(Chunk.toArray(out)).toEqual([0])
      expect(record.running).toBe(0)
      expect(record.interrupted).toBeGreaterThan(0)
      expect(record.started.length).toBeLessThanOrEqual(4)
      expect(record.ended + record.interrupted).toBe(record.started.length)
    }))

  it.effect.prop(
    "an unbounded input pulled slowly: never more than 2 * concurrency elements started ahead of the results pulled",
    [FC.integer({ min: 1, max: 8 }), FC.integer({ min: 1, max: 7 }), FC.integer({ min: 0, max: 5 })],
    ([concurrency, chunkSize, pause]) =>
      Effect.gen(function*() {
        const { record, start } = tracked()
        let pulled = 0
        let most = 0
        const input = Stream.rechunk(Stream.iterate(0, (i) => (i + 1) % 3), chunkSize)
        const out = yield* mapInOrder(input, concurrency, start).pipe(
          Stream.mapChunks((results) => {
            pulled += results.length
            most = Math.max(most, record.started.length - pulled)
            return results
          }),
          // the consumer lags: the workers run as far ahead as they are let
          Stream.tap(() => after(pause * concurrency)),
          Stream.take(100),
          Stream.runCollect
        )
        expect(Chunk.toArray(out)).toEqual(Array.from({ length: 100 }, (_, i) => i * 10))
        expect(most).toBeLessThanOrEqual(2 * concurrency)
        expect(record.started.length).toBeLessThanOrEqual(pulled + 2 * concurrency)
      })
  )

  it.effect("`start` returning undefined: no element from there on starts, the input is read no further, the results before it are emitted", () =>
    Effect.gen(function*() {
      const { record, start } = tracked()
      let read = 0
      const input = Stream.iterate(0, (i) => i + 1).pipe(
        Stream.tap(() => Effect.sync(() => read++)),
        Stream.map(() => 3)
      )
      const out = yield* Stream.runCollect(
        mapInOrder(input, 3, (turns, index) => index === 5 ? undefined : start(turns, index))
      )
      expect(Chunk.toArray(out)).toEqual([0, 10, 20, 30, 40])
      expect(record.started).toEqual([0, 1, 2, 3, 4])
      expect(record).toMatchObject({ running: 0, ended: 5, interrupted: 0 })
      // the one-element chunks read: the five started and the one refused
      expect(read).toBe(6)
    }))

  it.effect("`stop`: the elements under way finish and are emitted, none starts after it, a read of the input under way is abandoned", () =>
    Effect.gen(function*() {
      const { record, start } = tracked()
      const stop = yield* Deferred.make<void>()
      // an input that never ends, as stdin may not
      const input = Stream.concat(Stream.make(0, 50, 50, 50), Stream.never)
      const out = yield* Stream.runCollect(
        mapInOrder(
          input,
          2,
          (turns, index) =>
            index === 1 ? Effect.zipRight(Deferred.succeed(stop, undefined), start(turns, index)) : start(turns, index),
          { stop: Deferred.await(stop) }
        )
      )
      // 0 finishes and a worker takes 2 before the stop, made by 1, is seen
      expect(Chunk.toArray(out)).toEqual(record.started.map((index) => index * 10))
      expect(record.started.length).toBeGreaterThanOrEqual(2)
      expect(record.started.length).toBeLessThanOrEqual(4)
      expect(record).toMatchObject({ running: 0, interrupted: 0 })
    }))

  it.effect("`stop` with every element done and the input waiting: the stream ends", () =>
    Effect.gen(function*() {
      const { start } = tracked()
      const stop = yield* Deferred.make<void>()
      const input = Stream.concat(Stream.make(0, 1), Stream.never)
      const out = yield* mapInOrder(input, 2, start, { stop: Deferred.await(stop) }).pipe(
        Stream.tap((result) => result === 10 ? Deferred.succeed(stop, undefined) : Effect.void),
        Stream.runCollect
      )
      expect(Chunk.toArray(out)).toEqual([0, 10])
    }))

  const defects = {
    "in an element's work": (): Effect.Effect<number> => Effect.die("broken"),
    "thrown by `start` itself": (): Effect.Effect<number> => {
      throw "broken"
    }
  }
  for (const [where, defect] of Object.entries(defects)) {
    it.effect(`a defect ${where} ends the stream with it, after the results before it`, () =>
      Effect.gen(function*() {
        const { record, start } = tracked()
        const seen: Array<number> = []
        const input = Stream.fromIterable([0, 4, 2, 8, 1, 6])
        const exit = yield* Effect.exit(
          Stream.runForEach(
            mapInOrder(input, 3, (turns, index) => index === 3 ? defect() : start(turns, index)),
            (result) => Effect.sync(() => seen.push(result))
          )
        )
        expect(seen).toEqual([0, 10, 20])
        expect(Exit.isFailure(exit) && Cause.squash(exit.cause)).toBe("broken")
        expect(record.running).toBe(0)
      }))
  }
})
