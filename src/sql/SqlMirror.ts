/**
 * A mirror of a Microapp in an `@effect/sql` database (SQLite and PostgreSQL are tested; any
 * dialect with `ON CONFLICT` and `RETURNING`): a table kept equal to the Microapp, one change pass
 * (`Changes`) a run.
 *
 * Tables (created when missing; `table` defaults to `microapp_rows`):
 *
 * - `table`: `microapp_id`, `row_id` (the primary key, together), `data` (the row: `jsonb` on
 *   PostgreSQL, migrated in place from the JSON text of earlier versions; JSON text elsewhere),
 *   `fingerprint` (`Changes.fingerprint` of the row) and `pass` (the pass that last saw the row,
 *   in its scan or by a point read).
 * - `microapp_passes`: one row per mirrored table and Microapp (`row_table`, `microapp_id`): the
 *   pass in progress or last completed (`pass`, `complete`), its checkpoint (`checkpoint`, JSON text,
 *   `Changes.toJson` of `Changes.withoutIds`: a count and a digest instead of the ids, which the
 *   tables hold), its counts (`inserted`, `updated`, `deleted`, `unchanged`, `exhaustive`) and
 *   `commits`, which a second run at the same time trips over.
 * - `<table>_pass_deletes`: the ids (`microapp_id`, `row_id`) the pass in progress has found
 *   deleted, removed from `table` when the pass completes and emptied then, or when a new pass starts.
 * - `<table>_pass_kept`: the ids the pass in progress did not see in its scan but kept, a point
 *   read having found the row or not confirmed its delete; emptied as `<table>_pass_deletes` is.
 * - with `view`, the view of that name (`viewOf`): `_id`, a typed column per field (named from its
 *   label in snake_case; the first `maxViewFields`, a warning naming the others, left in `data`)
 *   and the bookkeeping columns, typed from `definition` or from the rows read, and
 *   `microapp_views`: what each view was last made from (`view_name`, `row_table`, `microapp_id`,
 *   `fields`). Made again, in a page's transaction, when a field's values widen its type.
 * - with `history: true`, `<table>_history`: each version of a row (`microapp_id`, `row_id`, the
 *   `pass` that wrote it, `data`, `fingerprint`), valid from `valid_from` to `valid_to` (ISO-8601
 *   text, UTC; `NULL` while current); a delete closes the last version with `deleted` = 1 (SCD2, as
 *   dlt and dbt name it).
 *
 * Each page of changes, its history and the pass's checkpoint commit in one transaction. The
 * deletes a pass confirms are recorded page by page and applied, rows and history, in the
 * transaction that completes the pass: the table never shows a pass's deletes without its end. A
 * run killed at any moment is resumed by the next from the last checkpoint committed, made whole
 * with `Changes.withIds` from the rows the pass marked seen and the deletes it recorded, and a run
 * after a complete pass starts a new one, whose baseline is the table itself: one query per page
 * looks up its rows' fingerprints, and the rows the pass did not mark seen are read back in pages
 * at its end, so a large table never sits in memory. Each of those is deleted once a point read
 * confirms it (`Changes`; `deletes: "exhaustive"` deletes only after an exhaustive scan, unread),
 * within the delete guard (`maxDeletes`): a pass past it stops with `TooManyDeletes` before it
 * records any delete, and the run that resumes it reads the candidates it did not keep again.
 *
 * @since 0.2.0
 */
import { SqlClient, type SqlError } from "@effect/sql"
import { Effect, Option, Ref, Stream } from "effect"
import * as Changes from "../Changes.js"
import type { AnyMicroapp } from "../Microapp.js"
import type { MicroappClient } from "../MicroappClient.js"
import { InvalidInput, type ScanError, type TooManyDeletes } from "../MicroappError.js"
import { databaseWords } from "./internal/databaseWords.js"
import * as Mirror from "./internal/mirror.js"
import * as TypedView from "./internal/typedView.js"

