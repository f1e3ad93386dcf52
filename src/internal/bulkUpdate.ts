/**
 * What `BulkUpdate` declares: the engine behind `updateRows` (bounded concurrency, one outcome per
 * update in input order, updates of one row applied in input order, and ambiguous failures
 * resolved by reading back), and the outcomes, defaults and summary it hands out.
 */
import {
  Clock,
  Data,
  Deferred,
  Effect,
  FiberRef,
  Predicate,
  Record as EffectRecord,
  Schema,
  Sink,
  Stream
} from "effect"
import type * as BulkUpdate from "../BulkUpdate.js"
import type { MicroappClient } from "../MicroappClient.js"
import type { GetRowError, InvalidInput, UpdateRowError } from "../MicroappError.js"
import { UpdateRowsOptionsSchema, validate } from "./bounds.js"
import type { Endpoint } from "./http/endpoints.js"
import { isRetryable } from "./http/errors.js"
import { currentTally, type Tally } from "./http/retry.js"
import { mapInOrder } from "./inOrder.js"
import * as Metrics from "./metrics.js"

// one counter per kind, tagged once
const outcomeCounters = {
  Updated: Metrics.bulkOutcomes({ kind: "Updated" }),
  Refused: Metrics.bulkOutcomes({ kind: "Refused" }),
  Failed: Metrics.bulkOutcomes({ kind: "Failed" }),
  Unknown: Metrics.bulkOutcomes({ kind: "Unknown" }),
  Invalid: Metrics.bulkOutcomes({ kind: "Invalid" })
} satisfies Record<Outcome["_tag"], unknown>

/** The calls the engine makes: the client's own, so every request passes its gate, limits and retries. */
export interface Calls {
  readonly endpoint: Endpoint
  readonly updateRow: (update: MicroappClient.UpdateOptions) => Effect.Effect<void, UpdateRowError>
  readonly getRow: (
    rowID: string,
    options: MicroappClient.CallOptions
  ) => Effect.Effect<{ readonly [key: string]: unknown }, GetRowError>
}

type Options = BulkUpdate.Options

type Settings = { readonly [K in Exclude<keyof Options, "stop">]-?: NonNullable<Options[K]> }

/** Deep equality of JSON values; object keys in any order. */
const jsonEqual = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]))
  if (!Predicate.isRecord(a) || !Predicate.isRecord(b)) return false
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length &&
    keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]))
}

const isReference = (value: unknown): value is { readonly crossAppRowID: string } =>
  Predicate.isRecord(value) && typeof value.crossAppRowID === "string"

/**
 * Whether a written value is what the row holds: `null` clears (the key is gone or null); a
 * cross-application value points at the same row (the server fills in what it shows); anything
 * else is JSON-equal.
 */
const holds = (written: unknown, stored: unknown): boolean =>
  written === null
    ? stored === undefined || stored === null
    : isReference(written)
    ? isReference(stored) && stored.crossAppRowID === written.crossAppRowID
    : jsonEqual(written, stored)

/** Whether `row` holds every value `update` writes (and its `userID` and `embeddingRowID`, when given). */
export const readsBack = (update: MicroappClient.UpdateOptions, row: { readonly [key: string]: unknown }): boolean =>
  Object.entries(update.rowData).every(([label, written]) =>
    holds(written, Object.hasOwn(row, label) ? row[label] : undefined)
  ) &&
  (update.userID === undefined || row.userID === update.userID) &&
  (update.embeddingRowID === undefined || row.embeddingRowID === update.embeddingRowID)

/** An update waiting for the one of the same row before it: `go` is called when its turn comes. */
interface Ticket {
  ready: boolean
  go: (() => void) | undefined
}

const isInvalidInput = <I>(input: I | InvalidInput): input is InvalidInput => Predicate.isTagged(input, "InvalidInput")

/** The input's rowID, if it is a string: the input of an `Invalid` outcome may be anything. */
const rowIDOf = (input: { readonly rowID: unknown }): string | undefined =>
  typeof input.rowID === "string" ? input.rowID : undefined

/**
 * The engine over the client's calls. Each input is first made into the update to send by
 * `prepare` (the typed API encodes values there), whose `InvalidInput` is an `Invalid` outcome.
 */
