/**
 * Debezium's change events, built from `Changes.Change`s: the same bytes whatever sends them, the
 * `microapp changes` command or a pipeline with its own Kafka producer.
 *
 * An event is a Kafka message: a key, `{"_id": ...}`, and a value, Debezium's envelope (`before`,
 * `after`, `source`, `transaction`, `op`, `ts_ms`, `ts_us`, `ts_ns`). With `schemas`, each is what
 * Kafka Connect's `JsonConverter` writes with `schemas.enable = true`: exactly `{"schema": ...,
 * "payload": ...}`, the key a struct named `<name>.<schema>.<table>.Key`, the value a struct named
 * `<name>.<schema>.<table>.Envelope` whose `before` and `after` are `<name>.<schema>.<table>.Value`
 * structs; without, the payload alone (`schemas.enable = false`).
 *
 * A row becomes a `Value` of columns, one per field of `fields` (`_id` first, then the row's
 * metadata keys, then its fields), each with the Connect type of its kind: `integer` int64,
 * `number` double (JsonConverter's name of FLOAT64), `boolean` boolean, `text` and `date` string, and every nested value (a
 * cross-app value, a location, a list, or a field whose values disagree beyond int64 and double,
 * or a date and a text) a string of its JSON named `io.debezium.data.Json`, as Debezium writes a
 * JSON column. Every column but `_id` is optional. A field's kind widens by one rule, the typed
 * view's: int64 with double is double, a date with a text is a text, anything else with
 * anything else is `io.debezium.data.Json`; `widen` joins the rows of a page into `fields` before
 * its events are built, so that every value fits the schema it is written under.
 *
 * @since 0.2.0
 */
import type * as Changes from "../Changes.js"
import * as Infer from "../internal/infer.js"
import type { AnyMicroapp } from "../Microapp.js"

/**
 * A field's kind: a Microapp's field kinds, and `json` for a field whose values disagree.
 *
 * @since 0.2.0
 * @category models
 */
export type Kind = "text" | "number" | "integer" | "boolean" | "date" | "crossApp" | "location" | "list" | "json"

/**
 * A column of the rows' `Value` struct: a row's key (a field's label, or a metadata key) and its kind.
 *
 * @since 0.2.0
 * @category models
 */
export interface Field {
  readonly label: string
  readonly kind: Kind
}

/**
 * Where the events come from: `source.name` (Debezium's logical name, the topic prefix, also the
 * first part of the schemas' names), `source.db`, `source.schema` and `source.table`, and the
 * version of what writes them (`source.version`).
 *
 * @since 0.2.0
 * @category models
 */
export interface Source {
  readonly name: string
  readonly db: string
  readonly schema: string
  readonly table: string
  readonly version: string
}

/**
 * `source.snapshot` as Debezium writes it: a snapshot's first row `"first"`, its last `"last"`,
 * the rows between `"true"`; a change that is not a snapshot read `"false"`.
 *
 * @since 0.2.0
 * @category models
 */
export type Marker = "first" | "true" | "last" | "false"

/**
 * What an event needs besides its change.
 *
 * - `fields`: the columns, widened by the change's row (`widen`) and its `before`.
 * - `marker`: `"false"` for a change; a snapshot's rows (`Inserted`) become `r` events.
 * - `before`: the whole previous row of an `Updated` or a `Deleted`; without it, an update's
 *   `before` is null and a delete's holds the key only, as Debezium's PostgreSQL connector writes
 *   them under the default replica identity.
 * - `seenAt`: when the change was seen, in milliseconds since the epoch (`source.ts_ms`).
 * - `writtenAt`: when the event is written, in nanoseconds since the epoch (`ts_ms`, `ts_us`, `ts_ns`).
 * - `schemas`: `{"schema", "payload"}` for key and value.
 *
 * @since 0.2.0
 * @category models
 */
export interface EventOptions {
  readonly source: Source
  readonly fields: ReadonlyArray<Field>
  readonly marker: Marker
  readonly before?: Readonly<Record<string, unknown>> | undefined
  readonly seenAt: number
  readonly writtenAt: bigint
  readonly schemas: boolean
}

/**
 * A Kafka message: its key's and value's text (JSON, no line break). A tombstone's value is null.
 *
 * @since 0.2.0
 * @category models
 */
export interface Message {
  readonly key: string
  readonly value: string | null
}

