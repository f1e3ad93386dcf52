import { HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import {
  Chunk,
  Duration,
  Effect,
  Either,
  Exit,
  Fiber,
  Layer,
  Option,
  Schema,
  Scope,
  TestClock,
  TestServices
} from "effect"
import type { FaultKind, Row } from "../src/testing/index.js"
import {
  demoCredentials,
  demoTables,
  formatClientSubmitted,
  makeProjectRows,
  MicroappServer,
  peopleMicroAppID,
  projectsMicroAppID
} from "../src/testing/index.js"
import { AnswerRow, awaitLog, CurrentRowAnswer, onTestClock, RowsAnswer, SessionAnswer } from "./support.js"

// --- helpers -------------------------------------------------------------------------------------

type Auth = "demo" | "none" | { readonly authToken: string; readonly userId: string }

interface Reply {
  readonly status: number
  readonly contentType: string | undefined
  readonly retryAfter: string | undefined
  readonly text: string
}

const send = (
  path: string,
  body: unknown,
  options: { readonly auth?: Auth; readonly rawBody?: string } = {}
) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const client = yield* HttpClient.HttpClient
    const auth = options.auth ?? "demo"
    const credentials = auth === "demo" ? server.credentials : auth === "none" ? undefined : auth
    const base = HttpClientRequest.post(server.baseUrl + path)
    const withBody = options.rawBody === undefined
      ? HttpClientRequest.bodyUnsafeJson(base, body)
      : HttpClientRequest.bodyText(base, options.rawBody, "application/json")
    const request = credentials === undefined
      ? withBody
      : HttpClientRequest.setHeaders(withBody, {
        "X-Auth-Token": credentials.authToken,
        "X-User-Id": credentials.userId
      })
    const response = yield* client.execute(request)
    const text = yield* response.text
    const reply: Reply = {
      status: response.status,
      contentType: response.headers["content-type"],
      retryAfter: response.headers["retry-after"],
      text
    }
    return reply
  })

const json = (text: string): unknown => Schema.decodeUnknownSync(Schema.parseJson())(text)

const decodeRows = Schema.decodeUnknownSync(Schema.parseJson(RowsAnswer))
const decodeCurrentRow = Schema.decodeUnknownSync(Schema.parseJson(CurrentRowAnswer))
const decodeInserted = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
  status: Schema.Literal("success"),
  body: Schema.Struct({ rowID: Schema.String })
})))
const decodeSession = Schema.decodeUnknownSync(Schema.parseJson(SessionAnswer))
const decodeFlatSession = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
  status: Schema.Literal("success"),
  authToken: Schema.String,
  userId: Schema.String
})))

const query = (body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const reply = yield* send("/api/microappdata", { microAppID: projectsMicroAppID, ...body })
    expect(reply.status).toBe(200)
    return decodeRows(reply.text).body.microAppRows
  })

const isCrossApp = Schema.is(Schema.Struct({
  crossAppRowID: Schema.String,
  value: Schema.Struct({ label: Schema.String, value: Schema.String })
}))

const ids = (rows: ReadonlyArray<Row>): ReadonlyArray<unknown> => rows.map((row) => row["_id"])

const withServer = (options: MicroappServer.Options = {}) =>
  Effect.provide(Layer.merge(MicroappServer.layer({ demoRows: 300, ...options }), NodeHttpClient.layerUndici))

const projects = { microAppID: projectsMicroAppID, searchFilter: [{ limit: 2 }] }

const requests = Effect.flatMap(MicroappServer, (server) => server.log.requests)

const awaitSleep = Effect.gen(function*() {
  for (let attempt = 0; attempt < 400; attempt++) {
    if (Chunk.isNonEmpty(yield* TestClock.sleeps())) return
    yield* TestServices.provideLive(Effect.sleep("5 millis"))
  }
  return yield* Effect.dieMessage("the server never started sleeping")
})

const numbers = (rows: ReadonlyArray<Row>, label: string): ReadonlyArray<number> =>
  rows.map((row) => Number(row[label]))

const isSortedBy = <A>(values: ReadonlyArray<A>, compare: (a: A, b: A) => number): boolean =>
  values.every((value, index) => {
    const previous = values[index - 1]
    return previous === undefined || compare(previous, value) <= 0
  })

const transportFailure = (exit: Either.Either<Reply, unknown>): boolean =>
  Either.isLeft(exit) &&
  typeof exit.left === "object" && exit.left !== null && "_tag" in exit.left && exit.left._tag === "RequestError"

