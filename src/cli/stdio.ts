/**
 * What the command line sees of the world outside it, as services: its standard streams (and
 * which of them are terminals) and the signals that stop it. The process provides them in
 * `nodeEnvironment.ts`; a test provides its own, and runs the commands in its own process.
 *
 * @since 0.1.0
 */
import { Context, Deferred, Effect, Logger, type Scope, Stream } from "effect"
import { type CommandFailed, Interrupted, type ReaderClosed, UsageError } from "./exitCodes.js"

/**
 * Why a write failed: the destination failed, or its reader has gone.
 *
 * @since 0.1.0
 * @category models
 */
export type WriteError = CommandFailed | ReaderClosed

/**
 * Somewhere text goes, in order, in whole pieces.
 *
 * @since 0.1.0
 * @category models
 */
export interface Destination {
  readonly write: (text: string) => Effect.Effect<void, WriteError>
}

/**
 * The standard streams: stdout and stderr, whose writes complete when the text has been handed
 * over (so the process can exit without losing output); stdin as it arrives; and which of the
 * three are terminals.
 *
 * @since 0.1.0
 * @category services
 */
export class Stdio extends Context.Tag("effect-microapp/cli/Stdio")<Stdio, {
  readonly stdout: Destination
  readonly stderr: Destination
  /** Standard input, read only when the stream runs; fails with why it cannot be read. */
  readonly stdin: Stream.Stream<Uint8Array, Error>
  readonly isTerminal: {
    readonly stdin: boolean
    readonly stdout: boolean
    readonly stderr: boolean
  }
}>() {}

/**
 * The signals that stop a command.
 *
 * @since 0.1.0
 * @category models
 */
export type Signal = "SIGINT" | "SIGTERM"

/**
 * SIGINT and SIGTERM. `on` calls `handler` for each until the function it returns removes it;
 * a signal that finds no handler takes its default action (it ends the process).
 *
 * @since 0.1.0
 * @category services
 */
export class Signals extends Context.Tag("effect-microapp/cli/Signals")<Signals, {
  readonly on: (handler: (signal: Signal) => void) => () => void
}>() {}

/**
 * Writes one line on stderr; a failure to do so has nowhere to be reported and is ignored.
 *
 * @since 0.1.0
 * @category destinations
 */
export const stderrLine = (line: string): Effect.Effect<void, never, Stdio> =>
  Effect.flatMap(Stdio, (stdio) => Effect.ignore(stdio.stderr.write(`${line}\n`)))

/**
 * Log lines (warnings about skipped rows, for example) go to stderr: stdout carries data. A
 * logger is synchronous, so each line is handed to stderr at once, in order.
 *
 * @since 0.1.0
 * @category destinations
 */
export const stderrLogger = (stderr: Destination): Logger.Logger<unknown, void> =>
  Logger.make(({ annotations, logLevel, message }) => {
    const parts: ReadonlyArray<unknown> = Array.isArray(message) ? message : [message]
    // the client's annotations (endpoint, cause, delayMillis...) hold no secret: they say why
    const annotated = Array.from(annotations).sort(([a], [b]) => a < b ? -1 : 1).map(([key, value]) =>
      ` ${key}=${annotationText(value)}`
    ).join("")
    const line = `${logLevel.label.toLowerCase()}: ${parts.map(String).join(" ")}${annotated}\n`
    Effect.runFork(Effect.ignore(stderr.write(line)))
  })

/** An annotation as logfmt writes it: bare when it has no space or quote, else quoted. */
const annotationText = (value: unknown): string => {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? String(value)
  return /^[^\s"=]*$/.test(text) && text !== "" ? text : JSON.stringify(text)
}

/** More than this on stdin is not a password or a row's data. */
const stdinLimit = 64 * 1024 * 1024

const unreadableStdin = (reason: string) => new UsageError({ message: `cannot read standard input: ${reason}` })

/**
 * All of stdin as text (UTF-8).
 *
 * @since 0.1.0
 * @category input
 */
export const readStdin: Effect.Effect<string, UsageError, Stdio> = Effect.flatMap(Stdio, (stdio) =>
  stdio.stdin.pipe(
    Stream.mapError((error) => unreadableStdin(error.message)),
    Stream.mapAccumEffect(0, (total, bytes) =>
      total + bytes.length > stdinLimit
        ? Effect.fail(unreadableStdin("maxBytes exceeded"))
        : Effect.succeed([total + bytes.length, bytes] as const)),
    Stream.decodeText(),
    Stream.mkString
  ))

/**
 * Listens for SIGINT and SIGTERM from the moment it runs until its scope closes, and returns the
 * wait for the first of them, which fails with `Interrupted`. Listening starts before the work it
 * guards, so a signal sent as soon as the work shows (a temporary file, a listening line) is caught.
 * The first signal removes the listener: a second one ends the process at once.
 *
 * @since 0.1.0
 * @category signals
 */
export const signalListener: Effect.Effect<Effect.Effect<never, Interrupted>, never, Signals | Scope.Scope> = Effect
  .all([Signals, Deferred.make<never, Interrupted>()])
  .pipe(Effect.flatMap(([signals, arrived]) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const off = signals.on((signal) => {
          off()
          Deferred.unsafeDone(arrived, Effect.fail(new Interrupted({ signal })))
        })
        return off
      }),
      (off) => Effect.sync(off)
    ).pipe(Effect.as(Deferred.await(arrived)))
  ))

/**
 * Runs `effect` until it ends or a signal arrives, whichever comes first.
 *
 * @since 0.1.0
 * @category signals
 */
export const untilSignal = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | Interrupted, Signals | Exclude<R, Scope.Scope>> =>
  Effect.scoped(Effect.flatMap(signalListener, (signal) => Effect.raceFirst(effect, signal)))
