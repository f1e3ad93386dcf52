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
 * - with `view`, the view of that name: `_id`, a typed column per field (named from its label in
 *   snake_case) and the bookkeeping columns, typed from `definition` or from the rows read, and
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
 * confirms it (`Changes`; `deletes: "exhaustive"` deletes only after an exhaustive scan, unread).
 *
 * @since 0.1.0
 */
import { SqlClient, type SqlError, type Statement } from "@effect/sql"
import { Chunk, Clock, Effect, Option, Ref, Schema, Stream } from "effect"
import * as Changes from "../Changes.js"
import * as Infer from "../internal/infer.js"
import type { AnyMicroapp } from "../Microapp.js"
import { MicroappClient } from "../MicroappClient.js"
import { InvalidInput, isInvalidCheckpoint, type ScanError, TypeId } from "../MicroappError.js"
import type { Row } from "../Row.js"
import * as TypedView from "./internal/typedView.js"

/**
 * What to mirror (the `rows` selection: `microAppID`, `filters`, `sort`, `pageSize`,
 * `concurrency`...), where, and whether to keep history. A table holds one selection of a Microapp:
 * a run whose selection (or page size, or overlap) differs from the pass in progress abandons it
 * and starts a new pass.
 *
 * @since 0.1.0
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
}

/**
 * Another run moved the pass on while this one ran (two mirrors of one table at once): this run
 * stops, its last transaction rolled back; the other goes on.
 *
 * @since 0.1.0
 * @category errors
 */
export class ConcurrentRun extends Schema.TaggedError<ConcurrentRun>()("ConcurrentRun", {
  table: Schema.String,
  microAppID: Schema.String
}) {
  /** @since 0.2.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `another run is mirroring ${this.microAppID} into ${this.table} at the same time`
  }
}

/**
 * The table's default name.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTable = "microapp_rows"

/**
 * The table of passes.
 *
 * @since 0.1.0
 * @category constants
 */
export const passesTable = "microapp_passes"

/**
 * The history table of `table`.
 *
 * @since 0.1.0
 * @category constants
 */
export const historyTableOf = (table: string): string => `${table}_history`

/**
 * The table of the ids the pass in progress on `table` has deleted.
 *
 * @since 0.1.0
 * @category constants
 */
export const deletesTableOf = (table: string): string => `${table}_pass_deletes`

/**
 * The table of the ids the pass in progress on `table` kept after a point read.
 *
 * @since 0.1.0
 * @category constants
 */
export const keptTableOf = (table: string): string => `${table}_pass_kept`

/** Rows a statement writes at most, under SQLite's 32,766 parameters at 8 a row. */
const statementRows = 1000

/** The tables of a mirror, by name. */
interface Tables {
  readonly rows: string
  readonly history: string | undefined
  readonly deletes: string
  readonly kept: string
}

/** The type of `data`: `jsonb` on PostgreSQL, parsed once when written; JSON text elsewhere. */
const dataType = (sql: SqlClient.SqlClient) =>
  sql.literal(sql.onDialectOrElse({ pg: () => "JSONB", orElse: () => "TEXT" }))

/**
 * `data` of `table` made `jsonb` in place when an earlier version left it text (PostgreSQL only).
 * Two runs at once both converting is harmless: the second converts jsonb to itself.
 */
const migrateData = (sql: SqlClient.SqlClient, table: string) =>
  sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        const columns = yield* sql<{ data_type: string }>`SELECT data_type FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = ${table} AND column_name = 'data'`
        if (columns[0]?.data_type !== "text") return
        yield* sql`ALTER TABLE ${sql(table)} ALTER COLUMN data TYPE JSONB USING data::jsonb`
      }),
    orElse: () => Effect.void
  })

/** A row as `data` takes it, in rows and history alike: JSON text, which PostgreSQL parses into jsonb. */
const dataOf = (row: Row): string => JSON.stringify(row)

/** The advisory lock first runs take in turn while they create tables: "mirrors" in ASCII, a key no other user picks by chance. */
const creationLock = "30796712728556147"

