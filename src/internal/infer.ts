/**
 * A Microapp's fields inferred from its rows: each label's kind, whether every row has it, and the
 * choices of a text field with few distinct values. Used by `microapp describe` (a `Microapp.make`
 * module) and by the SQL mirror's typed views (a column per field).
 */
import { DateTime, Option, Schema } from "effect"
import type { AnyMicroapp, FieldKind } from "../Microapp.js"
import * as Row from "../Row.js"

/** A field's kind as inferred: a `FieldKind`, or `json` when its values disagree beyond text. */
export type Kind = FieldKind | "json"

/** The kind of a list's items. */
export type ItemKind = "text" | "number" | "integer" | "boolean" | "json"

export interface InferredField {
  readonly label: string
  readonly kind: Kind
  /** For a list: its items' kind (`json` when they disagree or none was seen). */
  readonly item?: ItemKind | undefined
  /** In every row, not null. */
  readonly required: boolean
  /** For a text field with few distinct values: those values, sorted. */
  readonly choices?: ReadonlyArray<string> | undefined
}

/** The package a printed module imports. */
const packageName = "effect-microapp"

/** A text field is a choice when it holds at most this many distinct values... */
const maxChoices = 8
/** ...each, on average, in at least this many rows. */
const rowsPerChoice = 4

const metadataKeys: ReadonlySet<string> = new Set(Object.keys(Row.RowMetadata.fields))

const isCrossApp = Schema.is(Row.CrossAppValue)
const isLocation = Schema.is(Row.LocationValue)
const calendarDate = /^\d{4}-\d{2}-\d{2}$/

const isCalendarDate = (text: string): boolean =>
  calendarDate.test(text) &&
  Option.exists(DateTime.make(`${text}T00:00:00Z`), (date) => DateTime.formatIso(date).startsWith(text))

const scalarKind = (value: unknown): ItemKind =>
  typeof value === "string"
    ? "text"
    : typeof value === "boolean"
    ? "boolean"
    : typeof value === "number"
    ? Number.isSafeInteger(value) ? "integer" : "number"
    : "json"

/** Two kinds as one: an integer among numbers is a number, a date among texts a text, else json. */
const joinKinds = <K extends Kind>(a: K, b: K): K | "number" | "text" | "json" =>
  a === b
    ? a
    : (a === "integer" && b === "number") || (a === "number" && b === "integer")
    ? "number"
    : (a === "date" && b === "text") || (a === "text" && b === "date")
    ? "text"
    : "json"

const joinItems = (a: ItemKind | undefined, b: ItemKind | undefined): ItemKind | undefined =>
  a === undefined ? b : b === undefined ? a : joinKinds(a, b) as ItemKind

interface Seen {
  kind: Kind | undefined
  item: ItemKind | undefined
  present: number
  /** Distinct text values, until there are more than `maxChoices`. */
  values: Set<string> | undefined
}

/** Fields inferred from rows added one at a time (a pass's pages, or a whole table). */
export interface Inference {
  readonly add: (row: Readonly<Record<string, unknown>>) => void
  readonly fields: () => ReadonlyArray<InferredField>
  readonly rows: () => number
}

