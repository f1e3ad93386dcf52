/**
 * The README's telemetry recipe, with in-memory exporters: a scan and a bulk update under faults
 * reach OpenTelemetry as metrics that agree with the summaries and the server's log, and as spans
 * with the summaries' figures, every request under the call that made it; no token in any of it.
 */
import { describe, expect, it } from "@effect/vitest"
import type { ResourceMetrics } from "@opentelemetry/sdk-metrics"
import { MetricReader } from "@opentelemetry/sdk-metrics"
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base"
import { Effect, Stream } from "effect"
import { TelemetryLive } from "../scratchpad/telemetry.js"
import { BulkUpdate, MicroappClient } from "../src/index.js"
import { MicroappServer } from "../src/testing/index.js"
import { numbersTable, onTestClock, withEmulator } from "./support.js"

const numbers = "7e0000000000000000000001"
const rowsPath = "/api/microappdata"
const updatePath = "/api/updatemicroapprow"
const rowPath = "/api/microappdata/row"
const table = numbersTable(numbers, 300)

/** A reader collected on demand, as a Prometheus scrape is. */
class OnDemandReader extends MetricReader {
  protected override onShutdown = () => Promise.resolve()
  protected override onForceFlush = () => Promise.resolve()
}

/** Keeps what it exported after the SDK shuts down (the in-memory exporter forgets it then). */
class KeepingExporter extends InMemorySpanExporter {
  override shutdown = () => Promise.resolve()
}

/** The data points of the metric `name` whose attributes include `attributes`, summed (counts for histograms). */
const total = (collected: ResourceMetrics, name: string, attributes: Readonly<Record<string, string>>) => {
  let sum = 0
  for (const scope of collected.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue
      for (const point of metric.dataPoints) {
        if (!Object.entries(attributes).every(([key, value]) => point.attributes[key] === value)) continue
        const value: unknown = point.value
        sum += typeof value === "number"
          ? value
          : typeof value === "object" && value !== null && "count" in value && typeof value.count === "number"
          ? value.count
          : 0
      }
    }
  }
  return sum
}

const collect = (reader: MetricReader) =>
  Effect.promise(() => reader.collect()).pipe(Effect.map((result) => result.resourceMetrics))

const ancestors = (span: ReadableSpan, byId: ReadonlyMap<string, ReadableSpan>): ReadonlyArray<string> => {
  const names: Array<string> = []
  for (let at = byId.get(span.parentSpanContext?.spanId ?? ""); at !== undefined;) {
    names.push(at.name)
    at = byId.get(at.parentSpanContext?.spanId ?? "")
  }
  return names
}

