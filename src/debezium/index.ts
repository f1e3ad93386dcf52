/**
 * `effect-microapp/debezium`: Debezium's change events built from `Changes.Change`s, with or
 * without Kafka Connect's schemas.
 *
 * @since 0.2.0
 */
export * as Debezium from "./Debezium.js"
