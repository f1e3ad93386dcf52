/**
 * The local emulator of the Microapp Data Service (`effect-microapp/testing`): the server, its
 * state, the demo tables, and the parts of its HTTP app a test may use on their own. Its other
 * parts are internal (`src/testing/internal/`).
 *
 * @since 0.1.0
 */

export {
  /**
   * The emulator as a layer: a server on an ephemeral port, a client pointed at it, its state.
   *
   * @since 0.1.0
   */
  MicroappServer
} from "./MicroappServer.js"

/**
 * The emulator's state: tables, sessions, request log, settings and faults.
 *
 * @since 0.1.0
 */
export * as MicroappState from "./MicroappState.js"

export type {
  /** @since 0.1.0 */
  Lag,
  /** @since 0.1.0 */
  LoginShape,
  /** @since 0.1.0 */
  RequestHook,
  /** @since 0.1.0 */
  RequestRecord,
  /** @since 0.1.0 */
  Settings,
  /** @since 0.1.0 */
  SettingsPatch,
  /** @since 0.1.0 */
  Throttle,
  /** @since 0.1.0 */
  UpdateOutcome
} from "./MicroappState.js"

/**
 * The demo tables, People and Projects: their definitions, rows and credentials.
 *
 * @since 0.1.0
 */
export * from "./DemoData.js"

export {
  /**
   * The bounds the emulator puts on what a request may send (ids, texts, filters, sort elements,
   * `rowData` keys and nesting, counts); past one the answer is a 400 that names it.
   *
   * @since 0.2.0
   */
  inputBounds,
  /**
   * The emulator's HTTP app over a state, to serve it with any HTTP server.
   *
   * @since 0.1.0
   */
  makeApp,
  /**
   * The most bytes of a request body the emulator reads; a longer body is answered 413.
   *
   * @since 0.2.0
   */
  maxRequestBytes
} from "./internal/app.js"

export {
  /**
   * Changes the rows of a Microapp (default the demo Projects) at a steady rate until
   * interrupted: inserts, updates and deletes drawn from a seeded generator on Effect's clock.
   *
   * @since 0.2.0
   */
  churn,
  /**
   * The most changes a second `churn` makes.
   *
   * @since 0.2.0
   */
  maxChurnPerSecond
} from "./internal/churn.js"

export type {
  /**
   * The options of `churn`: `microAppID`, `perSecond`, `seed`.
   *
   * @since 0.2.0
   */
  ChurnOptions
} from "./internal/churn.js"

export {
  /**
   * Every kind of fault the emulator can inject.
   *
   * @since 0.1.0
   */
  faultKinds
} from "./internal/fault.js"

export type {
  /**
   * A kind of fault: an error status (500, 503, 429, 408), a dropped connection, no answer, or
   * truncated JSON; some after the request is applied.
   *
   * @since 0.1.0
   */
  FaultKind,
  /**
   * A seeded fault plan: each matching request gets one of its `kinds` with probability `rate`,
   * drawn from `seed`; `paths` (default every path but `/api/login`), `retryAfterSeconds`
   * (default 1) and `retryAfterAsDate` (`Retry-After` as an HTTP date).
   *
   * @since 0.1.0
   */
  FaultPlan,
  /**
   * One plan, or several that each draw on their own generator.
   *
   * @since 0.1.0
   */
  FaultPlans,
  /**
   * Which requests a fault injected with `faults.inject` hits: `count` (default 1) and `path`
   * (default any but `/api/login`); and its `retryAfterSeconds` and `retryAfterAsDate`.
   *
   * @since 0.1.0
   */
  InjectOptions
} from "./internal/fault.js"

export type {
  /**
   * A field of a table: its `label`, `fieldID` and `kind` (default `"text"`).
   *
   * @since 0.1.0
   */
  FieldDefinition,
  /**
   * What a field holds; only `crossApp` changes behaviour (an update to `null` clears it).
   *
   * @since 0.1.0
   */
  FieldKind,
  /**
   * A row as the emulator holds it: a plain JSON object.
   *
   * @since 0.1.0
   */
  Row,
  /**
   * A Microapp as the emulator holds it: `microAppID`, `name`, `fields`, `sortFields` (labels;
   * the first is sort field 1) and `rows` in natural order, whose missing metadata keys the
   * emulator fills in.
   *
   * @since 0.1.0
   */
  TableDefinition
} from "./internal/table.js"
