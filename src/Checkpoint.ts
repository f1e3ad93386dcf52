/**
 * Checkpoints of a scan: where a scan stands between two pages, so that it can go on from there
 * after a crash, a deploy or a lost connection, as if it had never stopped.
 *
 * `client.scan(options).pages` hands out each page's rows with the checkpoint of the state after
 * exactly those rows; `resume: checkpoint` goes on from it. A sink that commits a page's rows and
 * its checkpoint in one transaction, and resumes from the checkpoint it committed last, neither
 * repeats nor loses a row.
 *
 * A checkpoint holds the scan's position, the rows it re-reads before the next window, what it
 * learnt of the server (its page cap), its counters, and the ids it emitted: under
 * `dedupe: "exact"`, every one, packed in 12 bytes (16 characters of base64) for the service's
 * ids; under `"recent"`, the window it keeps. It also names its query (Microapp, filters, sort,
 * page size, overlap, dedupe): a scan of another query refuses it.
 *
 * Store it with `toJson` and read it back with `fromJson`; the `Checkpoint` Schema does the same
 * inside other Schemas. The JSON is opaque: a versioned format with a checksum that `fromJson`
 * checks, whose fields are this library's business and may change with its version. Store it as
 * it is; do not read or edit it.
 *
 * A sink that holds the rows (the file written, a database table) holds their ids too: it can
 * store `withoutIds(checkpoint)`, a checkpoint of O(page) whatever the table's size, with the
 * count and digest of the ids in place of them, and give the ids back on resume through
 * `withIds`, which checks them against that count and digest.
 *
 * @since 0.1.0
 */
import { type Effect, type Schema, type Stream } from "effect"
import * as internal from "./internal/scan/checkpoint.js"
import type { InvalidCheckpoint } from "./MicroappError.js"
import type * as RowStream from "./RowStream.js"

/**
 * @since 0.1.0
 * @category type ids
 */
export const TypeId: unique symbol = internal.TypeId

/**
 * @since 0.1.0
 * @category type ids
 */
export type TypeId = typeof TypeId

/**
 * Where a scan stood after a page. Made by `pages` and `fromJson` only; a value: later pages do
 * not change it, and a scan may resume from it any number of times.
 *
 * @since 0.1.0
 * @category models
 */
export interface Checkpoint {
  readonly [TypeId]: TypeId
  /** The query it belongs to. */
  readonly query: Query
  /** The scan's figures up to this point, over all its runs; `summary.complete`: nothing is left to read. */
  readonly summary: RowStream.ScanSummary
  /** Its JSON value, opaque (what `JSON.stringify` writes): `toJson` is its text, `fromJson` reads it back. */
  toJSON(): unknown
}

/**
 * The query of a checkpoint: filters sorted by fieldID, each value as sent (a string); sort keys
 * in order, each with its order.
 *
 * @since 0.1.0
 * @category models
 */
export interface Query {
  readonly microAppID: string
  readonly filters: ReadonlyArray<{ readonly fieldID: string; readonly value: string }>
  readonly sort: ReadonlyArray<{ readonly field: number; readonly order: "asc" | "desc" }>
  readonly pageSize: number
  readonly overlap: number
  readonly dedupe: "exact" | "recent"
}

/**
 * A checkpoint from its JSON value (what `toJSON` returns), checked as `fromJson` checks it;
 * encodes to that value. The value is opaque: store it, or its text, as it is.
 * `CheckpointFromJson` reads it from text, bounded as `fromJson` is.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Checkpoint: Schema.Schema<Checkpoint, unknown> = internal.CheckpointSchema

/**
 * A checkpoint from its JSON text, checked as `fromJson` checks it (its size and nesting bounded
 * before it is parsed); encodes to the text `toJson` writes.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CheckpointFromJson: Schema.Schema<Checkpoint, string> = internal.CheckpointFromJson

/**
 * @since 0.1.0
 * @category guards
 */
export const isCheckpoint: (u: unknown) => u is Checkpoint = internal.isCheckpoint

/**
 * The checkpoint as JSON text, to store; never fails. Its size is about 16 bytes per row emitted
 * under `dedupe: "exact"` (service ids; other ids cost their JSON string), bounded under `"recent"`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toJson: (checkpoint: Checkpoint) => string = internal.toJson

/**
 * A checkpoint from the text `toJson` wrote. Anything else (not JSON, truncated, not a checkpoint,
 * another version, a field out of range, counters that no scan could reach, a checksum that does
 * not match) is an `InvalidCheckpoint` whose `input` names the field, whose `problem` says which kind
 * of fault it is and whose `reason` says what is wrong. Nothing was sent: it names no call.
 *
 * @since 0.1.0
 * @category decoding
 */
export const fromJson: (text: string) => Effect.Effect<Checkpoint, InvalidCheckpoint> = internal.fromJson

/**
 * The ids a sink gives back: any iterable, or a stream (a database's cursor), read once.
 *
 * @since 0.2.0
 * @category models
 */
export type Ids<E = never, R = never> = Iterable<string> | Stream.Stream<string, E, R>

/**
 * The checkpoint in its sink-held form: the same position and counters, the ids emitted replaced
 * by their count and an order-independent 64-bit digest. Its JSON is O(page) whatever the
 * table's size, for a sink that commits the rows it was handed and can give their ids back. A
 * scan does not resume from it directly (`InvalidCheckpoint`, problem `"ids held"`): `withIds` first. Under
 * `dedupe: "recent"` the checkpoint is returned as it is (its ids are bounded already).
 *
 * @since 0.2.0
 * @category sink-held
 */
export const withoutIds: (checkpoint: Checkpoint) => Checkpoint = internal.withoutIds

/**
 * A sink-held checkpoint made whole again from the ids the sink committed (each row it was handed
 * that had an `_id`, in any order): the checkpoint a scan resumes from exactly as from the one
 * `pages` handed out. `InvalidCheckpoint` (problem `"ids differ"`, `input: "ids"`) when they are not exactly the ids it counts:
 * one twice, too many (reading stops there), too few, or others (their digest differs); the
 * stream's own failure as it is. A checkpoint that holds its ids is returned as it is, `ids` unread.
 *
 * @since 0.2.0
 * @category sink-held
 */
export const withIds: <E = never, R = never>(
  checkpoint: Checkpoint,
  ids: Ids<E, R>
) => Effect.Effect<Checkpoint, InvalidCheckpoint | E, R> = internal.withIds