/**
 * The tables made when missing. On PostgreSQL, `CREATE TABLE IF NOT EXISTS` run at the same moment
 * by two sessions fails one of them on the catalog's unique index, so runs create one at a time,
 * under a lock their transaction holds.
 */
const createTables = (sql: SqlClient.SqlClient, tables: Tables) =>
  sql.onDialectOrElse({
    pg: () =>
      sql.withTransaction(
        Effect.zipRight(sql.unsafe(`SELECT pg_advisory_xact_lock(${creationLock})`), createMissing(sql, tables))
      ),
    orElse: () => createMissing(sql, tables)
  })

const createMissing = (sql: SqlClient.SqlClient, tables: Tables) =>
  Effect.gen(function*() {
    // a reader of the file then never stops a commit: in SQLite's default mode it would fail it
    yield* sql.onDialectOrElse({ sqlite: () => sql`PRAGMA journal_mode = WAL`, orElse: () => Effect.void })
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(tables.rows)} (
      microapp_id TEXT NOT NULL, row_id TEXT NOT NULL, data ${dataType(sql)} NOT NULL, fingerprint TEXT NOT NULL,
      pass INTEGER NOT NULL, PRIMARY KEY (microapp_id, row_id))`
    yield* migrateData(sql, tables.rows)
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(passesTable)} (
      row_table TEXT NOT NULL, microapp_id TEXT NOT NULL, pass INTEGER NOT NULL, complete INTEGER NOT NULL,
      checkpoint TEXT, inserted INTEGER NOT NULL, updated INTEGER NOT NULL, deleted INTEGER NOT NULL,
      unchanged INTEGER NOT NULL, exhaustive INTEGER NOT NULL, commits INTEGER NOT NULL,
      PRIMARY KEY (row_table, microapp_id))`
    for (const ids of [tables.deletes, tables.kept]) {
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(ids)} (
        microapp_id TEXT NOT NULL, row_id TEXT NOT NULL, PRIMARY KEY (microapp_id, row_id))`
    }
    if (tables.history !== undefined) {
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(tables.history)} (
        microapp_id TEXT NOT NULL, row_id TEXT NOT NULL, pass INTEGER NOT NULL, data ${dataType(sql)} NOT NULL,
        fingerprint TEXT NOT NULL, valid_from TEXT NOT NULL, valid_to TEXT, deleted INTEGER NOT NULL,
        PRIMARY KEY (microapp_id, row_id, pass))`
      yield* migrateData(sql, tables.history)
    }
  })

/** The clock's time as history records it: ISO-8601 text, UTC. */
const isoNow = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis).toISOString())

/** `f` on each group of at most `statementRows` of `items`, one after the other. */
const grouped = <A, E>(items: ReadonlyArray<A>, f: (group: ReadonlyArray<A>) => Effect.Effect<unknown, E>) =>
  Effect.forEach(
    Array.from(
      { length: Math.ceil(items.length / statementRows) },
      (_, i) => items.slice(i * statementRows, (i + 1) * statementRows)
    ),
    f,
    { discard: true }
  )

interface StoredPass {
  readonly pass: number
  readonly complete: number
  readonly checkpoint: string | null
  readonly commits: number
}

