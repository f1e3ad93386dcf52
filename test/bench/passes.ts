/**
 * What a pass costs against its floor, an export of the same table: `microapp rows --output FILE`
 * against `microapp mirror` (a first pass into a fresh SQLite file; an unchanged pass into SQLite
 * and into PostgreSQL) and `microapp changes` (an unchanged pass), each run a `microapp` process of
 * its own against the stand-in server, the contenders in turns, rotated each round. Reports each
 * run's wall time and its process's CPU time (user and system), medians, and their ratios to the
 * export's. `--profile=DIR` runs every contender under `--cpu-prof` into DIR; `--before=BIN` adds
 * an unchanged SQLite mirror pass by another build's `microapp` (its compiled `src/cli/bin.js`), to
 * measure a change side by side with the build before it.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { startPostgres } from "../postgres.js"
import {
  failed,
  finish,
  formatInt,
  formatRatio,
  mb,
  median,
  microapp,
  type MicroappRun,
  options,
  type Report,
  rotate,
  startServer
} from "./common.js"

const microAppID = "64d000000000000000000001"

interface Contender {
  readonly name: string
  readonly label: string
  /** The process's arguments before the connection flags; run once before the rounds when `prepare`. */
  readonly args: () => ReadonlyArray<string>
  readonly prepare: boolean
  /** The `microapp` program run: this build's unless given. */
  readonly bin?: string
}

const main = async (): Promise<Report> => {
  const opts = options()
  const rows = opts.number("rows", 100_000, 3_000)
  const rounds = opts.number("rounds", 3, 1)
  const withPostgres = opts.text("postgres") !== "no"
  const only = opts.text("contenders")?.split(",")
  const profile = opts.text("profile")
  const before = opts.text("before")
  const nodeFlags = profile === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${path.resolve(profile)}`]
  const server = await startServer({ rows, delayMillis: 0 })
  const postgres = withPostgres ? await startPostgres() : undefined
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "microapp-passes-"))
  let firsts = 0
  const all: ReadonlyArray<Contender> = [
    {
      name: "export",
      label: "`microapp rows --output FILE` (the floor)",
      args: () => ["rows", microAppID, "--output", path.join(dir, "export.ndjson")],
      prepare: false
    },
    {
      name: "mirror",
      label: "`microapp mirror`, unchanged pass, SQLite",
      args: () => ["mirror", microAppID, "--db", `file:${path.join(dir, "mirror.db")}`],
      prepare: true
    },
    ...(before === undefined ? [] : [{
      name: "mirror-before",
      label: "`microapp mirror`, unchanged pass, SQLite, the build before",
      args: () => ["mirror", microAppID, "--db", `file:${path.join(dir, "mirror-before.db")}`],
      prepare: true,
      bin: path.resolve(before)
    }]),
    ...(postgres === undefined ? [] : [{
      name: "mirror-pg",
      label: "`microapp mirror`, unchanged pass, PostgreSQL",
      args: () => ["mirror", microAppID, "--db", postgres.url],
      prepare: true
    }]),
    {
      name: "changes",
      label: "`microapp changes`, unchanged pass",
      args: () => {
        const events = path.join(dir, "events.ndjson")
        fs.rmSync(events, { force: true })
        return ["changes", microAppID, "--state", path.join(dir, "changes.state"), "--output", events]
      },
      prepare: true
    },
    {
      name: "first",
      label: "`microapp mirror`, first pass, SQLite (a fresh file)",
      args: () => ["mirror", microAppID, "--db", `file:${path.join(dir, `first-${firsts++}.db`)}`],
      prepare: false
    }
  ]
  const contenders = all.filter((contender) => contender.name === "export" || only?.includes(contender.name) !== false)
  const runs = new Map<string, Array<MicroappRun>>(contenders.map((contender) => [contender.name, []]))
  const loads: Array<number> = []
  try {
    for (const contender of contenders) {
      if (contender.prepare) await microapp(server.baseUrl, dir, contender.args(), { program: contender.bin })
    }
    for (let round = 0; round < rounds; round++) {
      loads.push(os.loadavg()[0] ?? NaN)
      for (const contender of rotate(contenders, round)) {
        const run = await microapp(server.baseUrl, dir, contender.args(), { nodeFlags, program: contender.bin })
        runs.get(contender.name)?.push(run)
        process.stderr.write(
          `passes: round ${round + 1} ${contender.name} ${Math.round(run.millis)} ms, CPU ${
            Math.round(run.cpuMillis)
          } ms\n`
        )
      }
    }
  } finally {
    server.stop()
    await postgres?.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  }
  const medians = new Map(contenders.map((contender) => {
    const of = runs.get(contender.name) ?? []
    return [contender.name, {
      millis: median(of.map((run) => run.millis)),
      cpuMillis: median(of.map((run) => run.cpuMillis)),
      written: median(of.map((run) => run.written))
    }]
  }))
  const none = { millis: NaN, cpuMillis: NaN, written: NaN }
  const floor = medians.get("export") ?? none
  const ratios = (name: string) => {
    const run = medians.get(name) ?? none
    return { time: run.millis / floor.millis, cpu: run.cpuMillis / floor.cpuMillis }
  }
  const load = `load average ${formatRatio(Math.min(...loads), 1)} to ${formatRatio(Math.max(...loads), 1)}`
  const details = [
    `### Passes against an export of the same ${formatInt(rows)} rows, median of ${rounds} rounds in turns (${load})`,
    "",
    "| Run | ms | CPU ms | time vs export | CPU vs export | written to storage |",
    "|---|---:|---:|---:|---:|---:|",
    ...contenders.map((contender) => {
      const run = medians.get(contender.name) ?? none
      const ratio = ratios(contender.name)
      return `| ${contender.label} | ${formatInt(run.millis)} | ${formatInt(run.cpuMillis)} | ${
        formatRatio(ratio.time)
      }x | ${formatRatio(ratio.cpu)}x | ${Number.isNaN(run.written) ? "–" : mb(run.written)} |`
    })
  ].join("\n")
  const finding = (name: string, figure: string, goal?: number): Report["findings"][number] | undefined => {
    if (!runs.has(name)) return undefined
    const ratio = ratios(name)
    return {
      figure,
      measured: `${formatRatio(ratio.time)}x the export's time, ${formatRatio(ratio.cpu)}x its CPU (${load})`,
      goal: goal === undefined ? "" : `at most ${goal}x`,
      met: goal === undefined ? undefined : ratio.time <= goal
    }
  }
  return {
    title: "passes",
    findings: [
      finding("mirror", `Unchanged mirror pass into SQLite against an export, ${formatInt(rows)} rows`, 1.5),
      finding("mirror-pg", `Unchanged mirror pass into PostgreSQL against an export, ${formatInt(rows)} rows`),
      finding("changes", `Unchanged change pass against an export, ${formatInt(rows)} rows`, 1.5),
      finding("first", `First mirror pass into SQLite against an export, ${formatInt(rows)} rows`)
    ].filter((finding) => finding !== undefined),
    details
  }
}

main().then(finish, failed)
