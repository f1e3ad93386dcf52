/**
 * `updateRows`: one outcome per update in input order, bounded concurrency, and ambiguous
 * failures resolved by reading the row back, against the emulator over real HTTP.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, DateTime, Deferred, Effect, Either, FastCheck, Predicate, Random, Schema, Stream } from "effect"
import { BulkUpdate, InvalidInput, Microapp, MicroappClient, Timeout } from "../src/index.js"
import { readsBack } from "../src/internal/bulkUpdate.js"
import { type FaultKind, MicroappServer, Projects, type RequestRecord } from "../src/testing/index.js"
import { applyUpdate } from "../src/testing/internal/table.js"
import { onTestClock, taskFields, taskID, tasksMicroAppID, tasksTable, withEmulator } from "./support.js"

const updatePath = "/api/updatemicroapprow"
const rowPath = "/api/microappdata/row"

const fast = { retry: { initialDelay: "5 millis", maxDelay: "20 millis", maxAttempts: 8 } } as const

type Input = MicroappClient.UpdateOptions | InvalidInput

const runUpdates = (updates: ReadonlyArray<Input>, options?: BulkUpdate.Options) =>
  Effect.flatMap(
    MicroappClient,
    (client) =>
      Effect.map(Stream.runCollect(client.updateRows(Stream.fromIterable(updates), options)), Chunk.toReadonlyArray)
  )

const retitle = (i: number, title = `task ${i} v2`): MicroappClient.UpdateOptions => ({
  rowID: taskID(i),
  rowData: { Title: title }
})

const rowIDOfRecord = (record: RequestRecord): string | undefined =>
  Predicate.isRecord(record.body) && typeof record.body.rowID === "string" ? record.body.rowID : undefined

/** The requests the emulator saw, as "update <rowID>" / "row <rowID>". */
const requestLog = Effect.flatMap(
  MicroappServer,
  (server) =>
    Effect.map(server.log.requests, (log) =>
      log.map((record) => {
        const name = record.path === updatePath ? "update" : record.path === rowPath ? "row" : record.path
        return `${name} ${rowIDOfRecord(record)}`
      }))
)

const appliedTo = (rowID: string) =>
  Effect.flatMap(MicroappServer, (server) => Effect.map(server.rows.appliedUpdates, (counts) => counts.get(rowID) ?? 0))

const titleOf = (rowID: string) =>
  Effect.flatMap(
    MicroappServer,
    (server) => Effect.map(server.rows.getRow(rowID), (row) => row._tag === "Some" ? row.value["Title"] : undefined)
  )

const invalidInput = (reason: string) => new InvalidInput({ method: "POST", path: updatePath, input: "line", reason })

/** Compile-time checks: `npm run check` fails if any of these lines type-checks. */
export const typeChecks = Effect.gen(function*() {
  const projects = yield* Microapp.bind(Projects)
  // @ts-expect-error a misspelt label is not a field
  projects.updateRows(Stream.succeed({ rowID: "x", rowData: { Nmae: "x" } as const }))
  // @ts-expect-error a value of the wrong type
  projects.updateRows(Stream.succeed({ rowID: "x", rowData: { Budget: "a lot" } as const }))
  return projects.updateRows(Stream.succeed({ rowID: "x", rowData: { Status: "Done", Budget: 5 } as const }))
})

