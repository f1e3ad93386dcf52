/**
 * `microapp serve` with its disturbances: latency, faults, throttling and churn, each checked
 * before the emulator starts. Run in this process (see cliSupport.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { projectsMicroAppID } from "../src/testing/index.js"
import { cli, startCli } from "./cliSupport.js"
import { eventually } from "./support/eventually.js"

/** POSTs a query of the Projects as the demo user: the status and the text of the answer. */
const queryProjects = (url: string, body: Record<string, unknown> = {}) =>
  Effect.promise(() =>
    fetch(`${url}/api/microappdata`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-auth-token": "demo-token-0001", "x-user-id": "demo-user" },
      body: JSON.stringify({ microAppID: projectsMicroAppID, ...body })
    }).then(async (response) => ({ status: response.status, text: await response.text() }))
  )

/** Starts `serve ARGS` on any port; its banner and base URL. */
const serving = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const started = yield* startCli(["serve", "--port", "0", "--rows", "30", ...args])
    const banner = yield* eventually(started.stdout, (text) => text.includes("Ctrl-C"))
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(banner)?.[1] ?? ""
    expect(url).not.toBe("")
    return { banner, url }
  })

describe("serve: the emulator's own insert and remove", () => {
  it.live("docs/emulator.md's curl lines insert a row and remove it, as written (the port aside)", () =>
    Effect.gen(function*() {
      const { url } = yield* serving([])
      const page = fs.readFileSync(path.resolve("docs/emulator.md"), "utf8")
      const curls = page.split("\n").filter((line) => line.startsWith("curl -s http://127.0.0.1:8787/"))
      expect(curls).toHaveLength(2)
      // asynchronously: the emulator answers from this process
      const sh = (line: string) =>
        Effect.async<string>((resume) => {
          execFile("sh", ["-c", line.replace("http://127.0.0.1:8787", url)], (error, stdout) =>
            resume(error === null ? Effect.succeed(stdout) : Effect.die(error)))
        })
      const inserted = JSON.parse(yield* sh(curls[0] ?? "")) as { status: string; body: { rowID: string } }
      expect(inserted.status).toBe("success")
      const rowID = inserted.body.rowID
      expect((yield* queryProjects(url)).text).toContain(`"_id":"${rowID}"`)
      expect(JSON.parse(yield* sh((curls[1] ?? "").replace("ROW_ID", rowID)))).toEqual({ status: "success" })
      expect((yield* queryProjects(url)).text).not.toContain(rowID)
    }).pipe(Effect.scoped))
})

describe("serve: disturbances", () => {
  it.effect("a bad value of each flag: exit 2, one line naming the flag, no server started", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
        [["--latency", "-5"], "error: --latency must be a whole number of milliseconds from 0 to 60000\n"],
        [["--latency", "1.5"], "error: --latency must be a whole number of milliseconds from 0 to 60000\n"],
        [["--latency", "60001"], "error: --latency must be a whole number of milliseconds from 0 to 60000\n"],
        [["--faults", "2"], "error: --faults must be RATE or RATE:KIND,... with RATE a number in (0, 1], got '2'\n"],
        [["--faults", "0"], "error: --faults must be RATE or RATE:KIND,... with RATE a number in (0, 1], got '0'\n"],
        [
          ["--faults", "often"],
          "error: --faults must be RATE or RATE:KIND,... with RATE a number in (0, 1], got 'often'\n"
        ],
        [
          ["--faults", "0.1:http503,boom"],
          "error: --faults: unknown fault kind 'boom' (one of http500, http500AfterApply, http503Html, http503, " +
          "http429, http408, drop, dropAfterApply, hang, malformedJson)\n"
        ],
        [["--throttle", "0"], "error: --throttle must be a whole number >= 1\n"],
        [["--churn", "0"], "error: --churn must be a number of changes a second above 0 and at most 10000\n"],
        [["--churn", "20000"], "error: --churn must be a number of changes a second above 0 and at most 10000\n"],
        [["--seed", "-1"], "error: --seed must be a whole number >= 0\n"],
        [["--rows", "2000000000"], "error: --rows must be a whole number from 0 to 1000000\n"],
        [["--rows", "99999999999"], "error: --rows must be a whole number from 0 to 1000000\n"],
        [["--rows", "-1"], "error: --rows must be a whole number from 0 to 1000000\n"]
      ]
      for (const [args, line] of cases) {
        const run = yield* cli(["serve", "--port", "0", ...args])
        expect([run.code, run.stderr, run.stdout], args.join(" ")).toEqual([2, line, ""])
      }
    }))

  it.effect("--help documents each flag", () =>
    Effect.gen(function*() {
      const help = yield* cli(["serve", "--help"])
      for (
        const flag of ["--latency MILLIS", "--faults RATE[:KIND,...]", "--throttle N", "--churn PER_SECOND", "--seed N"]
      ) {
        expect(help.stdout).toContain(flag)
      }
    }))

  it.live("--faults 1:http503: every request is answered 503; the banner says so", () =>
    Effect.gen(function*() {
      const { banner, url } = yield* serving(["--faults", "1:http503", "--seed", "4"])
      expect(banner).toContain("Disturbances: faults on 100% of requests (http503); seed 4.\n")
      for (let i = 0; i < 3; i++) expect((yield* queryProjects(url)).status).toBe(503)
    }).pipe(Effect.scoped))

  it.live("--throttle 1 --latency 1000: of two requests at once, one is answered 429", () =>
    Effect.gen(function*() {
      const { banner, url } = yield* serving(["--throttle", "1", "--latency", "1000"])
      expect(banner).toContain("Disturbances: latency 1000 ms; 429 above 1 requests in flight; seed 1.\n")
      const statuses = yield* Effect.all([queryProjects(url), queryProjects(url)], { concurrency: 2 })
      expect(statuses.map((answer) => answer.status).sort()).toEqual([200, 429])
    }).pipe(Effect.scoped))

  it.live("--churn 50: the Projects change while it serves", () =>
    Effect.gen(function*() {
      const { banner, url } = yield* serving(["--churn", "50"])
      expect(banner).toContain("Disturbances: 50 changes a second to Projects; seed 1.\n")
      const first = (yield* queryProjects(url)).text
      yield* eventually(queryProjects(url), (answer) => answer.status === 200 && answer.text !== first)
    }).pipe(Effect.scoped))
})
