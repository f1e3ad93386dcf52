/**
 * The run's PostgreSQL helper itself: a server of its own here (the run's one stays untouched), which
 * answers on its URL, leaves nothing behind when stopped, and does not change how the run exits.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { postgresClient } from "./sqlDatabases.js"

describe("the test run's PostgreSQL", () => {
  it.live("answers on its URL; once stopped, its directory is gone and its port refuses", () =>
    Effect.gen(function*() {
      const before = process.listeners("beforeExit")
      const { startPostgres } = yield* Effect.promise(() => import("./postgres.js"))
      const server = yield* Effect.promise(startPostgres)
      // a beforeExit listener that calls process.exit(0) would make a failed run exit 0
      expect(process.listeners("beforeExit")).toEqual(before)
      const query = Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ one: number }>`SELECT 1 AS one`).pipe(
        Effect.provide(postgresClient(server.url))
      )
      expect(yield* query).toEqual([{ one: 1 }])
      expect(fs.existsSync(server.dir)).toBe(true)
      yield* Effect.promise(server.stop)
      expect(fs.existsSync(server.dir)).toBe(false)
      expect((yield* Effect.flip(query))._tag).toBe("SqlError")
    }))
})
