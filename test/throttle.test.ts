/**
 * A 429 without `Retry-After` says "slow down", not "stop": it cuts the client's limit of requests
 * in flight and the refused request is sent again after its own backoff, while the client's other
 * requests go on. Only a `Retry-After` pauses the whole client (test/resilience.test.ts).
 * On a test clock: time passes only when the test moves it.
 */
import { NodeHttpClient } from "@effect/platform-node"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Logger, LogLevel, Ref, TestClock, TestServices } from "effect"
import { MicroappClient, type MicroappError } from "../src/index.js"
import * as InFlight from "../src/internal/http/inFlight.js"
import * as Prng from "../src/testing/internal/prng.js"
import { clientOf, type HostileServer, hostileServer, plainRows, rowsAnswer } from "./hostile.js"
import { advanceAtUntil, nobodyAt, type Peer, quietAt } from "./support.js"

const microAppID = "66c000000000000000000001"
const rowID = "66c100000000000000000001"

const read = Effect.flatMap(MicroappClient, (client) => client.query({ microAppID, limit: 10 }))
const write = Effect.flatMap(MicroappClient, (client) => client.updateRow({ rowID, rowData: { Name: "x" } }))

/** A refusal that says nothing of how long to wait, as many rate limiters send it. */
const bare429 = HttpServerResponse.unsafeJson({ status: "error", message: "too many requests" }, { status: 429 })

const answer = (path: string) =>
  path.endsWith("/api/updatemicroapprow")
    ? HttpServerResponse.unsafeJson({ status: "success" })
    : rowsAnswer(plainRows(3))

/** A server that refuses its first `refusals` requests with `bare429`, and answers the others. */
const refusingFirst = (refusals: number) =>
  hostileServer((request, self) =>
    Effect.map(self.seen, (seen) => seen.length <= refusals ? bare429 : answer(request.url))
  )

const seenCount = (server: HostileServer) => Effect.map(server.seen, (seen) => seen.length)

/** Waits in real time until `server` has seen `n` requests, and the client waits on nothing else. */
const awaitSeen = (server: HostileServer, peer: Peer, n: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 500 && (yield* seenCount(server)) < n; i++) {
      yield* TestServices.provideLive(Effect.sleep("10 millis"))
    }
    yield* quietAt(peer)
  })

const undici = NodeHttpClient.layerUndici
// 100 ms, doubling, each with up to 20% jitter either way
const backoff = { retry: { initialDelay: "100 millis" } } as const

describe("a 429 without Retry-After", () => {
  it.effect("holds back no other request of the client: another call goes out and is answered meanwhile", () =>
    Effect.gen(function*() {
      const server = yield* refusingFirst(1)
      const peer = nobodyAt(server.baseUrl)
      yield* Effect.gen(function*() {
        const refused = yield* Effect.fork(read)
        yield* awaitSeen(server, peer, 1)
        // the clock has not moved: nothing but the refused request's own backoff may wait on it
        const other = yield* Effect.fork(read)
        yield* awaitSeen(server, peer, 2)
        expect(yield* seenCount(server)).toBe(2)
        expect(yield* Fiber.join(other)).toHaveLength(3)
        expect(refused.unsafePoll()).toBeNull()
        const waited = yield* advanceAtUntil(peer, Effect.map(seenCount(server), (n) => n >= 3), "10 seconds")
        expect(waited).toBeGreaterThanOrEqual(80)
        expect(waited).toBeLessThanOrEqual(120)
        expect(yield* Fiber.join(refused)).toHaveLength(3)
      }).pipe(Effect.provide(clientOf(server.baseUrl, undici, backoff)))
    }).pipe(Effect.scoped))

  const calls: ReadonlyArray<readonly [string, Effect.Effect<unknown, MicroappError, MicroappClient>]> = [
    ["a read", read],
    ["an update", write]
  ]
  for (const [call, effect] of calls) {
    it.effect(`${call} refused is sent again after its backoff only, growing while refusals continue`, () =>
      Effect.gen(function*() {
        const server = yield* refusingFirst(3)
        const peer = nobodyAt(server.baseUrl)
        const lines: Array<{ readonly message: string; readonly delayMillis: unknown }> = []
        const capture = Logger.make(({ annotations, message }) => {
          lines.push({
            message: String(Array.isArray(message) ? message[0] : message),
            delayMillis: Object.fromEntries(annotations)["delayMillis"]
          })
        })
        yield* Effect.gen(function*() {
          const fiber = yield* Effect.fork(effect)
          yield* awaitSeen(server, peer, 1)
          const waits: Array<number> = []
          for (const n of [2, 3, 4]) {
            waits.push(yield* advanceAtUntil(peer, Effect.map(seenCount(server), (seen) => seen >= n), "10 seconds"))
          }
          yield* Fiber.join(fiber)
          // 100, 200 and 400 ms, each within its jitter: never a second's pause
          expect(waits[0]).toBeGreaterThanOrEqual(80)
          expect(waits[0]).toBeLessThanOrEqual(120)
          expect(waits[1]).toBeGreaterThanOrEqual(160)
          expect(waits[1]).toBeLessThanOrEqual(240)
          expect(waits[2]).toBeGreaterThanOrEqual(320)
          expect(waits[2]).toBeLessThanOrEqual(480)
        }).pipe(
          Effect.provide(clientOf(server.baseUrl, undici, backoff)),
          Effect.provide(Logger.replace(Logger.defaultLogger, capture)),
          Logger.withMinimumLogLevel(LogLevel.Debug)
        )
        // the retries are logged with the delays they waited, and no client-wide pause is
        const retries = lines.filter((line) => line.message === "retrying request")
        expect(retries).toHaveLength(3)
        expect(retries.every((line) => typeof line.delayMillis === "number" && line.delayMillis < 500)).toBe(true)
        expect(lines.filter((line) => line.message === "pausing every request of this client")).toEqual([])
      }).pipe(Effect.scoped))
  }

  it.effect("still cuts the limit of requests in flight: the retry waits for a permit, not for a pause", () =>
    Effect.gen(function*() {
      const release = yield* Deferred.make<void>()
      const held = yield* Ref.make(0)
      // the first request is refused at once; the others are held until the test releases them
      const server = yield* hostileServer((request, self) =>
        Effect.flatMap(self.seen, (seen) =>
          seen.length === 1 ? Effect.succeed(bare429) : Effect.as(
            Effect.acquireUseRelease(Ref.update(held, (n) => n + 1), () =>
              Deferred.await(release), () =>
              Ref.update(held, (n) => n - 1)),
            answer(request.url)
          ))
      )
      const peer: Peer = { baseUrl: server.baseUrl, held: Ref.get(held) }
      yield* Effect.gen(function*() {
        const calls = yield* Effect.fork(
          Effect.all(Array.from({ length: 8 }, () => read), { concurrency: "unbounded" })
        )
        yield* awaitSeen(server, peer, 8)
        // long past the retry's backoff: it is held only because 7 requests are in flight, above the cut limit
        yield* TestClock.adjust("1 second")
        yield* quietAt(peer)
        expect(yield* seenCount(server)).toBe(8)
        yield* Deferred.succeed(release, undefined)
        const results = yield* Fiber.join(calls)
        expect(results.map((rows) => rows.length)).toEqual(Array.from({ length: 8 }, () => 3))
        expect(yield* seenCount(server)).toBe(9)
      }).pipe(Effect.provide(clientOf(server.baseUrl, undici, { ...backoff, rateLimit: { maxInFlight: 8 } })))
    }).pipe(Effect.scoped))
})

