/**
 * `MirrorCron` in an in-memory cluster (as `TestRunner` makes it) with the workflow's implementation, over real
 * HTTP to the emulator, into SQLite: each tick is a run of its own, named by the tick's time, and
 * runs one pass of the mirror; the mirror equals the Microapp.
 */
import { ClusterWorkflowEngine } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Cron, DateTime, Effect, HashMap, Layer, Logger, LogLevel, Option } from "effect"
import { SqlMirror } from "../src/sql/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { MicroappMirror, MirrorCron } from "../src/workflow/index.js"
import { freshSqlite } from "./sqlDatabases.js"
import { advanceUntil, withEmulator } from "./support.js"
import { inMemoryCluster } from "./support/cluster.js"

const table = "cron_rows"

/** The runs the workflow made, as its log lines name them: each slot and its outcome. */
const runs: Array<{ readonly slot: string; readonly message: string }> = []

const recording = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ annotations, message }) => {
    const slot = Option.getOrUndefined(HashMap.get(annotations, "slot"))
    if (typeof slot === "string") runs.push({ slot, message: String(message) })
  })
)

const cluster = MirrorCron.layer({
  // every two seconds: the seconds field first
  cron: Cron.unsafeParse("*/2 * * * * *"),
  mirrors: [{ microAppID: projectsMicroAppID, pageSize: 25, table }]
}).pipe(
  Layer.provideMerge(MicroappMirror.layer),
  Layer.provideMerge(ClusterWorkflowEngine.layer),
  Layer.provideMerge(inMemoryCluster(MirrorCron.shardingConfig(true)))
)

const mirrorDatabase = freshSqlite()

const all = cluster.pipe(
  Layer.provide(MicroappMirror.MirrorDatabase.layer(mirrorDatabase)),
  Layer.provideMerge(withEmulator({ demoRows: 120 }, { retry: false })),
  Layer.provideMerge(mirrorDatabase),
  Layer.provide(recording),
  Layer.provide(Logger.minimumLogLevel(LogLevel.Info))
)

describe("MirrorCron", () => {
  // on the test clock, moved to each wake-up in turn: the ticks two seconds apart come at once
  layer(all, { timeout: 60_000 })((it) => {
    it.effect("each tick is a run of its own, named by the tick's time, and runs one pass: the mirror equals the Microapp", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const passes = sql<{ pass: number; complete: number }>`SELECT pass, complete
          FROM ${sql(SqlMirror.passesTable)} WHERE row_table = ${table}`.pipe(
          Effect.map(([row]) => row),
          Effect.orElseSucceed(() => undefined)
        )
        const completed = Effect.sync(() =>
          runs.filter((run) => run.message === "MicroappMirror run complete").map((run) => run.slot)
        )
        yield* advanceUntil(Effect.map(completed, (slots) => slots.length >= 2))
        const slots = yield* completed
        expect(new Set(slots).size).toBe(slots.length)
        for (const slot of slots) {
          // a tick's time: on the cron's grid of two seconds
          expect(DateTime.toEpochMillis(DateTime.unsafeMake(slot)) % 2000).toBe(0)
        }
        // one pass a run: those complete, and perhaps the next tick's under way
        const row = yield* passes
        expect(row?.pass).toBeGreaterThanOrEqual(slots.length)
        expect(row?.pass).toBeLessThanOrEqual((yield* completed).length + 1)
        const server = yield* MicroappServer
        const expected = (yield* server.rows.table(projectsMicroAppID)).map((row) => String(row._id)).sort()
        const stored = yield* sql<{ row_id: string }>`SELECT row_id FROM ${sql(table)} ORDER BY row_id`
        expect(stored.map((row) => row.row_id)).toEqual(expected)
      }))
  })
})
