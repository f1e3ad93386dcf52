/**
 * Change capture: what changed in a Microapp since the last pass, without a change feed.
 *
 * The service has no change feed, no modified-date cursor and no delete notifications, so a pass
 * reads the whole table (a scan) and compares each row with the previous pass, held by whoever
 * keeps the copy (a `Baseline`): by id, and by a fingerprint of the row's content. A row the
 * baseline lacks is `Inserted`; one whose fingerprint differs is `Updated`.
 *
 * A baseline id the scan did not see is a candidate delete, and a point read (`getRow`) decides.
 * Only the service's own answer for a row it does not hold (HTTP 404
 * `{"status":"error","message":"Row not found"}`, a `NotFound` with `noSuchRow`) proves it
 * missing; a row found is compared as a scanned one is (`Updated`, or unchanged); any other
 * answer (another 404, a success without a row, a row with another `_id`, a fault, a refusal, a
 * row set aside as invalid) keeps it, counted `unconfirmed`, for a later pass to settle. The
 * proven candidates are held until every candidate is answered; then a control read asks the same
 * endpoint for a row the scan saw: unless it answers that very row, none is deleted (all are kept,
 * counted `heldBack`), as when the scan saw no row at all. Last, the delete guard: a pass that
 * would delete more than `maxDeletes` (by default the more of 100 rows and a tenth of the copy,
 * `deleteGuard`) fails with `TooManyDeletes` before its first `Deleted`. So a pass reports its
 * deletes whether its scan was exhaustive or not (rows inserted during a scan that was not may
 * still come in the next), and never one of a row that exists. Each candidate costs one request
 * (and the pass one more, the control read), made concurrently within the scan's bound and the
 * client's, timed out and retried like the scan's. `deletes: "exhaustive"` makes no read: a
 * candidate is `Deleted` after an exhaustive scan (the guard applies all the same), and a scan
 * that was not exhaustive reports no delete. The ids of the proven candidates stay in memory until
 * they are reported: a pass that deletes N rows holds N ids and fingerprints at once (under
 * `deletes: "exhaustive"`, at most the guard's bound: past it, the pass stops at once).
 *
 * `pass.pages` hands out the changes page by page with the checkpoint of the state after them: a
 * sink that commits both in one transaction, and resumes from the last checkpoint it committed,
 * sees every change once.
 *
 * @since 0.2.0
 */
import { type Data, type Effect, Schema, type Stream } from "effect"
import type * as ScanCheckpoint from "./Checkpoint.js"
import * as internal from "./internal/changes/index.js"
import type { MicroappClient } from "./MicroappClient.js"
import type { InvalidCheckpoint, ScanError, TooManyDeletes } from "./MicroappError.js"
import * as RowStream from "./RowStream.js"

/**
 * One change. `fingerprint` is the row's content fingerprint now, `previous` the one the baseline
 * held. Rows whose fingerprint did not change are counted (`Summary.unchanged`), not emitted.
 *
 * - `Inserted`: the baseline does not have the id.
 * - `Updated`: the baseline has the id with another fingerprint.
 * - `Deleted`: the baseline has the id, the scan did not see it, a point read answered the
 *   service's "no such row" (`NotFound` with `noSuchRow`) and the control read found a row the
 *   scan saw (under `deletes: "exhaustive"`: the scan was exhaustive); within the delete guard.
 *
 * @since 0.2.0
 * @category models
 */
export type Change<A> = Data.TaggedEnum<{
  Inserted: { readonly id: string; readonly row: A; readonly fingerprint: string }
  Updated: { readonly id: string; readonly row: A; readonly fingerprint: string; readonly previous: string }
  Deleted: { readonly id: string; readonly previous: string }
}>

/**
 * @since 0.2.0
 * @category models
 */
export interface ChangeDefinition extends Data.TaggedEnum.WithGenerics<1> {
  readonly taggedEnum: Change<this["A"]>
}

/**
 * Constructors and matchers: `Change.Inserted({...})`, `Change.$is("Deleted")`, `Change.$match`.
 *
 * @since 0.2.0
 * @category constructors
 */
export const Change = internal.Change

/**
 * A row's content fingerprint: 16 hex digits (64 bits) of its canonical JSON, the same whatever
 * the order of its keys. Sinks keep it across passes: its value for a given content never changes.
 *
 * @since 0.2.0
 * @category fingerprints
 */
export const fingerprint: (row: unknown) => string = internal.fingerprint

/**
 * A baseline id that a pass has not seen, with the fingerprint the baseline holds for it.
 *
 * @since 0.2.0
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
 * - `unseen(seen)`: its ids that this pass did not see, with their fingerprints. Called once, when
 *   the scan has ended (under `deletes: "exhaustive"`, an exhaustive one only); `seen` answers from
 *   the pass's exact set of ids (and the ids its point reads already settled), and a sink that
 *   tracks what it saw itself may ignore it.
 *
 * @since 0.2.0
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
 * @since 0.2.0
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
 * @since 0.2.0
 * @category baselines
 */
