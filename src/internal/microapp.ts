/**
 * Typed Microapps' implementation: the row Schema of a definition, labels to fieldIDs and sort
 * numbers, updates checked and encoded by label, and a bound reader over the client.
 */
import { Effect, ParseResult, Predicate, Schema, Stream } from "effect"
import type { AnyField, AnyMicroapp, Bound, Microapp, RowOf, RowType, Selection, UpdateOptions } from "../Microapp.js"
import type { MicroappClient } from "../MicroappClient.js"
import { InvalidInput } from "../MicroappError.js"
import * as Row from "../Row.js"
import { makeUpdateRows } from "./bulkUpdate.js"
import { endpoints } from "./http/endpoints.js"
import { placeholderPrefix } from "./infer.js"

const mapFields = <B>(fields: Readonly<Record<string, AnyField>>, f: (field: AnyField) => B): Record<string, B> =>
  Object.fromEntries(Object.entries(fields).map(([label, value]) => [label, f(value)]))

/** The Schema of a row: each field by label, optional unless required, and the row's metadata. */
export const rowSchema = <Fields extends Record<string, AnyField>>(
  fields: Fields
): Schema.Schema<RowType<Fields>, Readonly<Record<string, unknown>>> => {
  const properties = mapFields(
    fields,
    (field) => field.required ? field.schema : Schema.optionalWith(field.schema, { nullable: true })
  )
  const schema = Schema.Struct(
    { ...properties, ...Row.RowMetadata.fields },
    Schema.Record({ key: Schema.String, value: Schema.Unknown })
  )
  // the Struct has one property per label of Fields, each with that field's Schema: RowType<Fields>
  return schema as unknown as Schema.Schema<RowType<Fields>, Readonly<Record<string, unknown>>>
}

const invalid = (path: string, input: string, reason: string) =>
  new InvalidInput({ method: "POST", path, input, reason })

/** Filters and sort by label, as the wire wants them: fieldIDs and sort-field numbers. */
const toSelection = (microapp: AnyMicroapp, selection: Selection<AnyMicroapp>, path: string) =>
  Effect.gen(function*() {
    const filters = Object.entries(selection.filters ?? {})
    for (const [label] of filters) {
      if (!Object.hasOwn(microapp.fields, label)) {
        return yield* invalid(path, `filters.${label}`, `"${label}" is not a field of ${microapp.name}`)
      }
      if (microapp.fields[label]?.fieldID.startsWith(placeholderPrefix)) {
        return yield* invalid(
          path,
          `filters.${label}`,
          `the fieldID of "${label}" is the placeholder "${microapp.fields[label]?.fieldID}" that microapp describe ` +
            `wrote: replace it with the field's fieldID, shown in the field's properties in the Microapp editor`
        )
      }
    }
    const keys = selection.sort === undefined ? [] : Array.isArray(selection.sort) ? selection.sort : [selection.sort]
    const sort = []
    for (const [index, key] of keys.entries()) {
      const position = microapp.sortFields.indexOf(key.field)
      if (position < 0) {
        return yield* invalid(
          path,
          `sort${Array.isArray(selection.sort) ? `.${index}` : ""}.field`,
          `"${String(key.field)}" is not a sort field of ${microapp.name} (${
            microapp.sortFields.join(", ") ||
            "none: list the Results Tab's sort fields by label in sortFields, sort field 1 first"
          })`
        )
      }
      sort.push({ field: position + 1, ...(key.order === undefined ? {} : { order: key.order }) })
    }
    return {
      microAppID: microapp.microAppID,
      filters: filters.flatMap(([label, value]) => {
        const fieldID = microapp.fields[label]?.fieldID
        return fieldID === undefined || value === undefined ? [] : [{ fieldID, value }]
      }),
      sort
    }
  })

const updatePath = endpoints.update.path

/** Edits (insert, delete, change, swap of neighbours) between two labels, to suggest the one meant. */
const distance = (a: string, b: string): number => {
  const width = b.length + 1
  const table = Array.from(
    { length: (a.length + 1) * width },
    (_, k) => k < width ? k : k % width === 0 ? k / width : 0
  )
  const at = (i: number, j: number): number => table[i * width + j] ?? 0
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const swapped = i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]
      table[i * width + j] = Math.min(
        at(i - 1, j) + 1,
        at(i, j - 1) + 1,
        at(i - 1, j - 1) + (a[i - 1] === b[j - 1] ? 0 : 1),
        swapped ? at(i - 2, j - 2) + 1 : Infinity
      )
    }
  }
  return at(a.length, b.length)
}

