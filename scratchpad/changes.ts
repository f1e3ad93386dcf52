/**
 * A copy kept in memory, pass after pass: each pass reports what changed since the last one.
 * Run with `npx vite-node scratchpad/changes.ts`.
 */
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Stream } from "effect"
import { Changes, MicroappClient } from "../src/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"

/** One pass against the fingerprints of the last; the next pass's fingerprints. */
const pass = (fingerprints: ReadonlyMap<string, string>) =>
  Effect.gen(function*() {
    const client = yield* MicroappClient
    const changes = yield* client.changes({
      microAppID: projectsMicroAppID,
      baseline: Changes.Baseline.fromMap(fingerprints)
    })
    const all = yield* Stream.runCollect(changes.changes)
    const { deleted, deletes, inserted, unchanged, updated } = yield* changes.summary
    yield* Console.log(
      `inserted ${inserted}, updated ${updated}, deleted ${deleted}, unchanged ${unchanged} (deletes ${deletes})`
    )
    return Changes.fold(fingerprints, all)
  })

const program = Effect.gen(function*() {
  const first = yield* pass(new Map())
  // the table moves between passes: one row changed, one removed
  const client = yield* MicroappClient
  const [a, b] = yield* client.query({ microAppID: projectsMicroAppID, limit: 2 })
  if (a === undefined || b === undefined) return
  yield* client.updateRow({ rowID: a._id, rowData: { Name: "Renamed between passes" } })
  const server = yield* MicroappServer
  yield* server.rows.removeRow(b._id)
  yield* pass(first)
})

program.pipe(
  Effect.provide(MicroappServer.layerWithClient({ demoRows: 2500 }).pipe(Layer.provide(NodeHttpClient.layerUndici))),
  NodeRuntime.runMain
)
