/**
 * The client of the Microapp Data Service: a `Context.Tag` whose layers build it over the
 * caller's `HttpClient`, and whose service reads, streams and updates rows with typed errors.
 *
 * @since 0.1.0
 */
import * as HttpClient from "@effect/platform/HttpClient"
import {
  Config,
  type ConfigError,
  Context,
  Duration,
  Effect,
  Either,
  Layer,
  RateLimiter,
  Redacted,
  type Schedule,
  Schema,
  Stream,
  SynchronizedRef
} from "effect"
import type * as BulkUpdate from "./BulkUpdate.js"
import { makeUpdateRows } from "./internal/bulkUpdate.js"
import { queryOf } from "./internal/checkpoint.js"
import { makeRowDecoder, type RowDecoder } from "./internal/decode.js"
import { decodeEnvelope } from "./internal/decode.js"
import { type Endpoint, endpoints } from "./internal/endpoints.js"
import { type Credentials, makeRequester, type Requester } from "./internal/request.js"
import { makeRateGate } from "./internal/retry.js"
import { InvalidInput, type MicroappError, NotFound, TooManyRows } from "./MicroappError.js"
import * as Query from "./Query.js"
import { CurrentRowBody, type InvalidRow, LoginBody, Row, RowMetadata, RowsBody, StatusEnvelope } from "./Row.js"
import * as RowStream from "./RowStream.js"
import * as Scan from "./internal/scan.js"

/**
 * How failed reads (and writes, where safe) are tried again.
 *
 * @since 0.1.0
 * @category models
 */
export interface RetryOptions {
  /** Attempts in all, the first included. Default 5. */
  readonly maxAttempts?: number
  /** The first backoff delay, doubled at each retry, with jitter. Default 250 ms. */
  readonly initialDelay?: Duration.DurationInput
  /** The largest backoff delay. Default 10 s. */
  readonly maxDelay?: Duration.DurationInput
  /** No retry starts after this long since the first failure. Default 60 s. */
  readonly maxElapsed?: Duration.DurationInput
  /** Replaces the backoff delays (attempt and time bounds still apply). */
  readonly schedule?: Schedule.Schedule<unknown, MicroappError>
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
  static layer = (options: MicroappClient.Options): Layer.Layer<MicroappClient, never, HttpClient.HttpClient> =>
    Layer.scoped(MicroappClient, make(options))

  /**
   * The client configured by `Config` values: by default `MICROAPP_BASE_URL`, `MICROAPP_AUTH_TOKEN`
   * (read as a redacted secret) and `MICROAPP_USER_ID` of the `ConfigProvider` in context (the
   * environment, unless replaced); each can be given as another `Config`.
   *
   * @since 0.1.0
   * @category layers
   */
  static layerConfig = (
    options: MicroappClient.ConfigOptions = {}
  ): Layer.Layer<MicroappClient, ConfigError.ConfigError, HttpClient.HttpClient> => {
    const { authToken, baseUrl, userId, ...tuning } = options
    return Layer.scoped(
      MicroappClient,
      Effect.flatMap(
        Config.all({
          baseUrl: baseUrl ?? Config.string("MICROAPP_BASE_URL"),
          authToken: authToken ?? Config.redacted("MICROAPP_AUTH_TOKEN"),
          userId: userId ?? Config.string("MICROAPP_USER_ID")
        }),
        (credentials) => make({ ...tuning, ...credentials })
      )
    )
  }

  /**
   * The client that logs in with email and password (`POST /api/login`), and logs in again once
   * when a call is refused with 401 (expired token), repeating that call.
   *
   * @since 0.1.0
   * @category layers
   */
  static layerLogin = (
    options: MicroappClient.LoginOptions
  ): Layer.Layer<MicroappClient, MicroappError, HttpClient.HttpClient> => Layer.scoped(MicroappClient, makeLogin(options))

