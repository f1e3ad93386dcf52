/**
 * How many windows a scan keeps in flight: a fixed number, or `"auto"`. Auto starts at one and,
 * once pages come back full, measures rows per second over rounds of pages: it doubles the level
 * while each step up pays (then adds one at a time), steps back down to the last level that paid
 * when one does not, and tries again later. It halves on pushback (a request that needed a retry:
 * 429, 503, timeout...) and stays below the level that drew it for a while, twice as long after
 * each pushback, and halves when
 * latency grows at one level while throughput does not. No Effect, no clock: the driver hands in
 * the time.
 */

export interface Controller {
  /** Windows allowed in flight now. */
  current: number
  readonly auto: boolean
  /** The cap: `maxConcurrency`, and the client's `maxInFlight`. */
  readonly max: number
  /** Below the level that last drew pushback; raised by one after calm rounds. */
  ceiling: number
  /** Doubling, until a step up does not pay. */
  slowStart: boolean
  /** The level before the last step up, while that step is being judged. */
  steppedFrom: number | undefined
  /** The rate (rows per ms) at the current level, and the mean latency of its last round. */
  rate: number
  latency: number | undefined
  /** Rounds to wait before the next step up, after one did not pay. */
  holdRounds: number
  calmRounds: number
  /** Calm rounds before the ceiling is raised: doubled by each pushback. */
  calmNeeded: number
  /** The round being measured: since when, rows and pages in it, latency summed. */
  roundStart: number | undefined
  roundRows: number
  roundPages: number
  roundLatency: number
}

/**
 * Pages a round needs, at least, and per window in flight: fewer say too little on a noisy
 * machine. While doubling, a round is one page per window: a wrong step costs little, as it is
 * taken back.
 */
const minRoundPages = 4
const roundPagesPerWindow = 2
const slowStartRoundPages = 2
/** A step up must raise throughput by this much to pay for its windows. */
const worthwhile = 1.05
/** Latency growing by this much at one level, without more throughput, is the server slowing down. */
const latencyGrowth = 1.5
/** Rounds at a level before a step up that did not pay is tried again. */
const holdAfterNoGain = 8
/** Rounds without pushback before the ceiling it set is raised by one, at first; then doubled. */
const calmBeforeRaise = 8
const maxCalmBeforeRaise = 512

export const fixed = (n: number): Controller => make(n, n, false)

export const auto = (max: number): Controller => make(1, max, true)

const make = (current: number, max: number, auto: boolean): Controller => ({
  current,
  auto,
  max,
  ceiling: max,
  slowStart: true,
  steppedFrom: undefined,
  rate: 0,
  latency: undefined,
  holdRounds: 0,
  calmRounds: 0,
  calmNeeded: calmBeforeRaise / 2,
  roundStart: undefined,
  roundRows: 0,
  roundPages: 0,
  roundLatency: 0
})

const startRound = (controller: Controller, now: number): void => {
  controller.roundStart = now
  controller.roundRows = 0
  controller.roundPages = 0
  controller.roundLatency = 0
}

/** Moves to `level` (within the bounds), forgetting the measurements of the old one. */
const moveTo = (controller: Controller, level: number): void => {
  controller.current = Math.max(1, Math.min(level, controller.max, controller.ceiling))
  controller.latency = undefined
}

const stepUp = (controller: Controller): void => {
  const next = controller.slowStart ? controller.current * 2 : controller.current + 1
  if (Math.min(next, controller.max, controller.ceiling) <= controller.current) return
  controller.steppedFrom = controller.current
  moveTo(controller, next)
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
    controller.calmRounds = 0
    controller.calmNeeded = Math.min(maxCalmBeforeRaise, controller.calmNeeded * 2)
    controller.slowStart = false
    controller.steppedFrom = undefined
    controller.rate = 0
    moveTo(controller, Math.floor(controller.current / 2))
    return startRound(controller, page.now)
  }
  if (!page.full) return
  if (controller.roundStart === undefined) return startRound(controller, page.now)
  controller.roundRows += page.rows
  controller.roundPages++
  controller.roundLatency += page.latencyMillis
  const roundPages = controller.slowStart
    ? Math.max(slowStartRoundPages, controller.current)
    : Math.max(minRoundPages, roundPagesPerWindow * controller.current)
  if (controller.roundPages < roundPages) return
  judgeRound(
    controller,
    controller.roundRows / Math.max(1, page.now - controller.roundStart),
    controller.roundLatency / controller.roundPages
  )
  startRound(controller, page.now)
}

const judgeRound = (controller: Controller, rate: number, latency: number): void => {
  if (controller.ceiling < controller.max && ++controller.calmRounds >= controller.calmNeeded) {
    controller.ceiling++
    controller.calmRounds = 0
  }
  if (controller.steppedFrom !== undefined) {
    const from = controller.steppedFrom
    controller.steppedFrom = undefined
    if (rate > controller.rate * worthwhile) {
      controller.rate = rate
      controller.latency = latency
      return stepUp(controller)
    }
    // the step did not pay: back to the level that did, and wait before trying again
    controller.slowStart = false
    controller.holdRounds = holdAfterNoGain
    moveTo(controller, from)
    return
  }
  const slowing = controller.latency !== undefined && latency > controller.latency * latencyGrowth &&
    rate <= controller.rate
  controller.rate = controller.rate === 0 ? rate : Math.max(rate, (controller.rate + rate) / 2)
  controller.latency = latency
  if (slowing) {
    controller.slowStart = false
    controller.rate = rate
    return moveTo(controller, Math.floor(controller.current / 2))
  }
  if (controller.holdRounds > 0) {
    controller.holdRounds--
    return
  }
  stepUp(controller)
}
