/**
 * `microapp mirror` (the built bin) on SQLite and on a real PostgreSQL, through two passes each
 * killed with SIGKILL five times at random moments under faults and drift (a table that is never
 * still: inserts anywhere, so neither pass can prove itself exhaustive), with updates, deletes and
 * inserts between them: after each pass the rows that stood still equal the Microapp's, the
 * closing line counts what the pass did to the table, row for row, and for the rows that stood
 * still that is exactly the change made between the passes, every delete among them; no row that
 * stood still is deleted.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer } from "effect"
import { spawn } from "node:child_process"
import { isDeepStrictEqual } from "node:util"
import { SqlMirror } from "../src/sql/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { envOf } from "./cliSupport.js"
import { bin, cleanEnv, drift, drifted, killedFiveTimes, scanFaults, touchedBy } from "./processSupport.js"
import { databases, storedData } from "./sqlDatabases.js"
import { withEmulator } from "./support.js"

const microAppID = projectsMicroAppID
const table = "killed_rows"

/** A row of the mirror's table: its data parsed, the pass that last wrote it, and the pass that last saw it. */
interface Mirrored {
  readonly data: unknown
  readonly wrote: number
  readonly seen: number
}

/** The mirror's table by id: a row was last seen by the pass that wrote it or by its mark in the seen table, the later. */
const mirrored = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ row_id: string; data: unknown; wrote: number; marked: number | null }>`
      SELECT t.row_id, t.data, t.pass AS wrote, s.pass AS marked FROM ${sql(table)} AS t
      LEFT JOIN ${sql(SqlMirror.seenTableOf(table))} AS s ON s.microapp_id = t.microapp_id AND s.row_id = t.row_id
      WHERE t.microapp_id = ${microAppID}`,
    (rows) =>
      new Map(rows.map((row): [string, Mirrored] => [row.row_id, {
        data: storedData(row.data),
        wrote: row.wrote,
        seen: Math.max(row.wrote, row.marked ?? 0)
      }]))
  ))

/** The passes table's row for the table: the pass and the commit count; none before the first run made it. */
const passRow = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ pass: number; complete: number; commits: number }>`SELECT pass, complete, commits
      FROM ${sql(SqlMirror.passesTable)} WHERE row_table = ${table} AND microapp_id = ${microAppID}`,
    ([row]) => row
  ))

/** The Microapp by id, each row as JSON carries it (what the mirror stores). */
const microappNow = Effect.map(
  Effect.flatMap(MicroappServer, (server) => server.rows.table(microAppID)),
  (rows) => new Map(rows.map((row) => [String(row._id), JSON.parse(JSON.stringify(row)) as unknown]))
)

interface Closing {
  readonly inserted: number
  readonly updated: number
  readonly deleted: number
  readonly unchanged: number
  readonly exhaustive: boolean
}

/** The counts of the closing line on stderr, and whether it says the pass was exhaustive. */
const closingOf = (stderr: string): Closing => {
  const found = /^done: inserted (\d+), updated (\d+), deleted (\d+), unchanged (\d+), .*\n$/.exec(stderr)
  if (found === null) return expect.fail(`no closing line in ${JSON.stringify(stderr)}`)
  const [inserted, updated, deleted, unchanged] = found.slice(1).map(Number) as [number, number, number, number]
  return { inserted, updated, deleted, unchanged, exhaustive: stderr.endsWith(", exhaustive\n") }
}

type Did = "inserted" | "updated" | "deleted" | "unchanged" | "rewritten" | "unseen" | "absent"

/** What pass `pass` did with a row, from the table before it and after it: an unchanged row seen, not written. */
const didOf = (before: Mirrored | undefined, after: Mirrored | undefined, pass: number): Did =>
  before === undefined
    ? after === undefined ? "absent" : "inserted"
    : after === undefined
    ? "deleted"
    : !isDeepStrictEqual(before.data, after.data)
    ? "updated"
    : after.seen !== pass
    ? "unseen"
    : after.wrote === before.wrote
    ? "unchanged"
    : "rewritten"

/** What a pass must do with a row that stands still through it, from the table before it and the row in the Microapp. */
const dueOf = (before: Mirrored | undefined, row: unknown): Did =>
  before === undefined
    ? row === undefined ? "absent" : "inserted"
    : row === undefined
    ? "deleted"
    : isDeepStrictEqual(before.data, row)
    ? "unchanged"
    : "updated"

/** How many rows a pass did each thing with. */
const tally = (dids: ReadonlyArray<Did>) => {
  const count = (did: Did) => dids.filter((each) => each === did).length
  return {
    inserted: count("inserted"),
    updated: count("updated"),
    deleted: count("deleted"),
    unchanged: count("unchanged")
  }
}

/** Updates, deletes and inserts at known places of the table, between the passes. */
const changeTable = Effect.gen(function*() {
  const server = yield* MicroappServer
  const ids = Array.from((yield* microappNow).keys())
  const at = (i: number) => ids[i] ?? ""
  const updated = [3, 50, 199].map(at)
  for (const id of updated) yield* server.rows.updateRow(id, { Name: `changed between passes ${id}` })
  const deleted = [0, 77, 120].map(at)
  for (const id of deleted) yield* server.rows.removeRow(id)
  const inserted = yield* Effect.forEach([40, 130], (index) =>
    Effect.map(
      server.rows.insertRow(microAppID, { Name: `inserted between passes at ${index}` }, { index }),
      (row) => String(row._id)
    ))
  return { updated, deleted, inserted }
})