export const makeUpdateRows = (calls: Calls) => {
  const validateOptions = validate(UpdateRowsOptionsSchema, calls.endpoint)
  const asRead: Endpoint = { ...calls.endpoint, write: false }
  // what a read would retry but a write may not: the server may have acted on it
  const mayHaveActed = (error: UpdateRowError | GetRowError): boolean =>
    error._tag === "UnexpectedResponse" || isRetryable(error, asRead)

  /** Sends `update` until its outcome is known, sending again only after a read-back showed it not applied. */
  const settle = (
    index: number,
    update: MicroappClient.UpdateOptions,
    settings: Settings,
    sends: number,
    tally: Tally
  ): Effect.Effect<Outcome> => {
    const { rowID } = update
    // read when the outcome is made, once its requests are done
    const sent = () => ({ index, rowID, sends, retries: tally.retries, throttled: tally.throttled })
    return Effect.matchEffect(calls.updateRow(update), {
      onSuccess: () => Effect.succeed(Outcome.Updated({ ...sent(), verifiedByReadBack: false })),
      onFailure: (error): Effect.Effect<Outcome> => {
        if (error._tag === "InvalidInput") {
          return Effect.succeed(Outcome.Invalid({ index, rowID: rowIDOf(update), error }))
        }
        // retryable for a write means certainly not acted on: 429, or never sent
        if (isRetryable(error, calls.endpoint)) return Effect.succeed(Outcome.Failed({ ...sent(), error }))
        if (!mayHaveActed(error)) return Effect.succeed(Outcome.Refused({ ...sent(), error }))
        if (!settings.readBack) {
          return Effect.succeed(Outcome.Unknown({ ...sent(), error, readBackError: undefined }))
        }
        return Effect.matchEffect(calls.getRow(rowID, { timeout: update.timeout, retry: update.retry }), {
          onFailure: (readBackError) => Effect.succeed(Outcome.Unknown({ ...sent(), error, readBackError })),
          onSuccess: (row) =>
            readsBack(update, row)
              ? Effect.as(
                Effect.logDebug("update applied, as its read-back shows").pipe(
                  Effect.annotateLogs({ rowID, cause: `${error._tag}: ${error.message}` })
                ),
                Outcome.Updated({ ...sent(), verifiedByReadBack: true })
              )
              : sends < settings.maxSends
              ? settle(index, update, settings, sends + 1, tally)
              : Effect.succeed(Outcome.Failed({ ...sent(), error }))
        })
      }
    })
  }

  /** Runs `updates`, each made into the update to send by `prepare`. */
  return <I extends { readonly rowID: string }, E, R>(
    updates: Stream.Stream<I | InvalidInput, E, R>,
    options: Options,
    prepare: (input: I) => Effect.Effect<MicroappClient.UpdateOptions, InvalidInput>
  ): Stream.Stream<Outcome, E | InvalidInput, R> =>
    Stream.unwrapScoped(Effect.gen(function*() {
      const valid = yield* validateOptions(options)
      const settings: Settings = {
        concurrency: valid.concurrency ?? defaults.concurrency,
        stopOnFailure: valid.stopOnFailure ?? defaults.stopOnFailure,
        readBack: valid.readBack ?? defaults.readBack,
        maxSends: valid.maxSends ?? defaults.maxSends
      }
      let stopped = false
      // what was done so far, as the summary counts it: the span's figures at the end
      let counted = emptySummary
      const span = yield* Effect.option(Effect.currentSpan)
      const halted = yield* Deferred.make<void>()
      const halt = () => {
        stopped = true
        Deferred.unsafeDone(halted, Effect.void)
      }
      if (options.stop !== undefined) yield* Effect.forkScoped(Effect.zipRight(options.stop, Effect.sync(halt)))
      // per row with an update under way, those of it that wait their turn, in input order: a
      // Ticket only for the rare update whose row is already being updated
      const lines = new Map<string, Array<Ticket>>()

      /** The update's place in line for its row, taken in input order as each update starts: none when it may go now. */
      const takeTurn = (rowID: string): Ticket | undefined => {
        const line = lines.get(rowID)
        if (line === undefined) {
          lines.set(rowID, [])
          return undefined
        }
        const ticket: Ticket = { ready: false, go: undefined }
        line.push(ticket)
        return ticket
      }

      const endTurn = (rowID: string) => {
        const next = lines.get(rowID)?.shift()
        if (next === undefined) {
          lines.delete(rowID)
          return
        }
        next.ready = true
        next.go?.()
      }

      const awaitTurn = (ticket: Ticket) =>
        Effect.async<void>((resume) => {
          if (ticket.ready) resume(Effect.void)
          else ticket.go = () => resume(Effect.void)
        })

      const finish = (outcome: Outcome): Outcome => {
        if (settings.stopOnFailure && outcome._tag !== "Updated") halt()
        return outcome
      }

      const send = (index: number, input: I): Effect.Effect<Outcome> =>
        Effect.matchEffect(prepare(input), {
          onFailure: (error) => Effect.succeed(Outcome.Invalid({ index, rowID: rowIDOf(input), error })),
          onSuccess: (prepared) =>
            Effect.suspend(() => {
              // set on the worker's own fiber, which runs one update at a time
              const tally: Tally = { retries: 0, throttled: false }
              return Effect.zipRight(FiberRef.set(currentTally, tally), settle(index, prepared, settings, 1, tally))
            })
        })

      // called in input order as each update starts, so skipping those that start after a stop
      // keeps the outcomes a prefix of the input, and turns are taken in input order
      const start = (element: I | InvalidInput, index: number): Effect.Effect<Outcome> | undefined => {
        if (stopped) return undefined
        if (isInvalidInput(element)) {
          return Effect.sync(() => finish(Outcome.Invalid({ index, rowID: undefined, error: element })))
        }
        const { rowID } = element
        const ticket = takeTurn(rowID)
        const sent = send(index, element)
        return Effect.map(ticket === undefined ? sent : Effect.zipRight(awaitTurn(ticket), sent), (outcome) => {
          endTurn(rowID)
          return finish(outcome)
        })
      }

      /** Counts the outcomes as they are emitted: one metric update per kind, not per outcome. */
      const count = (outcomes: ReadonlyArray<Outcome>) => {
        const before = counted
        for (const outcome of outcomes) counted = addOutcome(counted, outcome)
        return Effect.forEach(
          outcomeKinds,
          (kind) => Metrics.increase(outcomeCounters[kind], counted[kindFigure[kind]] - before[kindFigure[kind]]),
          { discard: true }
        )
      }

      return mapInOrder(updates, settings.concurrency, start, { stop: Deferred.await(halted), onEmit: count }).pipe(
        // the span ends with the figures of what was done, however the stream ended
        Stream.ensuring(Effect.sync(() => {
          if (span._tag === "None") return
          for (const kind of outcomeKinds) span.value.attribute(kind, counted[kindFigure[kind]])
          span.value.attribute("retries", counted.retries)
          span.value.attribute("throttled", counted.throttled)
          span.value.attribute("stopped", stopped)
        }))
      )
    })).pipe(Stream.withSpan("MicroappClient.updateRows"))
}

