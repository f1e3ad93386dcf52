/**
 * The options of `SqlMirror.run` that are data, as one Schema over the scan options' own: what a
 * fleet's payload carries (`effect-microapp/workflow`), checked before anything is sent.
 */
import { Schema, Struct } from "effect"
import { checking, CheckpointEvery, RowsOptionsSchema } from "../../internal/bounds.js"
import type * as SqlMirror from "../SqlMirror.js"

/**
 * `SqlMirror.Options` but those that are not data: `definition` (a Microapp's Schemas: a view is
 * typed from the rows read), `timeout` and `retry` (the runner's `MicroappClient` has its own, and
 * a retry may hold a `Schedule`).
 */
export type DataOptions = Omit<SqlMirror.Options, "definition" | "timeout" | "retry">

export const DataOptions = checking<DataOptions>()(Schema.Struct({
  ...Struct.omit(RowsOptionsSchema.fields, "dedupe"),
  checkpointEvery: Schema.optional(CheckpointEvery),
  table: Schema.optional(Schema.String),
  history: Schema.optional(Schema.Boolean),
  view: Schema.optional(Schema.String),
  deletes: Schema.optional(Schema.Literal("confirmed", "exhaustive")),
  maxDeletes: Schema.optional(Schema.NonNegativeInt)
}))