// --- authentication and login ------------------------------------------------------------------

describe("authentication", () => {
  it.live("rejects a call without auth headers with 401 and the service's message", () =>
    Effect.gen(function*() {
      const reply = yield* send("/api/microappdata", { microAppID: projectsMicroAppID }, { auth: "none" })
      expect(reply.status).toBe(401)
      expect(json(reply.text)).toEqual({ status: "error", message: "You must be logged in to do this." })
    }).pipe(withServer()))

  it.live("rejects a wrong token, and a token of another user", () =>
    Effect.gen(function*() {
      const wrong = yield* send("/api/microappdata", { microAppID: projectsMicroAppID }, {
        auth: { authToken: "nope", userId: demoCredentials.userId }
      })
      const mismatched = yield* send("/api/microappdata", { microAppID: projectsMicroAppID }, {
        auth: { authToken: demoCredentials.authToken, userId: "someone-else" }
      })
      expect([wrong.status, mismatched.status]).toEqual([401, 401])
    }).pipe(withServer()))

  it.live("checks auth before the body", () =>
    Effect.gen(function*() {
      const reply = yield* send("/api/microappdata", undefined, { auth: "none", rawBody: "{not json" })
      expect(reply.status).toBe(401)
    }).pipe(withServer()))

  it.live("logs in with the data shape; the token works; a wrong password is 401 Unauthorized", () =>
    Effect.gen(function*() {
      const ok = yield* send("/api/login", { email: demoCredentials.email, password: demoCredentials.password }, {
        auth: "none"
      })
      expect(ok.status).toBe(200)
      const session = decodeSession(ok.text).data
      expect(session.userId).toBe(demoCredentials.userId)
      const call = yield* send("/api/microappdata/row", { rowID: "0".repeat(24) }, { auth: session })
      expect(call.status).toBe(404)
      const wrong = yield* send("/api/login", { email: demoCredentials.email, password: "guess" }, { auth: "none" })
      expect(wrong.status).toBe(401)
      expect(json(wrong.text)).toEqual({ status: "error", message: "Unauthorized" })
    }).pipe(withServer()))

  it.live("logs in with the flat shape when configured", () =>
    Effect.gen(function*() {
      const reply = yield* send("/api/login", { email: demoCredentials.email, password: demoCredentials.password }, {
        auth: "none"
      })
      const session = decodeFlatSession(reply.text)
      expect(session.userId).toBe(demoCredentials.userId)
      expect(json(reply.text)).not.toHaveProperty("data")
    }).pipe(withServer({ loginShape: "flat" })))

  it.live("expireTokens invalidates issued tokens; a new login issues a fresh one", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.sessions.expireTokens
      const expired = yield* send("/api/microappdata", { microAppID: projectsMicroAppID, searchFilter: [{ limit: 1 }] })
      expect(expired.status).toBe(401)
      const login = yield* send("/api/login", { email: demoCredentials.email, password: demoCredentials.password }, {
        auth: "none"
      })
      const session = decodeSession(login.text).data
      expect(session.authToken).not.toBe(demoCredentials.authToken)
      const again = yield* send("/api/microappdata", { microAppID: projectsMicroAppID, searchFilter: [{ limit: 1 }] }, {
        auth: session
      })
      expect(again.status).toBe(200)
    }).pipe(withServer()))

  it.live("answers unknown paths and other methods with 404 API endpoint does not exist", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* HttpClient.HttpClient
      const unknown = yield* send("/api/nothing", {})
      const get = yield* client.execute(HttpClientRequest.get(`${server.baseUrl}/api/microappdata`))
      expect(unknown.status).toBe(404)
      expect(json(unknown.text)).toEqual({ status: "error", message: "API endpoint does not exist" })
      expect(get.status).toBe(404)
    }).pipe(withServer()))
})

// --- /api/microappdata ---------------------------------------------------------------------------

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

// --- rows ----------------------------------------------------------------------------------------

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
    expect(formatClientSubmitted(Date.UTC(2021, 2, 1, 4, 34, 49), 660)).toBe("2021-03-01 (15:34:49) +1100")
  })

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

// --- request log and hook ------------------------------------------------------------------------

