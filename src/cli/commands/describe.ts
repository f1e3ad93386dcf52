/**
 * `microapp describe APP`: a TypeScript module defining the Microapp with `Microapp.make`, its fields
 * inferred from every row of the live table; `--json` prints the inferred fields instead.
 *
 * @since 0.2.0
 */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Schema, Stream } from "effect"
import * as Infer from "../../internal/infer.js"
import { MicroappClient } from "../../MicroappClient.js"
import { progressLine, withProgress } from "../progress.js"
import { Stdio, untilSignal } from "../stdio.js"
import { clientLayer, connection, described } from "./options.js"

const InferredFields = Schema.Array(Infer.InferredFieldSchema)

/**
 * @since 0.2.0
 * @category commands
 */
export const describe = Command.make(
  "describe",
  {
    microAppID: Args.text({ name: "microAppID" }).pipe(Args.withDescription("The Microapp to describe")),
    name: Options.text("name").pipe(
      Options.withPseudoName("NAME"),
      Options.withDefault("Inferred"),
      described("The Microapp's name, and the exported constant's; default Inferred")
    ),
    json: Options.boolean("json").pipe(described("Print the inferred fields as JSON instead of a module")),
    quiet: Options.boolean("quiet").pipe(described("No progress line on stderr while the rows are read")),
    ...connection
  },
  (args) =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const stdio = yield* Stdio
      const inference = Infer.make()
      const scan = yield* client.scan({ microAppID: args.microAppID })
      yield* Stream.runForEach(scan.rows, (row) => Effect.sync(() => inference.add(row))).pipe(
        withProgress(Effect.map(scan.summary, progressLine), !args.quiet && stdio.isTerminal.stderr)
      )
      const fields = inference.fields()
      yield* stdio.stdout.write(
        args.json
          ? `${JSON.stringify(Schema.encodeSync(InferredFields)(fields), null, 2)}\n`
          : Infer.moduleOf({ microAppID: args.microAppID, name: args.name, rows: inference.rows(), fields })
      )
    }).pipe(Effect.provide(clientLayer(args)), untilSignal)
).pipe(
  Command.withDescription(
    "A TypeScript module defining the Microapp with Microapp.make, inferred from its rows: each label's kind, " +
      "whether every row has it, the choices of a text field with few values; fieldIDs are placeholders " +
      "FIELD_ID_OF:<label> to replace with those the Microapp editor shows"
  )
)
