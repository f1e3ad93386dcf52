import { describe, expect, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Fiber, List, Logger, LogLevel, Stream, TestClock } from "effect"
import { MicroappClient } from "../src/index.js"
import { makeRateGate } from "../src/internal/http/retry.js"
import { demoCredentials, type FaultKind, MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import {
  advanceUntil,
  awaitLog,
  loginLayer,
  nobodyAt,
  numbersTable,
  onTestClock,
  quiet,
  refusedBaseUrl,
  refusedClient,
  runAtOnTestClock,
  withEmulator
} from "./support.js"

const numbers = "000000000000000000000n02"
const projects = projectsMicroAppID

const requestCount = Effect.flatMap(MicroappServer, (server) => Effect.map(server.log.requests, (log) => log.length))

/** Waits (in real time) until the emulator has seen `n` requests; how many it has seen. */
const awaitRequests = (n: number) => Effect.map(awaitLog((log) => log.length >= n), (log) => log.length)

/**
 * Moves the test clock from one wake-up of the client to the next until the emulator has seen `n`
 * requests; the virtual milliseconds that took, exactly.
 */
const advanceUntilRequests = (n: number, limit: Duration.DurationInput) =>
  advanceUntil(Effect.map(requestCount, (count) => count >= n), limit)

describe("reads retry transient failures", () => {
  it.effect("with exponential backoff, timed by the clock", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("http500", { count: 2 })
      const fiber = yield* Effect.fork(client.query({ microAppID: projects, limit: 5 }))
      expect(yield* awaitRequests(1)).toBe(1)
      const first = yield* advanceUntilRequests(2, "5 seconds")
      const second = yield* advanceUntilRequests(3, "5 seconds")
      const rows = yield* Fiber.join(fiber)
      expect(rows).toHaveLength(5)
      // 1 s, then 2 s, each with up to 20% jitter either way
      expect(first).toBeGreaterThanOrEqual(800)
      expect(first).toBeLessThanOrEqual(1250)
      expect(second).toBeGreaterThanOrEqual(1600)
      expect(second).toBeLessThanOrEqual(2450)
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, { retry: { initialDelay: "1 second" } }))))

  it.effect("Retry-After is a floor: no retry before it, in seconds or as an HTTP date", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      for (const retryAfterAsDate of [false, true]) {
        yield* server.log.clear
        yield* server.faults.inject("http429", { retryAfterSeconds: 5, retryAfterAsDate })
        const fiber = yield* Effect.fork(client.query({ microAppID: projects, limit: 5 }))
        expect(yield* awaitRequests(1)).toBe(1)
        const waited = yield* advanceUntilRequests(2, "20 seconds")
        yield* Fiber.join(fiber)
        const [limited, retried] = yield* server.log.requests
        expect(waited).toBeGreaterThanOrEqual(4_900)
        expect(retried?.at).toBeGreaterThanOrEqual(limited?.retryAfterUntil ?? Infinity)
      }
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, { retry: { initialDelay: "100 millis" } }))))

  it.effect("a 429 holds back every request of the client, not only the one that got it", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("http429", { retryAfterSeconds: 3 })
      const first = yield* Effect.fork(client.query({ microAppID: projects, limit: 1 }))
      yield* awaitRequests(1)
      yield* quiet
      const second = yield* Effect.fork(client.getRow("ffffffffffffffffffffffff").pipe(Effect.flip))
      yield* TestClock.adjust("2 seconds")
      yield* quiet
      expect(yield* requestCount).toBe(1)
      yield* TestClock.adjust("1100 millis")
      yield* Fiber.join(first)
      expect((yield* Fiber.join(second))._tag).toBe("NotFound")
      const [limited, ...later] = yield* server.log.requests
      expect(later).toHaveLength(2)
      expect(later.every((record) => record.at >= (limited?.retryAfterUntil ?? Infinity))).toBe(true)
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, { retry: { initialDelay: "100 millis" } }))))

  it.effect("a Retry-After beyond the retry budget is not waited for", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("http429", { retryAfterSeconds: 3600 })
      const error = yield* Effect.flip(client.query({ microAppID: projects }))
      expect(error).toMatchObject({ _tag: "RateLimited", retryAfterMillis: 3_600_000, attempts: 1 })
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, {}))))

  it.effect("a 503 whose Retry-After is beyond the retry budget is not waited for either", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("http503", { retryAfterSeconds: 3600 })
      const error = yield* Effect.flip(client.getRow("ffffffffffffffffffffffff"))
      expect(error).toMatchObject({ _tag: "ServerError", status: 503, retryAfterMillis: 3_600_000, attempts: 1 })
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, {}))))

  for (const fault of ["http429", "http503"] as const) {
    it.effect(`after a ${fault} asking for an hour, the client's next calls fail at once, unsent, until it passes`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const client = yield* MicroappClient
        yield* server.faults.inject(fault, { retryAfterSeconds: 3600 })
        yield* Effect.flip(client.getRow("ffffffffffffffffffffffff"))
        yield* TestClock.adjust("10 minutes")
        const heldBack = yield* Effect.all([
          Effect.flip(client.getRow("ffffffffffffffffffffffff")),
          Effect.flip(client.query({ microAppID: projects })),
          Effect.flip(Stream.runDrain(client.rows({ microAppID: projects }))),
          Effect.flip(client.updateRow({ rowID: "ffffffffffffffffffffffff", rowData: { Name: "x" } }))
        ])
        for (const error of heldBack) {
          expect(error).toMatchObject({ _tag: "RateLimited", retryAfterMillis: 3_000_000, attempts: 1 })
          expect(error).not.toHaveProperty("status")
          expect(error.message).toContain("not sent")
        }
        expect(yield* requestCount).toBe(1)
        // once the hour is over, calls go through again
        yield* TestClock.adjust("50 minutes")
        expect(yield* client.query({ microAppID: projects, limit: 3 })).toHaveLength(3)
        expect(yield* requestCount).toBe(2)
      }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, { rateLimit: { maxPause: "1 hour" } }))))
  }

  it.effect("a 503 with a Retry-After within the budget holds back every request of the client until it passes", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("http503", { retryAfterSeconds: 3 })
      const first = yield* Effect.fork(client.query({ microAppID: projects, limit: 1 }))
      yield* awaitRequests(1)
      yield* quiet
      const second = yield* Effect.fork(client.query({ microAppID: projects, limit: 2 }))
      yield* TestClock.adjust("2 seconds")
      yield* quiet
      expect(yield* requestCount).toBe(1)
      yield* TestClock.adjust("1100 millis")
      expect(yield* Fiber.join(first)).toHaveLength(1)
      expect(yield* Fiber.join(second)).toHaveLength(2)
      const [paused, ...later] = yield* server.log.requests
      expect(later).toHaveLength(2)
      expect(later.every((record) => record.at >= (paused?.retryAfterUntil ?? Infinity))).toBe(true)
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, { retry: { initialDelay: "100 millis" } }))))

  it.effect("without retries, a call's budget is its timeout: a longer pause fails it at once, a shorter one is waited", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("http429", { retryAfterSeconds: 10 })
      expect(yield* Effect.flip(client.query({ microAppID: projects }))).toMatchObject({
        _tag: "RateLimited",
        status: 429
      })
      expect(yield* Effect.flip(client.query({ microAppID: projects }))).toMatchObject({
        _tag: "RateLimited",
        retryAfterMillis: 10_000
      })
      expect(yield* requestCount).toBe(1)
      // 3 s left: within the 5 s timeout, so the call waits and is sent when the pause ends
      yield* TestClock.adjust("7 seconds")
      const waiting = yield* Effect.fork(client.query({ microAppID: projects, limit: 1 }))
      yield* TestClock.adjust("2900 millis")
      yield* quiet
      expect(yield* requestCount).toBe(1)
      yield* TestClock.adjust("200 millis")
      expect(yield* Fiber.join(waiting)).toHaveLength(1)
      expect(yield* requestCount).toBe(2)
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, { retry: false, timeout: "5 seconds" }))))

  it.effect("after the last attempt, the error keeps the last status, message and attempt count", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("http503Html", { count: 2 })
      yield* server.faults.inject("http500", { count: 1 })
      const fiber = yield* Effect.fork(Effect.flip(client.query({ microAppID: projects })))
      yield* advanceUntilRequests(3, "10 seconds")
      const error = yield* Fiber.join(fiber)
      expect(error).toMatchObject({
        _tag: "ServerError",
        status: 500,
        attempts: 3,
        serverMessage: "Internal server error"
      })
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, { retry: { maxAttempts: 3, initialDelay: "100 millis" } }))))

  it.effect("retry: false sends once", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("http503Html")
      const error = yield* Effect.flip(client.query({ microAppID: projects }))
      expect(error).toMatchObject({ _tag: "ServerError", status: 503, attempts: 1 })
      expect(yield* requestCount).toBe(1)
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, { retry: false }))))

  it.effect("each retry is logged at Debug with endpoint, attempt, delay and cause, and no token", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      const logs: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ annotations, logLevel, message }) => {
          logs.push(JSON.stringify({ level: logLevel.label, message, annotations: Object.fromEntries(annotations) }))
        })
      )
      yield* server.faults.inject("http500", { count: 2 })
      const fiber = yield* Effect.fork(
        client.query({ microAppID: projects }).pipe(
          Effect.provide(capture),
          Logger.withMinimumLogLevel(LogLevel.Debug)
        )
      )
      yield* advanceUntilRequests(3, "10 seconds")
      yield* Fiber.join(fiber)
      const retries = logs.map((line) => JSON.parse(line)).filter((entry) => entry.level === "DEBUG")
      expect(retries).toHaveLength(2)
      expect(retries[1].annotations).toMatchObject({ endpoint: "/api/microappdata", attempt: 3 })
      expect(retries[1].annotations.delayMillis).toBeGreaterThan(0)
      expect(retries[1].annotations.cause).toContain("ServerError")
      expect(logs.some((line) => line.includes(demoCredentials.authToken))).toBe(false)
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, { retry: { initialDelay: "100 millis" } }))))

  it.effect("only retries are logged: a failure that is not retried, or the last attempt, logs none", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      const messages: Array<string> = []
      const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => messages.push(String(message))))
      const logged = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.flip(effect.pipe(Effect.provide(capture), Logger.withMinimumLogLevel(LogLevel.Debug)))
      const missing = yield* logged(client.getRow("64d000000000000000000000"))
      expect(missing).toMatchObject({ _tag: "NotFound", attempts: 1 })
      expect(messages).toEqual([])
      yield* server.faults.inject("http500", { count: 3 })
      const fiber = yield* Effect.fork(logged(client.query({ microAppID: projects })))
      yield* advanceUntilRequests(3, "10 seconds")
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "ServerError", attempts: 2 })
      expect(messages).toEqual(["retrying request"])
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, { retry: { initialDelay: "100 millis", maxAttempts: 2 } }))))
})