/** Where the mirror of one Microapp into one table stands, and the writes of a pass. */
const mirrorOf = (sql: SqlClient.SqlClient, tables: Tables, microAppID: string) => {
  const key = sql.and([sql`row_table = ${tables.rows}`, sql`microapp_id = ${microAppID}`])
  const recorded = (ids: string) => sql`row_id IN (SELECT row_id FROM ${sql(ids)} WHERE microapp_id = ${microAppID})`
  const recordedDeletes = recorded(tables.deletes)
  const recordedKept = recorded(tables.kept)

  /** The deletes the pass recorded, applied to the rows and their history: the end of a complete pass. */
  const applyDeletes = Effect.gen(function*() {
    if (tables.history !== undefined) {
      const now = yield* isoNow
      yield* sql`UPDATE ${sql(tables.history)} SET valid_to = ${now}, deleted = 1
        WHERE microapp_id = ${microAppID} AND valid_to IS NULL AND ${recordedDeletes}`
    }
    yield* sql`DELETE FROM ${sql(tables.rows)} WHERE microapp_id = ${microAppID} AND ${recordedDeletes}`
  })

  const stored = Effect.map(
    sql<StoredPass>`SELECT pass, complete, checkpoint, commits FROM ${sql(passesTable)} WHERE ${key}`,
    (found) => Option.fromNullable(found[0])
  )

  /** The pass's row set to `values`, unless another run wrote it since `commits`; a new or complete pass's deletes forgotten. */
  const savePass = (commits: number, values: {
    readonly pass: number
    readonly checkpoint: Changes.Checkpoint | undefined
  }) => {
    const summary = values.checkpoint?.summary
    const row = {
      pass: values.pass,
      complete: values.checkpoint?.phase === "done" ? 1 : 0,
      checkpoint: values.checkpoint === undefined ? null : Changes.toJson(Changes.withoutIds(values.checkpoint)),
      inserted: summary?.inserted ?? 0,
      updated: summary?.updated ?? 0,
      deleted: summary?.deleted ?? 0,
      unchanged: summary?.unchanged ?? 0,
      exhaustive: summary?.exhaustive === true ? 1 : 0,
      commits: commits + 1
    }
    return Effect.gen(function*() {
      const updated = yield* sql<{ commits: number }>`UPDATE ${sql(passesTable)} SET ${sql.update(row)}
        WHERE ${key} AND commits = ${commits} RETURNING commits`
      if (updated.length !== 1) return yield* new ConcurrentRun({ table: tables.rows, microAppID })
      if (row.complete === 1) yield* applyDeletes
      // a pass abandoned for a new one leaves its deletes unapplied: only a complete pass may delete
      if (values.checkpoint === undefined || row.complete === 1) {
        yield* sql`DELETE FROM ${sql(tables.deletes)} WHERE microapp_id = ${microAppID}`
        yield* sql`DELETE FROM ${sql(tables.kept)} WHERE microapp_id = ${microAppID}`
      }
      return row.commits
    })
  }

  /** The first pass's row, when there is none yet. */
  const createPass = sql`INSERT INTO ${sql(passesTable)} ${
    sql.insert({
      row_table: tables.rows,
      microapp_id: microAppID,
      pass: 0,
      complete: 1,
      checkpoint: null,
      inserted: 0,
      updated: 0,
      deleted: 0,
      unchanged: 0,
      exhaustive: 0,
      commits: 0
    })
  } ON CONFLICT (row_table, microapp_id) DO NOTHING`

  /** The rows (`select`, `row_id` among them) of `from` for this Microapp where `conditions` hold, in keyset pages over the primary key. */
  const keyset = <A extends { readonly row_id: string }>(
    select: string,
    from: string,
    conditions: ReadonlyArray<Statement.Fragment>
  ) =>
    // rows deleted behind the position move nothing
    Stream.paginateChunkEffect("", (after) =>
      Effect.map(
        sql<A>`SELECT ${sql.literal(select)} FROM ${sql(from)}
          WHERE ${sql.and([sql`microapp_id = ${microAppID}`, ...conditions, sql`row_id > ${after}`])}
          ORDER BY row_id LIMIT ${statementRows}`,
        (rows) => {
          const last = rows.at(-1)
          return [
            Chunk.unsafeFromArray(rows),
            rows.length < statementRows || last === undefined ? Option.none() : Option.some(last.row_id)
          ] as const
        }
      ))

  const idsOf = (from: string, conditions: ReadonlyArray<Statement.Fragment>) =>
    Stream.map(keyset<{ row_id: string }>("row_id", from, conditions), (row) => row.row_id)

  /**
   * What pass `pass` has compared so far (the rows it marked seen, but those a point read found),
   * deleted and kept, for `Changes.withIds`.
   */
  const sinkIds = (pass: number): Changes.SinkIds<SqlError.SqlError> => ({
    ids: idsOf(tables.rows, [sql`pass = ${pass}`, sql`NOT ${recordedKept}`]),
    deleted: idsOf(tables.deletes, []),
    kept: idsOf(tables.kept, [])
  })

  /** The table as the previous pass left it, less the deletes pass `pass` has recorded. */
  const baseline = (pass: number, lookedUp: Ref.Ref<ReadonlyArray<ReadonlyArray<string>>>): Changes.Baseline<
    SqlError.SqlError
  > => ({
    lookup: (ids) =>
      Effect.gen(function*() {
        // the ids of each page, in order, for the page's commit to mark seen (unchanged rows are not handed out)
        yield* Ref.update(lookedUp, (queue) => [...queue, ids])
        const found = new Map<string, string>()
        yield* grouped(ids, (group) =>
          Effect.map(
            sql<{ row_id: string; fingerprint: string }>`SELECT row_id, fingerprint
              FROM ${sql(tables.rows)} WHERE microapp_id = ${microAppID} AND ${sql.in("row_id", group)}`,
            (rows) => rows.forEach((row) => found.set(row.row_id, row.fingerprint))
          ))
        return found
      }),
    unseen: () =>
      Stream.map(
        keyset<{ row_id: string; fingerprint: string }>("row_id, fingerprint", tables.rows, [
          sql`pass <> ${pass}`,
          sql`NOT ${recordedDeletes}`,
          sql`NOT ${recordedKept}`
        ]),
        (row) => ({ id: row.row_id, fingerprint: row.fingerprint })
      )
  })

  /**
   * One page of changes of pass `pass`, with `seen`, the ids of its scanned rows: rows, history,
   * recorded deletes and kept ids, not the checkpoint. A row a point read found is marked seen by
   * the pass as a scanned one is, the kept ids telling it apart.
   */
  const writePage = (pass: number, seen: ReadonlyArray<string>, page: Changes.Page<Row>) =>
    Effect.gen(function*() {
      const { changes } = page
      const now = yield* isoNow
      const written = changes.flatMap((change) =>
        change._tag === "Deleted"
          ? []
          : [{
            microapp_id: microAppID,
            row_id: change.id,
            data: dataOf(change.row),
            fingerprint: change.fingerprint,
            pass
          }]
      )
      const deleted = changes.flatMap((change) => change._tag === "Deleted" ? [change.id] : [])
      yield* grouped(
        written,
        (group) =>
          sql`INSERT INTO ${sql(tables.rows)} ${sql.insert(group)} ON CONFLICT (microapp_id, row_id)
          DO UPDATE SET data = excluded.data, fingerprint = excluded.fingerprint, pass = excluded.pass`
      )
      yield* grouped([...seen, ...page.found], (group) =>
        sql`UPDATE ${sql(tables.rows)} SET pass = ${pass}
          WHERE microapp_id = ${microAppID} AND pass <> ${pass} AND ${sql.in("row_id", group)}`)
      const kept = [...page.found, ...page.unconfirmed]
      for (const [ids, into] of [[deleted, tables.deletes], [kept, tables.kept]] as const) {
        yield* grouped(
          ids,
          (group) =>
            sql`INSERT INTO ${sql(into)} ${sql.insert(group.map((row_id) => ({ microapp_id: microAppID, row_id })))}`
        )
      }
      if (tables.history === undefined) return
      const history = tables.history
      yield* grouped(written, (group) =>
        sql`UPDATE ${sql(history)} SET valid_to = ${now}
          WHERE microapp_id = ${microAppID} AND valid_to IS NULL AND ${
          sql.in("row_id", group.map((row) => row.row_id))
        }`)
      yield* grouped(
        written,
        (group) =>
          sql`INSERT INTO ${sql(history)} ${
            sql.insert(group.map((row) => ({ ...row, valid_from: now, valid_to: null, deleted: 0 })))
          }`
      )
    })

  return { stored, savePass, createPass, sinkIds, baseline, writePage }
}