describe("updateRows: outcomes", () => {
  it.effect("updated: one request each; outcomes in input order with their index, whatever order answers come in", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      // answers come back in a scrambled order
      yield* server.log.onRequest(() => Effect.flatMap(Random.nextIntBetween(0, 30), (ms) => Effect.sleep(ms)))
      const updates = Array.from({ length: 40 }, (_, i) => retitle(i))
      const outcomes = yield* onTestClock(runUpdates(updates))
      expect(outcomes).toEqual(
        updates.map((update, index) =>
          BulkUpdate.Outcome.Updated({
            index,
            rowID: update.rowID,
            sends: 1,
            retries: 0,
            throttled: false,
            verifiedByReadBack: false
          })
        )
      )
      expect(yield* requestLog).toHaveLength(40)
      const table = yield* server.rows.table(tasksMicroAppID)
      expect(table.slice(0, 40).map((row) => row["Title"])).toEqual(updates.map((update) => update.rowData["Title"]))
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(50)] }))))

  it.live("refused: a locked row (a 200 whose status is not success) and an unknown row (404); nothing read back or sent again", () =>
    Effect.gen(function*() {
      const missing = "ffffffffffffffffffffffff"
      const outcomes = yield* runUpdates([retitle(1), { rowID: missing, rowData: { Title: "x" } }])
      expect(outcomes.map((outcome) => outcome._tag)).toEqual(["Refused", "Refused"])
      expect(outcomes[0]).toMatchObject({
        index: 0,
        rowID: taskID(1),
        sends: 1,
        error: { _tag: "RequestRejected", serverStatus: "error" }
      })
      expect(outcomes[1]).toMatchObject({
        index: 1,
        rowID: missing,
        sends: 1,
        error: { _tag: "NotFound", status: 404 }
      })
      expect(yield* requestLog).toEqual([`update ${taskID(1)}`, `update ${missing}`])
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(3, [1])] }, fast))))

  it.live("failed: a 429 after the client's own retries is not applied, and not read back", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("http429", { path: updatePath, retryAfterSeconds: 0 })
      const [outcome] = yield* runUpdates([retitle(0)])
      expect(outcome).toMatchObject({ _tag: "Failed", sends: 1, error: { _tag: "RateLimited", status: 429 } })
      expect(yield* requestLog).toEqual([`update ${taskID(0)}`])
      expect(yield* appliedTo(taskID(0))).toBe(0)
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(3)] }, { retry: false }))))

  it.live("a 429 is retried by the client itself, with no read-back: the same send", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("http429", { path: updatePath, retryAfterSeconds: 0 })
      const [outcome] = yield* runUpdates([retitle(0)])
      expect(outcome).toMatchObject({ _tag: "Updated", sends: 1, verifiedByReadBack: false })
      expect(yield* requestLog).toEqual([`update ${taskID(0)}`, `update ${taskID(0)}`])
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(3)] }, fast))))

  it.effect("every request goes through the client's own limits: rateLimit.maxInFlight 1 holds 4 updates to one request", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ latency: "10 millis" })
      const outcomes = yield* onTestClock(
        runUpdates(Array.from({ length: 12 }, (_, i) => retitle(i)), { concurrency: 4 })
      )
      expect(outcomes.every((outcome) => outcome._tag === "Updated")).toBe(true)
      expect((yield* server.log.requests).map((record) => record.inFlight)).toEqual(outcomes.map(() => 1))
    }).pipe(
      Effect.provide(withEmulator({ tables: [tasksTable(12)] }, { retry: false, rateLimit: { maxInFlight: 1 } }))
    ))

  it.live("failed: sent at most maxSends times, each time after a read-back showed it not applied", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("http500", { path: updatePath, count: 3 })
      const [outcome] = yield* runUpdates([retitle(0)], { maxSends: 2 })
      expect(outcome).toMatchObject({ _tag: "Failed", sends: 2, error: { _tag: "ServerError", status: 500 } })
      const id = taskID(0)
      expect(yield* requestLog).toEqual([`update ${id}`, `row ${id}`, `update ${id}`, `row ${id}`])
      expect(yield* appliedTo(id)).toBe(0)
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(3)] }, { retry: false }))))

  it.live("unknown: sent, no answer, and the row cannot be read back; never sent again", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("http500AfterApply", { path: updatePath })
      yield* server.faults.inject("http503Html", { path: rowPath })
      const [outcome] = yield* runUpdates([retitle(0)])
      expect(outcome).toMatchObject({
        _tag: "Unknown",
        sends: 1,
        error: { _tag: "ServerError", status: 500 },
        readBackError: { _tag: "ServerError", status: 503 }
      })
      expect(yield* requestLog).toEqual([`update ${taskID(0)}`, `row ${taskID(0)}`])
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(3)] }, { retry: false }))))

  it.live("unknown: with readBack: false, an ambiguous failure is reported as it is, with no read", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("http500", { path: updatePath })
      const [outcome] = yield* runUpdates([retitle(0)], { readBack: false })
      expect(outcome).toMatchObject({
        _tag: "Unknown",
        sends: 1,
        error: { _tag: "ServerError" },
        readBackError: undefined
      })
      expect(yield* requestLog).toEqual([`update ${taskID(0)}`])
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(3)] }, fast))))

  it.live("invalid: refused before sending, with the reason; the other updates go on; nothing sent for them", () =>
    Effect.gen(function*() {
      const outcomes = yield* runUpdates([
        invalidInput("not valid JSON"),
        { rowID: " ", rowData: { Title: "x" } },
        { rowID: taskID(0), rowData: {} },
        { rowID: taskID(0), rowData: { _id: "x" } },
        { rowID: taskID(0), rowData: { Count: Number.NaN } },
        retitle(1)
      ])
      expect(outcomes.map((outcome) => outcome._tag)).toEqual([
        "Invalid",
        "Invalid",
        "Invalid",
        "Invalid",
        "Invalid",
        "Updated"
      ])
      expect(outcomes.map((outcome) => outcome.index)).toEqual([0, 1, 2, 3, 4, 5])
      expect(outcomes.map((outcome) => outcome.rowID)).toEqual([
        undefined,
        " ",
        taskID(0),
        taskID(0),
        taskID(0),
        taskID(1)
      ])
      const reasons = outcomes.flatMap((outcome) => outcome._tag === "Invalid" ? [outcome.error.message] : [])
      expect(reasons[0]).toBe("invalid line: not valid JSON")
      expect(reasons[1]).toContain("rowID")
      expect(reasons[2]).toContain("at least one field")
      expect(reasons[3]).toContain("system key")
      expect(reasons[4]).toContain("rowData.Count")
      expect(yield* requestLog).toEqual([`update ${taskID(1)}`])
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(3)] }))))

  it.live("bad options fail the stream with InvalidInput before anything is sent", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      for (const options of [{ concurrency: 0 }, { maxSends: 1.5 }]) {
        const error = yield* Effect.flip(Stream.runDrain(client.updateRows(Stream.make(retitle(0)), options)))
        expect(error).toMatchObject({ _tag: "InvalidInput", input: Object.keys(options)[0] })
      }
      expect(yield* requestLog).toEqual([])
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(3)] }))))

  it.live("summarize counts each outcome", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("dropAfterApply", { path: updatePath })
      const client = yield* MicroappClient
      const seen: Array<BulkUpdate.Outcome> = []
      const updates = [retitle(0), retitle(1), retitle(2), invalidInput("x"), retitle(3)]
      const summary = yield* client.updateRows(Stream.fromIterable(updates), { concurrency: 1 }).pipe(
        Stream.tap((outcome) => Effect.sync(() => seen.push(outcome))),
        Stream.run(BulkUpdate.summarize)
      )
      expect(seen).toHaveLength(5)
      expect(summary).toEqual({
        total: 5,
        updated: 3,
        verifiedByReadBack: 1,
        refused: 1,
        failed: 0,
        unknown: 0,
        invalid: 1,
        retries: 0,
        throttled: 0,
        elapsedMillis: expect.any(Number)
      })
      // addOutcome counts what the outcomes say; the run's time is the sink's
      expect(seen.reduce(BulkUpdate.addOutcome, BulkUpdate.emptySummary)).toEqual({ ...summary, elapsedMillis: 0 })
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(4, [2])] }))))

  it.effect("the summary counts retries, the updates a pause held back, and the run's time", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      // the first update is refused twice, and asks the client to pause 2 s each time
      yield* server.faults.inject("http429", { path: updatePath, retryAfterSeconds: 2, count: 2 })
      const outcomes: Array<BulkUpdate.Outcome> = []
      const summary = yield* onTestClock(
        client.updateRows(Stream.fromIterable([retitle(0), retitle(1), retitle(2)]), { concurrency: 1 }).pipe(
          Stream.tap((outcome) => Effect.sync(() => outcomes.push(outcome))),
          Stream.run(BulkUpdate.summarize)
        )
      )
      expect(outcomes.map((outcome) => outcome._tag === "Invalid" ? undefined : [outcome.retries, outcome.throttled]))
        .toEqual([[2, true], [0, false], [0, false]])
      expect(summary).toMatchObject({ total: 3, updated: 3, retries: 2, throttled: 1 })
      // two pauses of 2 s, the backoff under them
      expect(summary.elapsedMillis).toBeGreaterThanOrEqual(4_000)
      expect(summary.elapsedMillis).toBeLessThan(4_100)
      expect(yield* requestLog).toHaveLength(5)
    }).pipe(
      Effect.provide(
        withEmulator({ tables: [tasksTable(3)] }, { retry: { maxAttempts: 5, initialDelay: "1 millis" } })
      )
    ))
})

