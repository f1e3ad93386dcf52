/**
 * The passes table on SQLite and on a real PostgreSQL: a column per field of the pass's summary
 * (`reads`, `unconfirmed` and the scan's figures too, not only five counters), holding what the
 * pass's last checkpoint holds; a table an earlier version made gains the columns it lacks, filled
 * from the checkpoints it kept, and its next pass runs and stores them.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { Changes } from "../src/index.js"
import { SqlMirror } from "../src/sql/index.js"
import { summaryColumns } from "../src/sql/internal/passes.js"
import { MicroappServer } from "../src/testing/index.js"
import { databases } from "./sqlDatabases.js"
import { numbersTable, withEmulator } from "./support.js"

const numbers = "000000000000000000000c05"
const size = 60
const pageSize = 20

type Stored = Record<string, unknown>

/** The pass's row of `table`, a count as a number (PostgreSQL's driver hands a BIGINT as text). */
const passRow = (table: string, microAppID = numbers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<Stored>`SELECT * FROM ${sql(SqlMirror.passesTable)}
      WHERE row_table = ${table} AND microapp_id = ${microAppID}`
    return Object.fromEntries(
      Object.entries(row ?? {}).map((
        [name, value]
      ) => [name, typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value])
    )
  })

/** A summary as its columns hold it: a boolean as 0 or 1, an undefined field as `NULL`. */
const asColumns = (summary: Changes.Summary): Stored =>
  Object.fromEntries(summaryColumns.map(({ field, name }) => {
    const value = summary[field]
    return [name, typeof value === "boolean" ? Number(value) : value ?? null]
  }))

/** The summary of the last commit of the pass of `table`, as its checkpoint holds it. */
const checkpointSummary = (table: string) =>
  Effect.map(
    SqlMirror.passState({ microAppID: numbers, table }),
    (state) => Option.getOrThrow(Option.flatMap(state, (pass) => pass.summary))
  )

const removeRows = (indexes: ReadonlyArray<number>) =>
  Effect.flatMap(MicroappServer, (server) =>
    Effect.forEach(
      indexes,
      (i) => server.rows.removeRow(numbersTable(numbers, size).rows[i]?._id ?? ""),
      { discard: true }
    ))

const emulator = () => withEmulator({ tables: [numbersTable(numbers, size)] })

const mirror = (table: string) => SqlMirror.run({ microAppID: numbers, pageSize, table })

for (const database of databases) {
  describe(database.name, () => {
    layer(Layer.merge(database.layer(), emulator()), { excludeTestServices: true })((it) => {
      it.effect("a column per field of the summary, each holding what the pass's checkpoint holds", () =>
        Effect.gen(function*() {
          expect(summaryColumns.map((column) => column.field)).toEqual(Object.keys(Changes.Summary.fields))
          yield* mirror("counted")
          expect(yield* passRow("counted")).toMatchObject(asColumns(yield* checkpointSummary("counted")))
          yield* removeRows([5, 30, 59])
          const summary = yield* mirror("counted")
          expect(summary).toMatchObject({ deleted: 3, reads: 3, unconfirmed: 0 })
          const row = yield* passRow("counted")
          expect(row).toMatchObject(asColumns(yield* checkpointSummary("counted")))
          // named in snake_case; the summary's `complete` apart from the pass's own
          expect(row).toMatchObject({
            pass: 2,
            complete: 1,
            inserted: 0,
            deleted: 3,
            reads: 3,
            unconfirmed: 0,
            held_back: 0,
            duplicates_dropped: 0,
            server_cap: null,
            summary_complete: 1,
            exhaustive: 1,
            deletes: "reported",
            pages: summary.pages,
            rows: size - 3
          })
        }))
    })

    layer(Layer.merge(database.layer(), emulator()), { excludeTestServices: true })((it) => {
      it.effect("a passes table an earlier version made gains the summary's columns, filled from its checkpoints; its next pass stores them", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* mirror("old")
          const kept = yield* passRow("old")
          const summary = yield* checkpointSummary("old")
          // the table as the version before held it: five counters, and a pass with no checkpoint yet
          yield* sql`DROP TABLE ${sql(SqlMirror.passesTable)}`
          yield* sql`CREATE TABLE ${sql(SqlMirror.passesTable)} (
            row_table TEXT NOT NULL, microapp_id TEXT NOT NULL, pass INTEGER NOT NULL, complete INTEGER NOT NULL,
            checkpoint TEXT, inserted INTEGER NOT NULL, updated INTEGER NOT NULL, deleted INTEGER NOT NULL,
            unchanged INTEGER NOT NULL, exhaustive INTEGER NOT NULL, commits INTEGER NOT NULL,
            PRIMARY KEY (row_table, microapp_id))`
          const old = { updated: 0, deleted: 0, unchanged: 0, exhaustive: 1 }
          yield* sql`INSERT INTO ${sql(SqlMirror.passesTable)} ${
            sql.insert([
              {
                row_table: "old",
                microapp_id: numbers,
                pass: 1,
                complete: 1,
                checkpoint: String(kept["checkpoint"]),
                inserted: size,
                ...old,
                commits: Number(kept["commits"])
              },
              {
                row_table: "fresh",
                microapp_id: numbers,
                pass: 1,
                complete: 0,
                checkpoint: null,
                inserted: 0,
                ...old,
                exhaustive: 0,
                commits: 1
              }
            ])
          }`
          yield* SqlMirror.createTables({ table: "old" })
          expect(yield* passRow("old")).toEqual({ ...kept, ...asColumns(summary) })
          // no checkpoint: the summary of a pass that has read nothing
          expect(yield* passRow("fresh")).toMatchObject({
            reads: 0,
            elapsed_millis: 0,
            server_cap: null,
            summary_complete: 0,
            deletes: "pending"
          })
          yield* removeRows([10])
          expect(yield* mirror("old")).toMatchObject({ deleted: 1, reads: 1, unchanged: size - 1 })
          expect(yield* passRow("old")).toMatchObject({
            pass: 2,
            complete: 1,
            ...asColumns(yield* checkpointSummary("old"))
          })
        }))
    })
  })
}
