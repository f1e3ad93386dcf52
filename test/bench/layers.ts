/**
 * `rows()` by layers: the same table read at concurrency 1, pages of `--page`, by programs that
 * each add one step of the client's row path to the one before, each in a process of its own,
 * taking turns over `--rounds` rounds: Effect's HttpClient and `JSON.parse` (L0), the exact-number
 * read instead of `JSON.parse` (L1), the reader's row decoder (L2), the exact id set (L3), and
 * `rows()` itself (A), against the `fetch` loop (B). What each step costs is what it adds, CPU a
 * row, median of the rounds; A less L3 is the scan's own machinery: the driver, the engine, the
 * stream, the transport's steps and what they keep alive. Beside the layers, Q reads the table a
 * page at a time by the client's `query`: its request path with the row checks, without a scan,
 * which splits A less L3 into the request path (Q less L2) and the scan.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect, Either } from "effect"
import { fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { makeRowDecoder } from "../../src/internal/http/decode.js"
import { readExact } from "../../src/internal/http/plainData.js"
import * as IdSet from "../../src/internal/scan/IdSet.js"
import { Row } from "../../src/Row.js"
import { failed, finish, formatRatio, median, options, type Report, rotate, startServer } from "./common.js"
import { clientA } from "./contenders.js"
import { pageRequest, scanB } from "./plain.js"

const layers = [
  { key: "L0", label: "Effect's HttpClient (undici), `JSON.parse`" },
  { key: "L1", label: "+ the exact-number read instead of `JSON.parse`" },
  { key: "L2", label: "+ the reader's row decoder (the walk, the `Row` Schema)" },
  { key: "L3", label: "+ the exact id set" },
  { key: "A", label: "`rows()`, concurrency 1" },
  {
    key: "Q",
    label: "beside: `query()` a page at a time, the client's request path and row checks, no scan (adds: over L2)",
    over: "L2"
  },
  { key: "B", label: "the `fetch` + `JSON.parse` loop" }
] as const

type Layer = typeof layers[number]["key"]

const info = { endpoint: { path: "/api/microappdata", write: false }, attempt: 1, status: 200 }

/** One read of the whole table by the layers up to `layer`: the rows read. */
const layered = (layer: Layer, baseUrl: string, pageSize: number) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const decoder = makeRowDecoder(Row, "fail")
    const ids = IdSet.exact()
    let rows = 0
    for (let skip = 0;;) {
      const { body, headers } = pageRequest(skip, pageSize)
      const response = yield* client.execute(
        HttpClientRequest.post(`${baseUrl}/api/microappdata`).pipe(
          HttpClientRequest.setHeaders(headers),
          HttpClientRequest.bodyText(body, "application/json")
        )
      )
      const text = yield* response.text
      const read = layer === "L0" ? { value: JSON.parse(text) } : readExact(text)
      if (!("value" in read)) return yield* Effect.dieMessage(read.refused)
      const page = (read.value as { body: { microAppRows: Array<{ _id: string }> } }).body.microAppRows
      if (layer !== "L0" && layer !== "L1" && Either.isLeft(decoder(page, undefined, info))) {
        return yield* Effect.dieMessage("a row failed its Schema")
      }
      if (layer === "L3") { for (const row of page) ids.add(row._id) }
      rows += page.length
      if (page.length < pageSize) return rows
      skip += page.length
    }
  }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici))

/** In a child: reads the table twice, the first to warm up; the second's CPU a row. */
const child = async (layer: Layer, baseUrl: string, pageSize: number): Promise<number> => {
  const a = layer === "A" || layer === "Q" ? clientA(baseUrl, "undici") : undefined
  const once = (): Promise<number> =>
    a !== undefined
      ? (layer === "Q" ? a.queryPages(pageSize) : a.scan({ pageSize, concurrency: 1 })).then((seen) => seen.rows)
      : layer === "B"
      ? scanB(baseUrl, pageSize).then((seen) => seen.rows)
      : Effect.runPromise(layered(layer, baseUrl, pageSize))
  await once()
  const cpu = process.cpuUsage()
  const rows = await once()
  const used = process.cpuUsage(cpu)
  return (used.user + used.system) / rows
}

const runChild = (layer: Layer, baseUrl: string, pageSize: number): Promise<number> =>
  new Promise((resolve, reject) => {
    const process = fork(fileURLToPath(import.meta.url), ["--child", layer, baseUrl, String(pageSize)], {
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    process.on("message", (micros) => resolve(Number(micros)))
    process.on("exit", (code) => code === 0 || reject(new Error(`${layer} exited ${code}`)))
  })

const main = async (): Promise<Report> => {
  const opts = options()
  const rows = opts.number("rows", 200_000, 3_000)
  const pageSize = opts.number("page", 1_000, 500)
  const rounds = opts.number("rounds", 5, 1)
  const server = await startServer({ rows, delayMillis: 0 })
  const micros = new Map<Layer, Array<number>>(layers.map((layer) => [layer.key, []]))
  try {
    for (let round = 0; round < rounds; round++) {
      for (const layer of rotate(layers, round)) {
        micros.get(layer.key)?.push(await runChild(layer.key, server.baseUrl, pageSize))
      }
    }
  } finally {
    server.stop()
  }
  const of = (key: Layer) => median(micros.get(key) ?? [])
  const b = of("B")
  const lines = layers.map((layer, i) => {
    const before = layers[i - 1]
    // each layer adds to the one before it, unless it names another
    const over = "over" in layer ? layer.over : before?.key
    const adds = layer.key === "B" || over === undefined ? "" : (of(layer.key) - of(over)).toFixed(2)
    return `| ${layer.key} | ${layer.label} | ${of(layer.key).toFixed(2)} | ${adds} | ${
      formatRatio(of(layer.key) / b)
    } |`
  })
  return {
    title: "rows() by layers",
    details: [
      `### rows() by layers: ${
        rows.toLocaleString("en-US")
      } rows, page ${pageSize}, CPU a row, median of ${rounds} rounds`,
      "",
      "| Layer | What it runs | CPU µs a row | adds | vs B |",
      "|---|---|---:|---:|---:|",
      ...lines
    ].join("\n"),
    findings: [{
      figure: "CPU a row, `rows()` at concurrency 1 / B, by layers",
      measured: `${formatRatio(of("A") / b)}x; the layers below it ${
        (["L0", "L1", "L2", "L3"] as const).map((key) => `${key} ${formatRatio(of(key) / b)}x`).join(", ")
      }; \`rows()\` less L3 ${(of("A") - of("L3")).toFixed(2)} µs a row; \`query()\` page by page ${
        formatRatio(of("Q") / b)
      }x, less L2 ${(of("Q") - of("L2")).toFixed(2)} µs a row`,
      goal: "<= 1.3x",
      met: of("A") / b <= 1.3
    }]
  }
}

if (process.argv[2] === "--child") {
  const [layer, baseUrl, pageSize] = process.argv.slice(3)
  child(layer as Layer, baseUrl ?? "", Number(pageSize)).then(
    (micros) => process.send?.(micros, () => process.exit(0)),
    (error) => {
      console.error(error)
      process.exit(1)
    }
  )
} else {
  main().then(finish, failed)
}