describe("updateRows: ambiguous failures are read back", () => {
  const afterApplying: ReadonlyArray<FaultKind> = ["http500AfterApply", "dropAfterApply", "malformedJson"]
  for (const kind of afterApplying) {
    it.live(`${kind}: applied, so updated after read-back, and sent once`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        yield* server.faults.inject(kind, { path: updatePath })
        const [outcome] = yield* runUpdates([retitle(0)])
        expect(outcome).toEqual(
          BulkUpdate.Outcome.Updated({
            index: 0,
            rowID: taskID(0),
            sends: 1,
            retries: 0,
            throttled: false,
            verifiedByReadBack: true
          })
        )
        expect(yield* requestLog).toEqual([`update ${taskID(0)}`, `row ${taskID(0)}`])
        expect(yield* appliedTo(taskID(0))).toBe(1)
        expect(yield* titleOf(taskID(0))).toBe("task 0 v2")
      }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(2)] }, { retry: false }))))
  }

  const beforeApplying: ReadonlyArray<FaultKind> = ["http500", "http503Html", "http408", "drop", "hang"]
  for (const kind of beforeApplying) {
    it.effect(`${kind}: not applied, as the read-back shows, so sent again, once`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        yield* server.faults.inject(kind, { path: updatePath })
        const [outcome] = yield* onTestClock(runUpdates([retitle(0)]))
        expect(outcome).toEqual(
          BulkUpdate.Outcome.Updated({
            index: 0,
            rowID: taskID(0),
            sends: 2,
            retries: 0,
            throttled: false,
            verifiedByReadBack: false
          })
        )
        const id = taskID(0)
        expect(yield* requestLog).toEqual([`update ${id}`, `row ${id}`, `update ${id}`])
        expect(yield* appliedTo(id)).toBe(1)
      }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(2)] }, { retry: false, timeout: "300 millis" }))))
  }

  it.live("a row that already held the values reads back as updated (the documented limit)", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("http500", { path: updatePath })
      const [outcome] = yield* runUpdates([retitle(0, "task 0")])
      expect(outcome).toMatchObject({ _tag: "Updated", sends: 1, verifiedByReadBack: true })
      expect(yield* appliedTo(taskID(0))).toBe(0)
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(2)] }, { retry: false }))))

  it.live("another writer that sets the same values before the read-back makes it read as updated (the documented limit)", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("http500", { path: updatePath })
      yield* server.log.onRequest((record) =>
        record.path === rowPath ? Effect.asVoid(server.rows.updateRow(taskID(0), { Title: "task 0 v2" })) : Effect.void
      )
      const [outcome] = yield* runUpdates([retitle(0)])
      expect(outcome).toMatchObject({ _tag: "Updated", sends: 1, verifiedByReadBack: true })
      expect(yield* requestLog).toEqual([`update ${taskID(0)}`, `row ${taskID(0)}`])
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(2)] }, { retry: false }))))

  it.live("a label the server ignores never reads back: through the untyped client it is sent again (the documented limit)", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.faults.inject("http500AfterApply", { path: updatePath })
      const [outcome] = yield* runUpdates([{ rowID: taskID(0), rowData: { Ttile: "typo" } }])
      expect(outcome).toMatchObject({ _tag: "Updated", sends: 2, verifiedByReadBack: false })
      expect(yield* requestLog).toEqual([`update ${taskID(0)}`, `row ${taskID(0)}`, `update ${taskID(0)}`])
      expect(yield* appliedTo(taskID(0))).toBe(2)
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(2)] }, { retry: false }))))

  it.effect.prop(
    "under 20% applied-then-failed updates and 10% transient faults, every row is updated exactly once",
    [FastCheck.integer({ min: 1, max: 2 ** 30 })],
    ([seed]) =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const count = 150
        yield* server.configure({
          faults: [
            { seed, rate: 0.2, kinds: ["http500AfterApply", "dropAfterApply"], paths: [updatePath] },
            {
              seed: seed + 1,
              rate: 0.1,
              kinds: ["http500", "http503Html", "http429", "http408", "drop", "malformedJson"],
              retryAfterSeconds: 0
            }
          ]
        })
        const updates = Array.from({ length: count }, (_, i): MicroappClient.UpdateOptions => ({
          rowID: taskID(i),
          rowData: { Title: `task ${i} v2`, Count: i * 10, Tags: ["bulk", i] }
        }))
        const outcomes = yield* onTestClock(runUpdates(updates))
        const log = yield* server.log.requests
        yield* server.configure({ faults: undefined })

        expect(outcomes.map((outcome) => [outcome._tag, outcome.index, outcome.rowID])).toEqual(
          updates.map((update, index) => ["Updated", index, update.rowID])
        )
        const counts = yield* server.rows.appliedUpdates
        expect(updates.map((update) => counts.get(update.rowID))).toEqual(updates.map(() => 1))
        const table = yield* server.rows.table(tasksMicroAppID)
        expect(table.map((row) => [row["Title"], row["Count"], row["Tags"]])).toEqual(
          updates.map((update) => [update.rowData["Title"], update.rowData["Count"], update.rowData["Tags"]])
        )

        const afterApply: ReadonlySet<FaultKind | undefined> = new Set([
          "http500AfterApply",
          "dropAfterApply",
          "malformedJson"
        ])
        for (const outcome of outcomes) {
          const mine = log.filter((record) => rowIDOfRecord(record) === outcome.rowID)
          const sent = mine.filter((record) => record.path === updatePath)
          // a second send only after a 429 (certainly not applied), or a read-back that answered
          for (const [k, send] of sent.entries()) {
            const next = sent[k + 1]
            if (next === undefined) continue
            const between = mine.filter((record) => record.seq > send.seq && record.seq < next.seq)
            expect(send.fault === "http429" || between.some((read) => read.path === rowPath && read.status === 200))
              .toBe(true)
          }
          const last = sent[sent.length - 1]
          expect(outcome).toMatchObject({
            sends: sent.filter((record) => record.fault !== "http429").length,
            verifiedByReadBack: afterApply.has(last?.fault)
          })
        }
        expect(outcomes.filter((outcome) => outcome._tag === "Updated" && outcome.verifiedByReadBack).length)
          .toBeGreaterThan(count / 10)
      }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(150)] }, fast))),
    { fastCheck: { numRuns: 3 } }
  )
})

