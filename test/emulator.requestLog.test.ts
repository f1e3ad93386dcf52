/**
 * The emulator's request log and its hook: what is recorded, in flight, on which clock.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, TestClock, TestServices } from "effect"
import { demoCredentials, MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { ids, query, requests, send, withServer } from "./emulatorSupport.js"
import { awaitLog, onTestClock } from "./support.js"

const awaitSleep = Effect.gen(function*() {
  for (let attempt = 0; attempt < 400; attempt++) {
    if (Chunk.isNonEmpty(yield* TestClock.sleeps())) return
    yield* TestServices.provideLive(Effect.sleep("5 millis"))
  }
  return yield* Effect.dieMessage("the server never started sleeping")
})

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
