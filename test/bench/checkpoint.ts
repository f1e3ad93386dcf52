/**
 * Figure 5, checkpoints: a scan of 1,000,000 rows under `dedupe: "exact"`, judged by the engine
 * alone (no HTTP: the pages are given), as `rows` runs it (no journal) and as `pages` runs it (a
 * journal of the ids, and a checkpoint taken after every page); then the checkpoint at its end:
 * the size of its JSON, and the time to write it, read it back and rebuild the id set from it;
 * the same for the checkpoints a scan writes every page whatever the table's size (its sink holding
 * the ids) and for those of a short scan. Last, `rows` and `pages` in turns over HTTP, against the
 * emulator in this process.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Either, Stream } from "effect"
import { CheckpointImpl, fromJson, toJson, withoutIds } from "../../src/internal/scan/checkpoint.js"
import * as Engine from "../../src/internal/scan/engine.js"
import { MicroappClient } from "../../src/MicroappClient.js"
import { MicroappServer } from "../../src/testing/index.js"
import { failed, finish, formatInt, median, options, type Report, rotate } from "./common.js"
import { rowId } from "./table.js"

/** Milliseconds to read `count` rows through `rows` and through `pages`, in turns, over HTTP. */
const overHttp = (count: number, rounds: number) => {
  const microAppID = "64d0000000000000000000aa"
  const table = {
    microAppID,
    name: "Numbers",
    fields: [{ label: "N", fieldID: "f_n", kind: "integer" as const }],
    sortFields: ["N"],
    rows: Array.from({ length: count }, (_, i) => ({ _id: rowId(i), N: i }))
  }
  const program = Effect.gen(function*() {
    const client = yield* MicroappClient
    const times = { rows: new Array<number>(), pages: new Array<number>() }
    const modes = ["rows", "pages"] as const
    // the first round warms the JIT up
    for (let round = 0; round <= rounds; round++) {
      for (const mode of rotate(modes, round)) {
        const scan = yield* client.scan({ microAppID })
        const start = performance.now()
        const read = mode === "rows"
          ? yield* Stream.runCount(scan.rows)
          : yield* Stream.runFold(scan.pages, 0, (sum, page) => sum + page.rows.length)
        if (read !== count) throw new Error(`${mode} read ${read} rows of ${count}`)
        if (round > 0) times[mode].push(performance.now() - start)
      }
    }
    return { rows: median(times.rows), pages: median(times.pages) }
  })
  return Effect.runPromise(
    program.pipe(
      Effect.provide(MicroappServer.layerWithClient({ tables: [table] }, { retry: false })),
      Effect.provide(NodeHttpClient.layerUndici),
      Effect.scoped
    )
  )
}