describe("updateRows: concurrency and order", () => {
  for (const concurrency of [undefined, 2, 7]) {
    it.effect(`requests in flight never above the setting (${concurrency ?? "default 4"}), read-backs included`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        yield* server.configure({
          latency: "15 millis",
          faults: { seed: 3, rate: 0.3, kinds: ["http500AfterApply", "http500"], paths: [updatePath] }
        })
        const outcomes = yield* onTestClock(runUpdates(
          Array.from({ length: 40 }, (_, i) => retitle(i)),
          concurrency === undefined ? {} : { concurrency }
        ))
        expect(outcomes.every((outcome) => outcome._tag === "Updated")).toBe(true)
        const log = yield* server.log.requests
        expect(log.some((record) => record.path === rowPath)).toBe(true)
        expect(Math.max(...log.map((record) => record.inFlight))).toBe(concurrency ?? BulkUpdate.defaults.concurrency)
      }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(40)] }, { retry: false }))))
  }

  it.effect("updates of one row are applied in input order, even with several in flight", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.log.onRequest(() => Effect.flatMap(Random.nextIntBetween(0, 20), (ms) => Effect.sleep(ms)))
      const updates = Array.from({ length: 24 }, (_, i) => retitle(i % 3, `step ${i}`))
      const outcomes = yield* onTestClock(runUpdates(updates, { concurrency: 6 }))
      expect(outcomes.every((outcome) => outcome._tag === "Updated")).toBe(true)
      const log = yield* server.log.requests
      for (const row of [0, 1, 2]) {
        const titles = log.filter((record) => rowIDOfRecord(record) === taskID(row)).map((record) =>
          Predicate.isRecord(record.body) && Predicate.isRecord(record.body.rowData)
            ? record.body.rowData.Title
            : undefined
        )
        expect(titles).toEqual(
          updates.filter((update) => update.rowID === taskID(row)).map((update) => update.rowData["Title"])
        )
        expect(yield* titleOf(taskID(row))).toBe(`step ${21 + row}`)
      }
      // other rows did go at the same time
      expect(Math.max(...log.map((record) => record.inFlight))).toBeGreaterThan(1)
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(3)] }))))

  it.live("stopOnFailure: no update is taken after the first that is not updated", () =>
    Effect.gen(function*() {
      const updates = Array.from({ length: 10 }, (_, i) => retitle(i))
      const stopped = yield* runUpdates(updates, { concurrency: 1, stopOnFailure: true })
      expect(stopped.map((outcome) => outcome._tag)).toEqual(["Updated", "Updated", "Updated", "Refused"])
      expect(yield* requestLog).toHaveLength(4)
      const all = yield* runUpdates(updates, { concurrency: 1 })
      expect(all.map((outcome) => outcome._tag)).toEqual([
        ...Array(3).fill("Updated"),
        "Refused",
        ...Array(6).fill("Updated")
      ])
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(10, [3])] }))))

  it.effect("stopOnFailure with several in flight: those under way finish and are reported; the outcomes are a prefix", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.configure({ latency: "10 millis" })
      const updates = Array.from({ length: 30 }, (_, i) => retitle(i))
      const outcomes = yield* onTestClock(runUpdates(updates, { concurrency: 3, stopOnFailure: true }))
      expect(outcomes.map((outcome) => outcome.index)).toEqual(outcomes.map((_, i) => i))
      expect(outcomes[3]?._tag).toBe("Refused")
      expect(outcomes.length).toBeLessThan(10)
      const counts = yield* server.rows.appliedUpdates
      expect(updates.map((update) => counts.get(update.rowID) ?? 0)).toEqual(
        updates.map((_, i) => i < outcomes.length && i !== 3 ? 1 : 0)
      )
      expect(yield* requestLog).toHaveLength(outcomes.length)
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(30, [3])] }))))

  it.live("stopOnFailure with an input that waits for more: the stream ends once the updates under way are reported", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      // an input that never ends, as stdin may not
      const updates = Stream.concat(Stream.make(retitle(0), retitle(1)), Stream.never)
      const outcomes = yield* Stream.runCollect(client.updateRows(updates, { concurrency: 2, stopOnFailure: true }))
      expect(Chunk.toReadonlyArray(outcomes).map((outcome) => [outcome._tag, outcome.index])).toEqual([
        ["Updated", 0],
        ["Refused", 1]
      ])
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(3, [1])] }))))

  it.effect("stop: once it completes, no more updates start, those under way are reported, a pending read is dropped", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      yield* server.configure({ latency: "50 millis" })
      const stop = yield* Deferred.make<void>()
      yield* server.log.onRequest((record) => record.seq === 0 ? Deferred.succeed(stop, undefined) : Effect.void)
      // an input that never ends, as stdin may not
      const updates = Stream.concat(Stream.fromIterable(Array.from({ length: 10 }, (_, i) => retitle(i))), Stream.never)
      const outcomes = yield* onTestClock(
        Stream.runCollect(client.updateRows(updates, { concurrency: 2, stop: Deferred.await(stop) }))
      )
      expect(Chunk.toReadonlyArray(outcomes).map((outcome) => [outcome._tag, outcome.index])).toEqual([
        ["Updated", 0],
        ["Updated", 1]
      ])
      expect(yield* requestLog).toEqual([`update ${taskID(0)}`, `update ${taskID(1)}`])
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(10)] }))))

  it.live("the input is read as it is needed, not first in full", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      let taken = 0
      const updates = Stream.iterate(0, (i) => i + 1).pipe(
        Stream.tap(() => Effect.sync(() => taken++)),
        Stream.map((i) => retitle(i % 5))
      )
      const outcomes = yield* Stream.runCollect(Stream.take(client.updateRows(updates, { concurrency: 2 }), 6))
      expect(outcomes.length).toBe(6)
      // the six reported, those under way, and no more than the small buffers between
      expect(taken).toBeLessThan(20)
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(5)] }))))
})

