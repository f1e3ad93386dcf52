import { afterAll, describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Exit, FastCheck as FC, Fiber, ManagedRuntime, Schedule, Stream, TestClock } from "effect"
import { MicroappClient, type Row, type RowStream } from "../src/index.js"
import { MicroappServer } from "../src/testing/index.js"
import { awaitLog, bodiesTo, numbersTable, onTestClock, quiet, withEmulator } from "./support.js"

const numbers = "000000000000000000000n01"
const rowsPath = "/api/microappdata"

const ids = (rows: Chunk.Chunk<Row.Row> | ReadonlyArray<Row.Row>) => Array.from(rows, (row) => row._id)
const idOfN = (n: number) => numbersTable(numbers, n + 1).rows[n]?._id ?? ""

/** Every row of the numbers table, as the stream yields it, with the scan's summary. */
const scanAll = (options: Omit<MicroappClient.RowsOptions, "microAppID"> = {}) =>
  Effect.gen(function*() {
    const client = yield* MicroappClient
    const scan = yield* client.scan({ microAppID: numbers, ...options })
    const rows = yield* Stream.runCollect(scan.rows)
    return { rows: Chunk.toReadonlyArray(rows), summary: yield* scan.summary }
  })

/** Runs `effect` once, before the request with sequence number `seq` is answered. */
const beforeRequest = (seq: number, effect: Effect.Effect<unknown>) => atRequests({ [seq]: effect })

/** Runs each effect once, before the request with its sequence number is answered. */
const atRequests = (effects: Readonly<Record<number, Effect.Effect<unknown>>>) =>
  Effect.flatMap(
    MicroappServer,
    (server) => server.log.onRequest((record) => Effect.asVoid(effects[record.seq] ?? Effect.void))
  )

/** The window a rows request asked for, as numbers; undefined for a request without one. */
const windowOf = (body: unknown): { readonly skip: number; readonly limit: number } | undefined => {
  const window = (body as { searchFilter?: Array<{ skip: string; limit: number }> }).searchFilter?.[0]
  return window === undefined ? undefined : { skip: Number(window.skip), limit: window.limit }
}

/**
 * `effect`, once the server has answered a window holding rows `first` to `last` (0-based places):
 * windows in flight may reach the server in any order, so the request's number does not say it.
 */
const whenAnswered = (server: MicroappServer.Service, first: number, last: number, effect: Effect.Effect<unknown>) =>
  Effect.zipRight(
    Effect.repeat(server.log.requests, {
      until: (log) =>
        log.some((record) => {
          const window = record.path === rowsPath ? windowOf(record.body) : undefined
          return record.finishedAt !== undefined && window !== undefined &&
            window.skip <= first && window.skip + window.limit > last
        }),
      schedule: Schedule.spaced("1 millis")
    }),
    effect
  )

const removeRows = (server: MicroappServer.Service, from: number, count: number) =>
  Effect.forEach(Array.from({ length: count }, (_, i) => idOfN(from + i)), (id) => server.rows.removeRow(id), {
    discard: true
  })

const expectOnce = (rows: ReadonlyArray<Row.Row>) => expect(new Set(ids(rows)).size).toBe(rows.length)

