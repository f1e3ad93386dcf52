/**
 * The `microapp` command line: `rows`, `changes`, `mirror`, `describe`, `row`, `update`, `login`, `serve`, `demo` (one module each
 * in `commands/`). Its commands, flags and exit codes (see `exitCodes.ts`) are part of the
 * package's public contract.
 *
 * @since 0.1.0
 */
import { type CliApp, CliConfig, Command, CommandDescriptor, HelpDoc, Usage, ValidationError } from "@effect/cli"
import { Cause, Config, type Console, Effect, HashMap, Logger, LogLevel, Option } from "effect"
import { format } from "node:util"
import { nearestLabel } from "../internal/microapp.js"
import { changes } from "./commands/changes.js"
import { demo } from "./commands/demo.js"
import { describe } from "./commands/describe.js"
import { login } from "./commands/login.js"
import { mirror } from "./commands/mirror.js"
import { microappCommand } from "./commands/options.js"
import { row } from "./commands/row.js"
import { rows } from "./commands/rows.js"
import { serve } from "./commands/serve.js"
import { update } from "./commands/update.js"
import { type CliError, errorLine, ExitCode, exitCodeOf, UsageError } from "./exitCodes.js"
import { packageVersion } from "./packageVersion.js"
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

const microapp = microappCommand.pipe(
  Command.withHandler(() =>
    new UsageError({
      message: "a command is required: rows, changes, mirror, describe, row, update, login, serve or demo (see --help)"
    })
  ),
  Command.withDescription(
    "Client of the Microapp Data Service, and its local emulator. " +
      "--base-url, --token, --user-id, --timeout and --retries go before the command or after it. " +
      "Exit codes: 0 ok, 1 other failure, 2 usage or invalid input, 3 authentication, 4 not found, " +
      "5 the service or the network failed (after retries) or refused the request, 130 interrupted, " +
      "141 standard output closed by its reader."
  ),
  Command.withSubcommands([rows, changes, mirror, describe, row, update, login, serve, demo])
)

/** What @effect/cli's own options do, under every help. */
const builtInsHelp = HelpDoc.p(
  "Every command also takes: -h, --help (this help); --version; --log-level LEVEL (debug shows each retry " +
    "and pause); --completions bash | zsh | fish | sh (prints a completion script for that shell); --wizard " +
    "(asks for each option on the terminal, shows the command line it built and offers to run it)"
)

const ansi = /\u001b\[[0-9;]*m/g

/**
 * What @effect/cli says of every argument of a primitive type, which its placeholder already says,
 * and of every optional flag, which the usage line's brackets already say.
 */
const boilerplate =
  /^\s*(?:This setting is optional|A user-defined piece of text(?: that is confidential)?|An integer|A true or false value|A floating point number|(?:An existing|A) (?:file|directory|file or directory)(?: that must not exist)?|A date without a time-zone in the ISO-8601 format, .*|One of the following: .*)\.?$/

/** The help as a reader wants it: without the boilerplate lines, and without colour unless `colour`. */
const helpText = (text: string, colour: boolean): string => {
  const lines = text.split("\n")
  const kept = lines.filter((line, i) => {
    const plain = line.replace(ansi, "")
    const previous = lines[i - 1]?.replace(ansi, "")
    // a boilerplate line goes with the blank line after it
    return !boilerplate.test(plain) && !(plain.trim() === "" && previous !== undefined && boilerplate.test(previous))
  })
  const joined = kept.join("\n")
  return colour ? joined : joined.replace(ansi, "")
}

/**
 * The console of @effect/cli (help, version): `log` prints on stdout as Node's console does, in
 * colour only to a terminal and without `NO_COLOR` set, and `error` is silenced, since @effect/cli
 * writes there only its usage errors over several lines and one line is printed instead. A reader
 * that has gone is no failure for the help.
 */
const cliConsole = (console: Console.Console, stdout: Destination, colour: boolean): Console.Console => ({
  ...console,
  log: (...args) => Effect.ignore(stdout.write(`${helpText(format(...args), colour)}\n`)),
  error: () => Effect.void
})

/** Colour for a terminal, unless `NO_COLOR` is set to anything but "" (no-color.org). */
const wantsColour = Effect.map(
  Effect.orElseSucceed(Config.option(Config.string("NO_COLOR")), () => Option.none<string>()),
  (noColour) => Option.isNone(noColour) || noColour.value === ""
)

/** The flag `value` was given to in `argv` (`--flag value` or `--flag=value`), if one was. */
const flagOf = (argv: ReadonlyArray<string>, value: string): string | undefined => {
  for (const [i, arg] of argv.entries()) {
    if (arg.startsWith("--") && arg.endsWith(`=${value}`)) return arg.slice(0, arg.indexOf("="))
    const flag = argv[i - 1]
    if (arg === value && flag?.startsWith("--") === true) return flag
  }
  return undefined
}

/** The flags of the command `argv` runs (of every command when it names none), as its usage lists them. */
const flagsOf = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  const commands = [...HashMap.entries(Command.getSubcommands(microapp))]
  const named = commands.filter(([name]) => argv.includes(name))
  const usages = (named.length === 0 ? commands : named).map(([, command]) =>
    HelpDoc.toAnsiText(Usage.getHelp(CommandDescriptor.getUsage(command))).replace(ansi, "")
  )
  return [...new Set(usages.flatMap((usage) => usage.match(/--[a-z][a-z-]*/g) ?? []))]
}

