/**
 * The typed view of a mirror's table: one column per field (the first `maxViewFields`), named from
 * its label in snake_case and typed from its kind, over `data` (jsonb on PostgreSQL, JSON text on
 * SQLite), with `_id` and the bookkeeping columns. Replaced when the fields it was made from change
 * (and on SQLite at each run's start); its name is claimed before anything is made.
 */
import type { SqlClient, SqlError } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import * as Infer from "../../internal/infer.js"
import { InvalidInput } from "../../MicroappError.js"

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

/** A label as a name SQL takes unquoted: snake_case, accents dropped, never empty nor starting with a digit. */
export const snakeCase = (label: string): string => {
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
 * A label as the key of a SQLite JSON path, `$."key"`: the label as JSON writes it, which SQLite
 * reads back escape by escape (3.45 decodes both the path's key and the row's label; earlier
 * versions compare the two as written, which `JSON.stringify`'s own escapes match). A `"` ends the
 * key whatever precedes it, so it is written `\u0022`.
 */
export const sqlitePath = (label: string): string =>
  `$."${JSON.stringify(label).slice(1, -1).replaceAll("\\\"", "\\u0022")}"`

/** A field's value in SQLite, with the type SQLite has for it. */
const sqliteColumn = (field: ViewField): string => {
  const path = quoted(sqlitePath(field.label))
  const value = `json_extract(data, ${path})`
  const type = `json_type(data, ${path})`
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
      return `data -> ${path}`
  }
}

/**
 * The field columns a view holds at most: with `_id` and the bookkeeping columns, under PostgreSQL's
 * 1,600 columns a view and SQLite's 2,000 a result set (its default `SQLITE_MAX_COLUMN`).
 */
export const maxViewFields = 1500

/**
 * The fields a view holds as columns: the first `maxViewFields` in the fields' order, which only
 * ever appends, so that a column, once in the view, stays there. The others are read from `data`,
 * as is a label holding U+0000: SQLite's paths end a key there, and PostgreSQL's jsonb refuses it.
 */
export const heldFields = (fields: ReadonlyArray<ViewField>): ReadonlyArray<ViewField> =>
  fields.filter((field) => !field.label.includes("\u0000")).slice(0, maxViewFields)

/** Labels a warning quotes at most, in characters: a few thousand labels make no log line. */
const quotedLabels = 1000

/** The labels of the fields a view made from `fields` leaves in `data`. */
const leftInData = (fields: ReadonlyArray<ViewField>): ReadonlyArray<string> => {
  const held = new Set(heldFields(fields))
  return fields.flatMap((field) => held.has(field) ? [] : [field.label])
}

/**
 * A warning when a view made from `after` leaves fields in `data` that one made from `before` did
 * not: how many it leaves there, and the labels of those it newly leaves (as JSON, as many as fit
 * in `quotedLabels` characters).
 */
export const warnLeftInData = (
  view: string,
  before: ReadonlyArray<ViewField>,
  after: ReadonlyArray<ViewField>
): Effect.Effect<void> => {
  const earlier = new Set(leftInData(before))
  const left = leftInData(after)
  const newly = left.filter((label) => !earlier.has(label))
  if (newly.length === 0) return Effect.void
  let listed = ""
  let count = 0
  for (const label of newly) {
    const next = `${listed}${count === 0 ? "" : ", "}${JSON.stringify(label)}`
    if (next.length > quotedLabels) break
    listed = next
    count++
  }
  const which = newly.length === left.length ? "" : `, ${newly.length} of them new`
  const named = count === 0 ? "" : `: ${listed}${count === newly.length ? "" : ` and ${newly.length - count} more`}`
  return Effect.logWarning(
    `the view ${view} holds ${after.length - left.length} of ${after.length} fields as columns; ` +
      `${left.length} ${left.length === 1 ? "is" : "are"} left in data${which}${named}`
  )
}

/** The view `view` over the rows of `microAppID` in `table`, made afresh: a column may change type. */
const replaceView = (
  sql: SqlClient.SqlClient,
  view: { readonly name: string; readonly table: string; readonly microAppID: string },
  fields: ReadonlyArray<ViewField>
) =>
  Effect.gen(function*() {
    const column = sql.onDialectOrElse({ pg: () => pgColumn, orElse: () => sqliteColumn })
    const held = heldFields(fields)
    const names = columnNames(held.map((field) => field.label))
    const columns = [
      "row_id AS _id",
      ...held.map((field, i) => `${column(field)} AS ${identifier(names[i] ?? "")}`),
      "microapp_id",
      "pass",
      "fingerprint"
    ]
    yield* sql`DROP VIEW IF EXISTS ${sql(view.name)}`
    yield* sql`CREATE VIEW ${sql(view.name)} AS SELECT ${sql.literal(columns.join(", "))} FROM ${sql(view.table)}
      WHERE microapp_id = ${sql.literal(quoted(view.microAppID))}`
  })

/**
 * `view.name` refused with `InvalidInput` unless it is free or already this mirror's view: a name
 * another table or Microapp keeps its view under, one that differs from a view's name in case only
 * (the same name to SQLite), or a table, view or index no mirror's view made, is left alone. A read:
 * it creates nothing.
 */
export const claim = (
  sql: SqlClient.SqlClient,
  view: { readonly name: string; readonly table: string; readonly microAppID: string }
): Effect.Effect<void, InvalidInput | SqlError.SqlError> =>
  Effect.gen(function*() {
    const names = [view.name.toLowerCase(), viewsTable]
    // one look at the database's names answers both: is the name taken, and are views kept here at all
    const objects = yield* sql.onDialectOrElse({
      pg: () =>
        sql<{ name: string }>`SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = current_schema() AND lower(c.relname) IN ${sql.in(names)}`,
      orElse: () => sql<{ name: string }>`SELECT name FROM sqlite_master WHERE lower(name) IN ${sql.in(names)}`
    })
    const kept = objects.some((object) => object.name === viewsTable)
      ? yield* sql<{ view_name: string; row_table: string; microapp_id: string }>`SELECT view_name, row_table,
          microapp_id FROM ${sql(viewsTable)} WHERE lower(view_name) = ${view.name.toLowerCase()}`
      : []
    const isOurs = (row: (typeof kept)[number]) =>
      row.view_name === view.name && row.row_table === view.table && row.microapp_id === view.microAppID
    const ours = kept.some(isOurs)
    const other = kept.find((row) => !isOurs(row))
    const taken = objects.find((object) => object.name !== viewsTable)
    const reason = other !== undefined
      ? `'${view.name}' is taken: ${other.view_name} is the view of Microapp ${other.microapp_id} in table ${other.row_table}`
      : !ours && taken !== undefined
      ? `'${view.name}' is taken: the database has a table, view or index ${taken.name}, which no mirror's view made`
      : undefined
    if (reason !== undefined) return yield* new InvalidInput({ input: "view", reason })
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