export const fold: (
  fingerprints: ReadonlyMap<string, string>,
  changes: Iterable<Change<unknown>>
) => ReadonlyMap<string, string> = internal.fold

/**
 * The options of a pass besides the scan's: the baseline, and a checkpoint to go on from.
 * `dedupe` can only be `"exact"`: deletes need the exact set of ids seen (`"recent"` is refused
 * with `InvalidInput`). A `resume` refused is an `InvalidCheckpoint`.
 *
 * @since 0.2.0
 * @category models
 */
export interface PassOptions<E, R> {
  readonly baseline: Baseline<E, R>
  /** Goes on from a checkpoint of `pages`, of a pass over the same query and `deletes`. */
  readonly resume?: Checkpoint | undefined
  readonly dedupe?: "exact" | undefined
  /**
   * `"confirmed"` (the default): a baseline id the scan did not see is deleted once a point read
   * answers the service's "no such row" and the control read passes. `"exhaustive"`: deleted
   * without a read, after an exhaustive scan only.
   */
  readonly deletes?: "confirmed" | "exhaustive" | undefined
  /**
   * The delete guard: the most rows the pass may delete, a whole number (0: none). A pass that
   * would delete more fails with `TooManyDeletes` before it reports any delete. By default, the
   * more of `deleteGuard.count` (100) and `deleteGuard.share` (a tenth) of the copy (the rows the
   * baseline holds): it trips when the deletes exceed both. Applies under both `deletes` modes.
   *
   * @since 0.2.0
   */
  readonly maxDeletes?: number | undefined
}

/**
 * The delete guard's default: a pass may delete `count` rows, or `share` of the copy when that is
 * more (`PassOptions.maxDeletes` replaces it).
 *
 * @since 0.2.0
 * @category constants
 */
export const deleteGuard: { readonly count: 100; readonly share: 0.1 } = internal.deleteGuard

/**
 * `client.changes(options)`: the scan's options (`RowsOptions`) and the pass's.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options<E, R> extends Omit<MicroappClient.RowsOptions, keyof PassOptions<E, R>>, PassOptions<E, R> {}

/**
 * Changes with the checkpoint of the state after them. Each page of the scan becomes one page of
 * changes (often empty: its rows did not change); the candidate deletes follow in pages of
 * `pageSize` (their `Deleted`, and `Updated` for rows a point read found changed), and the last
 * page of a pass holds a checkpoint whose phase is `"done"`.
 *
 * `seen`: the ids of the scan's rows this page compared, changed or not (empty for a page of
 * candidate deletes). `found` and `unconfirmed`: the candidates of this page a point read found
 * (their changes among `changes`), and those it could not confirm deleted (both empty for a page
 * of the scan). A sink holding its checkpoint's ids records them, to give back as `SinkIds.ids`
 * and `SinkIds.kept`.
 *
 * @since 0.2.0
 * @category models
 */
export interface Page<A> {
  readonly changes: ReadonlyArray<Change<A>>
  readonly seen: ReadonlyArray<string>
  readonly found: ReadonlyArray<string>
  readonly unconfirmed: ReadonlyArray<string>
  readonly checkpoint: Checkpoint
}

/**
 * A change pass: its changes, or its pages with checkpoints, and its summary (live while it
 * runs). Each run of `changes` or `pages` is a pass of its own; `summary` describes the run
 * started last.
 *
 * @since 0.2.0
 * @category models
 */
export interface Pass<A, E, R> {
  readonly changes: Stream.Stream<Change<A>, ScanError | TooManyDeletes | E, R>
  readonly pages: Stream.Stream<Page<A>, ScanError | TooManyDeletes | E, R>
  readonly summary: Effect.Effect<Summary>
}

/**
 * Whether a pass reports deletes: `"pending"` until its scan ends, then `"reported"`; under
 * `deletes: "exhaustive"`, `"skipped"` when the scan was not exhaustive (no row is then reported
 * deleted).
 *
 * @since 0.2.0
 * @category models
 */
export const Deletes = Schema.Literal("pending", "reported", "skipped")

/**
 * @since 0.2.0
 * @category models
 */
export type Deletes = typeof Deletes.Type

/**
 * A pass's own counts, declared once: the summary's, and a checkpoint's. `reads`: the point reads
 * of candidate deletes, one per candidate (its retries aside, and the control read aside);
 * `unconfirmed`: the candidates kept for a later pass, their read having answered neither found
 * nor the service's "no such row", or (`heldBack`, counted in `unconfirmed` too) having answered
 * "no such row" in a pass whose control read did not find a row the scan saw.
 *
 * @since 0.2.0
 * @category models
 */
