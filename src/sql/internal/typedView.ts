/**
 * The typed view of a mirror's table: one column per field, named from its label in snake_case and
 * typed from its kind, over `data` (jsonb on PostgreSQL, JSON text on SQLite), with `_id` and the
 * bookkeeping columns. Replaced when the fields it was made from change.
 */
import type { SqlClient, SqlError } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import * as Infer from "../../internal/infer.js"

/** What a view is made from: each field's label and kind (a list's items aside from their kind). */
export interface ViewField {
  readonly label: string
  readonly kind: Infer.Kind
}

const ViewFields = Schema.parseJson(Schema.Array(Schema.Struct({
  label: Schema.String,
  kind: Infer.InferredFieldSchema.fields.kind
})))

/** The table of views: what each was last made from. */
export const viewsTable = "microapp_views"

/** The columns a view has besides the fields'. */
const bookkeeping = ["_id", "microapp_id", "pass", "fingerprint"] as const

/** PostgreSQL's identifiers are cut at 63 bytes: a name and its `_N` suffix stay under. */
const maxName = 56

const snakeCase = (label: string): string => {
  const words = label.normalize("NFKD").replace(/[\u0300-\u036f]/g, "")
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, maxName)
  return words === "" ? "field" : /^[0-9]/.test(words) ? `f_${words}` : words
}

/**
 * Each field's column: its label in snake_case; a name already taken (by a bookkeeping column or a
 * field before it) gets `_2`, `_3`... in the fields' order.
 */
export const columnNames = (labels: ReadonlyArray<string>): ReadonlyArray<string> => {
  const taken = new Set<string>(bookkeeping)
  return labels.map((label) => {
    const base = snakeCase(label)
    let name = base
    for (let n = 2; taken.has(name); n++) name = `${base}_${n}`
    taken.add(name)
    return name
  })
}

const quoted = (text: string): string => `'${text.replaceAll("'", "''")}'`
const identifier = (name: string): string => `"${name.replaceAll("\"", "\"\"")}"`

/**
 * A `YYYY-MM-DD` text as a timestamptz at midnight UTC, or null when no calendar has that day: a
 * cast of one would fail the whole query. Nested, as only CASE orders what PostgreSQL evaluates.
 */
const calendarDay = (text: string): string => {
  const [year, month, day] = [[1, 4], [6, 2], [9, 2]].map(([from, length]) =>
    `substr(${text}, ${from}, ${length})::int`
  )
  const lastDay = `extract(day from make_date(${year}, ${month}, 1) + interval '1 month - 1 day')`
  return `CASE WHEN ${text} ~ '^\\d{4}-\\d{2}-\\d{2}$' THEN CASE WHEN ${year} >= 1 AND ${month} BETWEEN 1 AND 12 THEN ` +
    `CASE WHEN ${day} BETWEEN 1 AND ${lastDay} THEN (${text})::date::timestamp AT TIME ZONE 'UTC' END END END`
}

/** A field's value in PostgreSQL, typed; null when the row's value is not of the kind. */
const pgColumn = (field: ViewField): string => {
  const json = `data->${quoted(field.label)}`
  const text = `data->>${quoted(field.label)}`
  const when = (type: string, cast: string) => `CASE WHEN jsonb_typeof(${json}) = '${type}' THEN ${cast} END`
  switch (field.kind) {
    case "text":
      return text
    case "number":
      return when("number", `(${text})::double precision`)
    case "integer":
      return when("number", `(${text})::numeric::bigint`)
    case "boolean":
      return when("boolean", `(${text})::boolean`)
    case "date":
      return calendarDay(text)
    default:
      return json
  }
}

/**
 * A field's value in SQLite, with the type SQLite has for it. A JSON path cannot hold a `"` (SQLite
 * 3.45 reads none, escaped or not): such a label is looked up among the row's keys instead.
 */
