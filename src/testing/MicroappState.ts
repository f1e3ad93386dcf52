/**
 * The emulator's state: Microapps and rows, users and tokens, settings, the request log, the
 * request hook and faults. Every access is an Effect; the app and the test controls share it.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Either, Option } from "effect"
import type { Credentials } from "./DemoData.js"
import { demoCredentials, demoTables } from "./DemoData.js"
import type { Fault, FaultKind, FaultPlans, InjectOptions } from "./Fault.js"
import { makeFaultState } from "./Fault.js"
import type { FieldDefinition, Row, TableDefinition, UpdateExtras } from "./Table.js"
import { applyUpdate, buildRow, completeRow, makeRowId } from "./Table.js"
import type { Query } from "./TableQuery.js"
import { runQuery } from "./TableQuery.js"

/**
 * One request as the emulator saw it. Header values and tokens are never recorded; a `password`
 * key of a body is replaced by "<redacted>".
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestRecord {
  /** 0-based arrival order since start or the last `clearRequests`. */
  readonly seq: number
  readonly method: string
  readonly path: string
  /** The parsed JSON body, or the raw text when it was not JSON. */
  readonly body: unknown
  /** Arrival time in ms from the `Clock` in force. */
  readonly at: number
  readonly finishedAt?: number
  /** Requests in flight at arrival, this one included. */
  readonly inFlight: number
  readonly status?: number
  /** "hung": no answer was sent (a `hang` fault, or the client left before the answer). */
  readonly outcome: "answered" | "dropped" | "hung"
  readonly fault?: FaultKind
  /** Set on 429 answers: the time (ms) before which the client was asked not to come back. */
  readonly retryAfterUntil?: number
  readonly authorized: boolean
}

/**
 * Runs after a request is logged and authenticated, before it is answered.
 *
 * @since 0.1.0
 * @category models
 */
export type RequestHook = (record: RequestRecord) => Effect.Effect<void>

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
 * Settings changed at run time. Passing `maxLimit`, `faults` or `throttle` as `undefined` removes them.
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
}

/**
 * @since 0.1.0
 * @category models
 */
export type UpdateOutcome = "updated" | "locked" | "notFound"

/**
 * @since 0.1.0
 * @category models
 */
export interface QueryFailure {
  readonly status: 400 | 404
  readonly message: string
}

/**
 * What `begin` decided for an arriving request.
 *
 * @since 0.1.0
 * @category models
 */
