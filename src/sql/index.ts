/**
 * `effect-microapp/sql`: a mirror of a Microapp in any `@effect/sql` database.
 *
 * @since 0.2.0
 */
export * as SqlMirror from "./SqlMirror.js"
