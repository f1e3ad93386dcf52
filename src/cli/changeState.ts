/**
 * STATE of `microapp changes`: an SQLite database (through `@effect/sql-libsql`) holding the
 * baseline, one row a row (its fingerprint and, unless `--before key`, its JSON: the `before` of
 * its next update or delete), and the pass in progress: FILE, its committed length, the format it
 * is written in, the pass's checkpoint (`Changes.withoutIds`: counts and digests), the fields its
 * schemas have so far, and the ids the pass has compared, deleted and kept. A page commits in one
 * transaction, O(page) whatever the table's size; FILE is written and synced before it.
 *
 * Tables: `changes_state` (one row; `committed`: FILE's length), `baseline` (`row_id`,
 * `fingerprint`), `baseline_rows` (`row_id`, `data`: the row's JSON text, for the rows STATE holds
 * whole), `pass_seen`, `pass_deleted`, `pass_kept` (`row_id`). The fingerprints sit apart from the
 * rows, so that a page's lookup and the pass's last read of the ids it did not see touch a table
 * of ids and fingerprints only.
 *
 * @since 0.2.0
 */
import type { SqlClient, SqlError } from "@effect/sql"
import { Chunk, Effect, Option, Schema, Stream } from "effect"
import * as Changes from "../Changes.js"
import type { Field } from "../debezium/Debezium.js"
import { Filter } from "../Query.js"
import type { Row } from "../Row.js"

/** The version of the database's tables this command writes and reads. */
export const stateVersion = 2

/** Rows a statement holds at most: far under SQLite's bound on parameters. */
const statementRows = 500

/**
 * How FILE is written: a pass goes on in the format it began in.
 *
 * @since 0.2.0
 * @category models
 */
export const Format = Schema.Struct({
  key: Schema.Boolean,
  schemas: Schema.Boolean,
  tombstones: Schema.Boolean,
  before: Schema.Literal("row", "key"),
  table: Schema.String
})

/**
 * @since 0.2.0
 * @category models
 */
export type Format = typeof Format.Type

const Fields = Schema.Array(Schema.Struct({
  label: Schema.String,
  kind: Schema.Literal("text", "number", "integer", "boolean", "date", "crossApp", "location", "list", "json")
}))

const StoredRow = Schema.Struct({
  version: Schema.Number,
  microapp_id: Schema.String,
  filters: Schema.parseJson(Schema.Array(Filter)),
  passes: Schema.NonNegativeInt,
  fields: Schema.parseJson(Fields),
  output: Schema.NullOr(Schema.String),
  committed: Schema.NonNegativeInt,
  snapshot: Schema.Number,
  format: Schema.NullOr(Schema.parseJson(Format)),
  checkpoint: Schema.NullOr(Schema.String),
  lacking: Schema.NonNegativeInt
})

/**
 * What `changes_state` holds: the selection, the passes completed, the schemas' fields, and the
 * pass in progress (`output` null when none).
 *
 * @since 0.2.0
 * @category models
 */
export interface Stored {
  readonly version: number
  readonly microAppID: string
  readonly filters: ReadonlyArray<Filter>
  readonly passes: number
  readonly fields: ReadonlyArray<Field>
  readonly pass: Option.Option<{
    readonly output: string
    readonly length: number
    readonly snapshot: boolean
    readonly format: Format
    readonly checkpoint: string | null
    readonly lacking: number
  }>
}

const decodeStored = Schema.decodeUnknown(StoredRow)

/**
 * The tables, made when missing. SQLite's rollback journal, not its WAL: the driver keeps a WAL's
 * files beside STATE after it closes, and a process killed mid-commit is rolled back on the next open.
 */
export const createTables = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    yield* sql`PRAGMA journal_mode = DELETE`
    yield* sql`CREATE TABLE IF NOT EXISTS changes_state (
      id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL, microapp_id TEXT NOT NULL,
      filters TEXT NOT NULL, passes INTEGER NOT NULL, fields TEXT NOT NULL, output TEXT,
      committed INTEGER NOT NULL, snapshot INTEGER NOT NULL, format TEXT, checkpoint TEXT, lacking INTEGER NOT NULL)`
    yield* sql`CREATE TABLE IF NOT EXISTS baseline (row_id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL) WITHOUT ROWID`
    yield* sql`CREATE TABLE IF NOT EXISTS baseline_rows (row_id TEXT PRIMARY KEY, data TEXT NOT NULL)`
    for (const table of idTables) {
      yield* sql`CREATE TABLE IF NOT EXISTS ${sql(table)} (row_id TEXT PRIMARY KEY) WITHOUT ROWID`
    }
  })

const idTables = ["pass_seen", "pass_deleted", "pass_kept"] as const

