/**
 * The table of passes: a row per mirrored table and Microapp, holding its pass in progress or last
 * completed, its checkpoint, its commit count and its summary, a column per field of
 * `Changes.Summary`, derived from that Schema so that the summary is declared once. A table an
 * earlier version made gains the columns it lacks when opened, filled from the checkpoints it kept.
 */
import type { SqlClient } from "@effect/sql"
import { Data, Effect, Option, type SchemaAST, Struct } from "effect"
import * as Changes from "../../Changes.js"
import type { Target } from "./names.js"
import { snakeCase } from "./typedView.js"

export const passesTable = "microapp_passes"

/**
 * Another run wrote the pass's row since this one read it: two runs on one table at once. The
 * public `SqlMirror.ConcurrentRun` says so.
 */
export class PassMoved extends Data.TaggedError("PassMoved")<{
  readonly table: string
  readonly microAppID: string
}> {}

/** The table's own columns: a summary field of the same name is stored as `summary_<name>`. */
const ownColumns: ReadonlyArray<string> = ["row_table", "microapp_id", "pass", "complete", "checkpoint", "commits"]

type Value = number | string | null

/** How a summary field is stored: counts as integers, booleans as 0 or 1, literals as text. */
interface Column {
  readonly field: keyof Changes.Summary
  readonly name: string
  readonly kind: "integer" | "boolean" | "text"
  /** Its value while the pass has read nothing: 0, false, its first literal; `null` for a field that may be undefined. */
  readonly empty: Value
}

const kindOf = (ast: SchemaAST.AST): Pick<Column, "kind" | "empty"> => {
  if (ast._tag === "Refinement") return kindOf(ast.from)
  // every number of the summary is a whole number (`Schema.Int`)
  if (ast._tag === "NumberKeyword") return { kind: "integer", empty: 0 }
  if (ast._tag === "BooleanKeyword") return { kind: "boolean", empty: 0 }
  if (ast._tag === "Literal" && typeof ast.literal === "string") return { kind: "text", empty: ast.literal }
  if (ast._tag === "Union") {
    const defined = ast.types.filter((type) => type._tag !== "UndefinedKeyword")
    const [first, ...others] = defined.map(kindOf)
    if (first !== undefined && others.every((other) => other.kind === first.kind)) {
      return defined.length < ast.types.length ? { kind: first.kind, empty: null } : first
    }
  }
  // a summary field of another type fails every module that loads this one, in any test
  throw new Error(`${passesTable} has no column for a summary field of type ${String(ast)}`)
}

export const summaryColumns: ReadonlyArray<Column> = Struct.keys(Changes.Summary.fields).map((field) => {
  const name = snakeCase(field)
  return {
    field,
    name: ownColumns.includes(name) ? `summary_${name}` : name,
    ...kindOf(Changes.Summary.fields[field].ast)
  }
})

/** The summary's columns and their values: those of a pass that has read nothing without one. */
const summaryRow = (summary: Changes.Summary | undefined): Record<string, Value> =>
  Object.fromEntries(summaryColumns.map((column) => {
    const value = summary?.[column.field]
    return [column.name, value === undefined ? column.empty : typeof value === "boolean" ? Number(value) : value]
  }))

/** A column's definition: a count may pass PostgreSQL's 32-bit `INTEGER` (`elapsedMillis` after 25 days). */
const definitionOf = (sql: SqlClient.SqlClient) => (column: Column): string => {
  const type = column.kind === "text"
    ? "TEXT"
    : column.kind === "integer"
    ? sql.onDialectOrElse({ pg: () => "BIGINT", orElse: () => "INTEGER" })
    : "INTEGER"
  const empty = typeof column.empty === "string" ? `'${column.empty.replaceAll("'", "''")}'` : column.empty
  return `${column.name} ${type}${empty === null ? "" : ` NOT NULL DEFAULT ${empty}`}`
}

const columnNames = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql.onDialectOrElse({
      pg: () =>
        sql<{ name: string }>`SELECT column_name AS name FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = ${passesTable}`,
      orElse: () => sql<{ name: string }>`SELECT name FROM pragma_table_info(${passesTable})`
    }),
    (rows) => new Set(rows.map((row) => row.name))
  )

/**
 * The summary's columns an earlier version did not make, added; each pass's filled from its
 * checkpoint, which holds its summary (one the checkpoint cannot give keeps the empty values until
 * its pass commits again). In one transaction: a run killed meanwhile leaves the table as it was.
 */
