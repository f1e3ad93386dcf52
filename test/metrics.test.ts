/**
 * The client's metrics read back as an exporter sees them (`Metric.snapshot`, by name and tags),
 * after a scan and a bulk update under faults: they agree with the summaries and the server's log.
 * And the logs of a 429: the pause once, at warning level, and the delay a retry really waits.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Logger, LogLevel, Metric, MetricState, Schema, Stream } from "effect"
import { MicroappClient } from "../src/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { numbersTable, onTestClock, recordingTracer, tasksMicroAppID, tasksTable, withEmulator } from "./support.js"

const numbers = "6e0000000000000000000002"

/** The sum of the counters named `name` whose tags include `tags`. */
const counted = (name: string, tags: Readonly<Record<string, string>> = {}) =>
  Effect.map(Metric.snapshot, (pairs) => {
    let total = 0
    for (const pair of pairs) {
      if (pair.metricKey.name !== name) continue
      const have = new Map(pair.metricKey.tags.map((tag) => [tag.key, tag.value]))
      if (!Object.entries(tags).every(([key, value]) => have.get(key) === value)) continue
      if (MetricState.isCounterState(pair.metricState)) total += Number(pair.metricState.count)
      if (MetricState.isHistogramState(pair.metricState)) total += pair.metricState.count
    }
    return total
  })

/** How much each of `names` grows while `effect` runs. */
const growth = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  names: ReadonlyArray<readonly [string, Readonly<Record<string, string>>]>
) =>
  Effect.gen(function*() {
    const before = yield* Effect.forEach(names, ([name, tags]) => counted(name, tags))
    const result = yield* effect
    const after = yield* Effect.forEach(names, ([name, tags]) => counted(name, tags))
    return { result, grown: after.map((value, i) => value - (before[i] ?? 0)) }
  })

