/**
 * Mirrors several Microapps on the fleet and waits for their summaries:
 * `CLUSTER_DATABASE_URL=postgres://... npx tsx scratchpad/fleetClient.ts ID...`. Each run's slot is
 * `MIRROR_SLOT`, default now: submitted again with the same slot, a run is joined, not repeated;
 * `MIRROR_PAGE_SIZE` sets the page size.
 */
import { ClusterWorkflowEngine } from "@effect/cluster"
import { NodeClusterSocket, NodeRuntime } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Config, Console, DateTime, Effect, Layer } from "effect"
import { MicroappMirror } from "../src/workflow/index.js"

const microApps = process.argv.slice(2)

const Engine = ClusterWorkflowEngine.layer.pipe(
  Layer.provideMerge(MicroappMirror.startingOneAtATime(NodeClusterSocket.layer({ storage: "sql", clientOnly: true }))),
  Layer.provide(PgClient.layerConfig({ url: Config.redacted("CLUSTER_DATABASE_URL") }))
)

const program = Effect.gen(function*() {
  const slot = yield* Config.string("MIRROR_SLOT").pipe(Config.withDefault(DateTime.formatIso(yield* DateTime.now)))
  const pageSize = yield* Config.integer("MIRROR_PAGE_SIZE").pipe(Config.withDefault(1000))
  yield* Effect.forEach(
    microApps,
    (microAppID) =>
      MicroappMirror.execute({ microAppID, slot, pageSize }).pipe(
        Effect.flatMap((summary) =>
          Console.log(
            `${microAppID}: inserted ${summary.inserted}, updated ${summary.updated}, deleted ${summary.deleted}, ` +
              `unchanged ${summary.unchanged}, resumed ${summary.resumed}`
          )
        ),
        Effect.catchAll((error) => Console.error(`${microAppID}: ${error._tag}: ${error.message}`))
      ),
    { concurrency: "unbounded", discard: true }
  )
})

program.pipe(Effect.provide(Engine), NodeRuntime.runMain)