/** A usage error of @effect/cli as one line, each distinct message once, naming the flag of a bad value. */
const usageLine = (error: ValidationError.ValidationError, argv: ReadonlyArray<string>): string => {
  const text = HelpDoc.toAnsiText(error.error).replace(ansi, "")
  const messages = new Set(
    text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== "").map((line) =>
      line.replace(/^'(.*)' is not a (?:n )?(\w+)$/, (_found, value: string, kind: string) => {
        const flag = flagOf(argv, value)
        const article = /^[aeiou]/.test(kind) ? "an" : "a"
        return `${flag === undefined ? "" : `${flag}: `}'${value}' is not ${article} ${kind}`
      })
    )
  )
  // a flag mistyped by a letter or a hyphen, whichever error @effect/cli met first: the one meant
  const known = [...flagsOf(argv), "--help", "--version", "--log-level", "--completions", "--wizard"]
  for (const flag of argv.filter((arg) => arg.startsWith("--")).map((arg) => arg.replace(/=.*$/, ""))) {
    const meant = known.includes(flag) ? undefined : nearestLabel(known, flag)
    if (meant !== undefined) messages.add(`${flag} is not an option: did you mean ${meant}?`)
  }
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
    const version = yield* packageVersion
    const run = Command.run(microapp, { name: "microapp", version, footer: builtInsHelp })
    return yield* run(argv).pipe(
      // the framework's own options are explained once, in the footer, rather than as options of each command
      Effect.provide(CliConfig.layer({ showBuiltIns: false })),
      Effect.withConsole(
        cliConsole(yield* Effect.console, stdio.stdout, stdio.isTerminal.stdout && (yield* wantsColour))
      ),
      Effect.as(ExitCode.ok),
      Effect.catchAll((error: CliError | ValidationError.ValidationError) =>
        ValidationError.isValidationError(error)
          ? Effect.as(stderrLine(usageLine(error, argv)), ExitCode.usage)
          : Effect.as(reported(error), exitCodeOf(error))
      )
    )
  }).pipe(
    // a defect: one line, no stack trace
    Effect.catchAllCause((cause) =>
      Effect.as(stderrLine(`error: unexpected failure: ${describeDefect(cause)}`), ExitCode.failure)
    ),
    Effect.provide(
      Logger.replaceEffect(Logger.defaultLogger, Effect.map(Stdio, (stdio) => stderrLogger(stdio.stderr)))
    ),
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )
