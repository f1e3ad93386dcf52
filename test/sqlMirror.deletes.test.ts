/**
 * Deletes confirmed by point reads, through `SqlMirror.run` on SQLite and on a real PostgreSQL,
 * against listings that lie (rows left out, the point reads truthful): a row hidden from the scan
 * while another is deleted, a different row in 11 left out of every answer pass after pass, reads
 * that fail, and a pass interrupted among its reads and resumed: no standing row is ever deleted,
 * every row gone is, and nothing is read or deleted twice.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { SqlMirror } from "../src/sql/index.js"
import { MicroappServer } from "../src/testing/index.js"
import { cli, flags } from "./cliSupport.js"
import { databases, storedData } from "./sqlDatabases.js"
import { numbersTable, withEmulator } from "./support.js"

const numbers = "000000000000000000000c07"
const size = 200
const pageSize = 20
const rowPath = "/api/microappdata/row"

const idAt = (i: number) => numbersTable(numbers, size).rows[i]?._id ?? ""

/** The emulator's table by id, as JSON carries it. */
const microapp = Effect.map(
  Effect.flatMap(MicroappServer, (server) => server.rows.table(numbers)),
  (rows) => new Map(rows.map((row) => [String(row["_id"]), JSON.parse(JSON.stringify(row)) as unknown]))
)

/** The mirror's table by id, each row's data parsed. */
const mirrored = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ row_id: string; data: unknown }>`SELECT row_id, data FROM ${sql(table)} WHERE microapp_id = ${numbers}`,
      (rows) => new Map(rows.map((row) => [row.row_id, storedData(row.data)]))
    ))

const expectEqualToMicroapp = (table: string) =>
  Effect.gen(function*() {
    const expected = yield* microapp
    const actual = yield* mirrored(table)
    expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort())
    for (const [id, row] of expected) expect(actual.get(id), id).toEqual(row)
  })

const reset = Effect.gen(function*() {
  const server = yield* MicroappServer
  yield* server.log.clearHook
  yield* server.configure({ faults: undefined, lag: undefined })
  yield* server.rows.setRows(numbers, numbersTable(numbers, size).rows)
})

const mirror = (table: string, options: Partial<SqlMirror.Options> = {}) =>
  SqlMirror.run({ microAppID: numbers, pageSize, table, ...options })

/** Point reads the server has answered since the log was cleared. */
const pointReads = Effect.map(
  Effect.flatMap(MicroappServer, (server) => server.log.requests),
  (requests) => requests.filter((request) => request.path === rowPath)
)

/** Where a request for rows starts: its `skip`. */
const skipOf = (body: unknown): number => {
  const window = (body as { readonly searchFilter?: ReadonlyArray<{ readonly skip?: string }> } | null)?.searchFilter
  return Number(window?.[0]?.skip ?? 0)
}

/** Row `hidden` left out of every listing, and row `gone` deleted once the scan has read past it. */
const hideWhileDeleting = (hidden: string, gone: string) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    yield* server.configure({ lag: { ids: [hidden] } })
    let done = false
    yield* server.log.onRequest((request) =>
      !done && request.path === "/api/microappdata" && skipOf(request.body) >= 60
        ? Effect.zipRight(Effect.sync(() => (done = true)), server.rows.removeRow(gone))
        : Effect.void
    )
  })

const emulator = withEmulator({ tables: [numbersTable(numbers, size)] }, {
  retry: { initialDelay: "1 millis", maxDelay: "2 millis", maxAttempts: 3 }
})

