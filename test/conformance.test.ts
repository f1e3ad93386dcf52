/**
 * The emulator answers the request bodies the service's official Node client (buzzy-api-nodejs
 * 1.3.4) sends, byte for byte as raw JSON over HTTP, both in process and as `microapp serve`.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Schema } from "effect"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { Credentials, Row } from "../src/testing/index.js"
import { demoCredentials, demoTables, MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { CurrentRowAnswer, RowsAnswer, SessionAnswer } from "./support.js"

// --- requests as the official client builds them -------------------------------------------------

/** `getMicroAppData` with every option left out: nulls, `false`, and the last two absent. */
const plainRead = {
  microAppID: projectsMicroAppID,
  optSearchFilters: null,
  searchFilter: null,
  optViewFilters: null,
  optIsVectorSearch: false
}

/** The same read when the caller passed `null` for the last two as well. */
const plainReadAllNulls = { ...plainRead, optVectorSearchString: null, optLimit: null }

const pagedRead = (field: string, order: 1 | -1, skip: string, limit: number) => ({
  ...plainReadAllNulls,
  searchFilter: [{ resourceID: projectsMicroAppID, field, order, skip, limit }]
})

// --- HTTP ----------------------------------------------------------------------------------------

interface Target {
  readonly baseUrl: string
  readonly credentials: Pick<Credentials, "authToken" | "userId">
}

interface Reply {
  readonly status: number
  readonly body: unknown
}

const post = (target: Target, path: string, body: unknown, authenticated = true) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const request = HttpClientRequest.post(target.baseUrl + path).pipe(
      HttpClientRequest.bodyUnsafeJson(body),
      authenticated
        ? HttpClientRequest.setHeaders({
          "X-Auth-Token": target.credentials.authToken,
          "X-User-Id": target.credentials.userId
        })
        : (request) => request
    )
    const response = yield* client.execute(request)
    const reply: Reply = { status: response.status, body: yield* response.json }
    return reply
  })

const decodeRows = Schema.decodeUnknownSync(RowsAnswer)
const decodeCurrentRow = Schema.decodeUnknownSync(CurrentRowAnswer)
const decodeSession = Schema.decodeUnknownSync(SessionAnswer)
const decodeError = Schema.decodeUnknownSync(Schema.Struct({ status: Schema.Literal("error"), message: Schema.String }))

/** The rows of a 200 answer to `/api/microappdata`; fails the test on any other answer. */
const read = (target: Target, body: unknown) =>
  Effect.map(post(target, "/api/microappdata", body), (reply) => {
    expect(reply.status).toBe(200)
    return decodeRows(reply.body).body.microAppRows
  })

const readRow = (target: Target, rowID: string) =>
  Effect.map(post(target, "/api/microappdata/row", { rowID }), (reply) => {
    expect(reply.status).toBe(200)
    return decodeCurrentRow(reply.body).body.currentRow
  })

/** The message of a 400 answer; fails the test on any other answer. */
const refusal = (target: Target, path: string, body: unknown) =>
  Effect.map(post(target, path, body), (reply) => {
    expect(reply.status).toBe(400)
    return decodeError(reply.body).message
  })

const ids = (rows: ReadonlyArray<Row>): ReadonlyArray<unknown> => rows.map((row) => row["_id"])

// The test's own order on the sort values it uses (numbers, plain strings), not the emulator's comparator.
const byField = (label: string, order: 1 | -1) => (a: Row, b: Row): number => {
  const x = a[label]
  const y = b[label]
  if (typeof x === "number" && typeof y === "number") return (x - y) * order
  return (String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0) * order
}

// --- the emulator in process ---------------------------------------------------------------------

const withServer = (options: MicroappServer.Options = {}) =>
  Effect.provide(Layer.merge(MicroappServer.layer({ demoRows: 300, ...options }), NodeHttpClient.layerUndici))

const unlockedRow = (server: MicroappServer.Service) =>
  Effect.map(server.rows.table(projectsMicroAppID), (rows) => {
    const row = rows.find((candidate) => candidate["isLocked"] !== true)
    expect(row).toBeDefined()
    return row ?? {}
  })

