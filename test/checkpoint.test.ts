/**
 * Checkpoints as values and as JSON: what they hold, their size, the Schema, and every way a text
 * can fail to be one (each a typed `InvalidCheckpoint` that says what is wrong).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, Effect, Either, Predicate, Schema, Stream } from "effect"
import { Checkpoint, type CheckpointProblem, InvalidCheckpoint, MicroappClient, type RowStream } from "../src/index.js"
import { numbersTable, withEmulator } from "./support.js"

const numbers = "000000000000000000000c01"
const size = 3000

/** The pages of a scan of the numbers table, and its summary. */
const scanPages = (options: Omit<MicroappClient.RowsOptions, "microAppID"> = {}) =>
  Effect.gen(function*() {
    const client = yield* MicroappClient
    const scan = yield* client.scan({ microAppID: numbers, pageSize: 500, concurrency: 1, ...options })
    const pages = Chunk.toReadonlyArray(yield* Stream.runCollect(scan.pages))
    return { pages, summary: yield* scan.summary }
  })

const checkpointAt = (pages: ReadonlyArray<RowStream.Page<unknown>>, index: number): Checkpoint.Checkpoint => {
  const page = pages[index]
  if (page === undefined) throw new Error(`no page ${index}`)
  return page.checkpoint
}

/** One change to a checkpoint's JSON object: the value at `path` replaced (`undefined`: removed). */
type Edit = readonly [path: ReadonlyArray<string>, change: (value: unknown) => unknown]

/** The JSON text of `checkpoint`, with `edits` made to its parsed object. */
const edited = (checkpoint: Checkpoint.Checkpoint, ...edits: ReadonlyArray<Edit>): string => {
  const json: unknown = JSON.parse(Checkpoint.toJson(checkpoint))
  for (const [path, change] of edits) {
    const parent = path.slice(0, -1).reduce<unknown>((at, key) => Predicate.isRecord(at) ? at[key] : undefined, json)
    const key = path.at(-1)
    if (!Predicate.isRecord(parent) || key === undefined) throw new Error(`no ${path.join(".")}`)
    const value = change(parent[key])
    if (value === undefined) delete parent[key]
    else parent[key] = value
  }
  return JSON.stringify(json)
}

const set = (value: unknown) => () => value
const increment = (value: unknown) => Number(value) + 1
const text = (change: (text: string) => string) => (value: unknown) => change(String(value))

