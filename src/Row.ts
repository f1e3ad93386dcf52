/**
 * Schemas of what the service returns: row metadata, cross-application and location values,
 * rows, and the response envelopes.
 *
 * @since 0.1.0
 */
import { Data, type DateTime, Option, ParseResult, Schema } from "effect"
import * as internal from "./internal/row.js"
import type { UnexpectedResponse } from "./MicroappError.js"

/**
 * The client-side submission time as the service writes it: `2021-03-01 (15:34:49) +1100`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ClientSubmittedString = Schema.String.pipe(
  Schema.pattern(internal.clientSubmittedPattern, {
    identifier: "ClientSubmittedString",
    message: () => "expected YYYY-MM-DD (HH:mm:ss) +hhmm"
  })
)

/**
 * `clientSubmitted` decoded to a zoned `DateTime` that keeps the client's UTC offset; encodes back
 * to the service's format.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ClientSubmitted = Schema.transformOrFail(ClientSubmittedString, Schema.DateTimeZonedFromSelf, {
  strict: true,
  decode: (text, _, ast) =>
    Option.match(internal.parseClientSubmitted(text), {
      onNone: () => ParseResult.fail(new ParseResult.Type(ast, text, "not a valid date and time")),
      onSome: ParseResult.succeed
    }),
  encode: (dateTime) => ParseResult.succeed(internal.formatClientSubmitted(dateTime))
})

/**
 * Formats a zoned time the way the service writes `clientSubmitted`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatClientSubmitted: (dateTime: DateTime.Zoned) => string = internal.formatClientSubmitted

/**
 * A displayed field value: its label and its value.
 *
 * @since 0.1.0
 * @category schemas
 */
export const LabelledValue = Schema.Struct({ label: Schema.String, value: Schema.String })

/**
 * @since 0.1.0
 * @category models
 */
export type LabelledValue = typeof LabelledValue.Type

/**
 * The value of a cross-application field: a reference to a row of another Microapp, with the
 * displayed target field and further target fields by fieldID.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CrossAppValue = Schema.Struct({
  crossAppRowID: Schema.String,
  value: LabelledValue,
  additionalValues: Schema.optional(Schema.Record({ key: Schema.String, value: LabelledValue }))
})

/**
 * @since 0.1.0
 * @category models
 */
export type CrossAppValue = typeof CrossAppValue.Type

/**
 * The point of a location: `[longitude, latitude]`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Geometry = Schema.Struct({
  type: Schema.Literal("point"),
  coordinates: Schema.Tuple(Schema.Number, Schema.Number)
})

/**
 * The address of a location field value.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Address = Schema.Struct({
  country: Schema.String,
  formattedAddress: Schema.String,
  geometry: Geometry,
  addressLastLine: Schema.String,
  addressNumber: Schema.String,
  areaName1: Schema.String,
  areaName2: Schema.String,
  areaName3: Schema.String,
  areaName4: Schema.String,
  mainAddressLine: Schema.String,
  placeName: Schema.String,
  postCode: Schema.String,
  postCodeExt: Schema.String,
  streetName: Schema.String,
  unitType: Schema.String,
  unitValue: Schema.String
})

/**
 * @since 0.1.0
 * @category models
 */
export type Address = typeof Address.Type

/**
 * The value of a location field.
 *
 * @since 0.1.0
 * @category schemas
 */
export const LocationValue = Schema.Struct({ address: Address })

/**
 * @since 0.1.0
 * @category models
 */
export type LocationValue = typeof LocationValue.Type

/**
 * The metadata keys of a row. Only `_id` is required: the list of keys is open and a server
 * that leaves one out should not make every read fail; those present must have the seed's types.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RowMetadata = Schema.Struct({
  _id: Schema.NonEmptyString,
  userID: Schema.optional(Schema.String),
  viewers: Schema.optional(Schema.Array(Schema.Unknown)),
  isLocked: Schema.optional(Schema.Boolean),
  submitted: Schema.optional(Schema.Number),
  deviceID: Schema.optional(Schema.NullOr(Schema.String)),
  appVersion: Schema.optional(Schema.NullOr(Schema.String)),
  hasConflict: Schema.optional(Schema.Boolean),
  clientCounter: Schema.optional(Schema.NullOr(Schema.Number)),
  clientSubmitted: Schema.optional(ClientSubmittedString),
  embeddingRowID: Schema.optional(Schema.NullOr(Schema.String))
})

/**
 * @since 0.1.0
 * @category models
 */
export type RowMetadata = typeof RowMetadata.Type

/**
 * A row: its metadata plus one key per field label, and any other key the server sends, kept.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Row = Schema.Struct(RowMetadata.fields, Schema.Record({ key: Schema.String, value: Schema.Unknown }))

/**
 * @since 0.1.0
 * @category models
 */
export type Row = typeof Row.Type

/**
 * A row that failed its Schema, handed on undecoded when the caller asked for invalid rows to be
 * passed through (`invalidRows: "raw"`).
 *
 * @since 0.1.0
 * @category models
 */
export class InvalidRow extends Data.TaggedClass("InvalidRow")<{
  readonly row: unknown
  readonly error: UnexpectedResponse
}> {}
