/**
 * The README's typed Microapp: rows decoded to the definition's shape, filters and sort by label,
 * and an update that only takes known labels. Run with `npx vite-node scratchpad/typed.ts`.
 */
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { Console, DateTime, Effect, Layer, Stream } from "effect"
import { Microapp } from "../src/index.js"
import { MicroappServer, Projects } from "../src/testing/index.js"

const program = Effect.gen(function*() {
  const projects = yield* Microapp.bind(Projects)

  // Open projects, largest budget first: Status is sent as its fieldID, Budget as sort field 2.
  yield* projects.rows({ filters: { Status: "Open" }, sort: { field: "Budget", order: "desc" } }).pipe(
    Stream.take(3),
    Stream.runForEach((row) =>
      Console.log(row.Name, row.Budget, row.Owner === undefined ? "-" : Microapp.displayValue(row.Owner))
    )
  )

  const [row] = yield* projects.query({ limit: 1 })
  if (row === undefined) return
  yield* projects.updateRow({ rowID: row._id, rowData: { Due: DateTime.unsafeMake("2031-07-14"), Status: "Done" } })
  const updated = yield* projects.getRow(row._id)
  yield* Console.log(
    updated.Name,
    updated.Status,
    updated.Due === undefined ? "-" : DateTime.formatIsoDate(updated.Due)
  )

  // From untyped input a misspelt label is refused before anything is sent.
  const untyped: Microapp.UpdateOf<typeof Projects> = JSON.parse("{\"Nmae\":\"lost\"}")
  const refused = yield* Effect.flip(projects.updateRow({ rowID: row._id, rowData: untyped }))
  yield* Console.log(refused.message)
})

program.pipe(
  Effect.provide(MicroappServer.layerWithClient().pipe(Layer.provide(NodeHttpClient.layerUndici))),
  NodeRuntime.runMain
)
