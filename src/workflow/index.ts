/**
 * `effect-microapp/workflow`: mirrors of many Microapps as durable workflows on `@effect/cluster`,
 * on a schedule.
 *
 * @since 0.2.0
 */
export * as MicroappMirror from "./MicroappMirror.js"

/**
 * @since 0.2.0
 */
export * as MirrorCron from "./MirrorCron.js"
