/**
 * The README's pipeline sink on SQLite through `@effect/sql`: a Microapp's rows in a table, and
 * the checkpoint of the scan that wrote them in another, committed together.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Option } from "effect"
import type { Sink } from "./pipeline.js"

export const sqliteSink = (microAppID: string): Effect.Effect<Sink<SqlError, never>, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS microapp_rows (
      microapp_id TEXT NOT NULL, row_id TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (microapp_id, row_id))`
    yield* sql`CREATE TABLE IF NOT EXISTS microapp_checkpoints (microapp_id TEXT PRIMARY KEY, checkpoint TEXT NOT NULL)`
    return {
      loadCheckpoint: Effect.map(
        sql<{ checkpoint: string }>`SELECT checkpoint FROM microapp_checkpoints WHERE microapp_id = ${microAppID}`,
        ([stored]) => Option.fromNullable(stored?.checkpoint)
      ),
      // a plain INSERT: a row handed out twice would break the primary key and roll the page back
      insert: (rows) =>
        rows.length === 0 ?
          Effect.void :
          sql`INSERT INTO microapp_rows ${
            sql.insert(rows.map((row) => ({ microapp_id: microAppID, row_id: row._id, data: JSON.stringify(row) })))
          }`,
      saveCheckpoint: (checkpoint) =>
        sql`INSERT INTO microapp_checkpoints ${sql.insert({ microapp_id: microAppID, checkpoint })}
          ON CONFLICT (microapp_id) DO UPDATE SET checkpoint = excluded.checkpoint`,
      withTransaction: sql.withTransaction
    }
  })