const sqliteColumn = (field: ViewField): string => {
  const path = quoted(`$."${field.label}"`)
  const member = (column: "value" | "type") =>
    `(SELECT ${column} FROM json_each(data) WHERE key = ${quoted(field.label)})`
  const [value, type, json] = field.label.includes("\"")
    ? [member("value"), member("type"), member("value")]
    : [`json_extract(data, ${path})`, `json_type(data, ${path})`, `data -> ${path}`]
  switch (field.kind) {
    case "text":
    case "date":
      return `CAST(${value} AS TEXT)`
    case "number":
      return `CASE WHEN ${type} IN ('integer', 'real') THEN CAST(${value} AS REAL) END`
    case "integer":
      return `CASE WHEN ${type} = 'integer' THEN ${value} END`
    case "boolean":
      return `CASE WHEN ${type} IN ('true', 'false') THEN ${value} END`
    default:
      return json
  }
}

/** The view `view` over the rows of `microAppID` in `table`, made afresh: a column may change type. */
const replaceView = (
  sql: SqlClient.SqlClient,
  view: { readonly name: string; readonly table: string; readonly microAppID: string },
  fields: ReadonlyArray<ViewField>
) =>
  Effect.gen(function*() {
    const column = sql.onDialectOrElse({ pg: () => pgColumn, orElse: () => sqliteColumn })
    const names = columnNames(fields.map((field) => field.label))
    const columns = [
      "row_id AS _id",
      ...fields.map((field, i) => `${column(field)} AS ${identifier(names[i] ?? "")}`),
      "microapp_id",
      "pass",
      "fingerprint"
    ]
    yield* sql`DROP VIEW IF EXISTS ${sql(view.name)}`
    yield* sql`CREATE VIEW ${sql(view.name)} AS SELECT ${sql.literal(columns.join(", "))} FROM ${sql(view.table)}
      WHERE microapp_id = ${sql.literal(quoted(view.microAppID))}`
  })

/** A view kept over a mirror's table: `fields` made into the view when they differ from what it was made from. */
export const keeper = (
  sql: SqlClient.SqlClient,
  view: { readonly name: string; readonly table: string; readonly microAppID: string }
) => {
  const create = sql`CREATE TABLE IF NOT EXISTS ${sql(viewsTable)} (
    view_name TEXT NOT NULL PRIMARY KEY, row_table TEXT NOT NULL, microapp_id TEXT NOT NULL, fields TEXT NOT NULL)`

  /** What the view was last made from, when it is this table's and Microapp's. */
  const stored: Effect.Effect<Option.Option<ReadonlyArray<ViewField>>, SqlError.SqlError> = Effect.flatMap(
    sql<{ row_table: string; microapp_id: string; fields: string }>`SELECT row_table, microapp_id, fields
      FROM ${sql(viewsTable)} WHERE view_name = ${view.name}`,
    ([row]) =>
      row === undefined || row.row_table !== view.table || row.microapp_id !== view.microAppID
        ? Effect.succeed(Option.none())
        : Effect.option(Schema.decode(ViewFields)(row.fields))
  )

  /** The view made from `fields`, unless `before` (what it was made from) equals them. */
  const keep = (before: Option.Option<ReadonlyArray<ViewField>>, fields: ReadonlyArray<ViewField>) =>
    Effect.gen(function*() {
      const text = Schema.encodeSync(ViewFields)(fields)
      if (Option.isSome(before) && Schema.encodeSync(ViewFields)(before.value) === text) return
      yield* replaceView(sql, view, fields)
      yield* sql`INSERT INTO ${sql(viewsTable)} ${
        sql.insert({ view_name: view.name, row_table: view.table, microapp_id: view.microAppID, fields: text })
      } ON CONFLICT (view_name) DO UPDATE SET row_table = excluded.row_table, microapp_id = excluded.microapp_id,
        fields = excluded.fields`
    })

  return { create, stored, keep }
}

/** Fields as a view takes them. */
export const viewFields = (fields: ReadonlyArray<Infer.InferredField>): ReadonlyArray<ViewField> =>
  fields.map((field) => ({ label: field.label, kind: field.kind }))

/** `before` with the fields of `rows` joined in (a kind that disagrees widens, a new label comes last). */
export const widenedBy = (
  before: ReadonlyArray<ViewField>,
  rows: ReadonlyArray<Readonly<Record<string, unknown>>>
): ReadonlyArray<ViewField> => {
  const inference = Infer.make()
  rows.forEach(inference.add)
  return viewFields(Infer.widen(before.map((field) => ({ ...field, required: false })), inference.fields()))
}