describe("rows: the whole result, whatever the page size and server cap", () => {
  const scenario = FC.integer({ min: 1, max: 300 }).chain((pageSize) =>
    FC.record({
      pageSize: FC.constant(pageSize),
      size: FC.integer({ min: 0, max: Math.min(3000, pageSize * 60) }),
      clamp: FC.option(FC.integer({ min: 2, max: pageSize + 9 }), { nil: undefined }),
      filter: FC.constantFrom("none", "even", "odd"),
      sort: FC.constantFrom("natural", "asc", "desc"),
      concurrency: FC.integer({ min: 1, max: 4 })
    })
  ).filter(({ clamp, size }) => clamp === undefined || size / (clamp / 2) < 400)

  // one emulator for every run; not `layer()`, which in this line of @effect/vitest assigns its own
  // `it.effect` (test services excluded) onto vitest's `it`, for every later test of the module
  const emulator = ManagedRuntime.make(withEmulator({ tables: [numbersTable(numbers, 0)] }))
  afterAll(() => emulator.dispose())

  it.live.prop(
    "rows yields exactly the server's ordered result, once each",
    [scenario],
    ([s]) =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const table = numbersTable(numbers, s.size).rows
        yield* server.rows.setRows(numbers, table)
        yield* server.configure({ maxLimit: s.clamp })
        yield* server.log.clear
        const parity = s.filter === "none" ? undefined : s.filter
        const { rows, summary } = yield* scanAll({
          pageSize: s.pageSize,
          concurrency: s.concurrency,
          ...(parity === undefined ? {} : { filters: [{ fieldID: "f_parity", value: parity }] }),
          ...(s.sort === "natural" ? {} : { sort: { field: 1, order: s.sort === "asc" ? "asc" : "desc" } })
        })
        const matching = table.filter((row) => parity === undefined || row.Parity === parity)
        const expected = s.sort === "desc" ? [...matching].reverse() : matching
        expect(ids(rows)).toEqual(expected.map((row) => row._id))
        expect(summary).toMatchObject({ complete: true, duplicatesDropped: 0, rows: expected.length })
        // never the server's default cap: every request names its limit
        const bodies = yield* bodiesTo(rowsPath)
        expect(bodies.every((body) => JSON.stringify(body).includes("\"limit\""))).toBe(true)
      }).pipe(Effect.provide(emulator)),
    { fastCheck: { numRuns: 60 } }
  )
})

describe("rows: edge cases", () => {
  const cases = [
    { name: "an empty table takes one request", size: 0, pageSize: 100, requests: 1 },
    { name: "exactly one page", size: 100, pageSize: 100, requests: 2 },
    { name: "page size 1", size: 5, pageSize: 1, requests: 7 },
    { name: "a multiple of the page size", size: 300, pageSize: 100, requests: 4 },
    { name: "less than a page", size: 42, pageSize: 100, requests: 2 }
  ]
  for (const c of cases) {
    it.live(c.name, () =>
      Effect.gen(function*() {
        const { rows, summary } = yield* scanAll({ pageSize: c.pageSize, concurrency: 1 })
        expect(ids(rows)).toEqual(numbersTable(numbers, c.size).rows.map((row) => row._id))
        expect(summary.pages).toBe(c.requests)
        expect((yield* bodiesTo(rowsPath)).length).toBe(c.requests)
      }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, c.size)] }))))
  }

  it.live("a page larger than a few thousand rows can be folded (it is split into smaller chunks)", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const count = yield* client.rows({ microAppID: numbers, pageSize: 10_000 }).pipe(
        Stream.runFold(0, (n) => n + 1)
      )
      expect(count).toBe(12_000)
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 12_000)] }))))

  it.live("a filter matching nothing", () =>
    Effect.gen(function*() {
      const { rows, summary } = yield* scanAll({ filters: [{ fieldID: "f_parity", value: "neither" }] })
      expect(rows).toEqual([])
      expect(summary).toMatchObject({ complete: true, pages: 1 })
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 50)] }))))
})

describe("rows: a table that changes through ten scans", () => {
  const churning = (maxLimit: number | undefined) =>
    withEmulator({
      tables: [numbersTable(numbers, 1000)],
      churn: { microAppID: numbers, perSecond: 500 },
      ...(maxLimit === undefined ? {} : { maxLimit })
    })
  const caps = Effect.forEach(
    Array.from({ length: 10 }),
    () => Effect.map(scanAll({ pageSize: 50, concurrency: 4 }), ({ summary }) => summary.serverCap)
  )

  it.live("a server that clamps nothing: pages cut short by deleted rows name no cap", () =>
    Effect.gen(function*() {
      expect(yield* caps).toEqual(Array.from({ length: 10 }, () => undefined))
    }).pipe(Effect.provide(churning(undefined))))

  it.live("a server that clamps at 40: each scan names 40", () =>
    Effect.gen(function*() {
      expect(yield* caps).toEqual(Array.from({ length: 10 }, () => 40))
    }).pipe(Effect.provide(churning(40))))
})

