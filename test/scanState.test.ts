/**
 * The scan's state as one Schema, seen from outside: `Checkpoint.toJson` writes every checkpoint a
 * real scan makes (it has no failure path), the text reads back as the same checkpoint and is
 * written the same again, and checkpoints written before the state was a Schema (version 1) still
 * read, checksum and all, and are written again byte for byte.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Arbitrary, Chunk, Effect, FastCheck as FC, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Checkpoint, MicroappClient } from "../src/index.js"
import * as Codec from "../src/internal/checkpointCodec.js"
import { CheckpointImpl, keyOrder, QueryJson } from "../src/internal/scan/checkpoint.js"
import * as IdSet from "../src/internal/scan/IdSet.js"
import * as ScanState from "../src/internal/scan/state.js"
import { MicroappServer } from "../src/testing/index.js"
import { mixedTable, withEmulator } from "./support.js"

const mixed = "000000000000000000000s01"
const mixedRows = mixedTable(mixed)

const fixture = (name: string): ReadonlyArray<string> =>
  JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "fixtures", name), "utf8"))

/** Texts written by version 1 of the format before its fields came from the Schema: exact and recent, mid-scan and complete. */
const writtenBefore = fixture("checkpoints-v1.json")

/** The same checkpoints as version 2 writes them, in the same order. */
const writtenNow = fixture("checkpoints-v2.json")

const options = FC.record({
  pageSize: FC.integer({ min: 5, max: 120 }),
  overlap: FC.integer({ min: 0, max: 12 }),
  dedupe: FC.constantFrom("exact" as const, "recent" as const),
  concurrency: FC.constantFrom(1, 3, "auto" as const),
  checkpointPages: FC.integer({ min: 1, max: 3 }),
  // the server's silent cap on rows a request: none, or below the page size
  cap: FC.option(FC.integer({ min: 2, max: 60 }), { nil: undefined }),
  stopAfter: FC.integer({ min: 1, max: 6 })
})

layer(withEmulator({ tables: [mixedRows] }), { excludeTestServices: true })((it) => {
  describe("Checkpoint.toJson over the checkpoints of real scans", () => {
    it.effect.prop(
      "writes each one, and the text reads back as the same checkpoint, written the same again",
      [options],
      ([o]) =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          yield* server.configure({ maxLimit: o.cap })
          const client = yield* MicroappClient
          const scanOf = (resume: Checkpoint.Checkpoint | undefined) =>
            client.scan({
              microAppID: mixed,
              pageSize: o.pageSize,
              overlap: o.overlap,
              dedupe: o.dedupe,
              concurrency: o.concurrency,
              checkpointEvery: { pages: o.checkpointPages },
              sort: { field: 1 },
              resume
            })
          // a run stopped after some pages, and the scan resumed from its last checkpoint to the end
          const first = yield* scanOf(undefined)
          const stopped = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(first.pages, o.stopAfter)))
          const rest = yield* scanOf(stopped.at(-1)?.checkpoint)
          const pages = [...stopped, ...Chunk.toReadonlyArray(yield* Stream.runCollect(rest.pages))]
          expect(pages.at(-1)?.checkpoint.summary.complete).toBe(true)
          for (const { checkpoint } of pages) {
            const text = Checkpoint.toJson(checkpoint)
            const back = yield* Checkpoint.fromJson(text)
            expect(back.summary).toEqual(checkpoint.summary)
            expect(back.query).toEqual(checkpoint.query)
            expect(Checkpoint.toJson(back)).toBe(text)
            // its JSON value is the text's object, and the Schema encodes to it
            expect(JSON.parse(JSON.stringify(checkpoint))).toEqual(JSON.parse(text))
            expect(yield* Schema.encode(Checkpoint.Checkpoint)(checkpoint)).toEqual(checkpoint.toJSON())
          }
          yield* server.configure({ maxLimit: undefined })
        }),
      { fastCheck: { numRuns: 10 }, timeout: 120_000 }
    )
  })
})

