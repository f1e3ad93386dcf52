/**
 * The command line's environment in a Node process: the process's standard streams and signals,
 * its environment variables as configuration, and the Node file system, path and terminal.
 *
 * @since 0.1.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { ConfigProvider, Effect, Layer } from "effect"
import type { Environment } from "./Cli.js"
import { CommandFailed, ReaderClosed } from "./exitCodes.js"
import { type Destination, Signals, Stdio, type WriteError } from "./stdio.js"

const codeOf = (error: Error): unknown => "code" in error ? error.code : undefined

const writer = (stream: NodeJS.WriteStream, name: string): Destination => {
  // without a listener a closed pipe would crash the process instead of failing a write
  stream.on("error", () => {})
  let readerGone = false
  return {
    write: (text) =>
      text === "" ? Effect.void : Effect.async<void, WriteError>((resume) => {
        stream.write(text, (error) => {
          if (error === null || error === undefined) return resume(Effect.void)
          // after EPIPE the stream is destroyed, and each later write fails with another code
          if (codeOf(error) === "EPIPE" || readerGone) {
            readerGone = true
            return resume(Effect.fail(new ReaderClosed({ stream: name })))
          }
          resume(Effect.fail(new CommandFailed({ message: `cannot write to ${name}: ${error.message}` })))
        })
      })
  }
}

const asError = (error: unknown): Error => error instanceof Error ? error : new Error(String(error))

const stdio = Layer.sync(Stdio, () =>
  Stdio.of({
    stdout: writer(process.stdout, "standard output"),
    stderr: writer(process.stderr, "standard error"),
    stdin: NodeStream.fromReadable<Error, Uint8Array>(() => process.stdin, asError),
    isTerminal: {
      stdin: process.stdin.isTTY === true,
      stdout: process.stdout.isTTY === true,
      stderr: process.stderr.isTTY === true
    }
  }))

const signals = Layer.succeed(
  Signals,
  Signals.of({
    on: (handler) => {
      const onInt = () => handler("SIGINT")
      const onTerm = () => handler("SIGTERM")
      process.on("SIGINT", onInt)
      process.on("SIGTERM", onTerm)
      return () => {
        process.off("SIGINT", onInt)
        process.off("SIGTERM", onTerm)
      }
    }
  })
)

/**
 * @since 0.1.0
 * @category layers
 */
export const nodeEnvironment: Layer.Layer<Environment> = Layer.mergeAll(
  stdio,
  signals,
  NodeContext.layer,
  Layer.setConfigProvider(ConfigProvider.fromEnv())
)
