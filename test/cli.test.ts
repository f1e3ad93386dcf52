/**
 * The `microapp` command line, run as a child process (the built `dist/cli/bin.js`) against the
 * emulator served in this process.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Duration, Effect, Option, Schedule, Schema } from "effect"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { beforeAll } from "vitest"
import { shellQuote } from "../src/cli/shell.js"
import { MicroappServer, projectsMicroAppID, type TableDefinition } from "../src/testing/index.js"
import { taskID, tasksMicroAppID, tasksTable } from "./support.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const bin = path.join(root, "dist", "cli", "bin.js")

// test/globalSetup.ts builds dist/ once before the suites, so a clean clone needs no prior build
beforeAll(() => {
  if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: the global setup should have built it`)
})

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

interface RunOptions {
  readonly env?: Readonly<Record<string, string>>
  readonly stdin?: string
}

/** The environment of the child, without the developer's own MICROAPP_* variables. */
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("MICROAPP_")))

const start = (args: ReadonlyArray<string>, options: RunOptions = {}): ChildProcessWithoutNullStreams =>
  spawn(process.execPath, [bin, ...args], { env: { ...cleanEnv, ...options.env }, stdio: "pipe" })

/** Runs a child process to its end, `stdin` its whole input. */
const runToEnd = (spawnChild: () => ChildProcessWithoutNullStreams, stdin = "") =>
  Effect.async<Run>((resume) => {
    const child = spawnChild()
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text))
    child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text))
    child.on("error", (error) => resume(Effect.die(error)))
    child.on("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
    child.stdin.end(stdin)
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** Runs the CLI to its end. */
const cli = (args: ReadonlyArray<string>, options: RunOptions = {}) => runToEnd(() => start(args, options), options.stdin)

/** Runs a bash command line to its end. */
const shell = (command: string, env: Readonly<Record<string, string>>) =>
  runToEnd(() => spawn("bash", ["-c", command], { env: { ...cleanEnv, ...env }, stdio: "pipe" }))

/** The CLI as words of a shell command line. */
const cliWords = (args: ReadonlyArray<string>): string => [process.execPath, bin, ...args].map(shellQuote).join(" ")

/**
 * The CLI piped into `reader` through a real shell pipe: `stdout` is what the reader printed,
 * `stderr` the CLI's, and `code` the CLI's exit status, not the reader's.
 */
const cliInto = (reader: string, args: ReadonlyArray<string>, env: Readonly<Record<string, string>>) =>
  shell(`${cliWords(args)} | ${reader}; exit "\${PIPESTATUS[0]}"`, env)

/** Waits for a child to end. */
const exitOf = (child: ChildProcessWithoutNullStreams) =>
  Effect.async<number | null>((resume) => {
    if (child.exitCode !== null) return resume(Effect.succeed(child.exitCode))
    child.on("close", (code) => resume(Effect.succeed(code)))
  })

const flags = (server: MicroappServer.Service, token = server.credentials.authToken) => [
  "--base-url",
  server.baseUrl,
  "--token",
  token,
  "--user-id",
  server.credentials.userId
]

const envOf = (server: MicroappServer.Service) => ({
  MICROAPP_BASE_URL: server.baseUrl,
  MICROAPP_AUTH_TOKEN: server.credentials.authToken,
  MICROAPP_USER_ID: server.credentials.userId
})

/** A failure: the exit code, one `error:` line on stderr, and no token anywhere. */
const expectFailure = (run: Run, code: number, tokens: ReadonlyArray<string>) => {
  expect(run.code, run.stderr).toBe(code)
  expect(run.stderr).toMatch(/^error: [^\n]+\n$/)
  for (const token of tokens) {
    expect(run.stdout).not.toContain(token)
    expect(run.stderr).not.toContain(token)
  }
}

const temporaryDirectory = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "microapp-cli-test-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** A strict RFC 4180 parser: CRLF between records, quotes only around whole fields. */
const parseCsv = (text: string): Array<Array<string>> => {
  const records: Array<Array<string>> = []
  let record: Array<string> = []
  let field = ""
  let quoted = false
  let i = 0
  while (i < text.length) {
    const c = text[i]
    if (quoted) {
      if (c === "\"" && text[i + 1] === "\"") {
        field += "\""
        i += 2
      } else if (c === "\"") {
        quoted = false
        i++
        if (![",", "\r", undefined].includes(text[i])) throw new Error(`text after a closing quote at ${i}`)
      } else {
        field += c
        i++
      }
    } else if (c === "\"") {
      if (field !== "") throw new Error(`a quote inside an unquoted field at ${i}`)
      quoted = true
      i++
    } else if (c === ",") {
      record.push(field)
      field = ""
      i++
    } else if (c === "\r" && text[i + 1] === "\n") {
      record.push(field)
      records.push(record)
      record = []
      field = ""
      i += 2
    } else if (c === "\r" || c === "\n") {
      throw new Error(`a bare line break outside quotes at ${i}`)
    } else {
      field += c
      i++
    }
  }
  if (quoted) throw new Error("an unterminated quoted field")
  if (field !== "" || record.length > 0) throw new Error("the last record has no CRLF")
  return records
}

const cell = (value: unknown): string =>
  value === undefined || value === null ? "" : typeof value === "object" ? JSON.stringify(value) : String(value)

const json = (text: string): unknown => JSON.parse(text)

const decodeIdLine = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ _id: Schema.String })))

