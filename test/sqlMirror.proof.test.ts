/**
 * What may delete a row of a mirror, through `SqlMirror.run` and `microapp mirror`, on SQLite and
 * on a real PostgreSQL, against services that lie: no answer of the row endpoint but the service's
 * own `Row not found` deletes, a whole table left out of one listing deletes nothing, a server that
 * says "Row not found" of rows that exist deletes nothing, the delete guard stops a pass at its
 * bound before any delete reaches the table, and a point read answering another row stores nothing
 * under the id asked for.
 */
import { NodeHttpClient } from "@effect/platform-node"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlMirror } from "../src/sql/index.js"
import { cli } from "./cliSupport.js"
import {
  clientOf,
  lyingServer,
  type LyingService,
  rowNotFound,
  type ServiceRow,
  truthfully,
  truthfulService,
  unprovenAnswers
} from "./hostile.js"
import { databases, storedData } from "./sqlDatabases.js"

const microAppID = "000000000000000000000d02"

/** One pass of the mirror of `service` into `table`, its failure as a value. */
const mirror = (service: LyingService, table: string, options: Partial<SqlMirror.Options> = {}) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* lyingServer(service)
    return yield* Effect.either(
      SqlMirror.run({ microAppID, pageSize: 50, table, ...options }).pipe(
        Effect.provide(clientOf(server.baseUrl, NodeHttpClient.layerUndici, { retry: false }))
      )
    )
  }))

const mirrored = (service: LyingService, table: string, options: Partial<SqlMirror.Options> = {}) =>
  Effect.flatMap(
    mirror(service, table, options),
    (result) =>
      result._tag === "Left"
        ? Effect.dieMessage(`the pass failed: ${result.left.message}`)
        : Effect.succeed(result.right)
  )

/** The mirror's rows: each `row_id` with its data's `_id`. */
const stored = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ row_id: string; data: unknown }>`SELECT row_id, data FROM ${sql(table)} WHERE microapp_id = ${microAppID}`,
      (rows) => rows.map((row) => ({ id: row.row_id, dataId: (storedData(row.data) as ServiceRow)._id }))
    ))

const count = (table: string) => Effect.map(stored(table), (rows) => rows.length)

/** `service` with the rows at `indexes` left out of its listing. */
const hiding = (service: LyingService, indexes: ReadonlyArray<number>): LyingService => {
  const hidden = new Set(indexes.map((i) => service.rows[i]?._id))
  return { ...service, listed: (rows) => rows.filter((row) => !hidden.has(row._id)) }
}