describe("updateRows through Microapp.bind", () => {
  it.live("labels and values are checked and encoded before sending; read-back compares what was sent", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const projects = yield* Microapp.bind(Projects)
      const [first, second] = (yield* server.rows.table(Projects.microAppID)).filter((row) => row["isLocked"] !== true)
      const a = String(first?._id)
      const b = String(second?._id)
      yield* server.faults.inject("http500AfterApply", { path: updatePath })
      type ProjectUpdate = Microapp.UpdateOptions<typeof Projects>
      const typed: ProjectUpdate = { rowID: a, rowData: { Due: DateTime.unsafeMake("2031-07-14"), Status: "Done" } }
      // as from a file: the labels are only known at run time
      const untyped: unknown = { rowID: b, rowData: { Nmae: "x" } }
      const outcomes = yield* Stream.runCollect(projects.updateRows(Stream.make(typed, untyped as ProjectUpdate)))
      const [updated, invalid] = Chunk.toReadonlyArray(outcomes)
      expect(updated).toMatchObject({ _tag: "Updated", rowID: a, verifiedByReadBack: true })
      expect(invalid).toMatchObject({ _tag: "Invalid", index: 1, rowID: b })
      expect(invalid?._tag === "Invalid" && invalid.error.message).toContain("did you mean \"Name\"?")
      expect(yield* requestLog).toEqual([`update ${a}`, `row ${a}`])
      const row = yield* server.rows.getRow(a)
      expect(row._tag === "Some" && row.value).toMatchObject({ Due: "2031-07-14", Status: "Done" })
    }).pipe(Effect.provide(withEmulator({ demoRows: 20 }, { retry: false }))))
})

