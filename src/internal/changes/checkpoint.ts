/**
 * A change pass's checkpoint: the scan's checkpoint wrapped with the counts, the phase, the
 * deletes mode, the ids already reported deleted and the ids point reads kept; its JSON text
 * (the envelope is `../checkpointCodec.ts`'s, its checksum `Codec.checksum`), its checks,
 * its sink-held form, and the sets of ids a run restores from it.
 */
import { Effect, Either, Schema } from "effect"
import type * as Changes from "../../Changes.js"
import * as ScanCheckpoint from "../../Checkpoint.js"
import type { InvalidCheckpoint } from "../../MicroappError.js"
import type * as RowStream from "../../RowStream.js"
import * as Codec from "../checkpointCodec.js"
import { faultOf } from "../http/plainData.js"
import {
  CheckpointImpl as ScanCheckpointImpl,
  gatherIds,
  textBounds,
  versions,
  withIds as scanWithIds,
  withoutIds as scanWithoutIds
} from "../scan/checkpoint.js"
import * as IdSet from "../scan/IdSet.js"
import { Count, encodeSeen, HeldJson } from "../scan/state.js"

export const CheckpointTypeId: Changes.CheckpointTypeId = Symbol.for(
  "effect-microapp/Changes/Checkpoint"
) as Changes.CheckpointTypeId

export type Phase = Changes.Checkpoint["phase"]

export type DeletesMode = NonNullable<Changes.PassOptions<never, never>["deletes"]>

export const Counts = Schema.Struct({
  inserted: Count,
  updated: Count,
  unchanged: Count,
  deleted: Count,
  reads: Count,
  unconfirmed: Count,
  heldBack: Count
})

export type Counts = typeof Counts.Type

export const noCounts: Counts = {
  inserted: 0,
  updated: 0,
  unchanged: 0,
  deleted: 0,
  reads: 0,
  unconfirmed: 0,
  heldBack: 0
}

export const summaryOf = (
  scan: RowStream.ScanSummary,
  phase: Phase,
  mode: DeletesMode,
  counts: Counts
): Changes.Summary => ({
  ...scan,
  ...counts,
  deletes: phase === "scan" ? "pending" : mode === "confirmed" || scan.exhaustive ? "reported" : "skipped"
})

export type HeldOrExact = IdSet.ExactContents | IdSet.HeldContents

export class CheckpointImpl implements Changes.Checkpoint {
  readonly [CheckpointTypeId]: Changes.CheckpointTypeId = CheckpointTypeId
  constructor(
    readonly scan: ScanCheckpoint.Checkpoint,
    readonly phase: Phase,
    readonly mode: DeletesMode,
    readonly counts: Counts,
    /** The ids reported deleted so far, or their count and digest when a sink holds them. */
    readonly deleted: HeldOrExact,
    /** The unseen ids a point read found, or could not confirm deleted; held like `deleted`. */
    readonly kept: HeldOrExact
  ) {}
  get summary(): Changes.Summary {
    return summaryOf(this.scan.summary, this.phase, this.mode, this.counts)
  }
  /** The checkpoint's JSON object, its checksum last: what `JSON.stringify` writes, not its inner workings. */
  toJSON(): unknown {
    // absent while 0, so that a text written before it was counted is written again as it was
    const { heldBack, ...counts } = this.counts
    const body = {
      version: 1,
      phase: this.phase,
      deletes: this.mode,
      counts: heldBack === 0 ? counts : this.counts,
      deleted: encodeSeen(this.deleted),
      kept: encodeSeen(this.kept),
      scan: encodeScan(this.scan)
    }
    return { ...body, checksum: Codec.checksum(body) }
  }
}

export const isCheckpoint = (u: unknown): u is Changes.Checkpoint => u instanceof CheckpointImpl

const noIds: IdSet.ExactContents = IdSet.exactContents("", [])

/** What a set of ids (exact, with a journal) holds now, as a value. */
export const contentsOf = (ids: IdSet.IdSet): IdSet.ExactContents => {
  const contents = ids.contents()
  return contents?._tag === "Exact" ? contents : noIds
}

const PackedIds = Schema.Struct({ packed: Schema.String, others: Schema.Array(Schema.String) })

const IdsJson = Schema.Union(PackedIds, HeldJson)

// the fields of confirmed deletes are absent from the checkpoints of earlier versions: exhaustive-only, no reads
const Json = Schema.Struct({
  version: Codec.Version(versions),
  phase: Schema.Literal("scan", "deletes", "done"),
  deletes: Schema.optionalWith(Schema.Literal("confirmed", "exhaustive"), { default: () => "exhaustive" }),
  counts: Schema.Struct({
    ...Counts.fields,
    reads: Schema.optionalWith(Count, { default: () => 0 }),
    unconfirmed: Schema.optionalWith(Count, { default: () => 0 }),
    heldBack: Schema.optionalWith(Count, { default: () => 0 })
  }),
  deleted: IdsJson,
  kept: Schema.optionalWith(IdsJson, { default: () => ({ packed: "", others: [] }) }),
  scan: ScanCheckpoint.Checkpoint,
  checksum: Schema.String
})