describe("the telemetry recipe", () => {
  it.effect(
    "exports the client's metrics and spans: they agree with the summaries and the log, and hold no token",
    () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const spans = new KeepingExporter()
        const reader = new OnDemandReader()
        const telemetry = TelemetryLive(spans, reader)
        const ids = table.rows.slice(0, 20).map((row) => row._id)

        // on the test clock: a 503's Retry-After passes at once
        const { before, collected, scanSummary, bulkSummary } = yield* onTestClock(
          Effect.gen(function*() {
            const client = yield* MicroappClient
            const before = yield* collect(reader)
            const scan = yield* client.scan({ microAppID: numbers, pageSize: 50, concurrency: 2 })
            yield* Stream.runDrain(scan.rows)
            const scanSummary = yield* scan.summary
            const bulkSummary = yield* Stream.run(
              client.updateRows(Stream.fromIterable(ids.map((rowID, n) => ({ rowID, rowData: { N: -n } })))),
              BulkUpdate.summarize
            )
            return { before, collected: yield* collect(reader), scanSummary, bulkSummary }
          }).pipe(Effect.provide(telemetry))
        )

        const grown = (name: string, attributes: Readonly<Record<string, string>>) =>
          total(collected, name, attributes) - total(before, name, attributes)
        const log = yield* server.log.requests
        expect(scanSummary.rows).toBe(300)
        expect(scanSummary.retries).toBeGreaterThan(0)
        expect(grown("microapp_rows_emitted_total", { microapp_id: numbers })).toBe(300)
        expect(grown("microapp_pages_total", { microapp_id: numbers })).toBe(scanSummary.pages)
        // the summary counts the retries of the pages it used; a window abandoned at the end may have retried too
        expect(grown("microapp_retries_total", { endpoint: rowsPath })).toBeGreaterThanOrEqual(scanSummary.retries)
        // each page answered is a call that succeeded, after its retries, with a 200
        expect(grown("microapp_requests_total", { endpoint: rowsPath, outcome: "success" })).toBe(scanSummary.pages)
        expect(
          grown("http.client.request.duration", { "microapp.endpoint": rowsPath, "http.response.status_code": "200" })
        )
          .toBe(scanSummary.pages)
        // every attempt was measured, with the convention's attributes: those the server saw, and
        // those abandoned in flight when the scan ended, which it may or may not have seen
        const measured = grown("http.client.request.duration", {
          "microapp.endpoint": rowsPath,
          "http.request.method": "POST"
        })
        const abandoned = grown("http.client.request.duration", {
          "microapp.endpoint": rowsPath,
          "error.type": "interrupted"
        })
        const seen = log.filter((record) => record.path === rowsPath).length
        expect(seen).toBeLessThanOrEqual(measured)
        expect(seen).toBeGreaterThanOrEqual(measured - abandoned)
        // the updates and their read-backs ran to the end: every attempt reached the server
        for (const endpoint of [updatePath, rowPath]) {
          const sent = log.filter((record) => record.path === endpoint).length
          expect(grown("microapp_requests_total", { endpoint }) + grown("microapp_retries_total", { endpoint }))
            .toBe(sent)
          expect(
            grown("http.client.request.duration", { "microapp.endpoint": endpoint, "server.address": "127.0.0.1" })
          )
            .toBe(sent)
        }
        expect(bulkSummary.total).toBe(20)
        expect(grown("microapp_bulk_outcomes_total", { kind: "Updated" })).toBe(bulkSummary.updated)

        const finished = spans.getFinishedSpans()
        const byId = new Map(finished.map((span) => [span.spanContext().spanId, span]))
        const scanSpans = finished.filter((span) => span.name === "MicroappClient.scan")
        expect(scanSpans).toHaveLength(1)
        expect(scanSpans[0]?.attributes).toMatchObject({
          microAppID: numbers,
          ...Object.fromEntries(Object.entries(scanSummary).filter(([, value]) => value !== undefined))
        })
        const bulkSpans = finished.filter((span) => span.name === "MicroappClient.updateRows")
        expect(bulkSpans).toHaveLength(1)
        expect(bulkSpans[0]?.attributes).toEqual({
          Updated: bulkSummary.updated,
          Refused: bulkSummary.refused,
          Failed: bulkSummary.failed,
          Unknown: bulkSummary.unknown,
          Invalid: bulkSummary.invalid,
          retries: bulkSummary.retries,
          throttled: bulkSummary.throttled,
          stopped: false
        })
        const requests = finished.filter((span) => span.name.startsWith("http.client"))
        expect(requests.length).toBe(
          measured + grown("http.client.request.duration", { "microapp.endpoint": updatePath }) +
            grown("http.client.request.duration", { "microapp.endpoint": rowPath })
        )
        const madeBy: Readonly<Record<string, string>> = {
          [rowsPath]: "MicroappClient.scan",
          [updatePath]: "MicroappClient.updateRows",
          [rowPath]: "MicroappClient.updateRows"
        }
        for (const request of requests) {
          expect(ancestors(request, byId)).toContain(madeBy[String(request.attributes["url.path"])])
        }
        const everything = JSON.stringify([
          finished.map((span) => [span.name, span.attributes, span.events, span.status]),
          collected.resource.attributes,
          collected.scopeMetrics.flatMap((scope) =>
            scope.metrics.flatMap((metric): ReadonlyArray<unknown> =>
              metric.dataPoints.map((point) => point.attributes)
            )
          )
        ])
        expect(everything).not.toContain(server.credentials.authToken)
      }).pipe(
        Effect.provide(
          withEmulator(
            { tables: [table], faults: { seed: 11, rate: 0.15, kinds: ["http500", "http503"] } },
            { retry: { maxAttempts: 8, initialDelay: "1 millis", maxDelay: "5 millis" } }
          )
        )
      ),
    60_000
  )
})
