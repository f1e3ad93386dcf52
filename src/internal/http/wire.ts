/**
 * The service's wire format: the envelopes its answers come in, and the body of a rows request
 * built from a checked selection.
 */
import { Schema } from "effect"
import type { Filter, Selection, Sort } from "../../Query.js"

/**
 * The envelope every answer of the service comes in. Anything but "success" is a refusal.
 */
export const StatusEnvelope = Schema.Struct({
  status: Schema.String,
  message: Schema.optional(Schema.Unknown)
})

/**
 * `POST /api/microappdata`: the rows, still undecoded, so each row is decoded (and reported)
 * on its own.
 */
export const RowsBody = Schema.Struct({
  body: Schema.Struct({ microAppRows: Schema.Array(Schema.Unknown) })
})

/**
 * `POST /api/microappdata/row`: the row is `currentRow`; a missing or null one means no such row.
 */
export const CurrentRowBody = Schema.Struct({
  body: Schema.optional(Schema.NullOr(Schema.Struct({ currentRow: Schema.optional(Schema.NullOr(Schema.Unknown)) })))
})

/**
 * `POST /api/login`: the token and user id, under `data` as documented or at the top level as
 * the service's own client reads them.
 */
export const LoginBody = Schema.Union(
  Schema.Struct({ data: Schema.Struct({ authToken: Schema.NonEmptyString, userId: Schema.NonEmptyString }) }),
  Schema.Struct({ authToken: Schema.NonEmptyString, userId: Schema.NonEmptyString })
)

/**
 * A checked selection, ready to be paged.
 */
export interface CheckedSelection {
  readonly microAppID: string
  readonly filters: ReadonlyArray<Filter>
  readonly sort: ReadonlyArray<{ readonly field: number; readonly order: "asc" | "desc" }>
}

/**
 * Normalises a decoded selection: sort as a list with explicit order.
 */
export const checkSelection = (selection: typeof Selection.Type): CheckedSelection => ({
  microAppID: selection.microAppID,
  filters: selection.filters ?? [],
  sort: (selection.sort === undefined ? [] : Array.isArray(selection.sort) ? selection.sort : [selection.sort]).map(
    (key: typeof Sort.Type) => ({ field: key.field, order: key.order ?? "asc" })
  )
})

/**
 * The wire body of `POST /api/microappdata` for one window. `skip` goes as a numeric string,
 * as the service's specification shows; `limit` is always explicit so the server's silent
 * default row cap never applies.
 */
export const toRequestBody = (
  selection: CheckedSelection,
  window: { readonly skip: number; readonly limit: number },
  serviceFormat = false
) => {
  const resourceID = selection.microAppID
  const [first, ...rest] = selection.sort
  const paging = {
    resourceID,
    ...(first === undefined ? {} : { field: String(first.field), order: first.order === "asc" ? 1 : -1 }),
    skip: String(window.skip),
    limit: window.limit
  }
  return {
    microAppID: resourceID,
    ...(selection.filters.length === 0 ? {} : {
      optSearchFilters: selection.filters.map((filter) => ({
        resourceID,
        fieldID: filter.fieldID,
        value: String(filter.value)
      }))
    }),
    searchFilter: [
      paging,
      ...rest.map((key) => ({ resourceID, field: String(key.field), order: key.order === "asc" ? 1 : -1 }))
    ],
    ...(serviceFormat ? { serviceFormat: true } : {})
  }
}
