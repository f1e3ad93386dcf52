/**
 * What a mirror over `@effect/sql` relies on, proven once on each real database (a SQLite file and
 * the run's PostgreSQL): an upsert that tells written rows from unchanged ones, transactions that
 * roll back on failure (savepoints included), the one DDL that differs, and integer types read back.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Data, Effect } from "effect"
import { databases } from "./sqlDatabases.js"

class Refused extends Data.TaggedError("Refused") {}

interface Item {
  readonly id: string
  readonly data: string
  readonly revision: number
}

/**
 * Inserts new ids, updates changed ones and leaves equal ones alone; the ids it wrote. The same SQL
 * on both (`excluded` is PostgreSQL's and SQLite's name for the proposed row).
 */
const upsert = (sql: SqlClient.SqlClient, table: string, rows: ReadonlyArray<{ id: string; data: string }>) =>
  Effect.map(
    sql<{ id: string }>`INSERT INTO ${sql(table)} ${sql.insert(rows)}
      ON CONFLICT (id) DO UPDATE SET data = excluded.data, revision = ${sql(table)}.revision + 1
      WHERE ${sql(table)}.data <> excluded.data
      RETURNING id`,
    (written) => written.map((row) => row.id).sort()
  )

const createItems = (sql: SqlClient.SqlClient, table: string) =>
  sql`CREATE TABLE ${sql(table)} (id TEXT PRIMARY KEY, data TEXT NOT NULL, revision INTEGER NOT NULL DEFAULT 1)`

const readItems = (sql: SqlClient.SqlClient, table: string) =>
  sql<Item>`SELECT id, data, revision FROM ${sql(table)} ORDER BY id`

for (const database of databases) {
  describe(database.name, () => {
    layer(database.layer(), { excludeTestServices: true })((it) => {
      it.effect("an upsert inserts new ids, updates changed rows and leaves equal ones alone", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* createItems(sql, "upserted")
          expect(yield* upsert(sql, "upserted", [{ id: "a", data: "1" }, { id: "b", data: "2" }])).toEqual(["a", "b"])
          const written = yield* upsert(sql, "upserted", [
            { id: "a", data: "1" },
            { id: "b", data: "two" },
            { id: "c", data: "3" }
          ])
          expect(written).toEqual(["b", "c"])
          expect(yield* readItems(sql, "upserted")).toEqual([
            { id: "a", data: "1", revision: 1 },
            { id: "b", data: "two", revision: 2 },
            { id: "c", data: "3", revision: 1 }
          ])
        }))

      it.effect("a failure inside withTransaction rolls back all its statements; a success commits", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* createItems(sql, "transacted")
          yield* sql.withTransaction(upsert(sql, "transacted", [{ id: "a", data: "1" }]))
          const failed = yield* sql.withTransaction(
            Effect.zipRight(
              upsert(sql, "transacted", [{ id: "a", data: "changed" }, { id: "b", data: "2" }]),
              new Refused()
            )
          ).pipe(Effect.flip)
          expect(failed).toBeInstanceOf(Refused)
          expect(yield* readItems(sql, "transacted")).toEqual([{ id: "a", data: "1", revision: 1 }])
        }))

      it.effect("a failed inner transaction rolls back to its savepoint and the outer one commits", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* createItems(sql, "nested")
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* upsert(sql, "nested", [{ id: "outer", data: "1" }])
            yield* sql.withTransaction(
              Effect.zipRight(upsert(sql, "nested", [{ id: "inner", data: "2" }]), new Refused())
            )
              .pipe(Effect.ignore)
          }))
          expect(yield* readItems(sql, "nested")).toEqual([{ id: "outer", data: "1", revision: 1 }])
        }))

      it.effect("a column the database numbers itself, where the DDL differs, reads back as numbers", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql.onDialectOrElse({
            pg: () => sql`CREATE TABLE events (seq INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY, op TEXT NOT NULL)`,
            orElse: () => sql`CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, op TEXT NOT NULL)`
          })
          yield* sql`INSERT INTO events ${sql.insert([{ op: "c" }, { op: "u" }, { op: "d" }])}`
          expect(yield* sql`SELECT seq, op FROM events ORDER BY seq`).toEqual([
            { seq: 1, op: "c" },
            { seq: 2, op: "u" },
            { seq: 3, op: "d" }
          ])
          // COUNT is a BIGINT in PostgreSQL, which node-postgres reads as a string: cast it for a number
          const [counted] = yield* sql<{ n: number }>`SELECT CAST(COUNT(*) AS INTEGER) AS n FROM events`
          expect(counted).toEqual({ n: 3 })
        }))
    })
  })
}