describe("rows: a server that clamps limits", () => {
  it.live("goes past short pages, advancing by rows received, and records the cap", () =>
    Effect.gen(function*() {
      const { rows, summary } = yield* scanAll({ pageSize: 100 })
      expect(ids(rows)).toEqual(numbersTable(numbers, 1000).rows.map((row) => row._id))
      expect(summary.serverCap).toBe(70)
      const skips = (yield* bodiesTo(rowsPath)).map((body) => windowOf(body)?.skip)
      // 70 rows received at 0; then each window re-reads 11 rows (the anchor and 10 before it) and brings 59 new ones
      expect(skips.slice(0, 4)).toEqual([0, 59, 118, 177])
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 1000)], maxLimit: 70 }))))

  it.live("a cap no larger than the re-read rows is found out, not mistaken for the end", () =>
    Effect.gen(function*() {
      const { rows, summary } = yield* scanAll({ pageSize: 100, overlap: 10 })
      expect(ids(rows)).toEqual(numbersTable(numbers, 200).rows.map((row) => row._id))
      expect(summary.serverCap).toBe(8)
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 200)], maxLimit: 8 }))))

  it.live("a server that returns one row per request cannot be checked for shifts: ScanInconsistent", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const error = yield* Effect.flip(Stream.runDrain(client.rows({ microAppID: numbers, pageSize: 10 })))
      expect(error._tag).toBe("ScanInconsistent")
      const { rows } = yield* scanAll({ pageSize: 10, onInconsistent: "continue" })
      expect(ids(rows)).toEqual(numbersTable(numbers, 30).rows.map((row) => row._id))
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 30)], maxLimit: 1 }))))
})

describe("rows: requests for a 10,000-row scan, page size 1,000", () => {
  const cases = [
    { clamp: undefined, concurrency: 1, requests: 11, cap: undefined },
    { clamp: 500, concurrency: 1, requests: 22, cap: 500 },
    { clamp: 500, concurrency: 4, requests: 22, cap: 500 }
  ]
  for (const c of cases) {
    it.live(`server clamp ${c.clamp ?? "none"}, concurrency ${c.concurrency}: ${c.requests} requests`, () =>
      Effect.gen(function*() {
        const { rows, summary } = yield* scanAll({ pageSize: 1000, concurrency: c.concurrency })
        expect(rows).toHaveLength(10_000)
        expect(summary).toMatchObject({ pages: c.requests, serverCap: c.cap, complete: true })
      }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 10_000)], maxLimit: c.clamp }))))
  }
})

