/**
 * `microapp row ROW_ID`: one row, as pretty JSON.
 *
 * @since 0.1.0
 */
import { Args, Command } from "@effect/cli"
import { Effect } from "effect"
import { MicroappClient } from "../../MicroappClient.js"
import { Stdio, untilSignal } from "../stdio.js"
import { clientLayer, connection } from "./options.js"

/**
 * The `rowID` argument of `row` and `update`.
 *
 * @since 0.1.0
 * @category arguments
 */
export const rowID = Args.text({ name: "rowID" }).pipe(Args.withDescription("The row's _id"))

/**
 * @since 0.1.0
 * @category commands
 */
export const row = Command.make(
  "row",
  { rowID, ...connection },
  (args) =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const found = yield* client.getRow(args.rowID)
      const stdio = yield* Stdio
      yield* stdio.stdout.write(`${JSON.stringify(found, null, 2)}\n`)
    }).pipe(Effect.provide(clientLayer(args)), untilSignal)
).pipe(Command.withDescription("One row, as pretty JSON"))
