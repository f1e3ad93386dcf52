/**
 * Sink-held checkpoints: a checkpoint whose JSON leaves the ids emitted to the sink that holds the
 * rows, made whole again from the ids the sink gives back. A scan or a change pass resumed that way
 * behaves exactly as one resumed from the self-contained checkpoint; ids that are not exactly the
 * ones counted (one missing, one extra, one changed, one twice) are refused.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, Effect, FastCheck as FC, Stream } from "effect"
import { Changes, Checkpoint, MicroappClient, type RowStream } from "../src/index.js"
import { MicroappServer } from "../src/testing/index.js"
import { mixedTable, withEmulator } from "./support.js"

const mixed = "000000000000000000000s02"

const table = mixedTable(mixed)

const options = FC.record({
  pageSize: FC.integer({ min: 5, max: 120 }),
  overlap: FC.integer({ min: 0, max: 12 }),
  concurrency: FC.constantFrom(1, 3, "auto" as const),
  checkpointPages: FC.integer({ min: 1, max: 3 }),
  // the server's silent cap on rows a request: none, or below the page size
  cap: FC.option(FC.integer({ min: 2, max: 60 }), { nil: undefined }),
  stopAfter: FC.integer({ min: 1, max: 6 }),
  shuffle: FC.boolean()
})

type Options = typeof options extends FC.Arbitrary<infer A> ? A : never

/** The summary but what depends on time (the time spent, what adaptive concurrency reached), which two runs never share. */
const figures = ({ concurrency: _c, concurrencyReached: _r, elapsedMillis: _e, ...summary }: RowStream.ScanSummary) =>
  summary

/** Reversed, as a sink that does not keep the order of its rows might give them back. */
const reorder = <A>(items: ReadonlyArray<A>, shuffle: boolean) => (shuffle ? [...items].reverse() : [...items])

/** The ids a sink committed, `wrong` in one of the ways a sink can be. */
const spoilt = (ids: ReadonlyArray<string>, wrong: "missing" | "extra" | "changed" | "twice") => {
  switch (wrong) {
    case "missing":
      return ids.slice(1)
    case "extra":
      return [...ids, "ffffffffffffffffffffffff"]
    case "changed":
      return ["ffffffffffffffffffffffff", ...ids.slice(1)]
    case "twice":
      return [ids[0] ?? "", ...ids.slice(1, -1), ids[0] ?? ""]
  }
}

const scanOf = (o: Options, resume: Checkpoint.Checkpoint | undefined) =>
  Effect.flatMap(MicroappClient, (client) =>
    client.scan({
      microAppID: mixed,
      pageSize: o.pageSize,
      overlap: o.overlap,
      concurrency: o.concurrency,
      checkpointEvery: { pages: o.checkpointPages },
      sort: { field: 1 },
      resume
    }))

const collect = <A, E, R>(stream: Stream.Stream<A, E, R>) => Effect.map(Stream.runCollect(stream), Chunk.toArray)

