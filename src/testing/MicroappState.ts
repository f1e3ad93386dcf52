/**
 * The emulator's state, in parts: the rows (`RowStore`), the users and tokens (`Sessions`), the
 * request log with its hook (`RequestLog`) and the faults (`Faults`), with the settings that
 * span them. Every access is an Effect; the app and the test controls share it.
 *
 * @since 0.1.0
 */
import { Duration, Effect } from "effect"
import type { Credentials } from "./DemoData.js"
import { demoCredentials, demoTables } from "./DemoData.js"
import type { FaultPlans, Faults } from "./internal/fault.js"
import { makeFaults } from "./internal/fault.js"
import * as RequestLog from "./internal/requestLog.js"
import * as RowStore from "./internal/rowStore.js"
import * as Sessions from "./internal/sessions.js"
import type { TableDefinition } from "./internal/table.js"

/**
 * @since 0.1.0
 * @category models
 */
export type Arrival = RequestLog.Arrival

/**
 * @since 0.1.0
 * @category models
 */
export type Completion = RequestLog.Completion

/**
 * @since 0.1.0
 * @category models
 */
export type RequestHook = RequestLog.RequestHook

/**
 * @since 0.1.0
 * @category models
 */
export type RequestRecord = RequestLog.RequestRecord

/**
 * @since 0.1.0
 * @category models
 */
export type QueryFailure = RowStore.QueryFailure

/**
 * @since 0.1.0
 * @category models
 */
export type UpdateOutcome = RowStore.UpdateOutcome

/**
 * @since 0.1.0
 * @category models
 */
export type LoginShape = "data" | "flat"

/**
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  readonly defaultLimit: number
  readonly maxLimit: number | undefined
  readonly latency: Duration.Duration
  readonly faults: FaultPlans | undefined
  readonly loginShape: LoginShape
  readonly throttle: Throttle | undefined
  readonly lag: Lag | undefined
}

/**
 * A server whose row listings lie, as replicas behind a load balancer that lag: `every` leaves one
 * row in `every` out of each answer (a different one each answer), and `ids` leaves those rows out
 * of every answer. Point reads (`/api/microappdata/row`) still find them: the rows stand.
 *
 * @since 0.2.0
 * @category models
 */
export interface Lag {
  readonly every?: number | undefined
  readonly ids?: ReadonlyArray<string> | undefined
}

/**
 * A server that refuses load: a request that arrives while more than `maxInFlight` requests
 * (itself included) are in flight is answered 429 with `Retry-After: retryAfterSeconds`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Throttle {
  readonly maxInFlight: number
  readonly retryAfterSeconds: number
}

/**
 * Settings changed at run time. Passing `maxLimit`, `faults`, `throttle` or `lag` as `undefined` removes them.
 *
 * @since 0.1.0
 * @category models
 */
export interface SettingsPatch {
  readonly defaultLimit?: number
  readonly maxLimit?: number | undefined
  readonly latency?: Duration.DurationInput
  readonly faults?: FaultPlans | undefined
  readonly loginShape?: LoginShape
  readonly throttle?: Throttle | undefined
  readonly lag?: Lag | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Microapps with their rows; default the demo People and Projects. */
  readonly tables?: ReadonlyArray<TableDefinition> | undefined
  /** Rows of the demo Projects Microapp when `tables` is not given; default 2500. */
  readonly demoRows?: number | undefined
  /** Rows returned when a request sends no limit; default 1000. */
  readonly defaultLimit?: number | undefined
  /** Silent clamp of explicit limits; default none. */
  readonly maxLimit?: number | undefined
  /** Added to every request; default 0. */
  readonly latency?: Duration.DurationInput | undefined
  /** Default: the demo user. Each user's `authToken` is valid from the start. */
  readonly users?: ReadonlyArray<Credentials> | undefined
  readonly faults?: FaultPlans | undefined
  /** Login response shape; default "data". */
  readonly loginShape?: LoginShape | undefined
  /** 429 for requests beyond a number in flight; default none. */
  readonly throttle?: Throttle | undefined
  /** Row listings that leave rows out; default none. */
  readonly lag?: Lag | undefined
  /** Requests the log keeps (the most recent); default `RequestLog.defaultCapacity` (10,000). */
  readonly requestLogSize?: number | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface MicroappState {
  /** The first user (the demo user by default). */
  readonly credentials: Credentials
  readonly settings: Effect.Effect<Settings>
  readonly configure: (patch: SettingsPatch) => Effect.Effect<void>
  readonly rows: RowStore.RowStore
  readonly sessions: Sessions.Sessions
  readonly log: RequestLog.RequestLog
  readonly faults: Faults
  /** Logs an arriving request with the fault it meets (the throttle's 429 first) and the latency in force. */
  readonly begin: (request: {
    readonly method: string
    readonly path: string
    /** The body's text. */
    readonly body: string
    readonly authorized: boolean
  }) => Effect.Effect<RequestLog.Arrival>
}

/**
 * Builds the state from options (defaults: demo tables, demo user, limit 1000).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<MicroappState> =>
  Effect.gen(function*() {
    const users = options.users ?? [demoCredentials]
    const firstUser = users[0] ?? demoCredentials
    let settings: Settings = {
      defaultLimit: options.defaultLimit ?? 1000,
      maxLimit: options.maxLimit,
      latency: Duration.decode(options.latency ?? 0),
      faults: options.faults,
      loginShape: options.loginShape ?? "data",
      throttle: options.throttle,
      lag: options.lag
    }
    const faults = makeFaults(options.faults)
    const log = yield* RequestLog.makeWithCapacity(options.requestLogSize ?? RequestLog.defaultCapacity)
    return {
      credentials: firstUser,
      settings: Effect.sync(() => settings),
      configure: (patch) =>
        Effect.suspend(() => {
          settings = {
            defaultLimit: patch.defaultLimit ?? settings.defaultLimit,
            maxLimit: "maxLimit" in patch ? patch.maxLimit : settings.maxLimit,
            latency: patch.latency === undefined ? settings.latency : Duration.decode(patch.latency),
            faults: "faults" in patch ? patch.faults : settings.faults,
            loginShape: patch.loginShape ?? settings.loginShape,
            throttle: "throttle" in patch ? patch.throttle : settings.throttle,
            lag: "lag" in patch ? patch.lag : settings.lag
          }
          return "faults" in patch ? faults.setPlan(patch.faults) : Effect.void
        }),
      rows: yield* RowStore.make(options.tables ?? demoTables({ projectRows: options.demoRows }), firstUser.userId),
      sessions: yield* Sessions.make(users),
      log,
      faults,
      begin: (request) =>
        log.begin({
          ...request,
          latency: settings.latency,
          fault: (inFlight) => {
            const throttle = settings.throttle
            return throttle !== undefined && inFlight > throttle.maxInFlight
              ? { kind: "http429", retryAfterSeconds: throttle.retryAfterSeconds, retryAfterAsDate: false }
              : faults.decide(request.path)
          }
        })
    }
  })