type Mirror = ReturnType<typeof mirrorOf>

/**
 * The pass this run goes on with: the one in progress from its checkpoint, else a new one (after a
 * complete pass, or when the client refuses the checkpoint as another query's), opened.
 */
const openPass = (
  mirror: Mirror,
  rows: Omit<Options, "table" | "history" | "view" | "definition">
) =>
  Effect.gen(function*() {
    const client = yield* MicroappClient
    yield* mirror.createPass
    const stored = yield* mirror.stored
    const { checkpoint, commits, complete, pass } = Option.getOrElse(stored, () => ({
      pass: 0,
      complete: 1,
      checkpoint: null,
      commits: 0
    }))
    const lookedUp = yield* Ref.make<ReadonlyArray<ReadonlyArray<string>>>([])
    const open = (pass: number, resume: Changes.Checkpoint | undefined) =>
      Effect.map(
        client.changes({ ...rows, baseline: mirror.baseline(pass, lookedUp), resume }),
        (changes) => ({ pass, resume, changes, lookedUp })
      )
    const fresh = Effect.flatMap(mirror.savePass(commits, { pass: pass + 1, checkpoint: undefined }), (commits) =>
      Effect.map(open(pass + 1, undefined), (opened) => ({ ...opened, commits })))
    if (complete === 1 || checkpoint === null) {
      return complete === 1 ? yield* fresh : { ...yield* open(pass, undefined), commits }
    }
    const resume = yield* Effect.flatMap(Changes.fromJson(checkpoint), (held) =>
      Changes.withIds(held, mirror.sinkIds(pass)))
    return yield* open(pass, resume).pipe(
      Effect.map((opened) => ({ ...opened, commits })),
      // a checkpoint of another query (its fields or deletes changed): the pass starts again
      Effect.catchIf((error) =>
        isInvalidCheckpoint(error) && error.problem === "another query", () =>
        fresh)
    )
  })

