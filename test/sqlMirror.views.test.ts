/**
 * The SQL mirror's `data` column and typed views, on SQLite and a real PostgreSQL: `data` is jsonb
 * on PostgreSQL, a table an earlier version wrote with JSON text is migrated in place by the first
 * run and compares unchanged.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Changes } from "../src/index.js"
import { SqlMirror } from "../src/sql/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { databases, storedData } from "./sqlDatabases.js"
import { withEmulator } from "./support.js"

const demoRows = 150

const emulator = withEmulator({ demoRows }, { retry: false })

/** The rows table as the version before jsonb created it and wrote a complete pass into it. */
const writtenByTextVersion = (table: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const server = yield* MicroappServer
    yield* sql`CREATE TABLE ${sql(table)} (
      microapp_id TEXT NOT NULL, row_id TEXT NOT NULL, data TEXT NOT NULL, fingerprint TEXT NOT NULL,
      pass INTEGER NOT NULL, PRIMARY KEY (microapp_id, row_id))`
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(SqlMirror.passesTable)} (
      row_table TEXT NOT NULL, microapp_id TEXT NOT NULL, pass INTEGER NOT NULL, complete INTEGER NOT NULL,
      checkpoint TEXT, inserted INTEGER NOT NULL, updated INTEGER NOT NULL, deleted INTEGER NOT NULL,
      unchanged INTEGER NOT NULL, exhaustive INTEGER NOT NULL, commits INTEGER NOT NULL,
      PRIMARY KEY (row_table, microapp_id))`
    const rows = yield* server.rows.table(projectsMicroAppID)
    yield* sql`INSERT INTO ${sql(table)} ${
      sql.insert(rows.map((row) => ({
        microapp_id: projectsMicroAppID,
        row_id: String(row["_id"]),
        data: JSON.stringify(row),
        fingerprint: Changes.fingerprint(row),
        pass: 1
      })))
    }`
    yield* sql`INSERT INTO ${sql(SqlMirror.passesTable)} ${
      sql.insert({
        row_table: table,
        microapp_id: projectsMicroAppID,
        pass: 1,
        complete: 1,
        checkpoint: null,
        inserted: rows.length,
        updated: 0,
        deleted: 0,
        unchanged: 0,
        exhaustive: 1,
        commits: 1
      })
    }`
    return rows
  })

const dataType = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.onDialectOrElse({
      pg: () =>
        Effect.map(
          sql<{ data_type: string }>`SELECT data_type FROM information_schema.columns
            WHERE table_name = ${table} AND column_name = 'data'`,
          (rows) => rows[0]?.data_type
        ),
      orElse: () =>
        Effect.map(
          sql<{ type: string; name: string }>`SELECT name, type FROM pragma_table_info(${table})`,
          (rows) => rows.find((row) => row.name === "data")?.type.toLowerCase()
        )
    }))

for (const database of databases) {
  describe(database.name, () => {
    layer(Layer.merge(database.layer(), emulator), { excludeTestServices: true })((it) => {
      it.effect("data is jsonb on PostgreSQL, JSON text on SQLite, for rows and history", () =>
        Effect.gen(function*() {
          yield* SqlMirror.run({ microAppID: projectsMicroAppID, table: "fresh", history: true })
          const expected = database.name === "postgres" ? "jsonb" : "text"
          expect(yield* dataType("fresh")).toBe(expected)
          expect(yield* dataType(SqlMirror.historyTableOf("fresh"))).toBe(expected)
        }))

      it.effect("a table written with JSON text by an earlier version is migrated by the first run and compares unchanged", () =>
        Effect.gen(function*() {
          const rows = yield* writtenByTextVersion("earlier")
          const server = yield* MicroappServer
          const changed = String(rows[10]?.["_id"])
          yield* server.rows.updateRow(changed, { Status: "Done", Priority: 99 })
          const summary = yield* SqlMirror.run({ microAppID: projectsMicroAppID, table: "earlier" })
          // fingerprints, not data, are compared: jsonb's key order changes nothing
          expect(summary).toMatchObject({ inserted: 0, updated: 1, deleted: 0, unchanged: demoRows - 1 })
          expect(yield* dataType("earlier")).toBe(database.name === "postgres" ? "jsonb" : "text")
          const sql = yield* SqlClient.SqlClient
          const stored = yield* sql<{ row_id: string; data: unknown }>`SELECT row_id, data FROM ${sql("earlier")}`
          const now = new Map((yield* server.rows.table(projectsMicroAppID)).map((row) => [String(row["_id"]), row]))
          expect(stored).toHaveLength(demoRows)
          for (const row of stored) expect(storedData(row.data), row.row_id).toEqual(now.get(row.row_id))
          const again = yield* SqlMirror.run({ microAppID: projectsMicroAppID, table: "earlier" })
          expect(again).toMatchObject({ inserted: 0, updated: 0, deleted: 0, unchanged: demoRows })
        }))
    })
  })
}