describe("request log", () => {
  it.live("records seq, method, path, parsed body, status and authorization; never tokens or passwords", () =>
    Effect.gen(function*() {
      yield* send("/api/login", { email: demoCredentials.email, password: demoCredentials.password }, { auth: "none" })
      yield* send("/api/microappdata", { microAppID: projectsMicroAppID, searchFilter: [{ skip: "0", limit: 3 }] })
      yield* send("/api/microappdata/row", undefined, { rawBody: "not json" })
      const log = yield* requests
      expect(log.map((record) => [record.seq, record.method, record.path, record.status, record.authorized])).toEqual([
        [0, "POST", "/api/login", 200, false],
        [1, "POST", "/api/microappdata", 200, true],
        [2, "POST", "/api/microappdata/row", 400, true]
      ])
      expect(log[1]?.body).toEqual({ microAppID: projectsMicroAppID, searchFilter: [{ skip: "0", limit: 3 }] })
      expect(log[2]?.body).toBe("not json")
      expect(log.every((record) => record.outcome === "answered" && record.finishedAt !== undefined)).toBe(true)
      const serialized = JSON.stringify(log)
      expect(serialized).not.toContain(demoCredentials.authToken)
      expect(serialized).not.toContain(demoCredentials.password)
      const server = yield* MicroappServer
      yield* server.log.clear
      yield* send("/api/nothing", {})
      expect((yield* requests).map((record) => record.seq)).toEqual([0])
    }).pipe(withServer()))

  it.effect("counts requests in flight at arrival", () =>
    Effect.gen(function*() {
      yield* onTestClock(Effect.forEach(
        [0, 1, 2],
        (skip) => send("/api/microappdata", { microAppID: projectsMicroAppID, searchFilter: [{ skip, limit: 1 }] }),
        { concurrency: "unbounded" }
      ))
      const log = yield* requests
      expect(log.map((record) => record.inFlight).sort()).toEqual([1, 2, 3])
      expect(log.every((record) => (record.finishedAt ?? 0) - record.at >= 100)).toBe(true)
    }).pipe(withServer({ latency: "150 millis" })))

  it.effect("takes arrival times and latency from the Clock in force", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(1_000_000)
      const server = yield* MicroappServer
      const fiber = yield* Effect.fork(send("/api/microappdata", { microAppID: projectsMicroAppID }))
      const log = yield* awaitLog((records) => records.length === 1)
      expect(log[0]?.at).toBe(1_000_000)
      expect(log[0]?.status).toBeUndefined()
      // Adjusting before the server's sleep is registered would leave that sleep waiting forever.
      yield* awaitSleep
      yield* TestClock.adjust("10 seconds")
      const reply = yield* Fiber.join(fiber)
      expect(reply.status).toBe(200)
      expect((yield* server.log.requests)[0]?.finishedAt).toBe(1_010_000)
    }).pipe(withServer({ latency: "10 seconds", demoRows: 5 })))

  it.live("runs the hook between requests: rows inserted at the front shift later pages", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const natural = ids(yield* server.rows.table(projectsMicroAppID))
      yield* server.log.onRequest((record) =>
        record.seq === 2
          ? Effect.forEach(
            [1, 2, 3, 4, 5],
            (n) => server.rows.insertRow(projectsMicroAppID, { Name: `New ${n}` }, { index: 0 })
          )
          : Effect.void
      )
      const pages = yield* Effect.forEach(
        [0, 10, 20],
        (skip) => query({ searchFilter: [{ skip: String(skip), limit: 10 }] })
      )
      expect(ids(pages[0] ?? [])).toEqual(natural.slice(0, 10))
      expect(ids(pages[1] ?? [])).toEqual(natural.slice(10, 20))
      // Five rows arrived in front before the third request was answered: it repeats rows 15..19.
      expect(ids(pages[2] ?? [])).toEqual(natural.slice(15, 25))
      yield* server.log.clearHook
      const after = yield* query({ searchFilter: [{ limit: 5 }] })
      expect(after.map((row) => row["Name"])).toEqual(["New 5", "New 4", "New 3", "New 2", "New 1"])
    }).pipe(withServer()))
})

// --- faults --------------------------------------------------------------------------------------

