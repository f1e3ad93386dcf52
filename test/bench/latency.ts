/**
 * Figure 2, latency hidden: a server that takes a fixed time per request, read by A with several
 * windows in flight and by B one request at a time, each in a process of its own, taking turns.
 * The tests check on their test clock that the default options add windows against such a server;
 * here they do it in real time, on whatever machine runs this.
 */
import {
  type Contender,
  failed,
  finish,
  formatInt,
  formatRatio,
  median,
  options,
  type Report,
  rotate,
  startServer,
  startWorker,
  type Worker
} from "./common.js"
import { rowId } from "./table.js"

const main = async (): Promise<Report> => {
  const opts = options()
  const rows = opts.number("rows", 40_000, 1_000)
  const pageSize = opts.number("page", 500, 100)
  const delayMillis = opts.number("delay", 20, 5)
  const concurrency = opts.number("concurrency", 4, 4)
  const rounds = opts.number("rounds", 5, 1)
  const warmup = opts.number("warmup", 1, 0)

  const contenders: ReadonlyArray<Contender> = [
    { key: "A", label: "A `rows()`, default options", contender: "A", concurrency: "auto" },
    { key: "A4", label: `A \`rows()\`, concurrency ${concurrency}`, contender: "A", concurrency },
    { key: "A1", label: "A `rows()`, concurrency 1", contender: "A", concurrency: 1 },
    { key: "B", label: "B fetch + JSON.parse loop, sequential", contender: "B", concurrency: 1 }
  ]
  const server = await startServer({ rows, delayMillis })
  const workers = new Map<string, Worker>()
  const times = new Map<string, Array<number>>(contenders.map((c) => [c.key, []]))
  const settled: Array<number> = []
  const reached: Array<number> = []
  try {
    for (const c of contenders) {
      const spec = {
        contender: c.contender,
        baseUrl: server.baseUrl,
        rows,
        lastId: rowId(rows - 1),
        pageSize,
        concurrency: c.concurrency
      }
      workers.set(c.key, await startWorker(spec))
    }
    for (let round = 0; round < warmup + rounds; round++) {
      for (const contender of rotate(contenders, round)) {
        const run = await workers.get(contender.key)?.run()
        if (run === undefined || !run.ok) throw new Error(`${contender.key} failed: ${run?.error}`)
        if (round >= warmup) times.get(contender.key)?.push(run.millis)
        if (round >= warmup && contender.key === "A" && run.concurrency !== undefined) {
          settled.push(run.concurrency.settled)
          reached.push(run.concurrency.reached)
        }
      }
    }
  } finally {
    for (const worker of workers.values()) worker.stop()
    server.stop()
  }

  const medianOf = (key: string) => median(times.get(key) ?? [])
  const b = medianOf("B")
  const speedUp = b / medianOf("A")
  const details = [
    `### Latency: ${delayMillis} ms per request, ${formatInt(rows)} rows, page ${pageSize}, ` +
    `median of ${rounds} alternating rounds`,
    "",
    "| Contender | ms | speed-up vs B |",
    "|---|---:|---:|",
    ...contenders.map((c) => `| ${c.label} | ${formatInt(medianOf(c.key))} | ${formatRatio(b / medianOf(c.key))}x |`),
    "",
    `Windows in flight where the default options settled, each round: ${settled.join(", ")}; ` +
    `the most they reached: ${reached.join(", ")}.`
  ].join("\n")
  return {
    title: "latency",
    findings: [{
      figure: `Latency hidden, ${delayMillis} ms/request, ${formatInt(rows)} rows, page ${pageSize}: ` +
        "B time / A time (A default options)",
      measured: `${formatRatio(speedUp)}x, settled at ${settled.join(", ")} windows, reached ${reached.join(", ")} ` +
        `(concurrency ${concurrency}: ${formatRatio(b / medianOf("A4"))}x)`,
      goal: ">= 3.0x",
      met: speedUp >= 3
    }],
    details
  }
}

main().then(finish, failed)