const stateRow = (server: MicroappServer.Service, rowID: string) =>
  Effect.map(server.rows.getRow(rowID), Option.getOrThrow)

describe("reads as the official client sends them", () => {
  it.live("a plain read with nulls and false returns every row, in natural order", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const expected = ids(yield* server.rows.table(projectsMicroAppID))
      expect(expected).toHaveLength(300)
      expect(ids(yield* read(server, plainRead))).toEqual(expected)
      expect(ids(yield* read(server, plainReadAllNulls))).toEqual(expected)
    }).pipe(withServer()))

  it.live("a paged, sorted read returns the right slice in the right order", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const rows = yield* server.rows.table(projectsMicroAppID)
      // field "1" is the Name sort field, "4" Priority (many ties: they keep the natural order)
      const byNameDown = [...rows].sort(byField("Name", -1))
      const byPriorityUp = [...rows].sort(byField("Priority", 1))
      expect(ids(yield* read(server, pagedRead("1", -1, "10", 25)))).toEqual(ids(byNameDown.slice(10, 35)))
      expect(ids(yield* read(server, pagedRead("4", 1, "40", 60)))).toEqual(ids(byPriorityUp.slice(40, 100)))
      expect(ids(yield* read(server, pagedRead("1", 1, "290", 25)))).toEqual(ids(byNameDown.slice(0, 10).reverse()))
    }).pipe(withServer()))

  it.live("a filtered read returns exactly the matching rows", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const rows = yield* server.rows.table(projectsMicroAppID)
      const open = rows.filter((row) => row["Status"] === "Open")
      expect(open.length).toBeGreaterThan(0)
      expect(open.length).toBeLessThan(rows.length)
      const filtered = yield* read(server, {
        ...plainReadAllNulls,
        optSearchFilters: [{ resourceID: projectsMicroAppID, fieldID: "f_status", value: "Open" }]
      })
      expect(ids(filtered)).toEqual(ids(open))
    }).pipe(withServer()))

  it.live("null inside filter and sort/paging elements is absent", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const rows = yield* server.rows.table(projectsMicroAppID)
      const nullsInElements = yield* read(server, {
        ...plainReadAllNulls,
        serviceFormat: null,
        optSearchFilters: [{ resourceID: null, fieldID: "f_status", value: "Done" }],
        searchFilter: [{ resourceID: null, field: null, order: null, skip: null, limit: 5 }]
      })
      expect(ids(nullsInElements)).toEqual(ids(rows.filter((row) => row["Status"] === "Done").slice(0, 5)))
      const orderOnly = yield* read(server, { ...plainRead, searchFilter: [{ field: "1", order: null, limit: null }] })
      expect(ids(orderOnly)).toEqual(ids([...rows].sort(byField("Name", 1))))
    }).pipe(withServer()))

  it.live("limit 0 answers no rows", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      expect(yield* read(server, { ...plainRead, searchFilter: [{ skip: "0", limit: 0 }] })).toEqual([])
    }).pipe(withServer()))

  it.live("optVectorSearchString without vector search on is accepted and ignored", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const expected = ids(yield* server.rows.table(projectsMicroAppID))
      expect(ids(yield* read(server, { ...plainRead, optVectorSearchString: "roads near Sydney" }))).toEqual(expected)
      expect(ids(yield* read(server, { ...plainRead, optIsVectorSearch: null, optVectorSearchString: "x" })))
        .toEqual(expected)
    }).pipe(withServer()))
})

