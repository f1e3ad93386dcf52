/**
 * `microapp changes APP --state STATE --output FILE`: what changed in a Microapp since the last
 * pass, as Debezium's change events appended to FILE, resumable through STATE.
 *
 * @since 0.2.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as FileSystem from "@effect/platform/FileSystem"
import { Effect, Option, ParseResult, Schema } from "effect"
import { writeChanges } from "../changeFiles.js"
import { UsageError } from "../exitCodes.js"
import { failedOn } from "../fileSafety.js"
import { changesSummaryLine, progressLine, withProgress } from "../progress.js"
import { stderrLine, Stdio, untilSignal } from "../stdio.js"
import {
  clientLayer,
  connection,
  deletes,
  described,
  endpointOf,
  maxDeletes,
  selection,
  selectionOf
} from "./options.js"

/** `source.name`: Debezium's logical name of the source, the first part of every schema's name. */
const sourceName = "microapp"

/** What `--fields` may hold: `microapp describe --json`'s fields, of which each label and kind are read. */
const DescribedFields = Schema.parseJson(Schema.Array(Schema.Struct({
  label: Schema.String,
  kind: Schema.Literal("text", "number", "integer", "boolean", "date", "crossApp", "location", "list", "json")
})))

/** `--fields JSON`'s columns, or a usage error naming the file. */
const readFields = (file: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const text = yield* Effect.mapError(fs.readFileString(file), failedOn(`cannot read ${file}`))
    return yield* Effect.mapError(
      Schema.decodeUnknown(DescribedFields)(text),
      (error) =>
        new UsageError({
          message: `--fields ${file} is not the output of microapp describe --json: ${
            ParseResult.TreeFormatter.formatErrorSync(error)
          }`
        })
    )
  })

/**
 * @since 0.2.0
 * @category commands
 */
export const changes = Command.make(
  "changes",
  {
    microAppID: Args.text({ name: "microAppID" }).pipe(Args.withDescription("The Microapp to compare")),
    ...selection,
    state: Options.file("state").pipe(
      Options.withPseudoName("STATE"),
      described(
        "What the next pass compares with (an SQLite database of every row, and the pass in progress); " +
          "missing: this pass is the first, a snapshot. Run the same command again after a crash and it " +
          "goes on, every event once"
      )
    ),
    output: Options.file("output").pipe(
      Options.withPseudoName("FILE"),
      described("Append the pass's events to FILE as NDJSON; a new pass needs FILE missing or empty")
    ),
    key: Options.boolean("key").pipe(
      described(
        "Each line KEY<TAB>EVENT, KEY {\"_id\": ...}: a Kafka message's key and value, as kcat -K '\\t' " +
          "reads them; a tombstone (KEY<TAB> and nothing) after each delete"
      )
    ),
    noTombstones: Options.boolean("no-tombstones").pipe(described("With --key, no tombstone after a delete")),
    schemas: Options.boolean("schemas").pipe(
      described(
        "Each key and event as Kafka Connect's JsonConverter writes them with schemas.enable=true: " +
          "{\"schema\": ..., \"payload\": ...}"
      )
    ),
    before: Options.choice("before", ["row", "key"]).pipe(
      Options.withDefault("row" as const),
      described(
        "row (the default): an update's and a delete's before is the whole previous row, which STATE " +
          "keeps; key: an update's is null and a delete's holds the key only, and STATE keeps fingerprints"
      )
    ),
    fields: Options.file("fields", { exists: "yes" }).pipe(
      Options.withPseudoName("JSON"),
      Options.optional,
      described(
        "The Microapp's fields as `microapp describe APP --json` prints them: the columns' types before any " +
          "row is read (values that disagree still widen them)"
      )
    ),
    table: Options.text("table").pipe(
      Options.withPseudoName("TABLE"),
      Options.optional,
      described("source.table of the events, and the last part of their schemas' names; default the Microapp's id")
    ),
    deletes,
    maxDeletes,
    quiet: Options.boolean("quiet").pipe(described("No progress line and no summary on stderr")),
    ...connection
  },
  (args) =>
    Effect.gen(function*() {
      const stdio = yield* Stdio
      const options = {
        microAppID: args.microAppID,
        deletes: args.deletes,
        maxDeletes: Option.getOrUndefined(args.maxDeletes),
        ...(yield* selectionOf(args))
      }
      const { baseUrl } = yield* endpointOf(args)
      const { lacking, snapshot, summary } = yield* writeChanges(
        options,
        args.output,
        args.state,
        {
          format: {
            key: args.key,
            schemas: args.schemas,
            tombstones: !args.noTombstones,
            before: args.before,
            table: Option.getOrElse(args.table, () => args.microAppID)
          },
          name: sourceName,
          fields: yield* Option.match(args.fields, { onNone: () => Effect.succeed([]), onSome: readFields }),
          db: URL.canParse(baseUrl) ? new URL(baseUrl).host : baseUrl
        },
        (summary) => withProgress(Effect.map(summary, progressLine), !args.quiet && stdio.isTerminal.stderr)
      )
      if (args.quiet) return
      yield* stderrLine(changesSummaryLine(summary, snapshot))
      if (lacking > 0) {
        yield* stderrLine(
          `${lacking} updates and deletes carry only their key as before: STATE, written by an earlier ` +
            `microapp, holds only the fingerprint of a row until the row changes`
        )
      }
    }).pipe(Effect.provide(clientLayer(args)), untilSignal)
).pipe(
  Command.withDescription(
    "What changed in a Microapp since the last pass: one Debezium change event per line ({\"before\", " +
      "\"after\", \"source\", \"transaction\", \"op\": \"r\"|\"c\"|\"u\"|\"d\", \"ts_ms\", \"ts_us\", \"ts_ns\"}), " +
      "a first pass's rows as \"r\""
  )
)
