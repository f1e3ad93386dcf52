/**
 * The client of the Microapp Data Service: a `Context.Tag` whose layers build it over the
 * caller's `HttpClient`, and whose service reads, streams and updates rows with typed errors.
 *
 * @since 0.1.0
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import {
  type Config,
  type ConfigError,
  Context,
  type Duration,
  type Effect,
  Layer,
  type Redacted,
  type Schedule,
  type Schema,
  type Stream
} from "effect"
import type * as BulkUpdate from "./BulkUpdate.js"
import type * as Changes from "./Changes.js"
import * as internal from "./internal/client.js"
import type {
  CollectError,
  GetRowError,
  InvalidInput,
  MicroappError,
  QueryError,
  ScanError,
  UpdateRowError
} from "./MicroappError.js"
import type * as Query from "./Query.js"
import type { InvalidRow, Row } from "./Row.js"
import type * as RowStream from "./RowStream.js"

/**
 * How failed reads (and writes, where safe) are tried again.
 *
 * @since 0.1.0
 * @category models
 */
export interface RetryOptions {
  /** Attempts in all, the first included. Default 5, from 1 to 20. */
  readonly maxAttempts?: number | undefined
  /** The first backoff delay, doubled at each retry, with jitter. Default 250 ms, at most 1 minute. */
  readonly initialDelay?: Duration.DurationInput | undefined
  /** The largest backoff delay. Default 10 s, at most 10 minutes. */
  readonly maxDelay?: Duration.DurationInput | undefined
  /** No retry starts after this long since the first failure. Default 60 s, at most 1 hour. */
  readonly maxElapsed?: Duration.DurationInput | undefined
  /** Replaces the backoff delays (attempt and time bounds still apply). */
  readonly schedule?: Schedule.Schedule<unknown, MicroappError> | undefined
}

/**
 * What to do with a row that fails its Schema: fail the call, skip it (counted and logged), or
 * hand it on undecoded.
 *
 * @since 0.1.0
 * @category models
 */
export type InvalidRowPolicy = "fail" | "skip" | "raw"

/**
 * @since 0.1.0
 * @category tags
 */
export class MicroappClient extends Context.Tag("effect-microapp/MicroappClient")<
  MicroappClient,
  MicroappClient.Service
>() {
  /**
   * The client with a token and user id the caller already has.
   *
   * @since 0.1.0
   * @category layers
   */
  static layer(options: MicroappClient.Options): Layer.Layer<MicroappClient, never, HttpClient.HttpClient> {
    return Layer.scoped(MicroappClient, internal.make(options))
  }

  /**
   * The client configured by `Config` values: by default `MICROAPP_BASE_URL`, `MICROAPP_AUTH_TOKEN`
   * (read as a redacted secret) and `MICROAPP_USER_ID` of the `ConfigProvider` in context (the
   * environment, unless replaced); each can be given as another `Config`.
   *
   * @since 0.1.0
   * @category layers
   */
  static layerConfig(
    options: MicroappClient.ConfigOptions = {}
  ): Layer.Layer<MicroappClient, ConfigError.ConfigError, HttpClient.HttpClient> {
    return Layer.scoped(MicroappClient, internal.makeConfig(options))
  }

  /**
   * The client that logs in with email and password (`POST /api/login`), and logs in again once
   * when a call is refused with 401 (expired token), repeating that call.
   *
   * @since 0.1.0
   * @category layers
   */
  static layerLogin(
    options: MicroappClient.LoginOptions
  ): Layer.Layer<MicroappClient, MicroappError, HttpClient.HttpClient> {
    return Layer.scoped(MicroappClient, internal.makeLogin(options))
  }

  /**
   * Logs in once (`POST /api/login`) and hands back the token, still `Redacted`, and the user id,
   * e.g. to store them for `layer` or `layerConfig`.
   *
   * @since 0.1.0
   * @category login
   */
  static login(
    options: MicroappClient.LoginOptions
  ): Effect.Effect<MicroappClient.Credentials, MicroappError, HttpClient.HttpClient> {
    return internal.login(options)
  }
}

