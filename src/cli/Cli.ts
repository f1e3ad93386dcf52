/**
 * The `microapp` command line: `rows`, `row`, `update`, `login`, `serve`, `demo` (one module each
 * in `commands/`). Its commands, flags and exit codes (see `exitCodes.ts`) are part of the
 * package's public contract.
 *
 * @since 0.1.0
 */
import { type CliApp, Command, HelpDoc, ValidationError } from "@effect/cli"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { Cause, Console, Effect, Logger, LogLevel, Schema } from "effect"
import { format } from "node:util"
import { demo } from "./commands/demo.js"
import { login } from "./commands/login.js"
import { row } from "./commands/row.js"
import { rows } from "./commands/rows.js"
import { serve } from "./commands/serve.js"
import { update } from "./commands/update.js"
import { type CliError, errorLine, ExitCode, exitCodeOf, UsageError } from "./exitCodes.js"
import { type Destination, type Signals, stderrLine, stderrLogger, Stdio } from "./stdio.js"

/**
 * What the command line needs from outside: the standard streams, signals, the file system and
 * paths, and a terminal for the password prompt. Its configuration (the `MICROAPP_*` fallbacks of
 * the flags) is read from the current `ConfigProvider`.
 *
 * @since 0.1.0
 * @category models
 */
export type Environment = Stdio | Signals | CliApp.CliApp.Environment

const microapp = Command.make(
  "microapp",
  {},
  () => new UsageError({ message: "a command is required: rows, row, update, login, serve or demo (see --help)" })
).pipe(
  Command.withDescription(
    "Client of the Microapp Data Service, and its local emulator. " +
      "Exit codes: 0 ok, 1 other failure, 2 usage or invalid input, 3 authentication, 4 not found, " +
      "5 the service or the network failed (after retries) or refused the request, 130 interrupted, " +
      "141 standard output closed by its reader."
  ),
  Command.withSubcommands([rows, row, update, login, serve, demo])
)

const PackageJson = Schema.parseJson(Schema.Struct({ version: Schema.String }))

/** The package's version, from the package.json two levels above this module (src/cli or dist/cli). */
const readVersion = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const file = yield* path.fromFileUrl(new URL("../../package.json", import.meta.url))
  return (yield* Schema.decodeUnknown(PackageJson)(yield* fs.readFileString(file))).version
}).pipe(Effect.orElseSucceed(() => "unknown"))

/**
 * The console of @effect/cli (help, version): `log` prints on stdout as Node's console does, and
 * `error` is silenced, since @effect/cli writes there only its usage errors over several lines and
 * one line is printed instead. A reader that has gone is no failure for the help.
 */
const cliConsole = (console: Console.Console, stdout: Destination): Console.Console => ({
  ...console,
  log: (...args) => Effect.ignore(stdout.write(`${format(...args)}\n`)),
  error: () => Effect.void
})

const envOf: Readonly<Record<string, string>> = {
  "--base-url": "MICROAPP_BASE_URL",
  "--token": "MICROAPP_AUTH_TOKEN",
  "--user-id": "MICROAPP_USER_ID"
}

/** A usage error of @effect/cli as one line, each distinct message once. */
const usageLine = (error: ValidationError.ValidationError): string => {
  const text = HelpDoc.toAnsiText(error.error).replace(/\u001b\[[0-9;]*m/g, "")
  const messages = new Set(
    text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== "").map((line) =>
      line.replace(/^Expected to find option: '(--[a-z-]+)'$/, (found, flag: string) => {
        const variable = envOf[flag]
        return variable === undefined ? found : `missing ${flag} (or set ${variable})`
      })
    )
  )
  return `error: ${Array.from(messages).join("; ")}`
}

/** A failure's line on stderr, if it has one. */
const reported = (error: CliError): Effect.Effect<void, never, Stdio> => {
  const line = errorLine(error)
  return line === undefined ? Effect.void : stderrLine(line)
}

const describeDefect = (cause: Cause.Cause<unknown>): string => {
  const defect = Cause.squash(cause)
  return defect instanceof Error ? defect.message : String(defect)
}

/**
 * Runs the command line on `argv` (as `process.argv`: the runtime and the script first) and
 * returns the exit code. Every failure prints one line on stderr and no stack trace.
 *
 * @since 0.1.0
 * @category running
 */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<ExitCode, never, Environment> =>
  Effect.gen(function*() {
    const stdio = yield* Stdio
    const version = yield* readVersion
    const run = Command.run(microapp, { name: "microapp", version })
    return yield* run(argv).pipe(
      Effect.withConsole(cliConsole(yield* Effect.console, stdio.stdout)),
      Effect.as(ExitCode.ok),
      Effect.catchAll((error: CliError | ValidationError.ValidationError) =>
        ValidationError.isValidationError(error)
          ? Effect.as(stderrLine(usageLine(error)), ExitCode.usage)
          : Effect.as(reported(error), exitCodeOf(error))
      )
    )
  }).pipe(
    // a defect: one line, no stack trace
    Effect.catchAllCause((cause) =>
      Effect.as(stderrLine(`error: unexpected failure: ${describeDefect(cause)}`), ExitCode.failure)
    ),
    Effect.provide(Logger.replaceEffect(Logger.defaultLogger, Effect.map(Stdio, (stdio) => stderrLogger(stdio.stderr)))),
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )
