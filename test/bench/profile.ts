/**
 * The client alone, in a loop, for a CPU profile: `--what=writes` sends `--updates` updates of one
 * field by `updateRows` at `--concurrency`, `--what=calls` the same by `updateRow` in
 * `Effect.forEach` (no bulk engine), `--what=pool` by a pool of `fetch` workers (for scale),
 * `--what=reads` reads a `--rows`-row table by `rows()` at concurrency 1 in pages of `--page`;
 * `--rounds` times each, against a server process of its own, whose answers come in the form
 * `--answers` (`length`, `chunked` or `gzip`: see server.ts).
 * Run under `node --cpu-prof --cpu-prof-dir=DIR`, then `node .bench-out/test/bench/steps.js DIR/*.cpuprofile`
 * attributes the samples to the steps of a call. Prints the CPU µs per update or per page.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect, Layer, ManagedRuntime, Redacted, Stream } from "effect"
import { MicroappClient } from "../../src/index.js"
import { answerForms, baseUrlOf, failed, median, options, startServer } from "./common.js"
import { authToken, microAppID, updatePool, userId } from "./plain.js"
import { rowId } from "./table.js"

const main = async () => {
  const opts = options()
  const what = opts.text("what") ?? "writes"
  const count = opts.number("updates", 3_000, 200)
  const concurrency = opts.number("concurrency", 4, 4)
  const rows = opts.number("rows", 200_000, 2_000)
  const pageSize = opts.number("page", 1_000, 100)
  const rounds = opts.number("rounds", 5, 1)
  const answers = answerForms.find((form) => form === opts.text("answers")) ?? "length"
  const server = await startServer({ rows: what === "reads" ? rows : 1, delayMillis: 0 })
  const baseUrl = baseUrlOf(server.baseUrl, answers)
  const runtime = ManagedRuntime.make(
    MicroappClient.layer({ baseUrl, authToken: Redacted.make(authToken), userId }).pipe(
      Layer.provide(NodeHttpClient.layerUndici)
    )
  )
  const updates = Array.from({ length: count }, (_, i) => ({ rowID: rowId(i), rowData: { Priority: i % 5 } }))
  const writes = Effect.flatMap(MicroappClient, (client) =>
    Stream.runForEach(
      client.updateRows(Stream.fromIterable(updates), { concurrency }),
      (outcome) => outcome._tag === "Updated" ? Effect.void : Effect.die(new Error(`update ${outcome.index}`))
    ))
  const calls = Effect.flatMap(
    MicroappClient,
    (client) => Effect.forEach(updates, (update) => client.updateRow(update), { concurrency, discard: true })
  )
  const pool = () => updatePool(baseUrl, updates, concurrency)
  const reads = Effect.flatMap(MicroappClient, (client) =>
    Effect.flatMap(
      Stream.runCount(client.rows({ microAppID, pageSize, concurrency: 1 })),
      (n) => n === rows ? Effect.void : Effect.die(new Error(`read ${n} rows of ${rows}`))
    ))
  const perCall = what === "reads" ? rows / pageSize : count
  const cpu: Array<number> = []
  try {
    for (let round = 0; round <= rounds; round++) {
      const start = process.cpuUsage()
      await (what === "pool"
        ? pool()
        : runtime.runPromise(what === "reads" ? reads : what === "calls" ? calls : writes))
      const used = process.cpuUsage(start)
      // the first round warms the JIT and the connections
      if (round > 0) cpu.push((used.user + used.system) / perCall)
    }
  } finally {
    await runtime.dispose()
    server.stop()
  }
  process.stdout.write(
    `${what}, ${answers}: CPU µs per ${what === "reads" ? `page of ${pageSize}` : "update"}, median of ${rounds}: ${
      Math.round(median(cpu))
    }\n`
  )
}

main().catch(failed)
