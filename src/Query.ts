/**
 * Filters, sort and paging of a read, checked and turned into the wire body of
 * `POST /api/microappdata`.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { bounds, wholeNumberIn } from "./internal/limits.js"

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
