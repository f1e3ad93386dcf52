/**
 * The README's "Writing many rows": every open project to priority 1, with one outcome per row and
 * their summary, against the emulator with a fault that applies an update and then answers 500.
 * Run with `npx vite-node scratchpad/updateMany.ts`.
 */
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Stream } from "effect"
import { BulkUpdate, MicroappClient } from "../src/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"

const program = Effect.gen(function*() {
  const server = yield* MicroappServer
  yield* server.faults.inject("http500AfterApply", { path: "/api/updatemicroapprow", count: 3 })

  const client = yield* MicroappClient
  // a field the filter does not name: a row that leaves the filtered result moves the scan's pages
  const updates = client.rows({ microAppID: projectsMicroAppID, filters: [{ fieldID: "f_status", value: "Open" }] })
    .pipe(Stream.map((row) => ({ rowID: row._id, rowData: { Priority: 1 } })))
  const summary = yield* client.updateRows(updates, { concurrency: 4 }).pipe(
    Stream.tap((outcome) =>
      outcome._tag === "Updated" ? Effect.void : Console.error(outcome.index, outcome._tag, outcome.error.message)
    ),
    Stream.run(BulkUpdate.summarize)
  )
  // locked rows are refused; the three 500s after applying are updated, as their read-back shows
  yield* Console.log(summary)
})

program.pipe(
  Effect.provide(MicroappServer.layerWithClient({ demoRows: 500 }).pipe(Layer.provide(NodeHttpClient.layerUndici))),
  NodeRuntime.runMain
)
