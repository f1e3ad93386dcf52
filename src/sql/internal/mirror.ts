/**
 * The mirror's steps, each over a `Target` (one Microapp, one set of tables, one database): the
 * tables made, the pass opened or resumed, a page written, the pass saved. `./sqlMirror.ts` runs them.
 */
import { type SqlClient, type SqlError, type Statement } from "@effect/sql"
import { Chunk, Clock, Effect, Option, Ref, Stream } from "effect"
import * as Changes from "../../Changes.js"
import * as Infer from "../../internal/infer.js"
import type { AnyMicroapp } from "../../Microapp.js"
import { MicroappClient } from "../../MicroappClient.js"
import { isInvalidCheckpoint } from "../../MicroappError.js"
import type { Row } from "../../Row.js"
import type { Tables, Target } from "./names.js"
import * as Passes from "./passes.js"
import * as TypedView from "./typedView.js"

/** Rows a statement writes at most, under SQLite's 32,766 parameters at 8 a row. */
const statementRows = 1000

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
export const createTables = (sql: SqlClient.SqlClient, tables: Tables) =>
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
    yield* Passes.createPassesTable(sql)
    for (const ids of [tables.deletes, tables.kept]) {
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(ids)} (
        microapp_id TEXT NOT NULL, row_id TEXT NOT NULL, PRIMARY KEY (microapp_id, row_id))`
    }
    // SQLite keeps such a narrow table in its key's own b-tree, with no rowid beside it
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(tables.seen)} (
      microapp_id TEXT NOT NULL, row_id TEXT NOT NULL, pass INTEGER NOT NULL, PRIMARY KEY (microapp_id, row_id))${
      sql.literal(sql.onDialectOrElse({ sqlite: () => " WITHOUT ROWID", orElse: () => "" }))
    }`
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

/**
 * `ids` as a table of one column, `value`, from one JSON parameter: a parameter an id cost more to
 * bind than the statement's own work.
 */
const idTable = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>) => {
  const json = JSON.stringify(ids)
  return sql.onDialectOrElse({
    pg: () => sql`json_array_elements_text(${json}::json)`,
    orElse: () => sql`json_each(${json})`
  })
}

/** `row_id` is one of `ids`. */
const rowIdIn = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>) =>
  sql`row_id IN (SELECT value FROM ${idTable(sql, ids)})`

/**
 * The rows of the target's table that pass `pass` has seen: those it wrote, and those it marked in
 * the seen table. A pass an earlier version began marked them all in the table itself.
 */
const seenBy = ({ microAppID, sql, tables }: Target, pass: number) => {
  // each column by its table's own name: an alias could be the name of the mirror's table
  const [rows, seen] = [sql(tables.rows), sql(tables.seen)]
  return sql`(${rows}.pass = ${pass} OR EXISTS (SELECT 1 FROM ${seen}
    WHERE ${seen}.microapp_id = ${microAppID} AND ${seen}.row_id = ${rows}.row_id AND ${seen}.pass = ${pass}))`
}

/** The target's ids recorded in `ids` (its deletes, or its kept candidates). */
const recorded = ({ microAppID, sql }: Target, ids: string) =>
  sql`row_id IN (SELECT row_id FROM ${sql(ids)} WHERE microapp_id = ${microAppID})`

/** The deletes the pass recorded, applied to the rows and their history: the end of a complete pass. */
const applyDeletes = (target: Target) =>
  Effect.gen(function*() {
    const { microAppID, sql, tables } = target
    const deleted = recorded(target, tables.deletes)
    if (tables.history !== undefined) {
      const now = yield* isoNow
      yield* sql`UPDATE ${sql(tables.history)} SET valid_to = ${now}, deleted = 1
        WHERE microapp_id = ${microAppID} AND valid_to IS NULL AND ${deleted}`
    }
    yield* sql`DELETE FROM ${sql(tables.rows)} WHERE microapp_id = ${microAppID} AND ${deleted}`
    yield* sql`DELETE FROM ${sql(tables.seen)} WHERE microapp_id = ${microAppID} AND ${deleted}`
  })