describe("timeouts", () => {
  it.effect("a hang ends in Timeout when the per-request timeout passes", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("hang")
      const fiber = yield* Effect.fork(Effect.flip(client.query({ microAppID: projects })))
      yield* awaitRequests(1)
      yield* TestClock.adjust("4999 millis")
      yield* quiet
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 millis")
      const error = yield* Fiber.join(fiber)
      expect(error).toMatchObject({ _tag: "Timeout", timeoutMillis: 5000, attempts: 1 })
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, { retry: false, timeout: "5 seconds" }))))

  it.effect("a read that times out is tried again", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("hang")
      const fiber = yield* Effect.fork(client.query({ microAppID: projects, limit: 2 }))
      yield* awaitRequests(1)
      yield* TestClock.adjust("1 second")
      yield* advanceUntilRequests(2, "5 seconds")
      expect(yield* Fiber.join(fiber)).toHaveLength(2)
      const [hung] = yield* server.log.requests
      expect(hung?.outcome).toBe("hung")
    }).pipe(
      Effect.provide(withEmulator({ demoRows: 10 }, { timeout: "1 second", retry: { initialDelay: "100 millis" } }))
    ))

  it.effect("interrupting a scan while it waits to retry stops it: no request follows", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.configure({ faults: { seed: 1, rate: 1, kinds: ["http503Html"] } })
      const fiber = yield* Effect.fork(Stream.runDrain(client.rows({ microAppID: projects })))
      yield* awaitRequests(1)
      // the 503 is read and the retry waits on the clock
      yield* quiet
      yield* Fiber.interrupt(fiber)
      yield* TestClock.adjust("1 minute")
      yield* quiet
      expect(yield* requestCount).toBe(1)
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }, {}))))
})

