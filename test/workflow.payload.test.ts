/**
 * `MicroappMirror`'s payload, in an in-memory cluster (as `TestRunner` makes it) with the
 * workflow's implementation, over real HTTP to the emulator, into SQLite: a fleet's run sets
 * `view` and `deletes` (and every option of `SqlMirror.run` that is data) and they take effect; a
 * payload with an option out of its bounds is refused with `InvalidInput` before anything is sent;
 * the mirror database's failure keeps its `SqlError` as its cause, its password nowhere.
 */
import { ClusterWorkflowEngine, MessageStorage } from "@effect/cluster"
import { SqlClient, SqlError } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, FastCheck as FC, Layer, Schema } from "effect"
import { SqlMirror } from "../src/sql/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { MicroappMirror } from "../src/workflow/index.js"
import { freshSqlite } from "./sqlDatabases.js"
import { onTestClock, withEmulator } from "./support.js"
import { inMemoryCluster } from "./support/cluster.js"

const table = "fleet_rows"
const view = "fleet_projects"

const mirrorDatabase = freshSqlite()

const all = MicroappMirror.layer.pipe(
  Layer.provideMerge(ClusterWorkflowEngine.layer),
  Layer.provideMerge(inMemoryCluster()),
  Layer.provide(MicroappMirror.MirrorDatabase.layer(mirrorDatabase)),
  Layer.provideMerge(withEmulator({ demoRows: 120 }, { retry: false })),
  Layer.provideMerge(mirrorDatabase)
)

describe("MicroappMirror's payload", () => {
  layer(all, { timeout: 60_000 })((it) => {
    it.effect("a fleet's run with view and deletes set: the view is made, and deletes come without point reads", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const server = yield* MicroappServer
        const first = yield* onTestClock(
          MicroappMirror.execute({ microAppID: projectsMicroAppID, table, view, pageSize: 25, slot: "first" })
        )
        expect(first).toMatchObject({ inserted: 120, deleted: 0 })
        expect((yield* MessageStorage.MemoryDriver).journal.length).toBeGreaterThan(0)
        const viewed = yield* sql<Record<string, unknown>>`SELECT * FROM ${sql(view)}`
        expect(viewed).toHaveLength(120)
        // `_id` and the bookkeeping columns, and a typed column per field
        expect(Object.keys(viewed[0] ?? {}).length).toBeGreaterThan(4)
        const removed = (yield* server.rows.table(projectsMicroAppID)).slice(0, 3).map((row) => String(row._id))
        for (const id of removed) yield* server.rows.removeRow(id)
        const second = yield* onTestClock(
          MicroappMirror.execute({
            microAppID: projectsMicroAppID,
            table,
            view,
            pageSize: 25,
            deletes: "exhaustive",
            slot: "second"
          })
        )
        // "confirmed", the default, reads each candidate back before deleting it
        expect(second).toMatchObject({ deleted: 3, reads: 0, deletes: "reported" })
        expect(yield* sql`SELECT * FROM ${sql(view)}`).toHaveLength(117)
      }))

    it.effect("a payload with an option out of its bounds is refused with InvalidInput naming it, before anything is sent", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const sql = yield* SqlClient.SqlClient
        const before = (yield* server.log.requests).length
        // every message sent to the cluster, the executions' among them
        const { journal } = yield* MessageStorage.MemoryDriver
        const sent = journal.length
        const payload = { microAppID: projectsMicroAppID, table: "refused_rows", slot: "refused" }
        const refusals = [
          [{ ...payload, pageSize: 0 }, "pageSize"],
          [{ ...payload, maxDeletes: -1 }, "maxDeletes"],
          [{ ...payload, overlap: 1.5 }, "overlap"],
          [{ ...payload, checkpointEvery: {} }, "checkpointEvery"],
          [{ ...payload, table: "pg_rows" }, "table"],
          [{ ...payload, view: SqlMirror.passesTable }, "view"]
        ] as const
        for (const [refused, input] of refusals) {
          const error = yield* Effect.flip(MicroappMirror.execute(refused))
          expect(error).toMatchObject({ _tag: "InvalidInput", input })
        }
        expect(journal.length).toBe(sent)
        expect((yield* server.log.requests).length).toBe(before)
        expect(yield* sql`SELECT 1 FROM ${sql("refused_rows")}`.pipe(Effect.either)).toMatchObject({ _tag: "Left" })
      }))
  })
})

describe("MicroappMirror.checkPayload", () => {
  it.effect.prop(
    "a page size outside 1 to 10,000 is refused naming pageSize; one inside is taken",
    [FC.integer({ min: -100_000, max: 100_000 })],
    ([pageSize]) =>
      Effect.gen(function*() {
        const checked = yield* Effect.either(
          MicroappMirror.checkPayload({ microAppID: projectsMicroAppID, pageSize, slot: "s" })
        )
        if (pageSize >= 1 && pageSize <= 10_000) expect(checked).toMatchObject({ _tag: "Right", right: { pageSize } })
        else expect(checked).toMatchObject({ _tag: "Left", left: { _tag: "InvalidInput", input: "pageSize" } })
      })
  )
})

describe("MirrorDatabaseError", () => {
  it("keeps the SqlError as its cause; its message, and what crosses the wire, hold no password", () => {
    const url = "postgres://fleet:s3cret-word@db.internal:5432/fleet"
    const error = new SqlError.SqlError({
      message: "PgClient: Failed to connect",
      cause: new Error(`getaddrinfo ENOTFOUND for ${url}`)
    })
    const failed = MicroappMirror.MirrorDatabaseError.fromSqlError(error)
    expect(failed.cause).toBe(error)
    expect(failed.message).toBe(
      "PgClient: Failed to connect: getaddrinfo ENOTFOUND for postgres://fleet:***@db.internal:5432/fleet"
    )
    const encoded = JSON.stringify(Schema.encodeSync(MicroappMirror.MirrorError)(failed))
    expect(encoded).not.toContain("s3cret")
    expect(JSON.parse(encoded)).toMatchObject({
      _tag: "MirrorDatabaseError",
      cause: { message: "PgClient: Failed to connect" }
    })
  })

  it("ConcurrentRun and MirrorDatabaseError carry namespaced identifiers, as the package's other errors do", () => {
    expect(SqlMirror.ConcurrentRun.identifier).toBe("effect-microapp/sql/SqlMirror/ConcurrentRun")
    expect(MicroappMirror.MirrorDatabaseError.identifier).toBe(
      "effect-microapp/workflow/MicroappMirror/MirrorDatabaseError"
    )
  })
})
