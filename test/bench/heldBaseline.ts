/**
 * A change pass over 1,000,000 rows whose baseline a sink holds: `lookup` and `unseen` answer from
 * a process of their own (standing in for a database), so that the pass's heap holds the pages in
 * flight and its exact set of ids seen, never the baseline. Against the same pass with the baseline
 * in the pass's heap (`Baseline.fromMap`). Each pass runs in a process of its own; its peak heap is
 * sampled, its peak RSS read from the kernel.
 *
 * Modes (`--mode`): none, the runner; `pass-sink` and `pass-heap`, a pass; `holder`, the baseline's process.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect, Layer, ManagedRuntime, Option, Redacted, Stream } from "effect"
import { type ChildProcess, fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Changes, MicroappClient } from "../../src/index.js"
import { demoCredentials } from "../../src/testing/index.js"
import {
  failed,
  finish,
  formatInt,
  formatRatio,
  mb,
  options,
  peakRss,
  replyToParent,
  type Report,
  startServer
} from "./common.js"
import { serialisedRows } from "./table.js"

const self = fileURLToPath(import.meta.url)
const microAppID = "64d000000000000000000001"

/** What a pass process reports. */
interface PassRun {
  readonly millis: number
  readonly peakHeap: number
  readonly peakRss: number
  readonly inserted: number
  readonly updated: number
  readonly unchanged: number
  readonly deleted: number
}

type Ask = { readonly seq: number; readonly lookup: ReadonlyArray<string> } | {
  readonly seq: number
  readonly from: number
}
type Answer = { readonly seq: number; readonly found: ReadonlyArray<readonly [string, string]> }

/** The previous pass: the table's fingerprints, every third row's changed since. */
const fingerprints = (rows: number): Map<string, string> => {
  const map = new Map<string, string>()
  serialisedRows(rows).forEach((text, i) => {
    const row = JSON.parse(text) as { readonly _id: string }
    map.set(row._id, i % 3 === 0 ? "0000000000000000" : Changes.fingerprint(row))
  })
  return map
}

/** The baseline's process: answers lookups, and the ids from an offset on, 10,000 at a time. */
const holder = (rows: number) => {
  const map = fingerprints(rows)
  const ids = Array.from(map.keys())
  process.on("message", (ask: Ask) => {
    const found: Array<readonly [string, string]> = []
    if ("lookup" in ask) {
      for (const id of ask.lookup) {
        const fingerprint = map.get(id)
        if (fingerprint !== undefined) found.push([id, fingerprint])
      }
    } else {
      for (const id of ids.slice(ask.from, ask.from + 10_000)) found.push([id, map.get(id) ?? ""])
    }
    process.send?.({ seq: ask.seq, found } satisfies Answer)
  })
  process.send?.("ready")
  process.on("disconnect", () => process.exit(0))
}

/** A baseline answered by the holder process over IPC. */
const remoteBaseline = (child: ChildProcess): Changes.Baseline => {
  const waiting = new Map<number, (found: Answer["found"]) => void>()
  let seq = 0
  child.on("message", (answer: Answer | "ready") => {
    if (answer === "ready") return
    waiting.get(answer.seq)?.(answer.found)
    waiting.delete(answer.seq)
  })
  const ask = (question: Omit<Ask, "seq"> & ({ lookup: ReadonlyArray<string> } | { from: number })) =>
    Effect.async<Answer["found"]>((resume) => {
      const at = ++seq
      waiting.set(at, (found) => resume(Effect.succeed(found)))
      child.send({ ...question, seq: at })
    })
  return {
    lookup: (ids) => Effect.map(ask({ lookup: ids }), (found) => new Map(found)),
    unseen: (seen) =>
      Stream.paginateEffect(
        0,
        (from) =>
          Effect.map(ask({ from }), (found) => [found, found.length === 0 ? Option.none() : Option.some(from + 10_000)])
      ).pipe(
        Stream.flatMap((found) => Stream.fromIterable(found)),
        Stream.filter(([id]) => !seen(id)),
        Stream.map(([id, fingerprint]) => ({ id, fingerprint }))
      )
  }
}

