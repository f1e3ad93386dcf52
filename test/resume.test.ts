/**
 * Pages with their checkpoints, and scans resumed from them, over real HTTP to the emulator: the
 * rows after a checkpoint and only those, drift while a scan was stopped counted, a checkpoint of
 * another query refused before any request, and the scan's span.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Chunk, Effect, Option, Schema, Stream, type Tracer } from "effect"
import { Checkpoint, InvalidCheckpoint, Microapp, MicroappClient, type Row, type RowStream } from "../src/index.js"
import { checksum } from "../src/internal/checkpointCodec.js"
import { MicroappServer, Projects } from "../src/testing/index.js"
import { numbersTable, recordingTracer, withEmulator } from "./support.js"

const numbers = "000000000000000000000r01"
const size = 1000
const table = numbersTable(numbers, size).rows
const allIds = table.map((row) => row._id)

const ids = (rows: ReadonlyArray<Row.Row>) => rows.map((row) => row._id)

/** A scan of the numbers table: its pages and its summary. */
const pagesOf = (options: Omit<MicroappClient.RowsOptions, "microAppID"> = {}) =>
  Effect.gen(function*() {
    const client = yield* MicroappClient
    const scan = yield* client.scan({ microAppID: numbers, pageSize: 100, ...options })
    const pages = Chunk.toReadonlyArray(yield* Stream.runCollect(scan.pages))
    return { pages, summary: yield* scan.summary }
  })

/** The rows of a scan of the numbers table, and its summary. */
const rowsOf = (options: Omit<MicroappClient.RowsOptions, "microAppID"> = {}) =>
  Effect.gen(function*() {
    const client = yield* MicroappClient
    const scan = yield* client.scan({ microAppID: numbers, pageSize: 100, ...options })
    const rows = Chunk.toReadonlyArray(yield* Stream.runCollect(scan.rows))
    return { rows, summary: yield* scan.summary }
  })

/** The checkpoint of `page` through its JSON, as a pipeline stores it and reads it back. */
const stored = (page: RowStream.Page<unknown> | undefined) =>
  page === undefined ? Effect.dieMessage("no such page") : Checkpoint.fromJson(Checkpoint.toJson(page.checkpoint))

const reset = Effect.gen(function*() {
  const server = yield* MicroappServer
  yield* server.rows.setRows(numbers, table)
  yield* server.log.clear
})

const requestCount = Effect.map(Effect.flatMap(MicroappServer, (server) => server.log.requests), (log) => log.length)

