/**
 * The emulator bounds every input a request sends: past a bound the answer is 400 (413 for the
 * body), the emulator keeps serving, and its request log keeps the most recent requests only.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schema, TestClock } from "effect"
import { MicroappServer, projectsMicroAppID, type Row } from "../src/testing/index.js"
import * as RequestLog from "../src/testing/internal/requestLog.js"
import { send, withServer } from "./emulatorSupport.js"
import { RowsAnswer, taskID, tasksMicroAppID, tasksTable } from "./support.js"

const query = (body: Record<string, unknown>) => send("/api/microappdata", { microAppID: projectsMicroAppID, ...body })

/** A normal query still answers with rows. */
const stillServing = Effect.gen(function*() {
  const answer = yield* query({ searchFilter: [{ field: 1, order: 1, limit: 3 }] })
  expect(answer.status).toBe(200)
  expect(Schema.decodeUnknownSync(Schema.parseJson(RowsAnswer))(answer.text).body.microAppRows).toHaveLength(3)
})

const expectRefused = (answer: { readonly status: number; readonly text: string }, message: string) => {
  expect(answer.status).toBe(400)
  expect(answer.text).toContain(message)
}

/** A value of `depth` nested arrays, as JSON text. */
const nested = (depth: number): string => "[".repeat(depth) + "\"deep\"" + "]".repeat(depth)

