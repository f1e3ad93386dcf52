/**
 * `npm run bench`: runs each benchmark program in a process of its own and prints one markdown
 * report. `--smoke` runs every program at a tiny size, to check that none is broken: the figures
 * then mean nothing, and only a broken program makes the exit code non-zero. `--only=a,b` picks
 * programs by name.
 */
import { fork } from "node:child_process"
import * as Os from "node:os"
import { fileURLToPath } from "node:url"
import { type Finding, options, type Report } from "./common.js"

const programs = [
  "throughput",
  "layers",
  "latency",
  "memory",
  "decode",
  "overload",
  "throttle",
  "checkpoint",
  "export",
  "writes",
  "fleet",
  "views",
  "deletes",
  "passes"
] as const

/** Programs that run longer than the others at full size: five `microapp` processes a round. */
const longer: ReadonlyArray<string> = ["passes"]

interface Outcome {
  readonly name: string
  readonly report: Report | undefined
  readonly failure: string | undefined
  readonly seconds: number
}

const runProgram = (name: string, smoke: boolean, timeoutMillis: number): Promise<Outcome> =>
  new Promise((resolve) => {
    const start = performance.now()
    const path = fileURLToPath(new URL(`./${name}.js`, import.meta.url))
    const child = fork(path, smoke ? ["--smoke"] : [], { execArgv: [], stdio: ["ignore", "inherit", "inherit", "ipc"] })
    let report: Report | undefined
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMillis)
    child.on("message", (message) => {
      report = message as Report
    })
    child.on("exit", (code, signal) => {
      clearTimeout(timer)
      const seconds = (performance.now() - start) / 1000
      const failure = code === 0 && report !== undefined
        ? undefined
        : signal === "SIGKILL"
        ? `timed out after ${timeoutMillis / 1000} s`
        : `exited with ${signal ?? code}${report === undefined ? ", no report" : ""}`
      resolve({ name, report, failure, seconds })
    })
  })

const machine = (): string => {
  const cpus = Os.cpus()
  const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`
  return `${Os.availableParallelism()} CPUs (${cpus[0]?.model.trim() ?? "unknown"}), ${gib(Os.totalmem())} RAM, ` +
    `Node ${process.version}, ${Os.platform()} ${Os.arch()}, load average ${
      Os.loadavg().map((n) => n.toFixed(2)).join(" ")
    } at the start`
}

const mark = (finding: Finding, smoke: boolean): string =>
  smoke || finding.met === undefined ? "" : finding.met ? "yes" : "**no**"

const main = async () => {
  const opts = options()
  const only = opts.text("only")?.split(",")
  const chosen = programs.filter((name) => only === undefined || only.includes(name))
  const header = machine()
  const outcomes: Array<Outcome> = []
  for (const name of chosen) {
    process.stderr.write(`bench: ${name}...\n`)
    const outcome = await runProgram(name, opts.smoke, opts.smoke ? 60_000 : longer.includes(name) ? 900_000 : 600_000)
    process.stderr.write(`bench: ${name} ${outcome.failure ?? "done"} in ${outcome.seconds.toFixed(1)} s\n`)
    outcomes.push(outcome)
  }

  const findings = outcomes.flatMap((outcome) => outcome.report?.findings ?? [])
  const lines = [
    opts.smoke
      ? "## Benchmarks (smoke run: tiny sizes, the figures mean nothing)"
      : "## Benchmarks",
    "",
    `Machine: ${header}.`,
    "Each contender runs in a process of its own, taking turns against one server process (also its own);",
    "ratios are of medians measured side by side in this run. Machines are shared and noisy:",
    "compare ratios, not times.",
    "",
    "| Figure | Measured | Goal | Met |",
    "|---|---|---|---|",
    ...findings.map((f) => `| ${f.figure} | ${f.measured} | ${f.goal} | ${mark(f, opts.smoke)} |`),
    ...outcomes.filter((o) => o.failure !== undefined).map((o) => `| ${o.name} | **broken: ${o.failure}** | | |`),
    "",
    ...outcomes.flatMap((o) => o.report === undefined ? [] : [o.report.details, ""]),
    `Total ${outcomes.reduce((sum, o) => sum + o.seconds, 0).toFixed(0)} s.`
  ]
  process.stdout.write(`${lines.join("\n")}\n`)
  // the figures are not judged here: machines are shared and noisy, only a broken program fails
  process.exitCode = outcomes.some((o) => o.failure !== undefined) ? 1 : 0
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