describe("the in-flight limit's decisions on a 429 without Retry-After", () => {
  const at = (limit: InFlight.Limit, inFlight: number): InFlight.Ticket => ({ epoch: limit.epoch, inFlight })

  it("cuts as a 429 with Retry-After does, unless the server has answered at that level since its last cut, and never below it", () => {
    const fresh = InFlight.initial(64)
    expect(InFlight.afterSlowDown(fresh, at(fresh, 20))).toMatchObject({ allowed: 10, tolerated: 19, epoch: 1 })
    const answered = InFlight.afterAnswer(fresh, at(fresh, 20))
    expect(InFlight.afterSlowDown(answered, at(answered, 20))).toBe(answered)
    // above it, a cut to the level the server took, which probing again costs only a backoff, not a longer wait
    expect(InFlight.afterSlowDown(answered, at(answered, 21))).toMatchObject({
      allowed: 20,
      tolerated: 20,
      epoch: 1,
      calmNeeded: answered.calmNeeded
    })
    // a 429 with Retry-After cuts at any level
    expect(InFlight.afterRefusal(answered, at(answered, 12))).toMatchObject({ allowed: 6, tolerated: 11, epoch: 1 })
  })

  /**
   * Drives a limit as the client would with `demand` requests wanted at once, against a server
   * that refuses the requests `refuses` picks; the limit after `outcomes` of them, and the refusals.
   */
  const drive = (
    decide: (limit: InFlight.Limit, ticket: InFlight.Ticket) => InFlight.Limit,
    refuses: (n: number, inFlight: number) => boolean
  ) => {
    let limit = InFlight.initial(64)
    let refused = 0
    for (let n = 1; n <= 3_000; n++) {
      // requests go out one after another up to the limit: each level in turn is seen
      const ticket = at(limit, 1 + (n % Math.min(limit.allowed, 20)))
      if (refuses(n, ticket.inFlight)) {
        refused++
        limit = decide(limit, ticket)
      } else {
        limit = InFlight.afterAnswer(limit, ticket)
      }
    }
    return { limit, refused }
  }

  it("a server that refuses one request in three at any level: the limit climbs, where a pause's rule falls to one", () => {
    const oneInThree = () => {
      const prng = Prng.make(7)
      return () => prng.next() < 1 / 3
    }
    const slowedDown = drive(InFlight.afterSlowDown, oneInThree())
    const paused = drive(InFlight.afterRefusal, oneInThree())
    expect(slowedDown.refused).toBeGreaterThan(900)
    expect(slowedDown.limit.allowed).toBeGreaterThanOrEqual(10)
    expect(slowedDown.limit.epoch).toBeLessThanOrEqual(5)
    expect(paused.limit.allowed).toBeLessThanOrEqual(2)
  })

  it("a server that refuses above 5 in flight: the limit settles at 5, and probes 6 in at most 1 request in 50", () => {
    const aboveFive = (_: number, inFlight: number) => inFlight > 5
    const { limit, refused } = drive(InFlight.afterSlowDown, aboveFive)
    expect(limit).toMatchObject({ allowed: 5, tolerated: 5, answered: 5 })
    expect(refused).toBeLessThanOrEqual(3_000 / 50)
  })
})