/**
 * The typed view made or brought up to date with `definition`'s fields, or those it was last made
 * from; and, without a definition, what widens it by the rows of a page, in the page's transaction.
 */
const openView = (
  sql: SqlClient.SqlClient,
  view: { readonly name: string; readonly table: string; readonly microAppID: string },
  definition: AnyMicroapp | undefined
) =>
  Effect.gen(function*() {
    const keeper = TypedView.keeper(sql, view)
    yield* keeper.create
    const stored = yield* keeper.stored
    const initial = definition === undefined
      ? Option.getOrElse(stored, (): ReadonlyArray<TypedView.ViewField> => [])
      : TypedView.viewFields(Infer.fieldsOf(definition))
    yield* sql.withTransaction(keeper.keep(stored, initial))
    if (definition !== undefined) return undefined
    const current = yield* Ref.make(initial)
    return (changes: ReadonlyArray<Changes.Change<Row>>) =>
      Effect.gen(function*() {
        const before = yield* Ref.get(current)
        const after = TypedView.widenedBy(
          before,
          changes.flatMap((change) => change._tag === "Deleted" ? [] : [change.row])
        )
        yield* keeper.keep(Option.some(before), after)
        // set before the commit: a page rolled back fails the run, and the next run starts from the table
        yield* Ref.set(current, after)
      })
  })

/**
 * Where the mirror of a Microapp into a table stands: the pass in progress or last completed,
 * whether it is complete, and its summary so far (none before its first commit).
 *
 * @since 0.1.0
 * @category models
 */
export interface PassState {
  readonly pass: number
  readonly complete: boolean
  readonly summary: Option.Option<Changes.Summary>
}

/** Longest table name: PostgreSQL keeps 63 bytes of a name, and `_pass_deletes` is added to it. */
const maxTableName = 63 - "_pass_deletes".length

/**
 * The table of `options` (default `microapp_rows`), refused with `InvalidInput` before any
 * statement when the database would refuse it, reserve it (`sqlite_*`, `pg_*`), or quote it into
 * a name no one asked for: a letter or `_`, then letters, digits or `_`, at most 50 characters.
 *
 * @since 0.1.0
 * @category options
 */
export const tableOf = (options: { readonly table?: string | undefined }): Effect.Effect<string, InvalidInput> => {
  const table = options.table ?? defaultTable
  const reason = /^(?:sqlite_|pg_)/i.test(table)
    ? `'${table}' is reserved: names beginning sqlite_ or pg_ belong to the database`
    : /^[A-Za-z_][A-Za-z0-9_]*$/.test(table) && table.length <= maxTableName
    ? undefined
    : `'${table}' must be a letter or _ then letters, digits or _, at most ${maxTableName} characters`
  return reason === undefined ? Effect.succeed(table) : Effect.fail(new InvalidInput({ input: "table", reason }))
}

