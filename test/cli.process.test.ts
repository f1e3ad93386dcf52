/**
 * The `microapp` command line as a child process (the built `dist/cli/bin.js`), for what only a
 * real process shows: its exit status, real signals, real pipes. One child at a time; everything
 * else is tested in process, in `cli.test.ts`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Schedule } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { beforeAll } from "vitest"
import { shellQuote } from "../src/cli/shell.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import {
  cli as inProcess,
  countUpdates,
  envOf,
  expectFailure,
  expectOneRowEarly,
  expectServing,
  expectStoppedBySigint,
  expectUpdatesCutShort,
  flags,
  idsOf,
  openUpdateArgs,
  pipedRows,
  pipedScan,
  pipedUpdate,
  pipedUpdates,
  slowScanToFile,
  temporaryDirectory,
  untilUpdates
} from "./cliSupport.js"
import {
  bin,
  cleanEnv,
  cliWords,
  drift,
  drifted,
  endOf,
  killedFiveTimes,
  modifiedAt,
  outputOf,
  runToEnd,
  scanFaults,
  shell
} from "./processSupport.js"
import { tasksTable } from "./support.js"
import { eventually } from "./support/eventually.js"

// test/globalSetup.ts builds dist/ once before the suites, so a clean clone needs no prior build
beforeAll(() => {
  if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: the global setup should have built it`)
})

const start = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) =>
  spawn(process.execPath, [bin, ...args], { env: { ...cleanEnv, ...env }, stdio: "pipe" })

/** Runs the CLI to its end. */
const cli = (args: ReadonlyArray<string>) => runToEnd(() => start(args))

/**
 * The CLI piped into `reader` through a real shell pipe: `stdout` is what the reader printed,
 * `stderr` the CLI's, and `code` the CLI's exit status, not the reader's.
 */
const cliInto = (reader: string, args: ReadonlyArray<string>, env: Readonly<Record<string, string>>) =>
  shell(`${cliWords(args)} | ${reader}; exit "\${PIPESTATUS[0]}"`, env)

/** A child that is killed if the test ends first. */
const startScoped = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) =>
  Effect.acquireRelease(Effect.sync(() => start(args, env)), (child) => Effect.sync(() => child.kill("SIGKILL")))

