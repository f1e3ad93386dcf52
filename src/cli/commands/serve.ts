/**
 * `microapp serve`: the emulator on its own, until Ctrl-C.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { described, wholeNumber } from "./options.js"

const defaultPort = 8787

/**
 * @since 0.1.0
 * @category commands
 */
export const serve = Command.make(
  "serve",
  {
    port: wholeNumber("port", 0).pipe(
      Options.withDefault(defaultPort),
      described(`Port on 127.0.0.1 (0: any free port); default ${defaultPort}`)
    ),
    rows: wholeNumber("rows", 0).pipe(Options.optional, described("Rows of the demo Projects Microapp; default 2500")),
    defaultLimit: wholeNumber("default-limit", 1).pipe(
      Options.optional,
      described("Rows returned to a request that sends no limit; default 1000")
    ),
    maxLimit: wholeNumber("max-limit", 1).pipe(
      Options.optional,
      described("Silently clamp every limit to N; default none")
    )
  },
  (args) =>
    // the emulator is loaded only by the commands that run it, so that the others start faster
    Effect.flatMap(Effect.promise(() => import("../serve.js")), (module) =>
      module.serve({
        port: args.port,
        rows: Option.getOrUndefined(args.rows),
        defaultLimit: Option.getOrUndefined(args.defaultLimit),
        maxLimit: Option.getOrUndefined(args.maxLimit)
      }))
).pipe(Command.withDescription("Run the emulator of the service with demo data until Ctrl-C (then exit 0)"))