layer(withEmulator({ tables: [numbersTable(numbers, size)] }), { excludeTestServices: true })((it) => {
  describe("pages", () => {
    for (const tuning of [{ concurrency: 1 }, { concurrency: 4, prefetch: 3 }] as const) {
      it.effect(`each page's checkpoint is the state after exactly its rows, whatever is fetched ahead (${JSON.stringify(tuning)})`, () =>
        Effect.gen(function*() {
          yield* reset
          const { pages, summary } = yield* pagesOf(tuning)
          const rows = pages.flatMap((page) => page.rows)
          expect(ids(rows)).toEqual(allIds)
          expect(ids((yield* rowsOf(tuning)).rows)).toEqual(allIds)
          let before = 0
          for (const page of pages) {
            before += page.rows.length
            expect(page.checkpoint.summary.rows).toBe(before)
          }
          const last = pages.at(-1)?.checkpoint.summary
          expect(last).toMatchObject({ rows: size, complete: true, exhaustive: true, resumed: 0 })
          expect(summary).toMatchObject({ rows: size, complete: true, exhaustive: true, resumed: 0 })
          // from every page, the rest of the table and nothing else
          before = 0
          for (const page of pages.slice(0, -1)) {
            before += page.rows.length
            const rest = yield* rowsOf({ ...tuning, resume: yield* stored(page) })
            expect(ids(rest.rows)).toEqual(allIds.slice(before))
            expect(rest.summary).toMatchObject({
              rows: size,
              complete: true,
              exhaustive: true,
              resumed: 1,
              duplicatesDropped: 0
            })
          }
        }))
    }

    it.effect("checkpointEvery: pages of several windows, never splitting one; the last page is complete, even empty", () =>
      Effect.gen(function*() {
        yield* reset
        const lengths = (pages: ReadonlyArray<RowStream.Page<Row.Row>>) => pages.map((page) => page.rows.length)
        const byPages = (yield* pagesOf({ concurrency: 1, checkpointEvery: { pages: 3 } })).pages
        expect(lengths(byPages)).toEqual([300, 300, 300, 100])
        const byRows = (yield* pagesOf({ concurrency: 1, checkpointEvery: { rows: 150 } })).pages
        expect(lengths(byRows)).toEqual([200, 200, 200, 200, 200, 0])
        expect(byRows.map((page) => page.checkpoint.summary.complete)).toEqual([
          false,
          false,
          false,
          false,
          false,
          true
        ])
        const either = (yield* pagesOf({ concurrency: 1, checkpointEvery: { pages: 2, rows: 50 } })).pages
        expect(lengths(either)).toEqual([...Array.from({ length: 10 }, () => 100), 0])
        // from a page of several windows, the rows after it
        const rest = yield* rowsOf({ resume: yield* stored(byPages[1]), checkpointEvery: { pages: 1 } })
        expect(ids(rest.rows)).toEqual(allIds.slice(600))
      }))

    it.effect("checkpointEvery must name a bounded number of pages or rows", () =>
      Effect.gen(function*() {
        const client = yield* MicroappClient
        const refused = (checkpointEvery: RowStream.CheckpointEvery) =>
          Effect.flip(client.scan({ microAppID: numbers, checkpointEvery }))
        expect(yield* refused({})).toMatchObject({
          _tag: "InvalidInput",
          input: "checkpointEvery",
          reason: "must name pages or rows"
        })
        expect(yield* refused({ pages: 0 })).toMatchObject({ input: "checkpointEvery.pages" })
        expect(yield* refused({ rows: 1.5 })).toMatchObject({ input: "checkpointEvery.rows" })
        expect(yield* refused({ rows: 1_000_001 })).toMatchObject({ input: "checkpointEvery.rows" })
      }))
  })

  describe("exhaustive", () => {
    it.effect("only when complete with nothing unproven: no row skipped as invalid, no inconsistency, every id kept", () =>
      Effect.gen(function*() {
        yield* reset
        const server = yield* MicroappServer
        const client = yield* MicroappClient
        const Small = Schema.Struct({ _id: Schema.String, N: Schema.Number.pipe(Schema.lessThan(500)) })
        const summaryOf = <A>(scan: RowStream.Scan<A>) => Effect.zipRight(Stream.runDrain(scan.rows), scan.summary)
        const options = { microAppID: numbers, pageSize: 100, concurrency: 1 } as const

        const clean = yield* summaryOf(yield* client.scan(options))
        expect(clean).toMatchObject({ complete: true, exhaustive: true, invalidRows: 0 })
        // rows skipped as invalid were not handed on; rows handed on raw were
        const skipped = yield* summaryOf(yield* client.withSchema(Small, { invalidRows: "skip" }).scan(options))
        expect(skipped).toMatchObject({ complete: true, exhaustive: false, invalidRows: 500, rows: 500 })
        const raw = yield* summaryOf(yield* client.withSchema(Small, { invalidRows: "raw" }).scan(options))
        expect(raw).toMatchObject({ complete: true, exhaustive: true, invalidRows: 500, rows: size })
        // a bounded id set proves nothing about rows that moved far
        const recent = yield* summaryOf(yield* client.scan({ ...options, dedupe: "recent" }))
        expect(recent).toMatchObject({ complete: true, exhaustive: false })
        // the only re-read row deleted before the second window: completeness unproven, and the scan went on
        // (found by its window, which re-reads row 99 alone: a request number could be another scan's)
        yield* server.log.onRequest((record) =>
          JSON.stringify(record.body).includes("\"skip\":\"99\"")
            ? Effect.asVoid(server.rows.removeRow(allIds[99] ?? ""))
            : Effect.void
        )
        const unproven = yield* summaryOf(yield* client.scan({ ...options, overlap: 0, onInconsistent: "continue" }))
        yield* server.log.clearHook
        expect(unproven).toMatchObject({ complete: true, exhaustive: false, inconsistencies: 1 })
      }))

    it.effect("a checkpoint of one reader resumes another reader of the same query", () =>
      Effect.gen(function*() {
        yield* reset
        const client = yield* MicroappClient
        const { pages } = yield* pagesOf()
        const Numbered = Schema.Struct({ _id: Schema.String, N: Schema.Number })
        const rest = yield* Stream.runCollect(
          client.withSchema(Numbered).rows({ microAppID: numbers, pageSize: 100, resume: yield* stored(pages[7]) })
        )
        expect(Array.from(rest, (row) => row.N)).toEqual(Array.from({ length: 200 }, (_, i) => 800 + i))
      }))
  })

  describe("the scan's span", () => {
    it.effect("covers the whole run, from before the first request to the last row, and ends with the summary", () =>
      Effect.gen(function*() {
        yield* reset
        const { spans, tracer: recording } = yield* recordingTracer
        const scanSpans = () => spans.filter((span) => span.name === "MicroappClient.scan")
        const client = yield* MicroappClient
        yield* Stream.runDrain(client.rows({ microAppID: numbers, pageSize: 100, concurrency: 2 })).pipe(
          Effect.withTracer(recording)
        )
        const [whole] = scanSpans()
        expect(scanSpans()).toHaveLength(1)
        if (whole === undefined) return
        const fetches = spans.filter((span) => span.name === "MicroappClient.fetchPage")
        expect(fetches.length).toBeGreaterThanOrEqual(11)
        const times = (span: Tracer.Span) =>
          span.status._tag === "Ended" ? { start: span.status.startTime, end: span.status.endTime } : undefined
        const outer = times(whole)
        expect(outer).toBeDefined()
        for (const fetch of fetches) {
          expect(Option.map(fetch.parent, (parent) => parent.spanId)).toEqual(Option.some(whole.spanId))
          const inner = times(fetch)
          if (outer === undefined || inner === undefined) return expect(inner).toBeDefined()
          expect(inner.start >= outer.start && inner.end <= outer.end).toBe(true)
        }
        expect(Object.fromEntries(whole.attributes)).toMatchObject({
          microAppID: numbers,
          rows: size,
          pages: 11,
          retries: 0,
          duplicatesDropped: 0,
          appearedBehind: 0,
          vanishedBehind: 0,
          complete: true,
          exhaustive: true,
          resumed: 0
        })

        // stopped early: the span ends then, with the figures so far
        spans.length = 0
        const taken = yield* Stream.runCollect(
          Stream.take(client.rows({ microAppID: numbers, pageSize: 100, concurrency: 1 }), 150)
        ).pipe(
          Effect.withTracer(recording)
        )
        expect(taken.length).toBe(150)
        const [stopped] = scanSpans()
        expect(stopped?.status._tag).toBe("Ended")
        expect(stopped?.attributes.get("complete")).toBe(false)
        expect(stopped?.attributes.get("exhaustive")).toBe(false)
        expect(Number(stopped?.attributes.get("rows"))).toBeGreaterThanOrEqual(150)
      }))
  })
})

