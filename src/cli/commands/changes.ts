/**
 * `microapp changes APP --state STATE --output FILE`: what changed in a Microapp since the last
 * pass, as change events (Debezium's envelope) appended to FILE, resumable through STATE.
 *
 * @since 0.2.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as FileSystem from "@effect/platform/FileSystem"
import { Effect, Option, Stream } from "effect"
import { writeChanges } from "../changeFiles.js"
import { changesSummaryLine, progressLine, withProgress } from "../progress.js"
import { stderrLine, Stdio, untilSignal } from "../stdio.js"
import { clientLayer, connection, deletes, described, maxDeletes, selection, selectionOf } from "./options.js"

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
        "What the next pass compares with (every row's fingerprint), and the pass in progress; missing: " +
          "this pass is the first, a snapshot. Run the same command again after a crash and it goes on, " +
          "every event once"
      )
    ),
    output: Options.file("output").pipe(
      Options.withPseudoName("FILE"),
      described("Append the pass's events to FILE as NDJSON; a new pass needs FILE missing or empty")
    ),
    key: Options.boolean("key").pipe(
      described(
        "Each line KEY<TAB>EVENT, KEY {\"_id\": ...}: a Kafka message's key and value, as kcat -K '\\t' reads them"
      )
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
      const summary = yield* writeChanges(
        options,
        args.output,
        args.state,
        args.key,
        (summary) => withProgress(Effect.map(summary, progressLine), !args.quiet && stdio.isTerminal.stderr)
      )
      // FILE holds this pass's events alone: the first one's source says whether the pass is a snapshot
      const first = yield* Effect.flatMap(FileSystem.FileSystem, (fs) =>
        Stream.runHead(Stream.splitLines(Stream.decodeText(fs.stream(args.output))))).pipe(
          Effect.orElseSucceed(() =>
            Option.none<string>()
          )
        )
      const snapshot = Option.exists(first, (line) => line.includes(`"snapshot":"first"`))
      if (!args.quiet) yield* stderrLine(changesSummaryLine(summary, snapshot))
    }).pipe(Effect.provide(clientLayer(args)), untilSignal)
).pipe(
  Command.withDescription(
    "What changed in a Microapp since the last pass: one event per line in Debezium's envelope ({\"before\", " +
      "\"after\", \"op\": \"r\"|\"c\"|\"u\"|\"d\", \"ts_ms\", \"id\", \"source\"}), a first pass's rows as \"r\""
  )
)
