/**
 * Typed Microapps: describe a Microapp once (its fields by label, with fieldID and value Schema,
 * and its sort fields) and read, filter, sort and update it with types checked at compile time and
 * input checked before anything is sent.
 *
 * The service names fields by label in rows and updates, by fieldID in filters and by number in
 * sort, and silently ignores an unknown label in an update. A definition maps one to the other, so
 * a misspelt label is a type error, and from untyped input an `InvalidInput`, never a lost write.
 *
 * @since 0.1.0
 */
import { DateTime, Effect, Option, ParseResult, Schema, type Stream } from "effect"
import type * as BulkUpdate from "./BulkUpdate.js"
import type * as Changes from "./Changes.js"
import * as internal from "./internal/microapp.js"
import { MicroappClient } from "./MicroappClient.js"
import type { CollectError, GetRowError, InvalidInput, QueryError, ScanError, UpdateRowError } from "./MicroappError.js"
import * as Row from "./Row.js"
import type * as RowStream from "./RowStream.js"

/**
 * The kinds of field the ready-made constructors describe.
 *
 * @since 0.1.0
 * @category models
 */
export type FieldKind = "text" | "number" | "integer" | "boolean" | "date" | "crossApp" | "location" | "list"

/**
 * One field of a Microapp: its fieldID, its kind and the Schema of its value. Optional fields
 * (the default) may be absent or `null` in a row and decode to `undefined`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Field<S extends Schema.Schema.AnyNoContext, IsRequired extends boolean = false> {
  readonly fieldID: string
  readonly kind: FieldKind
  readonly schema: S
  readonly required: IsRequired
  /** For a cross-application field: the Microapp it points into, when known. */
  readonly target?: string | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export type AnyField = Field<Schema.Schema.AnyNoContext, boolean>

const field = <S extends Schema.Schema.AnyNoContext>(
  kind: FieldKind,
  fieldID: string,
  schema: S,
  target?: string
): Field<S> => ({ fieldID, kind, schema, required: false, ...(target === undefined ? {} : { target }) })

/**
 * Makes a field required: every row has a value, and decoding fails without one.
 *
 * @since 0.1.0
 * @category fields
 */
export const required = <S extends Schema.Schema.AnyNoContext>(optional: Field<S, boolean>): Field<S, true> => ({
  ...optional,
  required: true
})

/**
 * A calendar date written `YYYY-MM-DD`, as a `DateTime.Utc` at midnight.
 *
 * @since 0.1.0
 * @category schemas
 */
export const DateFromString = Schema.transformOrFail(
  Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}$/, { message: () => "expected YYYY-MM-DD" })),
  Schema.DateTimeUtcFromSelf,
  {
    strict: true,
    decode: (text, _, ast) =>
      Option.match(
        Option.filter(DateTime.make(`${text}T00:00:00Z`), (date) => DateTime.formatIso(date).startsWith(text)),
        {
          onNone: () => ParseResult.fail(new ParseResult.Type(ast, text, "not a calendar date")),
          onSome: (date) => ParseResult.succeed(DateTime.toUtc(date))
        }
      ),
    encode: (date) => ParseResult.succeed(DateTime.formatIso(date).slice(0, 10))
  }
)

/**
 * @since 0.1.0
 * @category fields
 */
export const text = (fieldID: string) => field("text", fieldID, Schema.String)

/**
 * A text field with a fixed set of values (a choice list).
 *
 * @since 0.1.0
 * @category fields
 */
export const choice = <const Values extends ReadonlyArray<string>>(fieldID: string, values: Values) =>
  field("text", fieldID, Schema.Literal(...values))

/**
 * @since 0.1.0
 * @category fields
 */
export const number = (fieldID: string) => field("number", fieldID, Schema.Number)

/**
 * @since 0.1.0
 * @category fields
 */
export const integer = (fieldID: string) => field("integer", fieldID, Schema.Int)