/**
 * What to mirror (the `rows` selection: `microAppID`, `filters`, `sort`, `pageSize`,
 * `concurrency`...), where, and whether to keep history. A table holds one selection of a Microapp:
 * a run whose selection (or page size, or overlap) differs from the pass in progress abandons it
 * and starts a new pass.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options extends Omit<MicroappClient.RowsOptions, "resume" | "dedupe"> {
  /** The table of rows; default `microapp_rows`. */
  readonly table?: string | undefined
  /** Keeps every version of every row in `<table>_history`; default false. */
  readonly history?: boolean | undefined
  /**
   * Keeps a view of this name with a column per field (see the module's documentation); none by
   * default.
   */
  readonly view?: string | undefined
  /**
   * The typed Microapp whose fields type the view's columns; without it, they are inferred from the
   * rows the passes read, widening when values disagree.
   */
  readonly definition?: AnyMicroapp | undefined
  /** How a pass deletes (`Changes.PassOptions`): `"confirmed"` by a point read, the default, or `"exhaustive"`. */
  readonly deletes?: Changes.PassOptions<never, never>["deletes"]
  /**
   * The delete guard (`Changes.PassOptions.maxDeletes`): the most rows a pass may delete; by
   * default the more of 100 and a tenth of the table. A pass past it fails with `TooManyDeletes`,
   * its table untouched by any delete; run it again with a larger bound to apply them.
   *
   * @since 0.2.0
   */
  readonly maxDeletes?: number | undefined
}

/**
 * Another run moved the pass on while this one ran (two mirrors of one table at once): this run
 * stops, its last transaction rolled back; the other goes on.
 *
 * @since 0.2.0
 * @category errors
 */
export const ConcurrentRun: typeof Mirror.ConcurrentRun = Mirror.ConcurrentRun

/**
 * @since 0.2.0
 * @category errors
 */
export type ConcurrentRun = Mirror.ConcurrentRun

/**
 * The table's default name.
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultTable = "microapp_rows"

/**
 * A database failure in the driver's own words: the `SqlError`'s message, then its cause's (pg's
 * `password authentication failed for user "fleet" (28P01)`, `database "copy" does not exist
 * (3D000)`, `connect ECONNREFUSED 127.0.0.1:5432`, libsql's `SQLITE_NOTADB: file is not a
 * database`), with the password of any URL in them hidden.
 *
 * @since 0.2.0
 * @category errors
 */
export const describeError: (error: { readonly message: string; readonly cause?: unknown }) => string = databaseWords

/**
 * The table of passes.
 *
 * @since 0.2.0
 * @category constants
 */
export const passesTable: typeof Mirror.passesTable = Mirror.passesTable

/**
 * The fields a view holds as columns at most: the first ones in the fields' order (the
 * definition's, or the order in which the passes first saw each label); the others are left in
 * `data`, and a warning names them.
 *
 * @since 0.2.0
 * @category constants
 */
export const maxViewFields: typeof TypedView.maxViewFields = TypedView.maxViewFields

/**
 * The history table of `table`.
 *
 * @since 0.2.0
 * @category constants
 */
export const historyTableOf = (table: string): string => `${table}_history`

/**
 * The table of the ids the pass in progress on `table` has deleted.
 *
 * @since 0.2.0
 * @category constants
 */
export const deletesTableOf = (table: string): string => `${table}_pass_deletes`

/**
 * The table of the ids the pass in progress on `table` kept after a point read.
 *
 * @since 0.2.0
 * @category constants
 */
export const keptTableOf = (table: string): string => `${table}_pass_kept`

/**
 * Where the mirror of a Microapp into a table stands: the pass in progress or last completed,
 * whether it is complete, and its summary so far (none before its first commit).
 *
 * @since 0.2.0
 * @category models
 */
export interface PassState {
  readonly pass: number
  readonly complete: boolean
  readonly summary: Option.Option<Changes.Summary>
}

