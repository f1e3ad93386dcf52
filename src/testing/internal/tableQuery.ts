/**
 * What `/api/microappdata` does with a table: filter, sort, skip, take.
 */
import { Either } from "effect"
import type { FieldDefinition, Row } from "./table.js"
import { isCrossAppValue, isLocationValue } from "./table.js"

export interface Filter {
  readonly resourceID?: string | undefined
  readonly fieldID: string
  readonly value: string | number | boolean
}

export interface SortPaging {
  readonly resourceID?: string | undefined
  /** Sort field number (1-based). */
  readonly field?: number | undefined
  readonly order?: 1 | -1 | undefined
  readonly skip?: number | undefined
  readonly limit?: number | undefined
}

export interface Query {
  readonly microAppID: string
  readonly filters: ReadonlyArray<Filter>
  readonly sortPaging: ReadonlyArray<SortPaging>
}

export interface Limits {
  /** Rows returned when the request sends no limit. */
  readonly defaultLimit: number
  /** Silent clamp of every page, when set. */
  readonly maxLimit: number | undefined
}

export interface QueryTable {
  readonly fields: ReadonlyArray<FieldDefinition>
  readonly sortFields: ReadonlyArray<string>
}

// A value matches a filter through any of its string forms ("5" matches 5, a cross-app value its id or label).
const stringForms = (value: unknown): ReadonlyArray<string> => {
  if (typeof value === "string") return [value]
  if (typeof value === "number" || typeof value === "boolean") return [String(value)]
  if (Array.isArray(value)) return value.flatMap((item: unknown) => stringForms(item))
  if (isCrossAppValue(value)) return [value.crossAppRowID, ...stringForms(value.value.value)]
  if (isLocationValue(value)) return [value.address.formattedAddress]
  return []
}

interface SortKey {
  readonly rank: number
  readonly number: number
  readonly string: string
}

// Type ranks follow the document-store order: null < numbers < strings < objects < arrays < booleans.
const sortKey = (value: unknown): SortKey => {
  if (value === null || value === undefined) return { rank: 0, number: 0, string: "" }
  if (typeof value === "number") return { rank: 1, number: value, string: "" }
  if (typeof value === "string") return { rank: 2, number: 0, string: value }
  if (isCrossAppValue(value)) return { rank: 2, number: 0, string: String(value.value.value) }
  if (typeof value === "boolean") return { rank: 5, number: value ? 1 : 0, string: "" }
  if (Array.isArray(value)) return { rank: 4, number: 0, string: JSON.stringify(value) }
  if (isLocationValue(value)) return { rank: 3, number: 0, string: value.address.formattedAddress }
  return { rank: 3, number: 0, string: JSON.stringify(value) }
}

const compareKeys = (a: SortKey, b: SortKey): number => {
  if (a.rank !== b.rank) return a.rank - b.rank
  if (a.number !== b.number) return a.number < b.number ? -1 : 1
  if (a.string !== b.string) return a.string < b.string ? -1 : 1
  return 0
}

interface ResolvedSort {
  readonly label: string
  readonly direction: 1 | -1
}

const checkResource = (query: Query, resourceID: string | undefined, what: string): Either.Either<void, string> =>
  resourceID === undefined || resourceID === query.microAppID
    ? Either.right(undefined)
    : Either.left(`${what}: resourceID ${JSON.stringify(resourceID)} does not match microAppID`)

const resolveFilters = (
  table: QueryTable,
  query: Query
): Either.Either<ReadonlyArray<readonly [string, string]>, string> =>
  Either.all(
    query.filters.map((filter) =>
      Either.flatMap(checkResource(query, filter.resourceID, "optSearchFilters"), () => {
        const field = table.fields.find((candidate) => candidate.fieldID === filter.fieldID)
        return field === undefined
          ? Either.left(`optSearchFilters: unknown fieldID ${JSON.stringify(filter.fieldID)}`)
          : Either.right([field.label, String(filter.value)] as const)
      })
    )
  )