describe("features the emulator does not implement", () => {
  const refusals: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
    ["optViewFilters", { optViewFilters: [{ fieldID: "f_status", value: "Open" }] }],
    ["optViewSort", { optViewSort: [{ fieldID: "f_budget", order: 1 }] }],
    ["optLimit", { optLimit: 5 }],
    ["optIsVectorSearch", { optIsVectorSearch: true, optVectorSearchString: "roads near Sydney" }]
  ]

  for (const [feature, fields] of refusals) {
    it.live(`${feature} is answered 400 naming it, not with unfiltered rows`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const message = yield* refusal(server, "/api/microappdata", { ...plainReadAllNulls, ...fields })
        expect(message).toBe(`${feature} is not emulated by this emulator`)
      }).pipe(withServer()))
  }

  it.live("a key the emulator does not know, as a hand-written loop sends it, is answered 400 naming it", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      // paging beside microAppID rather than in searchFilter: ignored, it would answer the first rows as a success
      expect(yield* refusal(server, "/api/microappdata", { ...plainRead, skip: "1000", limit: 1000 })).toBe(
        "Invalid request body: unknown key skip"
      )
      expect(
        yield* refusal(server, "/api/microappdata", {
          microAppID: projectsMicroAppID,
          searchFilter: [{ resourceID: projectsMicroAppID, skip: "0", limit: 10, offset: 10 }]
        })
      ).toBe("Invalid request body: unknown key searchFilter.0.offset")
      expect(yield* refusal(server, "/api/microappdata/row", { rowID: "x", microAppID: projectsMicroAppID })).toBe(
        "Invalid request body: unknown key microAppID"
      )
      expect(yield* refusal(server, "/api/updatemicroapprow", { rowID: "x", rowData: {}, rowdata: {} })).toBe(
        "Invalid request body: unknown key rowdata"
      )
    }).pipe(withServer()))

  it.live("several at once are all named; false or null turns each off", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const message = yield* refusal(server, "/api/microappdata", { ...plainRead, optViewFilters: [], optLimit: 0 })
      expect(message).toBe("optViewFilters, optLimit are not emulated by this emulator")
      const off = { ...plainRead, optViewFilters: null, optViewSort: null, optLimit: null, optIsVectorSearch: false }
      expect(yield* read(server, off)).toHaveLength(300)
    }).pipe(withServer()))
})

describe("rows, updates and login as the official client sends them", () => {
  it.live("getMicroAppDataRow {rowID} returns the row as the state holds it", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const row = (yield* server.rows.table(projectsMicroAppID))[17]
      expect(yield* readRow(server, String(row?.["_id"]))).toEqual(row)
    }).pipe(withServer()))

  it.live("updateMicroAppDataRow without userID changes the fields and keeps the owner", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const before = yield* unlockedRow(server)
      const rowID = String(before["_id"])
      const reply = yield* post(server, "/api/updatemicroapprow", { rowID, rowData: { Status: "Done", Budget: 7.25 } })
      expect(reply).toEqual({ status: 200, body: { status: "success" } })
      const after = yield* readRow(server, rowID)
      expect(after).toEqual({ ...before, Status: "Done", Budget: 7.25 })
      expect(yield* stateRow(server, rowID)).toEqual(after)
    }).pipe(withServer()))

  it.live("updateMicroAppDataRow with userID also changes the row's user", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const before = yield* unlockedRow(server)
      const rowID = String(before["_id"])
      expect(before["userID"]).not.toBe("user-0042")
      const reply = yield* post(server, "/api/updatemicroapprow", {
        rowID,
        rowData: { Name: "Renamed" },
        userID: "user-0042"
      })
      expect(reply).toEqual({ status: 200, body: { status: "success" } })
      expect(yield* readRow(server, rowID)).toEqual({ ...before, Name: "Renamed", userID: "user-0042" })
    }).pipe(withServer()))

  it.live("login {email, password} issues a token that reads", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const reply = yield* post(
        server,
        "/api/login",
        { email: demoCredentials.email, password: demoCredentials.password },
        false
      )
      expect(reply.status).toBe(200)
      const session = decodeSession(reply.body).data
      expect(session.authToken).not.toBe(server.credentials.authToken)
      const rows = yield* read({ baseUrl: server.baseUrl, credentials: session }, plainRead)
      expect(ids(rows)).toEqual(ids(yield* server.rows.table(projectsMicroAppID)))
    }).pipe(withServer()))
})

