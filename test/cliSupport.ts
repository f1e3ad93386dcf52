/**
 * The `microapp` command line run in this process, with its standard streams, signals,
 * environment variables and terminal provided by the test; and what the suites of the command
 * line share (in process and as a child process).
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Terminal from "@effect/platform/Terminal"
import { expect } from "@effect/vitest"
import { ConfigProvider, Deferred, Duration, Effect, Fiber, Layer, Mailbox, Option, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { main } from "../src/cli/Cli.js"
import { ReaderClosed } from "../src/cli/exitCodes.js"
import { type Destination, type Signal, Signals, Stdio } from "../src/cli/stdio.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { taskID } from "./support.js"
import { eventually } from "./support/eventually.js"

export const root = fileURLToPath(new URL("..", import.meta.url))

/** How a command ended: its exit code, and what it wrote. */
export interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Who reads stdout: `all` of it; `head -1`, which takes the first line and goes away; or a
 * reader `gone` before the first write, as `| true`.
 */
export type Reader = "all" | "head -1" | "gone"

export interface InProcessOptions {
  readonly env?: Readonly<Record<string, string>>
  /** All of stdin, or a stream of it; empty by default. */
  readonly stdin?: string | Stream.Stream<Uint8Array, Error>
  readonly reader?: Reader
  readonly terminal?: { readonly stdin?: boolean; readonly stdout?: boolean; readonly stderr?: boolean }
  /** What is typed on the terminal, a key at a time (a key's name is the character typed). */
  readonly keys?: ReadonlyArray<string>
}

/** A command running in this process. */
export interface Started {
  /** What reached the reader of stdout so far. */
  readonly stdout: Effect.Effect<string>
  readonly stderr: Effect.Effect<string>
  /** Sends a signal; false when no handler took it, so that a process would have been ended by it. */
  readonly raise: (signal: Signal) => Effect.Effect<boolean>
  readonly exit: Effect.Effect<number>
}

const encoder = new TextEncoder()

/** A destination that keeps what its reader took. */
const capture = (reader: Reader, name: string) => {
  let text = ""
  let gone = reader === "gone"
  const destination: Destination = {
    write: (chunk) =>
      Effect.suspend(() => {
        if (gone) return new ReaderClosed({ stream: name })
        text += chunk
        if (reader === "head -1" && text.includes("\n")) gone = true
        return Effect.void
      })
  }
  const taken = () => reader === "head -1" && text.includes("\n") ? text.slice(0, text.indexOf("\n") + 1) : text
  return { destination, taken: Effect.sync(taken) }
}

const signalsOf = () => {
  const handlers = new Set<(signal: Signal) => void>()
  const service = Signals.of({
    on: (handler) => {
      // a handler of its own for each listener, as process.on adds one for each call
      const listener = (signal: Signal) => handler(signal)
      handlers.add(listener)
      return () => void handlers.delete(listener)
    }
  })
  const raise = (signal: Signal) =>
    Effect.sync(() => {
      const current = Array.from(handlers)
      for (const handler of current) handler(signal)
      return current.length > 0
    })
  return { service, raise }
}

/** A terminal whose input is `keys`, then Ctrl-D. */
const terminalOf = (keys: ReadonlyArray<string>, isTTY: boolean) =>
  Terminal.Terminal.of({
    columns: Effect.succeed(80),
    rows: Effect.succeed(24),
    isTTY: Effect.succeed(isTTY),
    readInput: Effect.gen(function*() {
      const mailbox = yield* Mailbox.make<Terminal.UserInput>()
      yield* mailbox.offerAll(keys.map((key) => ({
        input: Option.some(key),
        key: { name: key === "\r" ? "return" : key, ctrl: false, meta: false, shift: false }
      })))
      yield* mailbox.end
      return mailbox
    }),
    readLine: Effect.fail(new Terminal.QuitException()),
    display: () => Effect.void
  })