const main = async (): Promise<Report> => {
  const opts = options()
  const rows = opts.number("rows", 1_000_000, 20_000)
  const httpRows = opts.number("http-rows", 100_000, 2_000)
  const pageSize = opts.number("page", 1_000, 1_000)
  const rounds = opts.number("rounds", 5, 1)
  const table = Array.from({ length: rows }, (_, i) => ({ _id: rowId(i) }))

  /** The whole table through the engine, a window at a time, as `rows` (false) or `pages` (true) drives it. */
  const scan = (dedupe: "exact" | "recent", checkpoints: boolean, rowsOf = table) => {
    const config = { pageSize, overlap: 10, onInconsistent: "fail", dedupe } as const
    const state = Engine.initial(config, checkpoints)
    const start = performance.now()
    for (;;) {
      const window = Engine.plan(state, false)
      const verdict = Engine.judge(state, window, rowsOf.slice(window.start, window.start + window.limit), 1)
      if (checkpoints) Engine.stateOf(state)
      if (verdict._tag !== "Continue") break
    }
    const millis = performance.now() - start
    if (state.counters.emitted !== rowsOf.length || !state.counters.complete) {
      throw new Error("the engine did not read the table")
    }
    return { config, state, millis }
  }

  const modes = [false, true]
  const scanMillis = new Map<boolean, Array<number>>(modes.map((mode) => [mode, []]))
  for (let round = 0; round < rounds; round++) {
    for (const mode of rotate(modes, round)) scanMillis.get(mode)?.push(scan("exact", mode).millis)
  }
  const nanosPerRow = (mode: boolean) => median(scanMillis.get(mode) ?? []) * 1e6 / rows
  const journalCost = nanosPerRow(true) - nanosPerRow(false)

  /** The median over the rounds of the time `run` takes, in ms; `repeat`: runs a round, for a time too short to see once. */
  const timed = <A>(run: () => A, repeat = 1) => {
    const times: Array<number> = []
    let result: A = run()
    for (let round = 0; round < rounds; round++) {
      const start = performance.now()
      for (let i = 0; i < repeat; i++) result = run()
      times.push((performance.now() - start) / repeat)
    }
    return { result, millis: median(times) }
  }

  const checkpointOf = (dedupe: "exact" | "recent", length = rows) => {
    const { config, state } = scan(dedupe, true, table.slice(0, length))
    const query = { microAppID: "64d000000000000000000001", filters: [], sort: [], ...config }
    state.counters.rows = length
    return { config, checkpoint: new CheckpointImpl(query, Engine.stateOf(state)) }
  }
  const { checkpoint, config } = checkpointOf("exact")
  const written = timed(() => toJson(checkpoint))
  const bytes = new TextEncoder().encode(written.result).length
  const read = timed(() => Effect.runSync(fromJson(written.result)))
  const back = read.result
  if (!(back instanceof CheckpointImpl) || back.summary.rows !== rows) {
    throw new Error("the checkpoint did not read back")
  }
  const resumed = timed(() => Either.getOrThrow(Engine.resume(config, back.state)))
  if (resumed.result.seen.size() !== rows) throw new Error("the id set was not rebuilt")
  const recentBytes = toJson(checkpointOf("recent").checkpoint).length
  /** Microseconds to write `small`, read it back and resume from it, each, as a scan does after a page. */
  const roundTrip = (small: CheckpointImpl) => {
    const text = toJson(small)
    const repeat = 2_000
    const write = timed(() => toJson(small), repeat)
    const read = timed(() => Effect.runSync(fromJson(text)), repeat)
    if (!(read.result instanceof CheckpointImpl)) throw new Error("the checkpoint did not read back")
    const state = read.result.state
    const resume = state.seen._tag === "Held"
      ? undefined
      : timed(() => Either.getOrThrow(Engine.resume(config, state, true)), repeat)
    const micros = (figure: { readonly millis: number } | undefined) => (figure?.millis ?? NaN) * 1000
    return { bytes: text.length, write: micros(write), read: micros(read), resume: micros(resume) }
  }
  const held = roundTrip(withoutIds(checkpoint) as CheckpointImpl)
  const short = roundTrip(checkpointOf("exact", pageSize).checkpoint)
  const http = await overHttp(httpRows, rounds)

  const perRow = bytes / rows
  const details = [
    `### Checkpoints of a ${formatInt(rows)}-row scan, page size ${formatInt(pageSize)}, median of ${rounds} rounds`,
    "",
    "| Figure | Measured |",
    "|---|---:|",
    `| JSON size, \`dedupe: "exact"\` | ${formatInt(bytes)} bytes (${perRow.toFixed(2)} bytes a row) |`,
    `| JSON size, \`dedupe: "recent"\` | ${formatInt(recentBytes)} bytes |`,
    `| \`Checkpoint.toJson\` | ${written.millis.toFixed(0)} ms |`,
    `| \`Checkpoint.fromJson\` (checks and checksum included) | ${read.millis.toFixed(0)} ms |`,
    `| Resume: the id set rebuilt from it | ${resumed.millis.toFixed(0)} ms |`,
    `| Its sink holding the ids (\`withoutIds\`, ${held.bytes} bytes): written / read back | ${
      held.write.toFixed(1)
    } / ${held.read.toFixed(1)} µs |`,
    `| A ${formatInt(pageSize)}-row scan's checkpoint (${
      formatInt(short.bytes)
    } bytes): written / read back / resumed from | ${short.write.toFixed(1)} / ${short.read.toFixed(1)} / ${
      short.resume.toFixed(1)
    } µs |`,
    `| Engine alone, as \`rows\` drives it | ${nanosPerRow(false).toFixed(0)} ns a row |`,
    `| Engine alone, as \`pages\` drives it (journal, a checkpoint every page) | ${
      nanosPerRow(true).toFixed(0)
    } ns a row |`,
    `| Over HTTP, ${formatInt(httpRows)} rows, default options: \`rows\` | ${http.rows.toFixed(0)} ms |`,
    `| Over HTTP, same: \`pages\`, a checkpoint every page | ${http.pages.toFixed(0)} ms |`
  ].join("\n")
  return {
    title: "checkpoint",
    findings: [
      {
        figure: `Checkpoint of a ${formatInt(rows)}-row exact scan`,
        measured: `${(bytes / 1e6).toFixed(1)} MB, ${perRow.toFixed(2)} bytes a row`,
        goal: "at most 20 bytes a row",
        met: perRow <= 20
      },
      {
        figure: `Checkpoint write / read / resume, ${formatInt(rows)} rows`,
        measured: `${written.millis.toFixed(0)} / ${read.millis.toFixed(0)} / ${resumed.millis.toFixed(0)} ms`,
        goal: "",
        met: undefined
      },
      {
        figure: `Checkpoint write / read, sink-held (any table); write / read / resume, a ${
          formatInt(pageSize)
        }-row scan`,
        measured: `${held.write.toFixed(1)} / ${held.read.toFixed(1)} µs; ${short.write.toFixed(1)} / ${
          short.read.toFixed(1)
        } / ${short.resume.toFixed(1)} µs`,
        goal: "",
        met: undefined
      },
      {
        figure: "What `pages` pays for its checkpoints",
        measured: `engine alone ${journalCost.toFixed(0)} ns a row; over HTTP, ${
          formatInt(httpRows)
        } rows: pages/rows time ${(http.pages / http.rows).toFixed(2)} (\`rows\` keeps nothing for checkpoints)`,
        goal: "",
        met: undefined
      }
    ],
    details
  }
}

main().then(finish, failed)
