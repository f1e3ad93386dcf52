import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigError, ConfigProvider, DateTime, Effect, Either, Layer, Redacted, Schema } from "effect"
import { MicroappClient, type MicroappError, Row } from "../src/index.js"
import { demoCredentials, MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { bodiesTo, loginLayer, onTestClock, refusedClient, withEmulator } from "./support.js"

const projects = projectsMicroAppID
const rowsPath = "/api/microappdata"

/** The error a failing effect ends with, as a value. */
const failure = <A>(effect: Effect.Effect<A, MicroappError, MicroappClient | MicroappServer>) => Effect.flip(effect)

describe("query", () => {
  it.live("always sends an explicit limit, skip as a numeric string", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const rows = yield* client.query({ microAppID: projects })
      const [body] = yield* bodiesTo(rowsPath)
      expect(rows).toHaveLength(50)
      expect(body).toEqual({
        microAppID: projects,
        searchFilter: [{ resourceID: projects, skip: "0", limit: 50 }]
      })
    }).pipe(Effect.provide(withEmulator({ demoRows: 120 }, { retry: false, pageSize: 50 }))))

  it.live("returns every row the server has for one request, in natural order (seed rule 1)", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const server = yield* MicroappServer
      const rows = yield* client.query({ microAppID: projects, limit: 1000 })
      const table = yield* server.rows.table(projects)
      expect(rows.map((row) => row._id)).toEqual(table.map((row) => row._id))
    }).pipe(Effect.provide(withEmulator({ demoRows: 300 }))))

  it.live("narrows by every filter at once (seed rule 2), sending fieldIDs with the resourceID", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const server = yield* MicroappServer
      const rows = yield* client.query({
        microAppID: projects,
        filters: [{ fieldID: "f_status", value: "Open" }, { fieldID: "f_priority", value: 3 }],
        limit: 1000
      })
      const expected = (yield* server.rows.table(projects)).filter((row) => row.Status === "Open" && row.Priority === 3)
      expect(expected.length).toBeGreaterThan(0)
      expect(rows.map((row) => row._id)).toEqual(expected.map((row) => row._id))
      const [body] = yield* bodiesTo(rowsPath)
      expect(body).toMatchObject({
        optSearchFilters: [
          { resourceID: projects, fieldID: "f_status", value: "Open" },
          { resourceID: projects, fieldID: "f_priority", value: "3" }
        ]
      })
    }).pipe(Effect.provide(withEmulator({ demoRows: 300 }))))

  it.live("sorts by a configured sort field in either direction (seed rule 3)", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const server = yield* MicroappServer
      const table = yield* server.rows.table(projects)
      const budgets = table.map((row) => Number(row.Budget))
      const ascending = yield* client.query({ microAppID: projects, sort: { field: 2 }, limit: 1000 })
      const descending = yield* client.query({ microAppID: projects, sort: { field: "2", order: "desc" }, limit: 1000 })
      expect(ascending.map((row) => row.Budget)).toEqual([...budgets].sort((a, b) => a - b))
      expect(descending.map((row) => row.Budget)).toEqual([...budgets].sort((a, b) => b - a))
      const bodies = yield* bodiesTo(rowsPath)
      expect(bodies[1]).toMatchObject({ searchFilter: [{ field: "2", order: -1 }] })
    }).pipe(Effect.provide(withEmulator({ demoRows: 200 }))))

  it.live("pages with skip and limit, sorted, in one searchFilter element (seed rules 4 and 5)", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const all = yield* client.query({ microAppID: projects, sort: { field: 1 }, limit: 1000 })
      const page = yield* client.query({ microAppID: projects, sort: { field: 1 }, skip: 20, limit: 7 })
      expect(page.map((row) => row._id)).toEqual(all.slice(20, 27).map((row) => row._id))
      const bodies = yield* bodiesTo(rowsPath)
      expect(bodies[1]).toEqual({
        microAppID: projects,
        searchFilter: [{ resourceID: projects, field: "1", order: 1, skip: "20", limit: 7 }]
      })
    }).pipe(Effect.provide(withEmulator({ demoRows: 100 }))))

  it.live("sends further sort keys as further elements", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const server = yield* MicroappServer
      const rows = yield* client.query({
        microAppID: projects,
        sort: [{ field: 4, order: "desc" }, { field: 1 }],
        limit: 1000
      })
      const table = yield* server.rows.table(projects)
      const expected = [...table].sort((a, b) =>
        Number(b.Priority) - Number(a.Priority) || String(a.Name).localeCompare(String(b.Name))
      )
      expect(rows.map((row) => row._id)).toEqual(expected.map((row) => row._id))
    }).pipe(Effect.provide(withEmulator({ demoRows: 150 }))))

  it.live("hands back the serviceFormat body untouched", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const raw = yield* client.queryRaw({ microAppID: projects, limit: 3 })
      const [body] = yield* bodiesTo(rowsPath)
      expect(body).toMatchObject({ serviceFormat: true })
      expect(Either.isLeft(Either.try(() => JSON.parse(raw)))).toBe(true)
      expect(raw.split("\n")).toHaveLength(3)
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }))))
})