export const Counts: Schema.Struct<{
  inserted: typeof Schema.NonNegativeInt
  updated: typeof Schema.NonNegativeInt
  unchanged: typeof Schema.NonNegativeInt
  deleted: typeof Schema.NonNegativeInt
  reads: typeof Schema.NonNegativeInt
  unconfirmed: typeof Schema.NonNegativeInt
  heldBack: typeof Schema.NonNegativeInt
}> = internal.Counts

/**
 * The scan's summary and the pass's counts, over all its runs when resumed. `reads` counts the
 * point reads of candidate deletes (one per candidate, its retries aside): `deleted` of them
 * answered the service's "no such row", `unconfirmed` did not prove it (`heldBack` of them did,
 * but the control read failed), and the rest found their row, counted `updated` or `unchanged`
 * with the scan's. So `inserted + updated + unchanged` is the scan's `rows` plus
 * `reads - deleted - unconfirmed`.
 *
 * @since 0.2.0
 * @category models
 */
export const Summary = Schema.Struct({ ...RowStream.ScanSummary.fields, ...Counts.fields, deletes: Deletes })

/**
 * @since 0.2.0
 * @category models
 */
export interface Summary extends Schema.Schema.Type<typeof Summary> {}

/**
 * @since 0.2.0
 * @category type ids
 */
export const CheckpointTypeId: unique symbol = internal.CheckpointTypeId

/**
 * @since 0.2.0
 * @category type ids
 */
export type CheckpointTypeId = typeof CheckpointTypeId

/**
 * Where a pass stood after a page: the scan's checkpoint, the counts so far, the phase
 * (`"scan"`, `"deletes"`, `"done"`), the ids already reported deleted and those point reads kept.
 * A value: a pass may resume from it any number of times; it resumes without reading or deleting
 * any candidate twice.
 *
 * @since 0.2.0
 * @category models
 */
export interface Checkpoint {
  readonly [CheckpointTypeId]: CheckpointTypeId
  readonly phase: "scan" | "deletes" | "done"
  readonly summary: Summary
  /** Its JSON value, opaque (what `JSON.stringify` writes): `toJson` is its text, `fromJson` reads it back. */
  toJSON(): unknown
}

/**
 * @since 0.2.0
 * @category guards
 */
export const isCheckpoint: (u: unknown) => u is Checkpoint = internal.isCheckpoint

/**
 * The checkpoint as JSON text, to store: the scan's checkpoint (as `Checkpoint.toJson` writes
 * it, as an object), the counts, the phase, the deletes mode, the deleted and kept ids (packed as
 * the scan's) and a checksum. Text written by earlier versions (no mode, no reads) reads as a pass
 * with `deletes: "exhaustive"`.
 *
 * @since 0.2.0
 * @category encoding
 */
export const toJson: (checkpoint: Checkpoint) => string = internal.toJson

/**
 * A checkpoint from the text `toJson` wrote; anything else (damaged, edited, counts that no pass
 * could reach, a scan checkpoint under `dedupe: "recent"`) is an `InvalidCheckpoint` naming the field,
 * its `problem` saying what is wrong.
 *
 * @since 0.2.0
 * @category decoding
 */
export const fromJson: (text: string) => Effect.Effect<Checkpoint, InvalidCheckpoint> = internal.fromJson

/**
 * What a sink gives back to make a sink-held pass checkpoint whole: `ids`, every id the scan has
 * compared so far (changed or not), `deleted`, the ids it has reported deleted so far, and `kept`,
 * the ids of the pages' `found` and `unconfirmed` so far (both none before the `"deletes"` phase; `kept` may be left
 * out while it is none).
 *
 * @since 0.2.0
 * @category models
 */
export interface SinkIds<E = never, R = never> {
  readonly ids: ScanCheckpoint.Ids<E, R>
  readonly deleted: ScanCheckpoint.Ids<E, R>
  readonly kept?: ScanCheckpoint.Ids<E, R> | undefined
}

/**
 * The checkpoint in its sink-held form: the scan's checkpoint as `Checkpoint.withoutIds` makes it,
 * the deleted and kept ids replaced by their counts and digests. O(page) whatever the table's size. A pass
 * does not resume from it directly (`InvalidCheckpoint`, problem `"ids held"`): `withIds` first.
 *
 * @since 0.2.0
 * @category sink-held
 */
export const withoutIds: (checkpoint: Checkpoint) => Checkpoint = internal.withoutIds

/**
 * A sink-held checkpoint made whole again from the ids the sink gives back, each set checked as
 * `Checkpoint.withIds` checks it (`InvalidCheckpoint`, problem `"ids differ"`, with `input` `"ids"`,
 * `"deleted"` or `"kept"`). A
 * checkpoint that holds its ids is returned as it is, nothing read.
 *
 * @since 0.2.0
 * @category sink-held
 */
export const withIds: <E = never, R = never>(
  checkpoint: Checkpoint,
  ids: SinkIds<E, R>
) => Effect.Effect<Checkpoint, InvalidCheckpoint | E, R> = internal.withIds