  /**
   * Logs in once (`POST /api/login`) and hands back the token, still `Redacted`, and the user id,
   * e.g. to store them for `layer` or `layerConfig`.
   *
   * @since 0.1.0
   * @category login
   */
  static login = (
    options: MicroappClient.LoginOptions
  ): Effect.Effect<MicroappClient.Credentials, MicroappError, HttpClient.HttpClient> =>
    Effect.scoped(
      Effect.flatMap(makeSender(options), ({ baseUrl, requester }) =>
        Either.isLeft(baseUrl) ? Effect.fail(baseUrl.left) : logIn(requester, options))
    )
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
    /** Bounds each request (each attempt); a request still running then is aborted. Default 30 s. */
    readonly timeout?: Duration.DurationInput | undefined
    /** Rows per request of `rows`, and the `limit` of `query` when none is given. Default 1000. */
    readonly pageSize?: number | undefined
    /** Retries of transient failures; `false` for none. See `RetryOptions` for the defaults. */
    readonly retry?: RetryOptions | false | undefined
    /** A client-side limit on requests per second and in flight, for this client only. */
    readonly rateLimit?: RateLimitOptions | undefined
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
    /** Default `Config.redacted("MICROAPP_AUTH_TOKEN")`. */
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
    readonly requestsPerSecond?: number | undefined
    readonly maxInFlight?: number | undefined
  }

  /**
   * @since 0.1.0
   * @category models
   */
  export interface CallOptions {
    /** Overrides the client's per-request timeout for this call. */
    readonly timeout?: Duration.DurationInput | undefined
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
    /** The most rows to hold in memory; a table with more fails with `TooManyRows`. */
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
    readonly rows: (options: RowsOptions) => Stream.Stream<A, MicroappError>
    /**
     * A scan: its rows, or its pages each with the checkpoint to resume from after them, and its
     * summary (pages, duplicates dropped, realignments, the server's cap...). A `resume` of another
     * query fails here.
     */
    readonly scan: (options: RowsOptions) => Effect.Effect<RowStream.Scan<A>, InvalidInput>
    /** The whole table in memory, up to `max` rows; more is `TooManyRows`, never a silent prefix. */
    readonly collect: (options: CollectOptions) => Effect.Effect<ReadonlyArray<A>, MicroappError>
    /** One request: at most `limit` rows (default: the page size) from `skip`. */
    readonly query: (options: QueryOptions) => Effect.Effect<ReadonlyArray<A>, MicroappError>
    /** One row by its id; `NotFound` when there is none. */
    readonly getRow: (rowID: string, options?: CallOptions) => Effect.Effect<A, MicroappError>
  }

  /**
   * @since 0.1.0
   * @category models
   */
  export interface Service extends Reader<Row> {
    /** One request with `serviceFormat: true`: the body as the server sent it. */
    readonly queryRaw: (options: QueryOptions) => Effect.Effect<string, MicroappError>
    /** Sets fields of a row; succeeds only when the server says "success". */
    readonly updateRow: (options: UpdateOptions) => Effect.Effect<void, MicroappError>
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

/** Checks and normalises the base URL once; its failure is reported by every call. */
const normaliseBaseUrl = (baseUrl: string): Either.Either<string, InvalidInput> => {
  const trimmed = baseUrl.trim().replace(/\/+$/, "")
  try {
    const url = new URL(trimmed)
    if (url.protocol === "http:" || url.protocol === "https:") return Either.right(trimmed)
  } catch {
    // reported below
  }
  return Either.left(
    new InvalidInput({ method: "POST", path: "", input: "baseUrl", reason: "must be an http(s) URL" })
  )
}

const PositiveInt = Schema.Number.pipe(
  Schema.filter((n) => Number.isSafeInteger(n) && n >= 1, { message: () => "must be a whole number >= 1" })
)

const RowsOptionsSchema = Schema.Struct({
  ...Query.Selection.fields,
  pageSize: Schema.optional(PositiveInt),
  concurrency: Schema.optional(Schema.Union(PositiveInt, Schema.Literal("auto"))),
  maxConcurrency: Schema.optional(PositiveInt),
  dedupe: Schema.optional(Schema.Literal("exact", "recent")),
  prefetch: Schema.optional(PositiveInt),
  overlap: Schema.optional(Query.Skip),
  onInconsistent: Schema.optional(Schema.Literal("fail", "continue"))
})

const CollectMax = Schema.Struct({ max: Query.Skip })

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

const Json: Schema.Schema<Json> = Schema.Union(
  Schema.Null,
  Schema.Boolean,
  Schema.Number.pipe(Schema.finite({ message: () => "must be a finite number" })),
  Schema.String,
  Schema.Array(Schema.suspend(() => Json)),
  Schema.Record({ key: Schema.String, value: Schema.suspend(() => Json) })
)

/** Row keys the server owns (the metadata): writing them is silently ignored, so it is refused here. */
const systemKeys: ReadonlySet<string> = new Set(Object.keys(RowMetadata.fields))

const UpdateOptionsSchema = Schema.Struct({
  rowID: Query.Identifier,
  rowData: Schema.Record({ key: Schema.String, value: Json }).pipe(
    Schema.filter((data) => Object.keys(data).length > 0 || "must name at least one field"),
    Schema.filter((data) => {
      const key = Object.keys(data).find((k) => systemKeys.has(k))
      return key === undefined ||
        `key "${key}" is a system key the server does not let an update change (use the option of that name where there is one)`
    })
  ),
  embeddingRowID: Schema.optional(Query.Identifier),
  userID: Schema.optional(Query.Identifier),
  ignoreActionRules: Schema.optional(Schema.Boolean)
})

const decodeRowsBody = decodeEnvelope(RowsBody)
const decodeCurrentRow = decodeEnvelope(CurrentRowBody)
const decodeStatus = decodeEnvelope(StatusEnvelope)
// the service's own client reads login answers without looking at a status
const decodeLogin = decodeEnvelope(LoginBody, { statusOptional: true })

/** The client over a session: how calls get their credentials, made once the sender exists. */
/** The sender of one client: its base URL check, timeout, retries, rate gate and limits. */
const makeSender = Effect.fnUntraced(function*(tuning: MicroappClient.Tuning & { readonly baseUrl: string }) {
  const http = yield* HttpClient.HttpClient
  const baseUrl = normaliseBaseUrl(tuning.baseUrl)
  const limits = tuning.rateLimit
  const rateLimiter = limits?.requestsPerSecond === undefined
    ? undefined
    : yield* RateLimiter.make({ limit: limits.requestsPerSecond, interval: Duration.seconds(1) })
  const inFlight = limits?.maxInFlight === undefined ? undefined : yield* Effect.makeSemaphore(limits.maxInFlight)
  const requester = makeRequester(http, {
    baseUrl: Either.getOrElse(baseUrl, () => ""),
    timeout: Duration.decode(tuning.timeout ?? Duration.seconds(30)),
    retry: tuning.retry ?? {},
    gate: yield* makeRateGate,
    limit: (effect) => {
      const limited = rateLimiter === undefined ? effect : rateLimiter(effect)
      return inFlight === undefined ? limited : inFlight.withPermits(1)(limited)
    }
  })
  return { baseUrl, requester }
})

/** `POST /api/login`: the token, kept `Redacted`, and the user id. */
const logIn = (requester: Requester, options: { readonly email: string; readonly password: Redacted.Redacted<string> }) =>
  Effect.gen(function*() {
    const reply = yield* requester.sendJson(
      endpoints.login,
      { email: options.email, password: Redacted.value(options.password) },
      { credentials: undefined }
    )
    const body = yield* decodeLogin(reply.json, 200, { endpoint: endpoints.login, attempt: reply.attempts })
    const data = "data" in body ? body.data : body
    return { authToken: Redacted.make(data.authToken), userId: data.userId } satisfies Credentials
  }).pipe(Effect.withSpan("MicroappClient.login"))

/** The client over a session: how calls get their credentials, made once the sender exists. */
const makeWith = Effect.fnUntraced(function*<E>(
  tuning: MicroappClient.Tuning & { readonly baseUrl: string },
  makeSession: (requester: Requester, baseUrl: Either.Either<string, InvalidInput>) => Effect.Effect<Session, E>
) {
  const { baseUrl, requester } = yield* makeSender(tuning)
  const pageSize = tuning.pageSize ?? RowStream.defaults.pageSize
  const session = yield* makeSession(requester, baseUrl)

  /** Runs a call with the current credentials; a 401 renews them once (when possible) and repeats. */
  const authorised = <A>(call: (credentials: Credentials) => Effect.Effect<A, MicroappError>) =>
    Effect.flatMap(Either.isLeft(baseUrl) ? Effect.fail(baseUrl.left) : session.current, (current) =>
      Effect.catchIf(
        call(current.credentials),
        (error) => error._tag === "Unauthorized" && session.renew !== undefined,
        (error) =>
          session.renew === undefined ? Effect.fail(error) : Effect.zipRight(
            session.renew(current.generation),
            Effect.flatMap(session.current, (renewed) => call(renewed.credentials))
          )
      ))

  const post = (
    endpoint: Endpoint,
    body: unknown,
    timeout: Duration.DurationInput | undefined,
    subject: { readonly rowID: string } | { readonly microAppID: string }
  ) => authorised((credentials) => requester.sendJson(endpoint, body, { credentials, timeout, subject }))

  const fetchPage = Effect.fn("MicroappClient.fetchPage")(function*(
    selection: Query.CheckedSelection,
    window: { readonly skip: number; readonly limit: number },
    timeout: Duration.DurationInput | undefined
  ) {
    yield* Effect.annotateCurrentSpan({ microAppID: selection.microAppID, skip: window.skip, limit: window.limit })
    const reply = yield* post(endpoints.rows, Query.toRequestBody(selection, window), timeout, {
      microAppID: selection.microAppID
    })
    const body = yield* decodeRowsBody(reply.json, 200, { endpoint: endpoints.rows, attempt: reply.attempts })
    yield* Effect.annotateCurrentSpan({ rows: body.body.microAppRows.length, attempt: reply.attempts })
    return { rows: body.body.microAppRows, attempts: reply.attempts }
  })

  const validateQuery = Query.validate(Query.QueryOptions, endpoints.rows)
  const validateRows = Query.validate(RowsOptionsSchema, endpoints.rows)
  const validateMax = Query.validate(CollectMax, endpoints.rows)
  const validateRowID = Query.validate(Query.Identifier, endpoints.row, "rowID")
  const validateUpdate = Query.validate(UpdateOptionsSchema, endpoints.update)

  const toEffect = <A>(result: Either.Either<A, MicroappError>): Effect.Effect<A, MicroappError> =>
    Either.isLeft(result) ? Effect.fail(result.left) : Effect.succeed(result.right)

  const makeReader = <A>(decoder: RowDecoder<A>): MicroappClient.Reader<A> => {
    // each run of the scan is a span of its own ("MicroappClient.scan"), covering the whole run
    const scan = Effect.fnUntraced(function*(options: MicroappClient.RowsOptions) {
      const valid = yield* validateRows(options)
      const selection = Query.checked(valid)
      const settings = Scan.settings({ ...valid, pageSize: valid.pageSize ?? pageSize }, { maxInFlight: tuning.rateLimit?.maxInFlight })
      const query = queryOf(selection, settings)
      const checkpoints = yield* Scan.checkpointing(options, query)
      return Scan.make<A>({
        microAppID: selection.microAppID,
        path: endpoints.rows.path,
        query,
        fetch: (window) => fetchPage(selection, window, options.timeout),
        decode: (rows, indexes, attempts) => decoder(rows, indexes, { endpoint: endpoints.rows, attempt: attempts })
      }, settings, checkpoints)
    })

    const rows = (options: MicroappClient.RowsOptions) => Stream.unwrap(Effect.map(scan(options), (scan) => scan.rows))

    const collect = Effect.fn("MicroappClient.collect")(function*(options: MicroappClient.CollectOptions) {
      const { max } = yield* validateMax(options)
      const collected = yield* Stream.runCollect(Stream.take(rows(options), max + 1))
      if (collected.length > max) return yield* new TooManyRows({ microAppID: options.microAppID, max })
      return Array.from(collected)
    })

    const query = Effect.fn("MicroappClient.query")(function*(options: MicroappClient.QueryOptions) {
      const valid = yield* validateQuery(options)
      const page = yield* fetchPage(
        Query.checked(valid),
        { skip: valid.skip ?? 0, limit: valid.limit ?? pageSize },
        options.timeout
      )
      const decoded = yield* toEffect(decoder(page.rows, undefined, { endpoint: endpoints.rows, attempt: page.attempts }))
      yield* Effect.forEach(decoded.invalid, (error) => Effect.logWarning(error.message), { discard: true })
      return decoded.rows
    })

    const getRow = Effect.fn("MicroappClient.getRow")(function*(
      rowID: string,
      options?: MicroappClient.CallOptions
    ) {
      const id = yield* validateRowID(rowID)
      yield* Effect.annotateCurrentSpan({ rowID: id })
      const reply = yield* post(endpoints.row, { rowID: id }, options?.timeout, { rowID: id })
      const info = { endpoint: endpoints.row, attempt: reply.attempts }
      // a success envelope without the row means the same as a 404
      const notFound = () => new NotFound({ method: "POST", path: endpoints.row.path, rowID: id, attempts: reply.attempts })
      yield* Effect.annotateCurrentSpan({ attempt: reply.attempts })
      const body = yield* decodeCurrentRow(reply.json, 200, info)
      const current = body.body?.currentRow
      if (current === undefined || current === null) return yield* notFound()
      const decoded = yield* toEffect(decoder([current], undefined, info))
      const [row] = decoded.rows
      // a single row that failed its Schema cannot be skipped: report it
      if (row === undefined) return yield* Effect.fail(decoded.invalid[0] ?? notFound())
      return row
    })

    return { rows, scan, collect, query, getRow }
  }

  const queryRaw = Effect.fn("MicroappClient.queryRaw")(function*(options: MicroappClient.QueryOptions) {
    const valid = yield* validateQuery(options)
    const selection = Query.checked(valid)
    const window = { skip: valid.skip ?? 0, limit: valid.limit ?? pageSize }
    yield* Effect.annotateCurrentSpan({ microAppID: selection.microAppID, skip: window.skip, limit: window.limit })
    return yield* authorised((credentials) =>
      requester.send(
        endpoints.rows,
        Query.toRequestBody(selection, window, true),
        { credentials, timeout: options.timeout },
        (reply) => Effect.succeed(reply.text)
      )
    )
  })

  const updateRow = Effect.fn("MicroappClient.updateRow")(function*(options: MicroappClient.UpdateOptions) {
    const valid = yield* validateUpdate(options)
    yield* Effect.annotateCurrentSpan({ rowID: valid.rowID })
    const reply = yield* post(endpoints.update, valid, options.timeout, { rowID: valid.rowID })
    yield* Effect.annotateCurrentSpan({ attempt: reply.attempts })
    yield* decodeStatus(reply.json, 200, { endpoint: endpoints.update, attempt: reply.attempts })
  })

  const untyped = makeReader(makeRowDecoder(Row, "fail"))

  const runUpdates = makeUpdateRows({ endpoint: endpoints.update, updateRow, getRow: untyped.getRow })
  const updateRows = <E, R>(
    updates: Stream.Stream<MicroappClient.UpdateOptions | InvalidInput, E, R>,
    options: BulkUpdate.Options = {}
  ) => runUpdates(updates, options, Effect.succeed)

  function withSchema<A, I>(schema: Schema.Schema<A, I>, options: { readonly invalidRows: "raw" }): MicroappClient.Reader<A | InvalidRow>
  function withSchema<A, I>(
    schema: Schema.Schema<A, I>,
    options?: { readonly invalidRows?: "fail" | "skip" | undefined }
  ): MicroappClient.Reader<A>
  function withSchema<A, I>(
    schema: Schema.Schema<A, I>,
    options?: { readonly invalidRows?: InvalidRowPolicy | undefined }
  ): MicroappClient.Reader<A | InvalidRow> {
    return makeReader(makeRowDecoder(schema, options?.invalidRows ?? "fail"))
  }

  return MicroappClient.of({ ...untyped, queryRaw, updateRow, updateRows, withSchema })
})

/** Where a call gets its credentials, and how they are renewed after a 401 (if they can be). */
interface Session {
  readonly current: Effect.Effect<{ readonly credentials: Credentials; readonly generation: number }>
  /** Renews the credentials of `generation`, unless that already happened. */
  readonly renew: ((generation: number) => Effect.Effect<void, MicroappError>) | undefined
}

const make = (options: MicroappClient.Options) =>
  makeWith(options, () =>
    Effect.succeed<Session>({
      current: Effect.succeed({ credentials: { authToken: options.authToken, userId: options.userId }, generation: 0 }),
      renew: undefined
    }))

const makeLogin = (options: MicroappClient.LoginOptions) =>
  makeWith(options, (requester, baseUrl) =>
    Effect.gen(function*() {
      if (Either.isLeft(baseUrl)) return yield* baseUrl.left
      const state = yield* SynchronizedRef.make({ credentials: yield* logIn(requester, options), generation: 0 })
      return {
        current: SynchronizedRef.get(state),
        // concurrent 401s of one generation wait here for a single login
        renew: (generation: number) =>
          SynchronizedRef.updateEffect(state, (current) =>
            current.generation === generation
              ? Effect.map(logIn(requester, options), (credentials) => ({ credentials, generation: generation + 1 }))
              : Effect.succeed(current))
      } satisfies Session
    }))