describe("faults", () => {
  it.live("http500, http408 and http503Html answer with their status and body type", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("http500")
      const e500 = yield* send("/api/microappdata", projects)
      yield* server.faults.inject("http408")
      const e408 = yield* send("/api/microappdata", projects)
      yield* server.faults.inject("http503Html")
      const e503 = yield* send("/api/microappdata", projects)
      const ok = yield* send("/api/microappdata", projects)
      expect([e500.status, e408.status, e503.status, ok.status]).toEqual([500, 408, 503, 200])
      expect(json(e500.text)).toMatchObject({ status: "error" })
      expect(e503.contentType).toContain("text/html")
      expect(e503.text).toContain("<html>")
      expect((yield* requests).map((record) => record.fault)).toEqual(["http500", "http408", "http503Html", undefined])
    }).pipe(withServer()))

  it.live("http429 sends Retry-After in seconds or as an HTTP date and logs retryAfterUntil", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("http429", { retryAfterSeconds: 3 })
      const seconds = yield* send("/api/microappdata", projects)
      yield* server.faults.inject("http429", { retryAfterSeconds: 2, retryAfterAsDate: true })
      const date = yield* send("/api/microappdata", projects)
      expect([seconds.status, date.status]).toEqual([429, 429])
      expect(seconds.retryAfter).toBe("3")
      const log = yield* requests
      // Counted from the moment of the answer, which lies between arrival and completion.
      const first = log[0]
      expect(first?.retryAfterUntil).toBeGreaterThanOrEqual((first?.at ?? 0) + 3000)
      expect(first?.retryAfterUntil).toBeLessThanOrEqual((first?.finishedAt ?? 0) + 3000)
      const until = Date.parse(date.retryAfter ?? "")
      expect(until).toBe(log[1]?.retryAfterUntil)
      expect(until).toBeGreaterThanOrEqual((log[1]?.at ?? 0) + 2000)
      expect(json(date.text)).toMatchObject({ status: "error" })
    }).pipe(withServer()))

  it.effect("throttle: requests beyond maxInFlight in flight get a 429 with Retry-After, the others an answer", () =>
    Effect.gen(function*() {
      const replies = yield* onTestClock(
        Effect.all(Array.from({ length: 5 }, () => send("/api/microappdata", projects)), {
          concurrency: 5
        })
      )
      const statuses = replies.map((reply) => reply.status).sort()
      expect(statuses).toEqual([200, 200, 429, 429, 429])
      expect(replies.filter((reply) => reply.status === 429).map((reply) => reply.retryAfter)).toEqual(["2", "2", "2"])
      // once the load is gone, a request is answered again
      expect((yield* onTestClock(send("/api/microappdata", projects))).status).toBe(200)
      const log = yield* requests
      expect(log.filter((record) => record.status === 429).every((record) => record.inFlight > 2)).toBe(true)
    }).pipe(withServer({ latency: "100 millis", throttle: { maxInFlight: 2, retryAfterSeconds: 2 } })))

  it.live("drop closes the connection without applying the request", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const row = (yield* server.rows.table(projectsMicroAppID)).find((candidate) => candidate["isLocked"] !== true)
      const rowID = String(row?.["_id"])
      yield* server.faults.inject("drop", { path: "/api/updatemicroapprow" })
      const result = yield* Effect.either(send("/api/updatemicroapprow", { rowID, rowData: { Name: "dropped" } }))
      expect(transportFailure(result)).toBe(true)
      expect((yield* server.rows.getRow(rowID)).pipe(Option.getOrThrow)["Name"]).toBe(row?.["Name"])
      const log = yield* awaitLog((records) => records[0]?.finishedAt !== undefined)
      expect(log[0]).toMatchObject({ outcome: "dropped", fault: "drop" })
      expect(log[0]?.status).toBeUndefined()
      expect((yield* send("/api/microappdata", projects)).status).toBe(200)
    }).pipe(withServer()))

  it.live("dropAfterApply applies the update, then closes the connection", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const row = (yield* server.rows.table(projectsMicroAppID)).find((candidate) => candidate["isLocked"] !== true)
      const rowID = String(row?.["_id"])
      yield* server.faults.inject("dropAfterApply")
      const result = yield* Effect.either(send("/api/updatemicroapprow", { rowID, rowData: { Name: "applied" } }))
      expect(transportFailure(result)).toBe(true)
      expect((yield* server.rows.getRow(rowID)).pipe(Option.getOrThrow)["Name"]).toBe("applied")
      expect((yield* requests)[0]).toMatchObject({ outcome: "dropped", fault: "dropAfterApply" })
    }).pipe(withServer()))

  // on the test clock: the timeout passes as soon as the request hangs
  it.effect("hang never answers; the client times out and the log says hung", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("hang")
      const result = yield* onTestClock(
        send("/api/microappdata", projects).pipe(Effect.timeout("300 millis"), Effect.either)
      )
      expect(Either.isLeft(result) && result.left._tag === "TimeoutException").toBe(true)
      const log = yield* awaitLog((records) => records[0]?.finishedAt !== undefined)
      expect(log[0]).toMatchObject({ outcome: "hung", fault: "hang" })
      expect(log[0]?.status).toBeUndefined()
      expect((yield* send("/api/microappdata", projects)).status).toBe(200)
    }).pipe(withServer()))

  it.live("malformedJson answers 200 application/json with a body that does not parse", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("malformedJson", { count: 2 })
      const replies = yield* Effect.forEach([1, 2], () => send("/api/microappdata", projects))
      for (const reply of replies) {
        expect(reply.status).toBe(200)
        expect(reply.contentType).toBe("application/json")
        expect(Either.isLeft(Schema.decodeUnknownEither(Schema.parseJson())(reply.text))).toBe(true)
      }
      expect((yield* send("/api/microappdata", projects)).status).toBe(200)
    }).pipe(withServer()))

  it.live("scripted faults honour count and path, and leave login alone by default", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("http500", { count: 2, path: "/api/microappdata/row" })
      yield* server.faults.inject("http408")
      const login = yield* send("/api/login", { email: demoCredentials.email, password: demoCredentials.password }, {
        auth: "none"
      })
      const statuses = yield* Effect.forEach(
        ["/api/microappdata/row", "/api/microappdata", "/api/microappdata/row", "/api/microappdata/row"],
        (path) => Effect.map(send(path, { rowID: "0".repeat(24) }), (r) => r.status)
      )
      expect(login.status).toBe(200)
      expect(statuses).toEqual([500, 408, 500, 404])
    }).pipe(withServer()))

  const planKinds: ReadonlyArray<FaultKind> = ["http500", "http429", "http408", "http503Html", "malformedJson"]
  const faultSequence = (seed: number) =>
    Effect.gen(function*() {
      yield* Effect.forEach(Array.from({ length: 40 }, (_, i) => i), (skip) =>
        send("/api/microappdata", { microAppID: projectsMicroAppID, searchFilter: [{ skip, limit: 1 }] }))
      return (yield* requests).map((record) =>
        record.fault ?? "none"
      )
    }).pipe(withServer({ faults: { seed, rate: 0.4, kinds: planKinds }, demoRows: 50 }))

  it.live("a seeded plan gives the same faults for the same seed and request sequence", () =>
    Effect.gen(function*() {
      const first = yield* faultSequence(1234)
      const second = yield* faultSequence(1234)
      const other = yield* faultSequence(99)
      expect(second).toEqual(first)
      expect(other).not.toEqual(first)
      const faulted = first.filter((kind) => kind !== "none").length
      expect(faulted).toBeGreaterThan(5)
      expect(faulted).toBeLessThan(35)
    }))

  it.live("a plan only faults its paths; login is exempt unless named; configure replaces the plan", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const login = yield* send("/api/login", { email: demoCredentials.email, password: demoCredentials.password }, {
        auth: "none"
      })
      const data = yield* send("/api/microappdata", projects)
      expect([login.status, data.status]).toEqual([200, 500])
      yield* server.configure({ faults: { seed: 1, rate: 1, kinds: ["http408"], paths: ["/api/login"] } })
      const login2 = yield* send("/api/login", { email: demoCredentials.email, password: demoCredentials.password }, {
        auth: "none"
      })
      const data2 = yield* send("/api/microappdata", projects)
      expect([login2.status, data2.status]).toEqual([408, 200])
      yield* server.configure({ faults: undefined })
      expect((yield* send("/api/login", { email: "x", password: "y" }, { auth: "none" })).status).toBe(401)
    }).pipe(withServer({ faults: { seed: 5, rate: 1, kinds: ["http500"] } })))
})

