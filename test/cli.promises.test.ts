/**
 * What the `microapp` command line promises its users and once broke: login's export lines are
 * all a later command needs; `update` refuses labels the row does not have; a line never sent
 * names no endpoint; the help marks optional flags optional and explains the framework's own;
 * connection flags go before the command too; and the bin is a small file.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { shellQuote } from "../src/cli/shell.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { cli, envOf, expectFailure, flags, idsOf, outcomesOf, root, updateRequests } from "./cliSupport.js"
import { bin, cliWords, shell } from "./processSupport.js"
import { refusedBaseUrl, taskID, tasksTable } from "./support.js"

const updatesSent = Effect.flatMap(MicroappServer, updateRequests)

describe("microapp keeps its promises", () => {
  it.live("eval \"$(microapp login ...)\" in bash, then rows: the export lines hold the base URL too", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const { email, password } = server.credentials
      const login = cliWords(["login", "--email", email, "--password-stdin", "--base-url", server.baseUrl])
      const run = yield* shell(
        `set -e; eval "$(printf '%s\\n' ${shellQuote(password)} | ${login})"; ` +
          `${cliWords(["rows", projectsMicroAppID, "--quiet"])}`,
        {}
      )
      expect(run.stderr).toBe("")
      expect(run.code).toBe(0)
      expect(idsOf(run.stdout)).toEqual((yield* server.rows.table(projectsMicroAppID)).map((row) => row._id))
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 7 }))))

  it.live("update ROW --data with a misspelt label: exit 2, the row's labels and the nearest one, nothing sent", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const [first] = yield* server.rows.table(projectsMicroAppID)
      const id = String(first?._id)
      const before = yield* server.rows.table(projectsMicroAppID)
      for (
        const [data, meant] of [
          ["{\"Statsu\":\"Open\"}", "Status"],
          ["{\"status\":\"Open\"}", "Status"],
          ["{\"Budjet\":3}", "Budget"]
        ] as const
      ) {
        const run = yield* cli(["update", id, "--data", data, ...flags(server)])
        expectFailure(run, 2, [server.credentials.authToken])
        expect(run.stderr).toContain(`(did you mean ${meant}?)`)
        expect(run.stderr).toContain("its labels are Name, Status, Budget")
        expect(run.stderr).toContain("--allow-unknown-labels")
      }
      const unrelated = yield* cli(["update", id, "--data", "{\"Zebra\":1,\"Name\":\"x\"}", ...flags(server)])
      expectFailure(unrelated, 2, [])
      expect(unrelated.stderr).toMatch(/has no label "Zebra";/)
      expect(yield* updatesSent).toEqual([])
      expect(yield* server.rows.table(projectsMicroAppID)).toEqual(before)

      const known = yield* cli(["update", id, "--data", "{\"Status\":\"Open\"}", ...flags(server)])
      expect(known).toEqual({ code: 0, stdout: "", stderr: "" })
      const allowed = yield* cli([
        "update",
        id,
        "--data",
        "{\"Statsu\":\"Open\"}",
        "--allow-unknown-labels",
        ...flags(server)
      ])
      expect(allowed).toEqual({ code: 0, stdout: "", stderr: "" })
      expect((yield* updatesSent).map((record) => record.body)).toEqual([
        { rowID: id, rowData: { Status: "Open" } },
        { rowID: id, rowData: { Statsu: "Open" } }
      ])
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 3 }))))

  it.live("update --from: a line naming an unknown label is invalid and not sent; a line never sent names no endpoint", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const input = [
        JSON.stringify({ rowID: taskID(0), rowData: { Title: "a" } }),
        JSON.stringify({ rowID: taskID(1), rowData: { Tilte: "b" } }),
        "not json",
        "[1]",
        JSON.stringify({ rowID: taskID(2) }),
        JSON.stringify({ rowID: taskID(2), rowData: { Count: 5 } })
      ].join("\n")
      const run = yield* cli(["update", "--from", "-", "--quiet", ...flags(server)], { stdin: input })
      expect(run.code, run.stderr).toBe(2)
      const outcomes = outcomesOf(run.stdout)
      expect(outcomes.map((outcome) => [outcome.line, outcome.outcome])).toEqual([
        [1, "updated"],
        [2, "invalid"],
        [3, "invalid"],
        [4, "invalid"],
        [5, "invalid"],
        [6, "updated"]
      ])
      const never = outcomes.filter((outcome) => outcome.outcome === "invalid").map((outcome) => String(outcome.error))
      expect(never[0]).toBe(
        `invalid rowData: row ${taskID(1)} has no label "Tilte" (did you mean Title?); its labels are Title, Count ` +
          "(case sensitive). The service would ignore it without a word; --allow-unknown-labels sends it anyway"
      )
      for (const error of never) {
        expect(error).not.toMatch(/POST|\/api\/|InvalidInput/)
      }
      expect((yield* updatesSent).map((record) => record.body)).toEqual([
        { rowID: taskID(0), rowData: { Title: "a" } },
        { rowID: taskID(2), rowData: { Count: 5 } }
      ])

      const allowed = yield* cli(["update", "--from", "-", "--quiet", "--allow-unknown-labels", ...flags(server)], {
        stdin: JSON.stringify({ rowID: taskID(1), rowData: { Tilte: "b" } })
      })
      expect(allowed.code, allowed.stderr).toBe(0)
      expect(outcomesOf(allowed.stdout)).toEqual([{ line: 1, rowID: taskID(1), outcome: "updated" }])
      expect(yield* updatesSent).toHaveLength(3)
    }).pipe(Effect.provide(MicroappServer.layer({ tables: [tasksTable(3)] }))))

  it.effect("help: optional flags look optional; the framework's own options are explained once, not listed", () =>
    Effect.gen(function*() {
      const rows = yield* cli(["rows", "--help"])
      expect(rows.code).toBe(0)
      const usage = rows.stdout.split("\n").find((line) => line.startsWith("$ "))
      expect(usage).toContain("[--filter FIELD_ID=VALUE...]")
      expect(usage).not.toMatch(/(?:^|[^[])--(?!filter)[a-z-]+ [A-Z]/)
      for (const command of [[], ["rows"], ["update"], ["login"]]) {
        const help = (yield* cli([...command, "--help"])).stdout
        expect(help).not.toContain("Start wizard mode")
        expect(help).not.toMatch(/^--(?:wizard|completions|log-level|version)\b/m)
        expect(help).toMatch(/--completions bash \| zsh \| fish \| sh \(prints a completion script/)
        expect(help).toMatch(/--wizard \(asks for each option/)
      }
      const completions = yield* cli(["--completions", "bash"])
      expect(completions.code).toBe(0)
      expect(completions.stdout).toContain("complete")
    }))

  it.live("connection flags before the command, after it, or mixed; after wins; each one missing is named", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const table = (yield* server.rows.table(projectsMicroAppID)).map((row) => row._id)
      const [baseUrl, url, token, tokenValue, userId, id] = flags(server)
      const before = yield* cli([...flags(server), "rows", projectsMicroAppID, "--quiet"])
      expect(before.stderr).toBe("")
      expect(idsOf(before.stdout)).toEqual(table)
      const mixed = yield* cli([
        String(baseUrl),
        refusedBaseUrl,
        "--retries",
        "0",
        "rows",
        projectsMicroAppID,
        "--quiet",
        String(baseUrl),
        String(url),
        String(token),
        String(tokenValue)
      ], { env: { MICROAPP_USER_ID: String(id), MICROAPP_BASE_URL: refusedBaseUrl } })
      expect(mixed.stderr).toBe("")
      expect(idsOf(mixed.stdout)).toEqual(table)
      // a flag before the command wins over the environment
      const overEnv = yield* cli([String(baseUrl), String(url), "row", String(table[0])], {
        env: { ...envOf(server), MICROAPP_BASE_URL: refusedBaseUrl }
      })
      expect(overEnv.code, overEnv.stderr).toBe(0)
      const missing = yield* cli([String(userId), String(id), "rows", projectsMicroAppID])
      expectFailure(missing, 2, [])
      expect(missing.stderr).toBe(
        "error: missing --base-url (or set MICROAPP_BASE_URL); missing --token (or set MICROAPP_AUTH_TOKEN)\n"
      )
    }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 4 }))))

  it("the bin is bundled minified: with its chunks, well under the 4.3 MB it was", () => {
    expect(fs.readFileSync(path.join(root, "package.json"), "utf8")).toMatch(
      /"build:bin": "[^"\n]*esbuild [^\n]* --minify /
    )
    const chunks = path.join(path.dirname(bin), "chunks")
    const sizes = fs.readdirSync(chunks).map((chunk) => fs.statSync(path.join(chunks, chunk)).size)
    expect(sizes.length).toBeGreaterThan(0)
    expect(sizes.reduce((total, size) => total + size, fs.statSync(bin).size)).toBeLessThan(2_500_000)
  })
})