/** `changes_state`'s row, if any. */
export const stored = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const [row] = yield* sql`SELECT version, microapp_id, filters, passes, fields, output, committed, snapshot,
      format, checkpoint, lacking FROM changes_state WHERE id = 1`
    if (row === undefined) return Option.none<Stored>()
    const decoded = yield* decodeStored(row)
    return Option.some<Stored>({
      version: decoded.version,
      microAppID: decoded.microapp_id,
      filters: decoded.filters,
      passes: decoded.passes,
      fields: decoded.fields,
      pass: decoded.output === null || decoded.format === null
        ? Option.none()
        : Option.some({
          output: decoded.output,
          length: decoded.committed,
          snapshot: decoded.snapshot === 1,
          format: decoded.format,
          checkpoint: decoded.checkpoint,
          lacking: decoded.lacking
        })
    })
  })

/** STATE made anew for a selection: no baseline, no pass (a first pass is a snapshot). */
export const reset = (
  sql: SqlClient.SqlClient,
  selection: { readonly microAppID: string; readonly filters: ReadonlyArray<Filter> },
  passes = 0
) =>
  Effect.gen(function*() {
    yield* sql`DELETE FROM changes_state`
    yield* sql`DELETE FROM baseline`
    yield* sql`DELETE FROM baseline_rows`
    for (const table of idTables) yield* sql`DELETE FROM ${sql(table)}`
    yield* sql`INSERT INTO changes_state ${
      sql.insert({
        id: 1,
        version: stateVersion,
        microapp_id: selection.microAppID,
        filters: JSON.stringify(selection.filters),
        passes,
        fields: "[]",
        output: null,
        committed: 0,
        snapshot: 0,
        format: null,
        checkpoint: null,
        lacking: 0
      })
    }`
  })

/** `f` on each group of at most `statementRows` of `items`, one after the other. */
const grouped = <A, E, R>(items: ReadonlyArray<A>, f: (group: ReadonlyArray<A>) => Effect.Effect<unknown, E, R>) =>
  Effect.forEach(
    Array.from(
      { length: Math.ceil(items.length / statementRows) },
      (_, i) => items.slice(i * statementRows, (i + 1) * statementRows)
    ),
    f,
    { discard: true }
  )

/** Baseline rows (`row_id`, `fingerprint`, `data`), as an earlier STATE or a page gives them. */
export const insertBaseline = (
  sql: SqlClient.SqlClient,
  rows: ReadonlyArray<{ readonly row_id: string; readonly fingerprint: string; readonly data: string | null }>
) =>
  Effect.gen(function*() {
    yield* grouped(rows, (group) =>
      sql`INSERT INTO baseline ${
        sql.insert(group.map(({ fingerprint, row_id }) => ({ row_id, fingerprint })))
      } ON CONFLICT (row_id) DO UPDATE SET fingerprint = excluded.fingerprint`)
    const whole = rows.flatMap(({ data, row_id }) =>
      data === null ? [] : [{ row_id, data }]
    )
    // a row changed without its JSON kept (`--before key`): the JSON held of it is no longer its before
    const bare = rows.flatMap(({ data, row_id }) => data === null ? [row_id] : [])
    yield* grouped(whole, (group) =>
      sql`INSERT INTO baseline_rows ${sql.insert(group)} ON CONFLICT (row_id) DO UPDATE SET data = excluded.data`)
    yield* grouped(bare, (group) =>
      sql`DELETE FROM baseline_rows WHERE ${sql.in("row_id", group)}`)
  })

/** Rows of `table` after `after`, in keyset pages: rows deleted behind the position move nothing. */
const keyset = <A extends { readonly row_id: string }>(
  query: (after: string) => Effect.Effect<ReadonlyArray<A>, SqlError.SqlError>
) =>
  Stream.paginateChunkEffect("", (after) =>
    Effect.map(query(after), (rows) => {
      const last = rows.at(-1)
      return [
        Chunk.unsafeFromArray(rows),
        rows.length < 1000 || last === undefined ? Option.none() : Option.some(last.row_id)
      ] as const
    }))

const idsOf = (sql: SqlClient.SqlClient, table: (typeof idTables)[number]) =>
  Stream.map(
    keyset((after) =>
      sql<{ row_id: string }>`SELECT row_id FROM ${sql(table)} WHERE row_id > ${after} ORDER BY row_id LIMIT 1000`
    ),
    (row) => row.row_id
  )

/** What the pass in progress has compared, deleted and kept, for `Changes.withIds`. */
export const sinkIds = (sql: SqlClient.SqlClient): Changes.SinkIds<SqlError.SqlError> => ({
  ids: idsOf(sql, "pass_seen"),
  deleted: idsOf(sql, "pass_deleted"),
  kept: idsOf(sql, "pass_kept")
})