describe("checkpoints of version 1 written before the state was one Schema", () => {
  it.effect("read, checksum and all, and are written again as version 2 writes them", () =>
    Effect.gen(function*() {
      expect(writtenBefore.length).toBe(4)
      expect(writtenNow.length).toBe(4)
      for (const [i, text] of writtenBefore.entries()) {
        const checkpoint = yield* Checkpoint.fromJson(text)
        expect(Checkpoint.toJson(checkpoint)).toBe(writtenNow[i])
        expect(checkpoint.summary).toMatchObject({ invalidRows: 1, serverCap: 25, resumed: 1, elapsedMillis: 1234 })
        expect(checkpoint.summary.rows).toBe(checkpoint.summary.complete ? 229 : 87)
      }
    }))
})

/** Ids emitted, as each kind of set holds them: every one (packed and others), the recent ones, or their count. */
const seen: FC.Arbitrary<IdSet.Contents> = FC.oneof(
  FC.tuple(
    FC.array(FC.stringMatching(/^[0-9a-f]{24}$/), { maxLength: 20 }),
    // ids of other shapes, some that look like the text around the packed ids
    FC.array(FC.oneof(FC.string({ maxLength: 30 }), FC.constantFrom(`"packed":"`, `\\","packed":"`)), {
      maxLength: 5
    })
  ).map(([packed, others]) => {
    const set = IdSet.exact({ journal: true })
    for (const id of [...packed, ...others]) set.add(id)
    return set.contents() ?? IdSet.recentContents([])
  }),
  FC.array(FC.string(), { maxLength: 5 }).map(IdSet.recentContents),
  FC.record({ size: FC.nat(), digest: FC.stringMatching(/^[0-9a-f]{16}$/) }).map((held) => ({
    _tag: "Held" as const,
    ...held
  }))
)

/** A query's object with its keys in another order, and a key the format does not have. */
const shuffled = ({ dedupe, filters, microAppID, overlap, pageSize, sort }: QueryJson): QueryJson => {
  const given = {
    unknown: true,
    dedupe,
    overlap,
    pageSize,
    sort: sort.map(({ field, order }) => ({ order, field })),
    filters: filters.map(({ fieldID, value }) => ({ value, fieldID, extra: 1 })),
    microAppID
  }
  return given
}

describe("a checkpoint's text", () => {
  it.prop(
    "is canonical: the text JSON.stringify writes with the format's list of keys, whatever the order of the objects given",
    [Arbitrary.make(QueryJson), Arbitrary.make(ScanState.Progress), seen],
    ([query, progress, contents]) => {
      const given = new CheckpointImpl(shuffled(query), { ...progress, seen: contents })
      const text = Checkpoint.toJson(given)
      expect(text).toBe(JSON.stringify(given.toJSON(), keyOrder))
      expect(text).toBe(Checkpoint.toJson(new CheckpointImpl(query, { ...progress, seen: contents })))
    }
  )

  it.prop(
    "writes the state as Schema encodes it, keys in the same order, its defaults left out",
    [Arbitrary.make(ScanState.Progress)],
    ([progress]) => {
      const encoded = Codec.plainEncoder(ScanState.Progress)(progress)
      expect(JSON.stringify(encoded)).toBe(JSON.stringify(Schema.encodeSync(ScanState.Progress)(progress)))
      // the value given is left as it was
      expect(Schema.decodeSync(ScanState.Progress)(encoded)).toEqual(progress)
    }
  )

  it("is written by an encoder that refuses, as the module loads, a Schema it would not encode as Schema does", () => {
    expect(() => Codec.plainEncoder(Schema.DateFromString)).toThrow(/not plain data/)
    expect(() => Codec.plainEncoder(Schema.Union(Schema.Struct({ a: Schema.Number }), Schema.Array(Schema.Number))))
      .toThrow(/a Union is not plain data/)
  })
})
