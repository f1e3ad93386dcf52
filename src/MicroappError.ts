/**
 * The typed errors of the client. Every failure of a call is one of these, so a caller can handle
 * them by `_tag` (`Effect.catchTag("NotFound", ...)`). None of them ever holds a token or a header.
 *
 * @since 0.1.0
 */
import { Predicate, Schema } from "effect"

const identifier = "effect-microapp/MicroappError"

/**
 * Marks the errors of this library, so that an error of another library with the same `_tag` is
 * not taken for one of them.
 *
 * @since 0.1.0
 * @category type ids
 */
export const TypeId: unique symbol = Symbol.for(identifier)

/**
 * @since 0.1.0
 * @category type ids
 */
export type TypeId = typeof TypeId

/**
 * Where a failed request went and what the server said. The method and path name the endpoint
 * (`POST /api/microappdata`), never the full URL, so no base URL with credentials can leak.
 */
const RequestFields = {
  method: Schema.String,
  path: Schema.String,
  status: Schema.optional(Schema.Number),
  serverMessage: Schema.optional(Schema.String),
  attempts: Schema.optional(Schema.Number)
}

const suffix = (serverMessage: string | undefined): string =>
  serverMessage === undefined || serverMessage === "" ? "" : `: ${serverMessage}`

const retryAfter = (millis: number | undefined): string =>
  millis === undefined ? "" : ` (retry after ${Math.ceil(millis / 1000)} s)`

/**
 * The input of a call was rejected before any request was sent.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidInput extends Schema.TaggedError<InvalidInput>(`${identifier}/InvalidInput`)("InvalidInput", {
  /** The call whose input was refused (`POST` and its endpoint's path); absent for input of no call (a base URL, the client's options, a checkpoint's text). */
  method: Schema.optional(Schema.String),
  path: Schema.optional(Schema.String),
  /** The offending input, as a path into the call's options (`limit`, `filters[1].fieldID`). */
  input: Schema.String,
  reason: Schema.String
}) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `invalid ${this.input}: ${this.reason}`
  }
}

/**
 * What was wrong with a checkpoint: its text (`"not JSON"`, `"too large"`, `"too deep"`, `"not a
 * checkpoint"`, `"version"`, `"checksum"`, a `"field"` out of range or counters no scan could
 * reach), or its use (`"another query"` resumed from it, `"ids held"` by a sink and not given back,
 * `"ids differ"` from those the sink gave back).
 *
 * @since 0.2.0
 * @category models
 */
export const CheckpointProblem = Schema.Literal(
  "not JSON",
  "too large",
  "too deep",
  "not a checkpoint",
  "version",
  "checksum",
  "field",
  "another query",
  "ids held",
  "ids differ"
)

/**
 * @since 0.2.0
 * @category models
 */
export type CheckpointProblem = typeof CheckpointProblem.Type

/**
 * A checkpoint was refused: its text by `fromJson`, or by `withIds` or a scan's `resume`. Nothing
 * was sent, so it names no call. An `InvalidInput` (same `_tag`, caught as one); `problem` (or
 * `instanceof InvalidCheckpoint`) tells it apart from a call's argument refused.
 *
 * @since 0.2.0
 * @category errors
 */
export class InvalidCheckpoint extends InvalidInput.extend<InvalidCheckpoint>(`${identifier}/InvalidCheckpoint`)({
  problem: CheckpointProblem
}) {}

/**
 * Whether `u` is a refused checkpoint, not a call's argument refused.
 *
 * @since 0.2.0
 * @category guards
 */
export const isInvalidCheckpoint = (u: unknown): u is InvalidCheckpoint => u instanceof InvalidCheckpoint

/**
 * The server refused the credentials (HTTP 401): missing, wrong or expired token.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unauthorized
  extends Schema.TaggedError<Unauthorized>(`${identifier}/Unauthorized`)("Unauthorized", RequestFields)
{
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `not authenticated${suffix(this.serverMessage)}`
  }
}

/**
 * The user may not do this (HTTP 403).
 *
 * @since 0.1.0
 * @category errors
 */
export class Forbidden extends Schema.TaggedError<Forbidden>(`${identifier}/Forbidden`)("Forbidden", RequestFields) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `not permitted${suffix(this.serverMessage)}`
  }
}