const resolveSorts = (table: QueryTable, query: Query): Either.Either<ReadonlyArray<ResolvedSort>, string> =>
  Either.all(
    query.sortPaging.map((element) =>
      Either.flatMap(checkResource(query, element.resourceID, "searchFilter"), () => {
        if (element.field === undefined) return Either.right<ReadonlyArray<ResolvedSort>>([])
        const label = table.sortFields[element.field - 1]
        return label === undefined
          ? Either.left(`searchFilter: sort field ${element.field} is not configured`)
          : Either.right<ReadonlyArray<ResolvedSort>>([{ label, direction: element.order ?? 1 }])
      })
    )
  ).pipe(Either.map((sorts) => firstOfEachLabel(sorts.flat())))

// A label sorted on again can only compare rows that tie on it already: only its first use counts.
const firstOfEachLabel = (sorts: ReadonlyArray<ResolvedSort>): ReadonlyArray<ResolvedSort> => {
  const seen = new Set<string>()
  return sorts.filter((sort) => !seen.has(sort.label) && seen.add(sort.label))
}

// Each label's forms are computed once a row, however many filters name it.
const valuesByLabel = (
  filters: ReadonlyArray<readonly [string, string]>
): ReadonlyArray<readonly [string, ReadonlyArray<string>]> => {
  const byLabel = new Map<string, Set<string>>()
  for (const [label, value] of filters) byLabel.set(label, (byLabel.get(label) ?? new Set<string>()).add(value))
  return Array.from(byLabel, ([label, values]) => [label, Array.from(values)] as const)
}

const lastDefined = <A>(values: ReadonlyArray<A | undefined>): A | undefined =>
  values.reduce<A | undefined>((found, value) => value ?? found, undefined)

const sortRows = (rows: ReadonlyArray<Row>, sorts: ReadonlyArray<ResolvedSort>): ReadonlyArray<Row> => {
  if (sorts.length === 0) return rows
  const keyed = rows.map((row) => ({ row, keys: sorts.map((sort) => sortKey(row[sort.label])) }))
  // Array.prototype.sort is stable, so ties keep their natural order.
  keyed.sort((a, b) => {
    for (let i = 0; i < sorts.length; i++) {
      const ka = a.keys[i]
      const kb = b.keys[i]
      const sort = sorts[i]
      if (ka === undefined || kb === undefined || sort === undefined) continue
      const order = compareKeys(ka, kb)
      if (order !== 0) return order * sort.direction
    }
    return 0
  })
  return keyed.map((entry) => entry.row)
}

/**
 * The rows a request selects, in its order, before paging: filter (AND), then sort by the
 * configured sort fields. The left side is the message of a 400 answer.
 */
export const selectRows = (
  table: QueryTable,
  rows: ReadonlyArray<Row>,
  query: Query
): Either.Either<ReadonlyArray<Row>, string> =>
  Either.gen(function*() {
    const filters = yield* resolveFilters(table, query)
    const sorts = yield* resolveSorts(table, query)
    const wanted = valuesByLabel(filters)
    const matching = wanted.length === 0
      ? rows
      : rows.filter((row) =>
        wanted.every(([label, values]) => {
          const forms = stringForms(row[label])
          return values.every((value) => forms.includes(value))
        })
      )
    return sortRows(matching, sorts)
  })

/**
 * What decides a request's selection (`selectRows`) of a table as it stands: its filters and
 * its sort fields, not its paging.
 */
export const selectionKey = (query: Query): string =>
  JSON.stringify([
    query.filters.map((filter) => [filter.resourceID, filter.fieldID, filter.value]),
    query.sortPaging.map((element) => [element.resourceID, element.field, element.order])
  ])

/**
 * One page of selected rows: skip, then take the requested limit, the default limit when none
 * was sent, never more than `maxLimit`.
 */
export const pageOf = (selected: ReadonlyArray<Row>, query: Query, limits: Limits): ReadonlyArray<Row> => {
  const skip = lastDefined(query.sortPaging.map((element) => element.skip)) ?? 0
  const limit = lastDefined(query.sortPaging.map((element) => element.limit)) ?? limits.defaultLimit
  const take = limits.maxLimit === undefined ? limit : Math.min(limit, limits.maxLimit)
  return selected.slice(skip, skip + take)
}
