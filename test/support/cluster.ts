/**
 * A cluster in memory, as `TestRunner.layer` makes it, but for its storage's poll (10 s by
 * default): a message is seen within 200 ms.
 */
import { MessageStorage, RunnerHealth, Runners, RunnerStorage, Sharding, ShardingConfig } from "@effect/cluster"
import { Layer } from "effect"

export const inMemoryCluster = (config: Partial<ShardingConfig.ShardingConfig["Type"]> = {}) =>
  Sharding.layer.pipe(
    Layer.provideMerge(Runners.layerNoop),
    Layer.provideMerge(MessageStorage.layerMemory),
    Layer.provide([RunnerStorage.layerMemory, RunnerHealth.layerNoop]),
    Layer.provide(ShardingConfig.layer({ entityMessagePollInterval: "200 millis", ...config }))
  )
