/**
 * Figure 1, throughput: a whole table read by A (this client, every row decoded), B (an unvalidated
 * fetch loop) and C (one huge request), each in a process of its own, taking turns over several
 * rounds against one server process, whose answers come with their length and, for A, A1 and B,
 * also chunked and gzip-compressed (`--answers`; see server.ts). `--before=DIR` adds each A
 * contender of another compiled build of these programs (e.g. main's, with them copied in:
 * `npx tsc -p tsconfig.bench.json --outDir DIR`), for a change measured against the build before it.
 */
import {
  type Answers,
  answersOption,
  baseUrlOf,
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

const all: ReadonlyArray<Contender> = [
  { key: "A", contender: "A", concurrency: "auto", label: "A `rows()`, default options, NodeHttpClient.layerUndici" },
  { key: "A1", contender: "A", concurrency: 1, label: "A `rows()`, concurrency 1" },
  { key: "A2", contender: "A", concurrency: 2, label: "A `rows()`, concurrency 2" },
  { key: "A-fetch", contender: "A-fetch", concurrency: "auto", label: "A `rows()`, default options, FetchHttpClient" },
  { key: "B", contender: "B", concurrency: 1, label: "B fetch + JSON.parse loop, no validation" },
  { key: "C", contender: "C", concurrency: 1, label: "C one request, huge limit" }
]

/** What a server's answers are, as the table says it. */
const answered: Record<Answers, string> = {
  length: "with a length",
  chunked: "chunked",
  gzip: "gzip when asked (B asks; A asks for none: chunked)"
}

/** The contenders that read the answers in each form, unless `--contenders` names others. */
const byDefault: Record<Answers, ReadonlyArray<string>> = {
  length: all.map((c) => c.key),
  chunked: ["A", "A1", "B"],
  gzip: ["A", "A1", "B"]
}

const main = async (): Promise<Report> => {
  const opts = options()
  const rows = opts.number("rows", 200_000, 2_000)
  const pageSize = opts.number("page", 1_000, 100)
  const rounds = opts.number("rounds", 7, 1)
  const warmup = opts.number("warmup", 1, 0)
  const only = opts.text("contenders")?.split(",")
  const forms = answersOption(opts.text("answers"))
  // e.g. --node-flags="--cpu-prof --cpu-prof-dir=.bench-out/prof" to profile the contenders
  const nodeFlags = opts.text("node-flags")?.split(" ").filter((flag) => flag !== "") ?? []
  const before = opts.text("before")
  const contenders = forms.flatMap((form) =>
    all.filter((c) => (only ?? byDefault[form]).includes(c.key)).flatMap((c) => {
      const contender = { ...c, key: form === "length" ? c.key : `${c.key}@${form}`, form, build: undefined }
      return before === undefined || c.contender === "B" || c.contender === "C" ? [contender] : [contender, {
        ...contender,
        key: `${contender.key}<before`,
        label: `${c.label}, the build in ${before}`,
        build: before
      }]
    })
  )

  const server = await startServer({ rows, delayMillis: 0 })
  const workers = new Map<string, Worker>()
  const times = new Map<string, Array<number>>(contenders.map((c) => [c.key, []]))
  const cpuTimes = new Map<string, Array<number>>(contenders.map((c) => [c.key, []]))
  const gcShares = new Map<string, Array<number>>(contenders.map((c) => [c.key, []]))
  const settled = new Map<string, Array<number>>(contenders.map((c) => [c.key, []]))
  try {
    for (const c of contenders) {
      const baseUrl = baseUrlOf(server.baseUrl, c.form)
      const spec = { contender: c.contender, baseUrl, rows, lastId: rowId(rows - 1), pageSize }
      workers.set(c.key, await startWorker({ ...spec, concurrency: c.concurrency }, nodeFlags, c.build))
    }
    for (let round = 0; round < warmup + rounds; round++) {
      for (const contender of rotate(contenders, round)) {
        const run = await workers.get(contender.key)?.run()
        if (run === undefined || !run.ok) throw new Error(`${contender.key} failed: ${run?.error}`)
        if (round >= warmup) {
          times.get(contender.key)?.push(run.millis)
          cpuTimes.get(contender.key)?.push(run.cpuMillis)
          gcShares.get(contender.key)?.push(run.gcMillis / run.cpuMillis)
          if (run.concurrency !== undefined) settled.get(contender.key)?.push(run.concurrency.settled)
        }
      }
    }
  } finally {
    for (const worker of workers.values()) worker.stop()
    server.stop()
  }

  const medianOf = (key: string) => median(times.get(key) ?? [])
  const b = medianOf("B")
  const bOf = (form: Answers) => medianOf(form === "length" ? "B" : `B@${form}`)
  const windows = (key: string) => settled.get(key)?.join(", ") || "–"
  const gcShare = (key: string) => median(gcShares.get(key) ?? [])
  const cpuPerRow = (key: string) => median(cpuTimes.get(key) ?? []) * 1000 / rows
  const lines = contenders.map((c) => {
    const millis = medianOf(c.key)
    const cpu = median(cpuTimes.get(c.key) ?? [])
    return `| ${answered[c.form]} | ${c.label} | ${formatInt(millis)} | ${formatInt(rows / millis * 1000)} | ${
      formatRatio(bOf(c.form) / millis)
    } | ${formatInt(cpu)} | ${(cpu * 1000 / rows).toFixed(1)} | ${formatRatio(gcShare(c.key) * 100, 1)}% | ${
      c.concurrency === "auto" ? windows(c.key) : c.concurrency
    } |`
  })
  const details = [
    `### Throughput: ${formatInt(rows)} rows, page ${formatInt(pageSize)}, median of ${rounds} alternating rounds`,
    "",
    "| Server answers | Contender | ms | rows/s | throughput vs B (same answers) | client CPU ms | client CPU µs/row | GC share of CPU | windows in flight (settled, each round) |",
    "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ...lines
  ].join("\n")
  const ratio = (key: string) => b / medianOf(key)
  const findings = [
    ...(times.has("A") && times.has("B")
      ? [{
        figure: `Throughput, ${formatInt(rows)} rows, page ${formatInt(pageSize)}: A (default options)/B`,
        measured: `${formatRatio(ratio("A"))}, settled at ${windows("A")} windows` +
          (times.has("A-fetch") ? ` (A over FetchHttpClient: ${formatRatio(ratio("A-fetch"))})` : ""),
        goal: ">= 1.10",
        met: ratio("A") >= 1.1
      }]
      : []),
    ...(times.has("A1") && times.has("B")
      ? [{
        figure: "Throughput, same table: A (concurrency 1)/B",
        measured: formatRatio(ratio("A1")) + (times.has("A2") ? ` (concurrency 2: ${formatRatio(ratio("A2"))})` : ""),
        goal: ">= 0.85",
        met: ratio("A1") >= 0.85
      }]
      : []),
    ...(times.has("A1") && times.has("B")
      ? [{
        figure: "CPU per row, same table: A (concurrency 1)/B",
        measured: `${formatRatio(cpuPerRow("A1") / cpuPerRow("B"))}x (${cpuPerRow("A1").toFixed(1)} / ${
          cpuPerRow("B").toFixed(1)
        } µs; GC ${formatRatio(gcShare("A1") * 100, 1)}% / ${formatRatio(gcShare("B") * 100, 1)}% of CPU)`,
        goal: "<= 1.0x",
        met: cpuPerRow("A1") <= cpuPerRow("B")
      }]
      : []),
    ...forms.filter((form) => form !== "length" && times.has(`A1@${form}`) && times.has("A1")).map((form) => ({
      figure: `CPU per row, same table, server answering ${form}: A (concurrency 1) / the same with a length`,
      measured: `${formatRatio(cpuPerRow(`A1@${form}`) / cpuPerRow("A1"))}x (${cpuPerRow(`A1@${form}`).toFixed(1)} / ${
        cpuPerRow("A1").toFixed(1)
      } µs; against B on the same answers: ${formatRatio(cpuPerRow(`A1@${form}`) / cpuPerRow(`B@${form}`))}x)`,
      goal: "<= 1.1x",
      met: cpuPerRow(`A1@${form}`) <= 1.1 * cpuPerRow("A1")
    })),
    ...(times.has("C") && times.has("B")
      ? [{ figure: "Throughput, same table: C/B", measured: formatRatio(ratio("C")), goal: "", met: undefined }]
      : [])
  ]
  return { title: "throughput", findings, details }
}

main().then(finish, failed)