const addMissingColumns = (sql: SqlClient.SqlClient) =>
  sql.withTransaction(Effect.gen(function*() {
    const present = yield* columnNames(sql)
    const missing = summaryColumns.filter((column) => !present.has(column.name))
    if (missing.length === 0) return
    for (const column of missing) {
      yield* sql`ALTER TABLE ${sql(passesTable)} ADD COLUMN ${sql.literal(definitionOf(sql)(column))}`
    }
    const passes = yield* sql<{ row_table: string; microapp_id: string; checkpoint: string }>`
      SELECT row_table, microapp_id, checkpoint FROM ${sql(passesTable)} WHERE checkpoint IS NOT NULL`
    for (const pass of passes) {
      const checkpoint = yield* Effect.option(Changes.fromJson(pass.checkpoint))
      if (Option.isNone(checkpoint)) continue
      yield* sql`UPDATE ${sql(passesTable)} SET ${sql.update(summaryRow(checkpoint.value.summary))}
        WHERE row_table = ${pass.row_table} AND microapp_id = ${pass.microapp_id}`
    }
  }))

/** The table made when missing, or brought up to date. */
export const createPassesTable = (sql: SqlClient.SqlClient) =>
  Effect.zipRight(
    sql`CREATE TABLE IF NOT EXISTS ${sql(passesTable)} (
      row_table TEXT NOT NULL, microapp_id TEXT NOT NULL, pass INTEGER NOT NULL, complete INTEGER NOT NULL,
      checkpoint TEXT, ${sql.literal(summaryColumns.map(definitionOf(sql)).join(", "))}, commits INTEGER NOT NULL,
      PRIMARY KEY (row_table, microapp_id))`,
    addMissingColumns(sql)
  )

/** Whether the table exists: none before a first run (or `createTables`). */
export const passesTableExists = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql.onDialectOrElse({
      sqlite: () =>
        sql<{ found: number }>`SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ${passesTable}`,
      orElse: () =>
        sql<{ found: number }>`SELECT 1 AS found FROM information_schema.tables
          WHERE table_schema = current_schema() AND table_name = ${passesTable}`
    }),
    (found) => found.length > 0
  )

interface StoredPass {
  readonly pass: number
  readonly complete: number
  readonly checkpoint: string | null
  readonly commits: number
}

/** The target's row. */
const keyOf = ({ microAppID, sql, tables }: Target) =>
  sql.and([sql`row_table = ${tables.rows}`, sql`microapp_id = ${microAppID}`])

/**
 * Locks the pass's row until the transaction ends, on PostgreSQL: another run's page cannot commit
 * between it and the ids read after it, which would make the checkpoint and its ids disagree.
 * SQLite's transaction reads one snapshot already.
 */
const lockOf = (sql: SqlClient.SqlClient) =>
  sql.onDialectOrElse({ pg: () => sql.literal(" FOR UPDATE"), orElse: () => sql.literal("") })

/** The target's pass in progress or last completed, if any. */
export const stored = (target: Target, options?: { readonly lock: boolean }) =>
  Effect.map(
    target.sql<StoredPass>`SELECT pass, complete, checkpoint, commits FROM ${target.sql(passesTable)}
      WHERE ${keyOf(target)}${options?.lock === true ? lockOf(target.sql) : target.sql.literal("")}`,
    (found) => Option.fromNullable(found[0])
  )

/** The first pass's row, complete and empty, when there is none yet. */
export const createPass = (target: Target) => {
  const { microAppID, sql, tables } = target
  return sql`INSERT INTO ${sql(passesTable)} ${
    sql.insert({
      row_table: tables.rows,
      microapp_id: microAppID,
      pass: 0,
      complete: 1,
      checkpoint: null,
      ...summaryRow(undefined),
      commits: 0
    })
  } ON CONFLICT (row_table, microapp_id) DO NOTHING`
}

/**
 * The target's row set to pass `pass` at `checkpoint` (none: a new pass), unless another run wrote
 * it since `commits`; its new commit count.
 */
export const writePass = (target: Target, commits: number, values: {
  readonly pass: number
  readonly checkpoint: Changes.Checkpoint | undefined
}) =>
  Effect.gen(function*() {
    const { microAppID, sql, tables } = target
    const row = {
      pass: values.pass,
      complete: values.checkpoint?.phase === "done" ? 1 : 0,
      checkpoint: values.checkpoint === undefined ? null : Changes.toJson(Changes.withoutIds(values.checkpoint)),
      ...summaryRow(values.checkpoint?.summary),
      commits: commits + 1
    }
    const updated = yield* sql<{ commits: number }>`UPDATE ${sql(passesTable)} SET ${sql.update(row)}
      WHERE ${keyOf(target)} AND commits = ${commits} RETURNING commits`
    if (updated.length !== 1) return yield* new PassMoved({ table: tables.rows, microAppID })
    return row.commits
  })
