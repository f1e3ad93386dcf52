/**
 * Debezium's change events from a pipeline of your own: each change of a pass as the Kafka message
 * `microapp changes --schemas --key` writes, its `before` the whole row the pipeline kept.
 * Run with `npx vite-node scratchpad/debeziumEvents.ts`.
 */
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Stream } from "effect"
import { Debezium } from "../src/debezium/index.js"
import { Changes, MicroappClient, type Row } from "../src/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"

const source: Debezium.Source = {
  name: "microapp",
  db: "example.com",
  schema: projectsMicroAppID,
  table: "projects",
  version: "0.2.0"
}

/** One pass against the rows kept from the last: each change a Kafka message (here, printed). */
const pass = (kept: Map<string, Row.Row>, fields: ReadonlyArray<Debezium.Field>) =>
  Effect.gen(function*() {
    const client = yield* MicroappClient
    const fingerprints = new Map(Array.from(kept, ([id, row]) => [id, Changes.fingerprint(row)]))
    const changes = yield* client.changes({
      microAppID: projectsMicroAppID,
      baseline: Changes.Baseline.fromMap(fingerprints)
    })
    yield* Stream.runForEach(changes.pages, (page) =>
      Effect.gen(function*() {
        // every value of the page fits the schemas its events are written under
        fields = Debezium.widen(fields, page.changes.flatMap((change) => change._tag === "Deleted" ? [] : [change.row]))
        for (const change of page.changes) {
          const message = Debezium.event(change, {
            source,
            fields,
            marker: fingerprints.size === 0 ? "true" : "false",
            before: kept.get(change.id),
            seenAt: Date.now(),
            writtenAt: BigInt(Date.now()) * 1_000_000n,
            schemas: true
          })
          yield* Console.log(`${message.key}\t${message.value}`)
          if (change._tag === "Deleted") kept.delete(change.id)
          else kept.set(change.id, change.row)
        }
      }))
    return fields
  })

const program = Effect.gen(function*() {
  const kept = new Map<string, Row.Row>()
  const fields = yield* pass(kept, [])
  const client = yield* MicroappClient
  const [a] = yield* client.query({ microAppID: projectsMicroAppID, limit: 1 })
  if (a === undefined) return
  yield* client.updateRow({ rowID: a._id, rowData: { Name: "Renamed between passes" } })
  yield* pass(kept, fields)
})

program.pipe(
  Effect.provide(MicroappServer.layerWithClient({ demoRows: 5 }).pipe(Layer.provide(NodeHttpClient.layerUndici))),
  NodeRuntime.runMain
)