/** The label `label` is closest to by edits (case aside), when one is near enough to be the one meant. */
export const nearestLabel = (labels: ReadonlyArray<string>, label: string): string | undefined => {
  let nearest: { readonly known: string; readonly edits: number } | undefined
  for (const known of labels) {
    const edits = distance(known.toLowerCase(), label.toLowerCase())
    if (edits <= Math.min(2, known.length - 1) && (nearest === undefined || edits < nearest.edits)) {
      nearest = { known, edits }
    }
  }
  return nearest?.known
}

/** Checks labels and encodes values by their field's Schema; from untyped input too. */
const encodeUpdate = (microapp: AnyMicroapp) => {
  const encoders = mapFields(microapp.fields, (field) => Schema.encodeUnknown(Schema.NullOr(field.schema)))
  return (rowData: unknown): Effect.Effect<Record<string, unknown>, InvalidInput> =>
    Effect.gen(function*() {
      if (!Predicate.isRecord(rowData)) {
        return yield* invalid(updatePath, "rowData", "must be an object of values by label")
      }
      // entries, not assignments: a label "__proto__" stays a key, for the client to refuse
      const encoded: Array<readonly [string, unknown]> = []
      for (const [label, value] of Object.entries(rowData)) {
        const encode = Object.hasOwn(encoders, label) ? encoders[label] : undefined
        if (encode === undefined) {
          const near = nearestLabel(Object.keys(microapp.fields), label)
          return yield* invalid(
            updatePath,
            `rowData.${label}`,
            `"${label}" is not a field of ${microapp.name}${
              near === undefined ? "" : ` (labels are case sensitive; did you mean "${near}"?)`
            }: the server would ignore it`
          )
        }
        encoded.push([
          label,
          yield* Effect.mapError(encode(value), (error) => {
            const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
            return invalid(updatePath, `rowData.${label}`, issue?.message ?? error.message)
          })
        ])
      }
      return Object.fromEntries(encoded)
    })
}

export const bind = <Fields extends Record<string, AnyField>, SortLabel extends keyof Fields & string>(
  microapp: Microapp<Fields, SortLabel>,
  client: MicroappClient.Service,
  options: { readonly invalidRows?: "fail" | "skip" | "raw" | undefined } | undefined
): Bound<Microapp<Fields, SortLabel>, RowOf<Microapp<Fields, SortLabel>> | Row.InvalidRow> => {
  type M = Microapp<Fields, SortLabel>
  const reader = options?.invalidRows === "raw"
    ? client.withSchema(microapp.schema, { invalidRows: "raw" })
    : client.withSchema(microapp.schema, { invalidRows: options?.invalidRows })
  const selected = <O extends Selection<M>>(options: O | undefined) =>
    Effect.map(toSelection(microapp, options ?? {}, endpoints.rows.path), (selection) => ({ ...options, ...selection }))
  const encode = encodeUpdate(microapp)
  const prepare = (update: UpdateOptions<M>): Effect.Effect<MicroappClient.UpdateOptions, InvalidInput> =>
    Effect.map(encode(update.rowData), (rowData) => ({ ...update, rowData }))
  const runUpdates = makeUpdateRows({
    endpoint: endpoints.update,
    updateRow: client.updateRow,
    getRow: client.getRow
  })
  return {
    definition: microapp,
    rows: (options) => Stream.unwrap(Effect.map(selected(options), reader.rows)),
    scan: (options) => Effect.flatMap(selected(options), reader.scan),
    collect: (options) =>
      Effect.flatMap(selected(options), (selection) => reader.collect({ ...selection, max: options.max })),
    query: (options) => Effect.flatMap(selected(options), reader.query),
    getRow: reader.getRow,
    changes: (options) =>
      Effect.flatMap(selected(options), (selection) => reader.changes({ ...options, ...selection })),
    updateRow: (options) => Effect.flatMap(prepare(options), client.updateRow),
    updateRows: (updates, options = {}) => runUpdates(updates, options, prepare)
  }
}
