/**
 * The emulator's log of requests: each request as it arrived and how it ended, the number in
 * flight, and the hook a test sets to act between a request's arrival and its answer.
 *
 * @since 0.1.0
 */
import { Clock, type Duration, Effect, Option } from "effect"
import type { Fault, FaultKind } from "./Fault.js"

/**
 * One request as the emulator saw it. Header values and tokens are never recorded; a `password`
 * key of a body is replaced by "<redacted>".
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestRecord {
  /** 0-based arrival order since start or the last `clear`. */
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
 * What the log decided for an arriving request.
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
 * An arriving request, and what it meets: the fault chosen for it given the requests in flight
 * (itself included), and the latency in force.
 *
 * @since 0.1.0
 * @category models
 */
export interface Arriving {
  readonly method: string
  readonly path: string
  readonly body: unknown
  readonly authorized: boolean
  readonly fault: (inFlight: number) => Fault | undefined
  readonly latency: Duration.Duration
}

/**
 * @since 0.1.0
 * @category models
 */
export interface RequestLog {
  /** A snapshot of the log. */
  readonly requests: Effect.Effect<ReadonlyArray<RequestRecord>>
  readonly clear: Effect.Effect<void>
  /** Runs after each request is logged and authenticated, before it is answered. */
  readonly onRequest: (hook: RequestHook) => Effect.Effect<void>
  readonly clearHook: Effect.Effect<void>
  readonly hook: Effect.Effect<Option.Option<RequestHook>>
  /** Logs an arriving request, in flight until its `end`. */
  readonly begin: (request: Arriving) => Effect.Effect<Arrival>
}

type MutableRecord = { -readonly [K in keyof RequestRecord]: RequestRecord[K] }

const redact = (body: unknown): unknown =>
  typeof body === "object" && body !== null && !Array.isArray(body) && "password" in body
    ? { ...body, password: "<redacted>" }
    : body

const snapshot = (record: MutableRecord): RequestRecord => ({ ...record })

/**
 * An empty log.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<RequestLog> = Effect.sync(() => {
  let log: Array<MutableRecord> = []
  let inFlight = 0
  let hook: Option.Option<RequestHook> = Option.none()
  const finish = (update: (finishedAt: number) => void) =>
    Effect.flatMap(Clock.currentTimeMillis, (finishedAt) => Effect.sync(() => update(finishedAt)))
  return {
    requests: Effect.sync(() => log.map(snapshot)),
    clear: Effect.sync(() => {
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
    begin: (request) =>
      Effect.flatMap(Clock.currentTimeMillis, (at) =>
        Effect.sync((): Arrival => {
          inFlight += 1
          const fault = request.fault(inFlight)
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
            latency: request.latency,
            complete: (completion) =>
              finish((finishedAt) => {
                record.finishedAt = finishedAt
                if (completion.status !== undefined) record.status = completion.status
                if (completion.outcome !== undefined) record.outcome = completion.outcome
                if (completion.retryAfterUntil !== undefined) record.retryAfterUntil = completion.retryAfterUntil
              }),
            abandon: finish((finishedAt) => {
              if (record.finishedAt !== undefined) return
              record.finishedAt = finishedAt
              record.outcome = "hung"
            }),
            end: Effect.sync(() => {
              inFlight -= 1
            })
          }
        }))
  }
})