/** Longest table name: PostgreSQL keeps 63 bytes of a name, and `_pass_deletes` is added to it. */
const maxTableName = 63 - "_pass_deletes".length

/** Longest view name: PostgreSQL keeps 63 bytes of a name, and would cut a longer one into another's. */
const maxViewName = 63

/** Why a table or view may not be named `name`, if it may not. */
const nameProblem = (name: string, max: number): string | undefined =>
  /^(?:sqlite_|pg_)/i.test(name)
    ? `'${name}' is reserved: names beginning sqlite_ or pg_ belong to the database`
    : /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && name.length <= max
    ? undefined
    : `'${name}' must be a letter or _ then letters, digits or _, at most ${max} characters`

/**
 * The table of `options` (default `microapp_rows`), refused with `InvalidInput` before any
 * statement when the database would refuse it, reserve it (`sqlite_*`, `pg_*`), or quote it into
 * a name no one asked for: a letter or `_`, then letters, digits or `_`, at most 50 characters.
 *
 * @since 0.2.0
 * @category options
 */
export const tableOf = (options: { readonly table?: string | undefined }): Effect.Effect<string, InvalidInput> => {
  const table = options.table ?? defaultTable
  const reason = nameProblem(table, maxTableName)
  return reason === undefined ? Effect.succeed(table) : Effect.fail(new InvalidInput({ input: "table", reason }))
}

/**
 * The view of `options`, refused with `InvalidInput` before any statement as a table is (at most
 * 63 characters: PostgreSQL would cut a longer name, and two views would be one), and when it
 * names one of the mirror's tables, in any case (one name to SQLite). `run` also refuses a view
 * that the database holds for another table or Microapp, or that no mirror made.
 *
 * @since 0.2.0
 * @category options
 */
export const viewOf = (
  options: { readonly view: string; readonly table?: string | undefined }
): Effect.Effect<string, InvalidInput> => {
  const { view } = options
  const table = options.table ?? defaultTable
  const mirrorTable = [
    table,
    historyTableOf(table),
    deletesTableOf(table),
    keptTableOf(table),
    passesTable,
    TypedView.viewsTable
  ]
    .find((name) => name.toLowerCase() === view.toLowerCase())
  const reason = nameProblem(view, maxViewName) ??
    (mirrorTable === undefined ? undefined : `'${view}' is taken: the mirror keeps its table ${mirrorTable}`)
  return reason === undefined ? Effect.succeed(view) : Effect.fail(new InvalidInput({ input: "view", reason }))
}

/** The tables of a mirror into `table`. */
const tablesOf = (table: string, history: boolean): Mirror.Tables => ({
  rows: table,
  history: history ? historyTableOf(table) : undefined,
  deletes: deletesTableOf(table),
  kept: keptTableOf(table)
})

/**
 * Creates the tables of a mirror into `table` (default `microapp_rows`; with its history table
 * when `history`) when missing, and migrates those an earlier version made: what `run` does
 * first, for a deployment that prepares its database before any run. On PostgreSQL, runs at the
 * same moment create them one at a time.
 *
 * @since 0.2.0
 * @category running
 */
export const createTables: (
  options: { readonly table?: string | undefined; readonly history?: boolean | undefined }
) => Effect.Effect<void, InvalidInput | SqlError.SqlError, SqlClient.SqlClient> = Effect.fn(
  "SqlMirror.createTables"
)(function*(options: { readonly table?: string | undefined; readonly history?: boolean | undefined }) {
  const table = yield* tableOf(options)
  const sql = yield* SqlClient.SqlClient
  yield* Mirror.createTables(sql, tablesOf(table, options.history ?? false))
})

/**
 * The state of the mirror of `microAppID` into `table` (default `microapp_rows`); none before its
 * first run. A read: it creates nothing.
 *
 * @since 0.2.0
 * @category running
 */
