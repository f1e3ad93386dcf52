import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { MicroappClient } from "../src/index.js"
import * as InFlight from "../src/internal/http/inFlight.js"
import { MicroappServer } from "../src/testing/index.js"
import { numbersTable, onTestClock, withEmulator } from "./support.js"

const numbers = "000000000000000000000n03"

describe("the client-wide limit of requests in flight: its decisions", () => {
  const at = (limit: InFlight.Limit, inFlight: number): InFlight.Ticket => ({ epoch: limit.epoch, inFlight })

  it("starts at the cap", () => {
    expect(InFlight.initial(64)).toMatchObject({ allowed: 64, max: 64, tolerated: 64, epoch: 0 })
  })

  it("a 429 halves what was in flight, and takes one less as the most the server tolerates", () => {
    const cut = InFlight.afterRefusal(InFlight.initial(64), { epoch: 0, inFlight: 20 })
    expect(cut).toMatchObject({ allowed: 10, tolerated: 19, epoch: 1 })
    // never below one request
    expect(InFlight.afterRefusal(InFlight.initial(64), { epoch: 0, inFlight: 1 })).toMatchObject({
      allowed: 1,
      tolerated: 1
    })
  })

  it("one cut per burst: the other 429s of requests sent before the cut change nothing", () => {
    const cut = InFlight.afterRefusal(InFlight.initial(64), { epoch: 0, inFlight: 20 })
    expect(InFlight.afterRefusal(cut, { epoch: 0, inFlight: 19 })).toBe(cut)
    expect(InFlight.afterRefusal(cut, { epoch: 1, inFlight: 10 })).toMatchObject({ allowed: 5, tolerated: 9, epoch: 2 })
  })

  it("grows by one per limit's worth of answers at the limit, up to what the server tolerates", () => {
    let limit = InFlight.afterRefusal(InFlight.initial(64), { epoch: 0, inFlight: 8 })
    expect(limit).toMatchObject({ allowed: 4, tolerated: 7 })
    const steps: Array<number> = []
    for (let i = 0; i < 30; i++) {
      limit = InFlight.afterAnswer(limit, at(limit, limit.allowed))
      steps.push(limit.allowed)
    }
    // 4 answers at 4, 5 at 5, 6 at 6, then it stays at 7
    expect(steps).toEqual([4, 4, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, ...Array.from({ length: 16 }, () => 7)])
  })

  it("answers below the limit, or to requests sent before the last cut, say nothing about more", () => {
    const limit = InFlight.afterRefusal(InFlight.initial(64), { epoch: 0, inFlight: 8 })
    // they say only that the server answered at their level
    expect(InFlight.afterAnswer(limit, { epoch: 1, inFlight: 3 })).toEqual({ ...limit, answered: 3 })
    expect(InFlight.afterAnswer(limit, { epoch: 0, inFlight: 8 })).toEqual({ ...limit, answered: 8 })
  })

  it("tries one more than tolerated after calm answers there, and waits twice as long after each refusal", () => {
    /** Answers at the limit until `done`; how many it took. */
    const answerUntil = (from: InFlight.Limit, done: (limit: InFlight.Limit) => boolean) => {
      let limit = from
      let answers = 0
      while (!done(limit) && answers < 10_000) {
        limit = InFlight.afterAnswer(limit, at(limit, limit.allowed))
        answers++
      }
      return { answers, limit }
    }
    const first = InFlight.afterRefusal(InFlight.initial(64), { epoch: 0, inFlight: 6 })
    expect(first).toMatchObject({ allowed: 3, tolerated: 5 })
    // 3 answers at 3 and 4 at 4 climb back to 5; 16 calm answers there, and 6 is tried
    const probe = answerUntil(first, (limit) => limit.tolerated === 6)
    expect(probe.answers).toBe(3 + 4 + 16)
    const atSix = answerUntil(probe.limit, (limit) => limit.allowed === 6).limit
    const second = InFlight.afterRefusal(atSix, at(atSix, 6))
    expect(second).toMatchObject({ allowed: 3, tolerated: 5 })
    expect(answerUntil(second, (limit) => limit.tolerated === 6).answers).toBe(3 + 4 + 32)
  })

  it("never above the cap (rateLimit.maxInFlight)", () => {
    let limit = InFlight.initial(3)
    for (let i = 0; i < 100; i++) limit = InFlight.afterAnswer(limit, at(limit, 3))
    expect(limit).toMatchObject({ allowed: 3, tolerated: 3 })
  })

  it("against a server that tolerates 5 in flight, with more demand than that, it settles at 5 and is refused ever more rarely", () => {
    // recorded as the driver would: every request sent at the limit; the server refuses above 5
    let limit = InFlight.initial(64)
    const refusedAt: Array<number> = []
    for (let answer = 0; answer < 5_000; answer++) {
      const ticket = at(limit, Math.min(limit.allowed, 20))
      if (ticket.inFlight > 5) {
        refusedAt.push(answer)
        limit = InFlight.afterRefusal(limit, ticket)
      } else {
        limit = InFlight.afterAnswer(limit, ticket)
      }
    }
    expect(limit.tolerated).toBe(5)
    // two for the burst, then probes of 6 further and further apart
    expect(refusedAt.length).toBeLessThanOrEqual(9)
    const gaps = refusedAt.slice(2).map((answer, i) => answer - (refusedAt[i + 1] ?? 0))
    for (let i = 1; i < gaps.length; i++) expect(gaps[i]).toBeGreaterThan(gaps[i - 1] ?? 0)
  })
})

describe("overload: 20 scans at once on one client, against a server that allows 5 requests in flight", () => {
  const table = numbersTable(numbers, 3_000)
  const expected = table.rows.map((row) => row._id)

  // on the test clock: the latency and the 429s' Retry-After pass virtually
  it.effect(
    "all 20 are exact, none fails with RateLimited, and few requests are refused",
    () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const client = yield* MicroappClient
        const results = yield* onTestClock(Effect.all(
          Array.from({ length: 20 }, () =>
            Effect.either(
              Stream.runCollect(client.rows({ microAppID: numbers })).pipe(
                Effect.map((rows) => Array.from(rows, (row) => row._id))
              )
            )),
          { concurrency: "unbounded" }
        ))
        const failures = results.flatMap((result) => result._tag === "Left" ? [result.left._tag] : [])
        expect(failures).toEqual([])
        for (const result of results) expect(result._tag === "Right" ? result.right : []).toEqual(expected)
        const log = yield* server.log.requests
        const refused = log.filter((record) => record.status === 429)
        // a burst of 20 at first, then the client holds to what the server takes
        expect(refused.length).toBeLessThanOrEqual(40)
        // once the first pause is over, the requests held during it do not all go out at once: at
        // most half of the first burst is ever in flight again
        const firstPauseEnd = refused[0]?.retryAfterUntil ?? Infinity
        const after = log.filter((record) => record.at >= firstPauseEnd)
        expect(after.length).toBeGreaterThan(0)
        expect(Math.max(...after.map((record) => record.inFlight))).toBeLessThanOrEqual(10)
      }).pipe(
        Effect.provide(
          withEmulator(
            { tables: [table], latency: "20 millis", throttle: { maxInFlight: 5, retryAfterSeconds: 1 } },
            {}
          )
        )
      ),
    120_000
  )
})