describe("the read-back comparison", () => {
  const Json: FastCheck.Arbitrary<unknown> = FastCheck.jsonValue()
  const reference = FastCheck.record({
    crossAppRowID: FastCheck.hexaString({ minLength: 24, maxLength: 24 }),
    value: FastCheck.record({ label: FastCheck.constant("Name"), value: FastCheck.string() })
  })
  const update = FastCheck.record({
    Title: FastCheck.option(FastCheck.string(), { nil: null }),
    Count: FastCheck.option(FastCheck.integer(), { nil: null }),
    Tags: Json,
    Owner: FastCheck.option(reference, { nil: null }),
    Site: FastCheck.option(FastCheck.record({ address: FastCheck.dictionary(FastCheck.string(), Json) }), { nil: null })
  }, { requiredKeys: [] })
  const row = FastCheck.record({
    _id: FastCheck.constant(taskID(0)),
    Title: FastCheck.string(),
    Count: FastCheck.integer(),
    Owner: reference
  }, { requiredKeys: ["_id"] })

  it.prop(
    "an update the emulator applied reads back as applied, after a trip through JSON",
    [update, row],
    ([rowData, before]) => {
      const after: unknown = JSON.parse(JSON.stringify(applyUpdate(taskFields, before, rowData)))
      expect(Predicate.isRecord(after) && readsBack({ rowID: taskID(0), rowData }, after)).toBe(true)
    }
  )

  it.prop(
    "an update with one value the row does not hold reads back as not applied",
    [update, row],
    ([rowData, before]) => {
      const changed = { ...rowData, Title: `${before.Title ?? ""}, changed` }
      expect(readsBack({ rowID: taskID(0), rowData: changed }, before)).toBe(false)
      expect(readsBack({ rowID: taskID(0), rowData: changed }, applyUpdate(taskFields, before, changed))).toBe(true)
    }
  )

  it("a cross-app value reads back by its target row, whatever the server shows for it", () => {
    const written = { crossAppRowID: taskID(9), value: { label: "Name", value: "Ada" } }
    const stored = {
      crossAppRowID: taskID(9),
      value: { label: "Name", value: "Ada Lovelace" },
      additionalValues: { p_email: { label: "Email", value: "ada@example.com" } }
    }
    expect(readsBack({ rowID: taskID(0), rowData: { Owner: written } }, { _id: taskID(0), Owner: stored })).toBe(true)
    expect(
      readsBack({ rowID: taskID(0), rowData: { Owner: written } }, {
        _id: taskID(0),
        Owner: { ...stored, crossAppRowID: taskID(8) }
      })
    )
      .toBe(false)
    expect(readsBack({ rowID: taskID(0), rowData: { Owner: null } }, { _id: taskID(0) })).toBe(true)
    expect(readsBack({ rowID: taskID(0), rowData: { Owner: null } }, { _id: taskID(0), Owner: stored })).toBe(false)
    expect(
      readsBack({ rowID: taskID(0), rowData: { Tags: [1, { a: 1, b: 2 }] } }, {
        _id: taskID(0),
        Tags: [1, { b: 2, a: 1 }]
      })
    )
      .toBe(true)
    expect(readsBack({ rowID: taskID(0), rowData: { Tags: [1, 2] } }, { _id: taskID(0), Tags: [2, 1] })).toBe(false)
    expect(readsBack({ rowID: taskID(0), rowData: { Count: 5 } }, { _id: taskID(0), Count: "5" })).toBe(false)
    expect(
      readsBack({ rowID: taskID(0), rowData: { Title: "x" }, userID: "u2" }, {
        _id: taskID(0),
        Title: "x",
        userID: "u1"
      })
    )
      .toBe(false)
    expect(
      readsBack({ rowID: taskID(0), rowData: { Title: "x" }, userID: "u2" }, {
        _id: taskID(0),
        Title: "x",
        userID: "u2"
      })
    )
      .toBe(true)
    expect(
      readsBack({ rowID: taskID(0), rowData: { Title: "x" }, embeddingRowID: taskID(7) }, {
        _id: taskID(0),
        Title: "x",
        embeddingRowID: taskID(6)
      })
    ).toBe(false)
  })
})

