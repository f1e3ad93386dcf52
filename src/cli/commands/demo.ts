/**
 * `microapp demo` (`npm start`): the service's silent row cap, and the client reading past it.
 *
 * @since 0.1.0
 */
import { Command } from "@effect/cli"
import { Effect } from "effect"
import { untilSignal } from "../stdio.js"

/**
 * @since 0.1.0
 * @category commands
 */
export const demo = Command.make("demo", {}, () =>
  // the emulator is loaded only by the commands that run it, so that the others start faster
  untilSignal(Effect.flatMap(Effect.promise(() => import("../demo.js")), (module) => module.demo))).pipe(
    Command.withDescription("Show the service's silent row cap, and the client reading past it, on the emulator")
  )
