/**
 * The ordered concurrent map behind `updateRows`: results in input order, never more than
 * `concurrency` elements running, `start` called in input order, the input's failure after the
 * results before it, and the elements still running interrupted when the stream ends early.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Exit, FastCheck as FC, Stream } from "effect"
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
})
