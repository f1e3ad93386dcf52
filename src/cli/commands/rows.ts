/**
 * `microapp rows APP`: every row of a Microapp, through all pages, as NDJSON, JSON or CSV.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { MicroappClient } from "../../MicroappClient.js"
import { writeCheckpointed } from "../checkpointed.js"
import { type ReaderClosed, UsageError } from "../exitCodes.js"
import { atomicFile } from "../fileSafety.js"
import { progressLine, summaryLine, withProgress } from "../progress.js"
import { formats, writeRows } from "../rowFormats.js"
import { stderrLine, Stdio, untilSignal } from "../stdio.js"
import { clientLayer, connection, described, selection, selectionOf, wholeNumber } from "./options.js"

/**
 * @since 0.1.0
 * @category commands
 */
export const rows = Command.make(
  "rows",
  {
    microAppID: Args.text({ name: "microAppID" }).pipe(Args.withDescription("The Microapp to read")),
    ...selection,
    format: Options.choice("format", formats).pipe(
      Options.withDefault("ndjson"),
      described("ndjson (one row per line), json (one array) or csv (RFC 4180, header first); default ndjson")
    ),
    output: Options.file("output").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      described(
        "Write to FILE, which appears only once complete (never half-written); default stdout. " +
          "With --checkpoint, FILE grows page by page instead"
      )
    ),
    checkpoint: Options.file("checkpoint").pipe(
      Options.withPseudoName("CKPT"),
      Options.optional,
      described(
        "Resumable: after each page is on disk, CKPT records the scan's position and FILE's length; run " +
          "the same command again after a crash and it goes on from there, every row once. Needs --output"
      )
    ),
    checkpointEvery: wholeNumber("checkpoint-every", 1).pipe(
      Options.optional,
      described("With --checkpoint, commit once at least N rows are written, not after every page")
    ),
    quiet: Options.boolean("quiet").pipe(described("No progress line and no summary on stderr")),
    ...connection
  },
  (args) =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const stdio = yield* Stdio
      const options = {
        microAppID: args.microAppID,
        ...(yield* selectionOf(args)),
        ...Option.match(args.checkpointEvery, {
          onNone: () => ({}),
          onSome: (rows) => ({ checkpointEvery: { rows } })
        })
      }
      // a progress line among rows printed on the same terminal would garble them
      const rowsOnTerminal = Option.isNone(args.output) && stdio.isTerminal.stdout
      const showProgress = !args.quiet && !rowsOnTerminal && stdio.isTerminal.stderr
      if (Option.isSome(args.checkpoint)) {
        if (Option.isNone(args.output)) {
          return yield* new UsageError({
            message: "--checkpoint needs --output FILE: standard output cannot be cut back on resume"
          })
        }
        const output = args.output.value
        const done = yield* writeCheckpointed(
          options,
          args.format,
          output,
          args.checkpoint.value,
          (summary) => withProgress(Effect.map(summary, progressLine), showProgress)
        )
        if (args.quiet) return
        return yield* Option.match(done, {
          onNone: () => stderrLine(`${output} is already complete: nothing to do`),
          onSome: (summary) => stderrLine(summaryLine(summary))
        })
      }
      if (Option.isSome(args.checkpointEvery)) {
        return yield* new UsageError({ message: "--checkpoint-every needs --checkpoint" })
      }
      const scan = yield* client.scan(options)
      const write = Option.match(args.output, {
        onNone: () => writeRows(args.format, scan.rows, stdio.stdout),
        onSome: (file) => atomicFile(file, (destination) => writeRows(args.format, scan.rows, destination))
      })
      const closingLine = (stoppedBy?: ReaderClosed) =>
        args.quiet
          ? Effect.void
          : Effect.flatMap(scan.summary, (summary) => stderrLine(summaryLine(summary, stoppedBy)))
      // the scan stops with the write that finds the reader gone, and the summary says so
      yield* withProgress(Effect.map(scan.summary, progressLine), showProgress)(write).pipe(
        Effect.tapErrorTag("ReaderClosed", closingLine)
      )
      yield* closingLine()
    }).pipe(Effect.provide(clientLayer(args)), untilSignal)
).pipe(Command.withDescription("Every row of a Microapp, through all pages, as NDJSON, JSON or CSV"))