// --- lifecycle -----------------------------------------------------------------------------------

describe("lifecycle", () => {
  it.live("closing the server's scope does not wait for a hanging request", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const server = yield* Scope.extend(MicroappServer.make({ demoRows: 5 }), scope)
      yield* server.faults.inject("hang", { path: "/api/microappdata" })
      const pending = yield* send("/api/microappdata", projects).pipe(
        Effect.provideService(MicroappServer, server),
        Effect.either,
        Effect.fork
      )
      yield* awaitLog((log) => log.length === 1).pipe(Effect.provideService(MicroappServer, server))
      // An idle keep-alive connection must not hold the close either.
      const idle = yield* send("/api/nothing", {}).pipe(Effect.provideService(MicroappServer, server))
      expect(idle.status).toBe(404)
      // Forked, so a close that hangs fails the test at the timeout instead of blocking it.
      const closing = yield* Effect.fork(Effect.timed(Scope.close(scope, Exit.void)))
      const closed = yield* Fiber.join(closing).pipe(Effect.timeout("2 seconds"), Effect.either)
      expect(Either.isRight(closed) && Duration.toMillis(closed.right[0]) < 1000).toBe(true)
      const result = yield* Fiber.join(pending)
      expect(transportFailure(result)).toBe(true)
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
})

// --- faults after applying, several plans, apply counts ------------------------------------------

describe("writes under faults", () => {
  const unlockedRow = Effect.flatMap(
    MicroappServer,
    (server) =>
      Effect.map(
        server.rows.table(projectsMicroAppID),
        (rows) => String(rows.find((row) => row["isLocked"] !== true)?.["_id"])
      )
  )

  it.live("http500AfterApply applies the update, then answers 500; appliedUpdates counts it", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const rowID = yield* unlockedRow
      yield* server.faults.inject("http500AfterApply")
      const failed = yield* send("/api/updatemicroapprow", { rowID, rowData: { Name: "applied" } })
      expect(failed.status).toBe(500)
      expect(json(failed.text)).toMatchObject({ status: "error" })
      expect((yield* server.rows.getRow(rowID)).pipe(Option.getOrThrow)["Name"]).toBe("applied")
      expect((yield* requests)[0]).toMatchObject({ status: 500, fault: "http500AfterApply" })
      expect((yield* server.rows.appliedUpdates).get(rowID)).toBe(1)
      yield* server.faults.inject("http500")
      expect((yield* send("/api/updatemicroapprow", { rowID, rowData: { Name: "not applied" } })).status).toBe(500)
      yield* server.faults.inject("dropAfterApply")
      yield* Effect.either(send("/api/updatemicroapprow", { rowID, rowData: { Name: "applied again" } }))
      expect((yield* send("/api/updatemicroapprow", { rowID, rowData: { Name: "once more" } })).status).toBe(200)
      // refused and failed updates are not counted
      const locked = (yield* server.rows.table(projectsMicroAppID)).find((row) => row["isLocked"] === true)
      yield* send("/api/updatemicroapprow", { rowID: String(locked?.["_id"]), rowData: { Name: "x" } })
      const counts = yield* server.rows.appliedUpdates
      expect([...counts]).toEqual([[rowID, 3]])
    }).pipe(withServer()))

  it.live("several plans each draw on their own: the first that hits gives the fault", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const rowID = yield* unlockedRow
      const updates = { seed: 11, rate: 0.5, kinds: ["http500AfterApply"], paths: ["/api/updatemicroapprow"] } as const
      const everything = { seed: 12, rate: 0.3, kinds: ["http503Html"] } as const
      const faultsOf = Effect.gen(function*() {
        yield* server.log.clear
        for (let i = 0; i < 60; i++) {
          yield* send("/api/updatemicroapprow", { rowID, rowData: { Name: `n${i}` } })
          yield* send("/api/microappdata", projects)
        }
        const log = yield* requests
        return (path: string) => log.filter((record) => record.path === path).map((record) => record.fault ?? "none")
      })
      yield* server.configure({ faults: [updates, everything] })
      const both = yield* faultsOf
      yield* server.configure({ faults: everything })
      const alone = yield* faultsOf
      const reads = both("/api/microappdata")
      // reads see only the second plan, drawn exactly as when it is alone
      expect(reads).toEqual(alone("/api/microappdata"))
      expect(new Set(reads)).toEqual(new Set(["none", "http503Html"]))
      const writes = both("/api/updatemicroapprow")
      expect(new Set(writes)).toEqual(new Set(["none", "http500AfterApply", "http503Html"]))
      // where the first plan is silent, the second decides as it would alone
      const aloneWrites = alone("/api/updatemicroapprow")
      writes.forEach((fault, i) => {
        if (fault !== "http500AfterApply") expect(fault).toBe(aloneWrites[i])
      })
    }).pipe(withServer()))
})
