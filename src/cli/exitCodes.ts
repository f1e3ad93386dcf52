/**
 * The exit codes of the `microapp` command line, the errors of the command line itself, and the
 * one line each failure prints on stderr. Part of the CLI's public contract.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { describe, type MicroappError } from "../MicroappError.js"

/**
 * - `ok` 0: done.
 * - `failure` 1: anything else (local I/O, an unexpected failure, a change pass stopped by its
 *   delete guard: `TooManyDeletes`).
 * - `usage` 2: bad flags or arguments, invalid input (`InvalidInput`, bad `--data` JSON, an invalid
 *   line of `update --from`), a base URL at which the server has no endpoint (`RequestRejected`
 *   with its `url`).
 * - `auth` 3: the service refused the credentials (`Unauthorized`, `Forbidden`).
 * - `notFound` 4: no such row or Microapp (`NotFound`).
 * - `service` 5: the service or the network failed after retries, or the service refused a
 *   request that passed every local check (`ServerError`, `Transport`, `Timeout`, `RateLimited`,
 *   `UnexpectedResponse`, `ScanInconsistent`, `RequestRejected`, `Redirected`), or a line of `update --from` was
 *   not updated.
 * - `interrupted` 130: stopped by SIGINT or SIGTERM (except `serve`, which then exits 0).
 * - `readerClosed` 141: the reader of standard output went away (`head`, a closed pager), as a
 *   filter killed by SIGPIPE (128 + 13) would exit; no error line.
 *
 * @since 0.1.0
 * @category constants
 */
export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 2,
  auth: 3,
  notFound: 4,
  service: 5,
  interrupted: 130,
  readerClosed: 141
} as const

/**
 * @since 0.1.0
 * @category models
 */
export type ExitCode = typeof ExitCode[keyof typeof ExitCode]

/**
 * The command line was used wrongly, or its input is not what it must be.
 *
 * @since 0.1.0
 * @category errors
 */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", {
  message: Schema.String
}) {}

/**
 * Something outside the service failed: a file that cannot be written, the emulator that cannot
 * start.
 *
 * @since 0.1.0
 * @category errors
 */
export class CommandFailed extends Schema.TaggedError<CommandFailed>()("CommandFailed", {
  message: Schema.String
}) {}

/**
 * A signal stopped the command; its cleanup has run.
 *
 * @since 0.1.0
 * @category errors
 */
export class Interrupted extends Schema.TaggedError<Interrupted>()("Interrupted", {
  signal: Schema.String
}) {
  override get message(): string {
    return `interrupted by ${this.signal}`
  }
}

/**
 * The reader of a stream the command writes to has gone (EPIPE): the normal end of a filter
 * whose reader wanted no more, so the command stops quietly.
 *
 * @since 0.1.0
 * @category errors
 */
export class ReaderClosed extends Schema.TaggedError<ReaderClosed>()("ReaderClosed", {
  stream: Schema.String
}) {
  override get message(): string {
    return `${this.stream} closed by its reader`
  }
}

/**
 * `update --from` ended with lines that were not updated; each has its outcome line. Exit 2
 * when any line was invalid, else 5.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotAllUpdated extends Schema.TaggedError<NotAllUpdated>()("NotAllUpdated", {
  lines: Schema.Number,
  invalid: Schema.Number,
  notUpdated: Schema.Number
}) {
  override get message(): string {
    const invalid = `${this.invalid} of them invalid`
    return `${this.notUpdated} of ${this.lines} lines not updated, ${invalid} (see their outcome lines)`
  }
}

/**
 * Every failure a command reports.
 *
 * @since 0.1.0
 * @category models
 */
export type CliError = MicroappError | UsageError | CommandFailed | Interrupted | ReaderClosed | NotAllUpdated

/**
 * The exit code of a failure.
 *
 * @since 0.1.0
 * @category exit codes
 */
export const exitCodeOf = (error: CliError): ExitCode => {
  switch (error._tag) {
    case "UsageError":
    case "InvalidInput":
      return ExitCode.usage
    case "Unauthorized":
    case "Forbidden":
      return ExitCode.auth
    case "NotFound":
      return ExitCode.notFound
    case "ServerError":
    case "Transport":
    case "Timeout":
    case "RateLimited":
    case "UnexpectedResponse":
    case "ScanInconsistent":
    case "Redirected":
      return ExitCode.service
    case "RequestRejected":
      // no endpoint at the base URL: the flag or the environment is wrong, not the service
      return error.url === undefined ? ExitCode.service : ExitCode.usage
    case "Interrupted":
      return ExitCode.interrupted
    case "ReaderClosed":
      return ExitCode.readerClosed
    case "NotAllUpdated":
      return error.invalid > 0 ? ExitCode.usage : ExitCode.service
    case "TooManyRows":
    case "TooManyDeletes":
    case "CommandFailed":
      return ExitCode.failure
  }
}

/**
 * The one line a failure prints on stderr: `error: <what happened> (<tag>, HTTP <status> <method> <path>)`
 * for errors of the client, `error: <what happened>` for the others; none for `ReaderClosed`,
 * which is no failure to a pipeline. Never a token: the client's errors hold none, and the
 * command line puts none into its own.
 *
 * @since 0.1.0
 * @category formatting
 */
export const errorLine = (error: CliError): string | undefined => {
  switch (error._tag) {
    case "ReaderClosed":
      return undefined
    case "UsageError":
    case "CommandFailed":
    case "Interrupted":
    case "NotAllUpdated":
      return `error: ${oneLine(error.message)}`
    default:
      return `error: ${oneLine(describe(error))}`
  }
}

/** Folds any line breaks a server message might carry, so the error stays one line. */
const oneLine = (text: string): string => text.replace(/\s*[\r\n]+\s*/g, " ").trim()
