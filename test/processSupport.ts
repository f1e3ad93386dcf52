/**
 * Child processes for the tests that need a real one (exit codes, signals, SIGKILL), and the
 * disturbances those tests run them under: faults, and rows inserted, updated and deleted all along.
 */
import { expect } from "@effect/vitest"
import { Duration, Effect, Random, Schedule } from "effect"
import { buildSync } from "esbuild"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { shellQuote } from "../src/cli/shell.js"
import type { FaultPlan, MicroappServer } from "../src/testing/index.js"
import { holdWhen, root, type Run } from "./cliSupport.js"

/** The built command line, as `npm run build:bin` writes it. */
export const bin = path.join(root, "dist", "cli", "bin.js")

/** A scratchpad program bundled with its relative imports, the packages left to node_modules: what a child process runs. */
export const bundled = (file: string, cache: string): string => {
  const outfile = path.join(root, "node_modules", ".cache", cache, file.replace(/\.ts$/, ".mjs"))
  buildSync({
    entryPoints: [path.join(root, "scratchpad", file)],
    outfile,
    bundle: true,
    packages: "external",
    format: "esm",
    platform: "node",
    target: "node20",
    logLevel: "error"
  })
  return outfile
}

/** The environment for a child, without the developer's own MICROAPP_* variables. */
export const cleanEnv = Object.fromEntries(
  Object.entries(process.env).filter(([key]) => !key.startsWith("MICROAPP_"))
)

/** What a child wrote so far, kept as it comes. */
export const outputOf = (child: ChildProcessWithoutNullStreams) => {
  const output = { stdout: "", stderr: "" }
  child.stdout.setEncoding("utf8").on("data", (text: string) => (output.stdout += text))
  child.stderr.setEncoding("utf8").on("data", (text: string) => (output.stderr += text))
  return output
}

/** Runs a child process to its end, `stdin` its whole input. */
export const runToEnd = (spawnChild: () => ChildProcessWithoutNullStreams, stdin = "") =>
  Effect.async<Run>((resume) => {
    const child = spawnChild()
    const output = outputOf(child)
    child.on("error", (error) => resume(Effect.die(error)))
    child.on("close", (code) => resume(Effect.succeed({ code, ...output })))
    child.stdin.end(stdin)
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** Runs a bash command line to its end. */
export const shell = (command: string, env: Readonly<Record<string, string>>) =>
  runToEnd(() => spawn("bash", ["-c", command], { env: { ...cleanEnv, ...env }, stdio: "pipe" }))

/** The built CLI as words of a shell command line. */
export const cliWords = (args: ReadonlyArray<string>): string =>
  [process.execPath, bin, ...args].map(shellQuote).join(" ")

/** Waits for a child to end: its exit code, or the signal that ended it. */
export const endOf = (child: ChildProcessWithoutNullStreams) =>
  Effect.async<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      return resume(Effect.succeed({ code: child.exitCode, signal: child.signalCode }))
    }
    child.on("close", (code, signal) => resume(Effect.succeed({ code, signal })))
  })

/**
 * Starts a child five times, each killed with SIGKILL, then once more to its end; that end. Each
 * kill comes 0-20 ms after the emulator starts holding the run's requests, from one of its first
 * seven on (or, for the first two runs, at once: before its first request), in the middle of a page
 * or of a commit; the last three runs are held only once `committed` (a file's modification time,
 * say) has moved since they started, so that the runs are known to have gone on from each other.
 * Held, a run cannot end before its kill, and each killed run passes a few pages, whatever the
 * machine's speed.
 */
export const killedFiveTimes = (
  server: MicroappServer.Service,
  spawnChild: () => ChildProcessWithoutNullStreams,
  committed: Effect.Effect<number>
) =>
  Effect.gen(function*() {
    for (let kill = 0; kill < 5; kill++) {
      const before = yield* committed
      const passed = yield* Random.nextIntBetween(kill < 2 ? -1 : 0, 7)
      let arrived = 0
      // the hook asks it at each request: once it says yes, every request waits for the kill
      const mayKill = kill >= 2 ? Effect.map(committed, (now) => now !== before) : Effect.succeed(true)
      const { holding, release } = yield* holdWhen(
        server,
        Effect.map(mayKill, (may) => ++arrived > passed && may)
      )
      const child = spawnChild()
      const output = outputOf(child)
      child.stdin.end()
      const pause = Duration.millis(yield* Random.nextIntBetween(0, 21))
      // a run that ends by itself fails the test at once with what it said, not after a wait's deadline
      yield* Effect.raceFirst(
        Effect.zipRight(passed < 0 ? Effect.void : holding, Effect.sleep(pause)),
        Effect.flatMap(endOf(child), (end) =>
          Effect.dieMessage(`a run ended before it was killed: ${JSON.stringify({ ...end, ...output })}`))
      )
      child.kill("SIGKILL")
      yield* release
      expect(yield* endOf(child), "a run ended before it was killed").toEqual({ code: null, signal: "SIGKILL" })
    }
    return yield* runToEnd(spawnChild)
  })

/** When a file was last changed (ms), or 0 while it does not exist. */
export const modifiedAt = (file: string): Effect.Effect<number> =>
  Effect.sync(() => fs.existsSync(file) ? fs.statSync(file).mtimeMs : 0)

/**
 * Faults a scan survives with its retries: 8% of requests fail in one of five ways. The 503s ask
 * for no pause (`Retry-After: 0`): the child honours it on the live clock, and no test of a killed
 * run is about that wait (the client's pause is tested on the test clock).
 */
export const scanFaults: FaultPlan = {
  seed: 7,
  rate: 0.08,
  kinds: ["http500", "http503", "drop", "malformedJson", "http408"],
  retryAfterSeconds: 0
}

/** The ids `drift` touched, by what it did to them. */
interface Drifted {
  readonly inserted: Set<string>
  readonly updated: Set<string>
  readonly removed: Set<string>
}

export const drifted = (): Drifted => ({ inserted: new Set(), updated: new Set(), removed: new Set() })

/** Every id `drift` touched: the rows that did not stand still. */
export const touchedBy = (drifted: Drifted): ReadonlySet<string> =>
  new Set([...drifted.inserted, ...drifted.updated, ...drifted.removed])

/**
 * Every 250 ms, a row inserted at a random place of the table (behind a scan as often as ahead of
 * it) and, each one time in two, a random row updated in place and a random row deleted, until
 * interrupted; the ids touched are added to `drifted`.
 */
export const drift = (
  server: MicroappServer.Service,
  microAppID: string,
  drifted: Drifted
) =>
  Effect.gen(function*() {
    const table = yield* server.rows.table(microAppID)
    const someId = Effect.map(Random.nextIntBetween(0, table.length), (i) => table[i]?._id)
    const index = yield* Random.nextIntBetween(0, table.length)
    const inserted = yield* server.rows.insertRow(microAppID, { Name: "inserted while scanning" }, { index })
    drifted.inserted.add(String(inserted._id))
    const changed = yield* someId
    if (changed !== undefined && (yield* Random.nextBoolean)) {
      drifted.updated.add(String(changed))
      yield* server.rows.updateRow(String(changed), { Name: `updated while scanning ${drifted.updated.size}` })
    }
    const victim = yield* someId
    if (victim !== undefined && (yield* Random.nextBoolean)) {
      drifted.removed.add(String(victim))
      yield* server.rows.removeRow(String(victim))
    }
  }).pipe(Effect.repeat(Schedule.spaced(Duration.millis(250))), Effect.asVoid)