describe("rows: a table that changes during the scan", () => {
  const size = 1000
  const all = numbersTable(numbers, size).rows.map((row) => row._id)
  const drift = (options: MicroappServer.Options = {}) =>
    withEmulator({ tables: [numbersTable(numbers, size)], ...options })

  it.live("inserts before the position cause no duplicates and lose no row", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* beforeRequest(
        3,
        Effect.forEach(
          [0, 1, 2, 3, 4],
          (i) => server.rows.insertRow(numbers, { N: -1 - i, Parity: "new" }, { index: 0 })
        )
      )
      const { rows, summary } = yield* scanAll({ pageSize: 100, concurrency: 1 })
      expect(ids(rows)).toEqual(all)
      expect(summary).toMatchObject({
        realignments: 1,
        appearedBehind: 5,
        vanishedBehind: 0,
        duplicatesDropped: 0,
        complete: true
      })
    }).pipe(Effect.provide(drift())))

  it.live("deletes before the position, up to the overlap, lose no remaining row", () =>
    Effect.gen(function*() {
      yield* beforeRequest(3, removeRows(yield* MicroappServer, 150, 10))
      const { rows, summary } = yield* scanAll({ pageSize: 100, overlap: 10, concurrency: 1 })
      expect(ids(rows)).toEqual(all)
      expect(summary).toMatchObject({ realignments: 1, appearedBehind: 0, vanishedBehind: 10, duplicatesDropped: 0 })
    }).pipe(Effect.provide(drift())))

  it.live("deleting the anchor row itself realigns on an earlier one", () =>
    Effect.gen(function*() {
      // request 2 re-reads from 190: the last row emitted so far is 199
      yield* beforeRequest(2, removeRows(yield* MicroappServer, 199, 1))
      const { rows, summary } = yield* scanAll({ pageSize: 100, concurrency: 1 })
      expect(ids(rows)).toEqual(all)
      expect(summary).toMatchObject({ realignments: 1, appearedBehind: 0, vanishedBehind: 1, duplicatesDropped: 0 })
    }).pipe(Effect.provide(drift())))

  it.live("more deletes than the overlap are reported, never silent", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      yield* beforeRequest(3, removeRows(yield* MicroappServer, 100, 30))
      const error = yield* Effect.flip(Stream.runDrain(client.rows({ microAppID: numbers, pageSize: 100 })))
      expect(error).toMatchObject({ _tag: "ScanInconsistent", microAppID: numbers, position: 300 })
    }).pipe(Effect.provide(drift())))

  it.live("under onInconsistent: continue the same scan finishes, counts the event, and repeats nothing", () =>
    Effect.gen(function*() {
      yield* beforeRequest(3, removeRows(yield* MicroappServer, 100, 30))
      const { rows, summary } = yield* scanAll({ pageSize: 100, onInconsistent: "continue" })
      expectOnce(rows)
      expect(summary.inconsistencies).toBe(1)
      expect(summary.complete).toBe(true)
    }).pipe(Effect.provide(drift())))

  it.live("inserts past the position are read like any other row", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* beforeRequest(2, server.rows.insertRow(numbers, { N: 5000, Parity: "new" }))
      const { rows } = yield* scanAll({ pageSize: 100 })
      expectOnce(rows)
      expect(rows).toHaveLength(size + 1)
    }).pipe(Effect.provide(drift())))

  it.live("a burst that shifts the table for one request only: the speculative window is dropped and read again", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      // 200 rows inserted at the front, seen by request 6 alone: no re-read row is in its window
      const burst: Array<string> = []
      yield* atRequests({
        6: Effect.forEach(
          Array.from({ length: 200 }),
          (_, i) =>
            Effect.map(
              server.rows.insertRow(numbers, { N: -1 - i, Parity: "burst" }, { index: 0 }),
              (row) => burst.push(String(row._id))
            )
        ),
        7: Effect.forEach(burst, (id) => server.rows.removeRow(id))
      })
      const { rows, summary } = yield* scanAll({ pageSize: 50, concurrency: 8 })
      expect(ids(rows)).toEqual(all)
      expect(summary).toMatchObject({
        pagesDiscarded: 1,
        appearedBehind: 0,
        caughtBehind: 0,
        vanishedBehind: 0,
        duplicatesDropped: 0,
        realignments: 0,
        complete: true
      })
      expect(summary.concurrencyReached).toBe(8)
    }).pipe(Effect.provide(drift())))
})

describe("rows: duplicates dropped by the recent ids only", () => {
  it.live("a row that moves ahead by more than the window of recent ids is emitted again, and the default is not", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const table = numbersTable(numbers, 1000).rows
      const first = table[0]?._id
      // row 0 moves to the end of the natural order once the scan is at row 300
      const moveFirstToEnd = Effect.zipRight(
        server.log.clear,
        beforeRequest(3, server.rows.setRows(numbers, [...table.slice(1), ...table.slice(0, 1)]))
      )
      yield* moveFirstToEnd
      const recent = yield* scanAll({ pageSize: 100, concurrency: 1, dedupe: "recent" })
      expect(recent.rows).toHaveLength(1001)
      expect(ids(recent.rows).filter((id) => id === first)).toHaveLength(2)
      yield* server.rows.setRows(numbers, table)
      yield* moveFirstToEnd
      const exact = yield* scanAll({ pageSize: 100, concurrency: 1 })
      expect(ids(exact.rows)).toEqual(table.map((row) => row._id))
      expect(exact.summary).toMatchObject({ duplicatesDropped: 1, vanishedBehind: 1 })
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 1000)] }))))
})