describe("writes are never done twice by accident", () => {
  const update = Effect.gen(function*() {
    const client = yield* MicroappClient
    const server = yield* MicroappServer
    const [row] = yield* server.rows.table(projects)
    return yield* client.updateRow({ rowID: String(row?._id), rowData: { Name: "Written once" } }).pipe(Effect.flip)
  })

  for (const fault of ["http500", "http503Html", "http408", "malformedJson"] as const) {
    it.live(`an update answered ${fault} is not repeated`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        yield* server.faults.inject(fault, { path: "/api/updatemicroapprow" })
        const error = yield* update
        expect(error).toMatchObject({ attempts: 1, path: "/api/updatemicroapprow" })
        expect(yield* requestCount).toBe(1)
      }).pipe(Effect.provide(withEmulator({ demoRows: 5 }, {}))))
  }

  it.live("an update whose connection drops after the server applied it is not repeated", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("dropAfterApply", { path: "/api/updatemicroapprow" })
      const error = yield* update
      expect(error).toMatchObject({ _tag: "Transport", notSent: false, attempts: 1 })
      expect(yield* requestCount).toBe(1)
      const [row] = yield* server.rows.table(projects)
      expect(row?.Name).toBe("Written once")
    }).pipe(Effect.provide(withEmulator({ demoRows: 5 }, {}))))

  it.effect("an update that times out is not repeated", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("hang", { path: "/api/updatemicroapprow" })
      const error = yield* onTestClock(update)
      expect(error).toMatchObject({ _tag: "Timeout", attempts: 1 })
      expect(yield* requestCount).toBe(1)
    }).pipe(Effect.provide(withEmulator({ demoRows: 5 }, { timeout: "200 millis" }))))

  it.effect("an update answered 429 is repeated after the Retry-After", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.faults.inject("http429", { path: "/api/updatemicroapprow", retryAfterSeconds: 2 })
      const [row] = yield* server.rows.table(projects)
      const fiber = yield* Effect.fork(client.updateRow({ rowID: String(row?._id), rowData: { Name: "After 429" } }))
      yield* awaitRequests(1)
      yield* advanceUntilRequests(2, "5 seconds")
      yield* Fiber.join(fiber)
      expect((yield* server.rows.table(projects))[0]?.Name).toBe("After 429")
      expect(yield* requestCount).toBe(2)
    }).pipe(Effect.provide(withEmulator({ demoRows: 5 }, { retry: { initialDelay: "100 millis" } }))))

  it.effect("an update that could not connect is repeated", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const error = yield* runAtOnTestClock(
        nobodyAt(refusedBaseUrl),
        Effect.flip(client.updateRow({ rowID: "a", rowData: { Name: "x" } }))
      )
      expect(error).toMatchObject({ _tag: "Transport", notSent: true, attempts: 3 })
    }).pipe(Effect.provide(refusedClient({ retry: { maxAttempts: 3, initialDelay: "100 millis" } }))))
})