/**
 * The row (or Microapp) does not exist: HTTP 404, or a success envelope without the row.
 * `noSuchRow` is true only when the answer was the service's own word for a row it does not hold
 * (HTTP 404 `{"status":"error","message":"Row not found"}`): the only `NotFound` a change pass
 * takes as proof of a delete. Any other 404 (a proxy's page, another JSON shape, an empty body) or
 * a success without a row is a `NotFound` for `getRow`'s callers, and proves nothing.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotFound extends Schema.TaggedError<NotFound>(`${identifier}/NotFound`)("NotFound", {
  ...RequestFields,
  rowID: Schema.optional(Schema.String),
  microAppID: Schema.optional(Schema.String),
  /** @since 0.2.0 */
  noSuchRow: Schema.optional(Schema.Boolean)
}) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    const what = this.rowID !== undefined
      ? `row ${this.rowID}`
      : this.microAppID !== undefined
      ? `Microapp ${this.microAppID}`
      : "resource"
    return `${what} not found${suffix(this.serverMessage)}`
  }
}

/**
 * The server throttled the client (HTTP 429) and retrying did not get through; or, without a
 * `status`, the request was never sent: the client was holding back at the server's request (a 429
 * or a 503 with `Retry-After`), and the pause outlasted the call's budget.
 *
 * @since 0.1.0
 * @category errors
 */
export class RateLimited extends Schema.TaggedError<RateLimited>(`${identifier}/RateLimited`)("RateLimited", {
  ...RequestFields,
  /**
   * What the server's `Retry-After` asked for, in milliseconds; for a request held back (no
   * `status`), what was left of the pause the server asked for.
   */
  retryAfterMillis: Schema.optional(Schema.Number)
}) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return this.status === undefined
      ? `not sent: the server asked this client to pause, and the pause outlasts the call's budget${
        retryAfter(this.retryAfterMillis)
      }`
      : `rate limited by the server${retryAfter(this.retryAfterMillis)}${suffix(this.serverMessage)}`
  }
}

/**
 * The server failed (HTTP 5xx), possibly with a body that is not JSON.
 *
 * @since 0.1.0
 * @category errors
 */
export class ServerError extends Schema.TaggedError<ServerError>(`${identifier}/ServerError`)("ServerError", {
  ...RequestFields,
  /** What the server's `Retry-After` asked for (a 503 may send one), in milliseconds. */
  retryAfterMillis: Schema.optional(Schema.Number)
}) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `the server failed${retryAfter(this.retryAfterMillis)}${suffix(this.serverMessage)}`
  }
}

/**
 * The request did not complete at the network level: refused, reset, dropped.
 *
 * @since 0.1.0
 * @category errors
 */
export class Transport extends Schema.TaggedError<Transport>(`${identifier}/Transport`)("Transport", {
  ...RequestFields,
  /** Whether the failure is known to have happened before the request reached the server. */
  notSent: Schema.Boolean,
  description: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `network failure: ${this.description}`
  }
}

/**
 * No answer in time: the client's per-request timeout passed, or the server answered 408.
 *
 * @since 0.1.0
 * @category errors
 */
export class Timeout extends Schema.TaggedError<Timeout>(`${identifier}/Timeout`)("Timeout", {
  ...RequestFields,
  timeoutMillis: Schema.optional(Schema.Number)
}) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return this.status === 408
      ? `the server timed out the request${suffix(this.serverMessage)}`
      : `no response within ${this.timeoutMillis ?? "?"} ms`
  }
}

/**
 * The server refused the request: another 4xx, or a 200 whose envelope status is not "success".
 * A 404 that says the server has no endpoint there ("API endpoint does not exist", the service's
 * answer for a path it does not serve) is one too, with `url`: the base URL is wrong, and no row
 * or Microapp was looked for.
 *
 * @since 0.1.0
 * @category errors
 */
export class RequestRejected
  extends Schema.TaggedError<RequestRejected>(`${identifier}/RequestRejected`)("RequestRejected", {
    ...RequestFields,
    /** The envelope's `status` when the server answered one ("error", "fail"). */
    serverStatus: Schema.optional(Schema.String),
    /**
     * The URL the request went to (the base URL, then `path`), when the server answered that it
     * has no endpoint there. A base URL holds no credentials: the client refuses one with a user,
     * a password or a query.
     *
     * @since 0.2.0
     */
    url: Schema.optional(Schema.String)
  })
{
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    if (this.url === undefined) return `the server rejected the request${suffix(this.serverMessage)}`
    const base = this.url.endsWith(this.path) ? this.url.slice(0, this.url.length - this.path.length) : this.url
    return `the server has no endpoint at ${this.url}${suffix(this.serverMessage)}; ` +
      `is the base URL ${base} right? The client adds ${this.path} to it`
  }
}