export interface Arrival {
  readonly record: RequestRecord
  readonly fault: Fault | undefined
  readonly latency: Duration.Duration
  /** Records how the request ended, at the current Clock time. */
  readonly complete: (completion: Completion) => Effect.Effect<void>
  /** Marks the request unanswered ("hung") if it ended without an answer or a drop. */
  readonly abandon: Effect.Effect<void>
  /** The request is no longer in flight. */
  readonly end: Effect.Effect<void>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Completion {
  readonly status?: number | undefined
  readonly outcome?: RequestRecord["outcome"] | undefined
  readonly retryAfterUntil?: number | undefined
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

  /** Current rows in natural order; dies on an unknown Microapp. */
  readonly table: (microAppID: string) => Effect.Effect<ReadonlyArray<Row>>
  /** Inserts at the end, or before position `index`; dies on an unknown Microapp. */
  readonly insertRow: (
    microAppID: string,
    rowData: Row,
    options?: { readonly index?: number | undefined; readonly userID?: string | undefined }
  ) => Effect.Effect<Row>
  readonly tryInsertRow: (
    microAppID: string,
    rowData: Row,
    userID: string
  ) => Effect.Effect<Option.Option<Row>>
  readonly removeRow: (rowID: string) => Effect.Effect<boolean>
  readonly getRow: (rowID: string) => Effect.Effect<Option.Option<Row>>
  /** Update semantics of `/api/updatemicroapprow`, including the refusal of a locked row. */
  readonly updateRow: (rowID: string, rowData: Row, extras?: UpdateExtras) => Effect.Effect<UpdateOutcome>
  /** How many updates each row has had applied since start (rows never updated are absent). */
  readonly appliedUpdates: Effect.Effect<ReadonlyMap<string, number>>
  /** Replaces the rows of a Microapp (metadata filled in where missing); dies on an unknown Microapp. */
  readonly setRows: (microAppID: string, rows: ReadonlyArray<Row>) => Effect.Effect<void>
  readonly query: (query: Query) => Effect.Effect<Either.Either<ReadonlyArray<Row>, QueryFailure>>

  /** The userId owning this token, if the pair is current. */
  readonly authenticate: (authToken: string, userId: string) => Effect.Effect<Option.Option<string>>
  /** Whether this user may change rows. */
  readonly canWrite: (userId: string) => Effect.Effect<boolean>
  /** Issues a fresh token for matching credentials. */
  readonly login: (
    email: string,
    password: string
  ) => Effect.Effect<Option.Option<{ readonly authToken: string; readonly userId: string }>>
  /** Invalidates every issued token, the initial ones included. */
  readonly expireTokens: Effect.Effect<void>

  readonly requests: Effect.Effect<ReadonlyArray<RequestRecord>>
  readonly clearRequests: Effect.Effect<void>
  readonly onRequest: (hook: RequestHook) => Effect.Effect<void>
  readonly clearHook: Effect.Effect<void>
  readonly hook: Effect.Effect<Option.Option<RequestHook>>
  /** Queues a fault for the next `count` matching requests, ahead of the seeded plan. */
  readonly injectFault: (kind: FaultKind, options?: InjectOptions) => Effect.Effect<void>

  /** Logs an arriving request and decides its fault. */
  readonly begin: (request: {
    readonly method: string
    readonly path: string
    readonly body: unknown
    readonly authorized: boolean
  }) => Effect.Effect<Arrival>
}

interface TableState {
  readonly microAppID: string
  readonly fields: ReadonlyArray<FieldDefinition>
  readonly sortFields: ReadonlyArray<string>
  rows: Array<Row>
}

type MutableRecord = { -readonly [K in keyof RequestRecord]: RequestRecord[K] }

const generatedIdPrefix = "64f0"
// Rows loaded without a submission time get one from a fixed epoch, so loading stays deterministic.
const loadedSubmittedBase = Date.UTC(2024, 0, 1)

const redact = (body: unknown): unknown =>
  typeof body === "object" && body !== null && !Array.isArray(body) && "password" in body
    ? { ...body, password: "<redacted>" }
    : body

const snapshot = (record: MutableRecord): RequestRecord => ({ ...record })

/**
 * Builds the state from options (defaults: demo tables, demo user, limit 1000).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<MicroappState> =>
  Effect.suspend(() => {
    const users = options.users ?? [demoCredentials]
    const firstUser = users[0] ?? demoCredentials
    let settings: Settings = {
      defaultLimit: options.defaultLimit ?? 1000,
      maxLimit: options.maxLimit,
      latency: Duration.decode(options.latency ?? 0),
      faults: options.faults,
      loginShape: options.loginShape ?? "data",
      throttle: options.throttle
    }
    const faults = makeFaultState(options.faults)
    const tables = new Map<string, TableState>()
    const rowTable = new Map<string, TableState>()
    const tokens = new Map<string, string>(users.map((user) => [user.authToken, user.userId]))
    let log: Array<MutableRecord> = []
    let inFlight = 0
    let rowCounter = 0
    let tokenCounter = 0
    let hook: Option.Option<RequestHook> = Option.none()
    const applied = new Map<string, number>()

    const nextRowId = (): string => makeRowId(generatedIdPrefix, ++rowCounter)

    const completeLoaded = (row: Row, index: number): Row =>
      typeof row["_id"] === "string"
        ? completeRow(row, {
          _id: row["_id"],
          userID: firstUser.userId,
          submitted: loadedSubmittedBase + index * 60_000
        })
        : completeRow(row, {
          _id: nextRowId(),
          userID: firstUser.userId,
          submitted: loadedSubmittedBase + index * 60_000
        })

    const load = (table: TableState, rows: ReadonlyArray<Row>): Option.Option<string> => {
      for (const row of table.rows) rowTable.delete(String(row["_id"]))
      table.rows = rows.map(completeLoaded)
      for (const row of table.rows) {
        const id = String(row["_id"])
        if (rowTable.has(id)) return Option.some(`duplicate row _id ${id} in Microapp ${table.microAppID}`)
        rowTable.set(id, table)
      }
      return Option.none()
    }

    const definitions = options.tables ?? demoTables({ projectRows: options.demoRows })
    for (const definition of definitions) {
      const table: TableState = {
        microAppID: definition.microAppID,
        fields: definition.fields,
        sortFields: definition.sortFields,
        rows: []
      }
      tables.set(definition.microAppID, table)
      const problem = load(table, definition.rows)
      if (Option.isSome(problem)) return Effect.dieMessage(`MicroappState: ${problem.value}`)
    }

    const tableOrDie = (microAppID: string): Effect.Effect<TableState> =>
      Effect.suspend(() => {
        const table = tables.get(microAppID)
        return table === undefined
          ? Effect.dieMessage(`MicroappState: unknown microAppID ${microAppID}`)
          : Effect.succeed(table)
      })

    const locate = (rowID: string): { readonly table: TableState; readonly index: number } | undefined => {
      const table = rowTable.get(rowID)
      if (table === undefined) return undefined
      const index = table.rows.findIndex((row) => row["_id"] === rowID)
      return index < 0 ? undefined : { table, index }
    }

    const insertAt = (table: TableState, row: Row, index: number | undefined): void => {
      const position = index === undefined ? table.rows.length : Math.max(0, Math.min(index, table.rows.length))
      table.rows.splice(position, 0, row)
      rowTable.set(String(row["_id"]), table)
    }

    const newRow = (table: TableState, rowData: Row, userID: string): Effect.Effect<Row> =>
      Effect.map(
        Clock.currentTimeMillis,
        (now) => buildRow(table.fields, rowData, { _id: nextRowId(), userID, submitted: now })
      )

    const state: MicroappState = {
      credentials: firstUser,
      settings: Effect.sync(() => settings),
      configure: (patch) =>
        Effect.sync(() => {
          settings = {
            defaultLimit: patch.defaultLimit ?? settings.defaultLimit,
            maxLimit: "maxLimit" in patch ? patch.maxLimit : settings.maxLimit,
            latency: patch.latency === undefined ? settings.latency : Duration.decode(patch.latency),
            faults: "faults" in patch ? patch.faults : settings.faults,
            loginShape: patch.loginShape ?? settings.loginShape,
            throttle: "throttle" in patch ? patch.throttle : settings.throttle
          }
          if ("faults" in patch) faults.setPlan(patch.faults)
        }),

      table: (microAppID) => Effect.map(tableOrDie(microAppID), (table) => [...table.rows]),
      insertRow: (microAppID, rowData, insertOptions = {}) =>
        Effect.flatMap(tableOrDie(microAppID), (table) =>
          Effect.tap(
            newRow(table, rowData, insertOptions.userID ?? firstUser.userId),
            (row) => Effect.sync(() => insertAt(table, row, insertOptions.index))
          )),
      tryInsertRow: (microAppID, rowData, userID) =>
        Effect.suspend(() => {
          const table = tables.get(microAppID)
          return table === undefined
            ? Effect.succeedNone
            : Effect.map(newRow(table, rowData, userID), (row) => {
              insertAt(table, row, undefined)
              return Option.some(row)
            })
        }),
      removeRow: (rowID) =>
        Effect.sync(() => {
          const found = locate(rowID)
          if (found === undefined) return false
          found.table.rows.splice(found.index, 1)
          rowTable.delete(rowID)
          return true
        }),
      getRow: (rowID) =>
        Effect.sync(() => {
          const found = locate(rowID)
          return Option.fromNullable(found?.table.rows[found.index])
        }),
      updateRow: (rowID, rowData, extras = {}) =>
        Effect.sync((): UpdateOutcome => {
          const found = locate(rowID)
          const row = found?.table.rows[found.index]
          if (found === undefined || row === undefined) return "notFound"
          if (row["isLocked"] === true) return "locked"
          found.table.rows[found.index] = applyUpdate(found.table.fields, row, rowData, extras)
          applied.set(rowID, (applied.get(rowID) ?? 0) + 1)
          return "updated"
        }),
      appliedUpdates: Effect.sync(() => new Map(applied)),
      setRows: (microAppID, rows) =>
        Effect.flatMap(tableOrDie(microAppID), (table) =>
          Effect.suspend(() => {
            const problem = load(table, rows)
            return Option.isSome(problem) ? Effect.dieMessage(`MicroappState: ${problem.value}`) : Effect.void
          })),
      query: (query) =>
        Effect.sync(() => {
          const table = tables.get(query.microAppID)
          if (table === undefined) return Either.left<QueryFailure>({ status: 404, message: "Microapp not found" })
          return Either.mapLeft(
            runQuery(table, table.rows, query, { defaultLimit: settings.defaultLimit, maxLimit: settings.maxLimit }),
            (message): QueryFailure => ({ status: 400, message })
          )
        }),

      authenticate: (authToken, userId) =>
        Effect.sync(() => (tokens.get(authToken) === userId ? Option.some(userId) : Option.none())),
      canWrite: (userId) => Effect.sync(() => users.find((user) => user.userId === userId)?.readOnly !== true),
      login: (email, password) =>
        Effect.sync(() => {
          const user = users.find((candidate) => candidate.email === email && candidate.password === password)
          if (user === undefined) return Option.none()
          const authToken = `${user.userId}-token-${String(++tokenCounter).padStart(4, "0")}`
          tokens.set(authToken, user.userId)
          return Option.some({ authToken, userId: user.userId })
        }),
      expireTokens: Effect.sync(() => tokens.clear()),

      requests: Effect.sync(() => log.map(snapshot)),
      clearRequests: Effect.sync(() => {
        log = []
      }),
      onRequest: (next) =>
        Effect.sync(() => {
          hook = Option.some(next)
        }),
      clearHook: Effect.sync(() => {
        hook = Option.none()
      }),
      hook: Effect.sync(() => hook),
      injectFault: (kind, injectOptions = {}) => Effect.sync(() => faults.inject(kind, injectOptions)),

      begin: (request) =>
        Effect.flatMap(Clock.currentTimeMillis, (at) =>
          Effect.sync((): Arrival => {
            inFlight += 1
            const throttle = settings.throttle
            const fault = throttle !== undefined && inFlight > throttle.maxInFlight
              ? { kind: "http429" as const, retryAfterSeconds: throttle.retryAfterSeconds, retryAfterAsDate: false }
              : faults.decide(request.path)
            const record: MutableRecord = {
              seq: log.length,
              method: request.method,
              path: request.path,
              body: redact(request.body),
              at,
              inFlight,
              outcome: fault?.kind === "hang" ? "hung" : "answered",
              authorized: request.authorized,
              ...(fault === undefined ? {} : { fault: fault.kind })
            }
            log.push(record)
            return {
              record: snapshot(record),
              fault,
              latency: settings.latency,
              complete: (completion) =>
                Effect.flatMap(Clock.currentTimeMillis, (finishedAt) =>
                  Effect.sync(() => {
                    record.finishedAt = finishedAt
                    if (completion.status !== undefined) record.status = completion.status
                    if (completion.outcome !== undefined) record.outcome = completion.outcome
                    if (completion.retryAfterUntil !== undefined) record.retryAfterUntil = completion.retryAfterUntil
                  })),
              abandon: Effect.flatMap(Clock.currentTimeMillis, (finishedAt) =>
                Effect.sync(() => {
                  if (record.finishedAt !== undefined) return
                  record.finishedAt = finishedAt
                  record.outcome = "hung"
                })),
              end: Effect.sync(() => {
                inFlight -= 1
              })
            }
          }))
    }
    return Effect.succeed(state)
  })