/** The `_id`s of NDJSON output, checking that every line is a whole row. */
const idsOf = (ndjson: string): Array<string> => ndjson.trimEnd().split("\n").map((line) => decodeIdLine(line)._id)

const ndjsonRows = (ndjson: string): Array<unknown> => ndjson.trimEnd().split("\n").map(json)

const packageVersion = (): string =>
  Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ version: Schema.String })))(
    fs.readFileSync(path.join(root, "package.json"), "utf8")
  ).version

const PlainAnswer = Schema.Struct({
  status: Schema.Literal("success"),
  body: Schema.Struct({ microAppRows: Schema.Array(Schema.Unknown) })
})

describe.concurrent("microapp (the built bin)", () => {
  layer(MicroappServer.layer({ demoRows: 130 }), { excludeTestServices: true })("reading", (it) => {
    it.effect("rows: NDJSON by default, every row in natural order, whole lines, a summary on stderr", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const run = yield* cli(["rows", projectsMicroAppID, "--page-size", "50", ...flags(server)])
        expect(run.code, run.stderr).toBe(0)
        expect(run.stdout.endsWith("\n")).toBe(true)
        expect(ndjsonRows(run.stdout)).toEqual(yield* server.table(projectsMicroAppID))
        expect(run.stderr).toMatch(
          /^done: 130 rows, \d+ pages, [\d.]+ s, 0 duplicates dropped, 0 realignments, up to \d+ requests? in flight\n$/
        )
      }))

    it.effect("rows --concurrency N: that many requests in flight, never more", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const run = yield* cli(["rows", projectsMicroAppID, "--page-size", "10", "--concurrency", "3", ...flags(server)])
        expect(run.code, run.stderr).toBe(0)
        expect(ndjsonRows(run.stdout)).toEqual(yield* server.table(projectsMicroAppID))
        expect(run.stderr).toMatch(/, up to 3 requests in flight\n$/)
      }))

    it.effect("rows --format json: one array; --quiet: nothing on stderr; credentials from the environment", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const run = yield* cli(["rows", projectsMicroAppID, "--format", "json", "--quiet"], { env: envOf(server) })
        expect(run.code, run.stderr).toBe(0)
        expect(run.stderr).toBe("")
        expect(json(run.stdout)).toEqual(yield* server.table(projectsMicroAppID))
      }))

    it.effect("rows --filter (repeated) --sort --order", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const run = yield* cli([
          "rows",
          projectsMicroAppID,
          "--filter",
          "f_status=Open",
          "--filter",
          "f_approved=true",
          "--sort",
          "2",
          "--order",
          "desc",
          "--page-size",
          "7",
          ...flags(server)
        ])
        expect(run.code, run.stderr).toBe(0)
        const expected = (yield* server.table(projectsMicroAppID))
          .filter((row) => row.Status === "Open" && row.Approved === true)
          .sort((a, b) => Number(b.Budget) - Number(a.Budget))
        expect(expected.length).toBeGreaterThan(7)
        expect(idsOf(run.stdout)).toEqual(expected.map((row) => row._id))
      }))

    it.effect("row: pretty JSON with a 2-space indent", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const [, target] = yield* server.table(projectsMicroAppID)
        const run = yield* cli(["row", String(target?._id), ...flags(server)])
        expect(run.code, run.stderr).toBe(0)
        expect(run.stdout).toBe(`${JSON.stringify(target, null, 2)}\n`)
      }))

    it.effect("exit 4: an unknown row", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const row = yield* cli(["row", "ffffffffffffffffffffffff", ...flags(server)])
        expectFailure(row, 4, [server.credentials.authToken])
        expect(row.stderr).toMatch(/\(NotFound, HTTP 404 POST \/api\/microappdata\/row\)\n$/)
      }))

    it.effect("exit 3: a wrong token, never printed", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const wrong = "wrong-token-4c1d9e"
        const tokens = [wrong, server.credentials.authToken]
        const rows = yield* cli(["rows", projectsMicroAppID, "--format", "csv", ...flags(server, wrong)])
        expectFailure(rows, 3, tokens)
        expect(rows.stdout).toBe("")
        expect(rows.stderr).toMatch(/\(Unauthorized, HTTP 401 POST \/api\/microappdata\)\n$/)
      }))

    it.effect("exit 1: an --output the system refuses", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        const output = path.join(dir, "missing", "out.csv")
        const run = yield* cli(["rows", projectsMicroAppID, "--output", output, ...flags(server)])
        expectFailure(run, 1, [server.credentials.authToken])
        expect(fs.readdirSync(dir)).toEqual([])
      }).pipe(Effect.scoped))

    it.effect("--version: the package's version", () =>
      Effect.gen(function*() {
        const version = yield* cli(["--version"])
        expect(version.code).toBe(0)
        expect(version.stdout.trim()).toBe(packageVersion())
      }))
  })