describe("metrics", () => {
  layer(
    withEmulator(
      {
        tables: [numbersTable(numbers, 900), tasksTable(60)],
        faults: { seed: 3, rate: 0.15, kinds: ["http500", "http503", "drop", "malformedJson"] }
      },
      { pageSize: 50, retry: { maxAttempts: 8, initialDelay: "1 millis", maxDelay: "5 millis" } }
    )
  )("under faults", (it) => {
    // each run on the test clock: a 503's Retry-After: 1 passes at once
    it.effect(
      "a scan under faults: rows, pages, retries, requests and attempts agree with its summary and the log",
      () =>
        Effect.gen(function*() {
          const client = yield* MicroappClient
          const server = yield* MicroappServer
          yield* server.log.clear
          const rowsPath = "/api/microappdata"
          const { grown, result: summary } = yield* growth(
            onTestClock(Effect.gen(function*() {
              const scan = yield* client.scan({ microAppID: numbers, concurrency: 2 })
              yield* Stream.runDrain(scan.rows)
              return yield* scan.summary
            })),
            [
              ["microapp_rows_emitted_total", { microapp_id: numbers }],
              ["microapp_pages_total", { microapp_id: numbers }],
              ["microapp_duplicates_dropped_total", { microapp_id: numbers }],
              ["microapp_retries_total", { endpoint: rowsPath }],
              ["microapp_requests_total", { endpoint: rowsPath, outcome: "success" }],
              ["http.client.request.duration", { "microapp.endpoint": rowsPath, "http.request.method": "POST" }]
            ]
          )
          const [rows, pages, duplicates, retries, calls, attempts] = grown
          const log = (yield* server.log.requests).filter((record) => record.path === rowsPath)
          expect(summary.complete).toBe(true)
          expect(rows).toBe(summary.rows)
          expect(rows).toBe(900)
          expect(pages).toBe(summary.pages)
          expect(duplicates).toBe(summary.duplicatesDropped)
          // the summary counts the retries of the pages it used; a window abandoned at the end may have retried too
          expect(retries).toBeGreaterThanOrEqual(summary.retries)
          expect(retries).toBeGreaterThan(0)
          // every attempt reached the server and was measured; every call succeeded in the end
          expect(attempts).toBe(log.length)
          expect((calls ?? 0) + (retries ?? 0)).toBe(log.length)
        }),
      20_000
    )

    it.effect("a bulk update under faults: one outcome counted per update, by kind", () =>
      Effect.gen(function*() {
        const client = yield* MicroappClient
        const rows = yield* onTestClock(client.collect({ microAppID: tasksMicroAppID, max: 100 }))
        const kinds = ["Updated", "Refused", "Failed", "Unknown", "Invalid"] as const
        const { grown, result: outcomes } = yield* growth(
          onTestClock(Stream.runCollect(
            client.updateRows(Stream.fromIterable(rows.map((row) => ({ rowID: row._id, rowData: { Title: "x" } }))), {
              concurrency: 4
            })
          )),
          kinds.map((kind) => ["microapp_bulk_outcomes_total", { kind }] as const)
        )
        const byKind = kinds.map((kind) => Array.from(outcomes).filter((outcome) => outcome._tag === kind).length)
        expect(grown).toEqual(byKind)
        expect(grown.reduce((a, b) => a + b, 0)).toBe(60)
      }))
  })

  it.layer(withEmulator({ demoRows: 20 }, { retry: { maxAttempts: 3, initialDelay: "10 millis" } }))((it) => {
    it.effect("a 429 with Retry-After: 2 pauses the client once, logged at warning, and the retry logs the 2 s it waits", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const client = yield* MicroappClient
        const lines: Array<{ level: string; message: string; annotations: Record<string, unknown> }> = []
        const capture = Logger.make(({ annotations, logLevel, message }) => {
          lines.push({
            level: logLevel.label,
            message: String(Array.isArray(message) ? message[0] : message),
            annotations: Object.fromEntries(annotations)
          })
        })
        yield* server.faults.inject("http429", { count: 1, retryAfterSeconds: 2 })
        const { grown } = yield* growth(
          onTestClock(client.query({ microAppID: projectsMicroAppID, limit: 5 })).pipe(
            Effect.provide(Logger.replace(Logger.defaultLogger, capture)),
            Logger.withMinimumLogLevel(LogLevel.Debug)
          ),
          [
            ["microapp_throttle_pauses_total", { cause: "429" }],
            ["microapp_throttle_wait_seconds_total", { cause: "429" }]
          ]
        )
        // the seconds' counter is shared by every file of a worker, and may hold fractions already
        expect(grown[0]).toBe(1)
        expect(grown[1]).toBeCloseTo(2, 9)
        const pauses = lines.filter((line) => line.message === "pausing every request of this client")
        expect(pauses).toHaveLength(1)
        expect(pauses[0]?.level).toBe("WARN")
        expect(pauses[0]?.annotations).toMatchObject({ cause: "429", pauseMillis: 2000 })
        const retry = lines.find((line) => line.message === "retrying request")
        expect(retry?.annotations["delayMillis"]).toBe(2000)
        const text = JSON.stringify(lines)
        expect(text).not.toContain(server.credentials.authToken)
      }))

    it.effect("rows that fail their Schema are counted, and logged by place, never by value", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const client = yield* MicroappClient
        const lines: Array<string> = []
        const capture = Logger.make(({ annotations, message }) => {
          lines.push(JSON.stringify([message, Object.fromEntries(annotations)]))
        })
        const names = (yield* server.rows.table(projectsMicroAppID)).map((row) => String(row["Name"]))
        const strict = client.withSchema(Schema.Struct({ _id: Schema.String, Name: Schema.Number }), {
          invalidRows: "skip"
        })
        const { grown } = yield* growth(
          Stream.runDrain(strict.rows({ microAppID: projectsMicroAppID })).pipe(
            Effect.provide(Logger.replace(Logger.defaultLogger, capture))
          ),
          [["microapp_invalid_rows_total", { microapp_id: projectsMicroAppID }]]
        )
        expect(grown).toEqual([names.length])
        expect(lines).toHaveLength(names.length)
        expect(lines[0]).toContain("a row failed its Schema")
        expect(lines[0]).toContain("\"fieldPath\":\"Name\"")
        expect(names.filter((name) => lines.some((line) => line.includes(name)))).toEqual([])
      }))
  })
})

describe("the bulk update's span", () => {
  it.layer(withEmulator({ tables: [tasksTable(30, [4, 9])] }))((it) => {
    it.effect("covers the run and ends with its outcomes by kind", () =>
      Effect.gen(function*() {
        const client = yield* MicroappClient
        const { spans, tracer: recording } = yield* recordingTracer
        const rows = yield* client.collect({ microAppID: tasksMicroAppID, max: 100 })
        yield* Stream.runDrain(
          client.updateRows(Stream.fromIterable(rows.map((row) => ({ rowID: row._id, rowData: { Title: "y" } }))))
        ).pipe(Effect.withTracer(recording))
        const span = spans.find((candidate) => candidate.name === "MicroappClient.updateRows")
        expect(span?.status._tag).toBe("Ended")
        expect(Object.fromEntries(span?.attributes ?? [])).toMatchObject({
          Updated: 28,
          Refused: 2,
          retries: 0,
          throttled: 0,
          stopped: false
        })
      }))
  })
})
