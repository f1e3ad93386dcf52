/**
 * The local emulator of the Microapp Data Service (`effect-microapp/testing`).
 *
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export { MicroappServer } from "./MicroappServer.js"

/**
 * @since 0.1.0
 */
export * as MicroappState from "./MicroappState.js"

/**
 * @since 0.1.0
 */
export type {
  Lag,
  LoginShape,
  RequestHook,
  RequestRecord,
  Settings,
  SettingsPatch,
  Throttle,
  UpdateOutcome
} from "./MicroappState.js"

/**
 * @since 0.1.0
 */
export { makeApp } from "./App.js"

/**
 * @since 0.1.0
 */
export * from "./DemoData.js"

/**
 * @since 0.1.0
 */
export { faultKinds } from "./Fault.js"

/**
 * @since 0.2.0
 */
export { churn, type ChurnOptions, maxChurnPerSecond } from "./Churn.js"

/**
 * @since 0.2.0
 */
export { inputBounds, maxRequestBytes } from "./App.js"

/**
 * @since 0.1.0
 */
export type { FaultKind, FaultPlan, FaultPlans, InjectOptions } from "./Fault.js"

/**
 * @since 0.1.0
 */
export type { FieldDefinition, FieldKind, Row, TableDefinition } from "./Table.js"

/**
 * @since 0.1.0
 */
export { formatClientSubmitted } from "./Table.js"
