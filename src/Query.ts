/**
 * Filters, sort and paging of a read, checked and turned into the wire body of
 * `POST /api/microappdata`.
 *
 * @since 0.1.0
 */
import { Effect, ParseResult, Schema } from "effect"
import { bounds, wholeNumberIn } from "./internal/bounds.js"
import { InvalidInput } from "./MicroappError.js"

/**
 * A non-blank identifier (microAppID, rowID, fieldID).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Identifier = Schema.String.pipe(
  Schema.filter((s) => s.trim().length > 0, { message: () => "must be a non-empty string" })
)

/**
 * A whole number >= 0.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Skip = Schema.Number.pipe(
  Schema.filter((n) => Number.isSafeInteger(n) && n >= 0, { message: () => "must be a whole number >= 0" })
)

/**
 * A whole number >= 1. Zero is refused: many servers read `limit: 0` as "no limit".
 *
 * @since 0.1.0
 * @category schemas
 */
export const Limit = Schema.Number.pipe(
  Schema.filter((n) => Number.isSafeInteger(n) && n >= 1, { message: () => "must be a whole number >= 1" })
)

/**
 * Equality on one field, named by its fieldID. Several filters must all match.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Filter = Schema.Struct({
  fieldID: Identifier,
  value: Schema.Union(Schema.String, Schema.Number, Schema.Boolean)
})

/**
 * @since 0.1.0
 * @category models
 */
export type Filter = typeof Filter.Type

/**
 * A sort field configured in the Microapp's Results Tab, by number (1 is sort field 1).
 *
 * @since 0.1.0
 * @category schemas
 */
export const SortField = Schema.Union(Schema.Number, Schema.NumberFromString).pipe(
  Schema.filter((n) => Number.isSafeInteger(n) && n >= 1, {
    message: () => "must be a sort field number >= 1 (as configured in the Results Tab)"
  })
)

/**
 * @since 0.1.0
 * @category schemas
 */
export const Sort = Schema.Struct({
  field: SortField,
  order: Schema.optional(Schema.Literal("asc", "desc"))
})

/**
 * @since 0.1.0
 * @category models
 */
export type Sort = typeof Sort.Encoded

/**
 * What to read: the Microapp, and optionally filters and one or more sort keys.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Selection = Schema.Struct({
  microAppID: Identifier,
  filters: Schema.optional(Schema.Array(Filter)),
  sort: Schema.optional(Schema.Union(Sort, Schema.Array(Sort)))
})

/**
 * @since 0.1.0
 * @category models
 */
export type Selection = typeof Selection.Encoded

/**
 * One request's worth: a selection and a window.
 *
 * @since 0.1.0
 * @category schemas
 */
export const QueryOptions = Schema.Struct({
  ...Selection.fields,
  skip: Schema.optional(Skip),
  /** One page: at most 10,000 rows. */
  limit: Schema.optional(wholeNumberIn(1, bounds.pageSize))
})

/**
 * @since 0.1.0
 * @category models
 */
export type QueryOptions = typeof QueryOptions.Encoded

/**
 * A checked selection, ready to be paged.
 *
 * @since 0.1.0
 * @category models
 */
export interface CheckedSelection {
  readonly microAppID: string
  readonly filters: ReadonlyArray<Filter>
  readonly sort: ReadonlyArray<{ readonly field: number; readonly order: "asc" | "desc" }>
}

/**
 * Turns a Schema failure on input into `InvalidInput` naming the offending option.
 *
 * @since 0.1.0
 * @category validation
 */
export const validate = <A, I>(
  schema: Schema.Schema<A, I>,
  endpoint: { readonly path: string },
  /** What to call the input when the whole of it is at fault. */
  name = "options"
) => {
  const decode = Schema.decodeUnknown(schema, { errors: "first", onExcessProperty: "ignore" })
  return (input: unknown): Effect.Effect<A, InvalidInput> =>
    Effect.mapError(decode(input), (error) => {
      const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
      return new InvalidInput({
        method: "POST",
        path: endpoint.path,
        input: issue === undefined || issue.path.length === 0 ? name : issue.path.join("."),
        reason: issue?.message ?? error.message
      })
    })
}

/**
 * Normalises a decoded selection: sort as a list with explicit order.
 *
 * @since 0.1.0
 * @category validation
 */
export const checked = (selection: typeof Selection.Type): CheckedSelection => ({
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
 *
 * @since 0.1.0
 * @category wire
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