const encodeScan = Schema.encodeSync(ScanCheckpoint.Checkpoint)

const decodeJson = Codec.decoder(Json)

/** The checkpoint's text: what its `toJSON` returns, written by `JSON.stringify`. */
export const toJson = (checkpoint: Changes.Checkpoint): string => JSON.stringify(checkpoint)

const invalidField = (input: string, reason: string) => Codec.invalidCheckpoint("field", input, reason)

export const notAPassCheckpoint = (input: string) =>
  Codec.invalidCheckpoint(
    "not a checkpoint",
    input,
    "is not a checkpoint of a change pass (Changes.fromJson reads one)"
  )

/** The first way in which a decoded checkpoint is not a state a pass could have been in, if any. */
const problemOf = (
  json: typeof Json.Type,
  held: { readonly deleted: number; readonly kept: number }
): InvalidCheckpoint | undefined => {
  const scan = json.scan.summary
  const { counts, deletes, phase } = json
  // the rows compared beyond the scan's are those point reads found
  const found = counts.inserted + counts.updated + counts.unchanged - scan.rows
  if (json.scan.query.dedupe !== "exact") {
    return invalidField("checkpoint.scan.query.dedupe", "must be \"exact\": a change pass keeps every id it saw")
  }
  if (found < 0) {
    return invalidField(
      "checkpoint.counts",
      `count ${counts.inserted + counts.updated + counts.unchanged} rows compared, but the scan handed on ${scan.rows}`
    )
  }
  const answered = found + counts.unconfirmed
  if (counts.reads < answered || counts.reads > answered + counts.deleted) {
    return invalidField(
      "checkpoint.counts.reads",
      `is ${counts.reads}, but ${found} rows found, ${counts.unconfirmed} unconfirmed and ${counts.deleted} deleted`
    )
  }
  if ((phase === "scan") === scan.complete) {
    return invalidField("checkpoint.phase", `is "${phase}", but the scan is ${scan.complete ? "" : "not "}complete`)
  }
  if (deletes === "exhaustive" && phase === "deletes" && !scan.exhaustive) {
    return invalidField("checkpoint.phase", "is \"deletes\", but the scan was not exhaustive")
  }
  if (counts.deleted !== held.deleted) {
    return invalidField(
      "checkpoint.counts.deleted",
      `is ${counts.deleted}, but the checkpoint holds ${held.deleted} deleted ids`
    )
  }
  if (answered !== held.kept) {
    return invalidField(
      "checkpoint.kept",
      `holds ${held.kept} ids, but the counts keep ${answered} rows a read found or left`
    )
  }
  if (counts.heldBack > counts.unconfirmed) {
    return invalidField(
      "checkpoint.counts.heldBack",
      `is ${counts.heldBack}, but only ${counts.unconfirmed} candidates are unconfirmed`
    )
  }
  if (deletes === "exhaustive" && counts.reads > 0) {
    return invalidField("checkpoint.counts.reads", "must be 0: exhaustive-only deletes read no row")
  }
  if (counts.reads > 0 && phase === "scan") {
    return invalidField("checkpoint.counts.reads", "must be 0 until the scan has ended")
  }
  if (counts.deleted > 0 && (phase === "scan" || (deletes === "exhaustive" && !scan.exhaustive))) {
    return invalidField("checkpoint.counts.deleted", "must be 0 until the scan has ended")
  }
  return undefined
}

const parse = (text: string): Either.Either<CheckpointImpl, InvalidCheckpoint> =>
  Either.flatMap(Codec.parse(text, textBounds, "checkpoint"), decodeParsed)

const decodeParsed = (json: unknown): Either.Either<CheckpointImpl, InvalidCheckpoint> => {
  // before Schema, which recurses and would set a prototype from a __proto__ key
  const fault = faultOf(json)
  if (fault !== undefined) return Either.left(invalidField(["checkpoint", ...fault.path].join("."), fault.reason))
  const object = Codec.objectWith(json, "checksum", "a change pass checkpoint")
  if (Either.isLeft(object)) return Either.left(object.left)
  const { checksum, ...body } = object.right
  if (Codec.checksum(body) !== checksum) return Either.left(Codec.checksumRefused("checkpoint.checksum"))
  return Either.flatMap(decodeJson(json, "checkpoint"), (checkpoint) =>
    Either.flatMap(
      Either.all([idsOf(checkpoint.deleted, "deleted"), idsOf(checkpoint.kept, "kept")]),
      ([deleted, kept]) => {
        const problem = problemOf(checkpoint, { deleted: deleted.size, kept: kept.size })
        return problem === undefined
          ? Either.right(
            new CheckpointImpl(checkpoint.scan, checkpoint.phase, checkpoint.deletes, checkpoint.counts, deleted, kept)
          )
          : Either.left(problem)
      }
    ))
}

