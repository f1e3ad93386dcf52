/**
 * Change passes: `microapp changes --state STATE --output FILE` over a table that did not change
 * since the last pass, against `microapp rows --output FILE` over the same table, in turns, each
 * run a `microapp` process of its own against the stand-in server. STATE commits O(page) a page
 * (an SQLite database), so the pass costs the export and a lookup of each page's ids.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { failed, finish, formatInt, formatRatio, median, options, type Report, rotate, startServer } from "./common.js"

const bin = fileURLToPath(new URL("../../src/cli/bin.js", import.meta.url))

type Contender = "rows" | "changes"

/** Milliseconds one `microapp` process takes, writing a fresh FILE. */
const runOnce = (baseUrl: string, dir: string, contender: Contender) =>
  new Promise<number>((resolve, reject) => {
    const file = path.join(dir, `${contender}.ndjson`)
    fs.rmSync(file, { force: true })
    const args = [
      bin,
      contender,
      "64d000000000000000000001",
      "--output",
      file,
      ...(contender === "changes" ? ["--state", path.join(dir, "state")] : []),
      "--quiet",
      "--base-url",
      baseUrl,
      "--token",
      "bench",
      "--user-id",
      "bench"
    ]
    const start = performance.now()
    execFile(process.execPath, args, { maxBuffer: 1 << 20 }, (error, _stdout, stderr) => {
      if (error !== null) return reject(new Error(`microapp ${contender} failed: ${stderr}`))
      resolve(performance.now() - start)
    })
  })

const main = async (): Promise<Report> => {
  const opts = options()
  const rows = opts.number("rows", 100_000, 3_000)
  const rounds = opts.number("rounds", 3, 1)
  const server = await startServer({ rows, delayMillis: 0 })
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "microapp-changes-"))
  const times = new Map<Contender, Array<number>>([["rows", []], ["changes", []]])
  let snapshot = 0
  let stateBytes = 0
  try {
    // the first pass, a snapshot, makes STATE: every pass after it finds nothing changed
    snapshot = await runOnce(server.baseUrl, dir, "changes")
    stateBytes = fs.statSync(path.join(dir, "state")).size
    for (let round = 0; round < rounds; round++) {
      for (const contender of rotate<Contender>(["rows", "changes"], round)) {
        times.get(contender)?.push(await runOnce(server.baseUrl, dir, contender))
      }
      if (fs.statSync(path.join(dir, "changes.ndjson")).size !== 0) throw new Error("an unchanged pass wrote events")
    }
  } finally {
    server.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  }
  const exported = median(times.get("rows") ?? [])
  const unchanged = median(times.get("changes") ?? [])
  const ratio = unchanged / exported
  const seconds = (millis: number) => `${(millis / 1000).toFixed(1)} s`
  const details = [
    `### Change passes over ${formatInt(rows)} rows, median of ${rounds} rounds in turns`,
    "",
    "| Run | Time |",
    "|---|---:|",
    `| \`microapp rows --output FILE\` | ${seconds(exported)} |`,
    `| \`microapp changes --state STATE --output FILE\`, nothing changed | ${seconds(unchanged)} |`,
    `| the first pass, a snapshot (once) | ${seconds(snapshot)} |`,
    "",
    `STATE after the snapshot: ${formatInt(stateBytes)} bytes (every row whole, and its fingerprint).`
  ].join("\n")
  return {
    title: "changes",
    findings: [{
      figure: `Unchanged change pass over ${formatInt(rows)} rows, against an export of them`,
      measured: `${formatRatio(ratio)}x (${seconds(unchanged)} against ${seconds(exported)})`,
      goal: "at most 1.5x",
      met: ratio <= 1.5
    }],
    details
  }
}

main().then(finish, failed)