/** Starts `microapp ARGS` in this process; it is interrupted when the scope closes. */
export const startCli = (args: ReadonlyArray<string>, options: InProcessOptions = {}) =>
  Effect.gen(function*() {
    const stdout = capture(options.reader ?? "all", "standard output")
    const stderr = capture("all", "standard error")
    const signals = signalsOf()
    const terminal = { stdin: false, stdout: false, stderr: false, ...options.terminal }
    const stdin = options.stdin ?? ""
    const environment = Layer.mergeAll(
      Layer.succeed(
        Stdio,
        Stdio.of({
          stdout: stdout.destination,
          stderr: stderr.destination,
          stdin: typeof stdin === "string" ? Stream.make(encoder.encode(stdin)) : stdin,
          isTerminal: terminal
        })
      ),
      Layer.succeed(Signals, signals.service),
      Layer.succeed(Terminal.Terminal, terminalOf(options.keys ?? [], terminal.stdout)),
      NodeFileSystem.layer,
      NodePath.layer,
      Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(options.env ?? {}))))
    )
    const fiber = yield* Effect.forkScoped(main(["node", "microapp", ...args]).pipe(Effect.provide(environment)))
    const started: Started = {
      stdout: stdout.taken,
      stderr: stderr.taken,
      raise: signals.raise,
      exit: Fiber.join(fiber)
    }
    return started
  })

/** Runs `microapp ARGS` in this process to its end. */
export const cli = (args: ReadonlyArray<string>, options: InProcessOptions = {}): Effect.Effect<Run> =>
  Effect.scoped(
    Effect.flatMap(startCli(args, options), (started) =>
      Effect.all({ code: started.exit, stdout: started.stdout, stderr: started.stderr }))
  )

/** A stdin the test writes to while the command runs. */
export const openStdin = Effect.map(Mailbox.make<Uint8Array, Error>(), (mailbox) => ({
  stream: Mailbox.toStream(mailbox),
  write: (text: string) => mailbox.offer(encoder.encode(text)),
  end: mailbox.end
}))

/** Waits until the emulator has seen `n` requests. */
export const untilRequests = (server: MicroappServer.Service, n: number) =>
  eventually(server.log.requests, (log) => log.length >= n)

/** The update requests the emulator has seen. */
export const updateRequests = (server: MicroappServer.Service) =>
  Effect.map(server.log.requests, (log) => log.filter((record) => record.path === updatePath))

/** Waits until the emulator has seen `n` update requests (`update` reads each row before it, to check its labels). */
export const untilUpdates = (server: MicroappServer.Service, n: number) =>
  eventually(updateRequests(server), (sent) => sent.length >= n)

export const flags = (server: MicroappServer.Service, token = server.credentials.authToken) => [
  "--base-url",
  server.baseUrl,
  "--token",
  token,
  "--user-id",
  server.credentials.userId
]

/** `microapp changes` of the demo Projects into STATE and FILE, a page of `pageSize` at a time, one window. */
export const changesArgs = (
  server: MicroappServer.Service,
  state: string,
  output: string,
  extra: ReadonlyArray<string> = [],
  pageSize = 20
) => [
  "changes",
  projectsMicroAppID,
  "--page-size",
  String(pageSize),
  "--concurrency",
  "1",
  "--state",
  state,
  "--output",
  output,
  ...extra,
  ...flags(server)
]

export const envOf = (server: MicroappServer.Service) => ({
  MICROAPP_BASE_URL: server.baseUrl,
  MICROAPP_AUTH_TOKEN: server.credentials.authToken,
  MICROAPP_USER_ID: server.credentials.userId
})

/** A failure: the exit code, one `error:` line on stderr, and no token anywhere. */
export const expectFailure = (run: Run, code: number, tokens: ReadonlyArray<string>) => {
  expect(run.code, run.stderr).toBe(code)
  expect(run.stderr).toMatch(/^error: [^\n]+\n$/)
  for (const token of tokens) {
    expect(run.stdout).not.toContain(token)
    expect(run.stderr).not.toContain(token)
  }
}

/**
 * Where the tests' files go: a memory filesystem where the machine has one and TMPDIR names no
 * other place, since every commit of FILE and CKPT is fsynced, which costs a disk write each.
 */
