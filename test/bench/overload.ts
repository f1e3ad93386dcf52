/**
 * Overload: `scans` scans at once on one client, against the emulator refusing more than
 * `maxInFlight` requests in flight (429, Retry-After: 1 s); the same scans one after another; and
 * at once again with `rateLimit.maxInFlight` set by hand to what the server allows. Each run has a
 * fresh client, as a service starting up has. Every scan must be exact and none may fail.
 */
import { failed, finish, formatInt, formatRatio, median, options, type Report, rotate, startServer } from "./common.js"
import { runScans, type ScansRun } from "./scans.js"

const microAppID = "64b7c0f1a2d3e4f5a6b7c8db"

type Mode = "at once" | "one after another" | "at once, maxInFlight by hand"

const main = async (): Promise<Report> => {
  const opts = options()
  const scans = opts.number("scans", 20, 4)
  const rows = opts.number("rows", 3_000, 300)
  const latencyMillis = opts.number("latency", 20, 5)
  const maxInFlight = opts.number("max-in-flight", 5, 2)
  const rounds = opts.number("rounds", 3, 1)
  // windows in flight per scan: "auto" (the default), or a number
  const concurrency = opts.text("concurrency") === undefined ? "auto" : opts.number("concurrency", 1, 1)
  const server = await startServer(
    { microAppID, rows, latencyMillis, throttle: { maxInFlight, retryAfterSeconds: 1 } },
    "./emulator.js"
  )

  const run = (mode: Mode): Promise<ScansRun> =>
    runScans({
      baseUrl: server.baseUrl,
      tuning: mode === "at once, maxInFlight by hand" ? { rateLimit: { maxInFlight } } : {},
      scan: { microAppID, concurrency },
      scans,
      rows,
      atOnce: mode !== "one after another"
    })

  const modes: ReadonlyArray<Mode> = ["at once", "one after another", "at once, maxInFlight by hand"]
  const runs = new Map<Mode, Array<ScansRun>>(modes.map((mode) => [mode, []]))
  try {
    for (let round = 0; round < rounds; round++) {
      for (const mode of rotate(modes, round)) runs.get(mode)?.push(await run(mode))
    }
  } finally {
    server.stop()
  }

  const of = (mode: Mode) => runs.get(mode) ?? []
  const medianMillis = (mode: Mode) => median(of(mode).map((r) => r.millis))
  const ratio = medianMillis("at once") / medianMillis("one after another")
  const all = modes.flatMap(of)
  const failures = all.flatMap((r) => r.failures)
  const inexact = all.reduce((sum, r) => sum + (scans - r.exact), 0)
  const details = [
    `### Overload: ${scans} scans of ${formatInt(rows)} rows, a server allowing ${maxInFlight} requests in flight ` +
    `(429, Retry-After: 1 s), ${latencyMillis} ms per request, concurrency ${concurrency}, ${rounds} rounds, ` +
    "a fresh client each run",
    "",
    "| Run | ms (median) | exact scans, each round | failures | retries, each round |",
    "|---|---:|---|---|---|",
    ...modes.map((mode) =>
      `| ${mode} | ${formatInt(medianMillis(mode))} | ${of(mode).map((r) => r.exact).join(", ")} | ` +
      `${of(mode).flatMap((r) => r.failures).join(", ") || "none"} | ${of(mode).map((r) => r.retries).join(", ")} |`
    )
  ].join("\n")
  return {
    title: "overload",
    findings: [
      {
        figure:
          `Overload, ${scans} scans at once against a server allowing ${maxInFlight} in flight: scans not exact, failures`,
        measured: `${inexact} not exact, ${failures.length} failed${
          failures.length === 0 ? "" : ` (${failures.join(", ")})`
        }`,
        goal: "0, 0",
        met: inexact === 0 && failures.length === 0
      },
      {
        figure: `Overload: time at once / one after another (${scans} scans)`,
        measured: `${formatRatio(ratio)}x (maxInFlight ${maxInFlight} by hand: ` +
          `${formatRatio(medianMillis("at once, maxInFlight by hand") / medianMillis("one after another"))}x)`,
        goal: "<= 3.0x",
        met: ratio <= 3
      }
    ],
    details
  }
}

main().then(finish, failed)