/** The baseline as the pass compares with it: one query a page, and the rows it did not see read back in pages. */
export const baseline = (sql: SqlClient.SqlClient): Changes.Baseline<SqlError.SqlError> => ({
  lookup: (ids) =>
    Effect.gen(function*() {
      const found = new Map<string, string>()
      yield* grouped(ids, (group) =>
        Effect.map(
          sql<{ row_id: string; fingerprint: string }>`SELECT row_id, fingerprint FROM baseline
            WHERE ${sql.in("row_id", group)}`,
          (rows) => rows.forEach((row) => found.set(row.row_id, row.fingerprint))
        ))
      return found
    }),
  unseen: () =>
    Stream.map(
      keyset((after) =>
        sql<{ row_id: string; fingerprint: string }>`SELECT row_id, fingerprint FROM baseline
          WHERE row_id > ${after} AND row_id NOT IN (SELECT row_id FROM pass_seen)
          AND row_id NOT IN (SELECT row_id FROM pass_deleted) AND row_id NOT IN (SELECT row_id FROM pass_kept)
          ORDER BY row_id LIMIT 1000`
      ),
      (row) => ({ id: row.row_id, fingerprint: row.fingerprint })
    )
})

/** The rows the baseline holds whole for `ids`: one query (a few for a large page); the ids it holds only a fingerprint of are absent. */
export const previousRows = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const found = new Map<string, Readonly<Record<string, unknown>>>()
    yield* grouped(ids, (group) =>
      Effect.map(
        sql<{ row_id: string; data: string }>`SELECT row_id, data FROM baseline_rows WHERE ${sql.in("row_id", group)}`,
        (rows) => rows.forEach((row) => found.set(row.row_id, JSON.parse(row.data)))
      ))
    return found
  })

/** A new pass opened into `output`: what a page's commit then moves on. */
export const openPass = (
  sql: SqlClient.SqlClient,
  pass: { readonly output: string; readonly snapshot: boolean; readonly format: Format }
) =>
  Effect.gen(function*() {
    for (const table of idTables) yield* sql`DELETE FROM ${sql(table)}`
    yield* sql`UPDATE changes_state SET ${
      sql.update({
        output: pass.output,
        committed: 0,
        snapshot: pass.snapshot ? 1 : 0,
        format: JSON.stringify(pass.format),
        checkpoint: null,
        lacking: 0
      })
    } WHERE id = 1`
  })

/**
 * One page committed: the baseline moved on by its changes (rows whole unless `wholeRows` is
 * false), its ids recorded, and the pass's checkpoint, FILE's length, the fields and the count of
 * events without a whole `before` set.
 */
export const commitPage = (
  sql: SqlClient.SqlClient,
  page: Changes.Page<Row>,
  values: {
    readonly wholeRows: boolean
    readonly length: number
    readonly fields: ReadonlyArray<Field>
    readonly lacking: number
  }
) =>
  sql.withTransaction(Effect.gen(function*() {
    const written = page.changes.flatMap((change) =>
      change._tag === "Deleted"
        ? []
        : [{
          row_id: change.id,
          fingerprint: change.fingerprint,
          data: values.wholeRows ? JSON.stringify(change.row) : null
        }]
    )
    const deleted = page.changes.flatMap((change) => change._tag === "Deleted" ? [change.id] : [])
    yield* insertBaseline(sql, written)
    yield* grouped(deleted, (group) =>
      Effect.zipRight(
        sql`DELETE FROM baseline WHERE ${sql.in("row_id", group)}`,
        sql`DELETE FROM baseline_rows WHERE ${sql.in("row_id", group)}`
      ))
    const recorded = [
      ["pass_seen", page.seen],
      ["pass_deleted", deleted],
      ["pass_kept", [...page.found, ...page.unconfirmed]]
    ] as const
    for (const [table, ids] of recorded) {
      yield* grouped(ids, (group) => sql`INSERT INTO ${sql(table)} ${sql.insert(group.map((row_id) => ({ row_id })))}`)
    }
    yield* sql`UPDATE changes_state SET ${
      sql.update({
        checkpoint: Changes.toJson(Changes.withoutIds(page.checkpoint)),
        committed: values.length,
        fields: JSON.stringify(values.fields),
        lacking: values.lacking
      })
    } WHERE id = 1`
  }))

/** The pass in progress closed, once FILE holds all of it: the next run starts a new pass. */
export const closePass = (sql: SqlClient.SqlClient) =>
  sql.withTransaction(Effect.gen(function*() {
    for (const table of idTables) yield* sql`DELETE FROM ${sql(table)}`
    yield* sql`UPDATE changes_state SET ${
      sql.update({ output: null, committed: 0, snapshot: 0, format: null, checkpoint: null, lacking: 0 })
    }, passes = passes + 1 WHERE id = 1`
  }))