const scratch = (() => {
  if (process.env["TMPDIR"] !== undefined) return os.tmpdir()
  try {
    fs.accessSync("/dev/shm", fs.constants.W_OK)
    return "/dev/shm"
  } catch {
    return os.tmpdir()
  }
})()

export const temporaryDirectory = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(scratch, "microapp-cli-test-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const decodeIdLine = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ _id: Schema.String })))

/** The `_id`s of NDJSON output, checking that every line is a whole row. */
export const idsOf = (ndjson: string): Array<string> =>
  ndjson.trimEnd().split("\n").map((line) => decodeIdLine(line)._id)

export const updatePath = "/api/updatemicroapprow"

const Outcome = Schema.Struct({
  line: Schema.Number,
  rowID: Schema.NullOr(Schema.String),
  outcome: Schema.Literal("updated", "refused", "failed", "unknown", "invalid"),
  error: Schema.optional(Schema.String)
})
const decodeOutcome = Schema.decodeUnknownSync(Schema.parseJson(Outcome), { onExcessProperty: "error" })

/** The outcome lines of `update --from`, each checked against the contract. */
export const outcomesOf = (ndjson: string) =>
  ndjson === "" ? [] : ndjson.trimEnd().split("\n").map((line) => decodeOutcome(line))

/** `count` NDJSON update lines, row i's Count set to `value`. */
export const countUpdates = (count: number, value: number, from = 0) =>
  Array.from({ length: count }, (_, i) => `${JSON.stringify({ rowID: taskID(from + i), rowData: { Count: value } })}\n`)
    .join("")

/** The closing line of a scan cut short by its reader; its row count in group 1. */
const stoppedScan =
  /^stopped \(standard output closed by its reader\): (\d+) rows, \d+ pages?, [\d.]+ s, 0 duplicates dropped, 0 realignments, up to \d+ requests? in flight\n$/

/** The closing line of `update --from` cut short by its reader; lines counted in group 1, updated in group 2. */
const stoppedUpdates =
  /^stopped \(standard output closed by its reader\): (\d+) lines, (\d+) updated \(0 after read-back\), 0 refused, 0 failed, 0 unknown, 0 invalid, 0 retries, 0 throttled, [\d.]+ s\n$/

/** The rows the pipe tests scan: 30 pages of about 100 kB each, a scan long enough to cut short. */
export const pipedRows = 3000
export const pipedPageSize = 100

/** `rows --format FORMAT` as the pipe tests run it, each of its requests held 20 ms by the emulator. */
export const pipedScan = (format: string) =>
  Effect.as(
    Effect.flatMap(MicroappServer, (server) => server.configure({ latency: Duration.millis(20) })),
    ["rows", projectsMicroAppID, "--format", format, "--page-size", String(pipedPageSize), "--concurrency", "2"]
  )

/** A scan whose reader went away: exit 141, only the stopped summary; the rows it counted, and what the emulator saw. */
export const cutShort = (run: Run) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    expect(run.code, run.stderr).toBe(141)
    expect(run.stderr).toMatch(stoppedScan)
    const rows = Number(stoppedScan.exec(run.stderr)?.[1])
    return { rows, requests: (yield* server.log.requests).length, table: yield* server.rows.table(projectsMicroAppID) }
  })

/** NDJSON into `head -1`: one whole row, and the scan stopped early. */
export const expectOneRowEarly = (run: Run) =>
  Effect.gen(function*() {
    const { requests, rows, table } = yield* cutShort(run)
    expect(idsOf(run.stdout)).toEqual([table[0]?._id])
    expect(rows).toBeGreaterThanOrEqual(pipedPageSize)
    expect(rows).toBeLessThan(pipedRows / 2)
    expect(requests).toBeLessThan(pipedRows / pipedPageSize / 2)
  })

/** The updates the pipe tests send into `head -1`. */
export const pipedUpdates = 200

