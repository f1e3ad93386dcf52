/**
 * Mirrors on a schedule: one `ClusterCron` of `@effect/cluster` per mirror, each tick an execution
 * of `MicroappMirror` whose run slot is the tick's time. A mirror's next tick is planned when its
 * run ends, so two runs of one mirror never overlap; a slow mirror holds back no other.
 *
 * @since 0.2.0
 */
import { ClusterCron, type Sharding } from "@effect/cluster"
import type { WorkflowEngine } from "@effect/workflow"
import { type Cron, DateTime, type Duration, Effect, HashMap, Layer, Option } from "effect"
import * as SqlMirror from "../sql/SqlMirror.js"
import { execute, type Payload } from "./MicroappMirror.js"

/**
 * One mirror to keep: a payload of `MicroappMirror` without its slot, which each tick gives.
 *
 * @since 0.2.0
 * @category models
 */
export type Mirror = Omit<Payload, "slot">

/**
 * @since 0.2.0
 * @category models
 */
export interface Options {
  /**
   * When to run each mirror: `Cron.unsafeParse("0 * * * *")` for every hour, say. One schedule a
   * mirror across the fleet: its job is named by table and Microapp, so runners giving it two
   * schedules share one job, each tick planning the next by the schedule of the runner that ran it.
   */
  readonly cron: Cron.Cron
  readonly mirrors: ReadonlyArray<Mirror>
  /** A tick later than this (the cluster was down) is skipped; default 1 day, as `ClusterCron`'s. */
  readonly skipIfOlderThan?: Duration.DurationInput | undefined
  /** Default `shardGroup`, which the runners with the schedule take (`shardingConfig(true)`). */
  readonly shardGroup?: string | undefined
}

/**
 * The shard group of the schedules' cron jobs. `@effect/cluster` places a job's ticks only on the
 * runners assigned this group (`shardingConfig(true)`): those started with the schedule, which
 * handle them; the runs themselves go wherever the cluster places them.
 *
 * @since 0.2.0
 * @category constants
 */
export const shardGroup = "microapp-cron"

/**
 * The shard groups of a runner, for `ShardingConfig` (`NodeClusterSocket.layer({ shardingConfig })`):
 * every runner knows the schedules' group, and one `withSchedule` (one that has `MirrorCron.layer`)
 * takes its shards too.
 *
 * @since 0.2.0
 * @category constructors
 */
export const shardingConfig = (withSchedule: boolean): {
  readonly availableShardGroups: ReadonlyArray<string>
  readonly assignedShardGroups: ReadonlyArray<string>
} => ({
  availableShardGroups: ["default", shardGroup],
  assignedShardGroups: withSchedule ? ["default", shardGroup] : ["default"]
})

/**
 * The name of a mirror's cron job: unique per table and Microapp.
 *
 * @since 0.2.0
 * @category constructors
 */
export const nameOf = (mirror: Mirror): string =>
  `MicroappMirror/${mirror.table ?? SqlMirror.defaultTable}/${mirror.microAppID}`

/** The time of the tick being run: `ClusterCron` annotates its logs with it. */
const tickTime = Effect.flatMap(
  Effect.logAnnotations,
  (annotations) =>
    Option.match(Option.filter(HashMap.get(annotations, "dateTime"), DateTime.isDateTime), {
      onNone: () => Effect.dieMessage("ClusterCron ran a job without its tick's time"),
      onSome: (time) => Effect.succeed(DateTime.formatIso(time))
    })
)

/** One mirror's run for the tick being run: its summary logged, or its failure (the next tick comes all the same). */
const runTick = (mirror: Mirror) =>
  Effect.gen(function*() {
    const slot = yield* tickTime
    const summary = yield* execute({ ...mirror, slot })
    yield* Effect.logInfo("MicroappMirror run complete").pipe(Effect.annotateLogs({
      microAppID: mirror.microAppID,
      slot,
      inserted: summary.inserted,
      updated: summary.updated,
      deleted: summary.deleted,
      unchanged: summary.unchanged
    }))
  }).pipe(Effect.catchAll((error) => Effect.logWarning("MicroappMirror run failed", error)))

/**
 * Runs each of `mirrors` on `cron`, in the cluster: add it to the runners' layer (with
 * `MicroappMirror.layer`), or to any process with `Sharding` and a `WorkflowEngine`.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<never, never, Sharding.Sharding | WorkflowEngine.WorkflowEngine> =>
  options.mirrors.reduce(
    (layers, mirror) =>
      Layer.merge(
        layers,
        ClusterCron.make({
          name: nameOf(mirror),
          cron: options.cron,
          execute: runTick(mirror),
          shardGroup: options.shardGroup ?? shardGroup,
          skipIfOlderThan: options.skipIfOlderThan
        })
      ),
    Layer.empty as Layer.Layer<never, never, Sharding.Sharding | WorkflowEngine.WorkflowEngine>
  )