describe("rows as the service returns them", () => {
  it.live("decode with metadata, cross-application and location values, unknown keys kept", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const rows = yield* client.query({ microAppID: projects, limit: 100 })
      const owned = rows.find((row) => row.Owner !== undefined)
      expect(owned).toBeDefined()
      const row = yield* client.getRow(owned?._id ?? "")
      expect(row._id).toMatch(/^[0-9a-f]{24}$/)
      expect(typeof row.submitted).toBe("number")
      const owner = yield* Schema.decodeUnknown(Row.CrossAppValue)(row.Owner)
      expect(owner.crossAppRowID).toMatch(/^[0-9a-f]{24}$/)
      expect(owner.value.label).toBe("Name")
      const site = yield* Schema.decodeUnknown(Row.LocationValue)(row.Site)
      expect(site.address.geometry.type).toBe("point")
      expect(row.Tags).toBeInstanceOf(Array)
      const submitted = yield* Schema.decodeUnknown(Row.ClientSubmitted)(row.clientSubmitted)
      expect(DateTime.toEpochMillis(submitted)).toBe(Math.floor(Number(row.submitted) / 1000) * 1000)
      expect(Schema.encodeSync(Row.ClientSubmitted)(submitted)).toBe(row.clientSubmitted)
    }).pipe(Effect.provide(withEmulator({ demoRows: 100 }))))

  it.live("a row that breaks the seed's types is UnexpectedResponse naming its index, _id and field", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const server = yield* MicroappServer
      const table = yield* server.rows.table(projects)
      const broken = table.map((row, i) => i === 3 ? { ...row, submitted: "yesterday" } : row)
      yield* server.rows.setRows(projects, broken)
      const error = yield* failure(client.query({ microAppID: projects, limit: 10 }))
      expect(error).toMatchObject({
        _tag: "UnexpectedResponse",
        kind: "Row",
        rowIndex: 3,
        rowID: table[3]?._id,
        fieldPath: "submitted",
        path: rowsPath
      })
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }))))
})

describe("getRow", () => {
  it.live("an unknown row is NotFound with the rowID and the server's 404", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const error = yield* failure(client.getRow("ffffffffffffffffffffffff"))
      expect(error).toMatchObject({ _tag: "NotFound", rowID: "ffffffffffffffffffffffff", status: 404 })
      expect(error.message).toContain("Row not found")
    }).pipe(Effect.provide(withEmulator({ demoRows: 5 }))))
})