/** A set of ids of a checkpoint (`field`), packed or held, checked. */
const idsOf = (
  json: typeof IdsJson.Type,
  field: "deleted" | "kept"
): Either.Either<HeldOrExact, InvalidCheckpoint> =>
  "held" in json
    ? Either.right({ _tag: "Held", size: json.held, digest: json.digest })
    : Either.mapLeft(
      Either.map(
        IdSet.restore(IdSet.exactContents(json.packed, json.others), { journal: true, capacity: 0 }),
        contentsOf
      ),
      (reason) => invalidField(`checkpoint.${field}`, reason)
    )

const heldOf = (ids: HeldOrExact): IdSet.HeldContents => ids._tag === "Exact" ? IdSet.heldContents(ids) : ids

/** The checkpoint without the scan's ids and the deleted ones, their counts and digests kept: for a sink that holds them. */
export const withoutIds = (checkpoint: Changes.Checkpoint): Changes.Checkpoint =>
  checkpoint instanceof CheckpointImpl
    ? new CheckpointImpl(
      scanWithoutIds(checkpoint.scan),
      checkpoint.phase,
      checkpoint.mode,
      checkpoint.counts,
      heldOf(checkpoint.deleted),
      heldOf(checkpoint.kept)
    )
    : checkpoint

/** The checkpoint with the ids its sink gave back (the scan's, the deleted and kept ones), each checked as `Checkpoint.withIds` checks them. */
export const withIds = <E = never, R = never>(
  checkpoint: Changes.Checkpoint,
  ids: Changes.SinkIds<E, R>
): Effect.Effect<Changes.Checkpoint, InvalidCheckpoint | E, R> =>
  Effect.suspend(() => {
    if (!(checkpoint instanceof CheckpointImpl)) return Effect.fail(notAPassCheckpoint("checkpoint"))
    const gathered = (held: HeldOrExact, given: Changes.SinkIds<E, R>["kept"], input: "deleted" | "kept") =>
      held._tag === "Exact" ? Effect.succeed(held) : gatherIds(held, given ?? [], input)
    return Effect.map(
      Effect.all([
        scanWithIds(checkpoint.scan, ids.ids),
        gathered(checkpoint.deleted, ids.deleted, "deleted"),
        gathered(checkpoint.kept, ids.kept, "kept")
      ]),
      ([scan, deleted, kept]) =>
        new CheckpointImpl(scan, checkpoint.phase, checkpoint.mode, checkpoint.counts, deleted, kept)
    )
  })

/** Whether a checkpoint leaves ids to its sink, which `withIds` must give back before a pass resumes from it. */
export const holdsNoIds = (checkpoint: CheckpointImpl): boolean =>
  checkpoint.deleted._tag === "Held" || checkpoint.kept._tag === "Held" ||
  (checkpoint.scan instanceof ScanCheckpointImpl && checkpoint.scan.state.seen._tag === "Held")

export const fromJson = (text: string): Effect.Effect<Changes.Checkpoint, InvalidCheckpoint> =>
  Effect.suspend(() => parse(text))

/**
 * The ids a complete scan emitted, from its checkpoint (under `dedupe: "exact"`, all of them): the
 * scan's own set when it has added nothing since, else one made again.
 */
export const seenOf = (checkpoint: ScanCheckpoint.Checkpoint): Effect.Effect<IdSet.IdSet> =>
  Effect.orDie(Effect.suspend(() => {
    const seen = checkpoint instanceof ScanCheckpointImpl ? checkpoint.state.seen : undefined
    const restored = seen === undefined
      ? Either.left("not a checkpoint of this library")
      : seen._tag !== "Exact"
      ? Either.left("the scan kept only recent ids")
      : seen.source?.size() === seen.size
      ? Either.right(seen.source)
      : IdSet.restore(seen, { journal: false, capacity: 0 })
    return Either.mapLeft(restored, (reason) => new Error(`the scan's ids cannot be read back: ${reason}`))
  }))

/** A set of ids a checkpoint holds (the deleted or the kept ones), or a new, empty one for a fresh pass. */
export const restoreIds = (ids: HeldOrExact | undefined): Effect.Effect<IdSet.IdSet> =>
  ids === undefined
    ? Effect.sync(() => IdSet.exact({ journal: true }))
    : Effect.orDie(Effect.suspend(() =>
      Either.mapLeft(
        IdSet.restore(ids, { journal: true, capacity: 0 }),
        (reason) => new Error(`the checkpoint's ids cannot be read back: ${reason}`)
      )
    ))
