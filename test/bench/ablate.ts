/**
 * Each step of an update measured by removing it: copies of the compiled benchmark build
 * (.bench-out), each with one step cut out of its JavaScript, all loaded in one process and taking
 * turns sending the same updates by `updateRows` at concurrency 4 against one server process; with
 * `updateRow` in `Effect.forEach` (no bulk engine) and a pool of `fetch` workers for scale. Prints
 * each variant's CPU µs per update, median and minimum, and its ratio to the build as it is. A
 * build without a step is a measurement only: it no longer keeps that step's guarantee.
 *
 *   npx tsc -p tsconfig.bench.json && node .bench-out/test/bench/ablate.js [--updates=1500] [--rounds=9]
 *     [--before=DIR]
 *
 * `--before` adds the `updateRows` of another compiled build (e.g. main's, compiled with
 * `npx tsc -p tsconfig.bench.json --outDir DIR`), for a change measured against the build before it.
 *
 * A cut that no longer matches the compiled code fails the program, naming it.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect, Layer, ManagedRuntime, Redacted, Stream } from "effect"
import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { MicroappClient as Client } from "../../src/index.js"
import { failed, formatInt, formatRatio, median, options, startServer } from "./common.js"
import { authToken, updatePool, userId } from "./plain.js"
import { rowId } from "./table.js"

/** A cut: in `file` of the build, `from` replaced by `to`. */
type Cut = readonly [file: string, from: string, to: string]

const transport = "src/internal/http/transport.js"
const client = "src/internal/client.js"
const bulk = "src/internal/bulkUpdate.js"

const variants: ReadonlyArray<{ readonly name: string; readonly cuts: ReadonlyArray<Cut> }> = [
  {
    name: "no metrics (duration, call counter, outcome counter)",
    cuts: [
      [transport, "recordDuration(serverAddress, endpoint, credentialHeaders));", "(x) => x);"],
      [transport, "return countCall(endpoint)(", "return ("],
      [bulk, "return Metrics.increase(outcomeCounters[kind], n);", "return Effect.void;"]
    ]
  },
  {
    name: "no spans (updateRow's and updateRows')",
    cuts: [
      [client, "Effect.fn(\"MicroappClient.updateRow\")", "Effect.fnUntraced"],
      [client, "yield* Effect.annotateCurrentSpan({ rowID: valid.rowID });", ""],
      [bulk, ".pipe(Stream.withSpan(\"MicroappClient.updateRows\"))", ""]
    ]
  },
  {
    name: "no abort of each request as its attempt's scope closes",
    cuts: [["src/internal/http/fastPath.js", "const traced = HttpClient.withScope(client);", "const traced = client;"]]
  },
  {
    name: "no in-flight permit nor rate gate",
    cuts: [[
      transport,
      "return gated(withinInFlight(options.inFlight, (sent) => gated(around(sent)))(exchange));",
      "return exchange;"
    ]]
  },
  {
    name: "no timeout (the attempt's scope alone)",
    cuts: [[
      transport,
      "(exchange) => withinTimeout(exchange, timeout, () => Errors.timedOut(info, Duration.toMillis(timeout)), options.transformClient === undefined)",
      "Effect.scoped"
    ]]
  },
  {
    name: "no redaction of the credential headers (a fiber-local set per attempt)",
    cuts: [[
      transport,
      "recordDuration(serverAddress, endpoint, credentialHeaders));",
      "recordDuration(serverAddress, endpoint));"
    ]]
  },
  { name: "no input check (Schema, __proto__ walk)", cuts: [[client, "yield* validateUpdate(options);", "options;"]] },
  {
    name: "no answer decode (the status envelope)",
    cuts: [[
      client,
      "yield* decodeStatus(reply.json, { endpoint: endpoints.update, attempt: reply.attempts, status: reply.status });",
      ""
    ]]
  },
  { name: "no Retry-After hold", cuts: [[transport, ".pipe(holdOnRetryAfter(options.gate), ", ".pipe("]] },
  {
    name: "no retry policy",
    cuts: [[transport, "retrying(policies.scheduleOf(policy.right, endpoint), budget,", "retrying(undefined, budget,"]]
  }
]

const build = fileURLToPath(new URL("../..", import.meta.url))