export const make = (): Inference => {
  const seen = new Map<string, Seen>()
  let rows = 0
  const add = (row: Readonly<Record<string, unknown>>) => {
    rows++
    for (const [label, value] of Object.entries(row)) {
      if (metadataKeys.has(label)) continue
      const field = seen.get(label) ?? { kind: undefined, item: undefined, present: 0, values: new Set<string>() }
      seen.set(label, field)
      if (value === null || value === undefined) continue
      field.present++
      let kind: Kind
      if (Array.isArray(value)) {
        kind = "list"
        for (const item of value) field.item = joinItems(field.item, scalarKind(item))
      } else if (typeof value === "string") {
        kind = isCalendarDate(value) ? "date" : "text"
        if (field.values !== undefined) {
          field.values.add(value)
          if (field.values.size > maxChoices) field.values = undefined
        }
      } else if (isCrossApp(value)) {
        kind = "crossApp"
      } else if (isLocation(value)) {
        kind = "location"
      } else {
        kind = scalarKind(value)
      }
      field.kind = field.kind === undefined ? kind : joinKinds(field.kind, kind)
    }
  }
  const fields = () =>
    Array.from(seen.entries(), ([label, field]): InferredField => {
      const kind = field.kind ?? "json"
      const required = rows > 0 && field.present === rows
      const values = kind === "text" && field.values !== undefined && field.values.size * rowsPerChoice <= field.present
        ? Array.from(field.values).sort()
        : undefined
      return {
        label,
        kind,
        required,
        ...(kind === "list" ? { item: field.item ?? "json" } : {}),
        ...(values === undefined ? {} : { choices: values })
      }
    })
  return { add, fields, rows: () => rows }
}

/** The fields of a typed Microapp, as inference gives them (a list's items and choices aside). */
export const fieldsOf = (microapp: AnyMicroapp): ReadonlyArray<InferredField> =>
  Object.entries(microapp.fields).map(([label, field]) => ({
    label,
    kind: field.kind,
    required: field.required,
    ...(field.kind === "list" ? { item: "json" as const } : {})
  }))

/** `before`'s fields with `after`'s joined in: a kind that changed widens, a new label comes last. */
export const widen = (
  before: ReadonlyArray<InferredField>,
  after: ReadonlyArray<InferredField>
): ReadonlyArray<InferredField> => {
  const later = new Map(after.map((field) => [field.label, field]))
  const kept = before.map((field): InferredField => {
    const other = later.get(field.label)
    if (other === undefined) return field
    const kind = joinKinds(field.kind, other.kind)
    return {
      label: field.label,
      kind,
      required: field.required && other.required,
      ...(kind === "list" ? { item: joinItems(field.item, other.item) ?? "json" } : {})
    }
  })
  const known = new Set(before.map((field) => field.label))
  return [...kept, ...after.filter((field) => !known.has(field.label))]
}

/** Schema of `InferredField`, for `--json` and for what the mirror stores of a view. */
export const InferredFieldSchema = Schema.Struct({
  label: Schema.String,
  kind: Schema.Literal("text", "number", "integer", "boolean", "date", "crossApp", "location", "list", "json"),
  item: Schema.optional(Schema.Literal("text", "number", "integer", "boolean", "json")),
  required: Schema.Boolean,
  choices: Schema.optional(Schema.Array(Schema.String))
})

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/

const key = (label: string): string => identifier.test(label) ? label : JSON.stringify(label)

/** A value's place in a sort: nothing first, then numbers, then text (the emulator's order). */
const sortKey = (value: unknown): readonly [number, number | string] =>
  value === undefined || value === null
    ? [0, 0]
    : typeof value === "number"
    ? [1, value]
    : [2, typeof value === "string" ? value : JSON.stringify(value)]

const inOrder = (rows: ReadonlyArray<Readonly<Record<string, unknown>>>, label: string): boolean =>
  rows.every((row, i) => {
    const before = rows[i - 1]
    if (before === undefined) return true
    const [a, b] = [sortKey(before[label]), sortKey(row[label])]
    return a[0] < b[0] || (a[0] === b[0] && a[1] <= b[1])
  })

/**
 * The label a sort field sorts by, when the rows tell it: the one label among `labels` whose values
 * come in order in `sorted` (rows read under that sort field), with more than one distinct value.
 */
export const sortFieldOf = (
  labels: ReadonlyArray<string>,
  sorted: ReadonlyArray<Readonly<Record<string, unknown>>>
): string | undefined => {
  const told = labels.filter((label) =>
    new Set(sorted.map((row) => JSON.stringify(row[label]))).size > 1 && inOrder(sorted, label)
  )
  return told.length === 1 ? told[0] : undefined
}

