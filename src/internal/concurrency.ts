/**
 * How many windows a scan keeps in flight: a fixed number, or `"auto"`: start at one, double while
 * rows per second keep improving, then add one at a time; halve on pushback (a request that needed
 * a retry: 429, 503, timeout...) and remember the level that caused it; halve when latency grows
 * while throughput does not. No Effect, no clock: the driver hands in the time.
 */

export interface Controller {
  /** Windows allowed in flight now. */
  current: number
  readonly auto: boolean
  /** The cap: `maxConcurrency`, and the client's `maxInFlight`. */
  readonly max: number
  /** Below the level that last drew pushback; raised by one after calm rounds. */
  ceiling: number
  slowStart: boolean
  /** The round being measured: since when, rows and pages in it, latency summed. */
  roundStart: number | undefined
  roundRows: number
  roundPages: number
  roundLatency: number
  /** The best rate (rows per ms) and the mean latency of the last round. */
  bestRate: number
  lastLatency: number | undefined
  calmRounds: number
}

/** Pages a round needs before it is judged, at least: fewer say too little on a noisy machine. */
const minRoundPages = 3
/** A round must beat the best rate by this much to count as an improvement. */
const improvement = 1.05
/** Latency growing by this much without more throughput is the server slowing down. */
const latencyGrowth = 1.5
/** Rounds without pushback at the ceiling before it is raised by one. */
const calmBeforeRaise = 8

export const fixed = (n: number): Controller => make(n, n, false)

export const auto = (max: number): Controller => make(1, max, true)

const make = (current: number, max: number, auto: boolean): Controller => ({
  current,
  auto,
  max,
  ceiling: max,
  slowStart: true,
  roundStart: undefined,
  roundRows: 0,
  roundPages: 0,
  roundLatency: 0,
  bestRate: 0,
  lastLatency: undefined,
  calmRounds: 0
})

const set = (controller: Controller, level: number): void => {
  controller.current = Math.max(1, Math.min(level, controller.max, controller.ceiling))
}

const startRound = (controller: Controller, now: number): void => {
  controller.roundStart = now
  controller.roundRows = 0
  controller.roundPages = 0
  controller.roundLatency = 0
}

/** What one answered page tells the controller. */
export interface Observation {
  readonly now: number
  readonly rows: number
  readonly latencyMillis: number
  /** The request needed more than one attempt. */
  readonly pushedBack: boolean
  /** A full page in place: the scan could use more windows. */
  readonly full: boolean
}

export const observe = (controller: Controller, page: Observation): void => {
  if (!controller.auto) return
  if (page.pushedBack) {
    controller.ceiling = Math.max(1, controller.current - 1)
    controller.slowStart = false
    controller.bestRate = 0
    controller.calmRounds = 0
    set(controller, Math.floor(controller.current / 2))
    startRound(controller, page.now)
    return
  }
  if (!page.full) return
  if (controller.roundStart === undefined) return startRound(controller, page.now)
  controller.roundRows += page.rows
  controller.roundPages++
  controller.roundLatency += page.latencyMillis
  if (controller.roundPages < Math.max(minRoundPages, controller.current)) return
  const rate = controller.roundRows / Math.max(1, page.now - controller.roundStart)
  const latency = controller.roundLatency / controller.roundPages
  const improved = rate > controller.bestRate * improvement
  if (improved) {
    controller.bestRate = rate
    set(controller, controller.slowStart ? controller.current * 2 : controller.current + 1)
  } else {
    controller.slowStart = false
    if (controller.lastLatency !== undefined && latency > controller.lastLatency * latencyGrowth) {
      set(controller, Math.floor(controller.current / 2))
    }
  }
  if (controller.current >= controller.ceiling && controller.ceiling < controller.max) {
    controller.calmRounds++
    if (controller.calmRounds >= calmBeforeRaise) {
      controller.ceiling++
      controller.calmRounds = 0
    }
  }
  controller.lastLatency = latency
  startRound(controller, page.now)
}