describe("updateRow", () => {
  it.live("sets fields by label; the row reads back changed", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const [first] = yield* client.query({ microAppID: projects, limit: 1 })
      const rowID = first?._id ?? ""
      yield* client.updateRow({ rowID, rowData: { Name: "Renamed", Budget: 1234.5 } })
      const row = yield* client.getRow(rowID)
      expect(row.Name).toBe("Renamed")
      expect(row.Budget).toBe(1234.5)
      const [body] = yield* bodiesTo("/api/updatemicroapprow")
      expect(body).toEqual({ rowID, rowData: { Name: "Renamed", Budget: 1234.5 } })
    }).pipe(Effect.provide(withEmulator({ demoRows: 5 }))))

  it.live("a misspelt label is silently dropped by the server: the call succeeds and nothing changes", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const [first] = yield* client.query({ microAppID: projects, limit: 1 })
      const rowID = first?._id ?? ""
      yield* client.updateRow({ rowID, rowData: { name: "lost" } })
      const row = yield* client.getRow(rowID)
      expect(row.Name).toBe(first?.Name)
      expect(row.name).toBeUndefined()
    }).pipe(Effect.provide(withEmulator({ demoRows: 5 }))))

  it.live("an unknown row is NotFound naming the row", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const error = yield* failure(client.updateRow({ rowID: "ffffffffffffffffffffffff", rowData: { Name: "x" } }))
      expect(error).toMatchObject({ _tag: "NotFound", status: 404, rowID: "ffffffffffffffffffffffff", attempts: 1 })
    }).pipe(Effect.provide(withEmulator({ demoRows: 5 }))))

  it.live("null clears a cross-application field", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const rows = yield* client.query({ microAppID: projects, limit: 50 })
      const owned = rows.find((row) => row.Owner !== undefined)
      yield* client.updateRow({ rowID: owned?._id ?? "", rowData: { Owner: null } })
      const row = yield* client.getRow(owned?._id ?? "")
      expect(row.Owner ?? null).toBeNull()
    }).pipe(Effect.provide(withEmulator({ demoRows: 50 }))))

  it.live("a refusal inside a 200 (a locked row) is RequestRejected with the server's message", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const server = yield* MicroappServer
      const locked = (yield* server.rows.table(projects)).find((row) => row.isLocked === true)
      expect(locked).toBeDefined()
      const error = yield* failure(client.updateRow({ rowID: String(locked?._id), rowData: { Name: "x" } }))
      expect(error).toMatchObject({
        _tag: "RequestRejected",
        status: 200,
        serverStatus: "error",
        serverMessage: "Row is locked",
        method: "POST",
        path: "/api/updatemicroapprow"
      })
    }).pipe(Effect.provide(withEmulator({ demoRows: 200 }))))
})

describe("invalid input is refused before anything is sent", () => {
  const cases: ReadonlyArray<
    readonly [string, (client: MicroappClient.Service) => Effect.Effect<unknown, MicroappError>, string]
  > = [
    ["empty microAppID", (c) => c.query({ microAppID: " " }), "microAppID"],
    ["negative skip", (c) => c.query({ microAppID: projects, skip: -1 }), "skip"],
    ["fractional limit", (c) => c.query({ microAppID: projects, limit: 2.5 }), "limit"],
    ["zero limit", (c) => c.query({ microAppID: projects, limit: 0 }), "limit"],
    ["sort field 0", (c) => c.query({ microAppID: projects, sort: { field: 0 } }), "sort.field"],
    ["sort field not a number", (c) => c.query({ microAppID: projects, sort: { field: "Name" } }), "sort.field"],
    [
      "empty filter fieldID",
      (c) => c.query({ microAppID: projects, filters: [{ fieldID: "", value: "x" }] }),
      "filters.0.fieldID"
    ],
    ["empty rowID", (c) => c.getRow(""), "rowID"],
    [
      "rowData not an object",
      (c) => c.updateRow({ rowID: "a", rowData: [] as unknown as Record<string, unknown> }),
      "rowData"
    ],
    ["empty rowData", (c) => c.updateRow({ rowID: "a", rowData: {} }), "rowData"],
    ["an undefined value", (c) => c.updateRow({ rowID: "a", rowData: { Name: undefined } }), "rowData.Name"],
    ["NaN", (c) => c.updateRow({ rowID: "a", rowData: { Budget: Number.NaN } }), "rowData.Budget"],
    ["a system key", (c) => c.updateRow({ rowID: "a", rowData: { _id: "b" } }), "rowData"],
    ["a page size of 0", (c) => c.collect({ microAppID: projects, pageSize: 0, max: 1 }), "pageSize"]
  ]
  for (const [name, call, input] of cases) {
    it.live(name, () =>
      Effect.gen(function*() {
        const client = yield* MicroappClient
        const server = yield* MicroappServer
        const error = yield* Effect.flip(call(client))
        expect(error._tag).toBe("InvalidInput")
        expect(error).toMatchObject({ input })
        expect(yield* server.log.requests).toEqual([])
      }).pipe(Effect.provide(withEmulator({ demoRows: 1 }))))
  }

  it.live("a base URL that is not http(s) fails every call the same way", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const error = yield* Effect.flip(client.getRow("abc"))
      expect(error).toMatchObject({ _tag: "InvalidInput", input: "baseUrl" })
    }).pipe(
      Effect.provide(
        MicroappClient.layer({ baseUrl: "ftp://example", authToken: Redacted.make("t"), userId: "u" }).pipe(
          Layer.provide(NodeHttpClient.layerUndici)
        )
      )
    ))
})

