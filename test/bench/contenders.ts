/**
 * Contender A, this client's `rows` (every row Schema-decoded); B and C, written by hand, are in
 * `plain.ts`.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { Effect, Layer, ManagedRuntime, Redacted, Stream } from "effect"
import { MicroappClient } from "../../src/index.js"
import { authToken, microAppID, type Tally, tally, tallyRows, userId } from "./plain.js"

/** The HttpClient under A: undici through @effect/platform-node, or the global fetch. */
export type Transport = "undici" | "fetch"

export interface ClientA {
  readonly scan: (options: { readonly pageSize: number; readonly concurrency: number | "auto" }) => Promise<Tally>
  /** The table read a page at a time by `query`: the client's request path and row checks, no scan. */
  readonly queryPages: (pageSize: number) => Promise<Tally>
  readonly dispose: () => Promise<void>
}

/** A: one client (a runtime built once, as an application holds it) over `transport`. */
export const clientA = (baseUrl: string, transport: Transport): ClientA => {
  const http = transport === "undici" ? NodeHttpClient.layerUndici : FetchHttpClient.layer
  const runtime = ManagedRuntime.make(
    MicroappClient.layer({ baseUrl, authToken: Redacted.make(authToken), userId }).pipe(Layer.provide(http))
  )
  return {
    scan: ({ concurrency, pageSize }) =>
      runtime.runPromise(Effect.gen(function*() {
        const client = yield* MicroappClient
        const scan = yield* client.scan({ microAppID, pageSize, concurrency })
        const seen = yield* Stream.runFold(scan.rows, tally(), (seen, row) => {
          seen.rows++
          seen.lastId = row._id
          return seen
        })
        const summary = yield* scan.summary
        return { ...seen, concurrency: { reached: summary.concurrencyReached, settled: summary.concurrency } }
      })),
    queryPages: (pageSize) =>
      runtime.runPromise(Effect.gen(function*() {
        const client = yield* MicroappClient
        const seen = tally()
        for (let skip = 0;;) {
          const rows = yield* client.query({ microAppID, skip, limit: pageSize })
          tallyRows(seen, rows)
          if (rows.length < pageSize) return seen
          skip += rows.length
        }
      })),
    dispose: () => runtime.dispose()
  }
}
