/**
 * `microapp update ROW_ID --data JSON` (one row) and `microapp update --from FILE` (many rows).
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as FileSystem from "@effect/platform/FileSystem"
import { Effect, Either, Option, Predicate, Schema } from "effect"
import * as BulkUpdate from "../../BulkUpdate.js"
import { validateEither } from "../../internal/bounds.js"
import { readToSend, Sendable } from "../../internal/http/plainData.js"
import { MicroappClient } from "../../MicroappClient.js"
import { UsageError } from "../exitCodes.js"
import { unknownLabels } from "../labels.js"
import { readStdin, type Stdio, untilSignal } from "../stdio.js"
import { clientLayer, connection, connectionOf, described, wholeNumber } from "./options.js"
import { rowID } from "./row.js"
import { updateFrom } from "./updateFrom.js"

// checked as sent before the Record is built, which would drop a `__proto__` key without a word
const RowData = Sendable.pipe(
  Schema.compose(Schema.Record({ key: Schema.String, value: Schema.Unknown }), { strict: false })
)
const validateRowData = (source: string) => validateEither(RowData, undefined, source)

/** The row data of `update`: JSON that must be an object, with nothing JSON cannot carry unchanged. */
const parseRowData = (text: string, source: string): Either.Either<typeof RowData.Type, UsageError> =>
  Either.flatMap(
    Either.mapLeft(readToSend(text), (reason) => new UsageError({ message: `${source}: ${reason}` })),
    (json) =>
      Predicate.isRecord(json)
        ? Either.mapLeft(validateRowData(source)(json), (error) =>
          new UsageError({
            message: error.input === source ? `${source} ${error.reason}` : `${source} ${error.input}: ${error.reason}`
          }))
        : Either.left(new UsageError({ message: `${source} must be a JSON object of field labels and values` }))
  )

const readDataFile = (file: string): Effect.Effect<string, UsageError, FileSystem.FileSystem | Stdio> =>
  file === "-" ? readStdin : Effect.flatMap(FileSystem.FileSystem, (fs) =>
    Effect.mapError(
      fs.readFileString(file),
      (error) => new UsageError({ message: `cannot read --data-file ${file}: ${error.message}` })
    ))

/** `update ROW_ID --data ...`: one row, its labels checked against the row's unless `allowUnknownLabels`. */
const updateOne = (
  rowID: string,
  args: {
    readonly data: Option.Option<string>
    readonly dataFile: Option.Option<string>
    readonly allowUnknownLabels: boolean
  }
) =>
  Effect.gen(function*() {
    const input = Option.isSome(args.data)
      ? Option.isSome(args.dataFile)
        ? yield* new UsageError({ message: "give either --data or --data-file, not both" })
        : { text: args.data.value, source: "--data" }
      : Option.isSome(args.dataFile)
      ? { text: yield* readDataFile(args.dataFile.value), source: "--data-file" }
      : yield* new UsageError({ message: "update needs --data JSON or --data-file FILE (- for stdin)" })
    const rowData = yield* parseRowData(input.text, input.source)
    const client = yield* MicroappClient
    if (!args.allowUnknownLabels && Object.keys(rowData).length > 0) {
      const unknown = unknownLabels(yield* client.getRow(rowID), rowData)
      if (Option.isSome(unknown)) return yield* new UsageError({ message: unknown.value })
    }
    yield* client.updateRow({ rowID, rowData })
  })

/**
 * @since 0.1.0
 * @category commands
 */
export const update = Command.make(
  "update",
  {
    rowID: rowID.pipe(Args.optional),
    data: Options.text("data").pipe(
      Options.withPseudoName("JSON"),
      Options.optional,
      described("The new values, a JSON object of field labels, e.g. '{\"Status\":\"Done\"}'")
    ),
    dataFile: Options.text("data-file").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      described("Read that JSON object from FILE, or from stdin with -")
    ),
    from: Options.text("from").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      described(
        "Many rows instead of one: NDJSON lines {\"rowID\": ..., \"rowData\": {...}} from FILE, or stdin with -; " +
          "one outcome line each on stdout"
      )
    ),
    report: Options.text("report").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      described("With --from: write the outcome lines to FILE (as they come) instead of stdout")
    ),
    concurrency: wholeNumber("concurrency", 1).pipe(
      Options.optional,
      described(`With --from: updates under way at once; default ${BulkUpdate.defaults.concurrency}`)
    ),
    quiet: Options.boolean("quiet").pipe(described("With --from: no progress line and no summary on stderr")),
    allowUnknownLabels: Options.boolean("allow-unknown-labels").pipe(
      described(
        "Send labels the row does not have (the service ignores them). Without it, the row is read first " +
          "and an update naming such a label is refused (exit 2; with --from, that line is invalid)"
      )
    ),
    ...connection
  },
  (args) =>
    Effect.gen(function*() {
      if (Option.isNone(args.from)) {
        if (Option.isSome(args.report) || Option.isSome(args.concurrency) || args.quiet) {
          return yield* new UsageError({ message: "--report, --concurrency and --quiet go with --from" })
        }
        if (Option.isNone(args.rowID)) {
          return yield* new UsageError({ message: "update needs a rowID, or --from FILE (- for stdin)" })
        }
        return yield* untilSignal(updateOne(args.rowID.value, args))
      }
      if (Option.isSome(args.rowID) || Option.isSome(args.data) || Option.isSome(args.dataFile)) {
        return yield* new UsageError({
          message: "--from takes its rows from FILE: give no rowID, --data or --data-file with it"
        })
      }
      // no untilSignal: a signal stops the reading, and the updates under way are still reported
      return yield* updateFrom({
        from: args.from.value,
        report: args.report,
        concurrency: Option.getOrElse(args.concurrency, () => BulkUpdate.defaults.concurrency),
        // --retries bounds the sends of one update as it bounds the attempts of one request
        maxSends: (yield* connectionOf(args)).retries + 1,
        quiet: args.quiet,
        allowUnknownLabels: args.allowUnknownLabels
      })
    }).pipe(Effect.provide(clientLayer(args)))
).pipe(
  Command.withDescription(
    "Set fields of a row by label (case sensitive); prints nothing on success. " +
      "With --from, many rows: exit 0 when every line is updated, 2 when a line is invalid, else 5 when one is not updated"
  )
)