/**
 * The server answered with a redirect (a 3xx, or a browser's opaque redirect, status 0). It is
 * never followed, so the credentials never reach another origin, and its body is never read as
 * data; it is not retried.
 *
 * @since 0.1.0
 * @category errors
 */
export class Redirected extends Schema.TaggedError<Redirected>(`${identifier}/Redirected`)("Redirected", {
  ...RequestFields,
  /** The origin (scheme, host and port) of the `Location` header, when there was one: never its path or query. */
  location: Schema.optional(Schema.String)
}) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `the server redirected the request${
      this.location === undefined ? "" : ` to ${this.location}`
    }; redirects are not followed`
  }
}

/**
 * The response did not have the documented shape. Names the row by index and `_id`, and the
 * path of the offending value, when a row is at fault.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnexpectedResponse
  extends Schema.TaggedError<UnexpectedResponse>(`${identifier}/UnexpectedResponse`)("UnexpectedResponse", {
    ...RequestFields,
    /**
     * What was wrong: a body that is not JSON (often cut in transit), the envelope, one row, or a
     * body larger than the client's `maxResponseBytes` (its reading was stopped there).
     */
    kind: Schema.Literal("NotJson", "Envelope", "Row", "TooLarge"),
    reason: Schema.String,
    /** The row's index in a query's answer; in a scan, in the table as the scan reads it. */
    rowIndex: Schema.optional(Schema.Number),
    rowID: Schema.optional(Schema.String),
    fieldPath: Schema.optional(Schema.String)
  })
{
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    const row = this.rowIndex === undefined
      ? ""
      : ` in row ${this.rowIndex}${this.rowID === undefined ? "" : ` (_id ${this.rowID})`}`
    const at = this.fieldPath === undefined || this.fieldPath === "" ? "" : ` at ${this.fieldPath}`
    return `unexpected response${row}${at}: ${this.reason}`
  }
}

/**
 * A full-table scan could not prove that it saw every row exactly once, typically because rows
 * were deleted before the scan's position while it ran.
 *
 * @since 0.1.0
 * @category errors
 */
export class ScanInconsistent
  extends Schema.TaggedError<ScanInconsistent>(`${identifier}/ScanInconsistent`)("ScanInconsistent", {
    method: Schema.String,
    path: Schema.String,
    microAppID: Schema.String,
    /** The skip at which the scan lost its place. */
    position: Schema.Number,
    rowsEmitted: Schema.Number,
    pages: Schema.Number,
    reason: Schema.String
  })
{
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `scan of ${this.microAppID} cannot prove completeness at row ${this.position}: ${this.reason}`
  }
}

/**
 * Collecting a table into memory met more rows than the caller's maximum. Nothing partial is
 * returned as if it were the whole table.
 *
 * @since 0.1.0
 * @category errors
 */
export class TooManyRows extends Schema.TaggedError<TooManyRows>(`${identifier}/TooManyRows`)("TooManyRows", {
  microAppID: Schema.String,
  max: Schema.Number
}) {
  /** @since 0.1.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return `${this.microAppID} has more than ${this.max} rows (the maximum asked to collect)`
  }
}

/**
 * A change pass would delete more rows than its guard allows (`maxDeletes`; by default, the more of
 * 100 rows and a tenth of the copy): it stopped before deleting any, and its sink holds none of
 * them. Allow them with `maxDeletes` (`--max-deletes`) of at least `deletes`, after checking that
 * the rows are gone from the Microapp.
 *
 * @since 0.2.0
 * @category errors
 */
export class TooManyDeletes
  extends Schema.TaggedError<TooManyDeletes>(`${identifier}/TooManyDeletes`)("TooManyDeletes", {
    microAppID: Schema.String,
    /** The rows the pass would delete. */
    deletes: Schema.Number,
    /** The rows the copy held before the pass (its baseline). */
    copy: Schema.Number,
    /** The most the pass could delete: `maxDeletes`, or the default bound. */
    allowed: Schema.Number,
    /** Whether `allowed` was the caller's `maxDeletes` rather than the default bound. */
    given: Schema.Boolean,
    /**
     * Whether the pass stopped as soon as it was past the bound, before it had counted every
     * candidate (under `deletes: "exhaustive"`, where each one is a delete): it would delete at
     * least `deletes` rows of a copy of at least `copy`.
     */
    atLeast: Schema.Boolean
  })
{
  /** @since 0.2.0 */
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    const bound = this.given
      ? `maxDeletes (${this.allowed})`
      : `the default bound (${this.allowed}: 100 rows, or a tenth of the copy when that is more)`
    const allow = this.atLeast ? "of at least that, up to the copy's size" : `${this.deletes}`
    return `the pass of ${this.microAppID} would delete ${this.atLeast ? "at least " : ""}${this.deletes} of the ` +
      `copy's ${this.copy}${this.atLeast ? " or more" : ""} rows, more than ${bound}; nothing was deleted. ` +
      `If those rows are gone from the Microapp, allow them with maxDeletes (--max-deletes) ${allow}`
  }
}