describe("null for optional and required fields", () => {
  it.live("null for every optional field of an update is absent", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const before = yield* unlockedRow(server)
      const rowID = String(before["_id"])
      const reply = yield* post(server, "/api/updatemicroapprow", {
        rowID,
        rowData: { Status: "Open" },
        embeddingRowID: null,
        userID: null,
        ignoreActionRules: null
      })
      expect(reply).toEqual({ status: 200, body: { status: "success" } })
      const after = yield* stateRow(server, rowID)
      expect(after).toEqual({ ...before, Status: "Open" })
      expect(after).not.toHaveProperty("embeddingRowID")
    }).pipe(withServer()))

  it.live("null for a required field is a 400 naming it, and changes nothing", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const before = yield* unlockedRow(server)
      const rowID = String(before["_id"])
      const cases: ReadonlyArray<readonly [string, unknown, string]> = [
        ["/api/microappdata", { ...plainRead, microAppID: null }, "microAppID"],
        ["/api/microappdata", { ...plainRead, optSearchFilters: [{ fieldID: null, value: "Open" }] }, "fieldID"],
        ["/api/microappdata", { ...plainRead, optSearchFilters: [{ fieldID: "f_status", value: null }] }, "value"],
        ["/api/microappdata/row", { rowID: null }, "rowID"],
        ["/api/updatemicroapprow", { rowID: null, rowData: { Status: "Done" } }, "rowID"],
        ["/api/updatemicroapprow", { rowID, rowData: null, userID: null }, "rowData"],
        ["/api/insertmicroapprow", { microAppID: null, rowData: { Name: "x" } }, "microAppID"],
        ["/api/removemicroapprow", { rowID: null }, "rowID"],
        ["/api/login", { email: null, password: demoCredentials.password }, "email"]
      ]
      for (const [path, body, field] of cases) {
        const message = yield* refusal(server, path, body)
        expect(message).toContain(field)
        expect(message).toContain("null")
      }
      expect(yield* stateRow(server, rowID)).toEqual(before)
      expect(yield* server.rows.table(projectsMicroAppID)).toHaveLength(300)
    }).pipe(withServer()))
})

// --- `microapp serve` ----------------------------------------------------------------------------

const bin = path.join(fileURLToPath(new URL("..", import.meta.url)), "dist", "cli", "bin.js")

/** `microapp serve` as a child process (built by the global setup), stopped with the scope. */
const served = (rows: number) =>
  Effect.acquireRelease(
    Effect.async<{ readonly baseUrl: string; readonly stop: Effect.Effect<void> }, Error>((resume) => {
      const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--rows", String(rows)], { stdio: "pipe" })
      const stop = Effect.sync(() => {
        child.kill("SIGKILL")
      })
      let stdout = ""
      const onData = (text: string) => {
        stdout += text
        const url = /listening on (http:\/\/\S+)/.exec(stdout)?.[1]
        if (url === undefined) return
        child.stdout.off("data", onData)
        child.off("exit", onExit)
        resume(Effect.succeed({ baseUrl: url, stop }))
      }
      const onExit = (code: number | null) =>
        resume(Effect.fail(new Error(`microapp serve exited with ${code}: ${stdout}`)))
      child.stdout.setEncoding("utf8").on("data", onData)
      child.once("exit", onExit)
      return stop
    }),
    (server) => server.stop
  )

describe("microapp serve", () => {
  it.scopedLive("answers the official client's plain, paged and row reads and its update", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* served(40)
      const target = { baseUrl, credentials: demoCredentials }
      const tables = demoTables({ projectRows: 40 })
      const projects = tables.find((table) => table.microAppID === projectsMicroAppID)?.rows ?? []
      expect(projects).toHaveLength(40)
      expect(ids(yield* read(target, plainRead))).toEqual(ids(projects))
      const page = yield* read(target, pagedRead("1", -1, "10", 25))
      expect(ids(page)).toEqual(ids([...projects].sort(byField("Name", -1)).slice(10, 35)))
      const rowID = String(projects[1]?.["_id"])
      const update = yield* post(target, "/api/updatemicroapprow", { rowID, rowData: { Status: "Done" } })
      expect(update).toEqual({ status: 200, body: { status: "success" } })
      expect(yield* readRow(target, rowID)).toMatchObject({ _id: rowID, Status: "Done" })
      const refused = yield* refusal(target, "/api/microappdata", { ...plainRead, optLimit: 5 })
      expect(refused).toBe("optLimit is not emulated by this emulator")
    }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
})
