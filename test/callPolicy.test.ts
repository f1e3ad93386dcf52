import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Stream } from "effect"
import { MicroappClient } from "../src/index.js"
import { MicroappServer } from "../src/testing/index.js"
import { numbersTable, onTestClock, withEmulator } from "./support.js"

const numbers = "000000000000000000000c01"
const rowsPath = "/api/microappdata"
const rowPath = "/api/microappdata/row"
const updatePath = "/api/updatemicroapprow"
const table = numbersTable(numbers, 300)
const firstID = table.rows[0]?._id ?? ""

/** Requests the emulator saw on `path`. */
const requestsTo = (path: string) =>
  Effect.flatMap(
    MicroappServer,
    (server) => Effect.map(server.log.requests, (log) => log.filter((record) => record.path === path).length)
  )

const retrying = { maxAttempts: 5, initialDelay: "1 millis", maxDelay: "5 millis" } as const

describe("a call's own retry policy, over the client's", () => {
  it.effect("retry: false sends once, where the client would try five times", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("http503", { path: rowPath, count: 3 })
      const error = yield* Effect.flip(onTestClock(client.getRow(firstID, { retry: false })))
      expect(error).toMatchObject({ _tag: "ServerError", status: 503 })
      expect(yield* requestsTo(rowPath)).toBe(1)
      // the client's own policy goes through the two faults left
      expect((yield* onTestClock(client.getRow(firstID)))._id).toBe(firstID)
      expect(yield* requestsTo(rowPath)).toBe(4)
    }).pipe(Effect.provide(withEmulator({ tables: [table] }, { retry: retrying }))))

  it.effect("maxAttempts replaces the client's, and the fields it leaves out stay the client's", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("http500", { path: rowsPath, count: 4 })
      const error = yield* Effect.flip(onTestClock(client.query({ microAppID: numbers, retry: { maxAttempts: 2 } })))
      expect(error).toMatchObject({ _tag: "ServerError", status: 500, attempts: 2 })
      expect(yield* requestsTo(rowsPath)).toBe(2)
      // the delays left out are the client's 1-5 ms, not the default's 250 ms and up: on the test
      // clock, 3 attempts fit within 20 ms
      const rows = yield* onTestClock(
        client.query({ microAppID: numbers, limit: 5, retry: { maxAttempts: 3, maxElapsed: "20 millis" } })
      )
      expect(rows.map((row) => row._id)).toEqual(table.rows.slice(0, 5).map((row) => row._id))
      expect(yield* requestsTo(rowsPath)).toBe(5)
    }).pipe(Effect.provide(withEmulator({ tables: [table] }, { retry: retrying }))))

  it.effect("a call may retry on a client that does not", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("http500", { path: rowPath, count: 2 })
      const row = yield* onTestClock(client.getRow(firstID, { retry: { maxAttempts: 3, initialDelay: "1 millis" } }))
      expect(row._id).toBe(firstID)
      expect(yield* requestsTo(rowPath)).toBe(3)
    }).pipe(Effect.provide(withEmulator({ tables: [table] }, { retry: false }))))

  it.effect("a scan's policy holds for each of its pages", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      const options = { microAppID: numbers, pageSize: 100, concurrency: 1, retry: { maxAttempts: 3 } }
      // two faults on each of two pages: each page recovers on its third attempt
      yield* server.faults.inject("http500", { path: rowsPath, count: 2 })
      const scan = yield* client.scan(options)
      const rows = yield* onTestClock(
        Stream.runCollect(Stream.tap(scan.rows, (row) =>
          row.N === 150 ? server.faults.inject("http500", { path: rowsPath, count: 2 }) : Effect.void))
      )
      expect(
        Chunk.toReadonlyArray(rows).map((row) =>
          row._id
        )
      ).toEqual(table.rows.map((row) => row._id))
      expect((yield* scan.summary).retries).toBe(4)
      // three faults on one page are one too many
      yield* server.faults.inject("http500", { path: rowsPath, count: 3 })
      const error = yield* Effect.flip(onTestClock(Stream.runDrain(client.rows(options))))
      expect(error).toMatchObject({ _tag: "ServerError", attempts: 3 })
    }).pipe(Effect.provide(withEmulator({ tables: [table] }, { retry: retrying }))))

  it.effect("updateRow and updateRows: each update's own policy", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("http429", { path: updatePath, retryAfterSeconds: 1 })
      const refused = yield* Effect.flip(
        onTestClock(client.updateRow({ rowID: firstID, rowData: { N: -1 }, retry: false }))
      )
      expect(refused).toMatchObject({ _tag: "RateLimited", status: 429 })
      expect(yield* requestsTo(updatePath)).toBe(1)
      yield* server.faults.inject("http429", { path: updatePath, retryAfterSeconds: 1, count: 2 })
      const outcomes = yield* onTestClock(Stream.runCollect(client.updateRows(Stream.make<
        Array<MicroappClient.UpdateOptions>
      >(
        { rowID: firstID, rowData: { N: -1 }, retry: false },
        { rowID: firstID, rowData: { N: -2 } }
      ))))
      expect(Chunk.toReadonlyArray(outcomes).map((outcome) => outcome._tag)).toEqual(["Failed", "Updated"])
      expect(yield* requestsTo(updatePath)).toBe(4)
      expect((yield* server.rows.table(numbers))[0]).toMatchObject({ N: -2 })
    }).pipe(Effect.provide(withEmulator({ tables: [table] }, { retry: retrying }))))
})
