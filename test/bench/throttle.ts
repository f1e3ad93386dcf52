/**
 * Throttling without `Retry-After`: `scans` scans at once on one client against a server that
 * answers every `refuseEvery`-th read with a 429 that has no `Retry-After`, beside the same scans
 * against a server that refuses nothing, at a fixed concurrency that suits it. The refusing server
 * is read both at `concurrency: "auto"` (the default) and at that fixed concurrency. Each run has a
 * fresh client; every scan must be exact and none may fail.
 */
import { failed, finish, formatInt, formatRatio, median, options, type Report, rotate, startServer } from "./common.js"
import { runScans, type ScansRun } from "./scans.js"

const microAppID = "64b7c0f1a2d3e4f5a6b7c8db"

type Mode = "refused, auto" | "refused, fixed" | "refuses nothing, fixed"

const modes: ReadonlyArray<Mode> = ["refused, auto", "refused, fixed", "refuses nothing, fixed"]

const main = async (): Promise<Report> => {
  const opts = options()
  const scans = opts.number("scans", 10, 3)
  const rows = opts.number("rows", 2_000, 300)
  const pageSize = opts.number("page-size", 100, 50)
  const delayMillis = opts.number("latency", 20, 5)
  const refuseEvery = opts.number("refuse-every", 3, 3)
  const rounds = opts.number("rounds", 3, 1)
  // windows in flight per scan on the server that refuses nothing: 40 requests at once, as many as pay there
  const fixed = opts.number("concurrency", 4, 2)
  // a server process exits with its parent, so one that started is not left behind if the other fails
  const [refusing, calm] = await Promise.all([
    startServer({ rows, delayMillis, refuseEvery }),
    startServer({ rows, delayMillis })
  ])

  const run = (mode: Mode): Promise<ScansRun> =>
    runScans({
      baseUrl: mode === "refuses nothing, fixed" ? calm.baseUrl : refusing.baseUrl,
      tuning: {},
      scan: { microAppID, pageSize, concurrency: mode === "refused, auto" ? "auto" : fixed },
      scans,
      rows,
      atOnce: true
    })

  const runs = new Map<Mode, Array<ScansRun>>(modes.map((mode) => [mode, []]))
  try {
    for (let round = 0; round < rounds; round++) {
      for (const mode of rotate(modes, round)) runs.get(mode)?.push(await run(mode))
    }
  } finally {
    refusing.stop()
    calm.stop()
  }

  const of = (mode: Mode) => runs.get(mode) ?? []
  const medianMillis = (mode: Mode) => median(of(mode).map((r) => r.millis))
  const baseline = medianMillis("refuses nothing, fixed")
  const ratio = medianMillis("refused, auto") / baseline
  const all = modes.flatMap(of)
  const failures = all.flatMap((r) => r.failures)
  const inexact = all.reduce((sum, r) => sum + (scans - r.exact), 0)
  const label = (mode: Mode) => mode.replace("fixed", `concurrency ${fixed}`)
  const details = [
    `### Throttling without Retry-After: ${scans} scans of ${formatInt(rows)} rows at once, pages of ` +
    `${formatInt(pageSize)}, 1 read in ${refuseEvery} refused (429, no Retry-After), against a server that ` +
    `refuses nothing, ${delayMillis} ms per request, ${rounds} rounds, a fresh client each run`,
    "",
    "| Run | ms (median) | / refuses nothing | exact scans, each round | failures | retries, each round |",
    "|---|---:|---:|---|---|---|",
    ...modes.map((mode) =>
      `| ${label(mode)} | ${formatInt(medianMillis(mode))} | ${formatRatio(medianMillis(mode) / baseline)}x | ` +
      `${of(mode).map((r) => r.exact).join(", ")} | ${of(mode).flatMap((r) => r.failures).join(", ") || "none"} | ` +
      `${of(mode).map((r) => r.retries).join(", ")} |`
    )
  ].join("\n")
  return {
    title: "throttle",
    findings: [
      {
        figure: `Throttle, ${scans} scans with 1 read in ${refuseEvery} refused (429, no Retry-After): ` +
          "scans not exact, failures",
        measured: `${inexact} not exact, ${failures.length} failed${
          failures.length === 0 ? "" : ` (${failures.join(", ")})`
        }`,
        goal: "0, 0",
        met: inexact === 0 && failures.length === 0
      },
      {
        figure: `Throttle: time refused (auto) / refuses nothing (concurrency ${fixed}), ${scans} scans`,
        measured: `${formatRatio(ratio)}x (refused at concurrency ${fixed}: ` +
          `${formatRatio(medianMillis("refused, fixed") / baseline)}x)`,
        goal: "<= 3.0x",
        met: ratio <= 3
      }
    ],
    details
  }
}

main().then(finish, failed)
