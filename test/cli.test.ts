/**
 * The `microapp` command line run in this process, against the emulator served in this process:
 * its output, exit codes and signals through the services of `test/cliSupport.ts`. What only a
 * real process shows is in `cli.process.test.ts`.
 */
// `effect`: the package's `it.effect`, on the test clock; layer() below replaces this module's `it.effect`
import { describe, effect, expect, it, layer } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { MicroappServer, projectsMicroAppID, type TableDefinition } from "../src/testing/index.js"
import {
  cli,
  cutShort,
  envOf,
  expectFailure,
  expectOneRowEarly,
  expectServing,
  flags,
  idsOf,
  pipedPageSize,
  pipedRows,
  pipedScan,
  root,
  slowScanToFile,
  startCli,
  temporaryDirectory
} from "./cliSupport.js"
import { advanceUntil, onTestClock, refusedBaseUrl } from "./support.js"
import { eventually } from "./support/eventually.js"

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

const ndjsonRows = (ndjson: string): Array<unknown> => ndjson.trimEnd().split("\n").map(json)

const packageVersion = (): string =>
  Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ version: Schema.String })))(
    fs.readFileSync(path.join(root, "package.json"), "utf8")
  ).version

/** The progress line's erasure, before each redraw and at the end. */
const clearLine = "\r\u001b[2K"

