/**
 * `microapp update --from FILE`: NDJSON updates in, read as they are needed; one NDJSON outcome
 * line out per non-blank input line, in input order; progress and a summary on stderr.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import {
  Clock,
  Deferred,
  Effect,
  Either,
  identity,
  Option,
  Predicate,
  Queue,
  Ref,
  Schema,
  type Scope,
  Stream
} from "effect"
import * as BulkUpdate from "../../BulkUpdate.js"
import { validate } from "../../internal/bounds.js"
import { endpoints } from "../../internal/http/endpoints.js"
import { readToSend, Sendable } from "../../internal/http/plainData.js"
import { MicroappClient } from "../../MicroappClient.js"
import { describe, InvalidInput } from "../../MicroappError.js"
import { NotAllUpdated, UsageError } from "../exitCodes.js"
import { progressiveFile } from "../fileSafety.js"
import { unknownLabels } from "../labels.js"
import { type EarlyStop, updateProgressLine, updateSummaryLine, withProgress } from "../progress.js"
import { type Destination, signalListener, stderrLine, Stdio } from "../stdio.js"

/** One input line; `null` stands for absent in the optional keys, as the service reads it. */
const Line = Schema.Struct({
  rowID: Schema.String,
  // checked as sent before the Record is built, which would drop a `__proto__` key without a word
  rowData: Sendable.pipe(Schema.compose(
    Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
      message: () => "must be an object of field labels and values"
    }),
    { strict: false }
  )),
  embeddingRowID: Schema.optionalWith(Schema.String, { nullable: true }),
  userID: Schema.optionalWith(Schema.String, { nullable: true }),
  ignoreActionRules: Schema.optionalWith(Schema.Boolean, { nullable: true })
}).annotations({
  // a misspelt optional key (`ignoreActionRule`) would otherwise be dropped without a word
  parseOptions: { onExcessProperty: "error" }
})

const validateLine = validate(Line, endpoints.update, "line")
const invalidLine = (reason: string) =>
  new InvalidInput({ method: "POST", path: endpoints.update.path, input: "line", reason })

/** A non-blank line: the update it asks for, or why it is invalid; and its rowID when it names one. */
const parseLine = (text: string) =>
  Either.match(readToSend(text), {
    onLeft: (reason) => Effect.succeed({ rowID: undefined, input: invalidLine(reason) }),
    onRight: (json) => {
      const rowID = Predicate.isRecord(json) && typeof json.rowID === "string" ? json.rowID : undefined
      return Predicate.isRecord(json)
        ? Effect.map(Effect.merge(validateLine(json)), (input) => ({ rowID, input }))
        : Effect.succeed({ rowID, input: invalidLine("must be a JSON object {\"rowID\": ..., \"rowData\": {...}}") })
    }
  })

/**
 * An update naming a label its row does not have becomes invalid; one whose row cannot be read
 * goes on unchecked, for its own outcome to say what became of it.
 */
const checkLabels = (client: MicroappClient.Service) => (input: typeof Line.Type | InvalidInput) =>
  input instanceof InvalidInput || Object.keys(input.rowData).length === 0
    ? Effect.succeed(input)
    : client.getRow(input.rowID).pipe(
      Effect.map((row) =>
        Option.match(unknownLabels(row, input.rowData), {
          onNone: (): typeof Line.Type | InvalidInput => input,
          onSome: (reason) =>
            new InvalidInput({ method: "POST", path: endpoints.update.path, input: "rowData", reason })
        })
      ),
      Effect.orElseSucceed(() => input)
    )

/** How much of FILE is read at a time. */
const chunkSize = FileSystem.KiB(64)

/**
 * The lines of FILE, or of stdin for `-`, read as they are needed. FILE is opened, and checked
 * to be no directory, before the stream is returned: input that cannot be read fails here, before
 * any update starts or any summary is printed.
 */
const linesOf = (
  from: string
): Effect.Effect<Stream.Stream<string, UsageError>, UsageError, FileSystem.FileSystem | Stdio | Scope.Scope> =>
  Effect.gen(function*() {
    const cannotRead = (error: unknown) =>
      new UsageError({
        message: `cannot read --from ${from}: ${
          Predicate.hasProperty(error, "message") ? String(error.message) : String(error)
        }`
      })
    const bytes = from === "-"
      ? Stream.mapError((yield* Stdio).stdin, cannotRead)
      : yield* Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const file = yield* Effect.mapError(fs.open(from, { flag: "r" }), cannotRead)
        // opening a directory succeeds: only reading it fails
        const info = yield* Effect.mapError(file.stat, cannotRead)
        if (info.type === "Directory") return yield* cannotRead("it is a directory")
        return Stream.repeatEffectOption(
          file.readAlloc(chunkSize).pipe(
            Effect.mapError((error) => Option.some(cannotRead(error))),
            Effect.flatMap(Option.match({ onNone: () => Effect.fail(Option.none()), onSome: Effect.succeed }))
          )
        )
      })
    return bytes.pipe(Stream.decodeText(), Stream.splitLines)
  })

const outcomeNames = {
  Updated: "updated",
  Refused: "refused",
  Failed: "failed",
  Unknown: "unknown",
  Invalid: "invalid"
} as const satisfies Record<BulkUpdate.Outcome["_tag"], string>

