/**
 * Change passes over real HTTP to the emulator: a first pass, the changes between two passes, a
 * model-based test with drift, faults, a server cap and resumes through JSON, typed passes, and
 * the options and checkpoints a pass refuses.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Chunk, Effect, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Changes, Checkpoint, InvalidCheckpoint, Microapp, MicroappClient, Row } from "../src/index.js"
import { MicroappServer } from "../src/testing/index.js"
import * as Prng from "../src/testing/internal/prng.js"
import { numbersTable, withEmulator } from "./support.js"

const numbers = "000000000000000000000c01"
const size = 300
const table = numbersTable(numbers, size).rows

type Options = Omit<Changes.Options<never, never>, "microAppID">

/** Runs a pass to its end: its pages and its summary. */
const passOf = (options: Options) =>
  Effect.gen(function*() {
    const client = yield* MicroappClient
    const pass = yield* client.changes({ microAppID: numbers, pageSize: 50, ...options })
    const pages = Chunk.toReadonlyArray(yield* Stream.runCollect(pass.pages))
    return { pages, changes: pages.flatMap((page) => page.changes), summary: yield* pass.summary }
  })

/** The table's fingerprints by id, read from the emulator's store (test (a) shows they are those of the rows as sent). */
const truth = Effect.map(
  Effect.flatMap(MicroappServer, (server) => server.rows.table(numbers)),
  (rows) => new Map(rows.map((row) => [String(row["_id"]), Changes.fingerprint(row)]))
)

const reset = (rows: ReadonlyArray<Record<string, unknown>> = table) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    yield* server.log.clearHook
    yield* server.configure({ maxLimit: undefined })
    yield* server.rows.setRows(numbers, rows)
    yield* server.log.clear
  })

const byTag = (changes: ReadonlyArray<Changes.Change<unknown>>) => ({
  inserted: changes.filter(Changes.Change.$is("Inserted")).map((change) => change.id).sort(),
  updated: changes.filter(Changes.Change.$is("Updated")).map((change) => change.id).sort(),
  deleted: changes.filter(Changes.Change.$is("Deleted")).map((change) => change.id).sort()
})

const idAt = (i: number) => table[i]?._id ?? ""

