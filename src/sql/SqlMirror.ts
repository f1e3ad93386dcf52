/**
 * A mirror of a Microapp in an `@effect/sql` database (SQLite and PostgreSQL are tested): a table kept
 * equal to the Microapp, one change pass (`Changes`) a run, each page committed with its checkpoint, so
 * a run killed at any moment is resumed by the next. docs/keeping-a-copy.md lists its tables.
 *
 * @since 0.2.0
 */
import type { SqlClient, SqlError } from "@effect/sql"
import { Effect, type Option, Schema } from "effect"
import type * as Changes from "../Changes.js"
import type { AnyMicroapp } from "../Microapp.js"
import type { MicroappClient } from "../MicroappClient.js"
import { type InvalidInput, type ScanError, type TooManyDeletes, TypeId } from "../MicroappError.js"
import * as internal from "./internal/sqlMirror.js"

/**
 * What to mirror, where, how; a run whose selection, page size or overlap differ from its pass's starts anew.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options extends Omit<MicroappClient.RowsOptions, "resume" | "dedupe"> {
  /** The table of rows; default `microapp_rows`. */
  readonly table?: string | undefined
  /** Keeps every version of every row in `<table>_history`; default false. */
  readonly history?: boolean | undefined
  /** Keeps a view of this name with a typed column per field (docs/keeping-a-copy.md); none by default. */
  readonly view?: string | undefined
  /** The typed Microapp whose fields type the view's columns; without it, inferred from the rows read. */
  readonly definition?: AnyMicroapp | undefined
  /** How a pass deletes (`Changes.PassOptions`): `"confirmed"` by a point read, the default, or `"exhaustive"`. */
  readonly deletes?: Changes.PassOptions<never, never>["deletes"]
  /** The delete guard (`Changes.PassOptions.maxDeletes`): past it, `TooManyDeletes` and no delete made. */
  readonly maxDeletes?: number | undefined
}

/**
 * Another run moved the pass on while this one ran: this one stops, its last transaction rolled back.
 *
 * @since 0.2.0
 * @category errors
 */
export class ConcurrentRun extends Schema.TaggedError<ConcurrentRun>("effect-microapp/sql/SqlMirror/ConcurrentRun")(
  "ConcurrentRun",
  { table: Schema.String, microAppID: Schema.String }
) {
  /** @since 0.2.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `another run is mirroring ${this.microAppID} into ${this.table} at the same time`
  }
}

/**
 * The table's default name.
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultTable: "microapp_rows" = internal.defaultTable

/**
 * A database failure in the driver's words: the `SqlError`'s message, its cause's, URLs' passwords hidden.
 *
 * @since 0.2.0
 * @category errors
 */
export const describeError: (error: { readonly message: string; readonly cause?: unknown }) => string =
  internal.databaseWords

/**
 * The table of passes.
 *
 * @since 0.2.0
 * @category constants
 */
export const passesTable: "microapp_passes" = internal.passesTable

/**
 * The fields a view holds as columns at most; the others are left in `data`, a warning names them.
 *
 * @since 0.2.0
 * @category constants
 */
export const maxViewFields: typeof internal.maxViewFields = internal.maxViewFields

/**
 * The history table of `table`.
 *
 * @since 0.2.0
 * @category constants
 */
export const historyTableOf: (table: string) => string = internal.historyTableOf

/**
 * The table of the ids the pass in progress on `table` has deleted.
 *
 * @since 0.2.0
 * @category constants
 */
export const deletesTableOf: (table: string) => string = internal.deletesTableOf

/**
 * The table of the ids the pass in progress on `table` kept after a point read.
 *
 * @since 0.2.0
 * @category constants
 */
export const keptTableOf: (table: string) => string = internal.keptTableOf

/**
 * The table of the pass that last saw each row of `table` without writing it (unchanged in its
 * scan, or found by a point read); a row a pass writes holds the pass in `table`'s own `pass`.
 *
 * @since 0.2.0
 * @category constants
 */
export const seenTableOf: (table: string) => string = internal.seenTableOf

/**
 * Where a mirror stands: its pass in progress or last completed, and its summary (none before a commit).
 *
 * @since 0.2.0
 * @category models
 */
export interface PassState {
  readonly pass: number
  readonly complete: boolean
  readonly summary: Option.Option<Changes.Summary>
}

/**
 * The table of `options`, refused with `InvalidInput` unless `[A-Za-z_][A-Za-z0-9_]{0,49}`, not `sqlite_*`, `pg_*`.
 *
 * @since 0.2.0
 * @category options
 */
export const tableOf: (options: { readonly table?: string | undefined }) => Effect.Effect<string, InvalidInput> =
  internal.tableOf

/**
 * The view of `options`, refused as a table is (up to 63 characters) or when it names a table of the mirror.
 *
 * @since 0.2.0
 * @category options
 */
export const viewOf: (
  options: { readonly view: string; readonly table?: string | undefined }
) => Effect.Effect<string, InvalidInput> = internal.viewOf

/**
 * Makes the tables of a mirror into `table` when missing, and migrates those an earlier version
 * made: what `run` does first, for a deployment that prepares its database before any run.
 *
 * @since 0.2.0
 * @category running
 */
export const createTables: (
  options: { readonly table?: string | undefined; readonly history?: boolean | undefined }
) => Effect.Effect<void, InvalidInput | SqlError.SqlError, SqlClient.SqlClient> = internal.createTables

/**
 * The state of the mirror of `microAppID` into `table`; none before its first run. It creates nothing.
 *
 * @since 0.2.0
 * @category running
 */
export const passState: (
  options: { readonly microAppID: string; readonly table?: string | undefined }
) => Effect.Effect<Option.Option<PassState>, InvalidInput | SqlError.SqlError, SqlClient.SqlClient> = internal.passState

/**
 * A pass in progress, as `run`'s `watch` sees it: the summary so far, and what it does now.
 *
 * @since 0.2.0
 * @category models
 */
export interface Progress {
  readonly summary: Changes.Summary
  readonly phase: "reading" | "writing" | "confirming deletes"
}

/**
 * What runs around a pass once opened, given its progress: a progress line, say.
 *
 * @since 0.2.0
 * @category models
 */
export type Watch<R> = (
  progress: Effect.Effect<Progress>
) => <A, E, R1>(pass: Effect.Effect<A, E, R1>) => Effect.Effect<A, E, R1 | R>

/**
 * One pass, resumed or new, run to its end; its summary counts it across runs. `watch` runs around it.
 *
 * @since 0.2.0
 * @category running
 */
export const run = <R = never>(
  options: Options,
  watch?: Watch<R>
): Effect.Effect<
  Changes.Summary,
  InvalidInput | ScanError | TooManyDeletes | SqlError.SqlError | ConcurrentRun,
  MicroappClient | SqlClient.SqlClient | R
> => Effect.catchTag(internal.run(options, watch), "PassMoved", (moved) => new ConcurrentRun(moved))
