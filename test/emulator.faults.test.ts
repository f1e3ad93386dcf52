/**
 * The emulator's faults (statuses, drops, hangs, malformed answers, scripted and seeded plans), its close under a hanging request, and writes applied before a fault.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Exit, Fiber, Option, Schema, Scope } from "effect"
import type { FaultKind } from "../src/testing/index.js"
import { demoCredentials, MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { json, type Reply, requests, send, withServer } from "./emulatorSupport.js"
import { awaitLog, onTestClock } from "./support.js"

const projects = { microAppID: projectsMicroAppID, searchFilter: [{ limit: 2 }] }

const transportFailure = (exit: Either.Either<Reply, unknown>): boolean =>
  Either.isLeft(exit) &&
  typeof exit.left === "object" && exit.left !== null && "_tag" in exit.left && exit.left._tag === "RequestError"

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