layer(withEmulator({ tables: [numbersTable(numbers, size)] }), { excludeTestServices: true })((it) => {
  describe("passes", () => {
    it.effect("a first pass over an empty baseline: every row Inserted once, with the fingerprint of the row as sent", () =>
      Effect.gen(function*() {
        yield* reset()
        const first = yield* passOf({ baseline: Changes.Baseline.empty })
        const expected = yield* truth
        expect(first.changes.every(Changes.Change.$is("Inserted"))).toBe(true)
        expect(first.changes.map((change) => change.id)).toEqual(table.map((row) => row._id))
        expect(new Map(first.changes.map((change) => [change.id, change._tag === "Deleted" ? "" : change.fingerprint])))
          .toEqual(expected)
        expect(first.summary).toMatchObject({
          inserted: size,
          updated: 0,
          deleted: 0,
          unchanged: 0,
          deletes: "reported",
          rows: size,
          exhaustive: true
        })
        expect(first.pages.at(-1)?.checkpoint).toMatchObject({ phase: "done" })
        expect(first.pages.slice(0, -1).every((page) => page.checkpoint.phase !== "done")).toBe(true)

        // nothing changed: nothing to report, every row counted unchanged
        const second = yield* passOf({ baseline: Changes.Baseline.fromMap(Changes.fold(new Map(), first.changes)) })
        expect(second.changes).toEqual([])
        expect(second.summary).toMatchObject({ inserted: 0, updated: 0, deleted: 0, unchanged: size })
      }))

    it.effect("the changes between two passes are exactly the updates, inserts and deletes made", () =>
      Effect.gen(function*() {
        yield* reset()
        const server = yield* MicroappServer
        const baseline = yield* truth
        for (const i of [3, 150, 299]) yield* server.rows.updateRow(idAt(i), { Parity: "changed" })
        // an update that writes the values the row has is no change of content
        yield* server.rows.updateRow(idAt(10), { Parity: "even" })
        for (const i of [0, 77]) yield* server.rows.removeRow(idAt(i))
        const inserted = yield* Effect.forEach(
          [0, 1, 2, 3],
          (n) => server.rows.insertRow(numbers, { N: 1000 + n, Parity: "new" }, { index: n * 60 })
        )
        const pass = yield* passOf({ baseline: Changes.Baseline.fromMap(baseline) })
        const after = yield* truth
        expect(byTag(pass.changes)).toEqual({
          inserted: inserted.map((row) => String(row["_id"])).sort(),
          updated: [3, 150, 299].map(idAt).sort(),
          deleted: [0, 77].map(idAt).sort()
        })
        for (const change of pass.changes) {
          if (change._tag !== "Inserted") expect(change.previous).toBe(baseline.get(change.id))
          if (change._tag !== "Deleted") expect(change.fingerprint).toBe(after.get(change.id))
        }
        // deletes come last
        expect(pass.changes.slice(-2).every(Changes.Change.$is("Deleted"))).toBe(true)
        expect(pass.summary).toMatchObject({ inserted: 4, updated: 3, deleted: 2, unchanged: size - 5 })
        expect(Changes.fold(baseline, pass.changes)).toEqual(after)
      }))

    /** A pass over the table less row 200, while a row is inserted at the front once the scan is past it: not exhaustive. */
    const busyPass = (deletes: "confirmed" | "exhaustive" | undefined) =>
      Effect.gen(function*() {
        yield* reset()
        const server = yield* MicroappServer
        const baseline = yield* truth
        yield* server.rows.removeRow(idAt(200))
        let done = false
        yield* server.log.onRequest((record) =>
          !done && JSON.stringify(record.body).includes("\"skip\":\"1")
            ? Effect.asVoid(Effect.zipRight(
              Effect.sync(() => {
                done = true
              }),
              server.rows.insertRow(numbers, { N: -1, Parity: "front" }, { index: 0 })
            ))
            : Effect.void
        )
        return yield* passOf({ baseline: Changes.Baseline.fromMap(baseline), concurrency: 1, deletes })
      })

    it.effect("a pass that is not exhaustive still reports the deletes a point read confirms", () =>
      Effect.gen(function*() {
        const pass = yield* busyPass(undefined)
        expect(pass.summary).toMatchObject({ exhaustive: false, deletes: "reported", deleted: 1, unconfirmed: 0 })
        expect(byTag(pass.changes).deleted).toEqual([idAt(200)])
        // row 200, and the rows the inserted one pushed past the scan's position, each read once
        expect(pass.summary.reads).toBeGreaterThanOrEqual(1)
        expect(pass.summary.inserted + pass.summary.updated + pass.summary.unchanged).toBe(
          pass.summary.rows + pass.summary.reads - 1
        )
        expect(pass.pages.at(-1)?.checkpoint.phase).toBe("done")
      }))

    it.effect("exhaustive-only deletes: a pass that is not exhaustive reports no delete, reads nothing, and says so", () =>
      Effect.gen(function*() {
        const pass = yield* busyPass("exhaustive")
        expect(pass.summary).toMatchObject({ exhaustive: false, deletes: "skipped", deleted: 0, reads: 0 })
        expect(byTag(pass.changes).deleted).toEqual([])
        expect(pass.pages.at(-1)?.checkpoint.phase).toBe("done")
      }))
  })

  describe("model", () => {
    it.effect(
      "random tables, changes between and during passes, faults, caps, lying listings and resumes: every change once, none invented, no standing row deleted",
      () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const client = yield* MicroappClient
          // what the seeds covered, so that a generator that drifts off its purpose shows
          const covered = { reported: 0, skipped: 0, resumedInDeletes: 0, resumedInScan: 0, found: 0, lying: 0 }
          for (let seed = 1; seed <= 60; seed++) {
            const random = Prng.make(seed)
            const count = random.int(90)
            const rows = numbersTable(numbers, count).rows
            yield* reset(rows)
            const pageSize = 3 + random.int(20)
            const cap = random.next() < 0.3 ? 2 + random.int(pageSize) : undefined
            // listings that leave out a different row in `every` each answer, or some rows always (point reads find them)
            const lag = random.next() < 0.4
              ? random.next() < 0.5
                ? { every: 3 + random.int(9) }
                : { ids: rows.filter(() => random.next() < 0.1).map((row) => row._id) }
              : undefined
            // exhaustive-only deletes cannot tell a row hidden from a row deleted: tried on truthful listings only
            const deletes = lag === undefined && random.next() < 0.25 ? "exhaustive" as const : undefined
            const options = {
              deletes,
              microAppID: numbers,
              pageSize,
              overlap: 2 + random.int(6),
              concurrency: random.pick([1, 3] as const),
              onInconsistent: "continue" as const,
              retry: { initialDelay: "1 millis", maxDelay: "2 millis", maxAttempts: 8 } as const
            }
            const previous = yield* truth
            // the fingerprints each id had at any moment of the pass, and the ids touched during it
            const versions = new Map<string, Set<string>>()
            const touched = new Set<string>()
            const note = Effect.gen(function*() {
              for (const [id, fp] of yield* truth) {
                const known = versions.get(id) ?? new Set<string>()
                versions.set(id, known.add(fp))
              }
            })
            const noteRow = (id: string) =>
              Effect.map(server.rows.getRow(id), (row) => {
                if (row._tag === "Some") {
                  versions.set(id, (versions.get(id) ?? new Set()).add(Changes.fingerprint(row.value)))
                }
              })
            // between the passes
            const mutate = Effect.gen(function*() {
              const current = yield* server.rows.table(numbers)
              const roll = random.int(3)
              const row = current[random.int(current.length)]
              if (roll === 0 || row === undefined) {
                const made = yield* server.rows.insertRow(numbers, { N: 5000 + random.int(1000), Parity: "new" }, {
                  index: random.int(current.length + 1)
                })
                return String(made["_id"])
              }
              const id = String(row["_id"])
              if (roll === 1) yield* server.rows.removeRow(id)
              else yield* server.rows.updateRow(id, { Parity: `p${random.int(4)}` })
              return id
            })
            for (let n = random.int(8); n > 0; n--) yield* mutate
            const start = yield* truth
            yield* note
            // during the pass, with the answer of some requests
            const drift = random.next() < 0.5 ? 0 : 0.15
            yield* server.log.onRequest((record) =>
              record.path.endsWith("/microappdata") && random.next() < drift
                ? Effect.flatMap(
                  mutate,
                  (id) => Effect.zipRight(Effect.sync(() => touched.add(id)), Effect.asVoid(noteRow(id)))
                )
                : Effect.void
            )
            if (cap !== undefined) yield* server.configure({ maxLimit: cap })
            if (lag !== undefined) yield* server.configure({ lag })
            if (random.next() < 0.5) yield* server.faults.inject("http500", { count: 1 + random.int(3) })

            // a sink that commits pages one at a time, stops at random and resumes from JSON
            const sinkFolds = random.next() < 0.5
            let committed = previous as ReadonlyMap<string, string>
            const changes: Array<Changes.Change<unknown>> = []
            let checkpoint: Changes.Checkpoint | undefined
            let stops = 0
            for (;;) {
              if (checkpoint?.phase === "deletes" && checkpoint.summary.deleted > 0) covered.resumedInDeletes++
              if (checkpoint?.phase === "scan") covered.resumedInScan++
              const pass = yield* client.changes({
                ...options,
                baseline: Changes.Baseline.fromMap(sinkFolds ? committed : previous),
                resume: checkpoint
              })
              const take = random.int(5)
              const pages = Chunk.toReadonlyArray(
                yield* Stream.runCollect(take === 0 || stops > 6 ? pass.pages : Stream.take(pass.pages, take))
              )
              for (const page of pages) {
                changes.push(...page.changes)
                committed = Changes.fold(committed, page.changes)
                checkpoint = yield* Changes.fromJson(Changes.toJson(page.checkpoint))
              }
              stops++
              if (checkpoint?.phase === "done") break
            }
            yield* server.log.clearHook
            yield* server.configure({ maxLimit: undefined, lag: undefined })
            const summary = checkpoint?.summary
            const context = JSON.stringify({ seed, count, pageSize, cap, drift, sinkFolds, lag, deletes, summary })

            // every change once
            const ids = changes.map((change) => change.id)
            expect(new Set(ids).size, context).toBe(ids.length)
            // none invented: each is a version the row had, against what the baseline held
            for (const change of changes) {
              if (change._tag === "Inserted") expect(previous.has(change.id), context).toBe(false)
              else expect(change.previous, context).toBe(previous.get(change.id))
              if (change._tag !== "Deleted") {
                expect(versions.get(change.id)?.has(change.fingerprint), context).toBe(true)
              }
            }
            // rows that stood still during the pass: the changes are exactly the difference
            const reported = new Map(changes.map((change) => [change.id, change]))
            for (const [id, fp] of start) {
              if (touched.has(id)) continue
              const change = reported.get(id)
              const was = previous.get(id)
              expect(change?._tag, context).not.toBe("Deleted")
              // a row of the baseline the scan missed is read: only an insert can be missed, and only by a scan not exhaustive
              if (was === undefined && (summary?.exhaustive !== true || lag !== undefined)) continue
              if (was !== undefined && deletes === "exhaustive" && summary?.exhaustive !== true) continue
              if (was === fp) expect(change, context).toBeUndefined()
              else {expect(change, context).toMatchObject({
                  _tag: was === undefined ? "Inserted" : "Updated",
                  fingerprint: fp
                })}
            }
            covered[summary?.deletes === "reported" ? "reported" : "skipped"]++
            // deletes are held back only when the control read could not find a row the scan saw: it saw
            // none (the table emptied), or the one it read was deleted while the pass ran
            const heldBack = summary?.heldBack ?? 0
            if (heldBack > 0) expect(summary?.rows === 0 || touched.size > 0, context).toBe(true)
            if (summary?.deletes === "reported") {
              // ids gone before the pass began are all reported deleted, or all held back
              for (const id of previous.keys()) {
                if (!start.has(id)) expect(reported.get(id)?._tag, context).toBe(heldBack === 0 ? "Deleted" : undefined)
              }
            } else {
              expect(changes.some(Changes.Change.$is("Deleted")), context).toBe(false)
            }
            const tags = byTag(changes)
            expect(summary, context).toMatchObject({
              inserted: tags.inserted.length,
              updated: tags.updated.length,
              deleted: tags.deleted.length
            })
            // unfiltered and confirmed, every delete was read
            const found = deletes === "exhaustive"
              ? 0
              : (summary?.reads ?? 0) - (summary?.deleted ?? 0) - (summary?.unconfirmed ?? 0)
            if (deletes === "exhaustive") expect(summary?.reads, context).toBe(0)
            expect((summary?.inserted ?? 0) + (summary?.updated ?? 0) + (summary?.unchanged ?? 0), context).toBe(
              (summary?.rows ?? 0) + found
            )
            // every read is answered on a server that answers truthfully in the end
            expect(summary?.unconfirmed, context).toBe(heldBack)
            if (found > 0) covered.found++
            if (lag !== undefined) covered.lying++
          }
          expect(Object.values(covered).every((n) => n > 0), JSON.stringify(covered)).toBe(true)
        }),
      { timeout: 120_000 }
    )
  })

  describe("typed", () => {
    const Numbers = Microapp.make({
      microAppID: numbers,
      fields: {
        N: Microapp.required(Microapp.integer("f_n")),
        // decoded to another shape than the server's: fingerprints are still of the row as sent
        Parity: Microapp.custom(
          "f_parity",
          Schema.transform(Schema.String, Schema.Struct({ parity: Schema.String }), {
            strict: true,
            decode: (parity) => ({ parity }),
            encode: ({ parity }) => parity
          })
        )
      },
      sortFields: ["N"]
    })

    it.effect("typed changes through a Microapp definition, fingerprinted as the untyped ones", () =>
      Effect.gen(function*() {
        yield* reset()
        const server = yield* MicroappServer
        const baseline = yield* truth
        yield* server.rows.updateRow(idAt(5), { Parity: "five" })
        const numbersApp = yield* Microapp.bind(Numbers)
        const pass = yield* numbersApp.changes({
          baseline: Changes.Baseline.fromMap(baseline),
          filters: { Parity: "five" },
          sort: { field: "N" },
          // past the default guard: the baseline is the whole table, the selection one row
          maxDeletes: size - 1
        })
        const changes = Chunk.toReadonlyArray(yield* Stream.runCollect(pass.changes))
        const [change, ...deleted] = changes
        // a filtered pass is exhaustive over its rows: every other id of the baseline is unseen
        expect(deleted.every(Changes.Change.$is("Deleted"))).toBe(true)
        expect(deleted).toHaveLength(size - 1)
        if (change?._tag !== "Updated") return expect(change?._tag).toBe("Updated")
        expect(change.row.Parity).toEqual({ parity: "five" })
        expect(change.row.N).toBe(5)
        expect(change.fingerprint).toBe((yield* truth).get(idAt(5)))
        expect(yield* pass.summary).toMatchObject({ updated: 1, deletes: "reported", deleted: size - 1 })
      }))
  })

  describe("what a copy cannot keep exactly", () => {
    // stored as UTF-8, the three lone or replacement ids would land on one key; NUL cannot be stored as text
    const unstorable = ["\ud83d", "\ud83e", "a\u0000b"]
    const rows = [
      ...table.slice(0, 3),
      ...unstorable.map((_id, i) => ({ _id, N: 1000 + i })),
      { _id: "\ufffd", N: 2000 }
    ]

    it.effect("a row whose id a copy cannot keep fails the pass, naming the row and the field", () =>
      Effect.gen(function*() {
        yield* reset(rows)
        const error = yield* Effect.flip(passOf({ baseline: Changes.Baseline.empty }))
        expect(error).toMatchObject({ _tag: "UnexpectedResponse", rowID: "\ud83d", fieldPath: "_id" })
        expect(error.message).toContain("lone surrogate")
      }))

    it.effect("every double is kept as itself, integers past 2^53 and the ends of the range included", () =>
      Effect.gen(function*() {
        const doubles = [2 ** 53 + 2, 62007044045103448, 1e307, 1.7976931348623157e308, 5e-324, -1e21]
        const exact = doubles.map((N, i) => ({ _id: `double ${i}`, N }))
        yield* reset([...table.slice(0, 3), ...exact])
        const client = yield* MicroappClient
        const pass = yield* client.changes({ microAppID: numbers, pageSize: 50, baseline: Changes.Baseline.empty })
        const changes = Chunk.toReadonlyArray(yield* Stream.runCollect(pass.changes))
        expect(changes.slice(3).map((change) => change._tag === "Inserted" ? [change.id, change.row.N] : change._tag))
          .toEqual(exact.map((row) => [row._id, row.N]))
      }))

    it.effect("under invalidRows \"skip\" those rows are left out and counted, every other id kept apart", () =>
      Effect.gen(function*() {
        yield* reset(rows)
        const client = yield* MicroappClient
        const pass = yield* client.withSchema(Schema.Unknown, { invalidRows: "skip" }).changes({
          microAppID: numbers,
          pageSize: 50,
          baseline: Changes.Baseline.empty
        })
        const changes = Chunk.toReadonlyArray(yield* Stream.runCollect(pass.changes))
        expect(changes.map((change) => change.id)).toEqual([...table.slice(0, 3).map((row) => row._id), "\ufffd"])
        expect(yield* pass.summary).toMatchObject({ inserted: 4, invalidRows: 3 })
      }))

    it.effect("under invalidRows \"raw\" each is handed on in its place as an InvalidRow, with its id and fingerprint", () =>
      Effect.gen(function*() {
        yield* reset(rows)
        const client = yield* MicroappClient
        const pass = yield* client.withSchema(Schema.Unknown, { invalidRows: "raw" }).changes({
          microAppID: numbers,
          pageSize: 50,
          baseline: Changes.Baseline.empty
        })
        const changes = Chunk.toReadonlyArray(yield* Stream.runCollect(pass.changes))
        expect(changes.map((change) => change.id)).toEqual(rows.map((row) => row._id))
        const handedOn = changes.flatMap((change) =>
          change._tag === "Inserted" && change.row instanceof Row.InvalidRow ? [{ ...change, row: change.row }] : []
        )
        expect(handedOn.map((change) => [change.id, change.row.error.rowID, change.row.error.fieldPath])).toEqual(
          unstorable.map((_id) => [_id, _id, "_id"])
        )
        const fingerprints = yield* truth
        expect(handedOn.map((change) => change.fingerprint)).toEqual(unstorable.map((_id) => fingerprints.get(_id)))
        expect(yield* pass.summary).toMatchObject({ inserted: 7, invalidRows: 3 })
      }))
  })

  describe("refusals", () => {
    it.effect("dedupe \"recent\", a scan checkpoint and a checkpoint of another query are refused before any request", () =>
      Effect.gen(function*() {
        yield* reset()
        const client = yield* MicroappClient
        const server = yield* MicroappServer
        const recent = yield* Effect.flip(client.changes({
          microAppID: numbers,
          baseline: Changes.Baseline.empty,
          // the type allows "exact" only; JavaScript callers get the same refusal
          dedupe: "recent" as "exact"
        }))
        expect(recent).toMatchObject({ _tag: "InvalidInput", input: "dedupe" })
        const pass = yield* client.changes({ microAppID: numbers, pageSize: 50, baseline: Changes.Baseline.empty })
        const [page] = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(pass.pages, 1)))
        if (page === undefined) return expect(page).toBeDefined()
        yield* server.log.clear
        const other = yield* Effect.flip(
          client.changes({
            microAppID: numbers,
            pageSize: 60,
            baseline: Changes.Baseline.empty,
            resume: page.checkpoint
          })
        )
        expect(other).toBeInstanceOf(InvalidCheckpoint)
        expect(other).toMatchObject({ _tag: "InvalidInput", input: "resume", problem: "another query" })
        const otherDeletes = yield* Effect.flip(
          client.changes({
            microAppID: numbers,
            pageSize: 50,
            baseline: Changes.Baseline.empty,
            deletes: "exhaustive",
            resume: page.checkpoint
          })
        )
        expect(otherDeletes).toMatchObject({ input: "resume", problem: "another query" })
        const held = yield* Effect.flip(
          client.changes({
            microAppID: numbers,
            pageSize: 50,
            baseline: Changes.Baseline.empty,
            resume: Changes.withoutIds(page.checkpoint)
          })
        )
        expect(held).toMatchObject({ input: "resume", problem: "ids held" })
        const differ = yield* Effect.flip(
          Changes.withIds(Changes.withoutIds(page.checkpoint), { ids: ["not-an-id-it-counts"], deleted: [] })
        )
        expect(differ).toBeInstanceOf(InvalidCheckpoint)
        expect(differ).toMatchObject({ input: "ids", problem: "ids differ" })
        expect(differ.method).toBeUndefined()
        expect(yield* server.log.requests).toEqual([])
      }))

    it.effect("fromJson refuses damaged, edited and impossible checkpoints, and reads back what toJson wrote", () =>
      Effect.gen(function*() {
        yield* reset()
        const { pages } = yield* passOf({ baseline: Changes.Baseline.empty })
        const last = pages.at(-1)
        if (last === undefined) return expect(last).toBeDefined()
        const text = Changes.toJson(last.checkpoint)
        const back = yield* Changes.fromJson(text)
        expect(back.summary).toEqual(last.checkpoint.summary)
        expect(Changes.toJson(back)).toBe(text)
        // nothing was sent: a refusal is an InvalidCheckpoint that names no call
        const refused = (text: string) =>
          Effect.map(Effect.flip(Changes.fromJson(text)), (error) => {
            expect(error).toBeInstanceOf(InvalidCheckpoint)
            expect([error.method, error.path]).toEqual([undefined, undefined])
            return `${error.problem} at ${error.input}`
          })
        expect(yield* refused(text.slice(0, -10))).toBe("not JSON at checkpoint")
        expect(yield* refused("{}")).toBe("not a checkpoint at checkpoint")
        expect(yield* refused(text.replace("\"inserted\":300", "\"inserted\":299"))).toBe(
          "checksum at checkpoint.checksum"
        )
        expect(yield* refused("{\"checksum\":\"x\",\"__proto__\":{}}")).toMatch(/^field at checkpoint/)
        const { checksum: _, ...json } = JSON.parse(text) as Record<string, unknown>
        const sealed = (body: Record<string, unknown>) =>
          JSON.stringify({ ...body, checksum: Changes.fingerprint(body) })
        expect(yield* refused(sealed({ ...json, version: 2 }))).toBe("version at checkpoint.version")
        // consistent counts under a correct checksum are still checked against the scan
        const body = { ...json, counts: { inserted: 1, updated: 0, unchanged: 0, deleted: 0 } }
        expect(yield* refused(sealed(body))).toBe("field at checkpoint.counts")
      }))
  })
})

/** Texts written by version 1: both deletes modes, mid-scan and done, whole and sink-held. */
const writtenBefore: ReadonlyArray<string> = JSON.parse(
  fs.readFileSync(path.join(import.meta.dirname, "fixtures", "changes-checkpoints-v1.json"), "utf8")
)

describe("a pass's checkpoints written before", () => {
  it.effect("read back, and are written again as they were but for their scan's checkpoint, now of version 2", () =>
    Effect.gen(function*() {
      expect(writtenBefore.length).toBe(12)
      for (const text of writtenBefore) {
        const checkpoint = yield* Changes.fromJson(text)
        const { checksum: _, scan, ...rest } = JSON.parse(text) as Record<string, unknown>
        const now = Checkpoint.toJson(yield* Checkpoint.fromJson(JSON.stringify(scan)))
        const body = { ...rest, scan: JSON.parse(now) }
        const written = JSON.stringify({ ...body, checksum: Changes.fingerprint(body) })
        expect(Changes.toJson(checkpoint)).toBe(written)
        expect(JSON.stringify(checkpoint)).toBe(written)
        expect(Changes.toJson(yield* Changes.fromJson(written))).toBe(written)
      }
    }))
})