describe("typed readers", () => {
  it.live("a typed reader resumes from its own checkpoint, and refuses one with other filters", () =>
    Effect.gen(function*() {
      const projects = yield* Microapp.bind(Projects)
      const options = { filters: { Status: "Open" }, sort: { field: "Name" }, pageSize: 50 } as const
      const all = yield* Stream.runCollect(projects.rows(options))
      const scan = yield* projects.scan(options)
      const pages = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(scan.pages, 2)))
      const resume = yield* stored(pages.at(-1))
      const taken = pages.flatMap((page) => page.rows)
      const rest = yield* Stream.runCollect(projects.rows({ ...options, resume }))
      expect([...taken, ...rest].map((row) => row._id)).toEqual(Array.from(all, (row) => row._id))
      expect(rest.length).toBeGreaterThan(0)
      const collected = yield* projects.collect({ ...options, resume, max: 10_000 })
      expect(collected.map((row) => row._id)).toEqual(Array.from(rest, (row) => row._id))
      const refused = yield* Effect.flip(projects.scan({ ...options, filters: { Status: "Done" }, resume }))
      expect(refused).toMatchObject({ _tag: "InvalidInput", input: "resume", problem: "another query" })
      expect(refused.reason).toContain(
        "filters (the checkpoint's: f_status = \"Open\"; this scan's: f_status = \"Done\")"
      )
      // a few hundred projects give pages before and after the checkpoint; the default 2,500 prove no more
    }).pipe(Effect.provide(withEmulator({ demoRows: 600 }))))
})

/**
 * Each on an emulator of its own: requests a finished scan abandoned (windows fetched ahead of
 * the end) can still reach a shared server, and take a fault or a count meant for this test.
 */
const alone = <A, E>(effect: Effect.Effect<A, E, MicroappClient | MicroappServer>) =>
  effect.pipe(
    Effect.provide(withEmulator({ tables: [numbersTable(numbers, size)] }, { retry: { initialDelay: "1 millis" } }))
  )