/**
 * @since 0.1.0
 * @category fields
 */
export const boolean = (fieldID: string) => field("boolean", fieldID, Schema.Boolean)

/**
 * A date field (`YYYY-MM-DD` on the wire), as a `DateTime.Utc`.
 *
 * @since 0.1.0
 * @category fields
 */
export const date = (fieldID: string) => field("date", fieldID, DateFromString)

/**
 * A cross-application field: a reference to a row of `target` (a Microapp definition or id).
 * `null` in an update clears it.
 *
 * @since 0.1.0
 * @category fields
 */
export const crossApp = (fieldID: string, target?: string | { readonly microAppID: string }) =>
  field("crossApp", fieldID, Row.CrossAppValue, typeof target === "object" ? target.microAppID : target)

/**
 * @since 0.1.0
 * @category fields
 */
export const location = (fieldID: string) => field("location", fieldID, Row.LocationValue)

/**
 * A field holding a list of values of `item`.
 *
 * @since 0.1.0
 * @category fields
 */
export const list = <A, I>(fieldID: string, item: Schema.Schema<A, I>) => field("list", fieldID, Schema.Array(item))

/**
 * A field of any other kind, with a Schema of your own.
 *
 * @since 0.1.0
 * @category fields
 */
export const custom = <S extends Schema.Schema.AnyNoContext>(fieldID: string, schema: S) =>
  field("text", fieldID, schema)

type ValueOf<F> = F extends Field<infer S, boolean> ? Schema.Schema.Type<S> : never

type RequiredLabel<Fields> = {
  readonly [Label in keyof Fields]: Fields[Label] extends Field<Schema.Schema.AnyNoContext, true> ? Label : never
}[keyof Fields]

/**
 * A decoded row: metadata, the required fields, the optional ones (`undefined` when absent or
 * null), and any other key the server sends.
 *
 * @since 0.1.0
 * @category models
 */
export type RowType<Fields> =
  & Row.RowMetadata
  & { readonly [Label in RequiredLabel<Fields>]: ValueOf<Fields[Label]> }
  & { readonly [Label in Exclude<keyof Fields, RequiredLabel<Fields>>]?: ValueOf<Fields[Label]> | undefined }
  & { readonly [key: string]: unknown }

/**
 * What every Microapp definition has, whatever its fields.
 *
 * @since 0.1.0
 * @category models
 */
export interface AnyMicroapp {
  readonly microAppID: string
  readonly name: string
  /** The fields by label (case sensitive, as in the editor). */
  readonly fields: Readonly<Record<string, AnyField>>
  /** The sort fields configured in the Results Tab, by label: the first is sort field 1. */
  readonly sortFields: ReadonlyArray<string>
}

/**
 * A Microapp definition.
 *
 * @since 0.1.0
 * @category models
 */
export interface Microapp<Fields extends Record<string, AnyField>, SortLabel extends keyof Fields & string>
  extends AnyMicroapp
{
  readonly fields: Fields
  readonly sortFields: ReadonlyArray<SortLabel>
  /** Decodes a row of this Microapp. */
  readonly schema: Schema.Schema<RowType<Fields>, Readonly<Record<string, unknown>>>
}

/**
 * The decoded row of a Microapp: `Microapp.RowOf<typeof Projects>`.
 *
 * @since 0.1.0
 * @category models
 */
export type RowOf<M extends AnyMicroapp> = RowType<M["fields"]>

/**
 * The labels of a Microapp's fields.
 *
 * @since 0.1.0
 * @category models
 */
export type LabelOf<M extends AnyMicroapp> = keyof M["fields"] & string

/**
 * New values by label for `updateRow`: only known labels, each with a value of its field's type;
 * `null` clears a field.
 *
 * @since 0.1.0
 * @category models
 */
export type UpdateOf<M extends AnyMicroapp> = {
  readonly [Label in LabelOf<M>]?: Schema.Schema.Type<M["fields"][Label]["schema"]> | null
}

