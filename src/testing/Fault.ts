/**
 * Faults the emulator can inject: a seeded plan drawn per request, and a scripted queue that takes
 * precedence over it.
 *
 * @since 0.1.0
 */
import * as Prng from "./Prng.js"

/**
 * - `http500`: 500 with a JSON error body
 * - `http503Html`: 503 with an HTML body, as a proxy in front of the service sends it
 * - `http429`: 429 with `Retry-After` (seconds, or an HTTP date)
 * - `http408`: 408 with a JSON error body
 * - `drop`: the socket is destroyed before anything is applied
 * - `dropAfterApply`: the request is applied, then the socket is destroyed without an answer
 * - `hang`: no answer until the client goes away or the server closes
 * - `malformedJson`: the request is applied, then answered 200 with truncated JSON
 *
 * @since 0.1.0
 * @category models
 */
export type FaultKind =
  | "http500"
  | "http503Html"
  | "http429"
  | "http408"
  | "drop"
  | "dropAfterApply"
  | "hang"
  | "malformedJson"

/**
 * @since 0.1.0
 * @category constants
 */
export const faultKinds: ReadonlyArray<FaultKind> = [
  "http500",
  "http503Html",
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
 *
 * @since 0.1.0
 * @category models
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
 * @since 0.1.0
 * @category models
 */
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
 *
 * @since 0.1.0
 * @category models
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
 * The mutable fault state of one emulator: the active plan with its generator, and the queue.
 *
 * @since 0.1.0
 * @category models
 */
export interface FaultState {
  readonly setPlan: (plan: FaultPlan | undefined) => void
  readonly inject: (kind: FaultKind, options: InjectOptions) => void
  /** Decides the fault of the next request to `path`, advancing the plan's generator. */
  readonly decide: (path: string) => Fault | undefined
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const makeFaultState = (initial: FaultPlan | undefined): FaultState => {
  let plan = initial
  let prng = Prng.make(initial?.seed ?? 0)
  const queue: Array<Scripted> = []

  const draw = (active: FaultPlan): Fault | undefined => {
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
    const index = queue.findIndex((entry) =>
      entry.path === undefined ? path !== loginPath : entry.path === path
    )
    const entry = queue[index]
    if (entry === undefined) return undefined
    entry.remaining -= 1
    if (entry.remaining <= 0) queue.splice(index, 1)
    return entry.fault
  }

  return {
    setPlan: (next) => {
      plan = next
      prng = Prng.make(next?.seed ?? 0)
    },
    inject: (kind, options) => {
      const count = options.count ?? 1
      if (count <= 0) return
      queue.push({
        fault: {
          kind,
          retryAfterSeconds: options.retryAfterSeconds ?? plan?.retryAfterSeconds ?? 1,
          retryAfterAsDate: options.retryAfterAsDate ?? plan?.retryAfterAsDate ?? false
        },
        path: options.path,
        remaining: count
      })
    },
    decide: (path) => {
      // The plan draws even when the queue wins, so injecting faults does not shift the seeded sequence.
      const planned = plan !== undefined && matchesPath(plan.paths, path) ? draw(plan) : undefined
      return takeScripted(path) ?? planned
    }
  }
}
