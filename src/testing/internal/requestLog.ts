/**
 * The emulator's log of requests: the most recent requests as they arrived and how they ended
 * (a ring of a fixed capacity, with a count of those dropped from it), the number in flight, and
 * the hook a test sets to act between a request's arrival and its answer.
 */
import { Clock, type Duration, Effect, Option, Schema } from "effect"
import type { Fault, FaultKind } from "./fault.js"

/**
 * One request as the emulator saw it. Header values and tokens are never recorded; a `password`
 * key of a body is replaced by "<redacted>".
 */
export interface RequestRecord {
  /** 0-based arrival order since start or the last `clear` (dropped requests included). */
  readonly seq: number
  readonly method: string
  readonly path: string
  /**
   * The parsed JSON body, or the raw text when it was not JSON, or `"<N characters not kept>"` when it
   * was longer than `maxLoggedBodyLength` characters.
   */
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
 */
export type RequestHook = (record: RequestRecord) => Effect.Effect<void>

/**
 * What the log decided for an arriving request.
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

export interface Completion {
  readonly status?: number | undefined
  readonly outcome?: RequestRecord["outcome"] | undefined
  readonly retryAfterUntil?: number | undefined
}

/**
 * An arriving request, and what it meets: the fault chosen for it given the requests in flight
 * (itself included), and the latency in force.
 */
export interface Arriving {
  readonly method: string
  readonly path: string
  /** The body's text. */
  readonly body: string
  readonly authorized: boolean
  readonly fault: (inFlight: number) => Fault | undefined
  readonly latency: Duration.Duration
}

export interface RequestLog {
  /** A snapshot of the most recent `capacity` requests, in arrival order. */
  readonly requests: Effect.Effect<ReadonlyArray<RequestRecord>>
  /**
   * Requests that arrived and are not yet answered, dropped or abandoned: held by a latency, a
   * hook or a hang (those no longer in the log, or cleared from it, included).
   */
  readonly unfinished: Effect.Effect<number>
  /** Requests dropped from the log to keep it within `capacity` since start or the last `clear`. */
  readonly dropped: Effect.Effect<number>
  readonly capacity: number
  /** Empties the log and restarts `seq` and `dropped` at 0. */
  readonly clear: Effect.Effect<void>
  /** Runs after each request is logged and authenticated, before it is answered. */
  readonly onRequest: (hook: RequestHook) => Effect.Effect<void>
  readonly clearHook: Effect.Effect<void>
  readonly hook: Effect.Effect<Option.Option<RequestHook>>
  /** Logs an arriving request, in flight until its `end`. */
  readonly begin: (request: Arriving) => Effect.Effect<Arrival>
}

/**
 * Requests a log keeps by default: every request of any test, a bounded memory for a server
 * that runs for days.
 */
export const defaultCapacity = 10_000

/**
 * Bodies longer than this are logged as their length only, so that the log's memory is bounded by
 * `capacity` times it.
 */
export const maxLoggedBodyLength = 16 * 1024

// the body is kept as text and parsed when read: a small text may parse to a much larger value;
// `view` is the record as last read, kept until the record changes (tests poll the log every millisecond)
type MutableRecord = { -readonly [K in keyof RequestRecord]: RequestRecord[K] } & {
  bodyText?: string | undefined
  view?: RequestRecord | undefined
}

const redact = (body: unknown): unknown =>
  typeof body === "object" && body !== null && !Array.isArray(body) && "password" in body
    ? { ...body, password: "<redacted>" }
    : body

// built once, not a Schema and its parser for each request
const decodeJson = Schema.decodeUnknownOption(Schema.parseJson())

const parseBody = (text: string): unknown => redact(Option.getOrElse(decodeJson(text), () => text))

const withBody = (record: MutableRecord): MutableRecord => {
  if (record.bodyText !== undefined) {
    record.body = parseBody(record.bodyText)
    record.bodyText = undefined
  }
  return record
}

const snapshot = (record: MutableRecord): RequestRecord => {
  if (record.view === undefined) {
    const { bodyText: _, view: __, ...rest } = withBody(record)
    record.view = rest
  }
  return record.view
}

/**
 * An empty log that keeps the most recent `capacity` requests (at least 1).
 */
export const makeWithCapacity = (capacity: number): Effect.Effect<RequestLog> =>
  Effect.sync(() => {
    const size = Math.max(1, Math.floor(capacity))
    // a ring: `oldest` is where the next record goes once it is full
    let ring: Array<MutableRecord> = []
    let oldest = 0
    let arrivals = 0
    let inFlight = 0
    let unfinished = 0
    let hook: Option.Option<RequestHook> = Option.none()
    const append = (record: MutableRecord): void => {
      if (ring.length < size) {
        ring.push(record)
      } else {
        ring[oldest] = record
        oldest = (oldest + 1) % size
      }
    }
    const finish = (record: MutableRecord, update: (finishedAt: number) => void) =>
      Effect.flatMap(Clock.currentTimeMillis, (finishedAt) =>
        Effect.sync(() => {
          if (record.finishedAt === undefined) unfinished -= 1
          record.view = undefined
          update(finishedAt)
        }))
    return {
      requests: Effect.sync(() => [...ring.slice(oldest), ...ring.slice(0, oldest)].map(snapshot)),
      unfinished: Effect.sync(() => unfinished),
      dropped: Effect.sync(() => arrivals - ring.length),
      capacity: size,
      clear: Effect.sync(() => {
        ring = []
        oldest = 0
        arrivals = 0
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
              seq: arrivals,
              method: request.method,
              path: request.path,
              body: undefined,
              at,
              inFlight,
              outcome: fault?.kind === "hang" ? "hung" : "answered",
              authorized: request.authorized,
              ...(fault === undefined ? {} : { fault: fault.kind })
            }
            arrivals += 1
            unfinished += 1
            const atArrival = { ...record }
            // parsed for a hook, the only reader: a request no hook sees is not parsed twice
            let arrived: RequestRecord | undefined
            if (request.body.length > maxLoggedBodyLength) {
              record.body = `<${request.body.length} characters not kept>`
            } else {
              record.bodyText = request.body
            }
            append(record)
            return {
              get record() {
                return arrived ??= { ...atArrival, body: parseBody(request.body) }
              },
              fault,
              latency: request.latency,
              complete: (completion) =>
                finish(record, (finishedAt) => {
                  record.finishedAt = finishedAt
                  if (completion.status !== undefined) record.status = completion.status
                  if (completion.outcome !== undefined) record.outcome = completion.outcome
                  if (completion.retryAfterUntil !== undefined) record.retryAfterUntil = completion.retryAfterUntil
                }),
              abandon: finish(record, (finishedAt) => {
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

/**
 * An empty log of `defaultCapacity`.
 */
export const make: Effect.Effect<RequestLog> = makeWithCapacity(defaultCapacity)