/**
 * Equality filters by label (sent as fieldIDs); several must all match.
 *
 * @since 0.1.0
 * @category models
 */
export type FiltersOf<M extends AnyMicroapp> = { readonly [Label in LabelOf<M>]?: string | number | boolean }

/**
 * A sort key by the label of a configured sort field (sent as its number).
 *
 * @since 0.1.0
 * @category models
 */
export interface SortOf<M extends AnyMicroapp> {
  readonly field: M["sortFields"][number]
  readonly order?: "asc" | "desc" | undefined
}

/**
 * Describes a Microapp.
 *
 * @example
 * ```ts
 * import { Microapp } from "effect-microapp"
 *
 * export const Projects = Microapp.make({
 *   microAppID: "64b7c0f1a2d3e4f5a6b7c8da",
 *   name: "Projects",
 *   fields: {
 *     Name: Microapp.required(Microapp.text("f_name")),
 *     Budget: Microapp.number("f_budget"),
 *     Owner: Microapp.crossApp("f_owner")
 *   },
 *   sortFields: ["Name", "Budget"]
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <
  const Fields extends Record<string, AnyField>,
  const SortLabel extends keyof Fields & string = never
>(definition: {
  readonly microAppID: string
  readonly name?: string | undefined
  readonly fields: Fields
  readonly sortFields?: ReadonlyArray<SortLabel> | undefined
}): Microapp<Fields, SortLabel> => {
  return {
    microAppID: definition.microAppID,
    name: definition.name ?? definition.microAppID,
    fields: definition.fields,
    sortFields: definition.sortFields ?? [],
    schema: internal.rowSchema(definition.fields)
  }
}

/**
 * The fields of a definition as a list of label, fieldID and kind (the shape the emulator takes).
 *
 * @since 0.1.0
 * @category accessors
 */
export const fieldList = (microapp: AnyMicroapp): ReadonlyArray<{
  readonly label: string
  readonly fieldID: string
  readonly kind: FieldKind
}> => Object.entries(microapp.fields).map(([label, field]) => ({ label, fieldID: field.fieldID, kind: field.kind }))

/**
 * A cross-application value pointing at `rowID`, shown as `label: value`, for an update.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reference = (rowID: string, shown: Row.LabelledValue): Row.CrossAppValue => ({
  crossAppRowID: rowID,
  value: shown
})

/**
 * The id of the row a cross-application value points at.
 *
 * @since 0.1.0
 * @category accessors
 */
export const targetRowID = (value: Row.CrossAppValue): string => value.crossAppRowID

/**
 * The value a cross-application field shows (the target field's value).
 *
 * @since 0.1.0
 * @category accessors
 */
export const displayValue = (value: Row.CrossAppValue): string => value.value.value

/**
 * A location's point.
 *
 * @since 0.1.0
 * @category accessors
 */
export const coordinates = (
  location: Row.LocationValue
): { readonly longitude: number; readonly latitude: number } => ({
  longitude: location.address.geometry.coordinates[0],
  latitude: location.address.geometry.coordinates[1]
})

const decodeClientSubmitted = Schema.decodeUnknownOption(Row.ClientSubmitted)

/**
 * When the client submitted the row, with the client's UTC offset; `None` when the row has no
 * valid `clientSubmitted`.
 *
 * @since 0.1.0
 * @category accessors
 */
export const clientSubmittedAt = (
  row: { readonly clientSubmitted?: string | undefined }
): Option.Option<DateTime.Zoned> => decodeClientSubmitted(row.clientSubmitted)

/**
 * Reading and updating one Microapp through its definition.
 *
 * @since 0.1.0
 * @category models
 */