layer(withEmulator({ tables: [table] }), { excludeTestServices: true })((it) => {
  describe("Checkpoint.withoutIds and Checkpoint.withIds", () => {
    it.effect.prop(
      "a scan stopped at any page and resumed with the ids its sink committed goes on as from the self-contained checkpoint",
      [options],
      ([o]) =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          yield* server.configure({ maxLimit: o.cap })
          const stopped = yield* collect(Stream.take((yield* scanOf(o, undefined)).pages, o.stopAfter))
          const last = stopped.at(-1)?.checkpoint
          if (last === undefined) return expect.fail("no page")
          const committed = stopped.flatMap((page) => page.rows.map((row) => row._id))

          const text = Checkpoint.toJson(Checkpoint.withoutIds(last))
          expect(text).not.toContain("packed")
          expect(text.length).toBeLessThan(2000 + 30 * o.overlap)
          const held = yield* Checkpoint.fromJson(text)
          expect(held.summary).toEqual(last.summary)
          const refusal = yield* Effect.flip(scanOf(o, held))
          expect(refusal).toMatchObject({ _tag: "InvalidInput", input: "resume", problem: "ids held" })
          expect(refusal.reason).toMatch(/holds no ids, its sink does/)

          const whole = yield* Checkpoint.withIds(held, Stream.fromIterable(reorder(committed, o.shuffle)))
          // the sink's order is its own; in the order emitted, the very checkpoint the scan wrote
          if (!o.shuffle) expect(Checkpoint.toJson(whole)).toBe(Checkpoint.toJson(last))
          const fromSelf = yield* scanOf(o, yield* Checkpoint.fromJson(Checkpoint.toJson(last)))
          const selfPages = yield* collect(fromSelf.pages)
          const fromSink = yield* scanOf(o, whole)
          const sinkPages = yield* collect(fromSink.pages)
          expect(sinkPages.map((page) => page.rows)).toEqual(selfPages.map((page) => page.rows))
          expect(sinkPages.map((page) => figures(page.checkpoint.summary))).toEqual(
            selfPages.map((page) => figures(page.checkpoint.summary))
          )
          expect(figures(yield* fromSink.summary)).toEqual(figures(yield* fromSelf.summary))

          for (const wrong of ["missing", "extra", "changed", "twice"] as const) {
            if (committed.length < 2) continue
            const error = yield* Effect.flip(Checkpoint.withIds(held, spoilt(committed, wrong)))
            expect(error).toMatchObject({ _tag: "InvalidInput", input: "ids" })
            expect(error.reason).toMatch(/the sink's ids are not the checkpoint's/)
          }
          yield* server.configure({ maxLimit: undefined })
        }),
      { fastCheck: { numRuns: 12 }, timeout: 180_000 }
    )

    it.effect("a checkpoint that holds its ids is returned as it is, the sink's ids unread", () =>
      Effect.gen(function*() {
        const o = { pageSize: 50, overlap: 1, concurrency: 1, checkpointPages: 1, cap: undefined, stopAfter: 1 }
        const [page] = yield* collect(Stream.take((yield* scanOf({ ...o, shuffle: false }, undefined)).pages, 1))
        if (page === undefined) return expect.fail("no page")
        const unread = Stream.die("read")
        expect(yield* Checkpoint.withIds(page.checkpoint, unread)).toBe(page.checkpoint)
        // the sink's own failure comes through as it is
        const held = Checkpoint.withoutIds(page.checkpoint)
        expect(yield* Effect.flip(Checkpoint.withIds(held, Stream.fail("the sink is down" as const)))).toBe(
          "the sink is down"
        )
      }))
  })

  describe("Changes.withoutIds and Changes.withIds", () => {
    it.effect.prop(
      "a pass stopped at any page, in the scan or among the deletes, resumed with the ids its sink holds, reports what the self-contained resume does",
      [FC.integer({ min: 1, max: 14 }), FC.integer({ min: 10, max: 60 })],
      ([stopAfter, pageSize]) =>
        Effect.gen(function*() {
          const client = yield* MicroappClient
          // a baseline of every other row, changed, and of rows gone: updates, inserts, and deletes over several pages
          const baseline = new Map<string, string>()
          table.rows.forEach((row, i) => i % 2 === 0 && baseline.set(row._id, i % 4 === 0 ? "0" : "x"))
          for (let i = 0; i < 3 * pageSize; i++) baseline.set(`gone-${i}`, "0")
          const passOf = (resume: Changes.Checkpoint | undefined) =>
            client.changes({
              microAppID: mixed,
              pageSize,
              sort: { field: 1 },
              baseline: Changes.Baseline.fromMap(baseline),
              resume,
              // the gone rows are more than the default guard allows of this baseline
              maxDeletes: 3 * pageSize
            })
          const stopped = yield* collect(Stream.take((yield* passOf(undefined)).pages, stopAfter))
          const last = stopped.at(-1)?.checkpoint
          if (last === undefined) return expect.fail("no page")
          const changes = stopped.flatMap((page) => page.changes)
          // the sink: what it was handed, and the rows it saw unchanged (each one it compared)
          const scanned = table.rows.slice(0, last.summary.rows).map((row) => row._id)
          const deleted = changes.filter(Changes.Change.$is("Deleted")).map((change) => change.id)

          const held = yield* Changes.fromJson(Changes.toJson(Changes.withoutIds(last)))
          expect(Changes.toJson(Changes.withoutIds(last))).not.toContain("packed")
          expect(held.summary).toEqual(last.summary)
          expect(yield* Effect.flip(passOf(held))).toMatchObject({
            _tag: "InvalidInput",
            input: "resume",
            problem: "ids held"
          })

          const whole = yield* Changes.withIds(held, { ids: scanned, deleted: Stream.fromIterable(deleted) })
          const fromSelf = yield* passOf(yield* Changes.fromJson(Changes.toJson(last)))
          const selfChanges = yield* collect(fromSelf.changes)
          const fromSink = yield* passOf(whole)
          expect(yield* collect(fromSink.changes)).toEqual(selfChanges)
          expect(figures(yield* fromSink.summary)).toEqual(figures(yield* fromSelf.summary))

          if (deleted.length > 0) {
            const error = yield* Effect.flip(Changes.withIds(held, { ids: scanned, deleted: deleted.slice(1) }))
            expect(error).toMatchObject({ _tag: "InvalidInput", input: "deleted" })
          }
          const error = yield* Effect.flip(Changes.withIds(held, { ids: scanned.slice(1), deleted }))
          expect(error).toMatchObject({ _tag: "InvalidInput", input: "ids" })
        }),
      { fastCheck: { numRuns: 12 }, timeout: 180_000 }
    )
  })
})
