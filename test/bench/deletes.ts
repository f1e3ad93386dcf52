/**
 * The cost of confirming deletes: a change pass over N rows (100,000) whose baseline holds 1% more
 * ids than the table (rows deleted since), with deletes confirmed by a point read each (the
 * default) and with exhaustive-only deletes (no read), side by side against the benchmark server
 * in a process of its own, alternating, the median of 3 runs of each; with no delay, and with
 * every request answered after 2 ms, as over a network.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect, Layer, ManagedRuntime, Redacted, Stream } from "effect"
import { Changes, MicroappClient } from "../../src/index.js"
import { demoCredentials } from "../../src/testing/index.js"
import { failed, finish, formatInt, formatRatio, median, options, type Report, startServer } from "./common.js"
import { rowId } from "./table.js"

interface Measured {
  readonly reads: number
  readonly confirmed: number
  readonly exhaustive: number
}

const microAppID = "64d000000000000000000001"

const measure = async (rows: number, deleted: number, delayMillis: number): Promise<Measured> => {
  const server = await startServer({ rows, delayMillis })
  const runtime = ManagedRuntime.make(
    MicroappClient.layer({
      baseUrl: server.baseUrl,
      authToken: Redacted.make(demoCredentials.authToken),
      userId: demoCredentials.userId
    }).pipe(Layer.provide(NodeHttpClient.layerUndici))
  )
  try {
    const pass = (baseline: Changes.Baseline, deletes: "confirmed" | "exhaustive") =>
      Effect.gen(function*() {
        const client = yield* MicroappClient
        const changes = yield* client.changes({ microAppID, baseline, deletes })
        const start = performance.now()
        const folded = yield* Stream.runFold(
          changes.changes,
          new Map<string, string>(),
          (map, change) => change._tag === "Deleted" ? map : map.set(change.id, change.fingerprint)
        )
        return { millis: performance.now() - start, folded, summary: yield* changes.summary }
      })
    // the table as a first pass sees it, and ids the table no longer has
    const first = await runtime.runPromise(pass(Changes.Baseline.empty, "confirmed"))
    const previous = new Map(first.folded)
    for (let i = 0; i < deleted; i++) previous.set(rowId(rows + i), "0000000000000000")
    const baseline = Changes.Baseline.fromMap(previous)
    const times = { confirmed: [] as Array<number>, exhaustive: [] as Array<number> }
    let reads = 0
    for (let round = 0; round < 3; round++) {
      for (
        const deletes of round % 2 === 0
          ? ["confirmed", "exhaustive"] as const
          : ["exhaustive", "confirmed"] as const
      ) {
        const run = await runtime.runPromise(pass(baseline, deletes))
        if (run.summary.deleted !== deleted || run.summary.unchanged !== rows) {
          throw new Error(`a pass did not find the ${deleted} deletes: ${JSON.stringify(run.summary)}`)
        }
        if (deletes === "confirmed") reads = run.summary.reads
        times[deletes].push(run.millis)
      }
    }
    return { reads, confirmed: median(times.confirmed), exhaustive: median(times.exhaustive) }
  } finally {
    await runtime.dispose()
    server.stop()
  }
}

const main = async (): Promise<Report> => {
  const opts = options()
  const rows = opts.number("rows", 100_000, 2_000)
  const deleted = Math.max(1, Math.round(rows / 100))
  const runs = [[0, await measure(rows, deleted, 0)], [2, await measure(rows, deleted, 2)]] as const
  const seconds = (millis: number) => `${(millis / 1000).toFixed(2)} s`
  const details = [
    `### A change pass over ${formatInt(rows)} rows, ${formatInt(deleted)} deleted since the baseline (median of 3)`,
    "",
    "| Server delay | Point reads | Confirmed (default) | Exhaustive-only (no read) | Ratio |",
    "|---|---:|---:|---:|---:|",
    ...runs.map(([delay, run]) =>
      `| ${delay} ms | ${formatInt(run.reads)} | ${seconds(run.confirmed)} | ${seconds(run.exhaustive)} | ${
        formatRatio(run.confirmed / run.exhaustive)
      } |`
    )
  ].join("\n")
  return {
    title: "deletes",
    findings: runs.map(([delay, run]) => ({
      figure: `Confirmed deletes, ${formatInt(rows)} rows, 1% deleted, ${delay} ms a request`,
      measured: `${formatInt(run.reads)} reads, ${
        formatRatio(run.confirmed / run.exhaustive)
      }x the time of exhaustive-only`,
      goal: "",
      met: undefined
    })),
    details
  }
}

main().then(finish, failed)