describe("resume", () => {
  it.live("a checkpoint of another query is refused before any request, naming what differs", () =>
    alone(Effect.gen(function*() {
      yield* reset
      const client = yield* MicroappClient
      const options = { pageSize: 100, filters: [{ fieldID: "f_parity", value: "even" }], sort: { field: 1 } } as const
      const { pages } = yield* pagesOf(options)
      const resume = yield* stored(pages[2])
      yield* reset
      const others: ReadonlyArray<readonly [Partial<MicroappClient.RowsOptions>, string]> = [
        [
          { microAppID: "000000000000000000000r02" },
          "microAppID (the checkpoint's: 000000000000000000000r01; this scan's: 000000000000000000000r02)"
        ],
        [{ filters: [] }, "filters (the checkpoint's: f_parity = \"even\"; this scan's: none)"],
        [{ filters: [{ fieldID: "f_parity", value: "odd" }] }, "filters"],
        [
          { sort: { field: 1, order: "desc" } },
          "sort (the checkpoint's: sort field 1 asc; this scan's: sort field 1 desc)"
        ],
        [{ sort: [] }, "sort"],
        [{ pageSize: 200 }, "pageSize (the checkpoint's: 100; this scan's: 200)"],
        [{ overlap: 5 }, "overlap"],
        [{ dedupe: "recent" }, "dedupe"]
      ]
      for (const [change, reason] of others) {
        const refused = yield* Effect.flip(client.scan({ microAppID: numbers, ...options, ...change, resume }))
        expect(refused).toMatchObject({ _tag: "InvalidInput", input: "resume", problem: "another query" })
        expect(refused.reason).toContain("the checkpoint is of another query")
        expect(refused.reason).toContain(reason)
        const viaRows = yield* Effect.flip(
          Stream.runDrain(client.rows({ microAppID: numbers, ...options, ...change, resume }))
        )
        expect(viaRows).toMatchObject({ _tag: "InvalidInput", input: "resume", problem: "another query" })
      }
      // a parsed JSON object is not a checkpoint
      const parsed = JSON.parse(Checkpoint.toJson(resume))
      const notOne = yield* Effect.flip(client.scan({ microAppID: numbers, ...options, resume: parsed }))
      expect(notOne).toMatchObject({ _tag: "InvalidInput", input: "resume", problem: "not a checkpoint" })
      expect(notOne.reason).toContain("must be a Checkpoint")
      expect(yield* requestCount).toBe(0)
      // what only tunes the scan may differ
      const rest = yield* rowsOf({
        ...options,
        concurrency: 3,
        maxConcurrency: 3,
        prefetch: 4,
        onInconsistent: "continue",
        timeout: "20 seconds",
        checkpointEvery: { rows: 1000 },
        resume
      })
      expect(ids(rest.rows)).toEqual(allIds.filter((_, i) => i % 2 === 0).slice(300))
      // so may the order of the filters (all must match, in any order), and a filter value's type (sent as a string)
      const two = [{ fieldID: "f_parity", value: "even" }, { fieldID: "f_n", value: 4 }] as const
      const [only] = (yield* pagesOf({ filters: two })).pages
      const reordered = yield* rowsOf({
        filters: [{ fieldID: "f_n", value: "4" }, two[0]],
        resume: yield* stored(only)
      })
      expect(reordered.summary).toMatchObject({ rows: 1, complete: true, resumed: 1 })
    })))

  it.live("a checkpoint whose ids no scan holds (one twice, its checksum made anew): InvalidCheckpoint, no request", () =>
    alone(Effect.gen(function*() {
      yield* reset
      const client = yield* MicroappClient
      const { pages } = yield* pagesOf()
      const { checksum: _, ...json } = JSON.parse(Checkpoint.toJson(yield* stored(pages[2]))) as {
        readonly checksum: string
        readonly seen: { readonly packed: string }
      }
      // the second id packed replaced by the first: as many ids as emitted, which `fromJson` counts
      const { packed } = json.seen
      const body = {
        ...json,
        seen: { ...json.seen, packed: packed.slice(0, 16) + packed.slice(0, 16) + packed.slice(32) }
      }
      const forged = yield* Checkpoint.fromJson(JSON.stringify({ ...body, checksum: checksum(body) }))
      yield* reset
      const scan = yield* client.scan({ microAppID: numbers, pageSize: 100, resume: forged })
      for (const run of [Stream.runDrain(scan.rows), Stream.runDrain(scan.pages)]) {
        const refused = yield* Effect.flip(run)
        expect(refused).toBeInstanceOf(InvalidCheckpoint)
        expect(refused).toMatchObject({ _tag: "InvalidInput", input: "resume", problem: "field" })
        expect(refused).not.toHaveProperty("method")
        expect(refused.message).toMatch(/^invalid resume: the checkpoint holds packed id [0-9a-f]{24} twice$/)
      }
      expect(yield* requestCount).toBe(0)
    })))

  it.live("resumed twice, with rows deleted, inserted and retried between: each row that stood once, the drift and retries counted for the whole scan", () =>
    alone(Effect.gen(function*() {
      yield* reset
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      const firstPages = (options: MicroappClient.RowsOptions, count: number) =>
        Effect.flatMap(client.scan(options), (scan) =>
          Effect.zip(
            Effect.map(Stream.runCollect(Stream.take(scan.pages, count)), Chunk.toReadonlyArray),
            scan.summary
          ))
      const options = { microAppID: numbers, pageSize: 100, concurrency: 1 } as const

      // the first run: 300 rows, then a crash
      yield* server.faults.inject("http503", { count: 1, path: "/api/microappdata", retryAfterSeconds: 0 })
      const [first, firstSummary] = yield* firstPages(options, 3)
      expect(firstSummary.retries).toBe(1)
      const afterFirst = yield* stored(first.at(-1))
      // while stopped: 5 rows far behind the position deleted, 2 ahead deleted, 4 appended
      const deletedBehind = allIds.slice(10, 15)
      const deletedAhead = [allIds[500] ?? "", allIds[600] ?? ""]
      for (const id of [...deletedBehind, ...deletedAhead]) yield* server.rows.removeRow(id)
      const appended = yield* Effect.forEach(
        [0, 1, 2, 3],
        (n) => server.rows.insertRow(numbers, { N: 2000 + n, Parity: "new" })
      )

      // the second run, from the first's checkpoint: 300 rows more, then a crash
      const [second] = yield* firstPages({ ...options, resume: afterFirst }, 3)
      const afterSecond = yield* stored(second.at(-1))
      // the first window after the gap re-reads the rows passed last, found 5 rows further back: 5 more rows in it
      expect(afterSecond.summary).toMatchObject({
        rows: 605,
        vanishedBehind: 5,
        appearedBehind: 0,
        resumed: 1,
        retries: 1
      })
      expect([...first, ...second].flatMap((page) => page.rows)).toHaveLength(605)
      // while stopped again: 3 rows inserted at the front, behind the position
      const insertedBehind = yield* Effect.forEach(
        [0, 1, 2],
        (n) => server.rows.insertRow(numbers, { N: -1 - n, Parity: "new" }, { index: 0 })
      )

      // the last run, to the end
      const last = yield* rowsOf({ resume: afterSecond, concurrency: 2 })
      const emitted = ids([...first, ...second].flatMap((page) => page.rows).concat(last.rows))
      const stood = allIds.filter((id) => !deletedBehind.includes(id) && !deletedAhead.includes(id))
      expect(new Set(emitted).size).toBe(emitted.length)
      const idsOf = (rows: ReadonlyArray<{ readonly _id?: unknown }>) => rows.map((row) => String(row._id))
      for (const id of [...stood, ...idsOf(appended)]) expect(emitted).toContain(id)
      for (const id of [...deletedAhead, ...idsOf(insertedBehind)]) expect(emitted).not.toContain(id)
      expect(emitted.length).toBe(size - 2 + 4)
      expect(last.summary).toMatchObject({
        rows: emitted.length,
        resumed: 2,
        retries: 1,
        vanishedBehind: 5,
        appearedBehind: 3,
        duplicatesDropped: 0,
        complete: true,
        // rows arrived behind the position: they could have been rows re-sorted there, unread
        exhaustive: false
      })
      expect(last.summary.elapsedMillis).toBeGreaterThanOrEqual(afterSecond.summary.elapsedMillis)
    })))

  it.live("a complete checkpoint: nothing emitted, no request sent, and the scan ends complete", () =>
    alone(Effect.gen(function*() {
      yield* reset
      const { pages } = yield* pagesOf()
      const done = yield* stored(pages.at(-1))
      expect(done.summary.complete).toBe(true)
      yield* reset
      const viaRows = yield* rowsOf({ resume: done })
      expect(viaRows.rows).toEqual([])
      expect(viaRows.summary).toMatchObject({ rows: size, complete: true, exhaustive: true, resumed: 1 })
      const viaPages = yield* pagesOf({ resume: done })
      expect(viaPages.pages).toEqual([])
      expect(viaPages.summary).toMatchObject({ complete: true, resumed: 1 })
      expect(yield* requestCount).toBe(0)
    })))

  it.live("collect takes resume too", () =>
    alone(Effect.gen(function*() {
      yield* reset
      const client = yield* MicroappClient
      const { pages } = yield* pagesOf()
      const resume = yield* stored(pages[4])
      const rest = yield* client.collect({ microAppID: numbers, pageSize: 100, resume, max: size })
      expect(ids(rest)).toEqual(allIds.slice(500))
    })))
})