/** `update --from FILE` as the pipe tests run it: FILE holds `pipedUpdates` updates, each held 20 ms by the emulator. */
export const pipedUpdate = Effect.gen(function*() {
  const server = yield* MicroappServer
  yield* server.configure({ latency: Duration.millis(20) })
  const file = path.join(yield* temporaryDirectory, "updates.ndjson")
  fs.writeFileSync(file, countUpdates(pipedUpdates, 1000))
  return ["update", "--from", file, "--concurrency", "2"]
})

/**
 * `rows --output FILE` one request at a time, each held 100 ms: 100 pages, 10 s, so that a signal
 * finds the scan running. `running` waits for its temporary file beside FILE, alone in `dir`.
 */
export const slowScanToFile = Effect.gen(function*() {
  const server = yield* MicroappServer
  yield* server.configure({ latency: Duration.millis(100) })
  const dir = yield* temporaryDirectory
  const output = path.join(dir, "out.ndjson")
  const args = [
    "rows",
    projectsMicroAppID,
    "--page-size",
    "5",
    "--concurrency",
    "1",
    "--output",
    output,
    ...flags(server)
  ]
  const running = eventually(Effect.sync(() => fs.readdirSync(dir)), (files) => files.length > 0)
  return { dir, args, running }
})

/** `update --from -` of tasks, for a stdin left open as a pipe that may bring more lines. */
export const openUpdateArgs = (
  server: MicroappServer.Service,
  extra: ReadonlyArray<string>
) => ["update", "--from", "-", "--concurrency", "3", ...extra, ...flags(server)]

/** `update --from FILE` into `head -1`: one outcome line, exit 141; every update sent was applied and counted. */
export const expectUpdatesCutShort = (run: Run) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    expect(run.code, run.stderr).toBe(141)
    expect(outcomesOf(run.stdout)).toEqual([{ line: 1, rowID: taskID(0), outcome: "updated" }])
    const summary = stoppedUpdates.exec(run.stderr)
    const counted = Number(summary?.[1])
    expect(Number(summary?.[2])).toBe(counted)
    expect(counted).toBeLessThan(pipedUpdates / 2)
    // none was cut off on its way
    const counts = yield* server.rows.appliedUpdates
    expect([...counts.keys()].sort()).toEqual(Array.from({ length: counted }, (_, i) => taskID(i)))
    expect((yield* server.log.requests).filter((record) => record.path === updatePath)).toHaveLength(counted)
  })

/**
 * After a SIGINT stopped `update --from -` of `lines` updates with `--report`: the updates under
 * way finished and have their lines, only those were applied, and stderr says so.
 */
export const expectStoppedBySigint = (report: string, output: Omit<Run, "code">, lines: number) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const outcomes = outcomesOf(fs.readFileSync(report, "utf8"))
    const counts = yield* server.rows.appliedUpdates
    expect(outcomes.length).toBeGreaterThanOrEqual(3)
    expect(outcomes.length).toBeLessThan(lines)
    expect(outcomes).toEqual(outcomes.map((_, i) => ({ line: i + 1, rowID: taskID(i), outcome: "updated" })))
    expect([...counts.keys()].sort()).toEqual(outcomes.map((outcome) => outcome.rowID))
    expect(output.stdout).toBe("")
    expect(output.stderr).toMatch(
      /^stopped \(interrupted by SIGINT\): \d+ lines, [^\n]+\nerror: interrupted by SIGINT\n$/
    )
  })

const PlainAnswer = Schema.parseJson(Schema.Struct({
  status: Schema.Literal("success"),
  body: Schema.Struct({ microAppRows: Schema.Array(Schema.Unknown) })
}))

/**
 * The first lines of `serve --rows 30 --default-limit 10`: the base URL first, then the demo
 * credentials and Microapps; and the emulator answering there, 10 rows to a request with no limit.
 * Returns the base URL.
 */
export const expectServing = (firstLines: string) =>
  Effect.gen(function*() {
    const url = /^Microapp Data Service emulator listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(firstLines)?.[1]
    expect(url).toBeDefined()
    expect(firstLines).toContain("demo-token-0001")
    expect(firstLines).toContain(projectsMicroAppID)
    const body = yield* Effect.promise(() =>
      fetch(`${url}/api/microappdata`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-auth-token": "demo-token-0001", "x-user-id": "demo-user" },
        body: JSON.stringify({ microAppID: projectsMicroAppID })
      }).then((response) => response.text())
    )
    expect(Schema.decodeUnknownSync(PlainAnswer)(body).body.microAppRows).toHaveLength(10)
    return String(url)
  })

