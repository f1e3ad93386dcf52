/**
 * The client's metrics, as Effect `Metric`s: any metrics exporter of Effect (OpenTelemetry via
 * `@effect/opentelemetry`, Prometheus) publishes them. Tagged by endpoint and Microapp id, never
 * by a row id or anything secret. docs/telemetry.md lists them.
 */
import { Effect, FiberRef, Metric, MetricBoundaries, MetricKey, MetricLabel } from "effect"

/** The OpenTelemetry semantic conventions' buckets for `http.client.request.duration`, in seconds. */
const durationBoundaries = MetricBoundaries.fromIterable([
  0.005,
  0.01,
  0.025,
  0.05,
  0.075,
  0.1,
  0.25,
  0.5,
  0.75,
  1,
  2.5,
  5,
  7.5,
  10
])

// the tags are endpoints, kinds and Microapp ids: few; past this many a series is made afresh
const maxSeries = 10_000

/**
 * A metric's series by tags, each made once: a metric tagged at update time hashes its whole key
 * in the registry on every update, which costs more than the request it measures.
 */
const series = <M>(make: (labels: ReadonlyArray<MetricLabel.MetricLabel>) => M) => {
  const made = new Map<string, M>()
  return (tags: Readonly<Record<string, string>>): M => {
    const id = JSON.stringify(tags)
    const known = made.get(id)
    if (known !== undefined) return known
    const metric = make(Object.entries(tags).map(([key, value]) => MetricLabel.make(key, value)))
    if (made.size < maxSeries) made.set(id, metric)
    return metric
  }
}

/** One HTTP attempt's duration, as OpenTelemetry's semantic conventions name it. */
export const requestDuration = series((labels) =>
  Metric.fromMetricKey(
    MetricKey.taggedWithLabels(
      MetricKey.histogram(
        "http.client.request.duration",
        durationBoundaries,
        "Duration of HTTP client requests, in seconds"
      ),
      labels
    )
  )
)

const counter = (name: string, description: string) => {
  const key = MetricKey.counter(name, { description, incremental: true })
  return series((labels) => Metric.fromMetricKey(MetricKey.taggedWithLabels(key, labels)))
}

export const requests = counter(
  "microapp_requests_total",
  "Calls by endpoint and outcome (success, or the error's tag)"
)
export const retries = counter("microapp_retries_total", "Attempts beyond the first, by endpoint and cause")
export const throttlePauses = counter("microapp_throttle_pauses_total", "Client-wide pauses begun, by cause")
export const throttleSeconds = counter(
  "microapp_throttle_wait_seconds_total",
  "Seconds of client-wide pause asked for by Retry-After (capped by rateLimit.maxPause)"
)
export const rowsEmitted = counter("microapp_rows_emitted_total", "Rows handed on by scans")
export const pages = counter("microapp_pages_total", "Pages judged by scans")
export const duplicatesDropped = counter("microapp_duplicates_dropped_total", "Rows dropped as already emitted")
export const appearedBehind = counter("microapp_rows_appeared_behind_total", "Rows that appeared behind a scan")
export const vanishedBehind = counter("microapp_rows_vanished_behind_total", "Rows that vanished behind a scan")
export const inconsistencies = counter("microapp_inconsistencies_total", "Windows a scan could not prove joined")
export const invalidRows = counter("microapp_invalid_rows_total", "Rows that failed their Schema")
export const bulkOutcomes = counter("microapp_bulk_outcomes_total", "Outcomes of updateRows, by kind")
export const windowsInFlight = series((labels) =>
  Metric.fromMetricKey(
    MetricKey.taggedWithLabels(
      MetricKey.gauge("microapp_windows_in_flight", { description: "Windows a scan has in flight" }),
      labels
    )
  )
)

/**
 * `Metric.update` in one step rather than four: the metric updated with `input` under the labels
 * the fiber has in force (`Effect.tagMetrics`), as `Metric.update` does.
 */
export const update = <Type, In, Out>(metric: Metric.Metric<Type, In, Out>, input: In): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => {
    metric.unsafeUpdate(input, fiber.getFiberRef(FiberRef.currentMetricLabels))
    return Effect.void
  })

/** Adds `amount` to `counter`; nothing to do for none. */
export const increase = (counter: Metric.Metric.Counter<number>, amount: number): Effect.Effect<void> =>
  amount === 0 ? Effect.void : update(counter, amount)

/** Adds `amount` to the series of `counter` with `tags`. */
export const add = (
  counter: (tags: Readonly<Record<string, string>>) => Metric.Metric.Counter<number>,
  amount: number,
  tags: Readonly<Record<string, string>>
): Effect.Effect<void> => amount === 0 ? Effect.void : increase(counter(tags), amount)