describe("rows: a sorted table re-sorted while it is read", () => {
  // N = 10 x i, so that rows can be put between others; sort field 1 is N, ascending
  const size = 1000
  const table = {
    ...numbersTable(numbers, size),
    rows: numbersTable(numbers, size).rows.map((row) => ({ ...row, N: row.N * 10 }))
  }
  const all = table.rows.map((row) => row._id)
  const at = (n: number) => all[n] ?? ""
  const sorted = (options: Omit<MicroappClient.RowsOptions, "microAppID">) =>
    scanAll({ sort: { field: 1, order: "asc" }, ...options })
  const variants = [
    { name: "one window at a time, page 100", pageSize: 100, concurrency: 1, request: 4, apart: 3 },
    { name: "8 windows in flight, page 50", pageSize: 50, concurrency: 8, request: 9, apart: 8 }
  ]
  /**
   * The summary's drift, exactly as given one window at a time. With windows in flight, which
   * reach the server in any order, one may show the table as it was before a change that an
   * earlier window showed: the change is then counted both ways, and only the difference is exact.
   */
  const expectDrift = (summary: RowStream.ScanSummary, concurrency: number, appeared: number, vanished: number) => {
    expect(summary.appearedBehind - summary.vanishedBehind).toBe(appeared - vanished)
    if (concurrency === 1) {
      expect(summary).toMatchObject({ appearedBehind: appeared, vanishedBehind: vanished })
    } else {
      expect(summary.appearedBehind).toBeGreaterThanOrEqual(appeared)
      expect(summary.vanishedBehind).toBeGreaterThanOrEqual(vanished)
    }
  }

  // an emulator of its own for each test: requests of a scan that ended, abandoned by the client
  // but still on their way, must not reach the next test's server and take its request numbers
  const emulator = withEmulator({ tables: [table], latency: "2 millis" })

  for (const v of variants) {
    it.live(`${v.name}: a row of the first page moved near the end is emitted once, and counted`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        yield* atRequests({ [v.request]: server.rows.updateRow(at(5), { N: 9905 }) })
        const { rows, summary } = yield* sorted({ pageSize: v.pageSize, concurrency: v.concurrency })
        expect(ids(rows)).toEqual(all)
        expect(summary).toMatchObject({ duplicatesDropped: 1, caughtBehind: 0 })
        expectDrift(summary, v.concurrency, 0, 1)
      }).pipe(Effect.provide(emulator)))

    it.live(`${v.name}: a row near the end moved to the front was passed over, and is counted`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        yield* atRequests({ [v.request]: server.rows.updateRow(at(995), { N: -5 }) })
        const { rows, summary } = yield* sorted({ pageSize: v.pageSize, concurrency: v.concurrency })
        expect(ids(rows)).toEqual(all.filter((id) => id !== at(995)))
        expect(summary).toMatchObject({ duplicatesDropped: 0, caughtBehind: 0 })
        expectDrift(summary, v.concurrency, 1, 0)
      }).pipe(Effect.provide(emulator)))

    it.live(`${v.name}: inserts and deletes in the middle, behind and ahead of the scan, each counted once`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const ahead: Array<string> = []
        const insert = (ns: ReadonlyArray<number>, into: Array<string> = []) =>
          Effect.forEach(
            ns,
            (N) => Effect.map(server.rows.insertRow(numbers, { N, Parity: "new" }), (row) => into.push(String(row._id)))
          )
        const remove = (ns: ReadonlyArray<number>) => Effect.forEach(ns, (n) => server.rows.removeRow(at(n)))
        yield* atRequests({
          // behind: 3 rows in among rows 100 to 103, once a window holding those rows is
          // answered; then 2 rows out, once theirs is
          [v.request]: whenAnswered(server, 100, 103, insert([1005, 1015, 1025])),
          [v.request + v.apart]: whenAnswered(server, 20, 21, remove([20, 21])),
          // ahead: 4 rows in, 5 rows out
          [v.request + 1]: Effect.zipRight(insert([9501, 9502, 9503, 9504], ahead), remove([960, 961, 962, 963, 964]))
        })
        const { rows, summary } = yield* sorted({ pageSize: v.pageSize, concurrency: v.concurrency })
        const expected = [...all.slice(0, 951), ...ahead, ...all.slice(951, 960), ...all.slice(965)]
        expect(ids(rows)).toEqual(expected)
        expect(summary).toMatchObject({ caughtBehind: 0, duplicatesDropped: 0, rows: size + 4 - 5, complete: true })
        expectDrift(summary, v.concurrency, 3, 2)
      }).pipe(Effect.provide(emulator)))
  }
})

