/**
 * The emulator's `/api/microappdata`: default cap, limits, filters, sorts, paging, serviceFormat.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import type { Row } from "../src/testing/index.js"
import { demoTables, MicroappServer, peopleMicroAppID, projectsMicroAppID } from "../src/testing/index.js"
import { ids, json, query, send, withServer } from "./emulatorSupport.js"
import { AnswerRow } from "./support.js"

const isCrossApp = Schema.is(Schema.Struct({
  crossAppRowID: Schema.String,
  value: Schema.Struct({ label: Schema.String, value: Schema.String })
}))

const numbers = (rows: ReadonlyArray<Row>, label: string): ReadonlyArray<number> =>
  rows.map((row) => Number(row[label]))

const isSortedBy = <A>(values: ReadonlyArray<A>, compare: (a: A, b: A) => number): boolean =>
  values.every((value, index) => {
    const previous = values[index - 1]
    return previous === undefined || compare(previous, value) <= 0
  })

describe("microappdata", () => {
  it.live("returns every row in natural order when only microAppID is sent (under the default limit)", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const rows = yield* query({})
      expect(ids(rows)).toEqual(ids(yield* server.rows.table(projectsMicroAppID)))
      expect(rows).toHaveLength(300)
    }).pipe(withServer()))

  it.live("caps silently at the default limit when no limit is sent", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const rows = yield* query({})
      const reply = yield* send("/api/microappdata", { microAppID: projectsMicroAppID })
      expect(rows).toHaveLength(1000)
      expect(Object.keys(Schema.decodeUnknownSync(Schema.parseJson(AnswerRow))(reply.text))).toEqual(["status", "body"])
      yield* server.configure({ defaultLimit: 120 })
      expect(yield* query({})).toHaveLength(120)
      expect(yield* query({ searchFilter: [{ resourceID: projectsMicroAppID, limit: 1100 }] })).toHaveLength(1100)
    }).pipe(withServer({ demoRows: 1200 })))

  it.live("clamps explicit limits silently at maxLimit", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      expect(yield* query({ searchFilter: [{ limit: 100 }] })).toHaveLength(40)
      expect(yield* query({ searchFilter: [{ limit: 10 }] })).toHaveLength(10)
      yield* server.configure({ maxLimit: undefined })
      expect(yield* query({ searchFilter: [{ limit: 100 }] })).toHaveLength(100)
    }).pipe(withServer({ maxLimit: 40 })))

  it.live("filters by fieldID; several filters AND together; values compare as strings", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const all = yield* server.rows.table(projectsMicroAppID)
      const rows = yield* query({
        optSearchFilters: [
          { resourceID: projectsMicroAppID, fieldID: "f_status", value: "Open" },
          { resourceID: projectsMicroAppID, fieldID: "f_priority", value: 5 }
        ]
      })
      const expected = all.filter((row) => row["Status"] === "Open" && row["Priority"] === 5)
      expect(expected.length).toBeGreaterThan(0)
      expect(ids(rows)).toEqual(ids(expected))
      const approved = yield* query({ optSearchFilters: [{ fieldID: "f_approved", value: "true" }] })
      expect(ids(approved)).toEqual(ids(all.filter((row) => row["Approved"] === true)))
      const asString = yield* query({ optSearchFilters: [{ fieldID: "f_priority", value: "5" }] })
      expect(ids(asString)).toEqual(ids(all.filter((row) => row["Priority"] === 5)))
    }).pipe(withServer()))

  it.live("matches a cross-application field by crossAppRowID and by its displayed value", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const all = yield* server.rows.table(projectsMicroAppID)
      const person = (yield* server.rows.table(peopleMicroAppID))[3]
      const byId = yield* query({ optSearchFilters: [{ fieldID: "f_owner", value: person?.["_id"] }] })
      const byName = yield* query({ optSearchFilters: [{ fieldID: "f_owner", value: person?.["Name"] }] })
      const expected = all.filter((row) => JSON.stringify(row["Owner"] ?? null).includes(String(person?.["_id"])))
      expect(expected.length).toBeGreaterThan(0)
      expect(ids(byId)).toEqual(ids(expected))
      expect(ids(byName)).toEqual(ids(expected))
    }).pipe(withServer()))

  it.live("rejects a filter with an unknown fieldID or another resourceID with 400", () =>
    Effect.gen(function*() {
      const unknown = yield* send("/api/microappdata", {
        microAppID: projectsMicroAppID,
        optSearchFilters: [{ resourceID: projectsMicroAppID, fieldID: "f_nope", value: "x" }]
      })
      const other = yield* send("/api/microappdata", {
        microAppID: projectsMicroAppID,
        optSearchFilters: [{ resourceID: peopleMicroAppID, fieldID: "f_status", value: "Open" }]
      })
      expect([unknown.status, other.status]).toEqual([400, 400])
      expect(json(unknown.text)).toMatchObject({ status: "error" })
    }).pipe(withServer()))

  it.live("sorts by each configured sort field, ascending and descending", () =>
    Effect.gen(function*() {
      const byNumber = (a: number, b: number) => a - b
      const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
      const budgetUp = yield* query({ searchFilter: [{ field: "2", order: 1 }] })
      const budgetDown = yield* query({ searchFilter: [{ field: "2", order: -1 }] })
      const nameDown = yield* query({ searchFilter: [{ field: "1", order: -1 }] })
      const dueUp = yield* query({ searchFilter: [{ field: "3" }] })
      expect(isSortedBy(numbers(budgetUp, "Budget"), byNumber)).toBe(true)
      expect(isSortedBy(numbers(budgetDown, "Budget"), (a, b) => b - a)).toBe(true)
      expect(isSortedBy(nameDown.map((row) => String(row["Name"])), (a, b) => byString(b, a))).toBe(true)
      expect(isSortedBy(dueUp.map((row) => String(row["Due"])), byString)).toBe(true)
      expect(nameDown[0]?.["Name"]).toBe("Project 0300")
    }).pipe(withServer()))

  it.live("keeps natural order among ties and sorts by several elements in turn", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const natural = ids(yield* server.rows.table(projectsMicroAppID))
      const position = (row: Row) => natural.indexOf(row["_id"])
      const byPriority = yield* query({ searchFilter: [{ field: "4", order: 1 }] })
      expect(
        isSortedBy(byPriority, (a, b) => Number(a["Priority"]) - Number(b["Priority"]) || position(a) - position(b))
      )
        .toBe(true)
      const twoKeys = yield* query({ searchFilter: [{ field: "4", order: -1 }, { field: "2", order: 1 }] })
      expect(
        isSortedBy(
          twoKeys,
          (a, b) => Number(b["Priority"]) - Number(a["Priority"]) || Number(a["Budget"]) - Number(b["Budget"])
        )
      ).toBe(true)
    }).pipe(withServer()))

  it.live("sorts cross-application values by their displayed value, missing values first", () =>
    Effect.gen(function*() {
      const names = (rows: ReadonlyArray<Row>) =>
        rows.map((row) => (isCrossApp(row["Owner"]) ? row["Owner"].value.value : null))
      const up = names(yield* query({ searchFilter: [{ field: "5", order: 1 }] }))
      const down = names(yield* query({ searchFilter: [{ field: "5", order: -1 }] }))
      const missing = up.filter((name) => name === null).length
      expect(missing).toBeGreaterThan(0)
      expect(up.slice(0, missing).every((name) => name === null)).toBe(true)
      expect(isSortedBy(up.slice(missing).map(String), (a, b) => (a < b ? -1 : a > b ? 1 : 0))).toBe(true)
      expect(down.slice(-missing).every((name) => name === null)).toBe(true)
    }).pipe(withServer({
      tables: demoTables({ projectRows: 120 }).map((table) =>
        table.microAppID === projectsMicroAppID ? { ...table, sortFields: [...table.sortFields, "Owner"] } : table
      )
    })))

  it.live("rejects an unconfigured sort field or a bad order with 400", () =>
    Effect.gen(function*() {
      const field = yield* send("/api/microappdata", { microAppID: projectsMicroAppID, searchFilter: [{ field: "9" }] })
      const order = yield* send("/api/microappdata", {
        microAppID: projectsMicroAppID,
        searchFilter: [{ field: "1", order: 2 }]
      })
      expect([field.status, order.status]).toEqual([400, 400])
    }).pipe(withServer()))

  it.live("accepts skip as a numeric string or a number, and limit; rejects bad counts", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const natural = ids(yield* server.rows.table(projectsMicroAppID))
      const asString = yield* query({ searchFilter: [{ resourceID: projectsMicroAppID, skip: "20", limit: 10 }] })
      const asNumber = yield* query({ searchFilter: [{ skip: 20, limit: "10" }] })
      expect(ids(asString)).toEqual(natural.slice(20, 30))
      expect(ids(asNumber)).toEqual(ids(asString))
      const bad = yield* Effect.forEach(
        [{ skip: "abc" }, { skip: -1 }, { skip: "1.5" }, { limit: 2.5 }, { limit: "-3" }],
        (element) => send("/api/microappdata", { microAppID: projectsMicroAppID, searchFilter: [element] })
      )
      expect(bad.map((reply) => reply.status)).toEqual([400, 400, 400, 400, 400])
    }).pipe(withServer()))

  it.live("applies sort and paging given together in one element", () =>
    Effect.gen(function*() {
      const sorted = yield* query({ searchFilter: [{ field: "2", order: -1, limit: 300 }] })
      const page = yield* query({ searchFilter: [{ field: "2", order: -1, skip: "10", limit: 5 }] })
      expect(ids(page)).toEqual(ids(sorted).slice(10, 15))
      const split = yield* query({ searchFilter: [{ field: "2", order: -1 }, { skip: 10, limit: 5 }] })
      expect(ids(split)).toEqual(ids(page))
    }).pipe(withServer()))

  it.live("filters, then sorts, then pages", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const open = (yield* server.rows.table(projectsMicroAppID)).filter((row) => row["Status"] === "Open")
      const expected = [...open].sort((a, b) => Number(a["Budget"]) - Number(b["Budget"])).slice(3, 8)
      const rows = yield* query({
        optSearchFilters: [{ fieldID: "f_status", value: "Open" }],
        searchFilter: [{ field: "2", order: 1, skip: "3", limit: 5 }]
      })
      expect(ids(rows)).toEqual(ids(expected))
    }).pipe(withServer()))

  it.live("answers 400 for a missing microAppID or bad JSON and 404 for an unknown Microapp", () =>
    Effect.gen(function*() {
      const missing = yield* send("/api/microappdata", {})
      const badJson = yield* send("/api/microappdata", undefined, { rawBody: "{\"microAppID\":" })
      const unknown = yield* send("/api/microappdata", { microAppID: "f".repeat(24) })
      expect([missing.status, badJson.status, unknown.status]).toEqual([400, 400, 404])
      expect(json(unknown.text)).toEqual({ status: "error", message: "Microapp not found" })
      expect(json(missing.text)).toMatchObject({ status: "error", message: expect.stringContaining("microAppID") })
    }).pipe(withServer()))

  it.live("serviceFormat answers raw text: one JSON row per line, not a JSON document", () =>
    Effect.gen(function*() {
      const rows = yield* query({ searchFilter: [{ limit: 7 }] })
      const raw = yield* send("/api/microappdata", {
        microAppID: projectsMicroAppID,
        serviceFormat: true,
        searchFilter: [{ limit: 7 }]
      })
      expect(raw.status).toBe(200)
      expect(raw.contentType).toBe("text/plain; charset=utf-8")
      const lines = raw.text.split("\n")
      expect(lines.map((line) => json(line))).toEqual(rows)
      expect(Either.isLeft(Schema.decodeUnknownEither(Schema.parseJson())(raw.text))).toBe(true)
    }).pipe(withServer()))
})