describe("the emulator bounds each input of a request", () => {
  it.live("20,000 sort elements (a 440 KB body) are answered 400, and the emulator goes on", () =>
    Effect.gen(function*() {
      const sorts = Array.from({ length: 20_000 }, (_, i) => ({ field: 1 + (i % 4), order: 1 }))
      expect(JSON.stringify(sorts).length).toBeGreaterThan(400_000)
      expectRefused(yield* query({ searchFilter: sorts }), "searchFilter: more than 64 sort elements")
      yield* stillServing
    }).pipe(withServer()))

  it.live("64 sort elements naming the same fields sort as the first use of each", () =>
    Effect.gen(function*() {
      const many = Array.from({ length: 63 }, (_, i) => ({ field: 1 + (i % 2), order: i % 4 < 2 ? -1 : 1 }))
      const once = [{ field: 1, order: -1 }, { field: 2, order: -1 }]
      const rows = (answer: { readonly text: string }) =>
        Schema.decodeUnknownSync(Schema.parseJson(RowsAnswer))(answer.text).body.microAppRows.map((row) => row["_id"])
      const manyAnswer = yield* query({ searchFilter: [...many, { limit: 50 }] })
      expect(manyAnswer.status).toBe(200)
      expect(rows(manyAnswer)).toEqual(rows(yield* query({ searchFilter: [...once, { limit: 50 }] })))
    }).pipe(withServer()))

  it.live("more than 256 filters, a long filter value or a long id are answered 400", () =>
    Effect.gen(function*() {
      const filter = { fieldID: "f_status", value: "Open" }
      expect((yield* query({ optSearchFilters: Array.from({ length: 256 }, () => filter) })).status).toBe(200)
      expectRefused(
        yield* query({ optSearchFilters: Array.from({ length: 257 }, () => filter) }),
        "optSearchFilters: more than 256 filters"
      )
      expectRefused(
        yield* query({ optSearchFilters: [{ fieldID: "f_status", value: "x".repeat(4097) }] }),
        "text longer than 4096 characters"
      )
      expectRefused(yield* query({ microAppID: "6".repeat(257) }), "microAppID: id longer than 256 characters")
      expectRefused(yield* send("/api/microappdata/row", { rowID: "6".repeat(257) }), "rowID: id longer than 256")
      expectRefused(
        yield* send("/api/login", { email: "e".repeat(5000), password: "p" }),
        "email: text longer than 4096 characters"
      )
      yield* stillServing
    }).pipe(withServer()))

  it.live("skip and limit beyond the largest safe integer are answered 400", () =>
    Effect.gen(function*() {
      expectRefused(yield* query({ searchFilter: [{ limit: "99999999999999999999" }] }), "searchFilter.0.limit")
      expectRefused(yield* query({ searchFilter: [{ skip: 2 ** 53 }] }), "searchFilter.0.skip")
      const huge = yield* query({ searchFilter: [{ skip: "0", limit: Number.MAX_SAFE_INTEGER }] })
      expect(huge.status).toBe(200)
    }).pipe(withServer()))

  it.live("a body nested deeper than 32 levels, anywhere, is answered 400 without echoing it", () =>
    Effect.gen(function*() {
      const routes = [
        "/api/microappdata",
        "/api/microappdata/row",
        "/api/updatemicroapprow",
        "/api/insertmicroapprow",
        "/api/removemicroapprow",
        "/api/login"
      ]
      for (const route of routes) {
        for (const depth of [2_000, 5_000]) {
          for (const body of [nested(depth), `{"rowID":${nested(depth)},"microAppID":${nested(depth)}}`]) {
            const answer = yield* send(route, undefined, { rawBody: body })
            expectRefused(answer, "nested deeper than 32 levels")
            expect(answer.text.length, `${route} ${depth}`).toBeLessThan(400)
          }
        }
      }
      yield* stillServing
    }).pipe(withServer()))

  it.live("an update or insert with more than 256 keys, or a value nested deeper than 32, is answered 400", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const manyKeys = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`k${i}`, i]))
      expectRefused(
        yield* send("/api/updatemicroapprow", { rowID: taskID(0), rowData: manyKeys }),
        "rowData: more than 256 keys"
      )
      expect(
        (yield* send("/api/updatemicroapprow", undefined, {
          rawBody: `{"rowID":"${taskID(0)}","rowData":{"Tags":${nested(31)}}}`
        })).status
      )
        .toBe(200)
      // deep enough that serializing the row again would overflow the stack: every later read would fail
      expectRefused(
        yield* send("/api/updatemicroapprow", undefined, {
          rawBody: `{"rowID":"${taskID(1)}","rowData":{"Tags":${nested(200_000)}}}`
        }),
        "rowData: a value nested deeper than 32 levels"
      )
      expectRefused(
        yield* send("/api/insertmicroapprow", undefined, {
          rawBody: `{"microAppID":"${tasksMicroAppID}","rowData":{"Tags":${nested(33)}}}`
        }),
        "rowData: a value nested deeper than 32 levels"
      )
      const read = yield* send("/api/microappdata", { microAppID: tasksMicroAppID })
      expect(read.status).toBe(200)
      expect((yield* server.rows.table(tasksMicroAppID)).map((row) => row["Tags"] === undefined)).toEqual([
        false,
        true,
        true
      ])
    }).pipe(withServer({ tables: [tasksTable(3)] })))

  it.live("a body past 1 MiB is answered 413", () =>
    Effect.gen(function*() {
      const answer = yield* query({ padding: "x".repeat(1024 * 1024) })
      expect(answer.status).toBe(413)
      yield* stillServing
    }).pipe(withServer()))
})