it.live("exit 2: a bad flag, a missing credential, invalid input, bad --data; no request sent", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const token = server.credentials.authToken
      const bogus = yield* cli(["rows", projectsMicroAppID, "--bogus", ...flags(server)])
      expectFailure(bogus, 2, [token])
      expect(bogus.stderr).toContain("--bogus")
      const missing = yield* cli(["rows", projectsMicroAppID])
      expectFailure(missing, 2, [])
      expect(missing.stderr).toContain("MICROAPP_AUTH_TOKEN")
      const invalid = yield* cli(["rows", " ", ...flags(server)])
      expectFailure(invalid, 2, [token])
      expect(invalid.stderr).toMatch(/\(InvalidInput, POST \/api\/microappdata\)\n$/)
      const notAnObject = yield* cli(["update", "x", "--data", "[1, 2]", ...flags(server)])
      expectFailure(notAnObject, 2, [token])
      expect(notAnObject.stderr).toContain("--data must be a JSON object")
      expect(yield* server.requests).toEqual([])
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 3 }))))

  const notesID = "65a000000000000000000001"
  const notes: TableDefinition = {
    microAppID: notesID,
    name: "Notes",
    fields: [
      { label: "Text", fieldID: "n_text" },
      { label: "Count", fieldID: "n_count", kind: "integer" },
      { label: "Tags", fieldID: "n_tags", kind: "list" },
      { label: "Ref", fieldID: "n_ref", kind: "crossApp" }
    ],
    sortFields: ["Text"],
    rows: [
      { _id: "65b000000000000000000001", Text: "plain" },
      {
        _id: "65b000000000000000000002",
        Count: 3,
        Text: "second",
        Tags: ["a", "b,c"],
        Ref: { crossAppRowID: "65c000000000000000000001", value: { label: "Name", value: "Ada \"A\", first" } }
      }
    ]
  }

  it.live("rows --format csv: a header of every key, RFC 4180 quoting, nested values as JSON", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const tricky = "comma, \"quote\"\nnew line and\r\nCRLF"
      yield* server.insertRow(notesID, { Text: tricky, Count: 0 })
      const table = yield* server.table(notesID)
      const header = ["_id", ...new Set(table.flatMap((row) => Object.keys(row)).filter((key) => key !== "_id"))]
      expect(header.indexOf("Tags")).toBeGreaterThan(header.indexOf("Text"))
      const expected = [header, ...table.map((row) => header.map((key) => cell(row[key])))]

      const stdout = yield* cli(["rows", notesID, "--format", "csv", "--page-size", "2", ...flags(server)])
      expect(stdout.code, stdout.stderr).toBe(0)
      expect(stdout.stdout).toContain("\"comma, \"\"quote\"\"\nnew line and\r\nCRLF\"")
      expect(parseCsv(stdout.stdout)).toEqual(expected)

      const dir = yield* temporaryDirectory
      const file = path.join(dir, "notes.csv")
      const output = yield* cli(["rows", notesID, "--format", "csv", "--output", file, ...flags(server)])
      expect(output.code, output.stderr).toBe(0)
      expect(fs.readdirSync(dir)).toEqual(["notes.csv"])
      expect(fs.readFileSync(file, "utf8")).toBe(stdout.stdout)
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [notes] }))))

  it.live("update: --data, --data-file FILE, --data-file - (stdin); prints nothing", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const [first, second, third] = yield* server.table(projectsMicroAppID)
      const ids = [first, second, third].map((row) => String(row?._id))
      const [a, b, c] = ids

      const data = "{\"Status\":\"Done\",\"Priority\":5}"
      const inline = yield* cli(["update", String(a), "--data", data, ...flags(server)])
      expect(inline).toEqual({ code: 0, stdout: "", stderr: "" })

      const dir = yield* temporaryDirectory
      const file = path.join(dir, "data.json")
      fs.writeFileSync(file, "{\"Name\":\"From a file\"}")
      const fromFile = yield* cli(["update", String(b), "--data-file", file, ...flags(server)])
      expect(fromFile).toEqual({ code: 0, stdout: "", stderr: "" })

      const fromStdin = yield* cli(["update", String(c), "--data-file", "-", ...flags(server)], {
        stdin: "{\"Name\": \"From stdin, \\\"quoted\\\"\"}\n"
      })
      expect(fromStdin).toEqual({ code: 0, stdout: "", stderr: "" })

      const table = yield* server.table(projectsMicroAppID)
      expect(table.find((row) => row._id === a)).toMatchObject({ Status: "Done", Priority: 5 })
      expect(table.find((row) => row._id === b)?.Name).toBe("From a file")
      expect(table.find((row) => row._id === c)?.Name).toBe("From stdin, \"quoted\"")
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ demoRows: 5 }))))

  it.live("login --password-stdin: shell-quoted export lines whose token works; a wrong password is exit 3", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const { email, password } = server.credentials
      const run = yield* cli(["login", "--email", email, "--password-stdin", "--base-url", server.baseUrl], {
        stdin: `${password}\n`
      })
      expect(run.code, run.stderr).toBe(0)
      expect(run.stderr).toBe("")
      const match = /^export MICROAPP_AUTH_TOKEN='([^']+)'\nexport MICROAPP_USER_ID='([^']+)'\n$/.exec(run.stdout)
      expect(match?.[2]).toBe(server.credentials.userId)
      const token = String(match?.[1])
      const owner = yield* server.state.authenticate(token, server.credentials.userId)
      expect(owner).toEqual(Option.some(server.credentials.userId))

      const wrong = yield* cli(["login", "--email", email, "--password-stdin", "--base-url", server.baseUrl], {
        stdin: "not-the-password-7f3a\n"
      })
      expectFailure(wrong, 3, ["not-the-password-7f3a", token, server.credentials.authToken])
      expect(wrong.stderr).toMatch(/\(Unauthorized, HTTP 401 POST \/api\/login\)\n$/)
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 3 }))))

  it.live("exit 5: the server keeps failing; --output leaves neither the file nor a temporary one", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ faults: { seed: 1, rate: 1, kinds: ["http500"] } })
      const dir = yield* temporaryDirectory
      const token = server.credentials.authToken
      for (const format of ["csv", "json"]) {
        const run = yield* cli([
          "rows",
          projectsMicroAppID,
          "--format",
          format,
          "--output",
          path.join(dir, `out.${format}`),
          "--retries",
          "1",
          ...flags(server)
        ])
        expectFailure(run, 5, [token])
        expect(run.stderr).toMatch(/\(ServerError, HTTP 500 POST \/api\/microappdata\)\n$/)
      }
      expect(fs.readdirSync(dir)).toEqual([])
      // one retry each
      expect(yield* server.requests).toHaveLength(4)
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ demoRows: 20 }))))

  it.live("exit 5 mid-scan: NDJSON on stdout ends on a complete line", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      // the first two pages are answered, then the server fails
      yield* server.onRequest((record) =>
        record.seq === 1 ? server.configure({ faults: { seed: 2, rate: 1, kinds: ["http503Html"] } }) : Effect.void
      )
      const run = yield* cli(["rows", projectsMicroAppID, "--page-size", "40", "--retries", "0", ...flags(server)])
      expectFailure(run, 5, [server.credentials.authToken])
      expect(run.stdout.endsWith("\n")).toBe(true)
      const ids = idsOf(run.stdout)
      expect(ids).toEqual((yield* server.table(projectsMicroAppID)).slice(0, ids.length).map((row) => row._id))
      expect(ids.length).toBeGreaterThanOrEqual(40)
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 200 }))))

  it.live("SIGINT during rows --output: exit 130, the temporary file removed", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ latency: Duration.millis(100) })
      const dir = yield* temporaryDirectory
      const output = path.join(dir, "out.ndjson")
      // one request at a time: 100 pages, 10 s, so that the signal finds the scan running
      const child = start([
        "rows",
        projectsMicroAppID,
        "--page-size",
        "5",
        "--concurrency",
        "1",
        "--output",
        output,
        ...flags(server)
      ])
      let stderr = ""
      child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text))
      child.stdin.end()
      // the temporary file exists once the scan runs
      yield* Effect.sync(() => fs.readdirSync(dir)).pipe(
        Effect.filterOrFail((files) => files.length > 0),
        Effect.retry(Schedule.spaced(Duration.millis(50)).pipe(Schedule.upTo(Duration.seconds(10))))
      )
      child.kill("SIGINT")
      expect(yield* exitOf(child)).toBe(130)
      expect(stderr).toBe("error: interrupted by SIGINT\n")
      expect(fs.readdirSync(dir)).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ demoRows: 500 }))))

  /** The closing line of a scan cut short by its reader; its row count in group 1. */
  const stoppedScan =
    /^stopped \(standard output closed by its reader\): (\d+) rows, \d+ pages?, [\d.]+ s, 0 duplicates dropped, 0 realignments, up to \d+ requests? in flight\n$/

  // 30 pages of about 100 kB each: more than a pipe holds, and a scan long enough to cut short
  const pipedRows = 3000
  const pipedPageSize = 100
  const pipedRowsLayer = MicroappServer.layer({ demoRows: pipedRows })

  /** `rows --format FORMAT | head -1`, each request held 20 ms so that the whole scan takes a while. */
  const rowsIntoHead = (format: string) =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ latency: Duration.millis(20) })
      const args = ["rows", projectsMicroAppID, "--format", format, "--page-size", String(pipedPageSize), "--concurrency", "2"]
      const run = yield* cliInto("head -1", args, envOf(server))
      expect(run.code, run.stderr).toBe(141)
      expect(run.stderr).toMatch(stoppedScan)
      const rows = Number(stoppedScan.exec(run.stderr)?.[1])
      return { run, rows, requests: (yield* server.requests).length, table: yield* server.table(projectsMicroAppID) }
    })

  it.live("rows | head -1 (NDJSON): one whole row, the scan stopped early, exit 141 with only the summary", () =>
    Effect.gen(function*() {
      const { requests, rows, run, table } = yield* rowsIntoHead("ndjson")
      expect(idsOf(run.stdout)).toEqual([table[0]?._id])
      expect(rows).toBeGreaterThanOrEqual(pipedPageSize)
      expect(rows).toBeLessThan(pipedRows / 2)
      expect(requests).toBeLessThan(pipedRows / pipedPageSize / 2)
    }).pipe(Effect.provide(pipedRowsLayer)))

  it.live("rows --format json | head -1: the opening bracket, the scan stopped early, exit 141", () =>
    Effect.gen(function*() {
      const { requests, rows, run } = yield* rowsIntoHead("json")
      expect(run.stdout).toBe("[\n")
      expect(rows).toBeLessThan(pipedRows / 2)
      expect(requests).toBeLessThan(pipedRows / pipedPageSize / 2)
    }).pipe(Effect.provide(pipedRowsLayer)))

  it.live("rows --format csv | head -1: the header, written only after the whole table was read; exit 141", () =>
    Effect.gen(function*() {
      const { requests, rows, run, table } = yield* rowsIntoHead("csv")
      const [header, ...rest] = parseCsv(run.stdout)
      expect(rest).toEqual([])
      expect(header?.[0]).toBe("_id")
      expect(header).toEqual(expect.arrayContaining(Object.keys(table[0] ?? {})))
      // CSV needs every row's keys for its header: no early stop to be had
      expect(rows).toBe(pipedRows)
      expect(requests).toBeGreaterThanOrEqual(pipedRows / pipedPageSize)
    }).pipe(Effect.provide(pipedRowsLayer)))

  it.live("row and login into a reader already gone: exit 141, nothing on stderr; --quiet rows: no summary", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const [first] = yield* server.table(projectsMicroAppID)
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
      const rows = yield* cliInto("true", ["rows", projectsMicroAppID, "--quiet"], envOf(server))
      expect(rows).toEqual({ code: 141, stdout: "", stderr: "" })
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 30 }))))

  it.live("demo: runs to the end, showing the capped plain request against the full stream", () =>
    Effect.gen(function*() {
      const run = yield* cli(["demo"])
      expect(run.code, run.stderr).toBe(0)
      expect(run.stderr).toBe("")
      expect(run.stdout).toContain("\"success\", 1000 rows")
      expect(run.stdout).toContain("-> 2500 rows, 2500 distinct ids")
      expect(run.stdout).toMatch(/Status "[^"]+" \(was "[^"]+"\)/)
    }))

  it.live("serve: prints its URL first, answers requests, exits 0 on SIGINT", () =>
    Effect.gen(function*() {
      const child = start(["serve", "--port", "0", "--rows", "30", "--default-limit", "10"])
      child.stdin.end()
      const firstLines = yield* Effect.async<string>((resume) => {
        let text = ""
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
          text += chunk
          if (text.includes("Ctrl-C")) resume(Effect.succeed(text))
        })
      })
      yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
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
      expect(Schema.decodeUnknownSync(Schema.parseJson(PlainAnswer))(body).body.microAppRows).toHaveLength(10)
      child.kill("SIGINT")
      expect(yield* exitOf(child)).toBe(0)
    }).pipe(Effect.scoped))

  it.live("serve: a SIGTERM sent the moment its first output shows still ends it normally, exit 0", () =>
    Effect.gen(function*() {
      const child = start(["serve", "--port", "0"])
      child.stdin.end()
      yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
      child.stdout.once("data", () => child.kill("SIGTERM"))
      expect(yield* exitOf(child)).toBe(0)
    }).pipe(Effect.scoped))
})

