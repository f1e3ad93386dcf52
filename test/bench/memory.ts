/**
 * Figure 3, memory: a large table read by A (its exact set of emitted ids on), by B in a process
 * that has loaded the same modules, and by C (the whole table in one answer), each in a process of
 * its own whose heap is limited; peak RSS as the process saw it, or, when it died, the last /proc
 * sample taken while it ran. Most of A's and B's peak is the loaded code and V8's heap slack:
 * what counts is the difference.
 */
import {
  failed,
  type Finding,
  finish,
  formatInt,
  mb,
  options,
  type Report,
  startServer,
  startWorker,
  type Worker
} from "./common.js"
import { rowId } from "./table.js"
import type { WorkerRun, WorkerSpec } from "./worker.js"

interface Run {
  readonly label: string
  readonly flags: ReadonlyArray<string>
  readonly result: WorkerRun & { readonly crashed?: boolean }
  readonly rows: number
}

const scanOnce = async (
  label: string,
  spec: WorkerSpec,
  flags: ReadonlyArray<string>
): Promise<Run> => {
  let worker: Worker | undefined
  try {
    worker = await startWorker(spec, flags)
    return { label, flags, result: await worker.run(), rows: spec.rows }
  } finally {
    worker?.stop()
  }
}

const describe = (run: Run): { readonly outcome: string; readonly peak: string } => {
  const { result } = run
  if (result.ok) {
    return {
      outcome: `completed: ${formatInt(run.rows)} rows in ${(result.millis / 1000).toFixed(1)} s`,
      peak: mb(result.peakRss)
    }
  }
  return result.crashed === true
    ? { outcome: `crashed: ${result.error ?? "?"}`, peak: `>= ${mb(result.peakRss)}` }
    : { outcome: `failed: ${result.error ?? "?"}`, peak: mb(result.peakRss) }
}

const main = async (): Promise<Report> => {
  const opts = options()
  const rows = opts.number("rows", 1_000_000, 5_000)
  const pageSize = opts.number("page", 1_000, 100)
  const heap = opts.number("heap", 96, 96)
  const limit = `--max-old-space-size=${heap}`
  // a table small enough for C's single answer to fit in one string, for scale, when C cannot read the big one
  const fitRows = opts.number("fit-rows", 400_000, 0)
  const spec = (
    contender: WorkerSpec["contender"],
    baseUrl: string,
    count: number,
    concurrency: WorkerSpec["concurrency"] = 1
  ): WorkerSpec => ({ contender, baseUrl, rows: count, lastId: rowId(count - 1), pageSize, concurrency })

  const runs: Array<Run> = []
  const server = await startServer({ rows, delayMillis: 0 })
  let a: Run | undefined
  let loop: Run | undefined
  let auto: Run | undefined
  try {
    a = await scanOnce(`A \`rows()\`, page ${formatInt(pageSize)}, concurrency 1`, spec("A", server.baseUrl, rows), [
      limit
    ])
    loop = await scanOnce("B fetch loop, A's modules loaded", spec("B-loaded", server.baseUrl, rows), [limit])
    auto = await scanOnce(
      `A \`rows()\`, page ${formatInt(pageSize)}, default options`,
      spec("A", server.baseUrl, rows, "auto"),
      [limit]
    )
    runs.push(a, loop, auto)
    const limited = await scanOnce("C one request, huge limit", spec("C", server.baseUrl, rows), [limit])
    runs.push(limited)
    // C without the limit too, when the limit alone stopped it
    if (!limited.result.ok) runs.push(await scanOnce("C one request, huge limit", spec("C", server.baseUrl, rows), []))
  } finally {
    server.stop()
  }
  const extra: Array<Run> = []
  if (runs.at(-1)?.result.ok !== true && fitRows > 0) {
    const small = await startServer({ rows: fitRows, delayMillis: 0 })
    try {
      const label = `C on a ${formatInt(fitRows)}-row table instead`
      extra.push(await scanOnce(label, spec("C", small.baseUrl, fitRows), []))
    } finally {
      small.stop()
    }
  }

  const c = runs.slice(3)
  const details = [
    `### Memory: ${formatInt(rows)} rows, each scan in its own process`,
    "",
    "| Contender | Node flags | Outcome | Peak RSS |",
    "|---|---|---|---:|",
    ...[...runs, ...extra].map((run) => {
      const { outcome, peak } = describe(run)
      const flags = run.flags.length === 0 ? "(none)" : `\`${run.flags.join(" ")}\``
      return `| ${run.label} | ${flags} | ${outcome} | ${peak} |`
    })
  ].join("\n")
  const peakOf = (run: Run | undefined) => run?.result.ok === true ? run.result.peakRss : undefined
  const aPeak = peakOf(a)
  const loopPeak = peakOf(loop)
  const autoPeak = peakOf(auto)
  const findings: Array<Finding> = [
    {
      figure: `Memory, ${formatInt(rows)}-row scan by A (exact id set, concurrency 1) under \`${limit}\`: peak RSS`,
      measured: aPeak !== undefined ? `${mb(aPeak)}, completed` : a === undefined ? "not run" : describe(a).outcome,
      goal: "completes, < 200 MB",
      met: aPeak !== undefined && aPeak < 200e6
    },
    {
      figure: "Memory, same: A's peak less B's (a fetch loop, same modules loaded, same flag)",
      measured: aPeak !== undefined && loopPeak !== undefined
        ? `${mb(aPeak - loopPeak)} (B: ${mb(loopPeak)}; A with default options: ${
          autoPeak === undefined ? "failed" : mb(autoPeak)
        })`
        : "not measured",
      goal: "<= 30 MB",
      met: aPeak !== undefined && loopPeak !== undefined && aPeak - loopPeak <= 30e6
    },
    {
      figure: "Memory, same table read by C: peak RSS",
      measured: [
        ...c.map((run) => {
          const { outcome, peak } = describe(run)
          return `${run.flags.length === 0 ? "no flag" : "same flag"}: ${outcome.split(":")[0]}, ${peak}`
        }),
        ...extra.map((run) => {
          const { outcome, peak } = describe(run)
          return `${formatInt(run.rows)} rows, no flag: ${outcome.split(":")[0]}, ${peak}`
        })
      ].join("; "),
      goal: "",
      met: undefined
    }
  ]
  return { title: "memory", findings, details }
}

main().then(finish, failed)
