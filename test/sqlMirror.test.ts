/**
 * `SqlMirror.run` on SQLite and on a real PostgreSQL, over real HTTP to the emulator: a first pass,
 * the changes between passes, passes interrupted at random pages under drift and faults and
 * resumed, history (SCD2), and `microapp mirror`'s arguments and drivers (killed with SIGKILL:
 * sqlMirror.kills.test.ts).
 */
import { SqlClient } from "@effect/sql"
import { LibsqlClient } from "@effect/sql-libsql"
import { describe, expect, layer } from "@effect/vitest"
import { createClient } from "@libsql/client"
import { Cause, Deferred, Duration, Effect, Exit, FastCheck, Fiber, Layer, Option } from "effect"
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqlDrivers } from "../src/cli/commands/mirror.js"
import { Changes } from "../src/index.js"
import { SqlMirror } from "../src/sql/index.js"
import { MicroappServer, type RequestHook } from "../src/testing/index.js"
import * as Prng from "../src/testing/internal/prng.js"
import { cli, envOf, expectFailure, flags } from "./cliSupport.js"
import { bin, cleanEnv, runToEnd, scanFaults } from "./processSupport.js"
import { databases, freshSqliteUrl, storedData } from "./sqlDatabases.js"
import { numbersTable, withEmulator } from "./support.js"

const numbers = "000000000000000000000c02"
const large = "000000000000000000000c03"
const size = 240
const pageSize = 20

interface Stored {
  readonly row_id: string
  readonly data: unknown
}

interface Version {
  readonly row_id: string
  readonly pass: number
  readonly fingerprint: string
  readonly valid_from: string
  readonly valid_to: string | null
  readonly deleted: number
}

/** The emulator's table by id, as the rows the client receives. */
const microappOf = (microAppID: string) =>
  Effect.map(
    Effect.flatMap(MicroappServer, (server) => server.rows.table(microAppID)),
    (rows) => new Map(rows.map((row) => [String(row["_id"]), row as unknown]))
  )

const microapp = microappOf(numbers)

/** The mirror's table by id, each row's data parsed. */
const mirrored = (table: string, microAppID = numbers) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<Stored>`SELECT row_id, data FROM ${sql(table)} WHERE microapp_id = ${microAppID}`,
      (rows) => new Map(rows.map((row) => [row.row_id, storedData(row.data)]))
    ))

/** The passes table's commit count for `table`; 0 before the first run made it. */
const commitsOf = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ commits: number }>`SELECT commits FROM ${sql(SqlMirror.passesTable)} WHERE row_table = ${table}`,
      ([row]) => row?.commits ?? 0
    )).pipe(Effect.orElseSucceed(() => 0))

/**
 * `run` stopped for certain before its pass ends: the first request for rows that arrives once the
 * passes of `table` have committed `commits` times hangs, and the run is interrupted there.
 * `alongside` runs first on every request (the emulator has one hook) and stays set afterwards.
 */
const stoppedAt = <A, E, R>(
  run: Effect.Effect<A, E, R>,
  table: string,
  commits: number,
  alongside: RequestHook = () => Effect.void
) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const sql = yield* SqlClient.SqlClient
    const committed = Effect.provideService(commitsOf(table), SqlClient.SqlClient, sql)
    const reached = yield* Deferred.make<void>()
    const gate = yield* Deferred.make<void>()
    yield* server.log.onRequest((record) =>
      Effect.zipRight(
        alongside(record),
        record.path.endsWith("/microappdata")
          ? Effect.gen(function*() {
            if ((yield* committed) < commits) return
            yield* Deferred.succeed(reached, undefined)
            yield* Deferred.await(gate)
          })
          : Effect.void
      )
    )
    const running = yield* Effect.fork(run)
    const first = yield* Effect.raceFirst(
      Effect.as(Deferred.await(reached), "stopped"),
      Effect.map(Fiber.await(running), (exit) => `ended before its stop: ${String(exit)}`)
    )
    const exit = yield* Fiber.interrupt(running)
    yield* server.log.onRequest(alongside)
    yield* Deferred.succeed(gate, undefined)
    expect(first).toBe("stopped")
    expect(Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause), String(exit)).toBe(true)
  })

/**
 * Where each row of the mirror's table stands: the pass that wrote it (its `pass`), and the pass
 * its mark in the seen table names, if any.
 */
