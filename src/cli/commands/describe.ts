/**
 * `microapp describe APP`: a TypeScript module defining the Microapp with `Microapp.make`, its fields
 * inferred from every row of the live table; `--json` prints the inferred fields instead.
 *
 * @since 0.2.0
 */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option, Schema, Stream } from "effect"
import * as Infer from "../../internal/infer.js"
import { MicroappClient } from "../../MicroappClient.js"
import { progressLine, withProgress } from "../progress.js"
import { Stdio, untilSignal } from "../stdio.js"
import { clientLayer, connection, described } from "./options.js"

const InferredFields = Schema.Array(Infer.InferredFieldSchema)

/** Rows a probe of a sort field reads: enough for its order to tell one label from the others. */
const probeRows = 200

/**
 * The sort fields' labels, from 1 on, as far as the rows tell them: each field's rows read in its
 * order, until one the server refuses (no such sort field) or whose order tells no single label.
 */
const probeSortFields = (client: MicroappClient.Service, microAppID: string, labels: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const found: Array<string> = []
    while (found.length < 10) {
      const sorted = yield* client.query({ microAppID, sort: { field: found.length + 1 }, limit: probeRows }).pipe(
        Effect.map(Option.some),
        Effect.catchTag("RequestRejected", () => Effect.succeed(Option.none()))
      )
      const label = Option.flatMapNullable(
        sorted,
        (rows) => Infer.sortFieldOf(labels.filter((label) => !found.includes(label)), rows)
      )
      if (Option.isNone(label)) return found
      found.push(label.value)
    }
    return found
  })

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
      const sortFields = yield* probeSortFields(client, args.microAppID, fields.map((field) => field.label))
      yield* stdio.stdout.write(
        args.json
          ? `${JSON.stringify(Schema.encodeSync(InferredFields)(fields), null, 2)}\n`
          : Infer.moduleOf({ microAppID: args.microAppID, name: args.name, rows: inference.rows(), fields, sortFields })
      )
    }).pipe(Effect.provide(clientLayer(args)), untilSignal)
).pipe(
  Command.withDescription(
    "A TypeScript module defining the Microapp with Microapp.make, inferred from its rows: each label's kind, " +
      "whether every row has it, the choices of a text field with few values; fieldIDs are placeholders " +
      "FIELD_ID_OF:<label> to replace with those the Microapp editor shows"
  )
)
