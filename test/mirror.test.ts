/**
 * Mirrors on a real database, under faults and drift, stopped at random pages, then run again: the
 * table holds every row that stood through the scan, once. The README's pipeline (`pipeline.ts`
 * with `sqliteSink.ts`) is interrupted in process; `scratchpad/mirrorSqlite.ts` (`SqlMirror.run`
 * on SQLite) is a child process killed with SIGKILL.
 */
import { SqlClient } from "@effect/sql"
import { LibsqlClient } from "@effect/sql-libsql"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Random } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { mirror } from "../scratchpad/pipeline.js"
import { sqliteSink } from "../scratchpad/sqliteSink.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { untilRequests } from "./cliSupport.js"
import { bundled, cleanEnv, drift, drifted, killedFiveTimes, modifiedAt, scanFaults } from "./processSupport.js"
import { withEmulator } from "./support.js"
import { eventually } from "./support/eventually.js"

/** When a SQLite database in WAL mode last committed (ms): its file or its write-ahead log, whichever changed last. */
const committedTo = (database: string): Effect.Effect<number> =>
  Effect.zipWith(modifiedAt(database), modifiedAt(`${database}-wal`), Math.max)

const databaseIn = Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "microapp-mirror-test-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  ),
  (dir) => path.join(dir, "mirror.db")
)

/** The ids in the mirror's table, with the checkpoint stored beside them. */
const stored = (database: string) =>
  Effect.gen(function*() {
    yield* sqliteSink(projectsMicroAppID) // the tables, if no run has made them yet
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ row_id: string }>`SELECT row_id FROM microapp_rows`
    const [checkpoint] = yield* sql<{ checkpoint: string }>`SELECT checkpoint FROM microapp_checkpoints`
    return { ids: rows.map((row) => row.row_id), checkpoint: checkpoint?.checkpoint }
  }).pipe(Effect.provide(LibsqlClient.layer({ url: `file:${database}` })))

/** The ids `SqlMirror.run` holds in its table. */
const mirroredIds = (database: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ row_id: string }>`SELECT row_id FROM microapp_rows`).pipe(
    Effect.map((rows) => rows.map((row) => row.row_id)),
    Effect.provide(LibsqlClient.layer({ url: `file:${database}` }))
  )

/** Every id that stood in the table from `original` on, not in `removed`, is among `ids`, once. */
const expectEveryRowOnce = (ids: ReadonlyArray<string>, original: ReadonlyArray<string>, removed: Set<string>) => {
  expect(new Set(ids).size).toBe(ids.length)
  const present = new Set(ids)
  expect(original.filter((id) => !removed.has(id) && !present.has(id))).toEqual([])
}

describe("the SQLite mirror", () => {
  it.live(
    "interrupted at a random page three times, under faults and drift, then run to its end",
    () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const database = yield* databaseIn
        const original = (yield* server.rows.table(projectsMicroAppID)).map((row) => String(row._id))
        const touched = drifted()
        yield* server.configure({ latency: Duration.millis(10), faults: scanFaults })
        const drifting = yield* Effect.fork(drift(server, projectsMicroAppID, touched))
        // each run opens the database anew, as a restarted process does
        const run = Effect.flatMap(sqliteSink(projectsMicroAppID), (sink) => mirror(projectsMicroAppID, sink)).pipe(
          Effect.provide(LibsqlClient.layer({ url: `file:${database}` }))
        )
        const committed: Array<number> = []
        for (let stop = 0; stop < 3; stop++) {
          const seen = (yield* server.log.requests).length
          const before = (yield* stored(database)).ids.length
          const running = yield* Effect.fork(run)
          // stopped once a page more is committed, a few requests later: mid-page or mid-commit
          yield* eventually(Effect.map(stored(database), ({ ids }) => ids.length), (rows) => rows > before)
          yield* untilRequests(server, seen + (yield* Random.nextIntBetween(1, 8)))
          yield* Fiber.interrupt(running)
          committed.push((yield* stored(database)).ids.length)
        }
        const summary = yield* run
        yield* Fiber.interrupt(drifting)
        const { checkpoint, ids } = yield* stored(database)
        expectEveryRowOnce(ids, original, touched.removed)
        expect(summary.rows).toBe(ids.length)
        expect(summary.complete).toBe(true)
        expect(committed.every((rows) => rows > 0 && rows < ids.length)).toBe(true)
        expect(summary.resumed).toBe(3)
        expect(checkpoint).toBeDefined()
      }).pipe(
        Effect.scoped,
        Effect.provide(withEmulator({ demoRows: 1200 }, { pageSize: 20 }))
      ),
    60_000
  )

  // 2,400 rows: long enough that a run killed only once the database has moved has pages left
  it.live(
    "as a process killed with SIGKILL five times at random moments, under faults and drift",
    () =>
      Effect.gen(function*() {
        const program = bundled("mirrorSqlite.ts", "mirror")
        const server = yield* MicroappServer
        const database = yield* databaseIn
        const original = (yield* server.rows.table(projectsMicroAppID)).map((row) => String(row._id))
        const touched = drifted()
        yield* server.configure({ latency: Duration.millis(10), faults: scanFaults })
        const drifting = yield* Effect.fork(drift(server, projectsMicroAppID, touched))
        const last = yield* killedFiveTimes(server, () =>
          spawn(process.execPath, [program, database, projectsMicroAppID, "20"], {
            env: {
              ...cleanEnv,
              MICROAPP_BASE_URL: server.baseUrl,
              MICROAPP_AUTH_TOKEN: server.credentials.authToken,
              MICROAPP_USER_ID: server.credentials.userId
            },
            stdio: "pipe"
          }), committedTo(database))
        yield* Fiber.interrupt(drifting)
        expect(last.code, last.stderr).toBe(0)
        const ids = yield* mirroredIds(database)
        expectEveryRowOnce(ids, original, touched.removed)
        // a first pass: every row inserted; a pass that was not exhaustive deleted none it had
        expect(last.stdout).toMatch(
          new RegExp(
            `: ${ids.length} rows of ${projectsMicroAppID} in \\d+ pages \\(inserted ${ids.length}, updated 0, ` +
              `deleted 0, unchanged 0\\), resumed: [1-5],`
          )
        )
      }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ demoRows: 2400 }))),
    120_000
  )
})