layer(withEmulator({ tables: [numbersTable(numbers, size)] }), { excludeTestServices: true })((it) => {
  describe("a checkpoint's JSON", () => {
    it.effect("reads back as the same checkpoint: its query and its figures, written the same again", () =>
      Effect.gen(function*() {
        const { pages } = yield* scanPages({
          filters: [{ fieldID: "f_parity", value: "even" }],
          sort: { field: 1, order: "desc" }
        })
        const checkpoint = checkpointAt(pages, 1)
        const text = Checkpoint.toJson(checkpoint)
        const back = yield* Checkpoint.fromJson(text)
        expect(back.query).toEqual({
          microAppID: numbers,
          filters: [{ fieldID: "f_parity", value: "even" }],
          sort: [{ field: 1, order: "desc" }],
          pageSize: 500,
          overlap: 10,
          dedupe: "exact"
        })
        expect(back.summary).toEqual(checkpoint.summary)
        expect(back.summary).toMatchObject({ rows: 1000, complete: false, exhaustive: false, resumed: 0 })
        // written once, the same text again
        expect(Checkpoint.toJson(back)).toBe(text)
        // JSON.stringify writes the same object
        expect(JSON.parse(JSON.stringify(checkpoint))).toEqual(JSON.parse(text))
        expect(Object.keys(JSON.parse(text))).toEqual(["version", "query", "state", "counters", "seen", "checksum"])
        expect(text.startsWith(`{"version":2,"query":{"microAppID":"${numbers}"`)).toBe(true)
      }))

    it.effect("composes as a Schema: from its JSON object inside another object, and from text", () =>
      Effect.gen(function*() {
        const { pages } = yield* scanPages()
        const checkpoint = checkpointAt(pages, 2)
        const Stored = Schema.parseJson(
          Schema.Struct({ committedBytes: Schema.Number, checkpoint: Checkpoint.Checkpoint })
        )
        const text = yield* Schema.encode(Stored)({ committedBytes: 123, checkpoint })
        const stored = yield* Schema.decode(Stored)(text)
        expect(stored.committedBytes).toBe(123)
        expect(Checkpoint.isCheckpoint(stored.checkpoint)).toBe(true)
        expect(Checkpoint.toJson(stored.checkpoint)).toBe(Checkpoint.toJson(checkpoint))
        const fromText = yield* Schema.decode(Checkpoint.CheckpointFromJson)(Checkpoint.toJson(checkpoint))
        expect(fromText.summary).toEqual(checkpoint.summary)
        // a changed count fails the Schema as it fails fromJson
        const tampered = edited(checkpoint, [["counters", "retries"], increment])
        const failure = yield* Effect.flip(Schema.decode(Checkpoint.CheckpointFromJson)(tampered))
        expect(failure.message).toContain("does not match the content")
      }))

    it.effect("takes at most 20 bytes a row emitted under dedupe: exact (16 for the ids)", () =>
      Effect.gen(function*() {
        const { pages } = yield* scanPages({ pageSize: 1000 })
        const last = pages.at(-1)?.checkpoint
        expect(last?.summary).toMatchObject({ rows: size, complete: true, exhaustive: true })
        const bytes = last === undefined ? Infinity : new TextEncoder().encode(Checkpoint.toJson(last)).length
        expect(bytes / size).toBeLessThanOrEqual(20)
        expect(bytes).toBeGreaterThan(16 * size)
      }))

    it.effect("is bounded under dedupe: recent, however many rows were emitted", () =>
      Effect.gen(function*() {
        const { pages } = yield* scanPages({ pageSize: 100, dedupe: "recent" })
        const sizes = pages.map((page) => Checkpoint.toJson(page.checkpoint).length)
        // the window: 2 x (pageSize + overlap + 1) ids of 24 characters, quoted, with commas
        const bound = 2 * (100 + 10 + 1) * 27 + 2000
        expect(sizes.every((n) => n <= bound)).toBe(true)
        expect(pages.length).toBeGreaterThan(20)
        const back = yield* Checkpoint.fromJson(Checkpoint.toJson(checkpointAt(pages, 20)))
        expect(back.query.dedupe).toBe("recent")
        expect(back.summary.exhaustive).toBe(false)
      }))
  })

  describe("Checkpoint.fromJson refuses anything else, saying what is wrong", () => {
    it.effect("each kind of damage: an InvalidCheckpoint naming the field, the kind of fault and the fault", () =>
      Effect.gen(function*() {
        const { pages } = yield* scanPages()
        const checkpoint = checkpointAt(pages, 2)
        const good = Checkpoint.toJson(checkpoint)
        const cases: ReadonlyArray<readonly [string, string, string, CheckpointProblem, string]> = [
          ["garbage", "not a checkpoint at all", "checkpoint", "not JSON", "is not JSON"],
          ["truncated", good.slice(0, Math.floor(good.length / 2)), "checkpoint", "not JSON", "is not JSON (truncated"],
          ["an array", "[1, 2]", "checkpoint", "not a checkpoint", "is not a checkpoint"],
          ["an object without a version", "{\"position\": 3}", "checkpoint", "not a checkpoint", "is not a checkpoint"],
          [
            "a future version",
            edited(checkpoint, [["version"], set(3)]),
            "checkpoint.version",
            "version",
            "version 3 is newer than this library reads (2)"
          ],
          [
            "an unknown version",
            edited(checkpoint, [["version"], set(0)]),
            "checkpoint.version",
            "version",
            "version 0 was never written"
          ],
          [
            "a field missing",
            edited(checkpoint, [["state", "tail"], set(undefined)]),
            "checkpoint.state.tail",
            "field",
            "is missing"
          ],
          [
            "a position below 0",
            edited(checkpoint, [["state", "position"], set(-1)]),
            "checkpoint.state.position",
            "field",
            "-1"
          ],
          [
            "a count that is not a number",
            edited(checkpoint, [["counters", "pages"], set("3")]),
            "checkpoint.counters.pages",
            "field",
            "\"3\""
          ],
          [
            "more re-read ids than rows re-read",
            edited(checkpoint, [["state", "tail"], (tail) => Array.isArray(tail) ? [...tail, ...tail] : tail]),
            "checkpoint.state.tail",
            "field",
            "more than the 11 rows re-read"
          ],
          [
            "more rows re-read than the overlap allows",
            edited(checkpoint, [["state", "reread"], set(40)]),
            "checkpoint.state.reread",
            "field",
            "more than overlap + 1 (11)"
          ],
          [
            "fewer rows emitted than ids kept",
            edited(checkpoint, [["counters", "emitted"], set(1000)], [["counters", "rows"], set(1000)]),
            "checkpoint.seen",
            "field",
            "holds 1500 ids, more than the 1000 rows emitted"
          ],
          [
            "more rows handed on than emitted",
            edited(checkpoint, [["counters", "rows"], set(2000)]),
            "checkpoint.counters.rows",
            "field",
            "more than the 1500 emitted"
          ],
          [
            "ids that are not base64",
            edited(checkpoint, [["seen", "packed"], text((packed) => `!${packed.slice(1)}`)]),
            "checkpoint.seen.packed",
            "field",
            "is not base64"
          ],
          [
            "ids cut short (not a multiple of 12 bytes)",
            edited(checkpoint, [["seen", "packed"], text((packed) => packed.slice(4))]),
            "checkpoint.seen.packed",
            "field",
            "multiple of 16"
          ],
          [
            "ids of the wrong dedupe",
            edited(checkpoint, [["query", "dedupe"], set("recent")]),
            "checkpoint.seen",
            "field",
            "but the query's dedupe is \"recent\""
          ],
          [
            "a count changed by hand",
            edited(checkpoint, [["counters", "duplicatesDropped"], increment]),
            "checkpoint.checksum",
            "checksum",
            "does not match the content"
          ],
          [
            "one id changed by hand",
            edited(checkpoint, [
              ["seen", "packed"],
              text((packed) => `${packed[0] === "B" ? "C" : "B"}${packed.slice(1)}`)
            ]),
            "checkpoint.checksum",
            "checksum",
            "does not match the content"
          ],
          [
            "the query changed by hand",
            edited(checkpoint, [["query", "microAppID"], set("x")]),
            "checkpoint.checksum",
            "checksum",
            "does not match"
          ]
        ]
        for (const [name, text, input, problem, reason] of cases) {
          const error = yield* Effect.flip(Checkpoint.fromJson(text))
          expect(error, name).toBeInstanceOf(InvalidCheckpoint)
          expect({ name, tag: error._tag, input: error.input, problem: error.problem, method: error.method }).toEqual({
            name,
            tag: "InvalidInput",
            input,
            problem,
            method: undefined
          })
          expect(error.reason, name).toContain(reason)
        }
        // the same text, re-indented, is still the checkpoint
        const reindented = JSON.stringify(JSON.parse(good), null, 2)
        expect(Either.isRight(yield* Effect.either(Checkpoint.fromJson(reindented)))).toBe(true)
      }))
  })
})