for (const database of databases) {
  describe(database.name, () => {
    layer(Layer.merge(database.layer(), emulator), { excludeTestServices: true })((it) => {
      it.effect("a row hidden from the scan while a row already read is deleted: the deleted one goes, the hidden one stays", () =>
        Effect.gen(function*() {
          yield* reset
          yield* mirror("hidden")
          const server = yield* MicroappServer
          yield* hideWhileDeleting(idAt(150), idAt(10))
          yield* server.log.clear
          const summary = yield* mirror("hidden")
          yield* server.log.clearHook
          yield* server.configure({ lag: undefined })
          expect((yield* microapp).has(idAt(10))).toBe(false)
          // row 150 was never listed, and a read found it unchanged; row 10 went once read, and when
          // the scan read its page again (the rows moved) it was a candidate too, and confirmed gone
          const confirmed = summary.deleted
          expect(summary).toMatchObject({ reads: 1 + confirmed, unconfirmed: 0, unchanged: size - confirmed })
          expect(confirmed === 0 || confirmed === 1).toBe(true)
          expect((yield* mirrored("hidden")).has(idAt(150))).toBe(true)
          // and a delete confirmed was preceded by a control read of a row the scan saw
          const read = (yield* pointReads).map((request) => (request.body as { readonly rowID: string }).rowID)
          expect(read.filter((id) => id === idAt(150) || id === idAt(10)).sort()).toEqual(
            confirmed === 1 ? [idAt(150), idAt(10)].sort() : [idAt(150)]
          )
          expect(read.length).toBe(confirmed === 1 ? 3 : 1)
          // the next pass, on truthful listings, finds row 10 gone if the last did not
          expect(yield* mirror("hidden")).toMatchObject({
            deleted: 1 - confirmed,
            reads: 1 - confirmed,
            unconfirmed: 0
          })
          yield* expectEqualToMicroapp("hidden")
        }))

      it.effect("the same under exhaustive-only deletes deletes the hidden row that stands: why deletes are confirmed", () =>
        Effect.gen(function*() {
          yield* reset
          yield* mirror("unconfirmed_rule", { deletes: "exhaustive" })
          const server = yield* MicroappServer
          yield* hideWhileDeleting(idAt(150), idAt(10))
          const summary = yield* mirror("unconfirmed_rule", { deletes: "exhaustive" })
          yield* server.log.clearHook
          yield* server.configure({ lag: undefined })
          if (summary.exhaustive) {
            expect(summary).toMatchObject({ deleted: 1, reads: 0 })
            expect((yield* mirrored("unconfirmed_rule")).has(idAt(150))).toBe(false)
          } else {
            expect(summary).toMatchObject({ deleted: 0, deletes: "skipped" })
          }
        }))

      it.scoped("microapp mirror confirms its deletes; with --deletes exhaustive it reads nothing, and says no confirmation", () =>
        Effect.gen(function*() {
          yield* reset
          const server = yield* MicroappServer
          const url = yield* database.url
          const pass = (extra: ReadonlyArray<string>) =>
            cli(["mirror", numbers, "--db", url, "--table", "by_cli", "--page-size", "20", ...extra, ...flags(server)])
          expect((yield* pass([])).code).toBe(0)
          yield* server.rows.removeRow(idAt(3))
          const confirmed = yield* pass([])
          expect(confirmed.stderr).toMatch(
            /^done: inserted 0, updated 0, deleted 1, unchanged 199, confirmed 1 delete with 1 read, /
          )
          yield* server.rows.removeRow(idAt(4))
          yield* server.log.clear
          const unread = yield* pass(["--deletes", "exhaustive"])
          expect(unread.stderr).toMatch(/^done: inserted 0, updated 0, deleted 1, unchanged 198, \d+ rows, /)
          expect(yield* pointReads).toEqual([])
          expect((yield* pass(["--deletes", "sometimes"])).code).toBe(2)
        }))

      it.effect("a different row in 11 left out of every answer, three passes: no delete, every row kept, each pass's reads counted", () =>
        Effect.gen(function*() {
          yield* reset
          yield* mirror("lagging")
          const server = yield* MicroappServer
          yield* server.configure({ lag: { every: 11 } })
          for (let pass = 0; pass < 3; pass++) {
            yield* server.log.clear
            const summary = yield* mirror("lagging")
            const reads = (yield* pointReads).length
            expect(summary).toMatchObject({ inserted: 0, updated: 0, deleted: 0, unconfirmed: 0, unchanged: size })
            expect(summary.reads).toBe(reads)
            expect(reads).toBeGreaterThan(0)
            yield* expectEqualToMicroapp("lagging")
          }
          // a row deleted meanwhile is confirmed gone all the same
          yield* server.rows.removeRow(idAt(42))
          expect(yield* mirror("lagging")).toMatchObject({ deleted: 1, unconfirmed: 0 })
          yield* server.configure({ lag: undefined })
          yield* expectEqualToMicroapp("lagging")
        }))

      it.effect("reads that fail leave the rows, counted unconfirmed; the next pass deletes them", () =>
        Effect.gen(function*() {
          yield* reset
          yield* mirror("failing")
          const server = yield* MicroappServer
          const gone = [5, 60, 61, 199].map(idAt)
          for (const id of gone) yield* server.rows.removeRow(id)
          yield* server.configure({ faults: { seed: 1, rate: 1, kinds: ["http500"], paths: [rowPath] } })
          expect(yield* mirror("failing")).toMatchObject({ deleted: 0, reads: gone.length, unconfirmed: gone.length })
          const kept = yield* mirrored("failing")
          for (const id of gone) expect(kept.has(id), id).toBe(true)
          yield* server.configure({ faults: undefined })
          expect(yield* mirror("failing")).toMatchObject({ deleted: gone.length, reads: gone.length, unconfirmed: 0 })
          yield* expectEqualToMicroapp("failing")
        }))

      it.effect("a pass interrupted among its reads resumes without reading or deleting twice", () =>
        Effect.gen(function*() {
          yield* reset
          yield* mirror("resumed")
          const server = yield* MicroappServer
          // 30 rows gone and 15 hidden: 45 candidates, read in groups of 20
          const gone = Array.from({ length: 30 }, (_, i) => idAt(i * 6))
          for (const id of gone) yield* server.rows.removeRow(id)
          const hidden = Array.from({ length: 15 }, (_, i) => idAt(i * 6 + 1))
          yield* server.configure({ lag: { ids: hidden } })
          yield* server.log.clear
          const thirtiethRead = yield* Deferred.make<void>()
          let reads = 0
          yield* server.log.onRequest((request) =>
            request.path === rowPath && ++reads === 30 ? Deferred.succeed(thirtiethRead, undefined) : Effect.void
          )
          const running = yield* Effect.fork(mirror("resumed"))
          yield* Deferred.await(thirtiethRead)
          yield* Fiber.interrupt(running)
          yield* server.log.clearHook
          // the first group of reads committed before the second began: the rows it found (those it
          // proved gone are held until every candidate is answered, so not committed)
          const state = yield* SqlMirror.passState({ microAppID: numbers, table: "resumed" })
          expect(state).toMatchObject({ _tag: "Some", value: { complete: false } })
          const committed = state._tag === "Some" && state.value.summary._tag === "Some"
            ? state.value.summary.value
            : undefined
          expect(committed).toMatchObject({ deleted: 0, unconfirmed: 0 })
          const kept = committed?.reads ?? 0
          expect(kept).toBeGreaterThan(0)
          expect(kept).toBeLessThan(20)
          const summary = yield* mirror("resumed")
          expect(summary).toMatchObject({ deleted: 30, reads: 45, unconfirmed: 0, unchanged: size - 30 })
          // what the first run kept is not read again; the rest is, with one control read
          expect((yield* pointReads).length).toBeLessThanOrEqual(30 + 20 + (45 - kept) + 1)
          const rows = yield* mirrored("resumed")
          for (const id of gone) expect(rows.has(id), id).toBe(false)
          for (const id of hidden) expect(rows.has(id), id).toBe(true)
          yield* server.configure({ lag: undefined })
          yield* expectEqualToMicroapp("resumed")
          const sql = yield* SqlClient.SqlClient
          const left = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ${sql(SqlMirror.keptTableOf("resumed"))}`
          expect(Number(left[0]?.n)).toBe(0)
        }))
    })
  })
}