describe("errors from real responses", () => {
  it.live("a wrong token is Unauthorized with the server's message", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const error = yield* Effect.flip(
        Effect.flatMap(MicroappClient, (client) => client.query({ microAppID: projects })).pipe(
          Effect.provide(
            MicroappClient.layer({
              baseUrl: server.baseUrl,
              authToken: Redacted.make("not-the-token"),
              userId: server.credentials.userId,
              retry: false
            }).pipe(Layer.provide(NodeHttpClient.layerUndici))
          )
        )
      )
      expect(error).toMatchObject({
        _tag: "Unauthorized",
        status: 401,
        serverMessage: "You must be logged in to do this.",
        method: "POST",
        path: rowsPath
      })
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 1 }))))

  it.live("a user who may only read is Forbidden to update", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const [row] = yield* client.query({ microAppID: projects, limit: 1 })
      const error = yield* failure(client.updateRow({ rowID: row?._id ?? "", rowData: { Name: "x" } }))
      expect(error).toMatchObject({ _tag: "Forbidden", status: 403, path: "/api/updatemicroapprow" })
      expect(error.message).toContain("permission")
    }).pipe(Effect.provide(withEmulator({ demoRows: 3, users: [{ ...demoCredentials, readOnly: true }] }))))

  const faults = [
    ["http500", "ServerError", 500],
    ["http503Html", "ServerError", 503],
    ["http429", "RateLimited", 429],
    ["http408", "Timeout", 408],
    ["drop", "Transport", undefined],
    ["malformedJson", "UnexpectedResponse", 200]
  ] as const
  for (const [fault, tag, status] of faults) {
    it.live(`${fault} is ${tag}`, () =>
      Effect.gen(function*() {
        const client = yield* MicroappClient
        const server = yield* MicroappServer
        yield* server.faults.inject(fault)
        const error = yield* failure(client.query({ microAppID: projects }))
        expect(error._tag).toBe(tag)
        expect("status" in error ? error.status : undefined).toBe(status)
        expect(error).toMatchObject({ method: "POST", path: rowsPath, attempts: 1 })
      }).pipe(Effect.provide(withEmulator({ demoRows: 3 }))))
  }

  it.live("an HTML error page keeps a short text of the page as the server's message", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const server = yield* MicroappServer
      yield* server.faults.inject("http503Html")
      const error = yield* failure(client.query({ microAppID: projects }))
      expect(error._tag).toBe("ServerError")
      expect("serverMessage" in error ? error.serverMessage : "").not.toContain("<")
    }).pipe(Effect.provide(withEmulator({ demoRows: 3 }))))

  // on the live clock, whose timeout is a plain timer: short, as a hang never answers anyway
  it.live("a hang is Timeout after the per-call timeout", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const server = yield* MicroappServer
      yield* server.faults.inject("hang")
      const error = yield* failure(client.getRow("abc", { timeout: "20 millis" }))
      expect(error).toMatchObject({ _tag: "Timeout", timeoutMillis: 20, path: "/api/microappdata/row" })
    }).pipe(Effect.provide(withEmulator({ demoRows: 3 }))))

  it.live("a request the server rejects as bad is RequestRejected with its message", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const error = yield* failure(
        client.query({ microAppID: projects, filters: [{ fieldID: "no_such_field", value: "x" }] })
      )
      expect(error).toMatchObject({ _tag: "RequestRejected", status: 400 })
      expect("serverMessage" in error ? error.serverMessage : undefined).toBeTruthy()
    }).pipe(Effect.provide(withEmulator({ demoRows: 3 }))))

  it.live("an unknown Microapp is NotFound", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const error = yield* failure(client.query({ microAppID: "000000000000000000000000" }))
      expect(error).toMatchObject({ _tag: "NotFound", status: 404, microAppID: "000000000000000000000000" })
      expect(error.message).toContain("Microapp 000000000000000000000000 not found")
    }).pipe(Effect.provide(withEmulator({ demoRows: 3 }))))

  it.live("a refused connection is Transport, known not to have been sent", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const error = yield* Effect.flip(client.getRow("abc"))
      expect(error).toMatchObject({ _tag: "Transport", notSent: true })
    }).pipe(Effect.provide(refusedClient())))
})

