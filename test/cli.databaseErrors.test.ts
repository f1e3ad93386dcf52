/**
 * A database that cannot be used, in the driver's own words: `microapp mirror` against the run's
 * real PostgreSQL with nothing listening, an unknown role, a missing database, a wrong password and
 * TLS the server does not offer, and against SQLite files it cannot open, write or read; the
 * fleet's `MirrorDatabaseError` from the same failures. The URL's password is never printed.
 */
import { SqlClient } from "@effect/sql"
import { LibsqlClient } from "@effect/sql-libsql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { inject } from "vitest"
import { SqlMirror } from "../src/sql/index.js"
import { MicroappServer } from "../src/testing/index.js"
import { MicroappMirror } from "../src/workflow/index.js"
import { cli, expectFailure, flags } from "./cliSupport.js"
import { freshPostgresUrl, postgresClient } from "./sqlDatabases.js"
import { numbersTable, withEmulator } from "./support.js"
import { freePort } from "./support/ports.js"

const numbers = "000000000000000000000c02"
const password = "s3cret-not-printed"

/** The run's PostgreSQL URL with one part changed. */
const postgresWith = (change: (url: URL) => void): string => {
  const url = new URL(inject("postgresUrl"))
  change(url)
  return url.href
}

/** What `mirror` prints for `--db url`: exit 1, one line, no password. */
const mirrorFails = (db: string, secret: string) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const run = yield* cli(["mirror", numbers, "--db", db, ...flags(server)])
    expectFailure(run, 1, [secret])
    return run.stderr
  })

describe("a database that cannot be used, in the driver's words", () => {
  layer(withEmulator({ tables: [numbersTable(numbers, 20)] }), { excludeTestServices: true })((it) => {
    it.effect("PostgreSQL: nothing listening, unknown role, missing database, wrong password, no TLS", () =>
      Effect.gen(function*() {
        const real = new URL(inject("postgresUrl"))
        const port = yield* Effect.promise(freePort)
        const refused = yield* mirrorFails(
          postgresWith((url) => {
            url.port = String(port)
            url.password = password
          }),
          password
        )
        expect(refused).toBe(
          `error: the database: PgClient: Failed to connect: connect ECONNREFUSED 127.0.0.1:${port}\n`
        )

        // with password authentication the server answers an unknown role as a wrong password: it never says which roles exist
        const role = yield* mirrorFails(postgresWith((url) => url.username = "nobody"), real.password)
        expect(role).toBe(
          `error: the database: PgClient: Failed to connect: password authentication failed for user "nobody" (28P01)\n`
        )
        const wrong = yield* mirrorFails(postgresWith((url) => url.password = password), password)
        expect(wrong).toBe(
          `error: the database: PgClient: Failed to connect: password authentication failed for user "postgres" (28P01)\n`
        )
        const database = yield* mirrorFails(postgresWith((url) => url.pathname = "/no_such_copy"), real.password)
        expect(database).toBe(
          `error: the database: PgClient: Failed to connect: database "no_such_copy" does not exist (3D000)\n`
        )
        const tls = yield* mirrorFails(postgresWith((url) => url.search = "?sslmode=require"), real.password)
        expect(tls).toBe(
          `error: the database: PgClient: Failed to connect: The server does not support SSL connections\n`
        )
      }))

    it.effect("SQLite: a path it cannot open, a file that is not a database, a read-only file", () =>
      Effect.gen(function*() {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "microapp-db-errors-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
        fs.mkdirSync(path.join(dir, "a-folder"))
        expect(yield* mirrorFails(`file:${path.join(dir, "a-folder")}`, password)).toBe(
          `error: the database: cannot open it: ConnectionFailed("Unable to open connection to local database ${
            path.join(dir, "a-folder")
          }: 14")\n`
        )
        fs.writeFileSync(path.join(dir, "notes.txt"), "these are notes, not a database\n".repeat(100))
        expect(yield* mirrorFails(`file:${path.join(dir, "notes.txt")}`, password)).toMatch(
          /^error: the database: .*SQLITE_NOTADB: file is not a database/
        )
        expect(fs.readFileSync(path.join(dir, "notes.txt"), "utf8")).toMatch(/^these are notes/)
      }).pipe(Effect.scoped))

    // root writes through a file's mode: only a read-only mount refuses it
    it.effect.skipIf(process.getuid?.() !== 0)(
      "SQLite: a database on a read-only file system",
      () =>
        Effect.gen(function*() {
          const dir = fs.mkdtempSync(path.join(os.tmpdir(), "microapp-db-readonly-"))
          const [written, readOnly] = [path.join(dir, "written"), path.join(dir, "read-only")]
          fs.mkdirSync(written)
          fs.mkdirSync(readOnly)
          yield* Effect.provide(
            Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE t (x INTEGER)`),
            LibsqlClient.layer({ url: `file:${path.join(written, "copy.db")}` })
          )
          // a read-only view of the folder: the file the driver may still hold open stays writable where it was written
          execFileSync("mount", ["--bind", written, readOnly])
          yield* Effect.addFinalizer(() =>
            Effect.sync(() => {
              execFileSync("umount", ["-l", readOnly])
              fs.rmSync(dir, { recursive: true, force: true })
            })
          )
          execFileSync("mount", ["-o", "remount,ro,bind", readOnly])
          const db = `file:${path.join(readOnly, "copy.db")}`
          expect(yield* mirrorFails(db, password)).toMatch(/^error: the database: .*SQLITE_READONLY/)
        }).pipe(Effect.scoped)
    )
  })

  layer(Layer.empty)((it) => {
    it.effect("the fleet's MirrorDatabaseError says why, the password hidden", () =>
      Effect.gen(function*() {
        const url = postgresWith((url) => url.pathname = "/no_such_fleet")
        const error = yield* Effect.flip(Layer.build(postgresClient(url)).pipe(Effect.scoped))
        const failed = MicroappMirror.MirrorDatabaseError.fromSqlError(error)
        expect(failed.message).toBe(`PgClient: Failed to connect: database "no_such_fleet" does not exist (3D000)`)
        expect(SqlMirror.describeError({ message: "failed", cause: new Error(`no route to ${url}`) })).not.toContain(
          new URL(url).password
        )
      }))
  })
})

describe("a mirror of a Microapp that does not exist", () => {
  layer(withEmulator({ tables: [numbersTable(numbers, 20)] }), { excludeTestServices: true })((it) => {
    it.effect("exit 4 before the database is opened: no SQLite file, no table, no pass left open", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const unknown = "ffffffffffffffffffffffff"
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "microapp-unknown-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
        const sqlite = yield* cli(["mirror", unknown, "--db", `file:${path.join(dir, "copy.db")}`, ...flags(server)])
        expectFailure(sqlite, 4, [])
        expect(fs.readdirSync(dir)).toEqual([])

        const url = yield* freshPostgresUrl
        expectFailure(yield* cli(["mirror", unknown, "--db", url, ...flags(server)]), 4, [])
        const tables = yield* Effect.provide(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) =>
              sql<
                { name: string }
              >`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`
          ),
          postgresClient(url)
        )
        expect(tables).toEqual([])

        // the id corrected, the same database takes the pass and completes it
        expect((yield* cli(["mirror", numbers, "--db", url, "--quiet", ...flags(server)])).code).toBe(0)
        const passes = yield* Effect.provide(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql<{ microapp_id: string; complete: number }>`SELECT microapp_id, complete FROM microapp_passes`
          ),
          postgresClient(url)
        )
        expect(passes).toEqual([{ microapp_id: numbers, complete: 1 }])
      }).pipe(Effect.scoped))
  })
})