describe("microapp (the built bin, one process at a time)", () => {
  it.live("the exit code of a failure is the process's, with one error line: 2 (a bad flag), 4 (an unknown row)", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const bogus = yield* cli(["rows", projectsMicroAppID, "--bogus", ...flags(server)])
      expectFailure(bogus, 2, [server.credentials.authToken])
      expect(bogus.stderr).toContain("--bogus")
      const unknown = yield* cli(["row", "ffffffffffffffffffffffff", ...flags(server)])
      expectFailure(unknown, 4, [server.credentials.authToken])
      expect(unknown.stderr).toMatch(/\(NotFound, HTTP 404 POST \/api\/microappdata\/row\)\n$/)
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 3 }))))

  it.live("--help into a pipe: all of it, byte for byte as in process, exit 0", () =>
    Effect.gen(function*() {
      const help = yield* cli(["--help"])
      expect(help.code, help.stderr).toBe(0)
      expect(help.stdout).toContain("COMMANDS")
      expect(help).toEqual(yield* inProcess(["--help"]))
    }))

  it.live("SIGINT during rows --output: exit 130, the temporary file removed", () =>
    Effect.gen(function*() {
      const { args, dir, running } = yield* slowScanToFile
      const child = yield* startScoped(args)
      const output = outputOf(child)
      child.stdin.end()
      yield* running
      child.kill("SIGINT")
      expect(yield* endOf(child)).toEqual({ code: 130, signal: null })
      expect(output.stderr).toBe("error: interrupted by SIGINT\n")
      expect(fs.readdirSync(dir)).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ demoRows: 500 }))))

  it.live("serve: prints its URL first, answers requests, exits 0 on SIGINT", () =>
    Effect.gen(function*() {
      const child = yield* startScoped(["serve", "--port", "0", "--rows", "30", "--default-limit", "10"])
      const output = outputOf(child)
      child.stdin.end()
      yield* expectServing(yield* eventually(Effect.sync(() => output.stdout), (text) => text.includes("Ctrl-C")))
      child.kill("SIGINT")
      expect(yield* endOf(child)).toEqual({ code: 0, signal: null })
    }).pipe(Effect.scoped))

  it.live("serve: a SIGTERM sent the moment its first output shows still ends it normally, exit 0", () =>
    Effect.gen(function*() {
      const child = yield* startScoped(["serve", "--port", "0"])
      child.stdin.end()
      child.stdout.once("data", () => child.kill("SIGTERM"))
      expect(yield* endOf(child)).toEqual({ code: 0, signal: null })
    }).pipe(Effect.scoped))

  /** `update --from -` with its stdin left open, as a pipe that may bring more lines. */
  const startOpen = (server: MicroappServer.Service, lines: number, extra: ReadonlyArray<string>) =>
    Effect.map(startScoped(openUpdateArgs(server, extra)), (child) => {
      const output = outputOf(child)
      child.stdin.write(countUpdates(lines, 1000))
      return { child, output }
    })

  it.live("update --from, SIGINT: the updates under way finish and are reported (--report), then exit 130", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ latency: Duration.millis(300) })
      const dir = yield* temporaryDirectory
      const report = path.join(dir, "report.ndjson")
      const { child, output } = yield* startOpen(server, 20, ["--report", report])
      yield* untilUpdates(server, 3)
      child.kill("SIGINT")
      expect(yield* endOf(child)).toEqual({ code: 130, signal: null })
      yield* expectStoppedBySigint(report, output, 20)
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(20)] }))))

  it.live("update --from: a second SIGINT ends the process at once, without waiting for the updates under way", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ latency: Duration.seconds(20) })
      // no reads before the updates: the server holds the updates themselves
      const { child, output } = yield* startOpen(server, 5, ["--allow-unknown-labels"])
      yield* untilUpdates(server, 3)
      // the first SIGINT is taken (the command waits for the updates under way): one of those after it ends the
      // process, however long the first takes to be handled
      const sendSigint = Effect.sync(() => child.kill("SIGINT"))
      const ended = yield* Effect.raceFirst(
        endOf(child),
        Effect.repeat(sendSigint, Schedule.spaced(Duration.millis(500)))
      )
      expect(ended).toEqual({ code: null, signal: "SIGINT" })
      expect(output.stdout).toBe("")
      // the server was still holding them
      expect((yield* server.log.requests).every((record) => record.status === undefined)).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(5)] }))))

  it.live("rows | head -1 (NDJSON) through a real pipe: one whole row, the scan stopped early, exit 141", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* expectOneRowEarly(yield* cliInto("head -1", yield* pipedScan("ndjson"), envOf(server)))
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: pipedRows }))))

  it.live("update --from | head -1 through a real pipe: the updates under way finish and are counted; exit 141", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* expectUpdatesCutShort(yield* cliInto("head -1", yield* pipedUpdate, envOf(server)))
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(pipedUpdates)] }))))

  // rows into a reader already gone is tested in process: its first write fails as row's does
  it.live("row and login into a reader already gone: exit 141, nothing on stderr", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const [first] = yield* server.rows.table(projectsMicroAppID)
      // `true` reads nothing and is gone long before the CLI has started
      const row = yield* cliInto("true", ["row", String(first?._id)], envOf(server))
      expect(row).toEqual({ code: 141, stdout: "", stderr: "" })
      const { email, password } = server.credentials
      const login = yield* shell(
        `printf '%s\\n' ${shellQuote(password)} | ` +
          `${cliWords(["login", "--email", email, "--password-stdin", "--base-url", server.baseUrl])} | true; ` +
          `exit "\${PIPESTATUS[1]}"`,
        {}
      )
      expect(login).toEqual({ code: 141, stdout: "", stderr: "" })
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 30 }))))

  describe("rows --output FILE --checkpoint CKPT, killed with SIGKILL five times at random moments, then run to its end", () => {
    it.live(
      "a table that stands still, under faults: FILE is byte for byte what one uninterrupted run writes",
      () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const dir = yield* temporaryDirectory
          const args = (file: string) => [
            "rows",
            projectsMicroAppID,
            "--format",
            "json",
            "--page-size",
            "20",
            "--concurrency",
            "1",
            "--output",
            file,
            ...flags(server)
          ]
          const reference = path.join(dir, "reference.json")
          expect((yield* cli(args(reference))).code).toBe(0)
          yield* server.configure({ latency: Duration.millis(10), faults: scanFaults })
          const file = path.join(dir, "out.json")
          const ckpt = path.join(dir, "out.ckpt")
          const last = yield* killedFiveTimes(server, () =>
            start([...args(file), "--checkpoint", ckpt]), modifiedAt(ckpt))
          expect(last.code, last.stderr).toBe(0)
          // the runs went on from each other: the rows of the whole scan, over the runs after the first commit
          expect(last.stderr).toMatch(/^done: 1200 rows, .*, resumed (once|\d+ times), exhaustive\n$/)
          expect(fs.readFileSync(file, "utf8")).toBe(fs.readFileSync(reference, "utf8"))
        }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ demoRows: 1200 }))),
      120_000
    )

    it.live(
      "rows inserted and deleted all along, under faults: every row that stood throughout once, no id twice, no torn line",
      () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const dir = yield* temporaryDirectory
          const original = (yield* server.rows.table(projectsMicroAppID)).map((row) => String(row._id))
          const touched = drifted()
          yield* server.configure({ latency: Duration.millis(10), faults: scanFaults })
          const drifting = yield* Effect.fork(drift(server, projectsMicroAppID, touched))
          const file = path.join(dir, "out.ndjson")
          const last = yield* killedFiveTimes(server, () =>
            start([
              "rows",
              projectsMicroAppID,
              "--page-size",
              "20",
              "--concurrency",
              "1",
              "--output",
              file,
              "--checkpoint",
              path.join(dir, "out.ckpt"),
              ...flags(server)
            ]), modifiedAt(path.join(dir, "out.ckpt")))
          yield* Fiber.interrupt(drifting)
          expect(last.code, last.stderr).toBe(0)
          expect(last.stderr).toMatch(
            /, resumed (once|\d+ times), (exhaustive|not exhaustive: rows may have been missed)\n$/
          )
          // a row that arrived behind the position may have stood there all along: no longer vouched for
          if (last.stderr.includes("appeared behind")) expect(last.stderr).toContain(", not exhaustive: ")
          const ids = idsOf(fs.readFileSync(file, "utf8")) // fails on a torn line
          expect(new Set(ids).size).toBe(ids.length)
          const emitted = new Set(ids)
          expect(original.filter((id) => !touched.removed.has(id) && !emitted.has(id))).toEqual([])
          expect(touched.removed.size).toBeGreaterThan(0)
        }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ demoRows: 1200 }))),
      120_000
    )
  })
})