/** Copies the build (all but earlier copies) to `.bench-out/ablate/<index>` and applies `cuts`. */
const copy = (index: number, cuts: ReadonlyArray<Cut>): string => {
  const dir = `${build}ablate/${index}`
  rmSync(dir, { recursive: true, force: true })
  cpSync(`${build}src`, `${dir}/src`, { recursive: true })
  for (const [file, from, to] of cuts) {
    const path = `${dir}/${file}`
    const text = readFileSync(path, "utf8")
    if (!text.includes(from)) throw new Error(`the cut no longer matches ${file}: ${from}`)
    writeFileSync(path, text.replace(from, to))
  }
  return dir
}

const main = async () => {
  const opts = options()
  const count = opts.number("updates", 1_500, 100)
  const rounds = opts.number("rounds", 9, 1)
  const concurrency = 4
  const server = await startServer({ rows: 1, delayMillis: 0 })
  const updates = Array.from({ length: count }, (_, i) => ({ rowID: rowId(i), rowData: { Priority: i % 5 } }))

  const runnerOf = async (dir: string, bulkEngine: boolean) => {
    const { MicroappClient } = (await import(`${dir}/src/index.js`)) as { MicroappClient: typeof Client }
    const runtime = ManagedRuntime.make(
      MicroappClient.layer({ baseUrl: server.baseUrl, authToken: Redacted.make(authToken), userId }).pipe(
        Layer.provide(NodeHttpClient.layerUndici)
      )
    )
    const run = Effect.flatMap(MicroappClient, (microapp) =>
      bulkEngine
        ? Stream.runForEach(
          microapp.updateRows(Stream.fromIterable(updates), { concurrency }),
          (outcome) => outcome._tag === "Updated" ? Effect.void : Effect.die(new Error(`update ${outcome.index}`))
        )
        : Effect.forEach(updates, (update) => microapp.updateRow(update), { concurrency, discard: true }))
    return { run: () => runtime.runPromise(run), dispose: () => runtime.dispose() }
  }
  const pool = () => updatePool(server.baseUrl, updates, concurrency)

  const asBuilt = copy(0, [])
  const runners: Array<{ readonly name: string; readonly run: () => Promise<void>; readonly dispose?: () => unknown }> =
    [
      { name: "as built: updateRows", ...(await runnerOf(asBuilt, true)) },
      { name: "updateRow in Effect.forEach (no bulk engine)", ...(await runnerOf(asBuilt, false)) },
      { name: "a pool of fetch workers", run: pool }
    ]
  const before = opts.text("before")
  if (before !== undefined) runners.push({ name: `updateRows of ${before}`, ...(await runnerOf(before, true)) })
  for (const [i, variant] of variants.entries()) {
    runners.push({ name: variant.name, ...(await runnerOf(copy(i + 1, variant.cuts), true)) })
  }

  const cpu = new Map<string, Array<number>>(runners.map((r) => [r.name, []]))
  try {
    // round 0 warms the JIT and the connections
    for (let round = 0; round <= rounds; round++) {
      const at = round % runners.length
      for (const runner of [...runners.slice(at), ...runners.slice(0, at)]) {
        const start = process.cpuUsage()
        await runner.run()
        const used = process.cpuUsage(start)
        if (round > 0) cpu.get(runner.name)?.push((used.user + used.system) / count)
      }
    }
  } finally {
    for (const runner of runners) await runner.dispose?.()
    server.stop()
  }
  const of = (name: string) => cpu.get(name) ?? []
  const base = of("as built: updateRows")
  process.stdout.write(
    [
      `CPU per update, ${formatInt(count)} updates at concurrency ${concurrency}, ${rounds} alternating rounds:`,
      "",
      "| Variant | µs, median | ratio | µs, minimum | ratio |",
      "|---|---:|---:|---:|---:|",
      ...runners.map(({ name }) =>
        `| ${name} | ${formatInt(median(of(name)))} | ${formatRatio(median(of(name)) / median(base))} | ` +
        `${formatInt(Math.min(...of(name)))} | ${formatRatio(Math.min(...of(name)) / Math.min(...base))} |`
      )
    ].join("\n") + "\n"
  )
}

main().catch(failed)