const marksOf = (table: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ row_id: string; pass: number }>`
      SELECT row_id, pass FROM ${sql(table)} WHERE microapp_id = ${numbers}`
    const seen = yield* sql<{ row_id: string; pass: number }>`
      SELECT row_id, pass FROM ${sql(SqlMirror.seenTableOf(table))} WHERE microapp_id = ${numbers}`
    return {
      wrote: new Map(rows.map((row) => [row.row_id, row.pass])),
      seen: new Map(seen.map((row) => [row.row_id, row.pass]))
    }
  })

/** The mirror's table whole, row by row as the database holds it. */
const stored = (table: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`SELECT microapp_id, row_id, data, fingerprint, pass FROM ${sql(table)} ORDER BY microapp_id, row_id`
  )

const expectEqualToMicroapp = (table: string, microAppID = numbers) =>
  Effect.gen(function*() {
    const expected = yield* microappOf(microAppID)
    const actual = yield* mirrored(table, microAppID)
    expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort())
    for (const [id, row] of expected) expect(actual.get(id), id).toEqual(row)
  })

const history = (table: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<Version>`SELECT row_id, pass, fingerprint, valid_from, valid_to, deleted
      FROM ${sql(SqlMirror.historyTableOf(table))} WHERE microapp_id = ${numbers} ORDER BY row_id, pass`
  )

const reset = Effect.gen(function*() {
  const server = yield* MicroappServer
  yield* server.log.clearHook
  yield* server.configure({ faults: undefined })
  yield* server.rows.setRows(numbers, numbersTable(numbers, size).rows)
})

const idAt = (i: number) => numbersTable(numbers, size).rows[i]?._id ?? ""

const mirror = (table: string, options: Partial<SqlMirror.Options> = {}) =>
  SqlMirror.run({ microAppID: numbers, pageSize, table, ...options })

/** Changes made between two passes: updates, deletes and inserts, with the ids of each. */
const changeTable = Effect.gen(function*() {
  const server = yield* MicroappServer
  const updated = [3, 50, 199].map(idAt)
  for (const id of updated) yield* server.rows.updateRow(id, { Parity: "changed" })
  const deleted = [0, 77, 120].map(idAt)
  for (const id of deleted) yield* server.rows.removeRow(id)
  const inserted = yield* Effect.forEach([0, 1], (n) =>
    Effect.map(
      server.rows.insertRow(numbers, { N: 1000 + n, Parity: "new" }, { index: 40 + n * 90 }),
      (row) => String(row["_id"])
    ))
  return { updated, deleted, inserted }
})

/** 1,200 rows, their ids apart from `numbers`' (ids are unique across Microapps). */
const largeTable = (() => {
  const table = numbersTable(large, 1200)
  return { ...table, rows: table.rows.map((row) => ({ ...row, _id: `2${row._id.slice(1)}` })) }
})()

const emulator = withEmulator({ tables: [numbersTable(numbers, size), largeTable] }, {
  retry: { initialDelay: "1 millis", maxDelay: "5 millis", maxAttempts: 10 }
})