describe("rows: prefetch, concurrency and interruption", () => {
  it.effect("concurrency keeps that many requests in flight, and the rows stay in order", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const { rows } = yield* onTestClock(scanAll({ pageSize: 100, concurrency: 4 }))
      expect(ids(rows)).toEqual(numbersTable(numbers, 2000).rows.map((row) => row._id))
      // requests aborted past the end may linger on the server: count those the client waited for
      const answered = (yield* server.log.requests).filter((record) => record.outcome === "answered")
      const overlapping = answered.map((record) =>
        answered.filter((other) => other.at <= record.at && (other.finishedAt ?? Infinity) > record.at).length
      )
      expect(Math.max(...overlapping)).toBe(4)
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 2000)], latency: "30 millis" }))))

  it.effect("a slow consumer holds the scan to the prefetch bound", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      const fiber = yield* client.rows({ microAppID: numbers, pageSize: 100, prefetch: 2, concurrency: 1 }).pipe(
        Stream.take(1),
        Stream.tap(() => Effect.sleep("300 millis")),
        Stream.runDrain,
        Effect.fork
      )
      // the consumer sleeps on the test clock: the scan goes as far as the bound lets it, then waits
      yield* quiet
      const ahead = (yield* server.log.requests).length
      yield* Fiber.interrupt(fiber)
      // the page being consumed, two buffered, one waiting to be buffered, one in flight
      expect(ahead).toBeLessThanOrEqual(5)
      expect(ahead).toBeGreaterThanOrEqual(3)
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 5000)] }))))

  it.effect("take(n) stops fetching", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      const taken = yield* onTestClock(
        Stream.runCollect(Stream.take(client.rows({ microAppID: numbers, pageSize: 100 }), 150))
      )
      expect(Chunk.size(taken)).toBe(150)
      yield* quiet
      const after = (yield* server.log.requests).length
      // nothing left to wake: no retry, no prefetch
      yield* TestClock.adjust("1 minute")
      yield* quiet
      expect((yield* server.log.requests).length).toBe(after)
      expect(after).toBeLessThanOrEqual(4)
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 5000)] }))))

  it.effect("interrupting the stream aborts the request in flight", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      const fiber = yield* Effect.fork(Stream.runDrain(client.rows({ microAppID: numbers })))
      // held by the server's latency, which the test clock never lets pass
      yield* awaitLog((log) => log.length === 1)
      yield* Fiber.interrupt(fiber)
      // the client's request ends, and the server's with it, or nothing moves at all
      yield* quiet
      const [first] = yield* server.log.requests
      expect(first?.outcome).toBe("hung")
      expect(first?.finishedAt).toBeDefined()
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 100)], latency: "2 seconds" }))))

  it.effect("a timeout on the stream stops it with the stream's own error", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const exit = yield* client.rows({ microAppID: numbers }).pipe(
        Stream.timeoutFail(() => "too slow" as const, "100 millis"),
        Stream.runDrain,
        Effect.exit,
        onTestClock
      )
      expect(exit).toStrictEqual(Exit.fail("too slow"))
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 100)], latency: "2 seconds" }))))
})

describe("rows: adaptive concurrency, the default", () => {
  /** The most requests the server had in flight at once, among those answered. */
  const mostInFlight = Effect.map(Effect.flatMap(MicroappServer, (server) => server.log.requests), (log) => {
    const answered = log.filter((record) => record.outcome === "answered")
    return Math.max(
      ...answered.map((record) =>
        answered.filter((other) => other.at <= record.at && (other.finishedAt ?? Infinity) > record.at).length
      )
    )
  })
  const table = numbersTable(numbers, 4000)
  const expected = table.rows.map((row) => row._id)

  // on the test clock, the server is 20 ms away however busy the machine is
  it.effect("against a server 20 ms away, adds windows, up to maxConcurrency, and keeps the order", () =>
    Effect.gen(function*() {
      const { rows, summary } = yield* onTestClock(scanAll({ pageSize: 100, maxConcurrency: 6 }))
      expect(ids(rows)).toEqual(expected)
      expect(summary.concurrencyReached).toBeGreaterThan(2)
      expect(summary.concurrencyReached).toBeLessThanOrEqual(6)
      expect(yield* mostInFlight).toBeLessThanOrEqual(6)
    }).pipe(Effect.provide(withEmulator({ tables: [table], latency: "20 millis" }))))

  it.effect("never above the client's rateLimit.maxInFlight", () =>
    Effect.gen(function*() {
      const { rows, summary } = yield* onTestClock(scanAll({ pageSize: 100 }))
      expect(ids(rows)).toEqual(expected)
      expect(summary.concurrencyReached).toBe(2)
      expect(yield* mostInFlight).toBe(2)
    }).pipe(
      Effect.provide(
        withEmulator({ tables: [table], latency: "20 millis" }, { retry: false, rateLimit: { maxInFlight: 2 } })
      )
    ))
})

