/**
 * The process's standard streams as Effects: writes that complete when the text is handed to the
 * OS (so the process can exit without losing output), stdin read to the end, and a signal to wait for.
 *
 * @since 0.1.0
 */
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Deferred, Effect, Scope } from "effect"
import { CommandFailed, Interrupted, ReaderClosed, UsageError } from "./exitCodes.js"

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

const codeOf = (error: Error): unknown => "code" in error ? error.code : undefined

const handled = new WeakSet<NodeJS.WriteStream>()
const readerGone = new WeakSet<NodeJS.WriteStream>()

const writer = (stream: NodeJS.WriteStream, name: string): Destination => ({
  write: (text) =>
    text === "" ? Effect.void : Effect.async<void, WriteError>((resume) => {
      // without a listener a closed pipe would crash the process instead of failing this write
      if (!handled.has(stream)) {
        handled.add(stream)
        stream.on("error", () => {})
      }
      stream.write(text, (error) => {
        if (error === null || error === undefined) return resume(Effect.void)
        // after EPIPE the stream is destroyed, and each later write fails with another code
        if (codeOf(error) === "EPIPE" || readerGone.has(stream)) {
          readerGone.add(stream)
          return resume(Effect.fail(new ReaderClosed({ stream: name })))
        }
        resume(Effect.fail(new CommandFailed({ message: `cannot write to ${name}: ${error.message}` })))
      })
    })
})

/**
 * @since 0.1.0
 * @category destinations
 */
export const stdout: Destination = writer(process.stdout, "standard output")

/**
 * @since 0.1.0
 * @category destinations
 */
export const stderr: Destination = writer(process.stderr, "standard error")

/**
 * Writes one line on stderr; a failure to do so has nowhere to be reported and is ignored.
 *
 * @since 0.1.0
 * @category destinations
 */
export const stderrLine = (line: string): Effect.Effect<void> => Effect.ignore(stderr.write(`${line}\n`))

/**
 * @since 0.1.0
 * @category terminal
 */
export const stderrIsTerminal: Effect.Effect<boolean> = Effect.sync(() => process.stderr.isTTY === true)

/**
 * @since 0.1.0
 * @category terminal
 */
export const stdoutIsTerminal: Effect.Effect<boolean> = Effect.sync(() => process.stdout.isTTY === true)

/**
 * @since 0.1.0
 * @category terminal
 */
export const stdinIsTerminal: Effect.Effect<boolean> = Effect.sync(() => process.stdin.isTTY === true)

/** More than this on stdin is not a password or a row's data. */
const stdinLimit = 64 * 1024 * 1024

/**
 * All of stdin as text (UTF-8).
 *
 * @since 0.1.0
 * @category input
 */
export const readStdin: Effect.Effect<string, UsageError> = NodeStream.toString(() => process.stdin, {
  onFailure: (error) =>
    new UsageError({
      message: `cannot read standard input: ${error instanceof Error ? error.message : String(error)}`
    }),
  maxBytes: stdinLimit
})

/**
 * Listens for SIGINT and SIGTERM from the moment it runs until its scope closes, and returns the
 * wait for the first of them, which fails with `Interrupted`. Listening starts before the work it
 * guards, so a signal sent as soon as the work shows (a temporary file, a listening line) is caught.
 * The first signal removes the listener: a second one ends the process at once.
 *
 * @since 0.1.0
 * @category signals
 */
export const signalListener: Effect.Effect<Effect.Effect<never, Interrupted>, never, Scope.Scope> = Effect.flatMap(
  Deferred.make<never, Interrupted>(),
  (arrived) => {
    const off = () => {
      process.off("SIGINT", on)
      process.off("SIGTERM", on)
    }
    const on = (signal: NodeJS.Signals) => {
      off()
      Deferred.unsafeDone(arrived, Effect.fail(new Interrupted({ signal })))
    }
    return Effect.acquireRelease(
      Effect.sync(() => {
        process.on("SIGINT", on)
        process.on("SIGTERM", on)
        return Deferred.await(arrived)
      }),
      () => Effect.sync(off)
    )
  }
)

/**
 * Runs `effect` until it ends or a signal arrives, whichever comes first.
 *
 * @since 0.1.0
 * @category signals
 */
export const untilSignal = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | Interrupted, Exclude<R, Scope.Scope>> =>
  Effect.scoped(Effect.flatMap(signalListener, (signal) => Effect.raceFirst(effect, signal)))