/** `rows` of the projects Microapp, 20 rows a request, one request at a time, quietly, with `extra`. */
export const rowsArgs = (server: MicroappServer.Service, extra: ReadonlyArray<string>) => [
  "rows",
  projectsMicroAppID,
  "--page-size",
  "20",
  "--concurrency",
  "1",
  "--quiet",
  ...extra,
  ...flags(server)
]

/** How many requests the emulator has seen. */
export const requestCount = Effect.map(
  Effect.flatMap(MicroappServer, (server) => server.log.requests),
  (log) => log.length
)

/**
 * Holds every request from the first for which `from` (asked at each request, before it is
 * answered) says yes, until `release` (which also clears the hook); `holding` waits for that first.
 */
export const holdWhen = (server: MicroappServer.Service, from: Effect.Effect<boolean>) =>
  Effect.gen(function*() {
    const gate = yield* Deferred.make<void>()
    const holding = yield* Deferred.make<void>()
    let held = false
    yield* server.log.onRequest(() =>
      held ? Deferred.await(gate) : Effect.flatMap(from, (now) => {
        if (!now) return Effect.void
        held = true
        return Effect.zipRight(Deferred.succeed(holding, undefined), Deferred.await(gate))
      })
    )
    return {
      holding: Deferred.await(holding),
      release: Effect.zipRight(Deferred.succeed(gate, undefined), server.log.clearHook)
    }
  })

/**
 * Holds the `n`th request from now, and every one after it, until `release` (which also clears the
 * hook): a command stopped meanwhile is stopped mid-scan on any machine, with no latency to wait for.
 */
export const holdFrom = (server: MicroappServer.Service, n: number) =>
  Effect.suspend(() => {
    let arrived = 0
    return holdWhen(server, Effect.sync(() => ++arrived >= n))
  })

/** `rows --output FILE --checkpoint CKPT` stopped by SIGINT after a few pages: FILE and CKPT as after a crash half-way. */
export const halfDone = Effect.gen(function*() {
  const server = yield* MicroappServer
  const dir = yield* temporaryDirectory
  const file = path.join(dir, "out.ndjson")
  const ckpt = path.join(dir, "out.ckpt")
  const args = rowsArgs(server, ["--output", file, "--checkpoint", ckpt])
  const seen = (yield* server.log.requests).length
  const { release } = yield* holdFrom(server, 3)
  const started = yield* startCli(args)
  yield* eventually(Effect.sync(() => fs.existsSync(ckpt)), Boolean)
  yield* untilRequests(server, seen + 3)
  yield* started.raise("SIGINT")
  yield* release
  expect(yield* started.exit).toBe(130)
  return { server, dir, file, ckpt, args, saved: fs.readFileSync(ckpt, "utf8"), rows: fs.readFileSync(file, "utf8") }
})

/** What `rows` writes to FILE (NDJSON) in one run without a checkpoint. */
export const referenceRows = (dir: string) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const file = path.join(dir, "reference.ndjson")
    const run = yield* cli(rowsArgs(server, ["--output", file]))
    expect(run.code, run.stderr).toBe(0)
    return fs.readFileSync(file, "utf8")
  })

/** Runs `args`; expects exit 2 with one line naming `reason`, FILE as it was, and no request sent. */
export const refused = (args: ReadonlyArray<string>, file: string, reason: RegExp) =>
  Effect.gen(function*() {
    const before = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined
    const sent = yield* requestCount
    const run = yield* cli(args)
    expect(run.code, run.stderr).toBe(2)
    expect(run.stderr).toMatch(/^error: [^\n]+\n$/)
    expect(run.stderr).toMatch(reason)
    expect(yield* requestCount).toBe(sent)
    expect(fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined).toBe(before)
    return run
  })
