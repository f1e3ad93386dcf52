/**
 * Faults the emulator can inject: a seeded plan drawn per request, and a scripted queue that takes
 * precedence over it.
 */
import { Effect } from "effect"
import * as Prng from "./prng.js"

/**
 * - `http500`: 500 with a JSON error body
 * - `http500AfterApply`: the request is applied, then answered 500 with a JSON error body
 * - `http503Html`: 503 with an HTML body, as a proxy in front of the service sends it
 * - `http503`: 503 with `Retry-After` (seconds, or an HTTP date), as a service down for a while sends it
 * - `http429`: 429 with `Retry-After` (seconds, or an HTTP date)
 * - `http408`: 408 with a JSON error body
 * - `drop`: the socket is destroyed before anything is applied
 * - `dropAfterApply`: the request is applied, then the socket is destroyed without an answer
 * - `hang`: no answer until the client goes away or the server closes
 * - `malformedJson`: the request is applied, then answered 200 with truncated JSON
 */
export type FaultKind =
  | "http500"
  | "http500AfterApply"
  | "http503Html"
  | "http503"
  | "http429"
  | "http408"
  | "drop"
  | "dropAfterApply"
  | "hang"
  | "malformedJson"

export const faultKinds: ReadonlyArray<FaultKind> = [
  "http500",
  "http500AfterApply",
  "http503Html",
  "http503",
  "http429",
  "http408",
  "drop",
  "dropAfterApply",
  "hang",
  "malformedJson"
]

/**
 * A seeded fault plan: every matching request draws from the generator; with probability `rate`
 * it gets one of `kinds`. Same seed and same request sequence give the same faults.
 */
export interface FaultPlan {
  readonly seed: number
  /** Probability in [0, 1]. */
  readonly rate: number
  readonly kinds: ReadonlyArray<FaultKind>
  /** Paths the plan applies to; by default every path except `/api/login`. */
  readonly paths?: ReadonlyArray<string> | undefined
  /** Default 1. */
  readonly retryAfterSeconds?: number | undefined
  /** Send `Retry-After` as an HTTP date instead of seconds. */
  readonly retryAfterAsDate?: boolean | undefined
}

/**
 * One plan, or several that each draw on their own generator: the first listed that hits a
 * request gives its fault (e.g. 20% of updates on one plan, 10% of every request on another).
 */
export type FaultPlans = FaultPlan | ReadonlyArray<FaultPlan>

export interface InjectOptions {
  /** How many matching requests get the fault; default 1. */
  readonly count?: number | undefined
  /** Only requests to this path; by default any path except `/api/login`. */
  readonly path?: string | undefined
  readonly retryAfterSeconds?: number | undefined
  readonly retryAfterAsDate?: boolean | undefined
}

/**
 * The fault chosen for one request.
 */
export interface Fault {
  readonly kind: FaultKind
  readonly retryAfterSeconds: number
  readonly retryAfterAsDate: boolean
}

const loginPath = "/api/login"

const matchesPath = (paths: ReadonlyArray<string> | undefined, path: string): boolean =>
  paths === undefined ? path !== loginPath : paths.includes(path)

interface Scripted {
  readonly fault: Fault
  readonly path: string | undefined
  remaining: number
}

/**
 * The faults of one emulator: the seeded plans with their generators, and the faults queued by
 * `inject` ahead of them.
 */
export interface Faults {
  /** The next `count` matching requests get this fault, ahead of the seeded plans. */
  readonly inject: (kind: FaultKind, options?: InjectOptions) => Effect.Effect<void>
  /** Replaces the seeded plans (none: no faults but the queued ones). */
  readonly setPlan: (plan: FaultPlans | undefined) => Effect.Effect<void>
  /** Decides the fault of the next request to `path`, advancing the plans' generators. */
  readonly decide: (path: string) => Fault | undefined
}

export const makeFaults = (initial: FaultPlans | undefined): Faults => {
  const seeded = (plans: FaultPlans | undefined) =>
    (plans === undefined ? [] : "seed" in plans ? [plans] : plans).map((plan) => ({ plan, prng: Prng.make(plan.seed) }))
  let plans = seeded(initial)
  // scripted faults take their Retry-After defaults from the first plan
  const defaults = (): FaultPlan | undefined => plans[0]?.plan
  const queue: Array<Scripted> = []

  const draw = (active: FaultPlan, prng: Prng.Prng): Fault | undefined => {
    // Always two draws per matching request, so later decisions do not depend on earlier outcomes.
    const roll = prng.next()
    const choice = prng.int(active.kinds.length)
    const kind = active.kinds[choice]
    return roll < active.rate && kind !== undefined
      ? {
        kind,
        retryAfterSeconds: active.retryAfterSeconds ?? 1,
        retryAfterAsDate: active.retryAfterAsDate ?? false
      }
      : undefined
  }

  const takeScripted = (path: string): Fault | undefined => {
    const index = queue.findIndex((entry) => entry.path === undefined ? path !== loginPath : entry.path === path)
    const entry = queue[index]
    if (entry === undefined) return undefined
    entry.remaining -= 1
    if (entry.remaining <= 0) queue.splice(index, 1)
    return entry.fault
  }

  return {
    setPlan: (next) =>
      Effect.sync(() => {
        plans = seeded(next)
      }),
    inject: (kind, options = {}) =>
      Effect.sync(() => {
        const count = options.count ?? 1
        if (count <= 0) return
        queue.push({
          fault: {
            kind,
            retryAfterSeconds: options.retryAfterSeconds ?? defaults()?.retryAfterSeconds ?? 1,
            retryAfterAsDate: options.retryAfterAsDate ?? defaults()?.retryAfterAsDate ?? false
          },
          path: options.path,
          remaining: count
        })
      }),
    decide: (path) => {
      // Every plan draws even when another plan or the queue wins, so no sequence shifts another.
      const planned = plans.map(({ plan, prng }) => matchesPath(plan.paths, path) ? draw(plan, prng) : undefined)
      return takeScripted(path) ?? planned.find((fault) => fault !== undefined)
    }
  }
}