// --- the outcomes, the defaults and the summary: values of the public module --------------------

export type Outcome = BulkUpdate.Outcome

export const Outcome = Data.taggedEnum<Outcome>()

export const defaults = {
  concurrency: 4,
  stopOnFailure: false,
  readBack: true,
  maxSends: 5
} as const satisfies Settings

const Count = Schema.NonNegativeInt

export const Summary = Schema.Struct({
  total: Count,
  updated: Count,
  verifiedByReadBack: Count,
  refused: Count,
  failed: Count,
  unknown: Count,
  invalid: Count,
  retries: Count,
  throttled: Count,
  elapsedMillis: Count
})

type Summary = typeof Summary.Type

type Figure = keyof Summary

export const emptySummary: Summary = EffectRecord.map(Summary.fields, () => 0)

/** The figure that counts each kind of outcome. */
const kindFigure = {
  Updated: "updated",
  Refused: "refused",
  Failed: "failed",
  Unknown: "unknown",
  Invalid: "invalid"
} as const satisfies Record<Outcome["_tag"], Figure>

const outcomeKinds = Object.keys(kindFigure) as ReadonlyArray<Outcome["_tag"]>

/** What one outcome adds to each figure of a summary (a figure left out: nothing). */
const figuresOf = (outcome: Outcome): Partial<Record<Figure, number>> =>
  outcome._tag === "Invalid"
    // nothing was sent: no retry, no pause
    ? { total: 1, invalid: 1 }
    : {
      total: 1,
      [kindFigure[outcome._tag]]: 1,
      verifiedByReadBack: outcome._tag === "Updated" && outcome.verifiedByReadBack ? 1 : 0,
      retries: outcome.retries,
      throttled: outcome.throttled ? 1 : 0
    }

/** The summary with one more outcome counted: each of its figures plus what the outcome adds to it. */
export const addOutcome = (counted: Summary, outcome: Outcome): Summary => {
  const added = figuresOf(outcome)
  return EffectRecord.map(Summary.fields, (_, figure) => counted[figure] + (added[figure] ?? 0))
}

/** The outcomes folded into their summary, with the time from the sink's start to the stream's end. */
export const summarize: Sink.Sink<Summary, Outcome> = Sink.unwrap(
  Effect.map(Clock.currentTimeMillis, (start) =>
    Sink.mapEffect(
      Sink.foldLeft(emptySummary, addOutcome),
      (summary) => Effect.map(Clock.currentTimeMillis, (end) => ({ ...summary, elapsedMillis: end - start }))
    ))
)
