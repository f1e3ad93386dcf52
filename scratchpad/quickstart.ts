/**
 * The README's quick start: read a page, read a row, update it, and stream the whole table,
 * against the emulator on an ephemeral port. Run with `npx tsx scratchpad/quickstart.ts`.
 */
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Stream } from "effect"
import { MicroappClient } from "../src/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"

const program = Effect.gen(function*() {
  const client = yield* MicroappClient

  // One request: the five largest budgets (sort field 2 is Budget, as the Results Tab says).
  const page = yield* client.query({ microAppID: projectsMicroAppID, sort: { field: 2, order: "desc" }, limit: 5 })
  yield* Console.log(page.map((row) => `${row._id} ${String(row.Name)} ${String(row.Budget)}`).join("\n"))

  // One row, then an update by field label, then the row again.
  const [first] = page
  if (first === undefined) return
  yield* client.updateRow({ rowID: first._id, rowData: { Name: "Renamed in the quick start" } })
  const row = yield* client.getRow(first._id)
  yield* Console.log(`renamed: ${String(row.Name)}`)

  // Every row, page by page, never cut short by the server's default row cap.
  const count = yield* Stream.runCount(client.rows({ microAppID: projectsMicroAppID }))
  yield* Console.log(`rows in the table: ${count}`)
})

program.pipe(
  Effect.provide(MicroappServer.layerWithClient({ demoRows: 2500 }).pipe(Layer.provide(NodeHttpClient.layerUndici))),
  NodeRuntime.runMain
)