export interface Bound<M extends AnyMicroapp, A> {
  readonly definition: M
  readonly rows: (options?: RowsOptions<M>) => Stream.Stream<A, ScanError>
  readonly scan: (options?: RowsOptions<M>) => Effect.Effect<RowStream.Scan<A>, InvalidInput>
  readonly collect: (
    options: RowsOptions<M> & { readonly max: number }
  ) => Effect.Effect<ReadonlyArray<A>, CollectError>
  readonly query: (options?: QueryOptions<M>) => Effect.Effect<ReadonlyArray<A>, QueryError>
  readonly getRow: (rowID: string, options?: MicroappClient.CallOptions) => Effect.Effect<A, GetRowError>
  /** `MicroappClient.changes` with filters and sort by label: typed rows, fingerprinted as the server sent them. */
  readonly changes: <E = never, R = never>(
    options: ChangesOptions<M, E, R>
  ) => Effect.Effect<Changes.Pass<A, E, R>, InvalidInput>
  readonly updateRow: (options: UpdateOptions<M>) => Effect.Effect<void, UpdateRowError>
  /** `MicroappClient.updateRows` with labels and values checked (and encoded) as by `updateRow`. */
  readonly updateRows: <E, R>(
    updates: Stream.Stream<UpdateOptions<M> | InvalidInput, E, R>,
    options?: BulkUpdate.Options
  ) => Stream.Stream<BulkUpdate.Outcome, E | InvalidInput, R>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Selection<M extends AnyMicroapp> {
  readonly filters?: FiltersOf<M> | undefined
  readonly sort?: SortOf<M> | ReadonlyArray<SortOf<M>> | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface RowsOptions<M extends AnyMicroapp>
  extends Selection<M>, RowStream.ScanOptions, MicroappClient.CallOptions
{}

/**
 * @since 0.2.0
 * @category models
 */
export interface ChangesOptions<M extends AnyMicroapp, E, R>
  extends Omit<RowsOptions<M>, keyof Changes.PassOptions<E, R>>, Changes.PassOptions<E, R>
{}

/**
 * @since 0.1.0
 * @category models
 */
export interface QueryOptions<M extends AnyMicroapp> extends Selection<M>, MicroappClient.CallOptions {
  readonly skip?: number | undefined
  readonly limit?: number | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface UpdateOptions<M extends AnyMicroapp> extends Omit<MicroappClient.UpdateOptions, "rowData"> {
  readonly rowData: UpdateOf<M>
}

/**
 * Reads and updates `microapp` through the client in context. Rows decode to the definition's
 * shape; a row that does not fit is an `UnexpectedResponse` (default), skipped and counted
 * (`invalidRows: "skip"`), or handed on as an `InvalidRow` (`invalidRows: "raw"`).
 *
 * @since 0.1.0
 * @category constructors
 */
export function bind<Fields extends Record<string, AnyField>, SortLabel extends keyof Fields & string>(
  microapp: Microapp<Fields, SortLabel>,
  options: { readonly invalidRows: "raw" }
): Effect.Effect<
  Bound<Microapp<Fields, SortLabel>, RowOf<Microapp<Fields, SortLabel>> | Row.InvalidRow>,
  never,
  MicroappClient
>
export function bind<Fields extends Record<string, AnyField>, SortLabel extends keyof Fields & string>(
  microapp: Microapp<Fields, SortLabel>,
  options?: { readonly invalidRows?: "fail" | "skip" | undefined }
): Effect.Effect<Bound<Microapp<Fields, SortLabel>, RowOf<Microapp<Fields, SortLabel>>>, never, MicroappClient>
export function bind<Fields extends Record<string, AnyField>, SortLabel extends keyof Fields & string>(
  microapp: Microapp<Fields, SortLabel>,
  options?: { readonly invalidRows?: "fail" | "skip" | "raw" | undefined }
): Effect.Effect<
  Bound<Microapp<Fields, SortLabel>, RowOf<Microapp<Fields, SortLabel>> | Row.InvalidRow>,
  never,
  MicroappClient
> {
  return Effect.map(MicroappClient, (client) => internal.bind(microapp, client, options))
}