describe("rows: adaptive concurrency against a server that refuses load", () => {
  const table = numbersTable(numbers, 20_000)

  it.effect(
    "more than 2 requests in flight draw a 429 (Retry-After: 1): the exact table, no request in the pause, few refusals",
    () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const { rows, summary } = yield* onTestClock(scanAll({}))
        expect(ids(rows)).toEqual(table.rows.map((row) => row._id))
        expect(summary.complete).toBe(true)
        const log = yield* server.log.requests
        const refusals = log.filter((record) => record.status === 429)
        expect(refusals.length).toBeLessThanOrEqual(20)
        // each refusal was retried after its pause, and each retry was for a refusal
        expect(summary.retries).toBe(refusals.length)
        // no request sent once the client knew of a pause, until it ended: a request that passed the
        // gate before the 429 reached the client may still arrive some milliseconds later, as long as
        // the client and this server share one busy event loop; a client that ignored the pause
        // would send all through the second
        for (const refusal of refusals) {
          const from = (refusal.finishedAt ?? refusal.at) + 100
          const until = refusal.retryAfterUntil ?? from
          expect(log.filter((record) => record.at > from && record.at < until)).toEqual([])
        }
      }).pipe(
        Effect.provide(
          withEmulator({ tables: [table], latency: "5 millis", throttle: { maxInFlight: 2, retryAfterSeconds: 1 } }, {})
        )
      ),
    60_000
  )
})

describe("collect", () => {
  it.live("returns every row when the table fits", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const rows = yield* client.collect({ microAppID: numbers, pageSize: 40, max: 100 })
      expect(rows).toHaveLength(100)
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 100)] }))))

  it.live("fails with TooManyRows instead of returning a prefix", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const error = yield* Effect.flip(client.collect({ microAppID: numbers, pageSize: 40, max: 99 }))
      expect(error).toMatchObject({ _tag: "TooManyRows", max: 99, microAppID: numbers })
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 100)] }))))
})

describe("the scan summary", () => {
  it.live("each run of a scan's rows is a scan of its own: two at once keep their own state", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const scan = yield* client.scan({ microAppID: numbers, pageSize: 100, concurrency: 1 })
      const [first, second] = yield* Effect.all([Stream.runCollect(scan.rows), Stream.runCollect(scan.rows)], {
        concurrency: 2
      })
      const expected = numbersTable(numbers, 1000).rows.map((row) => row._id)
      expect(ids(first)).toEqual(expected)
      expect(ids(second)).toEqual(expected)
      expect(yield* scan.summary).toMatchObject({ rows: 1000, pages: 11, duplicatesDropped: 0, complete: true })
      expect((yield* bodiesTo(rowsPath)).length).toBe(22)
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 1000)], latency: "1 millis" }))))

  // on the test clock: each of the 11 pages, one at a time, takes the server's 10 ms and nothing else
  it.effect("is live while the rows are consumed, and its time is the time the pages took", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const scan = yield* client.scan({ microAppID: numbers, pageSize: 100, concurrency: 1 })
      const seen: Array<number> = []
      yield* onTestClock(scan.rows.pipe(
        Stream.grouped(250),
        Stream.runForEach(() => Effect.map(scan.summary, (summary) => seen.push(summary.rows)))
      ))
      expect(seen.length).toBe(4)
      expect(seen.every((rows, i) => rows >= (i + 1) * 250)).toBe(true)
      const summary = yield* scan.summary
      expect(summary).toMatchObject({ rows: 1000, pages: 11, complete: true, retries: 0, serverCap: undefined })
      expect(summary.elapsedMillis).toBe(11 * 10)
    }).pipe(Effect.provide(withEmulator({ tables: [numbersTable(numbers, 1000)], latency: "10 millis" }))))
})
