/**
 * Many scans of one table on one fresh client, as a service starting up has: how long they took,
 * how many were exact, how they failed, and the retries they needed. For the programs that measure
 * the client against a server that pushes back (`overload`, `throttle`).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect, Layer, ManagedRuntime, Redacted, Stream } from "effect"
import { MicroappClient } from "../../src/index.js"
import { demoCredentials } from "../../src/testing/index.js"

/** One run of the scans. */
export interface ScansRun {
  readonly millis: number
  /** Scans that read exactly `rows` rows. */
  readonly exact: number
  /** The `_tag` of each scan that failed. */
  readonly failures: ReadonlyArray<string>
  /** Attempts beyond the first, over all scans: the requests the server refused, and any other retry. */
  readonly retries: number
}

export interface ScansSpec {
  readonly baseUrl: string
  readonly tuning: MicroappClient.Tuning
  readonly scan: MicroappClient.RowsOptions
  readonly scans: number
  /** Rows in the table: what an exact scan reads. */
  readonly rows: number
  /** All at once, or one after another. */
  readonly atOnce: boolean
}

export const runScans = async (spec: ScansSpec): Promise<ScansRun> => {
  const runtime = ManagedRuntime.make(
    MicroappClient.layer({
      ...spec.tuning,
      baseUrl: spec.baseUrl,
      authToken: Redacted.make(demoCredentials.authToken),
      userId: demoCredentials.userId
    }).pipe(Layer.provide(NodeHttpClient.layerUndici))
  )
  const scanOnce = Effect.gen(function*() {
    const client = yield* MicroappClient
    const scan = yield* client.scan(spec.scan)
    const count = yield* Stream.runCount(scan.rows)
    return { count, retries: (yield* scan.summary).retries }
  }).pipe(Effect.either)
  try {
    const start = performance.now()
    const results = await runtime.runPromise(
      Effect.all(Array.from({ length: spec.scans }, () => scanOnce), { concurrency: spec.atOnce ? "unbounded" : 1 })
    )
    return {
      millis: performance.now() - start,
      exact: results.filter((result) => result._tag === "Right" && result.right.count === spec.rows).length,
      failures: results.flatMap((result) => result._tag === "Left" ? [result.left._tag] : []),
      retries: results.reduce((sum, result) => sum + (result._tag === "Right" ? result.right.retries : 0), 0)
    }
  } finally {
    await runtime.dispose()
  }
}
