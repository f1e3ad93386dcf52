/**
 * Writes: the same updates of one field sent by the client's `updateRows` and by a pool of plain
 * `fetch` workers of the same concurrency, each in a process of its own, taking turns against one
 * server process that answers every update with success, in each form of answer (`--answers`:
 * with a length, chunked, gzip-compressed; see server.ts). Reports the CPU each update costs (user
 * and system time of the sending process), the share of it in garbage collection, and the wall
 * times. In one process, each run of the client after one of the pool cost it about 40% more CPU
 * than its runs alone (the pool's garbage and JIT state), which measured the pair, not the client.
 *
 * `--before=DIR` adds the `updateRows` of another compiled build of this program (e.g. main's,
 * with this program copied in: `npx tsc -p tsconfig.bench.json --outDir DIR`), in its own process
 * too, for a change measured against the build before it.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect, Layer, ManagedRuntime, Redacted, Stream } from "effect"
import { type ChildProcess, fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { MicroappClient } from "../../src/index.js"
import {
  type Answers,
  answersOption,
  baseUrlOf,
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

type Contender = "client" | "pool" | "before"

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

const self = fileURLToPath(import.meta.url)

const updatesOf = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ rowID: rowId(i), rowData: { Priority: i % 5 } }))

/** A contender's process: sends the updates each time its parent asks, and answers with the run's figures. */
const contender = (name: Contender, baseUrl: string, count: number, concurrency: number) => {
  const updates = updatesOf(count)
  const runtime = ManagedRuntime.make(
    MicroappClient.layer({ baseUrl, authToken: Redacted.make(authToken), userId }).pipe(
      Layer.provide(NodeHttpClient.layerUndici)
    )
  )
  const client = () =>
    runtime.runPromise(
      Effect.flatMap(MicroappClient, (microapp) =>
        Stream.runForEach(microapp.updateRows(Stream.fromIterable(updates), { concurrency }), (outcome) =>
          outcome._tag === "Updated" ? Effect.void : Effect.die(new Error(`update ${outcome.index}: ${outcome._tag}`))))
    )
  const pool = () => updatePool(baseUrl, updates, concurrency)
  const run = name === "client" ? client : pool
  process.on("message", () => measured(run).then((figures) => process.send?.(figures), failed))
  process.on("disconnect", () => process.exit(0))
  process.send?.("ready")
}

/** Starts `name`'s process; `run` has it send the updates once. */
const startContender = (name: Contender, baseUrl: string, count: number, concurrency: number, before?: string) =>
  new Promise<{ readonly run: () => Promise<Run>; readonly stop: () => void }>((resolve, reject) => {
    const program = name === "before" ? `${before}/test/bench/writes.js` : self
    const child: ChildProcess = fork(program, [
      `--mode=${name === "before" ? "client" : name}`,
      `--base-url=${baseUrl}`,
      `--updates=${count}`,
      `--concurrency=${concurrency}`
    ], { execArgv: [], stdio: ["ignore", "inherit", "inherit", "ipc"] })
    child.once("error", reject)
    child.once("message", () =>
      resolve({
        run: () =>
          new Promise((answer) => {
            child.once("message", (figures) => answer(figures as Run))
            child.send("run")
          }),
        stop: () => child.disconnect()
      }))
  })

/** What a server's answers are, as the table says it. */
const answered: Record<Answers, string> = {
  length: "with a length",
  chunked: "chunked",
  gzip: "gzip when asked (the pool asks; the client asks for none: chunked)"
}