/**
 * The state of the mirror of `microAppID` into `table` (default `microapp_rows`); none before its
 * first run. Creates the tables when missing, as `run` does.
 *
 * @since 0.1.0
 * @category running
 */
export const passState: (
  options: { readonly microAppID: string; readonly table?: string | undefined }
) => Effect.Effect<Option.Option<PassState>, InvalidInput | SqlError.SqlError, SqlClient.SqlClient> = Effect.fn(
  "SqlMirror.passState"
)(function*(options: { readonly microAppID: string; readonly table?: string | undefined }) {
  const table = yield* tableOf(options)
  const sql = yield* SqlClient.SqlClient
  const tables: Tables = { rows: table, history: undefined, deletes: deletesTableOf(table), kept: keptTableOf(table) }
  yield* createTables(sql, tables)
  const stored = yield* mirrorOf(sql, tables, options.microAppID).stored
  if (Option.isNone(stored)) return Option.none()
  const { checkpoint, complete, pass } = stored.value
  const summary = checkpoint === null
    ? Option.none<Changes.Summary>()
    : Option.some((yield* Changes.fromJson(checkpoint)).summary)
  return Option.some({ pass, complete: complete === 1, summary })
})

/**
 * One pass: resumes the pass in progress, or starts a new one after a complete pass, and runs it
 * to its end. Its summary counts the whole pass, across the runs that resumed it; a first pass
 * counts every row as inserted.
 *
 * @since 0.1.0
 * @category running
 */
export const run: (
  options: Options
) => Effect.Effect<
  Changes.Summary,
  InvalidInput | ScanError | SqlError.SqlError | ConcurrentRun,
  MicroappClient | SqlClient.SqlClient
> = Effect.fn("SqlMirror.run")(function*(options: Options) {
  const { definition, history = false, table: _, view, ...rows } = options
  const table = yield* tableOf(options)
  const sql = yield* SqlClient.SqlClient
  const tables: Tables = {
    rows: table,
    history: history ? historyTableOf(table) : undefined,
    deletes: deletesTableOf(table),
    kept: keptTableOf(table)
  }
  yield* createTables(sql, tables)
  const mirror = mirrorOf(sql, tables, rows.microAppID)
  const keepView = view === undefined
    ? undefined
    : yield* openView(sql, { name: view, table, microAppID: rows.microAppID }, definition)
  const opened = yield* sql.withTransaction(openPass(mirror, rows))
  const commits = yield* Ref.make(opened.commits)
  const rowsSoFar = yield* Ref.make(opened.resume?.summary.rows ?? 0)

  /** The ids a scan page handed out: its lookup's, matched by the count of rows it moved the scan on. */
  const seenOn = (page: Changes.Page<Row>) =>
    Effect.gen(function*() {
      const rowsNow = page.checkpoint.summary.rows
      const handedOut = rowsNow - (yield* Ref.getAndSet(rowsSoFar, rowsNow))
      if (handedOut === 0) return []
      const [ids = [], ...rest] = yield* Ref.get(opened.lookedUp)
      yield* Ref.set(opened.lookedUp, rest)
      if (ids.length !== handedOut) {
        return yield* Effect.dieMessage(`a page of ${handedOut} rows was looked up with ${ids.length} ids`)
      }
      return ids
    })

  yield* Stream.runForEach(opened.changes.pages, (page) =>
    Effect.gen(function*() {
      const seen = yield* seenOn(page)
      const before = yield* Ref.get(commits)
      // the commit count moves only with a transaction that committed
      const after = yield* sql.withTransaction(Effect.zipLeft(
        Effect.zipRight(
          mirror.writePage(opened.pass, seen, page),
          mirror.savePass(before, { pass: opened.pass, checkpoint: page.checkpoint })
        ),
        keepView === undefined ? Effect.void : keepView(page.changes)
      ))
      yield* Ref.set(commits, after)
    }))
  return yield* opened.changes.summary
})