const startHolder = (rows: number) =>
  new Promise<ChildProcess>((resolve, reject) => {
    const child = fork(self, ["--mode=holder", `--rows=${rows}`], {
      execArgv: [],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    child.once("error", reject)
    child.once("message", () => resolve(child))
  })

const pass = async (rows: number, baseUrl: string, sink: boolean): Promise<PassRun> => {
  const child = sink ? await startHolder(rows) : undefined
  const baseline = child === undefined ? Changes.Baseline.fromMap(fingerprints(rows)) : remoteBaseline(child)
  global.gc?.()
  let peakHeap = process.memoryUsage().heapUsed
  const sample = setInterval(() => (peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)), 20)
  const runtime = ManagedRuntime.make(
    MicroappClient.layer({
      baseUrl,
      authToken: Redacted.make(demoCredentials.authToken),
      userId: demoCredentials.userId
    }).pipe(Layer.provide(NodeHttpClient.layerUndici))
  )
  try {
    const start = performance.now()
    const summary = await runtime.runPromise(Effect.gen(function*() {
      const client = yield* MicroappClient
      const changes = yield* client.changes({ microAppID, baseline })
      yield* Stream.runDrain(changes.pages)
      return yield* changes.summary
    }))
    const millis = performance.now() - start
    peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)
    const { deleted, inserted, unchanged, updated } = summary
    return { millis, peakHeap, peakRss: peakRss(), inserted, updated, unchanged, deleted }
  } finally {
    clearInterval(sample)
    await runtime.dispose()
    child?.kill()
  }
}

const runPass = (mode: "pass-sink" | "pass-heap", rows: number, baseUrl: string) =>
  new Promise<PassRun>((resolve, reject) => {
    const child = fork(self, [`--mode=${mode}`, `--rows=${rows}`, `--base-url=${baseUrl}`], {
      execArgv: ["--expose-gc"],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    child.once("error", reject)
    child.once("message", (run: PassRun) => resolve(run))
    child.once("exit", (code) => code === 0 ? undefined : reject(new Error(`${mode} exited with ${code}`)))
  })

const main = async (): Promise<Report> => {
  const opts = options()
  const rows = opts.number("rows", 1_000_000, 5_000)
  const server = await startServer({ rows, delayMillis: 0 })
  try {
    const sink = await runPass("pass-sink", rows, server.baseUrl)
    const heap = await runPass("pass-heap", rows, server.baseUrl)
    for (const run of [sink, heap]) {
      if (run.inserted + run.updated + run.unchanged !== rows || run.deleted !== 0) {
        throw new Error(`a pass did not compare every row: ${JSON.stringify(run)}`)
      }
    }
    const line = (name: string, run: PassRun) =>
      `| ${name} | ${(run.millis / 1000).toFixed(1)} s | ${mb(run.peakHeap)} | ${mb(run.peakRss)} | ${
        formatInt(run.updated)
      } |`
    const details = [
      `### A change pass over ${formatInt(rows)} rows (every third updated), each pass a process of its own`,
      "",
      "| Baseline | Time | Peak heap | Peak RSS | Updated |",
      "|---|---:|---:|---:|---:|",
      line("held by a sink (another process, over IPC)", sink),
      line("in the pass's heap (`Baseline.fromMap`)", heap)
    ].join("\n")
    return {
      title: "heldBaseline",
      findings: [{
        figure: `Change pass over ${formatInt(rows)} rows, baseline held by a sink`,
        measured: `peak heap ${mb(sink.peakHeap)} (${
          formatRatio(sink.peakHeap / heap.peakHeap)
        }x the in-heap baseline's ${mb(heap.peakHeap)}), peak RSS ${mb(sink.peakRss)}; ${
          (sink.millis / 1000).toFixed(1)
        } s`,
        goal: "",
        met: undefined
      }],
      details
    }
  } finally {
    server.stop()
  }
}

const opts = options()
const mode = opts.text("mode")
const rows = opts.number("rows", 1_000_000, 5_000)
if (mode === "holder") {
  holder(rows)
} else if (mode === "pass-sink" || mode === "pass-heap") {
  replyToParent(pass(rows, opts.text("base-url") ?? "", mode === "pass-sink"))
} else {
  main().then(finish, failed)
}