// every kind of fault a scan retries through
const kinds: ReadonlyArray<FaultKind> = [
  "http500",
  "http503Html",
  "http503",
  "http429",
  "http408",
  "drop",
  "hang",
  "malformedJson"
]

describe("a full scan through injected faults", () => {
  it.effect("returns exactly the table, in order, and never comes back inside a Retry-After window", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      const scan = yield* client.scan({ microAppID: numbers, pageSize: 100 })
      const rows = Chunk.toReadonlyArray(yield* onTestClock(Stream.runCollect(scan.rows)))
      expect(rows.map((row) => row._id)).toEqual(numbersTable(numbers, 3000).rows.map((row) => row._id))
      const log = yield* server.log.requests
      const faults = log.filter((record) => record.fault !== undefined)
      expect(faults.length).toBeGreaterThanOrEqual(5)
      expect(new Set(faults.map((record) => record.fault)).size).toBeGreaterThanOrEqual(5)
      expect(faults.filter((record) => record.fault === "http429").length).toBeGreaterThan(0)
      const summary = yield* scan.summary
      expect(summary.retries).toBe(faults.length)
      for (const limited of log.filter((record) => record.retryAfterUntil !== undefined)) {
        const later = log.filter((record) => record.seq > limited.seq)
        expect(later.every((record) => record.at >= (limited.retryAfterUntil ?? Infinity))).toBe(true)
      }
    }).pipe(
      Effect.provide(
        withEmulator(
          { tables: [numbersTable(numbers, 3000)], faults: { seed: 8, rate: 0.2, kinds } },
          { timeout: "300 millis", retry: { initialDelay: "20 millis", maxDelay: "200 millis", maxAttempts: 8 } }
        )
      )
    ))
})