for (const database of databases) {
  describe(database.name, () => {
    layer(Layer.merge(database.layer(), emulator), { excludeTestServices: true })((it) => {
      it.effect("a first pass inserts every row; the table equals the Microapp", () =>
        Effect.gen(function*() {
          yield* reset
          expect(yield* SqlMirror.passState({ microAppID: numbers, table: "first" })).toEqual(Option.none())
          const summary = yield* mirror("first")
          expect(summary).toMatchObject({ inserted: size, updated: 0, deleted: 0, unchanged: 0, exhaustive: true })
          expect(yield* SqlMirror.passState({ microAppID: numbers, table: "first" })).toEqual(
            // the summary of the last commit: the run's, but for the milliseconds it took after it
            Option.some({
              pass: 1,
              complete: true,
              summary: Option.some({ ...summary, elapsedMillis: expect.any(Number) })
            })
          )
          yield* expectEqualToMicroapp("first")
          // nothing changed: a second pass changes nothing
          expect(yield* mirror("first")).toMatchObject({ inserted: 0, updated: 0, deleted: 0, unchanged: size })
        }))

      it.effect("the second pass counts exactly the changes made between the passes, row for row", () =>
        Effect.gen(function*() {
          yield* reset
          yield* mirror("second")
          const made = yield* changeTable
          const summary = yield* mirror("second")
          expect(summary).toMatchObject({
            inserted: made.inserted.length,
            updated: made.updated.length,
            deleted: made.deleted.length,
            unchanged: size - made.updated.length - made.deleted.length,
            deletes: "reported"
          })
          yield* expectEqualToMicroapp("second")
          const sql = yield* SqlClient.SqlClient
          const [pass] = yield* sql<{ pass: number; complete: number; inserted: number | string }>`
            SELECT pass, complete, inserted FROM ${sql(SqlMirror.passesTable)} WHERE row_table = ${"second"}`
          // a count is a BIGINT on PostgreSQL, which its driver hands as text
          expect({ ...pass, inserted: Number(pass?.inserted) }).toEqual({
            pass: 2,
            complete: 1,
            inserted: made.inserted.length
          })
        }))

      it.effect("an emptied Microapp: no row to read as a control, so kept; deleted by an exhaustive pass allowed to", () =>
        Effect.gen(function*() {
          yield* reset
          const server = yield* MicroappServer
          yield* mirror("emptied")
          yield* server.rows.setRows(numbers, [])
          expect(yield* mirror("emptied")).toMatchObject({ deleted: 0, unconfirmed: size, heldBack: size })
          expect((yield* mirrored("emptied")).size).toBe(size)
          const allowed = { deletes: "exhaustive", maxDeletes: size } as const
          expect(yield* mirror("emptied", allowed)).toMatchObject({ inserted: 0, deleted: size, deletes: "reported" })
          expect((yield* mirrored("emptied")).size).toBe(0)
          expect(yield* mirror("emptied", allowed)).toMatchObject({
            inserted: 0,
            deleted: 0,
            unchanged: 0,
            exhaustive: true
          })
          const sql = yield* SqlClient.SqlClient
          const [pass] = yield* sql<{ pass: number; complete: number }>`
            SELECT pass, complete FROM ${sql(SqlMirror.passesTable)} WHERE row_table = ${"emptied"}`
          expect(pass).toEqual({ pass: 4, complete: 1 })
        }))

      it.effect("ids UTF-8 would merge and NUL: the run fails naming the row, nothing merged", () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const plain = numbersTable(numbers, 3).rows
          const colliding = ["\ud83d", "\ud83e", "\ufffd"].map((_id, i) => ({ _id, N: 1000 + i }))
          for (const bad of [colliding, [{ _id: "a\u0000b", N: 7 }]]) {
            yield* server.rows.setRows(numbers, [...plain, ...bad])
            const error = yield* Effect.flip(mirror("unstorable"))
            expect(error).toMatchObject({ _tag: "UnexpectedResponse", rowID: bad[0]?._id })
            const stored = yield* mirrored("unstorable")
            const ids = new Set((yield* microapp).keys())
            // whatever a failed run left, each stored id is one of the Microapp's, as itself
            for (const id of stored.keys()) expect(ids.has(id), JSON.stringify(id)).toBe(true)
          }
          yield* server.rows.setRows(numbers, [...plain, { _id: "\ufffd", N: 2000 }])
          expect(yield* mirror("unstorable")).toMatchObject({ inserted: 4 })
          yield* expectEqualToMicroapp("unstorable")
          expect(yield* mirror("unstorable")).toMatchObject({ inserted: 0, unchanged: 4 })
          yield* reset
        }))

      it.effect("every double, as JavaScript writes it, is mirrored as itself; a second pass finds each unchanged", () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const named = [2 ** 53 + 2, 62007044045103448, 1e307, 1.7976931348623157e308, 5e-324, -1e21, 0.1 + 0.2]
          const sampled = FastCheck.sample(FastCheck.double({ noNaN: true, noDefaultInfinity: true }), {
            numRuns: 200,
            seed: 48
          })
          const doubles = [...named, ...sampled].map((N, i) => ({
            _id: (0x30000000 + i).toString(16).padStart(24, "0"),
            // -0 is written 0
            N: N === 0 ? 0 : N,
            Parity: [N === 0 ? 0 : N]
          }))
          yield* server.rows.setRows(numbers, doubles)
          expect(yield* mirror("doubles")).toMatchObject({ inserted: doubles.length })
          yield* expectEqualToMicroapp("doubles")
          expect(yield* mirror("doubles")).toMatchObject({ inserted: 0, updated: 0, unchanged: doubles.length })
          yield* reset
        }))

      it.effect("two runs at once: the one that moves the pass on second stops with ConcurrentRun", () =>
        Effect.gen(function*() {
          yield* reset
          const server = yield* MicroappServer
          yield* server.configure({ latency: Duration.millis(20) })
          const [first, second] = yield* Effect.all([mirror("twice"), mirror("twice")], {
            concurrency: 2,
            mode: "either"
          })
          yield* server.configure({ latency: Duration.millis(0) })
          const outcomes = [first, second].map((outcome) => outcome._tag === "Left" ? outcome.left._tag : "done")
          expect(outcomes).toContain("ConcurrentRun")
          // the other run, or the next, completes the pass
          yield* mirror("twice")
          yield* expectEqualToMicroapp("twice")
        }))

      it.effect("history: each version with valid_from and valid_to; a deleted row's last version closed, deleted", () =>
        Effect.gen(function*() {
          yield* reset
          yield* mirror("versions", { history: true })
          const made = yield* changeTable
          yield* mirror("versions", { history: true })
          const versions = yield* history("versions")
          const of = (id: string) => versions.filter((version) => version.row_id === id)
          const [updatedId = "", deletedId = "", insertedId = ""] = [made.updated[0], made.deleted[0], made.inserted[0]]
          const [first, second, ...more] = of(updatedId)
          expect(more).toEqual([])
          expect(first).toMatchObject({ pass: 1, deleted: 0 })
          expect(second).toMatchObject({ pass: 2, deleted: 0, valid_to: null })
          expect(first?.valid_to).toBe(second?.valid_from)
          expect(Date.parse(first?.valid_from ?? "")).toBeLessThanOrEqual(Date.parse(second?.valid_from ?? ""))
          expect(of(deletedId)).toEqual([
            expect.objectContaining({ pass: 1, deleted: 1, valid_to: expect.any(String) })
          ])
          expect(of(insertedId)).toEqual([expect.objectContaining({ pass: 2, deleted: 0, valid_to: null })])
          // every row of the Microapp has one current version, its fingerprint the row's
          const current = versions.filter((version) => version.valid_to === null)
          const expected = yield* microapp
          expect(current.length).toBe(expected.size)
          for (const version of current) {
            expect(version.fingerprint).toBe(Changes.fingerprint(expected.get(version.row_id)))
          }
        }))

      it.effect("a pass of 1,200 rows stopped midway stores a checkpoint of a few KB, its ids held by the table", () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const table = "held"
          const run = mirror(table, { microAppID: large, concurrency: 1 })
          // stopped about midway: the opening commit and 25 pages of 20 rows at least, of 60
          yield* stoppedAt(run, table, 26)
          yield* server.log.clearHook

          const sql = yield* SqlClient.SqlClient
          const [stored] = yield* sql<{ pass: number; complete: number; checkpoint: string | null }>`
            SELECT pass, complete, checkpoint FROM ${sql(SqlMirror.passesTable)} WHERE row_table = ${table}`
          if (stored?.checkpoint == null) return expect.fail("no checkpoint stored")
          expect(stored.complete).toBe(0)
          const held = yield* Changes.fromJson(stored.checkpoint)
          expect(held.summary.rows).toBeGreaterThanOrEqual(500)
          expect(stored.checkpoint.length).toBeLessThan(4096)
          // made whole with the ids the table holds, it is the O(rows) checkpoint stored before
          const seen = yield* sql<{ row_id: string }>`
            SELECT row_id FROM ${sql(table)} WHERE microapp_id = ${large} AND pass = ${stored.pass}`
          const whole = yield* Changes.withIds(held, { ids: seen.map((row) => row.row_id), deleted: [] })
          expect(Changes.toJson(whole).length).toBeGreaterThan(4096)

          expect(yield* run).toMatchObject({ inserted: 1200, resumed: 1 })
          yield* expectEqualToMicroapp(table, large)
        }))

      it.effect("a pass stopped midway, run again over another query (another page size): its checkpoint set aside, a new pass", () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const table = "requeried"
          yield* stoppedAt(mirror(table, { microAppID: large, concurrency: 1 }), table, 6)
          yield* server.log.clearHook
          const sql = yield* SqlClient.SqlClient
          const [stored] = yield* sql<{ checkpoint: string | null }>`
            SELECT checkpoint FROM ${sql(SqlMirror.passesTable)} WHERE row_table = ${table}`
          expect(stored?.checkpoint).toEqual(expect.any(String))
          const again = yield* mirror(table, { microAppID: large, concurrency: 1, pageSize: pageSize + 7 })
          expect(again).toMatchObject({ resumed: 0, deleted: 0 })
          expect(again.inserted + again.unchanged).toBe(1200)
          expect(again.inserted).toBeLessThan(1200)
          yield* expectEqualToMicroapp(table, large)
        }))

      it.effect("a run interrupted after the commit that completed its pass: the pass's counts are kept; the next run starts a new one", () =>
        Effect.gen(function*() {
          yield* reset
          const table = "late"
          yield* mirror(table)
          const made = yield* changeTable
          const sql = yield* SqlClient.SqlClient
          const state = SqlMirror.passState({ microAppID: numbers, table })
          // the next pass complete (transactions before it, creating tables say, see the last pass complete)
          const complete = Effect.map(state, Option.exists((pass) => pass.complete && pass.pass === 2))
          // each transaction as it was, but the one that completes the pass never returns: the run is interrupted there
          const completed = yield* Deferred.make<void>()
          const stalledAtTheEnd = new Proxy(sql, {
            get: (target, key, receiver) =>
              key === "withTransaction"
                ? <A, E, R>(effect: Effect.Effect<A, E, R>) =>
                  Effect.tap(target.withTransaction(effect), () =>
                    Effect.flatMap(complete, (done) =>
                      done ? Effect.zipRight(Deferred.succeed(completed, undefined), Effect.never) : Effect.void))
                : Reflect.get(target, key, receiver)
          })
          const running = yield* Effect.fork(Effect.provideService(mirror(table), SqlClient.SqlClient, stalledAtTheEnd))
          yield* Deferred.await(completed)
          expect(Exit.isInterrupted(yield* Fiber.interrupt(running))).toBe(true)
          const counts = {
            inserted: made.inserted.length,
            updated: made.updated.length,
            deleted: made.deleted.length,
            unchanged: size - made.updated.length - made.deleted.length
          }
          expect(yield* state).toEqual(
            Option.some({ pass: 2, complete: true, summary: Option.some(expect.objectContaining(counts)) })
          )
          yield* expectEqualToMicroapp(table)
          // a caller that takes the interrupted run for an unfinished pass and runs again gets pass 3's counts
          expect(yield* mirror(table)).toMatchObject({ inserted: 0, updated: 0, deleted: 0, unchanged: size - 1 })
        }))

      it.effect("an unchanged pass writes no row of the table: each keeps the pass that wrote it, each is marked seen by the new pass", () =>
        Effect.gen(function*() {
          yield* reset
          const table = "untouched"
          yield* mirror(table)
          const before = yield* stored(table)
          expect(yield* mirror(table)).toMatchObject({ inserted: 0, updated: 0, deleted: 0, unchanged: size })
          expect(yield* stored(table)).toEqual(before)
          const ids = [...(yield* microapp).keys()].sort()
          const { seen, wrote } = yield* marksOf(table)
          expect([...wrote.keys()].sort()).toEqual(ids)
          expect(new Set(wrote.values())).toEqual(new Set([1]))
          expect([...seen.keys()].sort()).toEqual(ids)
          expect(new Set(seen.values())).toEqual(new Set([2]))
          // the next pass writes what changed, and marks the rest seen
          const made = yield* changeTable
          expect(yield* mirror(table)).toMatchObject({
            inserted: made.inserted.length,
            updated: made.updated.length,
            unchanged: size - made.updated.length - made.deleted.length
          })
          const after = yield* marksOf(table)
          const changed = new Set([...made.updated, ...made.inserted])
          for (const [id, pass] of after.wrote) {
            expect({ id, wrote: pass, seen: after.seen.get(id) }).toEqual(
              changed.has(id)
                ? { id, wrote: 3, seen: made.inserted.includes(id) ? undefined : 2 }
                : { id, wrote: 1, seen: 3 }
            )
          }
        }))

      it.effect("a delete removes the row's mark in the seen table", () =>
        Effect.gen(function*() {
          yield* reset
          const server = yield* MicroappServer
          const table = "unmarked"
          yield* mirror(table)
          yield* mirror(table)
          const gone = [5, 6, 100].map(idAt)
          for (const id of gone) yield* server.rows.removeRow(id)
          expect(yield* mirror(table)).toMatchObject({ deleted: gone.length, unchanged: size - gone.length })
          const { seen, wrote } = yield* marksOf(table)
          expect(seen.size).toBe(size - gone.length)
          expect(wrote.size).toBe(size - gone.length)
          for (const id of gone) expect({ id, wrote: wrote.get(id), seen: seen.get(id) }).toEqual({ id })
          expect(new Set(seen.values())).toEqual(new Set([3]))
        }))

      it.effect("a pass an earlier version began, its marks in the table only and no seen table, resumes and counts exactly", () =>
        Effect.gen(function*() {
          yield* reset
          const server = yield* MicroappServer
          const sql = yield* SqlClient.SqlClient
          const table = "earlier"
          const seenTable = SqlMirror.seenTableOf(table)
          yield* mirror(table)
          yield* mirror(table)
          const made = yield* changeTable
          // stopped after its opening commit and five pages of twelve
          yield* stoppedAt(mirror(table, { concurrency: 1 }), table, (yield* commitsOf(table)) + 6)
          yield* server.log.clearHook
          // the layout the earlier version left: each row the pass saw marked in the table itself
          const marked = yield* sql<{ row_id: string }>`SELECT row_id FROM ${sql(seenTable)}
            WHERE microapp_id = ${numbers} AND pass = 3`
          expect(marked.length).toBeGreaterThanOrEqual(5 * pageSize - made.updated.length - made.inserted.length)
          yield* sql`UPDATE ${sql(table)} SET pass = 3 WHERE microapp_id = ${numbers}
            AND row_id IN (SELECT row_id FROM ${sql(seenTable)} WHERE microapp_id = ${numbers} AND pass = 3)`
          yield* sql`DROP TABLE ${sql(seenTable)}`
          expect(yield* mirror(table)).toMatchObject({
            inserted: made.inserted.length,
            updated: made.updated.length,
            deleted: made.deleted.length,
            unchanged: size - made.updated.length - made.deleted.length,
            deletes: "reported",
            resumed: 1
          })
          yield* expectEqualToMicroapp(table)
          // the rest of the pass marked in the seen table; the next pass, all in the seen table, all unchanged
          const { seen } = yield* marksOf(table)
          expect(seen.size).toBe(size - made.updated.length - made.deleted.length - marked.length)
          const rows = size - made.deleted.length + made.inserted.length
          expect(yield* mirror(table)).toMatchObject({ inserted: 0, updated: 0, deleted: 0, unchanged: rows })
          const last = yield* marksOf(table)
          expect(last.seen.size).toBe(rows)
          expect(new Set(last.seen.values())).toEqual(new Set([4]))
        }))

      if (database.name === "sqlite") {
        it.effect("a pass stopped in its deletes deletes nothing yet; resumed with the deletes it recorded, each once", () =>
          Effect.gen(function*() {
            yield* reset
            const server = yield* MicroappServer
            const sql = yield* SqlClient.SqlClient
            const table = "deleting"
            yield* mirror(table)
            // one row stays, for the control read; the others are past the default guard
            const [kept] = yield* server.rows.table(numbers)
            yield* server.rows.setRows(numbers, kept === undefined ? [] : [kept])
            const allowed = { maxDeletes: size - 1 }
            // the fourth page of deletes fails: three are committed, with the checkpoint after them
            yield* sql`CREATE TRIGGER stop_deletes BEFORE INSERT ON ${sql(SqlMirror.deletesTableOf(table))}
              WHEN (SELECT count(*) FROM ${sql(SqlMirror.deletesTableOf(table))}) >= ${
              sql.literal(String(3 * pageSize))
            }
              BEGIN SELECT RAISE(ABORT, 'stopped'); END`
            expect(yield* Effect.flip(mirror(table, allowed))).toMatchObject({ _tag: "SqlError" })
            // recorded, not applied: the rows go only with the pass's completion
            expect((yield* mirrored(table)).size).toBe(size)
            expect(yield* sql`SELECT row_id FROM ${sql(SqlMirror.deletesTableOf(table))}`).toHaveLength(3 * pageSize)
            yield* sql`DROP TRIGGER stop_deletes`
            expect(yield* mirror(table, allowed)).toMatchObject({ deleted: size - 1, deletes: "reported" })
            expect((yield* mirrored(table)).size).toBe(1)
            expect(yield* sql`SELECT row_id FROM ${sql(SqlMirror.deletesTableOf(table))}`).toEqual([])
          }))
      }

      it.effect(
        "interrupted at random pages under drift and faults, resumed: no row that stood was deleted, each change once",
        () =>
          Effect.gen(function*() {
            const server = yield* MicroappServer
            for (const seed of [1, 2, 3]) {
              const table = `resumed_${seed}`
              const random = Prng.make(seed)
              yield* reset
              yield* mirror(table, { history: true })
              const made = yield* changeTable
              // rows inserted and removed while the pass runs, on some of its requests
              const touched = new Set<string>()
              const drifting: RequestHook = (record) =>
                record.path.endsWith("/microappdata") && random.next() < 0.1
                  ? Effect.gen(function*() {
                    const rows = yield* server.rows.table(numbers)
                    const made = yield* server.rows.insertRow(numbers, { N: 5000, Parity: "drift" }, {
                      index: random.int(rows.length + 1)
                    })
                    touched.add(String(made["_id"]))
                    const victim = rows[random.int(rows.length)]
                    if (victim !== undefined && random.next() < 0.5) {
                      touched.add(String(victim["_id"]))
                      yield* server.rows.removeRow(String(victim["_id"]))
                    }
                  })
                  : Effect.void
              yield* server.configure({ faults: { ...scanFaults, seed } })
              // pages of 10, and at most 2 windows at once while stopped: three stops of a few pages each
              // leave most of the pass's 24 pages
              const secondPass = (options: Partial<SqlMirror.Options> = {}) =>
                mirror(table, { history: true, pageSize: 10, ...options })
              for (let stop = 0; stop < 3; stop++) {
                const commits = yield* commitsOf(table)
                // the first stop after the pass's opening commit and a page at least, each later one after a page at least
                const pages = (stop === 0 ? 2 : 1) + random.int(2)
                yield* stoppedAt(secondPass({ maxConcurrency: 2 }), table, commits + pages, drifting)
              }
              const summary = yield* secondPass()
              yield* server.log.clearHook
              yield* server.configure({ faults: undefined })
              const context = JSON.stringify({ seed, summary })
              // each stop came after a commit of the pass: each later run resumed it
              expect(summary.resumed, context).toBe(3)

              const versions = yield* history(table)
              const standing = (id: string) => !touched.has(id)
              // the pass's new versions are its inserts and updates, each once
              const written = versions.filter((version) => version.pass === 2).map((version) => version.row_id)
              expect(new Set(written).size, context).toBe(written.length)
              expect(written.length, context).toBe(summary.inserted + summary.updated)
              expect(written.filter(standing).sort(), context).toEqual([...made.updated, ...made.inserted].sort())
              // no row that stood through the pass was ever deleted; those deleted before it were, if exhaustive
              const closedAsDeleted = versions.filter((version) => version.deleted === 1).map((version) =>
                version.row_id
              )
              expect(closedAsDeleted.filter((id) => standing(id) && !made.deleted.includes(id)), context).toEqual([])
              if (summary.exhaustive) {
                expect(closedAsDeleted.filter(standing).sort(), context).toEqual([...made.deleted].sort())
              }
              // the rows that stood are in the table as the Microapp has them
              const expected = yield* microapp
              const actual = yield* mirrored(table)
              for (const [id, row] of expected) if (standing(id)) expect(actual.get(id), context).toEqual(row)
              // with the table still, the next pass makes the copy exact
              yield* mirror(table, { history: true })
              yield* expectEqualToMicroapp(table)
            }
          }),
        { timeout: 120_000 }
      )
    })
  })
}

