/**
 * The `microapp` command line run in this process, against the emulator served in this process:
 * its output, exit codes and signals through the services of `test/cliSupport.ts`. What only a
 * real process shows is in `cli.process.test.ts`.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Duration, Effect, Option, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { MicroappServer, projectsMicroAppID, type TableDefinition } from "../src/testing/index.js"
import {
  cli,
  countUpdates,
  cutShort,
  envOf,
  eventually,
  expectFailure,
  expectOneRowEarly,
  expectServing,
  expectStoppedBySigint,
  expectUpdatesCutShort,
  flags,
  idsOf,
  openStdin,
  openUpdateArgs,
  outcomesOf,
  parseCsv,
  pipedPageSize,
  pipedRows,
  pipedScan,
  pipedUpdate,
  pipedUpdates,
  root,
  slowScanToFile,
  startCli,
  temporaryDirectory,
  untilRequests,
  updatePath
} from "./cliSupport.js"
import { taskID, tasksMicroAppID, tasksTable } from "./support.js"

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

    it.effect("--version: the package's version; --help: every command; no command: exit 2", () =>
      Effect.gen(function*() {
        const version = yield* cli(["--version"])
        expect(version.code).toBe(0)
        expect(version.stdout.trim()).toBe(packageVersion())
        const help = yield* cli(["--help"])
        expect(help.code).toBe(0)
        expect(help.stderr).toBe("")
        for (const command of ["rows", "row", "update", "login", "serve", "demo"]) {
          expect(help.stdout).toMatch(new RegExp(`^  - ${command} `, "m"))
        }
        const none = yield* cli([])
        expectFailure(none, 2, [])
        expect(none.stderr).toBe("error: a command is required: rows, row, update, login, serve or demo (see --help)\n")
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

  /** The two lines `login` prints; the token in group 1, the user id in group 2. */
  const exportLines = /^export MICROAPP_AUTH_TOKEN='([^']+)'\nexport MICROAPP_USER_ID='([^']+)'\n$/

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
      const owner = yield* server.state.authenticate(token, server.credentials.userId)
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
      expect((yield* server.requests).map((record) => record.path)).toEqual(["/api/login"])
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
      const { args, dir, running } = yield* slowScanToFile
      const started = yield* startCli(args)
      yield* running
      expect(yield* started.raise("SIGINT")).toBe(true)
      expect(yield* started.exit).toBe(130)
      expect(yield* started.stderr).toBe("error: interrupted by SIGINT\n")
      expect(fs.readdirSync(dir)).toEqual([])
      expect((yield* server.requests).length).toBeLessThan(100)
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ demoRows: 500 }))))

  const pipedRowsLayer = MicroappServer.layer({ demoRows: pipedRows })

  /** `rows --format FORMAT | head -1`. */
  const rowsIntoHead = (format: string) =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      return yield* cli(yield* pipedScan(format), { env: envOf(server), reader: "head -1" })
    })

  it.live("rows | head -1 (NDJSON): one whole row, the scan stopped early, exit 141 with only the summary", () =>
    Effect.flatMap(rowsIntoHead("ndjson"), expectOneRowEarly).pipe(Effect.provide(pipedRowsLayer)))

  it.live("rows --format json | head -1: the opening bracket, the scan stopped early, exit 141", () =>
    Effect.gen(function*() {
      const run = yield* rowsIntoHead("json")
      const { requests, rows } = yield* cutShort(run)
      expect(run.stdout).toBe("[\n")
      expect(rows).toBeLessThan(pipedRows / 2)
      expect(requests).toBeLessThan(pipedRows / pipedPageSize / 2)
    }).pipe(Effect.provide(pipedRowsLayer)))

  it.live("rows --format csv | head -1: the header, written only after the whole table was read; exit 141", () =>
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
    }).pipe(Effect.provide(pipedRowsLayer)))

  it.live("row and login into a reader already gone: exit 141, nothing on stderr; --quiet rows: no summary", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const [first] = yield* server.table(projectsMicroAppID)
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
      const refused = yield* Effect.promise(() => fetch(`${url}/api/microappdata`, { method: "POST" }).then(() => false, () => true))
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

describe("microapp update --from (in process)", () => {
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

  it.live("rows, then a filter, into update --from -: a pipeline; exit 0 when every line is updated", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const rows = yield* cli(["rows", tasksMicroAppID, "--quiet"], { env: envOf(server) })
      expect(rows.code, rows.stderr).toBe(0)
      // in place of jq -c '{rowID: ._id, rowData: {Count: (.Count + 100)}}'
      const Task = Schema.parseJson(Schema.Struct({ _id: Schema.String, Count: Schema.Number }))
      const updates = rows.stdout.trimEnd().split("\n").map((line) => Schema.decodeUnknownSync(Task)(line)).map((row) =>
        `${JSON.stringify({ rowID: row._id, rowData: { Count: row.Count + 100 } })}\n`
      ).join("")
      const run = yield* cli(["update", "--from", "-", "--concurrency", "3"], { env: envOf(server), stdin: updates })
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

  it.live("input that cannot be read (a directory, a missing file): one error line, exit 2, no summary, nothing sent", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const dir = yield* temporaryDirectory
      const missing = path.join(dir, "missing.ndjson")
      const directory = yield* cli(["update", "--from", dir, ...flags(server)])
      expect(directory).toEqual({ code: 2, stdout: "", stderr: `error: cannot read --from ${dir}: it is a directory\n` })
      const absent = yield* cli(["update", "--from", missing, "--report", path.join(dir, "report.ndjson"), ...flags(server)])
      expectFailure(absent, 2, [server.credentials.authToken])
      expect(absent.stderr).toMatch(new RegExp(`^error: cannot read --from ${missing}: .*ENOENT`))
      // the report is not created for input that was never read
      expect(fs.readdirSync(dir)).toEqual([])
      expect(yield* server.requests).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(3)] }))))

  // root reads a file whatever its mode, so there is no unreadable file to give it
  it.live.skipIf(process.getuid?.() === 0)(
    "a file without read permission: one error line, exit 2, no summary, nothing sent (not run as root)",
    () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        const file = path.join(dir, "updates.ndjson")
        fs.writeFileSync(file, countUpdates(3, 7), { mode: 0o000 })
        const run = yield* cli(["update", "--from", file, ...flags(server)])
        expectFailure(run, 2, [server.credentials.authToken])
        expect(run.stderr).toMatch(new RegExp(`^error: cannot read --from ${file}: .*EACCES`))
        expect(yield* server.requests).toEqual([])
      }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(3)] })))
  )

  it.live("the input is read as it comes: outcome lines appear while stdin is still open", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const stdin = yield* openStdin
      const started = yield* startCli(["update", "--from", "-", ...flags(server)], { stdin: stdin.stream })
      yield* stdin.write(countUpdates(5, 7))
      yield* eventually(Effect.map(started.stdout, outcomesOf), (outcomes) => outcomes.length === 5)
      yield* stdin.write(countUpdates(1, 7, 5))
      yield* stdin.end
      expect(yield* started.exit).toBe(0)
      expect(outcomesOf(yield* started.stdout).map((outcome) => outcome.line)).toEqual([1, 2, 3, 4, 5, 6])
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(6)] }))))

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
  const startOpen = (server: MicroappServer.Service, lines: number, extra: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const stdin = yield* openStdin
      const started = yield* startCli(openUpdateArgs(server, extra), { stdin: stdin.stream })
      yield* stdin.write(countUpdates(lines, 1000))
      return started
    })

  it.live("SIGINT: no more updates start; those under way finish and are reported (--report too); exit 130", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ latency: Duration.millis(300) })
      const dir = yield* temporaryDirectory
      const report = path.join(dir, "report.ndjson")
      const started = yield* startOpen(server, 20, ["--report", report])
      yield* untilRequests(server, 3)
      expect(yield* started.raise("SIGINT")).toBe(true)
      expect(yield* started.exit).toBe(130)
      yield* expectStoppedBySigint(report, { stdout: yield* started.stdout, stderr: yield* started.stderr }, 20)
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(20)] }))))

  it.live("update --from | head -1: no more updates start, those under way finish and are counted; exit 141", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const run = yield* cli(yield* pipedUpdate, { env: envOf(server), reader: "head -1" })
      yield* expectUpdatesCutShort(run)
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(pipedUpdates)] }))))

  it.live("the first SIGINT is taken, and its listener removed: a second one finds none, so it would end the process", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ latency: Duration.seconds(20) })
      const started = yield* startOpen(server, 5, [])
      yield* untilRequests(server, 3)
      expect(yield* started.raise("SIGINT")).toBe(true)
      expect(yield* started.raise("SIGINT")).toBe(false)
      // the command still waits for the updates under way, which the server is still holding
      expect(yield* started.stdout).toBe("")
      expect((yield* server.requests).every((record) => record.status === undefined)).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(5)] }))))
})