describe("the fault matrix: each kind of fault on 20% of a scan's requests", () => {
  for (const kind of kinds) {
    it.effect(`${kind}: every row, once, in order`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const client = yield* MicroappClient
        const scan = yield* client.scan({ microAppID: numbers, pageSize: 100 })
        const rows = Chunk.toReadonlyArray(yield* onTestClock(Stream.runCollect(scan.rows)))
        const injected = (yield* server.log.requests).filter((record) => record.fault === kind).length
        expect(injected).toBeGreaterThan(0)
        expect(rows.map((row) => row._id)).toEqual(numbersTable(numbers, 1500).rows.map((row) => row._id))
        expect((yield* scan.summary).retries).toBe(injected)
      }).pipe(
        Effect.provide(
          withEmulator(
            { tables: [numbersTable(numbers, 1500)], faults: { seed: 7, rate: 0.2, kinds: [kind] } },
            { timeout: "300 millis", retry: { initialDelay: "20 millis", maxDelay: "200 millis", maxAttempts: 8 } }
          )
        )
      ))
  }
})

describe("client-side rate limits", () => {
  it.effect("requestsPerSecond spaces requests by the clock", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const fiber = yield* Effect.fork(
        Effect.all(Array.from({ length: 6 }, () => client.query({ microAppID: projects, limit: 1 })), {
          concurrency: "unbounded"
        })
      )
      yield* awaitRequests(3)
      yield* quiet
      expect(yield* requestCount).toBe(3)
      yield* TestClock.adjust("500 millis")
      yield* quiet
      expect(yield* requestCount).toBeLessThan(6)
      yield* TestClock.adjust("600 millis")
      yield* awaitRequests(6)
      expect(yield* requestCount).toBe(6)
      expect(yield* Fiber.join(fiber)).toHaveLength(6)
    }).pipe(Effect.provide(withEmulator({ demoRows: 5 }, { retry: false, rateLimit: { requestsPerSecond: 3 } }))))

  it.effect("maxInFlight bounds concurrent requests of one client", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* onTestClock(Effect.all(Array.from({ length: 8 }, () => client.query({ microAppID: projects, limit: 1 })), {
        concurrency: "unbounded"
      }))
      const inFlight = (yield* server.log.requests).map((record) => record.inFlight)
      expect(Math.max(...inFlight)).toBe(2)
    }).pipe(
      Effect.provide(
        withEmulator({ demoRows: 5, latency: "30 millis" }, { retry: false, rateLimit: { maxInFlight: 2 } })
      )
    ))
})

describe("layerLogin", () => {
  it.effect("concurrent 401s after the token expired cause exactly one login, and every call succeeds", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const results = yield* onTestClock(
        Effect.gen(function*() {
          const client = yield* MicroappClient
          yield* server.sessions.expireTokens
          return yield* Effect.all(
            Array.from({ length: 6 }, () => client.query({ microAppID: projects, limit: 1 })),
            { concurrency: "unbounded" }
          )
        }).pipe(Effect.provide(loginLayer(server)))
      )
      expect(results.map((rows) => rows.length)).toEqual([1, 1, 1, 1, 1, 1])
      const logins = (yield* server.log.requests).filter((record) => record.path === "/api/login")
      expect(logins).toHaveLength(2)
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 5, latency: "20 millis" }))))

  it.live("a client with a fixed token does not try to log in on a 401", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.sessions.expireTokens
      const error = yield* Effect.flip(client.query({ microAppID: projects }))
      expect(error._tag).toBe("Unauthorized")
      expect(List.fromIterable((yield* server.log.requests).map((record) => record.path)).pipe(List.toArray)).toEqual([
        "/api/microappdata"
      ])
    }).pipe(Effect.provide(withEmulator({ demoRows: 5 }))))
})

describe("the rate gate", () => {
  it.effect("opens no earlier than its time, and waits on the clock until then, when that time falls between two nanoseconds", () =>
    Effect.gen(function*() {
      const gate = yield* makeRateGate(Duration.minutes(1))
      yield* TestClock.setTime(1000)
      yield* gate.holdFor(500.0005, "429")
      // 500.0005 ms before 1500.0005, rounded to whole nanoseconds, ends a hair before it
      yield* TestClock.setTime(1000.002)
      const passed = yield* Effect.fork(gate.pass(Infinity))
      for (let wakes = 0; (yield* Effect.yieldNow(), passed.unsafePoll() === null); wakes++) {
        const now = yield* TestClock.currentTimeMillis
        const pending = Chunk.filter(yield* TestClock.sleeps(), (at) => at > now)
        expect(Chunk.isNonEmpty(pending) && wakes < 3).toBe(true)
        yield* TestClock.setTime(Math.min(...pending))
      }
      yield* Fiber.join(passed)
      expect(yield* TestClock.currentTimeMillis).toBeGreaterThanOrEqual(1500.0005)
    }))
})
