/**
 * The adaptive concurrency of scans, against simulated servers: the controller is pure, so time is
 * simulated too.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as FC } from "effect"
import * as Concurrency from "../src/internal/scan/concurrency.js"

/** A server: pages per ms it completes with `level` windows in flight, and whether it refuses. */
interface Server {
  readonly pagesPerMs: (level: number) => number
  readonly refuses?: (level: number) => boolean
}

/** The simulated time of each controller. */
const clocks = new WeakMap<Concurrency.Controller, number>()

/** Feeds `pages` full pages of 1000 rows through the controller; the levels it chose, page by page. */
const run = (controller: Concurrency.Controller, server: Server, pages: number, jitter: () => number = () => 1) => {
  const levels: Array<number> = []
  let now = clocks.get(controller) ?? 0
  let refusals = 0
  for (let i = 0; i < pages; i++) {
    const level = controller.current
    levels.push(level)
    const pushedBack = server.refuses?.(level) ?? false
    if (pushedBack) refusals++
    const step = jitter() / server.pagesPerMs(level)
    now += step
    Concurrency.observe(controller, { now, rows: 1000, latencyMillis: step * level, pushedBack, full: true })
  }
  clocks.set(controller, now)
  return { levels, refusals, last: controller.current }
}

/** A server 20 ms away: throughput grows with every window in flight. */
const distant: Server = { pagesPerMs: (level) => level / 20 }
/** A busy local server: a second window overlaps its work with the client's, more add nothing. */
const local: Server = { pagesPerMs: (level) => (level === 1 ? 1 / 13 : 1.25 / 13) }

describe("adaptive concurrency", () => {
  it("climbs to the cap against a distant server, within a few dozen pages", () => {
    const { last, levels } = run(Concurrency.auto(8), distant, 200)
    expect(last).toBe(8)
    expect(levels.indexOf(8)).toBeLessThan(40)
    expect(Math.max(...levels)).toBe(8)
  })

  it("never goes above its cap (maxConcurrency, or the client's maxInFlight)", () => {
    const { levels } = run(Concurrency.auto(3), distant, 300)
    expect(Math.max(...levels)).toBe(3)
  })

  it("settles at two against a busy local server, trying a third window now and then", () => {
    const { levels } = run(Concurrency.auto(8), local, 400)
    const tail = levels.slice(100)
    expect(tail.filter((level) => level === 2).length / tail.length).toBeGreaterThan(0.8)
    expect(Math.max(...tail)).toBeLessThanOrEqual(3)
  })

  it.prop(
    "under a server that refuses more than two windows, stays at or below two most of the time",
    [FC.integer({ min: 100, max: 600 }), FC.float({ min: 0, max: Math.fround(0.2), noNaN: true })],
    ([pages, noise]) => {
      let seed = pages
      const jitter = () => 1 + noise * (((seed = (seed * 16807) % 2147483647) / 2147483647) - 0.5)
      const { levels, refusals } = run(
        Concurrency.auto(8),
        { ...distant, refuses: (level) => level > 2 },
        pages,
        jitter
      )
      // each refusal is followed by a halving, and the level that drew it is not tried again for
      // 8 rounds of at least 4 pages, then 16, 32...
      expect(refusals).toBeLessThanOrEqual(1 + Math.ceil(Math.log2(1 + pages / 32)))
      expect(levels.filter((level) => level > 2).length).toBeLessThanOrEqual(refusals * 2)
    }
  )

  it("halves when latency grows at one level while throughput does not (a server slowing down)", () => {
    const controller = Concurrency.auto(8)
    run(controller, distant, 100)
    expect(controller.current).toBe(8)
    // the same throughput per window in flight as before, now at a tenth
    const { levels } = run(controller, { pagesPerMs: (level) => level / 200 }, 40)
    expect(Math.min(...levels)).toBe(4)
  })

  it("a fixed concurrency never changes", () => {
    const { levels } = run(Concurrency.fixed(3), { ...distant, refuses: () => true }, 100)
    expect(new Set(levels)).toEqual(new Set([3]))
  })
})
