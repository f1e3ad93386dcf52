/**
 * Change capture: what changed in a Microapp since the last pass, without a change feed.
 *
 * The service has no change feed, no modified-date cursor and no delete notifications, so a pass
 * reads the whole table (a scan) and compares each row with the previous pass, held by whoever
 * keeps the copy (a `Baseline`): by id, and by a fingerprint of the row's content. A row the
 * baseline lacks is `Inserted`; one whose fingerprint differs is `Updated`; a baseline id that an
 * exhaustive pass did not see is `Deleted`, reported last. A pass that is not exhaustive (see
 * `RowStream.ScanSummary.exhaustive`) reports no delete, and its summary says so.
 *
 * `pass.pages` hands out the changes page by page with the checkpoint of the state after them: a
 * sink that commits both in one transaction, and resumes from the last checkpoint it committed,
 * sees every change once.
 *
 * @since 0.1.0
 */
import type { Data, Effect, Stream } from "effect"
import type * as ScanCheckpoint from "./Checkpoint.js"
import * as internal from "./internal/changes.js"
import * as Fingerprint from "./internal/fingerprint.js"
import type { MicroappClient } from "./MicroappClient.js"
import type { InvalidInput, ScanError } from "./MicroappError.js"
import type * as RowStream from "./RowStream.js"

/**
 * One change. `fingerprint` is the row's content fingerprint now, `previous` the one the baseline
 * held. Rows whose fingerprint did not change are counted (`Summary.unchanged`), not emitted.
 *
 * - `Inserted`: the baseline does not have the id.
 * - `Updated`: the baseline has the id with another fingerprint.
 * - `Deleted`: the baseline has the id and an exhaustive pass did not see it.
 *
 * @since 0.1.0
 * @category models
 */
export type Change<A> = Data.TaggedEnum<{
  Inserted: { readonly id: string; readonly row: A; readonly fingerprint: string }
  Updated: { readonly id: string; readonly row: A; readonly fingerprint: string; readonly previous: string }
  Deleted: { readonly id: string; readonly previous: string }
}>

/**
 * @since 0.1.0
 * @category models
 */
export interface ChangeDefinition extends Data.TaggedEnum.WithGenerics<1> {
  readonly taggedEnum: Change<this["A"]>
}

/**
 * Constructors and matchers: `Change.Inserted({...})`, `Change.$is("Deleted")`, `Change.$match`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const Change = internal.Change

/**
 * A row's content fingerprint: 16 hex digits (64 bits) of its canonical JSON, the same whatever
 * the order of its keys. Sinks keep it across passes: its value for a given content never changes.
 *
 * @since 0.1.0
 * @category fingerprints
 */
export const fingerprint: (row: unknown) => string = Fingerprint.fingerprint

/**
 * A baseline id that a pass has not seen, with the fingerprint the baseline holds for it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Unseen {
  readonly id: string
  readonly fingerprint: string
}

/**
 * The previous pass, as whoever keeps the copy holds it (a database, a file, a map).
 *
 * - `lookup(ids)`: the fingerprints of those of `ids` it holds; called once per page, so a large
 *   baseline never has to be in memory.
 * - `unseen(seen)`: its ids that this pass did not see, with their fingerprints. Called once, at the
 *   end of an exhaustive pass only; `seen` answers from the pass's exact set of ids (and the deletes
 *   it already reported), and a sink that tracks what it saw itself may ignore it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Baseline<E = never, R = never> {
  readonly lookup: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, string>, E, R>
  readonly unseen: (seen: (id: string) => boolean) => Stream.Stream<Unseen, E, R>
}

/**
 * Baselines in memory: `Baseline.empty` (a first pass: every row is `Inserted`) and
 * `Baseline.fromMap(fingerprints)` (fingerprints by id, e.g. from `fold`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const Baseline: {
  readonly empty: Baseline
  readonly fromMap: (fingerprints: ReadonlyMap<string, string>) => Baseline
} = internal.Baseline

/**
 * The fingerprints by id after `changes`: a copy of `fingerprints` with the inserted and updated
 * rows set and the deleted ones removed. Folding each pass into the last gives the next pass's
 * baseline (`Baseline.fromMap`), for a copy kept in memory.
 *
 * @since 0.1.0
 * @category baselines
 */
export const fold: (
  fingerprints: ReadonlyMap<string, string>,
  changes: Iterable<Change<unknown>>
) => ReadonlyMap<string, string> = internal.fold

/**
 * The options of a pass besides the scan's: the baseline, and a checkpoint to go on from.
 * `dedupe` can only be `"exact"`: deletes need the exact set of ids seen (`"recent"` is refused
 * with `InvalidInput`).
 *
 * @since 0.1.0
 * @category models
 */
export interface PassOptions<E, R> {
  readonly baseline: Baseline<E, R>
  /** Goes on from a checkpoint of `pages`, of a pass over the same query. */
  readonly resume?: Checkpoint | undefined
  readonly dedupe?: "exact" | undefined
}

