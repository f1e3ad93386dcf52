/**
 * Microapp definitions and rows as the emulator holds them, and the row rules of the service:
 * metadata, insert, and update by field label.
 */
import { Schema } from "effect"
import { formatLocal } from "../../internal/clientSubmitted.js"

/**
 * A row: a plain JSON object with metadata keys and one key per field label.
 */
export type Row = { readonly [key: string]: unknown }

/**
 * What a field holds; only `crossApp` changes behaviour (an update to `null` clears it).
 */
export type FieldKind = "text" | "number" | "integer" | "boolean" | "date" | "crossApp" | "location" | "list"

export interface FieldDefinition {
  readonly label: string
  readonly fieldID: string
  /** Defaults to "text". */
  readonly kind?: FieldKind | undefined
}

/**
 * A Microapp: its fields, its configured sort fields (labels; index 0 is sort field "1") and its
 * rows in natural order. Rows may omit metadata keys: the emulator fills them in when loading.
 */
export interface TableDefinition {
  readonly microAppID: string
  readonly name: string
  readonly fields: ReadonlyArray<FieldDefinition>
  readonly sortFields: ReadonlyArray<string>
  readonly rows: ReadonlyArray<Row>
}

/**
 * Row keys the service owns; an update or insert naming them is silently ignored.
 */
export const systemKeys: ReadonlySet<string> = new Set([
  "_id",
  "userID",
  "viewers",
  "isLocked",
  "submitted",
  "deviceID",
  "appVersion",
  "hasConflict",
  "clientCounter",
  "clientSubmitted",
  "embeddingRowID"
])

export const CrossAppValue = Schema.Struct({
  crossAppRowID: Schema.String,
  value: Schema.Struct({ label: Schema.String, value: Schema.Unknown })
})

export const LocationValue = Schema.Struct({
  address: Schema.Struct({ formattedAddress: Schema.String })
})

export const isCrossAppValue = Schema.is(CrossAppValue)

export const isLocationValue = Schema.is(LocationValue)

/**
 * The `clientSubmitted` text of the instant `submitted` (epoch milliseconds) at a UTC offset:
 * `Row.formatClientSubmitted`'s text, from a number rather than a zoned DateTime.
 */
export const clientSubmittedAt = (submitted: number, offsetMinutes: number): string => {
  // a plain Date read in UTC at the shifted instant: a zoned DateTime costs more than a demo row
  const local = new Date(submitted + offsetMinutes * 60_000)
  return formatLocal({
    year: local.getUTCFullYear(),
    month: local.getUTCMonth() + 1,
    day: local.getUTCDate(),
    hours: local.getUTCHours(),
    minutes: local.getUTCMinutes(),
    seconds: local.getUTCSeconds()
  }, offsetMinutes * 60_000)
}

/**
 * A 24-character lowercase hex id: `prefix` followed by `counter` in hex, zero-padded.
 */
export const makeRowId = (prefix: string, counter: number): string =>
  // joined: one flat string, not a pair (an emulator may hold hundreds of thousands)
  [prefix, counter.toString(16).padStart(24 - prefix.length, "0")].join("")

export interface Metadata {
  readonly _id: string
  readonly userID: string
  readonly submitted: number
  readonly offsetMinutes?: number | undefined
}

/**
 * Metadata keys of a freshly submitted row, in the service's key order.
 */
export const makeMetadata = (metadata: Metadata): Row => ({
  _id: metadata._id,
  userID: metadata.userID,
  viewers: [],
  isLocked: false,
  submitted: metadata.submitted,
  deviceID: null,
  appVersion: null,
  hasConflict: false,
  clientCounter: null,
  clientSubmitted: clientSubmittedAt(metadata.submitted, metadata.offsetMinutes ?? 0)
})

/**
 * Completes a row given without some metadata keys; keys already present win.
 */
export const completeRow = (row: Row, defaults: Metadata): Row =>
  startsWithMetadata(row) ? row : { ...makeMetadata(defaults), ...row }

const metadataKeys = Object.keys(makeMetadata({ _id: "", userID: "", submitted: 0 }))

// Such a row is what completing it would give: loading a large table copies none.
const startsWithMetadata = (row: Row): boolean => {
  let index = 0
  for (const key in row) {
    if (key !== metadataKeys[index]) return false
    index += 1
    if (index === metadataKeys.length) return true
  }
  return false
}

const fieldByLabel = (fields: ReadonlyArray<FieldDefinition>, label: string): FieldDefinition | undefined =>
  systemKeys.has(label) ? undefined : fields.find((field) => field.label === label)

const isCrossAppField = (field: FieldDefinition, current: unknown): boolean =>
  field.kind === "crossApp" || (field.kind === undefined && isCrossAppValue(current))

/**
 * Field values of `rowData` whose keys are field labels (case sensitive); unknown labels and
 * system keys are dropped, as the service drops them without a word.
 */
export const knownFieldValues = (
  fields: ReadonlyArray<FieldDefinition>,
  rowData: Row
): ReadonlyArray<readonly [FieldDefinition, unknown]> =>
  Object.entries(rowData).flatMap(([label, value]) => {
    const field = fieldByLabel(fields, label)
    return field === undefined ? [] : [[field, value] as const]
  })

export interface UpdateExtras {
  readonly embeddingRowID?: string | undefined
  readonly userID?: string | undefined
}

/**
 * The row after an update: known labels replace their values, a cross-application field set to
 * `null` loses its key, `embeddingRowID` and `userID` are set when given.
 */
export const applyUpdate = (
  fields: ReadonlyArray<FieldDefinition>,
  row: Row,
  rowData: Row,
  extras: UpdateExtras = {}
): Row => {
  const next: Record<string, unknown> = { ...row }
  for (const [field, value] of knownFieldValues(fields, rowData)) {
    if (value === null && isCrossAppField(field, row[field.label])) {
      delete next[field.label]
    } else {
      next[field.label] = value
    }
  }
  if (extras.embeddingRowID !== undefined) next["embeddingRowID"] = extras.embeddingRowID
  if (extras.userID !== undefined) next["userID"] = extras.userID
  return next
}

/**
 * A new row from insert data: metadata first, then the known labels (a `null` cross-application
 * value is left out).
 */
export const buildRow = (fields: ReadonlyArray<FieldDefinition>, rowData: Row, metadata: Metadata): Row =>
  applyUpdate(fields, makeMetadata(metadata), rowData)
