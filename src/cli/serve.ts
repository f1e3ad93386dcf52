/**
 * `microapp serve`: the emulator on its own, until Ctrl-C.
 *
 * @since 0.1.0
 */
import { Duration, Effect } from "effect"
import { type FaultKind, MicroappServer, peopleMicroAppID, projectsMicroAppID } from "../testing/index.js"
import { CommandFailed } from "./exitCodes.js"
import { shellQuote } from "./shell.js"
import { signalListener, type Signals, Stdio, type WriteError } from "./stdio.js"

/** What a ServeError carries: its message is empty, its cause says what happened (EADDRINUSE...). */
const causeOf = (error: { readonly cause: unknown }): string =>
  error.cause instanceof Error ? error.cause.message : String(error.cause)

/**
 * @since 0.1.0
 * @category models
 */
export interface ServeOptions {
  readonly port: number
  /** Rows of the demo Projects Microapp; the emulator's default when undefined. */
  readonly rows: number | undefined
  readonly defaultLimit: number | undefined
  readonly maxLimit: number | undefined
  readonly latencyMillis: number | undefined
  readonly faults: { readonly rate: number; readonly kinds: ReadonlyArray<FaultKind> } | undefined
  /** 429 above this many requests in flight. */
  readonly throttle: number | undefined
  /** Changes a second to the demo Projects. */
  readonly churn: number | undefined
  /** Of the faults and the churn. */
  readonly seed: number
}

/** The line that says how the emulator misbehaves, when it was asked to. */
const disturbances = (options: ServeOptions): ReadonlyArray<string> => {
  const parts = [
    ...(options.latencyMillis === undefined ? [] : [`latency ${options.latencyMillis} ms`]),
    ...(options.faults === undefined
      ? []
      : [`faults on ${options.faults.rate * 100}% of requests (${options.faults.kinds.join(", ")})`]),
    ...(options.throttle === undefined ? [] : [`429 above ${options.throttle} requests in flight`]),
    ...(options.churn === undefined ? [] : [`${options.churn} changes a second to Projects`])
  ]
  return parts.length === 0 ? [] : [`Disturbances: ${parts.join("; ")}; seed ${options.seed}.`]
}

/**
 * Starts the emulator on 127.0.0.1, prints where it is and how to use it (base URL on the first
 * line), and serves until SIGINT or SIGTERM, then closes every connection and ends normally.
 *
 * @since 0.1.0
 * @category commands
 */
export const serve = (options: ServeOptions): Effect.Effect<void, WriteError, Stdio | Signals> =>
  Effect.scoped(Effect.gen(function*() {
    const signal = yield* signalListener
    const server = yield* Effect.mapError(
      MicroappServer.make({
        host: "127.0.0.1",
        port: options.port,
        ...(options.rows === undefined ? {} : { demoRows: options.rows }),
        ...(options.defaultLimit === undefined ? {} : { defaultLimit: options.defaultLimit }),
        ...(options.maxLimit === undefined ? {} : { maxLimit: options.maxLimit }),
        ...(options.latencyMillis === undefined ? {} : { latency: Duration.millis(options.latencyMillis) }),
        ...(options.faults === undefined ? {} : { faults: { ...options.faults, seed: options.seed } }),
        ...(options.throttle === undefined
          ? {}
          : { throttle: { maxInFlight: options.throttle, retryAfterSeconds: 1 } }),
        ...(options.churn === undefined ? {} : { churn: { perSecond: options.churn, seed: options.seed } })
      }),
      (error) => new CommandFailed({ message: `cannot listen on 127.0.0.1:${options.port}: ${causeOf(error)}` })
    )
    const settings = yield* server.settings
    const projects = (yield* server.rows.table(projectsMicroAppID)).length
    const people = (yield* server.rows.table(peopleMicroAppID)).length
    const { credentials } = server
    const stdio = yield* Stdio
    yield* stdio.stdout.write(
      [
        `Microapp Data Service emulator listening on ${server.baseUrl}`,
        "",
        "Demo user",
        `  email     ${credentials.email}`,
        `  password  ${credentials.password}`,
        `  user id   ${credentials.userId}`,
        `  token     ${credentials.authToken}`,
        "",
        "Microapps",
        `  Projects  ${projectsMicroAppID}  (${projects} rows)`,
        `  People    ${peopleMicroAppID}  (${people} rows)`,
        "",
        `Default row limit ${settings.defaultLimit}; limit clamp ${settings.maxLimit ?? "none"}.`,
        ...disturbances(options),
        "",
        "Try:",
        `  export MICROAPP_BASE_URL=${shellQuote(server.baseUrl)}`,
        `  export MICROAPP_AUTH_TOKEN=${shellQuote(credentials.authToken)}`,
        `  export MICROAPP_USER_ID=${shellQuote(credentials.userId)}`,
        `  microapp rows ${projectsMicroAppID} --format csv --output projects.csv`,
        "",
        "Press Ctrl-C to stop.",
        ""
      ].join("\n")
    )
    // a signal is this command's normal end
    yield* Effect.catchTag(signal, "Interrupted", () => Effect.void)
  }))
