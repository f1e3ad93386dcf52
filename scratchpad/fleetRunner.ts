/**
 * A runner of the mirror fleet: one of any number of processes sharing one PostgreSQL, each
 * running the `MicroappMirror` executions of its shards, taking over a dead runner's shards.
 * `CLUSTER_DATABASE_URL` (the cluster's storage), `MIRROR_DATABASE_URL` (the mirrors; default the
 * same), `HOST` and `PORT` (where the other runners reach this one; default localhost:34431),
 * `MICROAPP_BASE_URL`, `MICROAPP_AUTH_TOKEN`, `MICROAPP_USER_ID` (the service), and, to mirror on a
 * schedule, `MIRROR_CRON` (`"0 * * * *"`) with `MIRROR_MICROAPPS` (ids, comma-separated).
 * ShardingConfig's settings come from the environment too: `SHARD_LOCK_EXPIRATION="10 seconds"`.
 */
import { ClusterWorkflowEngine } from "@effect/cluster"
import { NodeClusterSocket, NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Config, Cron, Effect, Layer, Logger, Option } from "effect"
import { MicroappClient } from "../src/index.js"
import { MicroappMirror, MirrorCron } from "../src/workflow/index.js"

// @effect/cluster sends its shard-lock queries on one reserved connection from several fibers: pg 8
// runs them in turn, as it should, but warns of the queue on stderr among the JSON log lines
const queueWarning = "Calling client.query() when the client is already executing a query"
const emitWarning = process.emitWarning.bind(process)
process.emitWarning = ((warning: string | Error, ...rest: Array<never>) => {
  if (!String(warning).includes(queueWarning)) emitWarning(warning, ...rest)
}) as typeof process.emitWarning

const clusterDatabase = Config.redacted("CLUSTER_DATABASE_URL")

const schedule = Config.option(Config.string("MIRROR_CRON"))

// a runner with a schedule takes the shards of its cron jobs: their ticks run where it is
const Engine = Layer.unwrapEffect(Effect.map(schedule, (cron) =>
  ClusterWorkflowEngine.layer.pipe(
    // runners started at once on an empty database create the cluster's tables in turn
    Layer.provideMerge(MicroappMirror.startingOneAtATime(NodeClusterSocket.layer({
      storage: "sql",
      shardingConfig: MirrorCron.shardingConfig(Option.isSome(cron))
    }))),
    Layer.provide(PgClient.layerConfig({ url: clusterDatabase }))
  )))

const Schedule = Layer.unwrapEffect(Effect.gen(function*() {
  const cron = yield* schedule
  const microApps = yield* Config.array(Config.string(), "MIRROR_MICROAPPS").pipe(Config.withDefault([]))
  return Option.match(cron, {
    onNone: () => Layer.empty,
    onSome: (expression) =>
      MirrorCron.layer({ cron: Cron.unsafeParse(expression), mirrors: microApps.map((microAppID) => ({ microAppID })) })
  })
}))

const Mirrors = Layer.mergeAll(
  MicroappMirror.MirrorDatabase.layer(
    PgClient.layerConfig({ url: Config.redacted("MIRROR_DATABASE_URL").pipe(Config.orElse(() => clusterDatabase)) })
  ),
  MicroappClient.layerConfig().pipe(Layer.provide(NodeHttpClient.layerUndici))
)

Layer.mergeAll(MicroappMirror.layer, Schedule).pipe(
  Layer.provide(Mirrors),
  Layer.provide(Engine),
  // one JSON object a line, for the log collector
  Layer.provide(Logger.json),
  Layer.launch,
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