/** What begins the placeholder of a fieldID the rows do not tell. */
export const placeholderPrefix = "FIELD_ID_OF:"

/** The placeholder written for a fieldID the rows do not tell: the editor shows the real one. */
export const fieldIDPlaceholder = (label: string): string => `${placeholderPrefix}${label}`

const itemSchema: Record<ItemKind, string> = {
  text: "Schema.String",
  number: "Schema.Number",
  integer: "Schema.Int",
  boolean: "Schema.Boolean",
  json: "Schema.Unknown"
}

const fieldExpression = (field: InferredField): string => {
  const id = JSON.stringify(fieldIDPlaceholder(field.label))
  const made = field.choices !== undefined
    ? `Microapp.choice(${id}, [${field.choices.map((value) => JSON.stringify(value)).join(", ")}])`
    : field.kind === "list"
    ? `Microapp.list(${id}, ${itemSchema[field.item ?? "json"]})`
    : field.kind === "json"
    ? `Microapp.custom(${id}, Schema.Unknown)`
    : `Microapp.${field.kind}(${id})`
  return field.required ? `Microapp.required(${made})` : made
}

/** The name `name` as an exported constant: letters, digits and `_`, not starting with a digit. */
export const constantName = (name: string): string => {
  const words = name.split(/[^A-Za-z0-9]+/).filter((word) => word !== "")
  const joined = words.map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join("")
  return joined === "" ? "Inferred" : /^[0-9]/.test(joined) ? `M${joined}` : joined
}

/**
 * A TypeScript module defining the Microapp with `Microapp.make`, from `fields` inferred over
 * `rows` rows; each fieldID a placeholder marked `FIELD_ID_OF:<label>`, and the sort fields the rows
 * told, or none with a comment saying what to list there.
 */
export const moduleOf = (options: {
  readonly microAppID: string
  readonly name: string
  readonly rows: number
  readonly fields: ReadonlyArray<InferredField>
  /** The sort fields' labels, as far as the rows tell them (`sortFieldOf`). */
  readonly sortFields?: ReadonlyArray<string> | undefined
}): string => {
  const sortFields = options.sortFields ?? []
  const usesSchema = options.fields.some((field) => field.kind === "list" || field.kind === "json")
  const lines = [
    `/**`,
    ` * ${options.name} (${options.microAppID}), inferred by \`microapp describe\` from ${options.rows} rows.`,
    ` * Replace each "FIELD_ID_OF:<label>" with the field's fieldID, shown in the field's properties`,
    ` * in the Microapp editor.`,
    ` */`,
    ...(usesSchema ? [`import { Schema } from "effect"`] : []),
    // the package's name spelled apart, so that no scan of this module's imports reads it as one
    `import { Microapp } from ${JSON.stringify(packageName)}`,
    ``,
    `export const ${constantName(options.name)} = Microapp.make({`,
    `  microAppID: ${JSON.stringify(options.microAppID)},`,
    `  name: ${JSON.stringify(options.name)},`,
    `  fields: {`,
    ...options.fields.map((field, i) =>
      `    ${key(field.label)}: ${fieldExpression(field)}${i === options.fields.length - 1 ? "" : ","}`
    ),
    `  },`,
    ...(sortFields.length === 0
      ? [
        `  // the Results Tab's sort fields by label, sort field 1 first; the rows do not tell them: ${
          JSON.stringify(options.fields.slice(0, 2).map((field) => field.label))
        }, say`,
        `  sortFields: []`
      ]
      : [
        `  // the Results Tab's sort fields 1 to ${sortFields.length}, told by the rows' order under each: check them there`,
        `  sortFields: [${sortFields.map((label) => JSON.stringify(label)).join(", ")}]`
      ]),
    `})`,
    ``
  ]
  return lines.join("\n")
}
