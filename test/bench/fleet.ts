/**
 * What one runner of the fleet spends per mirror: K `SqlMirror.run` passes at once in one process,
 * each of its own table of N rows into a SQLite file of its own, against the emulator in a process
 * of its own (1 ms a request); a first pass (every row inserted), then a second (every row
 * unchanged, a mirror's usual pass). Reports CPU µs per row (user and system time of the passes'
 * process) and the peak RSS each pass adds. Each K runs in a fresh process.
 *
 * Modes (`--mode`): none, the runner; `passes`, K passes (`--k`).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { LibsqlClient } from "@effect/sql-libsql"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { fork } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { MicroappClient } from "../../src/index.js"
import { SqlMirror } from "../../src/sql/index.js"
import { demoCredentials } from "../../src/testing/index.js"
import { failed, finish, formatInt, mb, options, peakRss, replyToParent, type Report, startServer } from "./common.js"

const self = fileURLToPath(import.meta.url)
const microAppID = "64d000000000000000000001"

/** What a passes process reports, per pass round. */
interface Round {
  readonly millis: number
  readonly cpuMicros: number
}

interface PassesRun {
  readonly rssBefore: number
  readonly peakRss: number
  readonly first: Round
  readonly second: Round
}

const passes = async (baseUrl: string, k: number, pageSize: number) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-microapp-fleet-bench-"))
  const client = MicroappClient.layer({
    baseUrl,
    authToken: Redacted.make(demoCredentials.authToken),
    userId: demoCredentials.userId
  }).pipe(Layer.provide(NodeHttpClient.layerUndici))
  const runtime = ManagedRuntime.make(client)
  const round = async (): Promise<Round> => {
    const cpu = process.cpuUsage()
    const start = performance.now()
    await runtime.runPromise(Effect.forEach(
      Array.from({ length: k }, (_, i) => i),
      (i) =>
        Effect.provide(
          SqlMirror.run({ microAppID, pageSize }),
          LibsqlClient.layer({ url: `file:${path.join(dir, `mirror-${i}.db`)}` })
        ),
      { concurrency: "unbounded", discard: true }
    ))
    const used = process.cpuUsage(cpu)
    return { millis: performance.now() - start, cpuMicros: used.user + used.system }
  }
  try {
    const rssBefore = process.memoryUsage.rss()
    const first = await round()
    const second = await round()
    const run: PassesRun = { rssBefore, peakRss: peakRss(), first, second }
    return run
  } finally {
    await runtime.dispose()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const inProcess = (baseUrl: string, k: number, pageSize: number): Promise<PassesRun> =>
  new Promise((resolve, reject) => {
    const child = fork(self, ["--mode=passes", `--k=${k}`, `--page-size=${pageSize}`, `--base-url=${baseUrl}`], {
      execArgv: [],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    child.once("message", (message) => resolve(message as PassesRun))
    child.once("exit", (code) => reject(new Error(`a passes process exited (${code})`)))
  })

const main = async (): Promise<Report> => {
  const opts = options()
  const rows = opts.number("rows", 20_000, 300)
  const pageSize = opts.number("page-size", 1000, 100)
  const ks = opts.smoke ? [1, 2] : [1, 4, 16]
  const server = await startServer({ microAppID, rows, latencyMillis: 1, throttle: undefined }, "./emulator.js")
  const runs: Array<readonly [number, PassesRun]> = []
  try {
    for (const k of ks) runs.push([k, await inProcess(server.baseUrl, k, pageSize)])
  } finally {
    server.stop()
  }
  const perRow = (round: Round, k: number) => round.cpuMicros / (k * rows)
  const rssPerPass = (run: PassesRun, k: number) => (run.peakRss - run.rssBefore) / k
  const widest = runs.at(-1)
  const details = [
    `### A runner's cost per mirror: K passes at once of ${formatInt(rows)} rows each (pages of ${pageSize}), ` +
    "into SQLite files, the emulator in another process",
    "",
    "| K | first pass: s | CPU µs per row inserted | second pass: s | CPU µs per row unchanged | peak RSS | RSS per pass |",
    "|---:|---:|---:|---:|---:|---:|---:|",
    ...runs.map(([k, run]) =>
      `| ${k} | ${(run.first.millis / 1000).toFixed(1)} | ${formatInt(perRow(run.first, k))} | ` +
      `${(run.second.millis / 1000).toFixed(1)} | ${formatInt(perRow(run.second, k))} | ${mb(run.peakRss)} | ` +
      `${mb(rssPerPass(run, k))} |`
    )
  ].join("\n")
  return {
    title: "fleet",
    findings: widest === undefined ? [] : [
      {
        figure: `Fleet, ${widest[0]} mirrors of ${formatInt(rows)} rows at once: CPU per row, first / later pass`,
        measured: `${formatInt(perRow(widest[1].first, widest[0]))} / ${
          formatInt(perRow(widest[1].second, widest[0]))
        } µs`,
        goal: "(measured)",
        met: undefined
      },
      {
        figure: `Fleet, same: peak RSS each pass adds`,
        measured: mb(rssPerPass(widest[1], widest[0])),
        goal: "(measured)",
        met: undefined
      }
    ],
    details
  }
}

const opts = options()
if (opts.text("mode") === "passes") {
  replyToParent(passes(opts.text("base-url") ?? "", opts.number("k", 1, 1), opts.number("page-size", 1000, 100)))
} else {
  main().then(finish, failed)
}