for (const database of databases) {
  describe(database.name, () => {
    layer(database.layer(), { excludeTestServices: true })((it) => {
      it.effect("5 of 50 rows left out, each answer of the row endpoint but the service's own: none deleted", () =>
        Effect.gen(function*() {
          const service = truthfulService(50)
          yield* mirrored(service, "answers")
          for (const [name, answer] of unprovenAnswers) {
            const lying = hiding(service, [0, 7, 8, 30, 49])
            lying.answer = answer
            const summary = yield* mirrored(lying, "answers")
            expect(summary, name).toMatchObject({ deleted: 0, unconfirmed: 5, heldBack: 0, unchanged: 45 })
            expect(yield* count("answers"), name).toBe(50)
          }
        }))

      it.effect("the whole table left out of one listing: the copy keeps every row, whatever the row endpoint says", () =>
        Effect.gen(function*() {
          const service = truthfulService(200)
          yield* mirrored(service, "hidden")
          const empty: LyingService = { ...service, listed: () => [], answer: rowNotFound }
          expect(yield* mirrored(empty, "hidden")).toMatchObject({ deleted: 0, unconfirmed: 200, heldBack: 200 })
          expect(yield* count("hidden")).toBe(200)
          // exhaustive-only deletes read nothing: the guard keeps the copy
          const exhaustive = yield* mirror(service, "hidden_exhaustive", { deletes: "exhaustive" })
          expect(exhaustive._tag).toBe("Right")
          const stopped = yield* mirror(empty, "hidden_exhaustive", { deletes: "exhaustive" })
          // stopped at the first group of candidates past the bound
          expect(stopped).toMatchObject({
            _tag: "Left",
            left: { _tag: "TooManyDeletes", deletes: 150, copy: 150, atLeast: true }
          })
          expect(yield* count("hidden_exhaustive")).toBe(200)
        }))

      it.effect("a server that says \"Row not found\" of rows that exist: nothing deleted, the candidates held back", () =>
        Effect.gen(function*() {
          const service = truthfulService(50)
          yield* mirrored(service, "control")
          const lying = hiding(service, [1, 2, 3])
          lying.answer = rowNotFound
          expect(yield* mirrored(lying, "control")).toMatchObject({ deleted: 0, unconfirmed: 3, heldBack: 3 })
          expect(yield* count("control")).toBe(50)
          // rows truly gone are deleted by the next pass, whose control read finds a row
          service.rows = service.rows.slice(3)
          expect(yield* mirrored(service, "control")).toMatchObject({ deleted: 3, heldBack: 0 })
          expect(yield* count("control")).toBe(47)
        }))

      it.effect("the delete guard: at its bound the pass deletes, one past it the table keeps every row until allowed", () =>
        Effect.gen(function*() {
          const at = truthfulService(200)
          yield* mirrored(at, "guard_at")
          at.rows = at.rows.slice(100)
          expect(yield* mirrored(at, "guard_at")).toMatchObject({ deleted: 100 })
          expect(yield* count("guard_at")).toBe(100)

          const past = truthfulService(200)
          yield* mirrored(past, "guard_past")
          past.rows = past.rows.slice(101)
          const stopped = yield* mirror(past, "guard_past")
          expect(stopped).toMatchObject({
            _tag: "Left",
            left: { _tag: "TooManyDeletes", deletes: 101, copy: 200, allowed: 100 }
          })
          expect(yield* count("guard_past")).toBe(200)
          const sql = yield* SqlClient.SqlClient
          const recorded = yield* sql<{ n: number }>`SELECT count(*) AS n FROM ${
            sql(SqlMirror.deletesTableOf("guard_past"))
          }`
          expect(Number(recorded[0]?.n)).toBe(0)
          // the same again trips again; allowed, the pass in progress goes on and deletes
          expect(yield* mirror(past, "guard_past")).toMatchObject({ _tag: "Left", left: { _tag: "TooManyDeletes" } })
          expect(yield* mirrored(past, "guard_past", { maxDeletes: 101 })).toMatchObject({ deleted: 101 })
          expect(yield* count("guard_past")).toBe(99)
        }))

      it.effect("a row endpoint that answers row A for every id: no row stored under another id", () =>
        Effect.gen(function*() {
          const service = truthfulService(50)
          yield* mirrored(service, "other_row")
          const first = service.rows[0]
          const lying = hiding(service, [5, 6, 7, 8, 9])
          lying.answer = () =>
            HttpServerResponse.unsafeJson({ status: "success", body: { currentRow: { ...first, N: 999 } } })
          expect(yield* mirrored(lying, "other_row")).toMatchObject({ updated: 0, deleted: 0, unconfirmed: 5 })
          const rows = yield* stored("other_row")
          expect(rows).toHaveLength(50)
          expect(rows.filter((row) => row.id !== row.dataId)).toEqual([])
        }))

      it.scoped("microapp mirror: the closing line says what was held back, --max-deletes allows, the guard exits 1", () =>
        Effect.gen(function*() {
          const url = yield* database.url
          const service = truthfulService(200)
          const server = yield* lyingServer(service)
          const pass = (extra: ReadonlyArray<string>, base = server.baseUrl) =>
            cli([
              "mirror",
              microAppID,
              "--db",
              url,
              "--page-size",
              "50",
              ...extra,
              "--base-url",
              base,
              "--token",
              "t",
              "--user-id",
              "u"
            ])
          expect((yield* pass([])).code).toBe(0)
          service.listed = (rows) => rows.slice(4)
          service.answer = rowNotFound
          const held = yield* pass([])
          expect(held.code).toBe(0)
          expect(held.stderr).toMatch(
            /^done: inserted 0, updated 0, deleted 0, unchanged 196, confirmed 0 deletes with 4 reads, 4 unconfirmed, left for a later pass, 4 deletes of them held back: a control read of a row the pass saw did not find it, /
          )
          service.listed = (rows) => rows
          service.answer = truthfully
          service.rows = service.rows.slice(150)
          const guarded = yield* pass(["--max-deletes", "149"])
          expect(guarded.code).toBe(1)
          expect(guarded.stderr).toMatch(
            /^error: the pass of \S+ would delete 150 of the copy's 200 rows, more than maxDeletes \(149\); nothing was deleted/
          )
          const allowed = yield* pass(["--max-deletes", "150"])
          expect(allowed.stderr).toMatch(
            /^done: inserted 0, updated 0, deleted 150, unchanged 50, confirmed 150 deletes with 150 reads, /
          )
          expect((yield* pass(["--max-deletes", "-1"])).code).toBe(2)
          // a base URL with a path the service does not serve
          const wrong = yield* pass([], `${server.baseUrl}/api`)
          expect(wrong.code).toBe(2)
          expect(wrong.stderr).toContain(`no endpoint at ${server.baseUrl}/api/api/microappdata`)
        }))
    })
  })
}