describe("the request log keeps the most recent requests", () => {
  const arriving = (body: string): RequestLog.Arriving => ({
    method: "POST",
    path: "/api/microappdata",
    body,
    authorized: true,
    latency: Duration.zero,
    fault: () => undefined
  })

  it.effect("a ring of its capacity, with a count of those dropped, both restarted by clear", () =>
    Effect.gen(function*() {
      const log = yield* RequestLog.makeWithCapacity(3)
      for (let i = 0; i < 5; i++) {
        const arrival = yield* log.begin(arriving(JSON.stringify({ i })))
        yield* arrival.complete({ status: 200 })
        yield* arrival.end
      }
      const records = yield* log.requests
      expect(records.map((record) => [record.seq, record.body])).toEqual([[2, { i: 2 }], [3, { i: 3 }], [4, { i: 4 }]])
      expect(yield* log.dropped).toBe(2)
      yield* log.clear
      expect(yield* log.requests).toEqual([])
      expect(yield* log.dropped).toBe(0)
      expect((yield* log.begin(arriving("{}"))).record.seq).toBe(0)
    }))

  it.effect("a body longer than maxLoggedBodyLength is logged as its length; the hook still sees it parsed", () =>
    Effect.gen(function*() {
      const log = yield* RequestLog.make
      expect(log.capacity).toBe(RequestLog.defaultCapacity)
      const long = JSON.stringify({ padding: "x".repeat(RequestLog.maxLoggedBodyLength) })
      const arrival = yield* log.begin(arriving(long))
      expect(arrival.record.body).toEqual({ padding: "x".repeat(RequestLog.maxLoggedBodyLength) })
      expect((yield* log.requests)[0]?.body).toBe(`<${long.length} characters not kept>`)
    }))

  it.live("the emulator's log holds requestLogSize requests", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      for (let i = 0; i < 5; i++) yield* query({ searchFilter: [{ skip: i, limit: 1 }] })
      const records = yield* server.log.requests
      expect(records.map((record) => record.body)).toEqual([2, 3, 4].map((skip) => ({
        microAppID: projectsMicroAppID,
        searchFilter: [{ skip, limit: 1 }]
      })))
      expect(yield* server.log.dropped).toBe(2)
    }).pipe(withServer({ requestLogSize: 3 })))
})

describe("churn: rows inserted, updated and deleted at a steady rate on Effect's clock", () => {
  const churning = (seed: number) =>
    MicroappServer.layer({ tables: [tasksTable(30)], churn: { microAppID: tasksMicroAppID, perSecond: 10, seed } })

  /** The table after `millis` of churn, and what changed: ids inserted, ids removed, updates applied. */
  const after = (millis: number) =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const before = new Set((yield* server.rows.table(tasksMicroAppID)).map((row) => String(row["_id"])))
      yield* TestClock.adjust(Duration.millis(millis))
      const table = yield* server.rows.table(tasksMicroAppID)
      const ids = new Set(table.map((row) => String(row["_id"])))
      const updates = Array.from((yield* server.rows.appliedUpdates).values()).reduce((sum, n) => sum + n, 0)
      return {
        table,
        inserted: [...ids].filter((id) => !before.has(id)).length,
        removed: [...before].filter((id) => !ids.has(id)).length,
        updates
      }
    })

  it.effect("nothing before the first interval; at most ten changes a second, of all three kinds", () =>
    Effect.gen(function*() {
      const early = yield* after(99)
      expect([early.inserted, early.removed, early.updates]).toEqual([0, 0, 0])
      const second = yield* after(901)
      expect(second.inserted + second.removed + second.updates).toBeGreaterThan(0)
      expect(second.inserted + second.removed + second.updates).toBeLessThanOrEqual(10)
      const tenSeconds = yield* after(9_000)
      expect(tenSeconds.inserted).toBeGreaterThan(0)
      expect(tenSeconds.removed).toBeGreaterThan(0)
      expect(tenSeconds.updates).toBeGreaterThan(0)
    }).pipe(Effect.provide(churning(3))))

  it.effect("the same seed makes the same changes", () =>
    Effect.gen(function*() {
      const once = yield* Effect.provide(after(5_000), churning(7))
      const again = yield* Effect.provide(after(5_000), churning(7))
      const other = yield* Effect.provide(after(5_000), churning(8))
      // the second run starts later on the clock: its inserted rows were submitted later
      const timeless = (table: ReadonlyArray<Row>) =>
        table.map(({ clientSubmitted: _, submitted: __, ...rest }) => rest)
      expect(timeless(again.table)).toEqual(timeless(once.table))
      expect(timeless(other.table)).not.toEqual(timeless(once.table))
    }))
})
