/**
 * The databases a suite over `@effect/sql` runs against, each a fresh and empty one per layer:
 * SQLite through `@effect/sql-libsql` in a file of a temp dir, and PostgreSQL through
 * `@effect/sql-pg` on the run's server (see postgres.ts). A suite is written once and run for each:
 * `for (const database of databases) describe(database.name, () => layer(database.layer())(...))`.
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { LibsqlClient } from "@effect/sql-libsql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted, type Scope } from "effect"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { inject } from "vitest"
import type {} from "./postgres.js" // its `postgresUrl` in vitest's ProvidedContext

/** `PgClient` (and `SqlClient`) on the database at `url`. */
export const postgresClient = (url: string): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError.SqlError> =>
  PgClient.layer({ url: Redacted.make(url) })

/** One statement on the server's own `postgres` database, for what a database cannot do to itself. */
const onServer = (statement: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, SqlError.SqlError>) =>
  Effect.provide(Effect.flatMap(SqlClient.SqlClient, statement), postgresClient(inject("postgresUrl")))

/**
 * A new database on the run's PostgreSQL, dropped when the layer is released, so that files running
 * in parallel share the server and nothing else.
 */
const freshPostgres = (): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError.SqlError> =>
  Layer.unwrapScoped(Effect.map(freshPostgresUrl, postgresClient))

/** The URL of a new database on the run's PostgreSQL, dropped when the scope closes. */
export const freshPostgresUrl: Effect.Effect<string, SqlError.SqlError, Scope.Scope> = Effect.gen(function*() {
  const name = `test_${randomUUID().replaceAll("-", "")}`
  yield* Effect.acquireRelease(
    onServer((sql) => sql`CREATE DATABASE ${sql(name)}`),
    // FORCE: a connection the client's pool has not closed yet does not keep the database alive
    () => Effect.orDie(onServer((sql) => sql`DROP DATABASE ${sql(name)} WITH (FORCE)`))
  )
  const url = new URL(inject("postgresUrl"))
  url.pathname = `/${name}`
  return url.href
})

/** A mirror's `data` as a value: PostgreSQL's driver hands jsonb parsed, SQLite the JSON text. */
export const storedData = (data: unknown): unknown => typeof data === "string" ? JSON.parse(data) : data

/** A new SQLite database file in a temp dir, removed when the layer is released. */
export const freshSqlite = (): Layer.Layer<LibsqlClient.LibsqlClient | SqlClient.SqlClient> =>
  Layer.unwrapScoped(Effect.map(freshSqliteUrl, (url) => LibsqlClient.layer({ url })))

/** The `file:` URL of a new SQLite database in a temp dir, removed when the scope closes. */
export const freshSqliteUrl: Effect.Effect<string, never, Scope.Scope> = Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "effect-microapp-sqlite-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  ),
  (dir) => `file:${path.join(dir, "test.db")}`
)

export interface Database {
  readonly name: "sqlite" | "postgres"
  /** A fresh, empty database each call. */
  readonly layer: () => Layer.Layer<SqlClient.SqlClient, SqlError.SqlError>
  /** The URL of a fresh, empty one, gone when the scope closes. */
  readonly url: Effect.Effect<string, SqlError.SqlError, Scope.Scope>
  /** `SqlClient` on a database by its URL. */
  readonly client: (url: string) => Layer.Layer<SqlClient.SqlClient, SqlError.SqlError>
}

export const databases: ReadonlyArray<Database> = [
  { name: "sqlite", layer: freshSqlite, url: freshSqliteUrl, client: (url) => LibsqlClient.layer({ url }) },
  { name: "postgres", layer: freshPostgres, url: freshPostgresUrl, client: postgresClient }
]

/** How many runners of `@effect/cluster` the database at `url` has registered; 0 before its tables exist. */
export const registeredRunners = (url: string): Effect.Effect<number> =>
  Effect.provide(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: string }>`SELECT count(*) AS n FROM cluster_runners`),
    postgresClient(url)
  ).pipe(Effect.map(([row]) => Number(row?.n ?? 0)), Effect.orElseSucceed(() => 0))
