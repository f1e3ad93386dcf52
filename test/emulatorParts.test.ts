/**
 * The emulator's parts on their own: the row store, the sessions, the request log and the faults.
 * Over HTTP they are tested through the server in the `emulator.*.test.ts` files.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Exit, FastCheck as FC, Option } from "effect"
import { demoCredentials, type FaultKind, MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { makeFaults } from "../src/testing/internal/fault.js"
import * as RequestLog from "../src/testing/internal/requestLog.js"
import * as RowStore from "../src/testing/internal/rowStore.js"
import * as Sessions from "../src/testing/internal/sessions.js"
import * as TableQuery from "../src/testing/internal/tableQuery.js"
import { numbersTable, recordingTracer, taskID, tasksMicroAppID, tasksTable } from "./support.js"

const numbersID = "6e0000000000000000000001"
const ids = (rows: ReadonlyArray<{ readonly [key: string]: unknown }>) => rows.map((row) => row["_id"])

describe("RowStore", () => {
  const store = RowStore.make([numbersTable(numbersID, 5), tasksTable(3, [1])], "owner-1")

  it.effect("keeps natural order through inserts at a position and deletes, and fills in metadata", () =>
    Effect.gen(function*() {
      const rows = yield* store
      const before = ids(yield* rows.table(numbersID))
      const inserted = yield* rows.insertRow(numbersID, { N: 99 }, { index: 2 })
      expect(inserted["userID"]).toBe("owner-1")
      expect(typeof inserted["_id"]).toBe("string")
      expect(ids(yield* rows.table(numbersID))).toEqual([...before.slice(0, 2), inserted["_id"], ...before.slice(2)])
      expect(yield* rows.removeRow(String(before[0]))).toBe(true)
      expect(yield* rows.removeRow(String(before[0]))).toBe(false)
      expect(Option.isNone(yield* rows.getRow(String(before[0])))).toBe(true)
      expect(ids(yield* rows.table(numbersID))).toEqual([...before.slice(1, 2), inserted["_id"], ...before.slice(2)])
      expect(Option.isNone(yield* rows.tryInsertRow("ffffffffffffffffffffffff", {}, "owner-1"))).toBe(true)
    }))

  it.effect("updates by label, refuses a locked row, counts what was applied", () =>
    Effect.gen(function*() {
      const rows = yield* store
      expect(yield* rows.updateRow(taskID(0), { Title: "changed" })).toBe("updated")
      expect(yield* rows.updateRow(taskID(0), { Title: "again" })).toBe("updated")
      expect(yield* rows.updateRow(taskID(1), { Title: "no" })).toBe("locked")
      expect(yield* rows.updateRow("ffffffffffffffffffffffff", { Title: "no" })).toBe("notFound")
      expect(Option.getOrThrow(yield* rows.getRow(taskID(0)))["Title"]).toBe("again")
      expect(yield* rows.appliedUpdates).toEqual(new Map([[taskID(0), 2]]))
    }))

  it.effect("answers a query under the limits given, and 404 for an unknown Microapp", () =>
    Effect.gen(function*() {
      const rows = yield* store
      const all = yield* rows.query({ microAppID: numbersID, filters: [], sortPaging: [] }, {
        defaultLimit: 3,
        maxLimit: undefined
      })
      expect(Either.map(all, (page) => page.length)).toEqual(Either.right(3))
      const unknown = yield* rows.query({ microAppID: "ffffffffffffffffffffffff", filters: [], sortPaging: [] }, {
        defaultLimit: 3,
        maxLimit: undefined
      })
      expect(Either.getLeft(unknown)).toEqual(Option.some({ status: 404, message: "Microapp not found" }))
    }))

  const change = FC.oneof(
    FC.record({ op: FC.constant("insert" as const), at: FC.nat(30), n: FC.integer({ min: -5, max: 30 }) }),
    FC.record({ op: FC.constant("remove" as const), at: FC.nat(30) }),
    FC.record({ op: FC.constant("update" as const), at: FC.nat(30), n: FC.integer({ min: -5, max: 30 }) }),
    FC.record({ op: FC.constant("reload" as const) })
  )
  const query = FC.record({
    parity: FC.constantFrom(undefined, "even", "odd"),
    order: FC.constantFrom(undefined, 1 as const, -1 as const),
    skip: FC.nat(12),
    limit: FC.integer({ min: 1, max: 12 })
  })

  it.effect.prop(
    "answers each query from the table as it stands, whatever changed it since the last one",
    [FC.array(FC.tuple(change, query), { maxLength: 25 })],
    ([steps]) =>
      Effect.gen(function*() {
        const definition = numbersTable(numbersID, 12)
        const rows = yield* RowStore.make([definition], "owner-1")
        const idAt = (at: number) => Effect.map(rows.table(numbersID), (table) => String(table[at % table.length]?._id))
        for (const [step, q] of steps) {
          if (step.op === "insert") {
            yield* rows.insertRow(numbersID, { N: step.n, Parity: step.n % 2 === 0 ? "even" : "odd" }, {
              index: step.at
            })
          } else if (step.op === "remove") {
            yield* rows.removeRow(yield* idAt(step.at))
          } else if (step.op === "update") {
            yield* rows.updateRow(yield* idAt(step.at), { N: step.n, Parity: "odd" })
          } else {
            yield* rows.setRows(numbersID, [...(yield* rows.table(numbersID))].reverse())
          }
          const asked = {
            microAppID: numbersID,
            filters: q.parity === undefined ? [] : [{ fieldID: "f_parity", value: q.parity }],
            sortPaging: [{
              ...(q.order === undefined ? {} : { field: 1, order: q.order }),
              skip: q.skip,
              limit: q.limit
            }]
          }
          const limits = { defaultLimit: 100, maxLimit: undefined }
          const fresh = Either.map(
            TableQuery.selectRows(definition, yield* rows.table(numbersID), asked),
            (selected) => TableQuery.pageOf(selected, asked, limits)
          )
          expect(ids(Either.getOrThrow(yield* rows.query(asked, limits)))).toEqual(ids(Either.getOrThrow(fresh)))
        }
      }),
    { fastCheck: { numRuns: 40 } }
  )

  it.effect("dies on a duplicate row id and on an unknown Microapp", () =>
    Effect.gen(function*() {
      const rows = yield* store
      const [first] = yield* rows.table(numbersID)
      expect(Exit.isFailure(yield* Effect.exit(rows.setRows(numbersID, [first ?? {}, first ?? {}])))).toBe(true)
      expect(Exit.isFailure(yield* Effect.exit(rows.table("ffffffffffffffffffffffff")))).toBe(true)
      expect(Exit.isFailure(yield* Effect.exit(RowStore.make([tasksTable(2), tasksTable(2)], "x")))).toBe(true)
      expect(tasksMicroAppID).not.toBe(numbersID)
    }))
})

describe("Sessions", () => {
  const readOnly = {
    ...demoCredentials,
    userId: "reader",
    email: "reader@example.com",
    authToken: "reader-token",
    readOnly: true
  }

  it.effect("initial tokens are current; a login issues a fresh one; expiry ends them all", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions.make([demoCredentials, readOnly])
      const { authToken, email, password, userId } = demoCredentials
      expect(yield* sessions.authenticate(authToken, userId)).toEqual(Option.some(userId))
      expect(yield* sessions.authenticate(authToken, "reader")).toEqual(Option.none())
      expect(yield* sessions.login(email, "wrong")).toEqual(Option.none())
      const fresh = Option.getOrThrow(yield* sessions.login(email, password))
      expect(fresh.authToken).not.toBe(authToken)
      expect(yield* sessions.authenticate(fresh.authToken, userId)).toEqual(Option.some(userId))
      yield* sessions.expireTokens
      expect(yield* sessions.authenticate(authToken, userId)).toEqual(Option.none())
      expect(yield* sessions.authenticate(fresh.authToken, userId)).toEqual(Option.none())
      expect(yield* sessions.canWrite(userId)).toBe(true)
      expect(yield* sessions.canWrite("reader")).toBe(false)
    }))
})

describe("RequestLog", () => {
  const arriving = (path: string, body: unknown, fault?: FaultKind): RequestLog.Arriving => ({
    method: "POST",
    path,
    body: JSON.stringify(body),
    authorized: true,
    latency: Duration.zero,
    fault: () => fault === undefined ? undefined : { kind: fault, retryAfterSeconds: 1, retryAfterAsDate: false }
  })

  it.effect("records arrivals in order with the requests in flight, how they ended, and no password", () =>
    Effect.gen(function*() {
      const log = yield* RequestLog.make
      const first = yield* log.begin(arriving("/api/login", { email: "a", password: "secret" }))
      const second = yield* log.begin(arriving("/api/microappdata", {}, "hang"))
      yield* first.complete({ status: 200 })
      yield* first.end
      yield* second.abandon
      yield* second.end
      const third = yield* log.begin(arriving("/api/microappdata", {}))
      yield* third.complete({ status: 500, outcome: "dropped" })
      yield* third.abandon
      const records = yield* log.requests
      expect(records.map((record) => [record.seq, record.inFlight, record.outcome, record.status])).toEqual([
        [0, 1, "answered", 200],
        [1, 2, "hung", undefined],
        [2, 1, "dropped", 500]
      ])
      expect(records[0]?.body).toEqual({ email: "a", password: "<redacted>" })
      expect(records[1]?.fault).toBe("hang")
      yield* log.clear
      expect(yield* log.requests).toEqual([])
      expect((yield* log.begin(arriving("/x", {}))).record.seq).toBe(0)
    }))

  it.effect("counts the requests not yet finished, cleared ones included; a record read again shows how it ended", () =>
    Effect.gen(function*() {
      const log = yield* RequestLog.makeWithCapacity(1)
      const first = yield* log.begin(arriving("/api/microappdata", {}))
      const second = yield* log.begin(arriving("/api/microappdata", { n: 2 }))
      expect(yield* log.unfinished).toBe(2)
      expect((yield* log.requests).map((record) => [record.seq, record.finishedAt, record.status])).toEqual([
        [1, undefined, undefined]
      ])
      yield* second.complete({ status: 200 })
      yield* second.complete({ status: 500 })
      expect(yield* log.unfinished).toBe(1)
      expect((yield* log.requests).map((record) => [record.seq, record.finishedAt, record.status])).toEqual([
        [1, 0, 500]
      ])
      yield* log.clear
      expect(yield* log.unfinished).toBe(1)
      yield* first.abandon
      yield* first.abandon
      expect(yield* log.unfinished).toBe(0)
    }))

  it.effect("keeps one hook until it is cleared", () =>
    Effect.gen(function*() {
      const log = yield* RequestLog.make
      expect(Option.isNone(yield* log.hook)).toBe(true)
      yield* log.onRequest(() => Effect.void)
      expect(Option.isSome(yield* log.hook)).toBe(true)
      yield* log.clearHook
      expect(Option.isNone(yield* log.hook)).toBe(true)
    }))
})

describe("Faults", () => {
  it.effect("an injected fault hits the next matching requests, ahead of the plan, never a login by default", () =>
    Effect.gen(function*() {
      const faults = makeFaults(undefined)
      yield* faults.inject("http503", { count: 2, path: "/api/microappdata" })
      yield* faults.inject("drop")
      expect(faults.decide("/api/login")).toBeUndefined()
      expect(faults.decide("/api/microappdata")?.kind).toBe("http503")
      expect(faults.decide("/api/updatemicroapprow")?.kind).toBe("drop")
      expect(faults.decide("/api/microappdata")?.kind).toBe("http503")
      expect(faults.decide("/api/microappdata")).toBeUndefined()
    }))

  it.effect("a seeded plan decides the same faults for the same requests, and none once removed", () =>
    Effect.gen(function*() {
      const plan = { seed: 11, rate: 0.3, kinds: ["http500", "drop"] as const }
      const decisions = () => {
        const faults = makeFaults(plan)
        return Array.from({ length: 200 }, () => faults.decide("/api/microappdata")?.kind)
      }
      const first = decisions()
      expect(decisions()).toEqual(first)
      const hits = first.filter((kind) => kind !== undefined).length
      expect(hits).toBeGreaterThan(30)
      expect(hits).toBeLessThan(90)
      const faults = makeFaults(plan)
      yield* faults.setPlan(undefined)
      expect(Array.from({ length: 50 }, () => faults.decide("/api/microappdata"))).toEqual(Array(50).fill(undefined))
    }))
})

describe("the emulator's spans", () => {
  it.live("redact X-Auth-Token and Authorization, and hold no password", () =>
    Effect.gen(function*() {
      const { spans, tracer: recording } = yield* recordingTracer
      const server = yield* Effect.withTracer(MicroappServer.make({ demoRows: 3 }), recording)
      const { authToken, email, password, userId } = server.credentials
      const post = (path: string, body: unknown, headers: Record<string, string>) =>
        Effect.promise(() =>
          fetch(`${server.baseUrl}${path}`, {
            method: "POST",
            headers: { "content-type": "application/json", ...headers },
            body: JSON.stringify(body)
          }).then((response) => response.status)
        )
      expect(yield* post("/api/login", { email, password }, {})).toBe(200)
      expect(
        yield* post("/api/microappdata", { microAppID: projectsMicroAppID }, {
          "x-auth-token": authToken,
          "x-user-id": userId,
          authorization: `Bearer ${authToken}`
        })
      ).toBe(200)
      const request = spans.find((span) => span.attributes.has("http.request.header.x-auth-token"))
      expect(request?.attributes.get("http.request.header.x-auth-token")).toBe("<redacted>")
      expect(request?.attributes.get("http.request.header.authorization")).toBe("<redacted>")
      const values = spans.flatMap((span) => Array.from(span.attributes.values(), String))
      expect(values.filter((value) => value.includes(authToken) || value.includes(password))).toEqual([])
      expect(spans.length).toBeGreaterThanOrEqual(2)
    }).pipe(Effect.scoped))
})