for (const database of databases) {
  describe(`microapp mirror on ${database.name}, both passes killed`, () => {
    layer(withEmulator({ demoRows: 1200 }, {}), { excludeTestServices: true })((it) => {
      it.effect(
        "two passes each killed five times under faults and drift, changes between: each pass counts, row for row, what it did",
        () =>
          Effect.gen(function*() {
            const server = yield* MicroappServer
            const url = yield* database.url
            // one client all along: polled every 20 ms, a connection each time cost PostgreSQL a backend each
            const client = yield* Layer.build(Layer.orDie(database.client(url)))
            const inDatabase = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(Effect.orDie(effect), client)
            // 0 before the first run made the passes table
            const commits = inDatabase(Effect.orElseSucceed(Effect.map(passRow, (row) => row?.commits ?? 0), () => 0))
            const completedPass = Effect.map(inDatabase(passRow), (row) => {
              expect(row?.complete, "the pass is complete").toBe(1)
              return row?.pass ?? 0
            })
            const run = () =>
              spawn(process.execPath, [bin, "mirror", microAppID, "--db", url, "--table", table, "--page-size", "20"], {
                env: { ...cleanEnv, ...envOf(server) },
                stdio: "pipe"
              })
            /** A pass under faults and drift, killed five times, then run to its end: its closing line and the ids drift touched. */
            const disturbedPass = () =>
              Effect.gen(function*() {
                const touched = drifted()
                yield* server.configure({ latency: Duration.millis(10), faults: scanFaults })
                const drifting = yield* Effect.fork(drift(server, microAppID, touched))
                const last = yield* killedFiveTimes(server, run, commits)
                yield* Fiber.interrupt(drifting)
                yield* server.configure({ latency: Duration.zero, faults: undefined })
                expect(last.code, last.stderr).toBe(0)
                expect(last.stderr).toMatch(/, resumed (once|\d+ times), /)
                expect(last.stderr).not.toContain(new URL(url).password || "no password")
                expect(touched.inserted.size, "drift inserted rows during the pass").toBeGreaterThan(0)
                return { closing: closingOf(last.stderr), touched: touchedBy(touched) }
              })

            // pass 1: every row inserted; those that stood still as the Microapp has them
            const first = yield* disturbedPass()
            const pass1 = yield* completedPass
            const t1 = yield* inDatabase(mirrored)
            const m1 = yield* microappNow
            const context1 = JSON.stringify({ pass: pass1, closing: first.closing, rows: t1.size })
            for (const [id, row] of m1) {
              if (!first.touched.has(id)) {
                expect(t1.get(id), `${id} stood still in pass 1`).toEqual({ data: row, wrote: pass1, seen: pass1 })
              }
            }
            const unexplained1 = [
              ...[...t1.keys()].filter((id) => !m1.has(id)),
              ...[...m1.keys()].filter((id) => !t1.has(id))
            ].filter((id) => !first.touched.has(id))
            expect(unexplained1, context1).toEqual([])
            expect(first.closing, context1).toEqual({
              inserted: t1.size,
              updated: 0,
              deleted: 0,
              unchanged: 0,
              exhaustive: first.closing.exhaustive
            })

            // between the passes, the table still but for the changes made at known places
            const made = yield* changeTable
            const m2 = yield* microappNow

            // pass 2, as busy as the first: its deletes are confirmed by point reads, exhaustive or not
            const second = yield* disturbedPass()
            const pass2 = yield* completedPass
            const t2 = yield* inDatabase(mirrored)
            const mEnd = yield* microappNow
            const { closing, touched } = second
            const context2 = JSON.stringify({ pass: pass2, closing, touched: touched.size })
            expect(pass2, context2).toBeGreaterThan(pass1)
            const ids = [...new Set([...t1.keys(), ...m2.keys(), ...t2.keys()])]
            const did = new Map(ids.map((id) => [id, didOf(t1.get(id), t2.get(id), pass2)]))
            // (a) the closing line counts what the pass did to the table
            expect({ ...tally([...did.values()]), exhaustive: closing.exhaustive }, context2).toEqual(closing)
            // (b) with each row that stood still, the pass did what changed between the passes
            const stoodStill = ids.filter((id) => !touched.has(id))
            const wrong = stoodStill.flatMap((id) => {
              const due = dueOf(t1.get(id), m2.get(id))
              return due === did.get(id) ? [] : [{ id, due, did: did.get(id) }]
            })
            expect(wrong, context2).toEqual([])
            const madeBetween = (ids: ReadonlyArray<string>) =>
              ids.filter((id) => !first.touched.has(id) && !touched.has(id)).map((id) => did.get(id))
            expect(madeBetween(made.updated), context2).toEqual(madeBetween(made.updated).map(() => "updated"))
            expect(madeBetween(made.inserted), context2).toEqual(madeBetween(made.inserted).map(() => "inserted"))
            expect(madeBetween(made.deleted), context2).toEqual(madeBetween(made.deleted).map(() => "deleted"))
            // (c) the rows that stood still as the Microapp has them: none deleted
            for (const id of stoodStill) {
              const row = mEnd.get(id)
              if (row !== undefined) {
                const wrote = did.get(id) === "unchanged" ? t1.get(id)?.wrote : pass2
                expect(t2.get(id), `${id} stood still in pass 2`).toEqual({ data: row, wrote, seen: pass2 })
              }
            }

            // with the table still, one more pass (in this process: no kill to survive) makes the copy exact
            const still = yield* inDatabase(SqlMirror.run({ microAppID, table, pageSize: 20 }))
            expect(still.exhaustive, JSON.stringify(still)).toBe(true)
            const t3 = yield* inDatabase(mirrored)
            const m3 = yield* microappNow
            expect([...t3.keys()].sort()).toEqual([...m3.keys()].sort())
            for (const [id, row] of m3) {
              expect(t3.get(id)?.data, id).toEqual(row)
            }
          }).pipe(Effect.scoped),
        { timeout: 180_000 }
      )
    })
  })
}
