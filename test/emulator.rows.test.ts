/**
 * The emulator's rows: one row, demo rows, updates by label, locks, inserts and removals, test controls.
 */
import { describe, expect, it } from "@effect/vitest"
import { DateTime, Effect, FastCheck, Option, Schema } from "effect"
import { Row } from "../src/index.js"
import { demoCredentials, makeProjectRows, MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { clientSubmittedAt } from "../src/testing/internal/table.js"
import { json, query, send, withServer } from "./emulatorSupport.js"
import { CurrentRowAnswer } from "./support.js"

const decodeCurrentRow = Schema.decodeUnknownSync(Schema.parseJson(CurrentRowAnswer))

const decodeInserted = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
  status: Schema.Literal("success"),
  body: Schema.Struct({ rowID: Schema.String })
})))

describe("rows", () => {
  it.live("returns one row as currentRow, 404 for an unknown row, 400 without rowID", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const row = (yield* server.rows.table(projectsMicroAppID))[5]
      const found = yield* send("/api/microappdata/row", { rowID: row?.["_id"] })
      expect(decodeCurrentRow(found.text).body.currentRow).toEqual(row)
      const missing = yield* send("/api/microappdata/row", { rowID: "0".repeat(24) })
      expect(missing.status).toBe(404)
      expect(json(missing.text)).toEqual({ status: "error", message: "Row not found" })
      expect((yield* send("/api/microappdata/row", {})).status).toBe(400)
    }).pipe(withServer()))

  it("demo rows carry the documented metadata and are deterministic", () => {
    const rows = makeProjectRows(400)
    expect(rows).toEqual(makeProjectRows(400))
    for (const row of rows) {
      expect(row["_id"]).toMatch(/^[0-9a-f]{24}$/)
      expect(typeof row["submitted"]).toBe("number")
      const match = /^(\d{4})-(\d{2})-(\d{2}) \((\d{2}):(\d{2}):(\d{2})\) ([+-])(\d{2})(\d{2})$/.exec(
        String(row["clientSubmitted"])
      )
      expect(match).not.toBeNull()
      const [, y, mo, d, h, mi, s, sign, oh, om] = match ?? []
      const offset = (sign === "-" ? -1 : 1) * (Number(oh) * 60 + Number(om))
      const utc = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)) - offset * 60_000
      expect(utc).toBe(Math.floor(Number(row["submitted"]) / 1000) * 1000)
    }
    expect(rows.filter((row) => row["isLocked"] === true).length).toBeGreaterThan(0)
    expect(rows.filter((row) => row["Owner"] === undefined).length).toBeGreaterThan(0)
    expect(rows.some((row) => row["deviceID"] === null) && rows.some((row) => typeof row["deviceID"] === "string"))
      .toBe(true)
    expect(rows[0]?.["Site"]).toMatchObject({ address: { geometry: { type: "point" } } })
    expect(clientSubmittedAt(Date.UTC(2021, 2, 1, 4, 34, 49), 660)).toBe("2021-03-01 (15:34:49) +1100")
  })

  it.prop(
    "a demo row's clientSubmitted is the text Row.formatClientSubmitted gives for the same instant and offset",
    [
      FastCheck.integer({ min: 0, max: Date.UTC(2100, 0, 1) }),
      FastCheck.integer({ min: -12 * 60, max: 14 * 60 })
    ],
    ([submitted, offsetMinutes]) => {
      const zoned = DateTime.unsafeMakeZoned(submitted, { timeZone: DateTime.zoneMakeOffset(offsetMinutes * 60_000) })
      expect(clientSubmittedAt(submitted, offsetMinutes)).toBe(Row.formatClientSubmitted(zoned))
    }
  )

  it.live("updates by exact label; misspelt labels and system keys are silently ignored", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const rows = yield* server.rows.table(projectsMicroAppID)
      const row = rows.find((candidate) => candidate["isLocked"] !== true && candidate["Status"] !== "Done")
      const rowID = String(row?.["_id"])
      const ok = yield* send("/api/updatemicroapprow", { rowID, rowData: { Status: "Done", Budget: 12.5 } })
      expect(json(ok.text)).toEqual({ status: "success" })
      const updated = (yield* server.rows.getRow(rowID)).pipe(Option.getOrThrow)
      expect([updated["Status"], updated["Budget"]]).toEqual(["Done", 12.5])

      const misspelt = yield* send("/api/updatemicroapprow", {
        rowID,
        rowData: { status: "Open", _id: "x", isLocked: true, submitted: 0, clientSubmitted: "x", Nope: 1 }
      })
      expect(misspelt.status).toBe(200)
      expect(json(misspelt.text)).toEqual({ status: "success" })
      expect((yield* server.rows.getRow(rowID)).pipe(Option.getOrThrow)).toEqual(updated)
    }).pipe(withServer()))

  it.live("clears a cross-application field set to null and sets embeddingRowID and userID", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const row = (yield* server.rows.table(projectsMicroAppID)).find((candidate) =>
        candidate["Owner"] !== undefined && candidate["isLocked"] !== true
      )
      const rowID = String(row?.["_id"])
      const reply = yield* send("/api/updatemicroapprow", {
        rowID,
        rowData: { Owner: null },
        embeddingRowID: "parent-row",
        userID: "user-0009",
        ignoreActionRules: true
      })
      expect(reply.status).toBe(200)
      const updated = (yield* server.rows.getRow(rowID)).pipe(Option.getOrThrow)
      expect(updated).not.toHaveProperty("Owner")
      expect([updated["embeddingRowID"], updated["userID"]]).toEqual(["parent-row", "user-0009"])
    }).pipe(withServer()))

  it.live("refuses to update a locked row with 200 and status error", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const locked = (yield* server.rows.table(projectsMicroAppID)).find((row) => row["isLocked"] === true)
      const rowID = String(locked?.["_id"])
      const reply = yield* send("/api/updatemicroapprow", { rowID, rowData: { Status: "Done", Name: "changed" } })
      expect(reply.status).toBe(200)
      expect(json(reply.text)).toEqual({ status: "error", message: "Row is locked" })
      expect((yield* server.rows.getRow(rowID)).pipe(Option.getOrThrow)).toEqual(locked)
    }).pipe(withServer()))

  it.live("rejects a non-object rowData with 400 and an unknown row with 404", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const rowID = (yield* server.rows.table(projectsMicroAppID))[0]?.["_id"]
      const array = yield* send("/api/updatemicroapprow", { rowID, rowData: [1, 2] })
      const missing = yield* send("/api/updatemicroapprow", { rowID })
      const unknown = yield* send("/api/updatemicroapprow", { rowID: "0".repeat(24), rowData: { Status: "Done" } })
      expect([array.status, missing.status, unknown.status]).toEqual([400, 400, 404])
    }).pipe(withServer()))

  it.live("inserts rows with generated metadata and removes them", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const reply = yield* send("/api/insertmicroapprow", {
        microAppID: projectsMicroAppID,
        rowData: { Name: "Inserted", Priority: 2, name: "ignored", _id: "ignored" }
      })
      const rowID = decodeInserted(reply.text).body.rowID
      expect(rowID).toMatch(/^[0-9a-f]{24}$/)
      const rows = yield* server.rows.table(projectsMicroAppID)
      const last = rows[rows.length - 1]
      expect(last).toMatchObject({ _id: rowID, Name: "Inserted", Priority: 2, userID: demoCredentials.userId })
      expect(last).not.toHaveProperty("name")
      expect(String(last?.["clientSubmitted"])).toMatch(/^\d{4}-\d{2}-\d{2} \(\d{2}:\d{2}:\d{2}\) \+0000$/)
      const removed = yield* send("/api/removemicroapprow", { rowID })
      expect(json(removed.text)).toEqual({ status: "success" })
      expect((yield* send("/api/removemicroapprow", { rowID })).status).toBe(404)
      expect(yield* server.rows.table(projectsMicroAppID)).toHaveLength(300)
      const unknownApp = yield* send("/api/insertmicroapprow", { microAppID: "f".repeat(24), rowData: {} })
      expect(unknownApp.status).toBe(404)
    }).pipe(withServer()))

  it.live("test controls insert at a position, update directly and replace rows", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const front = yield* server.rows.insertRow(projectsMicroAppID, { Name: "Front" }, { index: 0 })
      const first = (yield* server.rows.table(projectsMicroAppID))[0]
      expect(first?.["_id"]).toBe(front["_id"])
      expect(yield* server.rows.updateRow(String(front["_id"]), { Name: "Renamed", name: "x" })).toBe("updated")
      expect((yield* server.rows.table(projectsMicroAppID))[0]?.["Name"]).toBe("Renamed")
      expect(yield* server.rows.updateRow("0".repeat(24), { Name: "x" })).toBe("notFound")
      yield* server.rows.setRows(projectsMicroAppID, [{ Name: "Only" }])
      const only = yield* query({})
      expect(only.map((row) => row["Name"])).toEqual(["Only"])
      expect(only[0]?.["_id"]).toMatch(/^[0-9a-f]{24}$/)
      expect(yield* server.rows.removeRow(String(front["_id"]))).toBe(false)
    }).pipe(withServer()))
})