/**
 * `client.changes(options)`: the scan's options (`RowsOptions`) and the pass's.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<E, R> extends Omit<MicroappClient.RowsOptions, keyof PassOptions<E, R>>, PassOptions<E, R> {}

/**
 * Changes with the checkpoint of the state after them. Each page of the scan becomes one page of
 * changes (often empty: its rows did not change); the deletes follow in pages of `pageSize`, and
 * the last page of a pass holds a checkpoint whose phase is `"done"`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Page<A> {
  readonly changes: ReadonlyArray<Change<A>>
  readonly checkpoint: Checkpoint
}

/**
 * A change pass: its changes, or its pages with checkpoints, and its summary (live while it
 * runs). Each run of `changes` or `pages` is a pass of its own; `summary` describes the run
 * started last.
 *
 * @since 0.1.0
 * @category models
 */
export interface Pass<A, E, R> {
  readonly changes: Stream.Stream<Change<A>, ScanError | E, R>
  readonly pages: Stream.Stream<Page<A>, ScanError | E, R>
  readonly summary: Effect.Effect<Summary>
}

/**
 * Whether a pass reports deletes: `"pending"` until its scan ends, `"reported"` when the scan was
 * exhaustive, `"skipped"` when it was not (then no row is reported deleted).
 *
 * @since 0.1.0
 * @category models
 */
export type Deletes = "pending" | "reported" | "skipped"

/**
 * The scan's summary and the pass's counts, over all its runs when resumed. `inserted + updated +
 * unchanged` is the scan's `rows`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Summary extends RowStream.ScanSummary {
  readonly inserted: number
  readonly updated: number
  readonly deleted: number
  readonly unchanged: number
  readonly deletes: Deletes
}

/**
 * @since 0.1.0
 * @category type ids
 */
export const CheckpointTypeId: unique symbol = internal.CheckpointTypeId

/**
 * @since 0.1.0
 * @category type ids
 */
export type CheckpointTypeId = typeof CheckpointTypeId

/**
 * Where a pass stood after a page: the scan's checkpoint, the counts so far, the phase
 * (`"scan"`, `"deletes"`, `"done"`) and the ids already reported deleted. A value: a pass may
 * resume from it any number of times.
 *
 * @since 0.1.0
 * @category models
 */
export interface Checkpoint {
  readonly [CheckpointTypeId]: CheckpointTypeId
  readonly phase: "scan" | "deletes" | "done"
  readonly summary: Summary
}

/**
 * @since 0.1.0
 * @category guards
 */
export const isCheckpoint: (u: unknown) => u is Checkpoint = internal.isCheckpoint

/**
 * The checkpoint as JSON text, to store: the scan's checkpoint (as `Checkpoint.toJson` writes
 * it, as an object), the counts, the phase, the deleted ids (packed as the scan's) and a checksum.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toJson: (checkpoint: Checkpoint) => string = internal.toJson

/**
 * A checkpoint from the text `toJson` wrote; anything else (damaged, edited, counts that no pass
 * could reach, a scan checkpoint under `dedupe: "recent"`) is an `InvalidInput` naming the field.
 *
 * @since 0.1.0
 * @category decoding
 */
export const fromJson: (text: string) => Effect.Effect<Checkpoint, InvalidInput> = internal.fromJson

/**
 * What a sink gives back to make a sink-held pass checkpoint whole: `ids`, every id the pass has
 * compared so far (changed or not), and `deleted`, the ids it has reported deleted so far (none
 * before the `"deletes"` phase).
 *
 * @since 0.1.0
 * @category models
 */
export interface SinkIds<E = never, R = never> {
  readonly ids: ScanCheckpoint.Ids<E, R>
  readonly deleted: ScanCheckpoint.Ids<E, R>
}

/**
 * The checkpoint in its sink-held form: the scan's checkpoint as `Checkpoint.withoutIds` makes it,
 * the deleted ids replaced by their count and digest. O(page) whatever the table's size. A pass
 * does not resume from it directly (`InvalidInput`): `withIds` first.
 *
 * @since 0.1.0
 * @category sink-held
 */
export const withoutIds: (checkpoint: Checkpoint) => Checkpoint = internal.withoutIds

/**
 * A sink-held checkpoint made whole again from the ids the sink gives back, each set checked as
 * `Checkpoint.withIds` checks it (`InvalidInput` with `input` `"ids"` or `"deleted"`). A
 * checkpoint that holds its ids is returned as it is, nothing read.
 *
 * @since 0.1.0
 * @category sink-held
 */
export const withIds: <E = never, R = never>(
  checkpoint: Checkpoint,
  ids: SinkIds<E, R>
) => Effect.Effect<Checkpoint, InvalidInput | E, R> = internal.withIds