const errorOf = (outcome: BulkUpdate.Outcome): string | undefined => {
  switch (outcome._tag) {
    case "Updated":
      return undefined
    case "Invalid":
      // never sent: no endpoint to name
      return outcome.error.message
    case "Unknown":
      return outcome.readBackError === undefined
        ? describe(outcome.error)
        : `${describe(outcome.error)}; the row could not be read back: ${describe(outcome.readBackError)}`
    default:
      return describe(outcome.error)
  }
}

/** One outcome line of the contract: `{"line", "rowID", "outcome", "error"?}`. */
const outcomeLine = (source: Source, outcome: BulkUpdate.Outcome): string => {
  const error = errorOf(outcome)
  return `${
    JSON.stringify({
      line: source.line,
      rowID: source.rowID ?? null,
      outcome: outcomeNames[outcome._tag],
      ...(error === undefined ? {} : { error })
    })
  }\n`
}

/** Where an update came from: its line number (1-based, every line counted) and its rowID. */
interface Source {
  readonly line: number
  readonly rowID: string | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface UpdateFromOptions {
  /** A file, or `-` for stdin. */
  readonly from: string
  /** Write the outcome lines to this file instead of stdout. */
  readonly report: Option.Option<string>
  readonly concurrency: number
  readonly maxSends: number
  readonly quiet: boolean
  /** Send labels a row does not have, unchecked; otherwise each row is read first and such a line is invalid. */
  readonly allowUnknownLabels: boolean
}

/**
 * Runs the updates of `options.from` through `updateRows` and writes their outcome lines. Fails
 * with `NotAllUpdated` when a line was not updated. The first SIGINT or SIGTERM stops it: no more
 * updates start, those under way finish and are reported, then it fails with `Interrupted`. A
 * reader of the outcome lines that goes away stops it the same way, then it fails with `ReaderClosed`.
 *
 * @since 0.1.0
 * @category commands
 */
export const updateFrom = (options: UpdateFromOptions) =>
  Effect.gen(function*() {
    const signal = yield* signalListener
    const client = yield* MicroappClient
    const stdio = yield* Stdio
    const lines = yield* linesOf(options.from)
    // the line number and rowID of each update handed over, until its outcome comes back
    const sources = yield* Queue.unbounded<Source>()
    const summary = yield* Ref.make(BulkUpdate.emptySummary)
    const startedAt = yield* Clock.currentTimeMillis
    const elapsed = Effect.map(Clock.currentTimeMillis, (now) => now - startedAt)

    const updates = lines.pipe(
      Stream.zipWithIndex,
      Stream.filter(([text]) => text.trim() !== ""),
      Stream.mapEffect(([text, index]) =>
        Effect.flatMap(parseLine(text), ({ input, rowID }) =>
          Effect.as(Queue.offer(sources, { line: index + 1, rowID }), input))
      ),
      options.allowUnknownLabels
        ? identity
        : Stream.mapEffect(checkLabels(client), { concurrency: options.concurrency })
    )

    // a signal or a reader that has gone stops it gracefully: no more updates start, those under way finish
    const stopped = yield* Deferred.make<EarlyStop>()
    const onSignal = Effect.flatMap(Effect.flip(signal), (interrupted) =>
      Deferred.succeed(stopped, interrupted))
    const stop = Effect.race(onSignal, Deferred.await(stopped))
    const stoppedBy = Effect.whenEffect(Deferred.await(stopped), Deferred.isDone(stopped))
    const report = (destination: Destination) =>
      client.updateRows(updates, { concurrency: options.concurrency, maxSends: options.maxSends, stop }).pipe(
        Stream.runForEach((outcome) =>
          Effect.flatMap(Queue.take(sources), (source) =>
            Effect.zipRight(
              // once the reader has gone, the outcomes still to come are counted with nowhere to be written
              Effect.catchTag(destination.write(outcomeLine(source, outcome)), "ReaderClosed", (closed) =>
                Deferred.succeed(stopped, closed)),
              Ref.update(summary, (counts) =>
                BulkUpdate.addOutcome(counts, outcome))
            ))
        )
      )

    const write = Option.match(options.report, {
      onNone: () =>
        report(stdio.stdout),
      onSome: (file) =>
        Effect.scoped(Effect.flatMap(progressiveFile(file), report))
    })
    const showProgress = !options.quiet && stdio.isTerminal.stderr
    const progress = Effect.zipWith(Ref.get(summary), elapsed, updateProgressLine)
    const closingLine = Effect.gen(function*() {
      const line = updateSummaryLine(yield* Ref.get(summary), yield* elapsed, Option.getOrUndefined(yield* stoppedBy))
      yield* stderrLine(line)
    })
    yield* withProgress(progress, showProgress)(write).pipe(Effect.ensuring(options.quiet ? Effect.void : closingLine))
    const early = yield* stoppedBy
    if (Option.isSome(early)) return yield* early.value
    const counts = yield* Ref.get(summary)
    if (counts.updated < counts.total) {
      const notUpdated = counts.total - counts.updated
      return yield* new NotAllUpdated({ lines: counts.total, invalid: counts.invalid, notUpdated })
    }
  }).pipe(Effect.scoped)
