#!/usr/bin/env node
/**
 * The `microapp` executable: runs the command line on the process's arguments, in the process's
 * environment, and exits with its exit code. Signals are handled by the commands themselves (see
 * `stdio.ts`), so that each can clean up and choose its exit code.
 *
 * @since 0.1.0
 */
import { Effect, Exit } from "effect"
import { main } from "./Cli.js"
import { ExitCode } from "./exitCodes.js"
import { nodeEnvironment } from "./nodeEnvironment.js"

Effect.runFork(main(process.argv).pipe(Effect.provide(nodeEnvironment))).addObserver((exit) => {
  process.exitCode = Exit.isSuccess(exit) ? exit.value : ExitCode.failure
  // whatever still holds the event loop (a stuck socket) must not keep a finished command alive
  setTimeout(() => process.exit(), 2_000).unref()
})