/**
 * What one request can fail with, as one Schema: `getRow`, `query`, `queryRaw` and `updateRow`
 * fail with these only. A refused checkpoint comes before its parent `InvalidInput`, so that it
 * keeps its class and `problem` across a boundary.
 *
 * @since 0.2.0
 * @category schemas
 */
export const RequestError = Schema.Union(
  InvalidCheckpoint,
  InvalidInput,
  Unauthorized,
  Forbidden,
  NotFound,
  RateLimited,
  ServerError,
  Transport,
  Timeout,
  RequestRejected,
  Redirected,
  UnexpectedResponse
)

/**
 * What one request can fail with: `getRow`, `query`, `queryRaw` and `updateRow` fail with these
 * only.
 *
 * @since 0.1.0
 * @category errors
 */
export type RequestError = typeof RequestError.Type

/**
 * What a scan (`rows`, `scan`'s streams, `pages`) can fail with, as one Schema: a request's
 * errors, and `ScanInconsistent` when it cannot prove it saw every row.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ScanError = Schema.Union(...RequestError.members, ScanInconsistent)

/**
 * What a scan (`rows`, `scan`'s streams, `pages`) can fail with: a request's errors, and
 * `ScanInconsistent` when it cannot prove it saw every row.
 *
 * @since 0.1.0
 * @category errors
 */
export type ScanError = typeof ScanError.Type

/**
 * Every error a call of the client can fail with, as one Schema, e.g. to send errors across a
 * boundary.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MicroappError = Schema.Union(...ScanError.members, TooManyRows, TooManyDeletes)

/**
 * Every error a call of the client can fail with.
 *
 * @since 0.1.0
 * @category errors
 */
export type MicroappError = typeof MicroappError.Type

/**
 * `RequestError` under the name of the call: the same union, kept as a name of the public API.
 *
 * @since 0.1.0
 * @category errors
 */
export type GetRowError = RequestError

/**
 * `RequestError` under the name of the call: the same union, kept as a name of the public API.
 *
 * @since 0.1.0
 * @category errors
 */
export type QueryError = RequestError

/**
 * `RequestError` under the name of the call: the same union, kept as a name of the public API.
 *
 * @since 0.1.0
 * @category errors
 */
export type UpdateRowError = RequestError

/**
 * What `collect` can fail with: a scan's errors, and `TooManyRows`.
 *
 * @since 0.1.0
 * @category errors
 */
export type CollectError = ScanError | TooManyRows

const isMember = Schema.is(MicroappError)

/**
 * Whether `u` is an error of a call of the client: marked with the library's `TypeId` (which the
 * SQL mirror's and the workflow's errors carry too), and one of the union's classes.
 *
 * @since 0.1.0
 * @category guards
 */
export const isMicroappError = (u: unknown): u is MicroappError => Predicate.hasProperty(u, TypeId) && isMember(u)

/**
 * One line for people: what happened, then the tag, and the HTTP status, method and path of the
 * call where there was one.
 * `error: ` prefixes it in the CLI.
 *
 * @since 0.1.0
 * @category formatting
 */
export const describe = (error: MicroappError): string => {
  const where = "method" in error && error.method !== undefined
    ? [error.method, error.path].join(" ")
    : ""
  const status = "status" in error && error.status !== undefined ? `HTTP ${error.status} ` : ""
  const detail = where === "" ? error._tag : `${error._tag}, ${status}${where}`
  return `${error.message} (${detail})`
}