describe("SqlMirror on a SQLite file another connection reads", () => {
  layer(emulator, { excludeTestServices: true })((it) => {
    it.effect("a read transaction open on the file all along: the run commits every page and completes", () =>
      Effect.gen(function*() {
        yield* reset
        const url = yield* freshSqliteUrl
        const onFile = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, LibsqlClient.layer({ url }))
        yield* onFile(mirror("read"))
        const server = yield* MicroappServer
        yield* server.rows.updateRow(idAt(7), { Parity: "changed while read" })
        const reader = createClient({ url })
        yield* Effect.addFinalizer(() => Effect.sync(() => reader.close()))
        const read = yield* Effect.promise(() => reader.transaction("read"))
        yield* Effect.promise(() => read.execute("SELECT count(*) FROM read"))
        // in SQLite's default journal mode the first commit would fail, the reader holding the file
        expect(yield* onFile(mirror("read"))).toMatchObject({ updated: 1, unchanged: size - 1, complete: true })
        read.close()
        yield* onFile(expectEqualToMicroapp("read"))
      }).pipe(Effect.scoped))
  })
})

describe("microapp mirror", () => {
  layer(emulator, { excludeTestServices: true })((it) => {
    it.effect("a microapp installed elsewhere (globally) finds the driver installed beside the project it runs in", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const global = fs.mkdtempSync(path.join(os.tmpdir(), "microapp-global-"))
        const project = fs.mkdtempSync(path.join(os.tmpdir(), "microapp-project-"))
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            fs.rmSync(global, { recursive: true, force: true })
            fs.rmSync(project, { recursive: true, force: true })
          })
        )
        const globalBin = path.join(global, "bin.js")
        // the bin and the chunks it imports, as a global install lays them out
        fs.copyFileSync(bin, globalBin)
        fs.cpSync(path.join(path.dirname(bin), "chunks"), path.join(global, "chunks"), { recursive: true })
        fs.symlinkSync(path.resolve("node_modules"), path.join(project, "node_modules"), "dir")
        const run = yield* runToEnd(() =>
          spawn(process.execPath, [globalBin, "mirror", numbers, "--db", "file:m.db", "--quiet"], {
            cwd: project,
            env: { ...cleanEnv, ...envOf(server) },
            stdio: "pipe"
          })
        )
        expect([run.code, run.stderr]).toEqual([0, ""])
        expect(fs.existsSync(path.join(project, "m.db"))).toBe(true)
      }).pipe(Effect.scoped))

    it.effect("a bad database URL, a reserved, empty or invalid table, a missing directory: exit 2 naming it", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const connection = flags(server)
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "microapp-mirror-args-"))
        const db = `file:${path.join(dir, "m.db")}`
        const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
          [["--db", "file:"], "--db must be file:PATH"],
          [["--db", db, "--table", "sqlite_master"], "invalid table: 'sqlite_master' is reserved"],
          [["--db", db, "--table", "pg_class"], "invalid table: 'pg_class' is reserved"],
          [["--db", db, "--table", ""], "invalid table: '' must be"],
          [["--db", db, "--table", "a b"], "invalid table: 'a b' must be"],
          [["--db", `file:${path.join(dir, "missing", "m.db")}`], "no such directory"]
        ]
        for (const [args, message] of cases) {
          const run = yield* cli(["mirror", numbers, ...args, ...connection])
          expectFailure(run, 2, [])
          expect(run.stderr, args.join(" ")).toContain(message)
        }
        expect(fs.readdirSync(dir)).toEqual([])
        fs.rmSync(dir, { recursive: true, force: true })
      }))

    // only root can mount the small file system that fills up
    it.effect.skipIf(process.getuid?.() !== 0)(
      "a full disk: exit 1 saying the disk is full, not an unexpected failure",
      () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const dir = fs.mkdtempSync(path.join(os.tmpdir(), "microapp-mirror-full-"))
          execFileSync("mount", ["-t", "tmpfs", "-o", "size=32k", "tmpfs", dir])
          try {
            const run = yield* cli(["mirror", numbers, "--db", `file:${path.join(dir, "m.db")}`, ...flags(server)])
            expect(run.stderr).toContain("the disk is full")
            expectFailure(run, 1, [])
            expect(run.stderr).not.toContain("unexpected failure")
          } finally {
            execFileSync("umount", ["-l", dir]) // lazily: the failed run may still hold the file open
            fs.rmSync(dir, { recursive: true, force: true })
          }
        })
    )

    it.effect("a missing driver: exit 2 with the line that installs it; a bad URL: exit 2, the password never printed", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const connection = flags(server)
        const missing = () => Promise.reject(new Error("Cannot find package"))
        const withoutDrivers = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
          Effect.provideService(effect, SqlDrivers, { libsql: missing, pg: missing })
        const sqlite = yield* withoutDrivers(cli(["mirror", numbers, "--db", "file:/tmp/x.db", ...connection]))
        expectFailure(sqlite, 2, [])
        expect(sqlite.stderr).toContain("npm install @effect/sql@~0.52.1 @effect/sql-libsql@~0.42.0\n")
        const pg = yield* withoutDrivers(
          cli(["mirror", numbers, "--db", "postgres://u:s3cret@127.0.0.1:1/db", ...connection])
        )
        expectFailure(pg, 2, ["s3cret"])
        expect(pg.stderr).toContain("npm install @effect/sql@~0.52.1 @effect/sql-pg@~0.53.0\n")
        for (const url of ["mysql://u:s3cret@h/db", "not a url s3cret"]) {
          expectFailure(yield* cli(["mirror", numbers, "--db", url, ...connection]), 2, ["s3cret"])
        }
      }))
  })
})