describe("the summary, a Schema", () => {
  const sent = {
    index: FastCheck.nat(),
    rowID: FastCheck.constant(taskID(0)),
    sends: FastCheck.integer({ min: 1, max: 20 }),
    retries: FastCheck.nat({ max: 50 }),
    throttled: FastCheck.boolean()
  }
  const error = new Timeout({ method: "POST", path: updatePath, timeoutMillis: 5 })
  const outcome: FastCheck.Arbitrary<BulkUpdate.Outcome> = FastCheck.oneof(
    FastCheck.record({ ...sent, verifiedByReadBack: FastCheck.boolean() }).map(BulkUpdate.Outcome.Updated),
    FastCheck.record(sent).map((fields) => BulkUpdate.Outcome.Refused({ ...fields, error })),
    FastCheck.record(sent).map((fields) => BulkUpdate.Outcome.Failed({ ...fields, error })),
    FastCheck.record(sent).map((fields) => BulkUpdate.Outcome.Unknown({ ...fields, error, readBackError: undefined })),
    FastCheck.nat().map((index) =>
      BulkUpdate.Outcome.Invalid({ index, rowID: undefined, error: new InvalidInput({ input: "rowID", reason: "x" }) })
    )
  )
  const decode = Schema.decodeUnknownEither(BulkUpdate.Summary)

  it.prop(
    "addOutcome counts each kind, the reads back that verified, the retries and the pauses of the outcomes sent; the summary reads back from its JSON",
    [FastCheck.array(outcome, { maxLength: 40 })],
    ([outcomes]) => {
      const summary = outcomes.reduce(BulkUpdate.addOutcome, BulkUpdate.emptySummary)
      const kind = (tag: BulkUpdate.Outcome["_tag"]) => outcomes.filter((outcome) => outcome._tag === tag).length
      const wasSent = outcomes.flatMap((outcome) => outcome._tag === "Invalid" ? [] : [outcome])
      expect(summary).toStrictEqual({
        total: outcomes.length,
        updated: kind("Updated"),
        verifiedByReadBack: outcomes.filter((outcome) => outcome._tag === "Updated" && outcome.verifiedByReadBack)
          .length,
        refused: kind("Refused"),
        failed: kind("Failed"),
        unknown: kind("Unknown"),
        invalid: kind("Invalid"),
        retries: wasSent.reduce((sum, outcome) => sum + outcome.retries, 0),
        throttled: wasSent.filter((outcome) => outcome.throttled).length,
        elapsedMillis: 0
      })
      expect(decode(JSON.parse(JSON.stringify(summary)))).toStrictEqual(Either.right(summary))
    }
  )

  it("a figure that is no count, or missing, is refused", () => {
    expect(Either.isRight(decode(BulkUpdate.emptySummary))).toBe(true)
    for (const figure of Object.keys(BulkUpdate.Summary.fields)) {
      for (const value of [-1, 0.5, "1", undefined]) {
        expect(Either.isLeft(decode({ ...BulkUpdate.emptySummary, [figure]: value })), `${figure}: ${value}`).toBe(true)
      }
    }
  })
})
