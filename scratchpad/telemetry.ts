/**
 * The README's telemetry recipe: the client's metrics and spans exported through OpenTelemetry,
 * with nothing else to write. The exporters are parameters, so that a test can hand in in-memory
 * ones.
 */
import { NodeSdk } from "@effect/opentelemetry"
import type { MetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base"

// in production, e.g. OTLPTraceExporter and a PeriodicExportingMetricReader over OTLPMetricExporter
// (from @opentelemetry/exporter-trace-otlp-http and @opentelemetry/exporter-metrics-otlp-http)
export const TelemetryLive = (spans: SpanExporter, metrics: MetricReader) =>
  NodeSdk.layer(() => ({
    resource: { serviceName: "projects-mirror" },
    spanProcessor: new BatchSpanProcessor(spans),
    metricReader: metrics
  }))

// provided beside the client: Effect.provide(program, Layer.merge(MicroappLive, TelemetryLive(...)))