const main = async (): Promise<Report> => {
  const opts = options()
  const count = opts.number("updates", 3_000, 200)
  const concurrency = opts.number("concurrency", 4, 4)
  const rounds = opts.number("rounds", 5, 1)
  const forms = answersOption(opts.text("answers"))
  const before = opts.text("before")
  const names: ReadonlyArray<Contender> = before === undefined ? ["client", "pool"] : ["client", "before", "pool"]
  const server = await startServer({ rows: 1, delayMillis: 0 })
  const contenders: Array<{ readonly name: Contender; readonly form: Answers; readonly run: () => Promise<Run> }> = []
  const stops: Array<() => void> = []
  const runs = new Map<string, Array<Run>>()
  const key = (name: Contender, form: Answers) => `${name}@${form}`
  try {
    for (const form of forms) {
      for (const name of names) {
        const started = await startContender(name, baseUrlOf(server.baseUrl, form), count, concurrency, before)
        stops.push(started.stop)
        contenders.push({ name, form, run: started.run })
        runs.set(key(name, form), [])
      }
    }
    // one round unmeasured, for the JIT and the connections
    for (const { run } of contenders) await run()
    for (let round = 0; round < rounds; round++) {
      for (const { form, name, run } of rotate(contenders, round)) runs.get(key(name, form))?.push(await run())
    }
  } finally {
    for (const stop of stops) stop()
    server.stop()
  }

  const of = (name: Contender, form: Answers) => runs.get(key(name, form)) ?? []
  const cpuPerUpdate = (name: Contender, form: Answers) => median(of(name, form).map((r) => r.cpuMicros)) / count
  const wall = (name: Contender, form: Answers) => median(of(name, form).map((r) => r.millis))
  const gcShare = (name: Contender, form: Answers) =>
    median(of(name, form).map((r) => r.gcMillis / (r.cpuMicros / 1000)))
  const cpuRatio = (form: Answers, name: Contender = "client") => cpuPerUpdate(name, form) / cpuPerUpdate("pool", form)
  const speed = (form: Answers, name: Contender = "client") => wall("pool", form) / wall(name, form)
  const label = {
    client: "`updateRows`, NodeHttpClient.layerUndici",
    before: `\`updateRows\` of the build in ${before}`,
    pool: "a pool of `fetch` workers"
  }
  const details = [
    `### Writes: ${formatInt(count)} updates of one field, ${concurrency} at a time, no faults, median of ${rounds} ` +
    "alternating rounds, each contender in a process of its own",
    "",
    "| Server answers | Contender | ms | updates/s | CPU µs per update | GC share of CPU | CPU / pool's | speed / pool's |",
    "|---|---|---:|---:|---:|---:|---:|---:|",
    ...forms.flatMap((form) =>
      names.map((name) =>
        `| ${answered[form]} | ${label[name]} | ${formatInt(wall(name, form))} | ` +
        `${formatInt(count / (wall(name, form) / 1000))} | ${formatInt(cpuPerUpdate(name, form))} | ` +
        `${formatRatio(gcShare(name, form) * 100, 1)}% | ` +
        (name === "pool" ? "| |" : `${formatRatio(cpuRatio(form, name))}x | ${formatRatio(speed(form, name))}x |`)
      )
    )
  ].join("\n")
  const againstLength = forms.filter((form) => form !== "length" && forms.includes("length")).map((form) => {
    const ratio = cpuPerUpdate("client", form) / cpuPerUpdate("client", "length")
    return {
      figure: `Writes, same: updateRows' CPU per update, server answering ${form} / with a length`,
      measured: `${formatRatio(ratio)}x`,
      goal: "<= 1.1x",
      met: ratio <= 1.1
    }
  })
  return {
    title: "writes",
    findings: [
      ...forms.flatMap((form) => [
        {
          figure: `Writes, ${
            formatInt(count)
          } updates at concurrency ${concurrency}, server answering ${form}: CPU per update, updateRows / fetch pool`,
          measured: `${formatRatio(cpuRatio(form))}x (${formatInt(cpuPerUpdate("client", form))} / ${
            formatInt(cpuPerUpdate("pool", form))
          } µs)`,
          goal: "<= 1.2x",
          met: cpuRatio(form) <= 1.2
        },
        {
          figure: `Writes, same, ${form}: speed of updateRows against the fetch pool (pool time / updateRows time)`,
          measured: `${formatRatio(speed(form))}x`,
          goal: ">= 0.9x",
          met: speed(form) >= 0.9
        }
      ]),
      ...againstLength
    ],
    details
  }
}

const mode = options().text("mode")
if (mode === "client" || mode === "pool") {
  const opts = options()
  contender(mode, opts.text("base-url") ?? "", opts.number("updates", 3_000, 200), opts.number("concurrency", 4, 4))
} else {
  main().then(finish, failed)
}