export const passState: (
  options: { readonly microAppID: string; readonly table?: string | undefined }
) => Effect.Effect<Option.Option<PassState>, InvalidInput | SqlError.SqlError, SqlClient.SqlClient> = Effect.fn(
  "SqlMirror.passState"
)(function*(options: { readonly microAppID: string; readonly table?: string | undefined }) {
  const table = yield* tableOf(options)
  const sql = yield* SqlClient.SqlClient
  // a read creates nothing: before the first run, there is no passes table and no pass
  if (!(yield* Mirror.passesTableExists(sql))) return Option.none()
  const stored = yield* Mirror.stored({ sql, tables: tablesOf(table, false), microAppID: options.microAppID })
  if (Option.isNone(stored)) return Option.none()
  const { checkpoint, complete, pass } = stored.value
  const summary = checkpoint === null
    ? Option.none<Changes.Summary>()
    : Option.some((yield* Changes.fromJson(checkpoint)).summary)
  return Option.some({ pass, complete: complete === 1, summary })
})

/**
 * A pass in progress, as `run`'s `watch` sees it: the summary so far, and what the pass does now:
 * reading the Microapp's pages, writing a page into the database, or confirming deletes with
 * point reads once its scan is over.
 *
 * @since 0.2.0
 * @category models
 */
export interface Progress {
  readonly summary: Changes.Summary
  readonly phase: "reading" | "writing" | "confirming deletes"
}

/**
 * What runs around a pass once it is opened, given its progress: a progress line, say.
 *
 * @since 0.2.0
 * @category models
 */
export type Watch<R> = (
  progress: Effect.Effect<Progress>
) => <A, E, R1>(pass: Effect.Effect<A, E, R1>) => Effect.Effect<A, E, R1 | R>

/**
 * One pass: resumes the pass in progress, or starts a new one after a complete pass, and runs it
 * to its end. Its summary counts the whole pass, across the runs that resumed it; a first pass
 * counts every row as inserted. `watch`, if given, runs around the pass once it is opened.
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
> => Effect.withSpan(pass(options, watch), "SqlMirror.run")

const pass = Effect.fnUntraced(function*<R>(options: Options, watch: Watch<R> | undefined) {
  const { definition, history = false, table: _, view, ...rows } = options
  const table = yield* tableOf(options)
  const viewed = view === undefined
    ? undefined
    : { name: yield* viewOf({ view, table }), table, microAppID: rows.microAppID }
  const sql = yield* SqlClient.SqlClient
  const target: Mirror.Target = { sql, tables: tablesOf(table, history), microAppID: rows.microAppID }
  if (viewed !== undefined) yield* TypedView.claim(sql, viewed)
  yield* Mirror.createTables(sql, target.tables)
  const keepView = viewed === undefined ? undefined : yield* Mirror.openView(sql, viewed, definition)
  const opened = yield* sql.withTransaction(Mirror.openPass(target, rows))
  const commits = yield* Ref.make(opened.commits)
  const writing = yield* Ref.make(false)
  const pages = Stream.runForEach(opened.changes.pages, (page) =>
    Effect.gen(function*() {
      const before = yield* Ref.get(commits)
      // the commit count moves only with a transaction that committed
      const after = yield* sql.withTransaction(Effect.zipLeft(
        Effect.zipRight(
          Mirror.writePage(target, opened.pass, page),
          Mirror.savePass(target, before, { pass: opened.pass, checkpoint: page.checkpoint })
        ),
        keepView === undefined ? Effect.void : keepView(page.changes)
      )).pipe((write) => Effect.zipRight(Ref.set(writing, true), write), Effect.ensuring(Ref.set(writing, false)))
      yield* Ref.set(commits, after)
    }))
  const progress = Effect.map(
    Effect.all([opened.changes.summary, Ref.get(writing)]),
    ([summary, writes]): Progress => ({
      summary,
      phase: writes ? "writing" : summary.deletes === "pending" ? "reading" : "confirming deletes"
    })
  )
  yield* watch === undefined ? pages : watch(progress)(pages)
  return yield* opened.changes.summary
})