/** The kinds of the metadata keys a row may carry, as `Row.RowMetadata` declares them. */
const metadataKinds: Readonly<Record<string, Kind>> = {
  _id: "text",
  userID: "text",
  viewers: "json",
  isLocked: "boolean",
  submitted: "number",
  deviceID: "text",
  appVersion: "text",
  hasConflict: "boolean",
  clientCounter: "number",
  clientSubmitted: "text",
  embeddingRowID: "text"
}

/**
 * The fields of a typed Microapp (with `_id`), to start from instead of inferring every kind.
 *
 * @since 0.2.0
 * @category fields
 */
export const fieldsOf = (microapp: AnyMicroapp): ReadonlyArray<Field> =>
  widen([], [], Infer.fieldsOf(microapp).map(({ kind, label }) => ({ label, kind })))

const idField: Field = { label: "_id", kind: "text" }

/**
 * `fields` with the keys of `rows` joined in: a new key comes last (a metadata key before the
 * fields that follow it in no row yet), and a kind that disagrees widens (see the module's rule).
 * `more` joins fields known otherwise (a typed definition's).
 *
 * @since 0.2.0
 * @category fields
 */
export const widen = (
  fields: ReadonlyArray<Field>,
  rows: Iterable<Readonly<Record<string, unknown>>>,
  more: ReadonlyArray<Field> = []
): ReadonlyArray<Field> => {
  const inference = Infer.make()
  const metadata = new Set<string>()
  // a key whose values were all null tells no kind: inference would call it json
  const valued = new Set<string>()
  for (const row of rows) {
    inference.add(row)
    for (const [key, value] of Object.entries(row)) {
      if (Object.hasOwn(metadataKinds, key)) metadata.add(key)
      else if (value !== null && value !== undefined) valued.add(key)
    }
  }
  const seen: Array<Field> = [
    ...Array.from(metadata, (label) => ({ label, kind: metadataKinds[label] ?? "json" })),
    ...more,
    ...inference.fields().filter((field) => valued.has(field.label)).map(({ kind, label }) => ({ label, kind }))
  ]
  const start = fields.length === 0 || fields[0]?.label !== "_id" ? [idField, ...fields] : fields
  const widened = Infer.widen(
    start.map((field) => ({ ...field, required: false })),
    seen.map((field) => ({ ...field, required: false }))
  )
  return widened.map(({ kind, label }) => ({ label, kind }))
}

/** A Connect schema, as `JsonConverter` writes it. */
type ConnectSchema = Readonly<Record<string, unknown>>

const jsonKinds: ReadonlySet<Kind> = new Set(["crossApp", "location", "list", "json"])

const fieldSchema = (field: Field): ConnectSchema => {
  const optional = field.label !== "_id"
  const base = { optional, field: field.label }
  switch (field.kind) {
    case "integer":
      return { type: "int64", ...base }
    case "number":
      return { type: "double", ...base }
    case "boolean":
      return { type: "boolean", ...base }
    case "text":
    case "date":
      return { type: "string", ...base }
    default:
      return { type: "string", optional, name: "io.debezium.data.Json", version: 1, field: field.label }
  }
}

/** `row` as the payload of a `Value` struct: each field's value, null when absent, nested values as JSON text. */
const columnsOf = (row: Readonly<Record<string, unknown>>, fields: ReadonlyArray<Field>): Record<string, unknown> => {
  const columns: Record<string, unknown> = {}
  for (const { kind, label } of fields) {
    const value = row[label]
    columns[label] = value === undefined || value === null ? null : jsonKinds.has(kind) ? JSON.stringify(value) : value
  }
  return columns
}

const prefixOf = (source: Source) => `${source.name}.${source.schema}.${source.table}`

const keySchema = (source: Source): ConnectSchema => ({
  type: "struct",
  fields: [{ type: "string", optional: false, field: "_id" }],
  optional: false,
  name: `${prefixOf(source)}.Key`
})

const int64 = (field: string, optional: boolean) => ({ type: "int64", optional, field })
const string = (field: string, optional: boolean) => ({ type: "string", optional, field })

