/**
 * `microapp update --from` run in this process against the emulator served in this process, in a
 * file of its own since @effect/vitest's layer() (used by cli.test.ts) replaces it.effect, and with
 * it the test clock, for the rest of its module.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { MicroappServer } from "../src/testing/index.js"
import {
  cli,
  countUpdates,
  envOf,
  expectFailure,
  expectStoppedBySigint,
  expectUpdatesCutShort,
  flags,
  openStdin,
  openUpdateArgs,
  outcomesOf,
  pipedUpdate,
  pipedUpdates,
  startCli,
  temporaryDirectory,
  untilRequests,
  updatePath,
  updateRequests
} from "./cliSupport.js"
import { advanceUntil, onTestClock, taskID, tasksMicroAppID, tasksTable } from "./support.js"
import { eventually } from "./support/eventually.js"

describe("microapp update --from (in process)", () => {
  const appliedCounts = Effect.flatMap(MicroappServer, (server) => server.rows.appliedUpdates)

  // on the test clock: backoff and Retry-After pauses take no real time
  it.effect(
    "500 updates and 3 bad lines, 20% of updates failing after being applied, 10% of requests failing before: " +
      "503 lines, exit 2, each change applied once",
    () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        const file = path.join(dir, "updates.ndjson")
        const bad = new Map([
          [42, "{\"rowID\": \"x\", \"rowData\": "],
          [250, "{\"rowData\": {\"Title\": \"no row\"}}"],
          [
            503,
            `{"rowID": "${taskID(1)}", "rowData": ["Title"]}`
          ]
        ])
        const lines: Array<string> = []
        for (let i = 0; lines.length < 503;) {
          const line = lines.length + 1
          lines.push(
            bad.get(line) ??
              JSON.stringify({ rowID: taskID(i), rowData: { Title: `task ${i} done`, Count: 1000 + i++ } })
          )
        }
        fs.writeFileSync(file, `${lines.join("\n")}\n`)
        yield* server.configure({
          faults: [
            { seed: 21, rate: 0.2, kinds: ["http500AfterApply", "dropAfterApply"], paths: [updatePath] },
            {
              seed: 22,
              rate: 0.1,
              kinds: ["http500", "http503Html", "http429", "http408", "drop"],
              retryAfterSeconds: 0
            }
          ]
        })
        const run = yield* onTestClock(cli(["update", "--from", file, ...flags(server)]))
        const log = yield* server.log.requests
        yield* server.configure({ faults: undefined })

        expect(run.code, run.stderr).toBe(2)
        const outcomes = outcomesOf(run.stdout)
        expect(outcomes.map((outcome) => outcome.line)).toEqual(lines.map((_, i) => i + 1))
        const invalid = outcomes.filter((outcome) => outcome.outcome === "invalid")
        expect(invalid.map((outcome) => outcome.line)).toEqual([...bad.keys()])
        expect(invalid.every((outcome) => outcome.error !== undefined && outcome.error.startsWith("invalid "))).toBe(
          true
        )
        const updated = outcomes.filter((outcome) => outcome.outcome === "updated")
        expect(updated).toHaveLength(500)
        expect(updated.every((outcome) => outcome.error === undefined)).toBe(true)
        expect(updated.map((outcome) => outcome.rowID)).toEqual(Array.from({ length: 500 }, (_, i) => taskID(i)))

        const table = yield* server.rows.table(tasksMicroAppID)
        expect(table.map((row) => [row["Title"], row["Count"]])).toEqual(
          table.map((_, i) => [`task ${i} done`, 1000 + i])
        )
        const counts = yield* appliedCounts
        expect(table.map((row) => counts.get(String(row["_id"])))).toEqual(table.map(() => 1))
        // the faults did happen, and some updates were known applied only by reading them back
        expect(log.filter((record) => record.fault === "http500AfterApply" || record.fault === "dropAfterApply").length)
          .toBeGreaterThan(50)
        const summary =
          /^done: 503 lines, 500 updated \((\d+) after read-back\), 0 refused, 0 failed, 0 unknown, 3 invalid, \d+ retr(?:y|ies), \d+ throttled, [\d.]+ s\n/
            .exec(run.stderr)
        expect(Number(summary?.[1])).toBeGreaterThan(50)
        expect(run.stderr).toMatch(
          /\nerror: 3 of 503 lines not updated, 3 of them invalid \(see their outcome lines\)\n$/
        )
      }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(500)] }))),
    120_000
  )

  // on the test clock: the pause is the second the server asked for, and no real time
  it.effect("the summary counts the retries and the updates a server's Retry-After held back", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("http429", { path: "/api/updatemicroapprow", retryAfterSeconds: 1 })
      const updates = [0, 1, 2].map((i) => `${JSON.stringify({ rowID: taskID(i), rowData: { Count: i + 7 } })}\n`)
      const run = yield* onTestClock(cli(["update", "--from", "-", "--concurrency", "1"], {
        env: envOf(server),
        stdin: updates.join("")
      }))
      expect(run.code, run.stderr).toBe(0)
      expect(run.stderr).toMatch(
        /^warn: pausing every request of this client askedMillis=1000 cause=429 pauseMillis=1000\ndone: 3 lines, 3 updated \(0 after read-back\), 0 refused, 0 failed, 0 unknown, 0 invalid, 1 retry, 1 throttled, [\d.]+ s\n$/
      )
      // the pause was waited for (the test clock may have passed more: a timeout no longer waited for)
      expect(Number(/([\d.]+) s\n$/.exec(run.stderr)?.[1])).toBeGreaterThanOrEqual(1)
    }).pipe(Effect.provide(MicroappServer.layer({ tables: [tasksTable(3)] }))))

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
      expect(run.stderr).toMatch(
        /^done: 30 lines, 30 updated \(0 after read-back\), 0 refused, 0 failed, 0 unknown, 0 invalid, 0 retries, 0 throttled, [\d.]+ s\n/
      )
      expect((yield* server.rows.table(tasksMicroAppID)).map((row) => row["Count"])).toEqual(
        Array.from({ length: 30 }, (_, i) => i + 100)
      )
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
      const run = yield* cli(["update", "--from", "-", "--report", report, "--quiet", ...flags(server)], {
        stdin: input
      })
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
      // sent at once, they may reach the server in any order
      const sent = (yield* updateRequests(server)).map((record) => record.body)
      expect(sent).toContainEqual({ rowID: taskID(1), rowData: { Title: "b" }, ignoreActionRules: true })
      expect(sent).toContainEqual({ rowID: taskID(2), rowData: { Title: "c" }, embeddingRowID: taskID(0) })
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
        JSON.stringify({ rowID: "", rowData: { Title: "x" } }),
        `{"rowID": "${taskID(0)}", "rowData": {"__proto__": {"Title": "x"}}}`
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
        [7, "invalid", ""],
        [8, "invalid", taskID(0)]
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
          "invalid rowID: must be a non-empty string",
          "invalid rowData.__proto__: a key named \"__proto__\" cannot be kept: an assignment of it sets a prototype"
        ])
      expect(yield* server.log.requests).toEqual([])
      for (
        const [args, message] of [
          [["update", taskID(0), "--from", "-"], "--from takes its rows from FILE"],
          [
            ["update", "--report", "r.ndjson", taskID(0), "--data", "{}"],
            "--report, --concurrency and --quiet go with --from"
          ],
          [["update"], "update needs a rowID, or --from FILE"],
          [["update", taskID(0), "--data", "{\"__proto__\": {\"Title\": \"x\"}}"], "__proto__"]
        ] as const
      ) {
        const usage = yield* cli([...args, ...flags(server)])
        expectFailure(usage, 2, [server.credentials.authToken])
        expect(usage.stderr).toContain(message)
      }
      expect(yield* server.log.requests).toEqual([])
    }).pipe(Effect.provide(MicroappServer.layer({ tables: [tasksTable(3)] }))))

  it.live("numbers keep every digit: --data and --from refuse, by field, one no double holds as written, and send what JavaScript writes as it is", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const countOf = (i: number) =>
        Effect.map(server.rows.getRow(taskID(i)), (row) => row._tag === "Some" ? row.value["Count"] : undefined)
      const refused = [
        ["9007199254740993", "a double cannot hold as written: it would be sent as 9007199254740992"],
        ["1e-400", "a double cannot hold as written: it would be sent as 0"],
        ["0.1000000000000000055511151231257827", "a double cannot hold as written: it would be sent as 0.1"],
        ["12345678901234567890", "a double cannot hold as written: it would be sent as 12345678901234567000"],
        ["62007044045103448", "would be sent as 62007044045103450: a double holds it exactly"]
      ] as const
      for (const [number, reason] of refused) {
        const run = yield* cli(["update", taskID(0), "--data", `{"Title": "x", "Count": ${number}}`, ...flags(server)])
        expectFailure(run, 2, [server.credentials.authToken])
        expect(run.stderr).toContain(`--data Count: is ${number}, which ${reason}`)
      }
      const lines = refused.map(([number]) => `{"rowID": "${taskID(1)}", "rowData": {"Count": ${number}}}`)
      const run = yield* cli(["update", "--from", "-", "--quiet", ...flags(server)], { stdin: lines.join("\n") })
      expect(run.code, run.stderr).toBe(2)
      const outcomes = outcomesOf(run.stdout)
      expect(outcomes.map((outcome) => outcome.outcome)).toEqual(refused.map(() => "invalid"))
      refused.forEach(([number, reason], i) =>
        expect(outcomes[i]?.error).toContain(`invalid rowData.Count: is ${number}, which ${reason}`)
      )
      expect(yield* updateRequests(server)).toEqual([])
      expect([yield* countOf(0), yield* countOf(1)]).toEqual([0, 1])
      // what JavaScript writes for the double 62007044045103448, and 150 written another way
      const sent = yield* cli(["update", taskID(0), "--data", `{"Count": 62007044045103450}`, ...flags(server)])
      expect(sent.code, sent.stderr).toBe(0)
      const from = yield* cli(["update", "--from", "-", "--quiet", ...flags(server)], {
        stdin: `{"rowID": "${taskID(1)}", "rowData": {"Count": 1.50e2}}\n{"rowID": "${
          taskID(2)
        }", "rowData": {"Count": 5e-324}}`
      })
      expect(from.code, from.stderr).toBe(0)
      expect([yield* countOf(0), yield* countOf(1), yield* countOf(2)]).toEqual([62007044045103448, 150, 5e-324])
    }).pipe(Effect.provide(MicroappServer.layer({ tables: [tasksTable(3)] }))))

  it.live("input that cannot be read (a directory, a missing file): one error line, exit 2, no summary, nothing sent", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const dir = yield* temporaryDirectory
      const missing = path.join(dir, "missing.ndjson")
      const directory = yield* cli(["update", "--from", dir, ...flags(server)])
      expect(directory).toEqual({
        code: 2,
        stdout: "",
        stderr: `error: cannot read --from ${dir}: it is a directory\n`
      })
      const absent = yield* cli([
        "update",
        "--from",
        missing,
        "--report",
        path.join(dir, "report.ndjson"),
        ...flags(server)
      ])
      expectFailure(absent, 2, [server.credentials.authToken])
      expect(absent.stderr).toMatch(new RegExp(`^error: cannot read --from ${missing}: .*ENOENT`))
      // the report is not created for input that was never read
      expect(fs.readdirSync(dir)).toEqual([])
      expect(yield* server.log.requests).toEqual([])
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
        expect(yield* server.log.requests).toEqual([])
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
      const log = yield* server.log.requests
      // each row: read to check its labels, updated once, read back
      for (const i of [0, 1]) {
        expect(log.filter((record) => JSON.stringify(record.body).includes(taskID(i))).map((record) => record.path))
          .toEqual([rowPath, updatePath, rowPath])
      }
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

  // on the test clock: the updates under way are held by the emulator until the clock moves
  it.effect("SIGINT: no more updates start; those under way finish and are reported (--report too); exit 130", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ latency: Duration.millis(300) })
      const dir = yield* temporaryDirectory
      const report = path.join(dir, "report.ndjson")
      const started = yield* startOpen(server, 20, ["--report", report])
      yield* advanceUntil(Effect.map(updateRequests(server), (sent) => sent.length >= 3))
      expect(yield* started.raise("SIGINT")).toBe(true)
      expect(yield* onTestClock(started.exit)).toBe(130)
      yield* expectStoppedBySigint(report, { stdout: yield* started.stdout, stderr: yield* started.stderr }, 20)
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(20)] }))))

  // on the test clock: the emulator's latency takes no real time
  it.effect("update --from | head -1: no more updates start, those under way finish and are counted; exit 141", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const run = yield* onTestClock(cli(yield* pipedUpdate, { env: envOf(server), reader: "head -1" }))
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
      expect((yield* server.log.requests).every((record) => record.status === undefined)).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ tables: [tasksTable(5)] }))))
})