describe.concurrent("microapp update --from (the built bin)", () => {
  const updatePath = "/api/updatemicroapprow"

  const Outcome = Schema.Struct({
    line: Schema.Number,
    rowID: Schema.NullOr(Schema.String),
    outcome: Schema.Literal("updated", "refused", "failed", "unknown", "invalid"),
    error: Schema.optional(Schema.String)
  })
  const decodeOutcome = Schema.decodeUnknownSync(Schema.parseJson(Outcome), { onExcessProperty: "error" })
  const outcomesOf = (ndjson: string) => ndjson === "" ? [] : ndjson.trimEnd().split("\n").map((line) => decodeOutcome(line))

  const appliedCounts = Effect.flatMap(MicroappServer, (server) => server.appliedUpdates)

  it.live(
    "500 updates and 3 bad lines, 20% of updates failing after being applied, 10% of requests failing before: " +
      "503 lines, exit 2, each change applied once",
    () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        const file = path.join(dir, "updates.ndjson")
        const bad = new Map([[42, "{\"rowID\": \"x\", \"rowData\": "], [250, "{\"rowData\": {\"Title\": \"no row\"}}"], [
          503,
          `{"rowID": "${taskID(1)}", "rowData": ["Title"]}`
        ]])
        const lines: Array<string> = []
        for (let i = 0; lines.length < 503;) {
          const line = lines.length + 1
          lines.push(bad.get(line) ?? JSON.stringify({ rowID: taskID(i), rowData: { Title: `task ${i} done`, Count: 1000 + i++ } }))
        }
        fs.writeFileSync(file, `${lines.join("\n")}\n`)
        yield* server.configure({
          faults: [
            { seed: 21, rate: 0.2, kinds: ["http500AfterApply", "dropAfterApply"], paths: [updatePath] },
            { seed: 22, rate: 0.1, kinds: ["http500", "http503Html", "http429", "http408", "drop"], retryAfterSeconds: 0 }
          ]
        })
        const run = yield* cli(["update", "--from", file, ...flags(server)])
        const log = yield* server.requests
        yield* server.configure({ faults: undefined })

        expect(run.code, run.stderr).toBe(2)
        const outcomes = outcomesOf(run.stdout)
        expect(outcomes.map((outcome) => outcome.line)).toEqual(lines.map((_, i) => i + 1))
        const invalid = outcomes.filter((outcome) => outcome.outcome === "invalid")
        expect(invalid.map((outcome) => outcome.line)).toEqual([...bad.keys()])
        expect(invalid.every((outcome) => outcome.error !== undefined && outcome.error.startsWith("invalid "))).toBe(true)
        const updated = outcomes.filter((outcome) => outcome.outcome === "updated")
        expect(updated).toHaveLength(500)
        expect(updated.every((outcome) => outcome.error === undefined)).toBe(true)
        expect(updated.map((outcome) => outcome.rowID)).toEqual(Array.from({ length: 500 }, (_, i) => taskID(i)))

        const table = yield* server.table(tasksMicroAppID)
        expect(table.map((row) => [row["Title"], row["Count"]])).toEqual(table.map((_, i) => [`task ${i} done`, 1000 + i]))
        const counts = yield* appliedCounts
        expect(table.map((row) => counts.get(String(row["_id"])))).toEqual(table.map(() => 1))
        // the faults did happen, and some updates were known applied only by reading them back
        expect(log.filter((record) => record.fault === "http500AfterApply" || record.fault === "dropAfterApply").length)
          .toBeGreaterThan(50)
        const summary = /^done: 503 lines, 500 updated \((\d+) after read-back\), 0 refused, 0 failed, 0 unknown, 3 invalid, [\d.]+ s\n/
          .exec(run.stderr)
        expect(Number(summary?.[1])).toBeGreaterThan(50)
        expect(run.stderr).toMatch(/\nerror: 3 of 503 lines not updated, 3 of them invalid \(see their outcome lines\)\n$/)
      }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(500)] }))),
    120_000
  )

  it.live("rows | a filter | update --from -: a pipeline; exit 0 when every line is updated", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      // in place of jq -c '{rowID: ._id, rowData: {Count: (.Count + 100)}}'
      const filter = "require('readline').createInterface({ input: process.stdin }).on('line', (line) => { " +
        "const row = JSON.parse(line); console.log(JSON.stringify({ rowID: row._id, rowData: { Count: row.Count + 100 } })) })"
      const pipeline = `${cliWords(["rows", tasksMicroAppID, "--quiet"])} | ` +
        `${shellQuote(process.execPath)} -e ${shellQuote(filter)} | ` +
        cliWords(["update", "--from", "-", "--concurrency", "3"])
      const run = yield* shell(pipeline, envOf(server))
      expect(run.code, run.stderr).toBe(0)
      expect(outcomesOf(run.stdout)).toEqual(
        Array.from({ length: 30 }, (_, i) => ({ line: i + 1, rowID: taskID(i), outcome: "updated" }))
      )
      expect(run.stderr).toMatch(/^done: 30 lines, 30 updated \(0 after read-back\), 0 refused, 0 failed, 0 unknown, 0 invalid/)
      expect((yield* server.table(tasksMicroAppID)).map((row) => row["Count"])).toEqual(Array.from({ length: 30 }, (_, i) => i + 100))
    }).pipe(Effect.provide(MicroappServer.layer({ tables: [tasksTable(30)] }))))

  it.live("blank lines are skipped and counted; --report FILE takes the lines instead of stdout; a refusal is exit 5", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const dir = yield* temporaryDirectory
      const report = path.join(dir, "report.ndjson")
      const input = [
        JSON.stringify({ rowID: taskID(0), rowData: { Title: "a" } }),
        "",
        "   ",
        JSON.stringify({ rowID: taskID(1), rowData: { Title: "b" }, ignoreActionRules: true, userID: null }),
        JSON.stringify({ rowID: taskID(2), rowData: { Title: "c" }, embeddingRowID: taskID(0) })
      ].join("\r\n")
      const run = yield* cli(["update", "--from", "-", "--report", report, "--quiet", ...flags(server)], { stdin: input })
      expect(run.code, run.stderr).toBe(5)
      expect(run.stdout).toBe("")
      expect(run.stderr).toBe("error: 1 of 3 lines not updated, 0 of them invalid (see their outcome lines)\n")
      const outcomes = outcomesOf(fs.readFileSync(report, "utf8"))
      expect(outcomes.map(({ line, outcome, rowID }) => ({ line, outcome, rowID }))).toEqual([
        { line: 1, outcome: "updated", rowID: taskID(0) },
        { line: 4, outcome: "refused", rowID: taskID(1) },
        { line: 5, outcome: "updated", rowID: taskID(2) }
      ])
      expect(outcomes[1]?.error).toMatch(/Row is locked \(RequestRejected, HTTP 200 POST \/api\/updatemicroapprow\)$/)
      const [, second, third] = (yield* server.requests).filter((record) => record.path === updatePath)
      expect(second?.body).toEqual({ rowID: taskID(1), rowData: { Title: "b" }, ignoreActionRules: true })
      expect(third?.body).toEqual({ rowID: taskID(2), rowData: { Title: "c" }, embeddingRowID: taskID(0) })
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(3, [1])] }))))

  it.live("bad lines are invalid with a reason, and nothing is sent for them; the single-row form keeps its flags", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const input = [
        "not json",
        "[1, 2]",
        JSON.stringify({ rowID: taskID(0) }),
        JSON.stringify({ rowID: taskID(0), rowData: "Title" }),
        JSON.stringify({ rowID: taskID(0), rowData: { Title: "x" }, ignoreActionRule: true }),
        JSON.stringify({ rowID: taskID(0), rowData: {} }),
        JSON.stringify({ rowID: "", rowData: { Title: "x" } })
      ].join("\n")
      const run = yield* cli(["update", "--from", "-", ...flags(server)], { stdin: input })
      expect(run.code, run.stderr).toBe(2)
      const outcomes = outcomesOf(run.stdout)
      expect(outcomes.map((outcome) => [outcome.line, outcome.outcome, outcome.rowID])).toEqual([
        [1, "invalid", null],
        [2, "invalid", null],
        [3, "invalid", taskID(0)],
        [4, "invalid", taskID(0)],
        [5, "invalid", taskID(0)],
        [6, "invalid", taskID(0)],
        [7, "invalid", ""]
      ])
      expect(outcomes.map((outcome) => outcome.error?.replace(/ \(InvalidInput, POST \/api\/updatemicroapprow\)$/, "")))
        .toEqual([
          "invalid line: not valid JSON",
          "invalid line: must be a JSON object {\"rowID\": ..., \"rowData\": {...}}",
          "invalid rowData: is missing",
          "invalid rowData: must be an object of field labels and values",
          "invalid ignoreActionRule: is unexpected, expected: " +
          "\"rowID\" | \"rowData\" | \"embeddingRowID\" | \"userID\" | \"ignoreActionRules\"",
          "invalid rowData: must name at least one field",
          "invalid rowID: must be a non-empty string"
        ])
      expect(yield* server.requests).toEqual([])
      for (
        const [args, message] of [
          [["update", taskID(0), "--from", "-"], "--from takes its rows from FILE"],
          [["update", "--report", "r.ndjson", taskID(0), "--data", "{}"], "--report, --concurrency and --quiet go with --from"],
          [["update"], "update needs a rowID, or --from FILE"]
        ] as const
      ) {
        const usage = yield* cli([...args, ...flags(server)])
        expectFailure(usage, 2, [server.credentials.authToken])
        expect(usage.stderr).toContain(message)
      }
      expect(yield* server.requests).toEqual([])
    }).pipe(Effect.provide(MicroappServer.layer({ tables: [tasksTable(3)] }))))

  it.live("the input is read as it comes: outcome lines appear while stdin is still open", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const child = start(["update", "--from", "-", ...flags(server)])
      let stdout = ""
      child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text))
      child.stdin.write(
        Array.from({ length: 5 }, (_, i) => `${JSON.stringify({ rowID: taskID(i), rowData: { Count: 7 } })}\n`).join("")
      )
      yield* Effect.sync(() => outcomesOf(stdout).length).pipe(
        Effect.filterOrFail((count) => count === 5),
        Effect.retry(Schedule.spaced(Duration.millis(20)).pipe(Schedule.upTo(Duration.seconds(10))))
      )
      child.stdin.end(`${JSON.stringify({ rowID: taskID(5), rowData: { Count: 7 } })}\n`)
      expect(yield* exitOf(child)).toBe(0)
      expect(outcomesOf(stdout).map((outcome) => outcome.line)).toEqual([1, 2, 3, 4, 5, 6])
    }).pipe(Effect.provide(MicroappServer.layer({ tables: [tasksTable(6)] }))))

  it.live("exit 5: --retries 0 sends each update once; a failure not applied, as its read-back shows, is failed", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ faults: { seed: 1, rate: 1, kinds: ["http500"], paths: [updatePath] } })
      const input = [0, 1].map((i) => JSON.stringify({ rowID: taskID(i), rowData: { Count: 9 } })).join("\n")
      const run = yield* cli(["update", "--from", "-", "--retries", "0", "--concurrency", "1", ...flags(server)], {
        stdin: input
      })
      expect(run.code, run.stderr).toBe(5)
      expect(outcomesOf(run.stdout)).toEqual([0, 1].map((i) => ({
        line: i + 1,
        rowID: taskID(i),
        outcome: "failed",
        error: "the server failed: Internal server error (ServerError, HTTP 500 POST /api/updatemicroapprow)"
      })))
      const rowPath = "/api/microappdata/row"
      expect((yield* server.requests).map((record) => record.path)).toEqual([updatePath, rowPath, updatePath, rowPath])
      expect(run.stderr).toMatch(/\nerror: 2 of 2 lines not updated, 0 of them invalid \(see their outcome lines\)\n$/)
    }).pipe(Effect.provide(MicroappServer.layer({ tables: [tasksTable(2)] }))))

  /** `update --from -` with its stdin left open, as a pipe that may bring more lines. */
  const startOpen = (server: MicroappServer.Service, lines: number, extra: ReadonlyArray<string>) => {
    const child = start(["update", "--from", "-", "--concurrency", "3", ...extra, ...flags(server)])
    const output = { stdout: "", stderr: "" }
    child.stdout.setEncoding("utf8").on("data", (text: string) => (output.stdout += text))
    child.stderr.setEncoding("utf8").on("data", (text: string) => (output.stderr += text))
    child.stdin.write(
      Array.from({ length: lines }, (_, i) => `${JSON.stringify({ rowID: taskID(i), rowData: { Count: 1000 } })}\n`)
        .join("")
    )
    return { child, output }
  }

  const untilRequests = (n: number) =>
    Effect.flatMap(MicroappServer, (server) => server.requests).pipe(
      Effect.filterOrFail((log) => log.length >= n),
      Effect.retry(Schedule.spaced(Duration.millis(20)).pipe(Schedule.upTo(Duration.seconds(10))))
    )

  it.live("SIGINT: no more updates start; those under way finish and are reported (--report too); exit 130", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ latency: Duration.millis(300) })
      const dir = yield* temporaryDirectory
      const report = path.join(dir, "report.ndjson")
      const { child, output } = startOpen(server, 20, ["--report", report])
      yield* untilRequests(3)
      child.kill("SIGINT")
      expect(yield* exitOf(child)).toBe(130)
      const outcomes = outcomesOf(fs.readFileSync(report, "utf8"))
      // every update sent has its line, and only those were applied
      const counts = yield* appliedCounts
      expect(outcomes.length).toBeGreaterThanOrEqual(3)
      expect(outcomes.length).toBeLessThan(20)
      expect(outcomes).toEqual(outcomes.map((_, i) => ({ line: i + 1, rowID: taskID(i), outcome: "updated" })))
      expect([...counts.keys()].sort()).toEqual(outcomes.map((outcome) => outcome.rowID))
      expect(output.stdout).toBe("")
      expect(output.stderr).toMatch(/^stopped \(interrupted by SIGINT\): \d+ lines, [^\n]+\nerror: interrupted by SIGINT\n$/)
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(20)] }))))

  it.live("update --from | head -1: no more updates start, those under way finish and are counted; exit 141", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ latency: Duration.millis(20) })
      const dir = yield* temporaryDirectory
      const file = path.join(dir, "updates.ndjson")
      const lines = 200
      fs.writeFileSync(
        file,
        Array.from({ length: lines }, (_, i) => `${JSON.stringify({ rowID: taskID(i), rowData: { Count: 1000 } })}\n`)
          .join("")
      )
      const run = yield* cliInto("head -1", ["update", "--from", file, "--concurrency", "2"], envOf(server))
      expect(run.code, run.stderr).toBe(141)
      expect(outcomesOf(run.stdout)).toEqual([{ line: 1, rowID: taskID(0), outcome: "updated" }])
      const summary =
        /^stopped \(standard output closed by its reader\): (\d+) lines, (\d+) updated \(0 after read-back\), 0 refused, 0 failed, 0 unknown, 0 invalid, [\d.]+ s\n$/
          .exec(run.stderr)
      const counted = Number(summary?.[1])
      expect(Number(summary?.[2])).toBe(counted)
      expect(counted).toBeLessThan(lines / 2)
      // every update sent was applied and counted: none was cut off on its way
      const counts = yield* appliedCounts
      expect([...counts.keys()].sort()).toEqual(Array.from({ length: counted }, (_, i) => taskID(i)))
      expect((yield* server.requests).filter((record) => record.path === updatePath)).toHaveLength(counted)
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(200)] }))))

  it.live("a second SIGINT ends it at once, without waiting for the updates under way", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ latency: Duration.seconds(20) })
      const { child } = startOpen(server, 5, [])
      yield* untilRequests(3)
      child.kill("SIGINT")
      // the first signal is taken (the command waits for the updates under way); the second is not
      yield* Effect.sleep(Duration.millis(300))
      child.kill("SIGINT")
      const ended = yield* Effect.async<NodeJS.Signals | null>((resume) => {
        child.on("close", (_, signal) => resume(Effect.succeed(signal)))
      })
      expect(ended).toBe("SIGINT")
      // the server was still holding them
      expect((yield* server.requests).every((record) => record.status === undefined)).toBe(true)
    }).pipe(Effect.provide(MicroappServer.layer({ tables: [tasksTable(5)] }))))
})