describe("microapp (in process)", () => {
  layer(MicroappServer.layer({ demoRows: 130 }), { excludeTestServices: true })("reading", (it) => {
    it.effect("rows: NDJSON by default, every row in natural order, whole lines, a summary on stderr", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const run = yield* cli(["rows", projectsMicroAppID, "--page-size", "50", ...flags(server)])
        expect(run.code, run.stderr).toBe(0)
        expect(run.stdout.endsWith("\n")).toBe(true)
        expect(ndjsonRows(run.stdout)).toEqual(yield* server.rows.table(projectsMicroAppID))
        expect(run.stderr).toMatch(
          /^done: 130 rows, \d+ pages, [\d.]+ s, 0 duplicates dropped, 0 realignments, up to \d+ requests? in flight, exhaustive\n$/
        )
      }))

    it.effect("rows --concurrency N: that many requests in flight, never more", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const run = yield* cli([
          "rows",
          projectsMicroAppID,
          "--page-size",
          "10",
          "--concurrency",
          "3",
          ...flags(server)
        ])
        expect(run.code, run.stderr).toBe(0)
        expect(ndjsonRows(run.stdout)).toEqual(yield* server.rows.table(projectsMicroAppID))
        expect(run.stderr).toMatch(/, up to 3 requests in flight, exhaustive\n$/)
      }))

    it.effect("rows --format json: one array; --quiet: nothing on stderr; credentials from the environment", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const run = yield* cli(["rows", projectsMicroAppID, "--format", "json", "--quiet"], { env: envOf(server) })
        expect(run.code, run.stderr).toBe(0)
        expect(run.stderr).toBe("")
        expect(json(run.stdout)).toEqual(yield* server.rows.table(projectsMicroAppID))
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
        const expected = (yield* server.rows.table(projectsMicroAppID))
          .filter((row) => row.Status === "Open" && row.Approved === true)
          .sort((a, b) => Number(b.Budget) - Number(a.Budget))
        expect(expected.length).toBeGreaterThan(7)
        expect(idsOf(run.stdout)).toEqual(expected.map((row) => row._id))
      }))

    it.effect("rows on a terminal: a progress line on stderr, redrawn and erased, unless the rows share the terminal", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const args = ["rows", projectsMicroAppID, "--page-size", "10", "--concurrency", "1", ...flags(server)]
        const run = yield* cli(args, { terminal: { stderr: true } })
        expect(run.code, run.stderr).toBe(0)
        const drawn = run.stderr.split(clearLine)
        expect(drawn[0]).toBe("")
        expect(drawn.length).toBeGreaterThanOrEqual(3)
        for (const line of drawn.slice(1, -1)) expect(line).toMatch(/^\d+ rows?, \d+ pages?, (\d+|-) rows\/s$/)
        expect(drawn.at(-1)).toMatch(/^done: 130 rows, \d+ pages, [^\r\u001b]+\n$/)
        const shared = yield* cli(args, { terminal: { stdout: true, stderr: true } })
        expect(shared.code, shared.stderr).toBe(0)
        expect(shared.stderr).toMatch(/^done: 130 rows, [^\r\u001b]+\n$/)
      }))

    it.effect("row: pretty JSON with a 2-space indent", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const [, target] = yield* server.rows.table(projectsMicroAppID)
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

    it.effect("exit 2: a base URL with a path the service does not serve, named with the URL it made; no NotFound", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const base = `${server.baseUrl}/api`
        const rows = yield* cli(["rows", projectsMicroAppID, ...flags(server).slice(2), "--base-url", base])
        expectFailure(rows, 2, [server.credentials.authToken])
        expect(rows.stderr).toBe(
          `error: the server has no endpoint at ${base}/api/microappdata: API endpoint does not exist; ` +
            `is the base URL ${base} right? The client adds /api/microappdata to it ` +
            "(RequestRejected, HTTP 404 POST /api/microappdata)\n"
        )
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

    it.effect("--version: the package's version; --help: every command; no command: exit 2", () =>
      Effect.gen(function*() {
        const version = yield* cli(["--version"])
        expect(version.code).toBe(0)
        expect(version.stdout.trim()).toBe(packageVersion())
        const help = yield* cli(["--help"])
        expect(help.code).toBe(0)
        expect(help.stderr).toBe("")
        for (const command of ["rows", "row", "update", "login", "serve", "demo", "describe"]) {
          expect(help.stdout).toMatch(new RegExp(`^  - ${command} `, "m"))
        }
        const none = yield* cli([])
        expectFailure(none, 2, [])
        expect(none.stderr).toBe(
          "error: a command is required: rows, changes, mirror, describe, row, update, login, serve or demo (see --help)\n"
        )
      }))
  })

  // on the test clock: the pauses are the second the server asked for, and no real time
  effect(
    "--log-level debug shows the retry and the pause a 429 caused, with their figures; without it, only the pause",
    () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const args = ["rows", projectsMicroAppID, "--page-size", "100", "--concurrency", "1", ...flags(server)]
        const pauseLine = /^warn: pausing every request of this client askedMillis=1000 cause=429 pauseMillis=1000$/m
        yield* server.faults.inject("http429", { path: "/api/microappdata", retryAfterSeconds: 1 })
        const debug = yield* onTestClock(cli([...args, "--log-level", "debug"]))
        expect(debug.code, debug.stderr).toBe(0)
        expect(debug.stderr).toMatch(pauseLine)
        expect(debug.stderr).toMatch(
          /^debug: retrying request attempt=2 cause="RateLimited: [^"]+" delayMillis=1000 endpoint=\/api\/microappdata$/m
        )
        expect(debug.stderr).not.toContain(server.credentials.authToken)
        yield* server.faults.inject("http429", { path: "/api/microappdata", retryAfterSeconds: 1 })
        const plain = yield* onTestClock(cli(args))
        expect(plain.code, plain.stderr).toBe(0)
        expect(plain.stderr).toMatch(pauseLine)
        expect(plain.stderr).not.toContain("debug:")
        // the pause was waited for (the test clock may have passed more: a timeout no longer waited for)
        const seconds = /^done: 130 rows, 3 pages, ([\d.]+) s, /m.exec(plain.stderr)?.[1]
        expect(Number(seconds)).toBeGreaterThanOrEqual(1)
      }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 130 })))
  )

  it.effect("--help: colour only to a terminal without NO_COLOR, and none of @effect/cli's type boilerplate", () =>
    Effect.gen(function*() {
      const escape = /\u001b\[/
      for (const command of [[], ["rows"], ["row"], ["update"], ["login"], ["serve"], ["demo"]]) {
        const piped = yield* cli([...command, "--help"])
        expect(piped.code).toBe(0)
        expect(piped.stdout).not.toMatch(escape)
        expect(piped.stdout).toContain("USAGE")
        expect(piped.stdout).not.toMatch(
          /A user-defined piece of text|An integer\.|A true or false value|One of the following|An existing file/
        )
        expect(piped.stdout).not.toMatch(/\n\n\n/)
        const terminal = yield* cli([...command, "--help"], { terminal: { stdout: true } })
        expect(terminal.stdout).toMatch(escape)
        expect(terminal.stdout.replace(/\u001b\[[0-9;]*m/g, "")).toBe(piped.stdout)
        const noColour = yield* cli([...command, "--help"], { terminal: { stdout: true }, env: { NO_COLOR: "1" } })
        expect(noColour.stdout).toBe(piped.stdout)
        const emptyNoColour = yield* cli([...command, "--help"], { terminal: { stdout: true }, env: { NO_COLOR: "" } })
        expect(emptyNoColour.stdout).toBe(terminal.stdout)
      }
    }))

  it.effect("a flag's bad value is named with its flag: --page-size abc, --sort=1.5", () =>
    Effect.gen(function*() {
      const credentials = ["--base-url", refusedBaseUrl, "--token", "t", "--user-id", "u"]
      const words = yield* cli(["rows", projectsMicroAppID, "--page-size", "abc", ...credentials])
      expect(words.code).toBe(2)
      expect(words.stderr).toBe("error: --page-size: 'abc' is not an integer\n")
      const fraction = yield* cli(["rows", projectsMicroAppID, "--sort=1.5", ...credentials])
      expect(fraction.code).toBe(2)
      expect(fraction.stderr).toBe("error: --sort: '1.5' is not an integer\n")
    }))

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
      expect(yield* server.log.requests).toEqual([])
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
      yield* server.rows.insertRow(notesID, { Text: tricky, Count: 0 })
      const table = yield* server.rows.table(notesID)
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
      const [first, second, third] = yield* server.rows.table(projectsMicroAppID)
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

      const table = yield* server.rows.table(projectsMicroAppID)
      expect(table.find((row) => row._id === a)).toMatchObject({ Status: "Done", Priority: 5 })
      expect(table.find((row) => row._id === b)?.Name).toBe("From a file")
      expect(table.find((row) => row._id === c)?.Name).toBe("From stdin, \"quoted\"")
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ demoRows: 5 }))))

  /** The two lines `login` prints; the token in group 1, the user id in group 2. */
  const exportLines =
    /^export MICROAPP_BASE_URL='[^']+'\nexport MICROAPP_AUTH_TOKEN='([^']+)'\nexport MICROAPP_USER_ID='([^']+)'\n$/

  it.live("login --password-stdin: shell-quoted export lines whose token works; a wrong password is exit 3", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const { email, password } = server.credentials
      const run = yield* cli(["login", "--email", email, "--password-stdin", "--base-url", server.baseUrl], {
        stdin: `${password}\n`
      })
      expect(run.code, run.stderr).toBe(0)
      expect(run.stderr).toBe("")
      const match = exportLines.exec(run.stdout)
      expect(match?.[2]).toBe(server.credentials.userId)
      const token = String(match?.[1])
      const owner = yield* server.sessions.authenticate(token, server.credentials.userId)
      expect(owner).toEqual(Option.some(server.credentials.userId))

      const wrong = yield* cli(["login", "--email", email, "--password-stdin", "--base-url", server.baseUrl], {
        stdin: "not-the-password-7f3a\n"
      })
      expectFailure(wrong, 3, ["not-the-password-7f3a", token, server.credentials.authToken])
      expect(wrong.stderr).toMatch(/\(Unauthorized, HTTP 401 POST \/api\/login\)\n$/)
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 3 }))))

  it.live("login: a hidden prompt on stderr when stdin is a terminal, never echoing the password; none without one", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const { email, password } = server.credentials
      const args = ["login", "--email", email, "--base-url", server.baseUrl]
      const run = yield* cli(args, { terminal: { stdin: true, stdout: true }, keys: [...password, "\r"] })
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout).toMatch(exportLines)
      expect(run.stderr).toContain("Password")
      expect(run.stderr).not.toContain(password)

      const noTerminal = yield* cli(args)
      expectFailure(noTerminal, 2, [])
      expect(noTerminal.stderr).toContain("--password-stdin")
      const quit = yield* cli(args, { terminal: { stdin: true }, keys: [] })
      expect(quit).toMatchObject({ code: 130, stdout: "" })
      expect(quit.stderr).toMatch(/error: interrupted by Ctrl-C\n$/)
      // only the prompted login reached the server
      expect((yield* server.log.requests).map((record) => record.path)).toEqual(["/api/login"])
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 3 }))))

  // on the test clock: the retries' backoff takes no real time
  effect(
    "exit 5: the server keeps failing; --output leaves neither the file nor a temporary one",
    () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        yield* server.configure({ faults: { seed: 1, rate: 1, kinds: ["http500"] } })
        const dir = yield* temporaryDirectory
        const token = server.credentials.authToken
        for (const format of ["csv", "json"]) {
          const run = yield* onTestClock(cli([
            "rows",
            projectsMicroAppID,
            "--format",
            format,
            "--output",
            path.join(dir, `out.${format}`),
            "--retries",
            "1",
            ...flags(server)
          ]))
          expectFailure(run, 5, [token])
          expect(run.stderr).toMatch(/\(ServerError, HTTP 500 POST \/api\/microappdata\)\n$/)
        }
        expect(fs.readdirSync(dir)).toEqual([])
        // one retry each
        expect(yield* server.log.requests).toHaveLength(4)
      }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ demoRows: 20 })))
  )

  it.live("exit 5 mid-scan: NDJSON on stdout ends on a complete line", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      // the first two pages are answered, then the server fails
      yield* server.log.onRequest((record) =>
        record.seq === 1 ? server.configure({ faults: { seed: 2, rate: 1, kinds: ["http503Html"] } }) : Effect.void
      )
      const run = yield* cli(["rows", projectsMicroAppID, "--page-size", "40", "--retries", "0", ...flags(server)])
      expectFailure(run, 5, [server.credentials.authToken])
      expect(run.stdout.endsWith("\n")).toBe(true)
      const ids = idsOf(run.stdout)
      expect(ids).toEqual((yield* server.rows.table(projectsMicroAppID)).slice(0, ids.length).map((row) => row._id))
      expect(ids.length).toBeGreaterThanOrEqual(40)
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 200 }))))

  // on the test clock: the scan is held at its next request, whatever the machine's speed
  effect("SIGINT during rows --output: exit 130, the temporary file removed", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const { args, dir } = yield* slowScanToFile
      const started = yield* startCli(args)
      yield* advanceUntil(Effect.sync(() => fs.readdirSync(dir).length > 0))
      expect(yield* started.raise("SIGINT")).toBe(true)
      expect(yield* onTestClock(started.exit)).toBe(130)
      expect(yield* started.stderr).toBe("error: interrupted by SIGINT\n")
      expect(fs.readdirSync(dir)).toEqual([])
      expect((yield* server.log.requests).length).toBeLessThan(100)
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ demoRows: 500 }))))

  const pipedRowsLayer = MicroappServer.layer({ demoRows: pipedRows })

  /** `rows --format FORMAT | head -1`, on the test clock: the emulator's latency takes no real time. */
  const rowsIntoHead = (format: string) =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      return yield* onTestClock(cli(yield* pipedScan(format), { env: envOf(server), reader: "head -1" }))
    })

  effect(
    "rows | head -1 (NDJSON): one whole row, the scan stopped early, exit 141 with only the summary",
    () => Effect.flatMap(rowsIntoHead("ndjson"), expectOneRowEarly).pipe(Effect.provide(pipedRowsLayer))
  )

  effect(
    "rows --format json | head -1: the opening bracket, the scan stopped early, exit 141",
    () =>
      Effect.gen(function*() {
        const run = yield* rowsIntoHead("json")
        const { requests, rows } = yield* cutShort(run)
        expect(run.stdout).toBe("[\n")
        expect(rows).toBeLessThan(pipedRows / 2)
        expect(requests).toBeLessThan(pipedRows / pipedPageSize / 2)
      }).pipe(Effect.provide(pipedRowsLayer))
  )

  effect(
    "rows --format csv | head -1: the header, written only after the whole table was read; exit 141",
    () =>
      Effect.gen(function*() {
        const run = yield* rowsIntoHead("csv")
        const { requests, rows, table } = yield* cutShort(run)
        const [header, ...rest] = parseCsv(run.stdout)
        expect(rest).toEqual([])
        expect(header?.[0]).toBe("_id")
        expect(header).toEqual(expect.arrayContaining(Object.keys(table[0] ?? {})))
        // CSV needs every row's keys for its header: no early stop to be had
        expect(rows).toBe(pipedRows)
        expect(requests).toBeGreaterThanOrEqual(pipedRows / pipedPageSize)
      }).pipe(Effect.provide(pipedRowsLayer))
  )

  it.live("row and login into a reader already gone: exit 141, nothing on stderr; --quiet rows: no summary", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const [first] = yield* server.rows.table(projectsMicroAppID)
      const row = yield* cli(["row", String(first?._id)], { env: envOf(server), reader: "gone" })
      expect(row).toEqual({ code: 141, stdout: "", stderr: "" })
      const { email, password } = server.credentials
      const login = yield* cli(["login", "--email", email, "--password-stdin", "--base-url", server.baseUrl], {
        stdin: `${password}\n`,
        reader: "gone"
      })
      expect(login).toEqual({ code: 141, stdout: "", stderr: "" })
      const rows = yield* cli(["rows", projectsMicroAppID, "--quiet"], { env: envOf(server), reader: "gone" })
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
      const started = yield* startCli(["serve", "--port", "0", "--rows", "30", "--default-limit", "10"])
      const url = yield* expectServing(yield* eventually(started.stdout, (text) => text.includes("Ctrl-C")))
      expect(yield* started.raise("SIGINT")).toBe(true)
      expect(yield* started.exit).toBe(0)
      // closed: a request finds nobody listening
      const refused = yield* Effect.promise(() =>
        fetch(`${url}/api/microappdata`, { method: "POST" }).then(() => false, () => true)
      )
      expect(refused).toBe(true)
    }).pipe(Effect.scoped))

  it.live("serve: a SIGTERM raised the moment its first output shows still ends it normally, exit 0", () =>
    Effect.gen(function*() {
      const started = yield* startCli(["serve", "--port", "0"])
      yield* eventually(started.stdout, (text) => text !== "")
      expect(yield* started.raise("SIGTERM")).toBe(true)
      expect(yield* started.exit).toBe(0)
      expect(yield* started.stderr).toBe("")
    }).pipe(Effect.scoped))
})
