/**
 * Writes: the same updates of one field sent by the client's `updateRows` and by a pool of plain
 * `fetch` workers of the same concurrency, taking turns in one process against one server process
 * that answers every update with success. Reports the CPU each update costs (user and system time
 * of this process, which sends only), the share of it in garbage collection, and the wall times.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect, Layer, ManagedRuntime, Redacted, Stream } from "effect"
import { MicroappClient } from "../../src/index.js"
import {
  failed,
  finish,
  formatInt,
  formatRatio,
  gcTimer,
  median,
  options,
  type Report,
  rotate,
  startServer
} from "./common.js"
import { authToken, updatePool, userId } from "./plain.js"
import { rowId } from "./table.js"

interface Run {
  readonly millis: number
  readonly cpuMicros: number
  readonly gcMillis: number
}

type Contender = "client" | "pool"

/** The wall time, CPU time and garbage collection time of `f`. */
const measured = async (f: () => Promise<void>): Promise<Run> => {
  const gc = gcTimer()
  const cpu = process.cpuUsage()
  const start = performance.now()
  await f()
  const millis = performance.now() - start
  const used = process.cpuUsage(cpu)
  return { millis, cpuMicros: used.user + used.system, gcMillis: await gc.stop() }
}

const main = async (): Promise<Report> => {
  const opts = options()
  const count = opts.number("updates", 3_000, 200)
  const concurrency = opts.number("concurrency", 4, 4)
  const rounds = opts.number("rounds", 5, 1)
  const server = await startServer({ rows: 1, delayMillis: 0 })
  const updates = Array.from({ length: count }, (_, i) => ({ rowID: rowId(i), rowData: { Priority: i % 5 } }))
  const runtime = ManagedRuntime.make(
    MicroappClient.layer({
      baseUrl: server.baseUrl,
      authToken: Redacted.make(authToken),
      userId
    }).pipe(Layer.provide(NodeHttpClient.layerUndici))
  )

  const client = () =>
    runtime.runPromise(
      Effect.flatMap(MicroappClient, (microapp) =>
        Stream.runForEach(microapp.updateRows(Stream.fromIterable(updates), { concurrency }), (outcome) =>
          outcome._tag === "Updated" ? Effect.void : Effect.die(new Error(`update ${outcome.index}: ${outcome._tag}`))))
    )

  const pool = () => updatePool(server.baseUrl, updates, concurrency)

  const runs = new Map<Contender, Array<Run>>([["client", []], ["pool", []]])
  const contenders: ReadonlyArray<readonly [Contender, () => Promise<void>]> = [["client", client], ["pool", pool]]
  try {
    // one round unmeasured, for the JIT and the connections
    for (const [, run] of contenders) await run()
    for (let round = 0; round < rounds; round++) {
      for (const [name, run] of rotate(contenders, round)) runs.get(name)?.push(await measured(run))
    }
  } finally {
    await runtime.dispose()
    server.stop()
  }

  const of = (name: Contender) => runs.get(name) ?? []
  const cpuPerUpdate = (name: Contender) => median(of(name).map((r) => r.cpuMicros)) / count
  const wall = (name: Contender) => median(of(name).map((r) => r.millis))
  const gcShare = (name: Contender) => median(of(name).map((r) => r.gcMillis / (r.cpuMicros / 1000)))
  const cpuRatio = cpuPerUpdate("client") / cpuPerUpdate("pool")
  const speed = wall("pool") / wall("client")
  const label = { client: "`updateRows`, NodeHttpClient.layerUndici", pool: "a pool of `fetch` workers" }
  const details = [
    `### Writes: ${formatInt(count)} updates of one field, ${concurrency} at a time, no faults, median of ${rounds} ` +
    "alternating rounds in one process",
    "",
    "| Contender | ms | updates/s | CPU µs per update | GC share of CPU |",
    "|---|---:|---:|---:|---:|",
    ...(["client", "pool"] as const).map((name) =>
      `| ${label[name]} | ${formatInt(wall(name))} | ${formatInt(count / (wall(name) / 1000))} | ` +
      `${formatInt(cpuPerUpdate(name))} | ${formatRatio(gcShare(name) * 100, 1)}% |`
    )
  ].join("\n")
  return {
    title: "writes",
    findings: [
      {
        figure: `Writes, ${
          formatInt(count)
        } updates at concurrency ${concurrency}: CPU per update, updateRows / fetch pool`,
        measured: `${formatRatio(cpuRatio)}x (${formatInt(cpuPerUpdate("client"))} / ${
          formatInt(cpuPerUpdate("pool"))
        } µs)`,
        goal: "<= 1.5x",
        met: cpuRatio <= 1.5
      },
      {
        figure: "Writes, same: speed of updateRows against the fetch pool (pool time / updateRows time)",
        measured: `${formatRatio(speed)}x`,
        goal: ">= 0.9x",
        met: speed >= 0.9
      }
    ],
    details
  }
}

main().then(finish, failed)