/**
 * @since 0.1.0
 */
export declare namespace MicroappClient {
  /**
   * Settings other than the credentials.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Tuning {
    /** Bounds each request (each attempt); a request still running then is aborted. Default 30 s, at most 1 hour. */
    readonly timeout?: Duration.DurationInput | undefined
    /** Rows per request of `rows`, and the `limit` of `query` when none is given. Default 1000, at most 10,000. */
    readonly pageSize?: number | undefined
    /**
     * The most bytes of one answer's body read; past them the read stops, the request is aborted
     * and the call fails with `UnexpectedResponse` (kind `TooLarge`). Default 64 MiB, from 1 KiB to 256 MiB.
     */
    readonly maxResponseBytes?: number | undefined
    /** Retries of transient failures; `false` for none. See `RetryOptions` for the defaults. */
    readonly retry?: RetryOptions | false | undefined
    /** Limits on requests per second, in flight, and on the pauses the server asks for, for this client only. */
    readonly rateLimit?: RateLimitOptions | undefined
    /**
     * A step of your own over the `HttpClient` each attempt is sent with (a header, a log line, a
     * span): it sees every attempt, retries included, with the request shaped and authenticated and
     * redirects refused (fetch told not to follow them); what it returns is then classified into
     * `MicroappError`s, under the timeout, the rate limits and the retry policy. Its failures must
     * stay `HttpClientError`s; the credential headers are redacted wherever Effect prints headers.
     */
    readonly transformClient?: ((client: HttpClient.HttpClient) => HttpClient.HttpClient) | undefined
  }

  /**
   * Where `layerConfig` reads the credentials from, besides the settings.
   *
   * @since 0.1.0
   * @category models
   */
  export interface ConfigOptions extends Tuning {
    /** Default `Config.string("MICROAPP_BASE_URL")`. */
    readonly baseUrl?: Config.Config<string> | undefined
    /** Default: `MICROAPP_AUTH_TOKEN`, as a `Redacted`. */
    readonly authToken?: Config.Config<Redacted.Redacted<string>> | undefined
    /** Default `Config.string("MICROAPP_USER_ID")`. */
    readonly userId?: Config.Config<string> | undefined
  }

  /**
   * @since 0.1.0
   * @category models
   */
  export interface Options extends Tuning {
    /** Where the service is, with or without a trailing `/`. */
    readonly baseUrl: string
    readonly authToken: Redacted.Redacted<string>
    readonly userId: string
  }

  /**
   * @since 0.1.0
   * @category models
   */
  export interface LoginOptions extends Tuning {
    readonly baseUrl: string
    readonly email: string
    readonly password: Redacted.Redacted<string>
  }

  /**
   * What authenticates a call: the token and the user id.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Credentials {
    readonly authToken: Redacted.Redacted<string>
    readonly userId: string
  }

  /**
   * @since 0.1.0
   * @category models
   */
  export interface RateLimitOptions {
    /** Requests sent per second, at most. Default none; from 1 to 10,000. */
    readonly requestsPerSecond?: number | undefined
    /**
     * Requests in flight at once, for the whole client. Below it, the client keeps a limit of its
     * own, learned from the server's 429s. Default 64, at most 1,024.
     */
    readonly maxInFlight?: number | undefined
    /**
     * The longest client-wide pause a `Retry-After` imposes; a call that was asked for longer fails
     * with `RateLimited` carrying what the server asked. Default 60 s, at most 1 hour.
     */
    readonly maxPause?: Duration.DurationInput | undefined
  }

  /**
   * @since 0.1.0
   * @category models
   */
  export interface CallOptions {
    /** Overrides the client's per-request timeout for this call (each request of a scan). */
    readonly timeout?: Duration.DurationInput | undefined
    /**
     * Overrides the client's retry policy for this call (each request of a scan): `false` for no
     * retry; an object replaces the fields it gives, the others stay the client's. Bounds as the
     * client's; beyond them, `InvalidInput` before anything is sent.
     */
    readonly retry?: RetryOptions | false | undefined
  }

  /**
   * @since 0.1.0
   * @category models
   */
  export interface QueryOptions extends Query.QueryOptions, CallOptions {}

  /**
   * @since 0.1.0
   * @category models
   */
  export interface RowsOptions extends Query.Selection, RowStream.ScanOptions, CallOptions {}

  /**
   * @since 0.1.0
   * @category models
   */
  export interface CollectOptions extends RowsOptions {
    /** The most rows to hold in memory, at most 10,000,000; a table with more fails with `TooManyRows`. */
    readonly max: number
  }

  /**
   * @since 0.1.0
   * @category models
   */
  export interface UpdateOptions extends CallOptions {
    readonly rowID: string
    /** New values by field LABEL (case sensitive). */
    readonly rowData: Readonly<Record<string, unknown>>
    /** Moves the row under another parent row. */
    readonly embeddingRowID?: string | undefined
    /** Changes the row's creator. */
    readonly userID?: string | undefined
    /** Skips the Microapp's action rules for this update. */
    readonly ignoreActionRules?: boolean | undefined
  }

  /**
   * Reading rows decoded as `A`.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Reader<A> {
    /** Every row of the (filtered, sorted) Microapp, page by page; see `RowStream`. */
    readonly rows: (options: RowsOptions) => Stream.Stream<A, ScanError>
    /**
     * A scan: its rows, or its pages each with the checkpoint to resume from after them, and its
     * summary (pages, duplicates dropped, realignments, the server's cap...). A `resume` of another
     * query fails here.
     */
    readonly scan: (options: RowsOptions) => Effect.Effect<RowStream.Scan<A>, InvalidInput>
    /** The whole table in memory, up to `max` rows; more is `TooManyRows`, never a silent prefix. */
    readonly collect: (options: CollectOptions) => Effect.Effect<ReadonlyArray<A>, CollectError>
    /** One request: at most `limit` rows (default: the page size) from `skip`. */
    readonly query: (options: QueryOptions) => Effect.Effect<ReadonlyArray<A>, QueryError>
    /** One row by its id; `NotFound` when there is none. */
    readonly getRow: (rowID: string, options?: CallOptions) => Effect.Effect<A, GetRowError>
    /**
     * A change pass: the table read whole and compared with `baseline` by id and content
     * fingerprint (of each row as the server sent it); deletes only after an exhaustive scan. See
     * `Changes`. `dedupe: "recent"`, or a `resume` of another query, fail here.
     */
    readonly changes: <E = never, R = never>(
      options: Changes.Options<E, R>
    ) => Effect.Effect<Changes.Pass<A, E, R>, InvalidInput>
  }

  /**
   * @since 0.1.0
   * @category models
   */
  export interface Service extends Reader<Row> {
    /** One request with `serviceFormat: true`: the body as the server sent it. */
    readonly queryRaw: (options: QueryOptions) => Effect.Effect<string, QueryError>
    /** Sets fields of a row; succeeds only when the server says "success". */
    readonly updateRow: (options: UpdateOptions) => Effect.Effect<void, UpdateRowError>
    /**
     * Many updates: one `BulkUpdate.Outcome` per element, in input order, `concurrency` at a time.
     * An element may be an `InvalidInput` in place of an update its producer could not make (a
     * line that is not JSON): it gets an `Invalid` outcome at its place. Fails only with the input
     * stream's errors, or `InvalidInput` for bad options. See `BulkUpdate`.
     */
    readonly updateRows: <E, R>(
      updates: Stream.Stream<UpdateOptions | InvalidInput, E, R>,
      options?: BulkUpdate.Options
    ) => Stream.Stream<BulkUpdate.Outcome, E | InvalidInput, R>
    /** Reading rows decoded by another Schema, with a policy for rows that fail it. */
    readonly withSchema: {
      <A, I>(schema: Schema.Schema<A, I>, options: { readonly invalidRows: "raw" }): Reader<A | InvalidRow>
      <A, I>(
        schema: Schema.Schema<A, I>,
        options?: { readonly invalidRows?: "fail" | "skip" | undefined }
      ): Reader<A>
    }
  }
}
