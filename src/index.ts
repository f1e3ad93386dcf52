/**
 * effect-microapp: an Effect client for the Microapp Data Service.
 *
 * @since 0.1.0
 */

/**
 * The client: `MicroappClient.layer`, `layerConfig`, `layerLogin`, and the service's calls.
 *
 * @since 0.1.0
 */
export * from "./MicroappClient.js"

/**
 * Checkpoints of a scan: `toJson`, `fromJson` and a Schema, to resume a scan where it stopped.
 *
 * @since 0.1.0
 */
export * as Checkpoint from "./Checkpoint.js"

/**
 * Change capture: what changed since the last pass (inserted, updated, deleted rows), with
 * checkpoints, over a baseline the caller keeps.
 *
 * @since 0.2.0
 */
export * as Changes from "./Changes.js"

/**
 * Many updates as one stream: options, outcomes and their summary.
 *
 * @since 0.1.0
 */
export * as BulkUpdate from "./BulkUpdate.js"

/**
 * Typed Microapp definitions: fields by label with fieldID and Schema, sort fields by label.
 *
 * @since 0.1.0
 */
export * as Microapp from "./Microapp.js"

/**
 * The typed errors.
 *
 * @since 0.1.0
 */
export * from "./MicroappError.js"

/**
 * Schemas of rows and of the values of cross-application and location fields.
 *
 * @since 0.1.0
 */
export * as Row from "./Row.js"

/**
 * Filters, sort and paging of a read.
 *
 * @since 0.1.0
 */
export * as Query from "./Query.js"

/**
 * The paging engine behind `rows`: its options, its defaults and its summary (the engine itself
 * is internal).
 *
 * @since 0.1.0
 */
export * as RowStream from "./RowStream.js"
