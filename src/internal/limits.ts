/**
 * The bounds of every number a caller passes, in one place, and the Schema of a whole number
 * within bounds: what the option Schemas of `bounds.ts` read, and the public `Query` module too
 * (which `bounds.ts` imports, so these live below both). docs/configuration.md's table lists
 * them with their reasons. No accepted value makes the client start an unbounded number of
 * requests or hold an unbounded amount of memory.
 */
import { Duration, Schema } from "effect"

export const bounds = {
  /** Rows per request (`pageSize`, `query`'s `limit`): the service's own default is 1,000. */
  pageSize: 10_000,
  /** Windows of one scan in flight (`concurrency`, `maxConcurrency`), updates under way at once. */
  concurrency: 32,
  /** Pages buffered ahead of the consumer. */
  prefetch: 16,
  /** Rows re-read before each window. */
  overlap: 1_000,
  /** Rows `collect` may hold. */
  collectMax: 10_000_000,
  /** Sends of one update by `updateRows`. */
  maxSends: 20,
  /** Attempts of one request, the first included. */
  maxAttempts: 20,
  /** Requests in flight for one client (`rateLimit.maxInFlight`). */
  maxInFlight: 1_024,
  requestsPerSecond: 10_000,
  /** The body of one answer (`maxResponseBytes`), from 1 KiB. */
  minResponseBytes: 1_024,
  maxResponseBytes: 256 * 1024 * 1024,
  /** Per request (`timeout`), from 1 ms. */
  timeout: Duration.hours(1),
  initialDelay: Duration.minutes(1),
  maxDelay: Duration.minutes(10),
  maxElapsed: Duration.hours(1),
  maxPause: Duration.hours(1),
  /** Levels of nesting of a row (read) or of an update's \`rowData\` (sent), the object itself the first. */
  valueDepth: 256,
  /** Characters of a checkpoint's text: a scan of about 16 million rows under \`dedupe: "exact"\` (16 a row). */
  checkpointChars: 2 ** 28,
  /** Levels of nesting of a checkpoint's text; its format has four. */
  checkpointDepth: 16,
  /** Pages and rows between two checkpoints a scan hands out (`checkpointEvery`). */
  checkpointEveryPages: 10_000,
  checkpointEveryRows: 1_000_000
} as const

/** A whole number in `[min, max]`. */
export const wholeNumberIn = (min: number, max: number) =>
  Schema.Number.pipe(
    Schema.filter((n) => Number.isSafeInteger(n) && n >= min && n <= max, {
      message: () => `must be a whole number from ${min} to ${max.toLocaleString("en-US")}`
    })
  )