/** The pass's row set to `values` (`Passes.writePass`); a new or complete pass's deletes forgotten, a complete pass's applied. */
export const savePass = (target: Target, commits: number, values: {
  readonly pass: number
  readonly checkpoint: Changes.Checkpoint | undefined
}) =>
  Effect.gen(function*() {
    const { microAppID, sql, tables } = target
    const written = yield* Passes.writePass(target, commits, values)
    const complete = values.checkpoint?.phase === "done"
    if (complete) yield* applyDeletes(target)
    // a pass abandoned for a new one leaves its deletes unapplied: only a complete pass may delete
    if (values.checkpoint === undefined || complete) {
      yield* sql`DELETE FROM ${sql(tables.deletes)} WHERE microapp_id = ${microAppID}`
      yield* sql`DELETE FROM ${sql(tables.kept)} WHERE microapp_id = ${microAppID}`
    }
    return written
  })

/** The target's rows (`select`, `row_id` among them) of `from` where `conditions` hold, in keyset pages over the primary key. */
const keyset = <A extends { readonly row_id: string }>(
  { microAppID, sql }: Target,
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

const idsOf = (target: Target, from: string, conditions: ReadonlyArray<Statement.Fragment>) =>
  Stream.map(keyset<{ row_id: string }>(target, "row_id", from, conditions), (row) => row.row_id)

/**
 * What pass `pass` has compared so far (the rows it has seen, but those a point read found),
 * deleted and kept, for `Changes.withIds`.
 */
const sinkIds = (target: Target, pass: number): Changes.SinkIds<SqlError.SqlError> => {
  const { sql, tables } = target
  return {
    ids: idsOf(target, tables.rows, [seenBy(target, pass), sql`NOT ${recorded(target, tables.kept)}`]),
    deleted: idsOf(target, tables.deletes, []),
    kept: idsOf(target, tables.kept, [])
  }
}

/** The rows' fingerprints by id, as the text of one JSON object (`NULL` on PostgreSQL for no rows). */
const fingerprintsObject = (sql: SqlClient.SqlClient) =>
  sql.literal(sql.onDialectOrElse({
    pg: () => "json_object_agg(row_id, fingerprint)::text",
    orElse: () => "json_group_object(row_id, fingerprint)"
  }))

/** The table as the previous pass left it, less the candidates pass `pass` has settled. */
const baseline = (target: Target, pass: number): Changes.Baseline<SqlError.SqlError> => {
  const { microAppID, sql, tables } = target
  return {
    lookup: (ids) =>
      Effect.gen(function*() {
        const found = new Map<string, string>()
        if (ids.length === 0) return found
        // one row of JSON text rather than a row per id: the drivers build an object for each row
        // they return, which cost more than the query itself
        const [row] = yield* sql<{ found: string | null }>`SELECT ${fingerprintsObject(sql)} AS found
          FROM ${sql(tables.rows)} WHERE microapp_id = ${microAppID} AND ${rowIdIn(sql, ids)}`
        if (row?.found == null) return found
        for (const [id, fingerprint] of Object.entries(JSON.parse(row.found) as Record<string, string>)) {
          found.set(id, fingerprint)
        }
        return found
      }),
    unseen: () =>
      Stream.map(
        keyset<{ row_id: string; fingerprint: string }>(target, "row_id, fingerprint", tables.rows, [
          sql`NOT ${seenBy(target, pass)}`,
          sql`NOT ${recorded(target, tables.deletes)}`,
          sql`NOT ${recorded(target, tables.kept)}`
        ]),
        (row) => ({ id: row.row_id, fingerprint: row.fingerprint })
      )
  }
}

/**
 * One page of changes of pass `pass`: rows, history, recorded deletes and kept ids, not the
 * checkpoint. The rows it writes hold the pass in the table; the page's other scanned rows, and the
 * rows a point read found, are marked in the seen table, the table's wide rows left as they were;
 * the kept ids tell the second apart.
 */
export const writePage = (target: Target, pass: number, page: Changes.Page<Row>) =>
  Effect.gen(function*() {
    const { microAppID, sql, tables } = target
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
    const writtenIds = new Set(written.map((row) => row.row_id))
    const unwritten = [...page.seen, ...page.found].filter((id) => !writtenIds.has(id))
    if (unwritten.length > 0) {
      // `WHERE true`: SQLite would read the upsert's ON as a join's
      yield* sql`INSERT INTO ${sql(tables.seen)} (microapp_id, row_id, pass)
        SELECT ${microAppID}, value, CAST(${pass} AS INTEGER) FROM ${idTable(sql, unwritten)} WHERE true
        ON CONFLICT (microapp_id, row_id) DO UPDATE SET pass = excluded.pass`
    }
    const kept = [...page.found, ...page.unconfirmed]
    for (const [ids, into] of [[deleted, tables.deletes], [kept, tables.kept]] as const) {
      if (ids.length === 0) continue
      yield* sql`INSERT INTO ${sql(into)} (microapp_id, row_id) SELECT ${microAppID}, value FROM ${idTable(sql, ids)}`
    }
    if (tables.history === undefined || writtenIds.size === 0) return
    const history = tables.history
    yield* sql`UPDATE ${sql(history)} SET valid_to = ${now}
      WHERE microapp_id = ${microAppID} AND valid_to IS NULL AND ${rowIdIn(sql, [...writtenIds])}`
    yield* grouped(
      written,
      (group) =>
        sql`INSERT INTO ${sql(history)} ${
          sql.insert(group.map((row) => ({ ...row, valid_from: now, valid_to: null, deleted: 0 })))
        }`
    )
  })

/**
 * The pass this run goes on with: the one in progress from its checkpoint, else a new one (after a
 * complete pass, or when the client refuses the checkpoint as another query's), opened.
 */
export const openPass = (
  target: Target,
  rows: Omit<MicroappClient.RowsOptions, "resume" | "dedupe"> & {
    readonly deletes?: Changes.PassOptions<never, never>["deletes"]
    readonly maxDeletes?: number | undefined
  }
) =>
  Effect.gen(function*() {
    const client = yield* MicroappClient
    yield* Passes.createPass(target)
    const { checkpoint, commits, complete, pass } = Option.getOrElse(
      yield* Passes.stored(target, { lock: true }),
      () => ({
        pass: 0,
        complete: 1,
        checkpoint: null,
        commits: 0
      })
    )
    const open = (pass: number, resume: Changes.Checkpoint | undefined) =>
      Effect.map(
        client.changes({ ...rows, baseline: baseline(target, pass), resume }),
        (changes) => ({ pass, resume, changes })
      )
    const fresh = Effect.flatMap(savePass(target, commits, { pass: pass + 1, checkpoint: undefined }), (commits) =>
      Effect.map(open(pass + 1, undefined), (opened) => ({ ...opened, commits })))
    if (complete === 1 || checkpoint === null) {
      return complete === 1 ? yield* fresh : { ...yield* open(pass, undefined), commits }
    }
    const resume = yield* Effect.flatMap(Changes.fromJson(checkpoint), (held) =>
      Changes.withIds(held, sinkIds(target, pass)))
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
export const openView = (
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
    // SQLite drops a view whatever reads it, so each run makes it again there: one an earlier version
    // made (a label's path read otherwise, more columns than a query may return) is brought up to date
    const madeFrom = sql.onDialectOrElse({ sqlite: () => Option.none(), orElse: () => stored })
    yield* sql.withTransaction(keeper.keep(madeFrom, initial))
    yield* TypedView.warnLeftInData(view.name, [], initial)
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
        yield* TypedView.warnLeftInData(view.name, before, after)
        // set before the commit: a page rolled back fails the run, and the next run starts from the table
        yield* Ref.set(current, after)
      })
  })