/** `source`'s struct: the fields Debezium's PostgreSQL connector writes, null where a Microapp has none. */
const sourceSchema: ConnectSchema = {
  type: "struct",
  fields: [
    string("version", false),
    string("connector", false),
    string("name", false),
    int64("ts_ms", false),
    string("db", false),
    string("sequence", true),
    int64("ts_us", true),
    int64("ts_ns", true),
    string("schema", false),
    string("table", false),
    int64("txId", true),
    int64("lsn", true),
    int64("xmin", true),
    {
      type: "string",
      optional: true,
      name: "io.debezium.data.Enum",
      version: 1,
      parameters: { allowed: "true,first,last,false" },
      default: "false",
      field: "snapshot"
    }
  ],
  optional: false,
  name: "io.debezium.connector.microapp.Source",
  field: "source"
}

/** `transaction`'s struct, as Debezium declares it; always null here: the service has no transactions. */
const transactionSchema: ConnectSchema = {
  type: "struct",
  fields: [string("id", false), int64("total_order", false), int64("data_collection_order", false)],
  optional: true,
  name: "event.block",
  version: 1,
  field: "transaction"
}

const valueSchema = (source: Source, fields: ReadonlyArray<Field>): ConnectSchema => {
  const value = (field: string) => ({
    type: "struct",
    fields: fields.map(fieldSchema),
    optional: true,
    name: `${prefixOf(source)}.Value`,
    field
  })
  return {
    type: "struct",
    fields: [
      value("before"),
      value("after"),
      sourceSchema,
      transactionSchema,
      string("op", false),
      int64("ts_ms", true),
      int64("ts_us", true),
      int64("ts_ns", true)
    ],
    optional: false,
    name: `${prefixOf(source)}.Envelope`
  }
}

const withSchema = (schema: ConnectSchema, payload: string) =>
  `{"schema":${JSON.stringify(schema)},"payload":${payload}}`

/** A time in nanoseconds as Debezium's three fields: milliseconds, microseconds and nanoseconds, each whole. */
const times = (nanos: bigint) => `"ts_ms":${nanos / 1_000_000n},"ts_us":${nanos / 1_000n},"ts_ns":${nanos}`

/**
 * The key of the row `id`: `{"_id": id}`, or with `schemas`, as `JsonConverter` writes a struct.
 *
 * @since 0.2.0
 * @category encoding
 */
export const key = (id: string, options: Pick<EventOptions, "source" | "schemas">): string => {
  const payload = JSON.stringify({ _id: id })
  return options.schemas ? withSchema(keySchema(options.source), payload) : payload
}

/**
 * A change as Debezium's event: its key and value. The value's text ends with `source`, whose last
 * field is `snapshot`, so that a writer may mark a snapshot's last event in place
 * (`"true"` to `"last"`: the same length).
 *
 * @since 0.2.0
 * @category encoding
 */
export const event = (change: Changes.Change<Readonly<Record<string, unknown>>>, options: EventOptions): Message => {
  const { fields, marker, source } = options
  const op = change._tag === "Inserted" ? (marker === "false" ? "c" : "r") : change._tag === "Updated" ? "u" : "d"
  const before = options.before !== undefined
    ? columnsOf(options.before, fields)
    : change._tag === "Deleted"
    ? columnsOf({ _id: change.id }, fields)
    : null
  const after = change._tag === "Deleted" ? null : columnsOf(change.row, fields)
  const seenAt = BigInt(Math.trunc(options.seenAt)) * 1_000_000n
  const sourceText = `{"version":${JSON.stringify(source.version)},"connector":"microapp","name":${
    JSON.stringify(source.name)
  },${times(seenAt)},"db":${JSON.stringify(source.db)},"sequence":null,"schema":${
    JSON.stringify(source.schema)
  },"table":${JSON.stringify(source.table)},"txId":null,"lsn":null,"xmin":null,"snapshot":"${marker}"}`
  const payload = `{"before":${JSON.stringify(before)},"after":${JSON.stringify(after)},"op":"${op}",${
    times(options.writtenAt)
  },"transaction":null,"source":${sourceText}}`
  return {
    key: key(change.id, options),
    value: options.schemas ? withSchema(valueSchema(source, fields), payload) : payload
  }
}

/**
 * The tombstone that follows a delete of the row `id`, as Debezium's `tombstones.on.delete`
 * writes it by default: the key, and a null value, so that a compacted topic forgets the row.
 *
 * @since 0.2.0
 * @category encoding
 */
export const tombstone = (id: string, options: Pick<EventOptions, "source" | "schemas">): Message => ({
  key: key(id, options),
  value: null
})