describe("the token stays secret", () => {
  const token = "s3cr3t-token-value-that-must-not-leak"
  const leaks = (error: unknown) => {
    const texts = [String(error), JSON.stringify(error), error instanceof Error ? error.stack ?? "" : ""]
    return texts.some((text) => text.includes(token))
  }

  // on the test clock: the 429's Retry-After holds the next call back for a second of it
  it.effect("in no error's message, JSON or stack, from any kind of failure", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const server = yield* MicroappServer
      const errors: Array<unknown> = []
      for (const fault of ["http500", "http503Html", "http429", "drop", "malformedJson"] as const) {
        yield* server.faults.inject(fault)
        errors.push(yield* onTestClock(failure(client.query({ microAppID: projects }))))
      }
      errors.push(yield* onTestClock(failure(client.getRow("ffffffffffffffffffffffff"))))
      yield* server.sessions.expireTokens
      errors.push(yield* onTestClock(failure(client.getRow("ffffffffffffffffffffffff"))))
      expect(errors).toHaveLength(7)
      expect(errors.filter(leaks)).toEqual([])
    }).pipe(
      Effect.provide(
        withEmulator({
          demoRows: 3,
          users: [{ ...demoCredentials, authToken: token }]
        })
      )
    ))
})

describe("layers", () => {
  it.live("a base URL with a trailing slash never produces //api", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const rows = yield* Effect.flatMap(MicroappClient, (client) => client.query({ microAppID: projects })).pipe(
        Effect.provide(
          MicroappClient.layer({
            baseUrl: `${server.baseUrl}/`,
            authToken: Redacted.make(server.credentials.authToken),
            userId: server.credentials.userId
          }).pipe(Layer.provide(NodeHttpClient.layerUndici))
        )
      )
      expect(rows).toHaveLength(4)
      expect((yield* server.log.requests).map((record) => record.path)).toEqual([rowsPath])
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 4 }))))

  it.live("layerConfig reads MICROAPP_BASE_URL, MICROAPP_AUTH_TOKEN and MICROAPP_USER_ID", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const config = ConfigProvider.fromMap(
        new Map([
          ["MICROAPP_BASE_URL", server.baseUrl],
          ["MICROAPP_AUTH_TOKEN", server.credentials.authToken],
          ["MICROAPP_USER_ID", server.credentials.userId]
        ])
      )
      const rows = yield* Effect.flatMap(MicroappClient, (client) => client.query({ microAppID: projects })).pipe(
        Effect.provide(MicroappClient.layerConfig().pipe(Layer.provide(NodeHttpClient.layerUndici))),
        Effect.withConfigProvider(config)
      )
      expect(rows).toHaveLength(2)
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 2 }))))

  it.live("layerConfig without MICROAPP_AUTH_TOKEN says it is missing, in words not redacted", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const missing = yield* Effect.flip(
        Effect.flatMap(MicroappClient, (client) => client.query({ microAppID: projects })).pipe(
          Effect.provide(MicroappClient.layerConfig().pipe(Layer.provide(NodeHttpClient.layerUndici))),
          Effect.withConfigProvider(ConfigProvider.fromMap(
            new Map([["MICROAPP_BASE_URL", server.baseUrl], ["MICROAPP_USER_ID", server.credentials.userId]])
          ))
        )
      )
      expect(String(missing)).toContain("Expected MICROAPP_AUTH_TOKEN to exist")
      expect(String(missing)).not.toContain("<redacted>")
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 2 }))))

  it.live("layerConfig takes other Config values for each credential, and names the one missing", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const layer = MicroappClient.layerConfig({
        baseUrl: Config.string("URL").pipe(Config.nested("SERVICE")),
        authToken: Config.redacted("SERVICE_TOKEN"),
        userId: Config.succeed(server.credentials.userId),
        retry: false
      }).pipe(Layer.provide(NodeHttpClient.layerUndici))
      const query = Effect.flatMap(MicroappClient, (client) => client.query({ microAppID: projects }))
      const rows = yield* query.pipe(
        Effect.provide(layer),
        Effect.withConfigProvider(ConfigProvider.fromMap(
          new Map([["SERVICE.URL", server.baseUrl], ["SERVICE_TOKEN", server.credentials.authToken]])
        ))
      )
      expect(rows).toHaveLength(2)
      const missing = yield* Effect.flip(query.pipe(
        Effect.provide(layer),
        Effect.withConfigProvider(ConfigProvider.fromMap(
          new Map([
            ["SERVICE.URL", server.baseUrl],
            ["MICROAPP_AUTH_TOKEN", server.credentials.authToken]
          ])
        ))
      ))
      expect(ConfigError.isConfigError(missing)).toBe(true)
      expect(String(missing)).toContain("SERVICE_TOKEN")
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 2 }))))

  for (const loginShape of ["data", "flat"] as const) {
    it.live(`layerLogin logs in with email and password (${loginShape} answer)`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const rows = yield* Effect.flatMap(MicroappClient, (client) => client.query({ microAppID: projects })).pipe(
          Effect.provide(
            loginLayer(server)
          )
        )
        expect(rows).toHaveLength(2)
        const log = yield* server.log.requests
        expect(log.map((record) => record.path)).toEqual(["/api/login", rowsPath])
        expect(log[0]?.body).toEqual({ email: demoCredentials.email, password: "<redacted>" })
      }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 2, loginShape }))))
  }

  it.live("login hands back a working token, still Redacted, and the user id", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const credentials = yield* MicroappClient.login({
        baseUrl: server.baseUrl,
        email: demoCredentials.email,
        password: Redacted.make(demoCredentials.password)
      }).pipe(Effect.provide(NodeHttpClient.layerUndici))
      expect(credentials.userId).toBe(demoCredentials.userId)
      expect(String(credentials.authToken)).not.toContain(Redacted.value(credentials.authToken))
      const rows = yield* Effect.flatMap(MicroappClient, (client) => client.query({ microAppID: projects })).pipe(
        Effect.provide(
          MicroappClient.layer({ baseUrl: server.baseUrl, ...credentials }).pipe(
            Layer.provide(NodeHttpClient.layerUndici)
          )
        )
      )
      expect(rows).toHaveLength(2)
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 2 }))))

  it.live("layerLogin with a wrong password fails to build with Unauthorized", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const error = yield* Effect.flip(
        Effect.flatMap(MicroappClient, (client) => client.query({ microAppID: projects })).pipe(
          Effect.provide(
            MicroappClient.layerLogin({
              baseUrl: server.baseUrl,
              email: demoCredentials.email,
              password: Redacted.make("wrong")
            }).pipe(Layer.provide(NodeHttpClient.layerUndici))
          )
        )
      )
      expect(error).toMatchObject({ _tag: "Unauthorized", path: "/api/login", serverMessage: "Unauthorized" })
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 2 }))))
})
