/**
 * The client's implementation: its options checked against their bounds, the sender (retries,
 * the rate gate, the learned in-flight limit), the session, and each call over them.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import {
  Config,
  ConfigError,
  Duration,
  Effect,
  Either,
  RateLimiter,
  Redacted,
  type Schema,
  Stream,
  SynchronizedRef
} from "effect"
import type * as Scope from "effect/Scope"
import type * as BulkUpdate from "../BulkUpdate.js"
import type { InvalidRowPolicy, MicroappClient } from "../MicroappClient.js"
import {
  InvalidInput,
  type MicroappError,
  NotFound,
  type RequestError,
  TooManyRows,
  UnexpectedResponse
} from "../MicroappError.js"
import * as Query from "../Query.js"
import { type InvalidRow, Row } from "../Row.js"
import * as RowStream from "../RowStream.js"
import { CollectMax, RowsOptionsSchema, TuningSchema, UpdateOptionsSchema, validate } from "./bounds.js"
import { makeUpdateRows } from "./bulkUpdate.js"
import { makePass } from "./changes/index.js"
import { type Contract, contractOf, decodeEnvelope, pageDecoder, type RowDecoder, schemaStep } from "./http/decode.js"
import { type Endpoint, endpoints } from "./http/endpoints.js"
import { where } from "./http/errors.js"
import { identified as identifiedBy } from "./http/identify.js"
import * as InFlight from "./http/inFlight.js"
import { defaultMaxPause, makeRateGate } from "./http/retry.js"
import { type Credentials, headerSafeReason, isHeaderSafe } from "./http/shape.js"
import { makeTransport, type Transport } from "./http/transport.js"
import {
  type CheckedSelection,
  checkSelection,
  CurrentRowBody,
  LoginBody,
  RowsBody,
  StatusEnvelope,
  toRequestBody
} from "./http/wire.js"
import { queryOf } from "./scan/checkpoint.js"
import * as Scan from "./scan/driver.js"
import * as IdSet from "./scan/IdSet.js"

/**
 * Checks and normalises the base URL once. A query string or a fragment would end up inside every
 * request's path, and userinfo would be dropped: each is refused. The URL itself is never quoted
 * in the error, as it may hold a credential.
 */
const normaliseBaseUrl = (baseUrl: string): Either.Either<string, InvalidInput> => {
  const trimmed = baseUrl.trim().replace(/\/+$/, "")
  const refuse = (reason: string) => Either.left(new InvalidInput({ input: "baseUrl", reason }))
  let url: URL
  try {
    url = new URL(trimmed)
  } catch {
    return refuse("must be an http(s) URL")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return refuse("must be an http(s) URL")
  if (url.username !== "" || url.password !== "") {
    return refuse("must not hold a user name or password (user:password@): calls authenticate with the token")
  }
  if (trimmed.includes("?")) return refuse("must not have a query string (?...): it would garble every request path")
  if (trimmed.includes("#")) return refuse("must not have a fragment (#...): it would garble every request path")
  return Either.right(trimmed)
}

/**
 * A credential read from config, refused when no header can carry it: naming its option, never its
 * value (a ConfigError of a redacted config has no path to name).
 */
const headerSafeConfig = <A>(
  config: Config.Config<A>,
  name: "authToken" | "userId",
  text: (value: A) => string
): Config.Config<A> =>
  Config.mapOrFail(config, (value) =>
    isHeaderSafe(text(value))
      ? Either.right(value)
      : Either.left(ConfigError.InvalidData([], `invalid ${name}: ${headerSafeReason}`)))

/** What the client takes when its options leave them out. */
const tuningDefaults = {
  timeout: Duration.seconds(30),
  maxResponseBytes: 64 * 1024 * 1024,
  maxInFlight: 64
}

const validateTuning = validate(TuningSchema, undefined, "tuning")

const decodeRowsBody = decodeEnvelope(RowsBody)
const decodeCurrentRow = decodeEnvelope(CurrentRowBody)
const decodeStatus = decodeEnvelope(StatusEnvelope)
// the service's own client reads login answers without looking at a status
const decodeLogin = decodeEnvelope(LoginBody, { statusOptional: true })

/**
 * The sender of one client: its options checked once (their failure is reported by every call),
 * timeout, retries, rate gate and limits.
 */
export const makeSender = Effect.fnUntraced(function*(tuning: MicroappClient.Tuning & { readonly baseUrl: string }) {
  const http = yield* HttpClient.HttpClient
  const checked = yield* Effect.either(Effect.zipRight(validateTuning(tuning), normaliseBaseUrl(tuning.baseUrl)))
  // a client whose options were refused sends nothing: its limits are the defaults, never used
  const accepted: MicroappClient.Tuning = Either.isRight(checked) ? tuning : {}
  const limits = accepted.rateLimit
  const rateLimiter = limits?.requestsPerSecond === undefined
    ? undefined
    : yield* RateLimiter.make({ limit: limits.requestsPerSecond, interval: Duration.seconds(1) })
  const maxPause = Duration.decode(limits?.maxPause ?? defaultMaxPause)
  const requester = yield* makeTransport(http, {
    baseUrl: Either.getOrElse(checked, () => ""),
    timeout: Duration.decode(accepted.timeout ?? tuningDefaults.timeout),
    retry: accepted.retry ?? {},
    maxPause,
    maxResponseBytes: accepted.maxResponseBytes ?? tuningDefaults.maxResponseBytes,
    gate: yield* makeRateGate(maxPause),
    inFlight: yield* InFlight.make(limits?.maxInFlight ?? tuningDefaults.maxInFlight),
    perSecond: rateLimiter,
    transformClient: accepted.transformClient
  })
  return { checked, requester, accepted }
})

/** `POST /api/login`: the token, kept `Redacted`, and the user id. */
export const logIn = (
  requester: Transport,
  options: { readonly email: string; readonly password: Redacted.Redacted<string> }
) =>
  Effect.gen(function*() {
    const reply = yield* requester.sendJson(
      endpoints.login,
      { email: options.email, password: Redacted.value(options.password) },
      { credentials: undefined }
    )
    const body = yield* decodeLogin(reply.json, {
      endpoint: endpoints.login,
      attempt: reply.attempts,
      status: reply.status
    })
    const data = "data" in body ? body.data : body
    return { authToken: Redacted.make(data.authToken), userId: data.userId } satisfies Credentials
  }).pipe(Effect.withSpan("MicroappClient.login"))

/** The client over a session: how calls get their credentials, made once the sender exists. */
const makeWith = Effect.fnUntraced(function*<E>(
  tuning: MicroappClient.Tuning & { readonly baseUrl: string },
  makeSession: (requester: Transport, checked: Either.Either<string, InvalidInput>) => Effect.Effect<Session, E>
) {
  const { accepted, checked, requester } = yield* makeSender(tuning)
  const pageSize = accepted.pageSize ?? RowStream.defaults.pageSize
  const session = yield* makeSession(requester, checked)

  /** Runs a call with the current credentials; a 401 renews them once (when possible) and repeats. */
  const authorised = <A>(call: (credentials: Credentials) => Effect.Effect<A, RequestError>) =>
    Effect.flatMap(Either.isLeft(checked) ? Effect.fail(checked.left) : session.current, (current) =>
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
    call: MicroappClient.CallOptions | undefined,
    subject: { readonly rowID: string } | { readonly microAppID: string }
  ) =>
    authorised((credentials) =>
      requester.sendJson(endpoint, body, { credentials, timeout: call?.timeout, retry: call?.retry, subject })
    )

  const fetchPage = Effect.fn("MicroappClient.fetchPage")(function*(
    selection: CheckedSelection,
    window: { readonly skip: number; readonly limit: number },
    call: MicroappClient.CallOptions
  ) {
    yield* Effect.annotateCurrentSpan({ microAppID: selection.microAppID, skip: window.skip, limit: window.limit })
    const reply = yield* post(endpoints.rows, toRequestBody(selection, window), call, {
      microAppID: selection.microAppID
    })
    const body = yield* decodeRowsBody(reply.json, {
      endpoint: endpoints.rows,
      attempt: reply.attempts,
      status: reply.status
    })
    yield* Effect.annotateCurrentSpan({ rows: body.body.microAppRows.length, attempt: reply.attempts })
    return { rows: body.body.microAppRows, attempts: reply.attempts, status: reply.status }
  })

  const validateQuery = validate(Query.QueryOptions, endpoints.rows)
  const validateRows = validate(RowsOptionsSchema, endpoints.rows)
  const validateMax = validate(CollectMax, endpoints.rows)
  const validateRowID = validate(Query.Identifier, endpoints.row, "rowID")
  const validateUpdate = validate(UpdateOptionsSchema, endpoints.update)

  const toEffect = <A>(result: Either.Either<A, RequestError>): Effect.Effect<A, RequestError> =>
    Either.isLeft(result) ? Effect.fail(result.left) : Effect.succeed(result.right)

  // each run of the scan is a span of its own ("MicroappClient.scan"), covering the whole run
  const scanWith = <A>(decoder: RowDecoder<A>) =>
    Effect.fnUntraced(function*(options: MicroappClient.RowsOptions) {
      const valid = yield* validateRows(options)
      const selection = checkSelection(valid)
      const settings = Scan.settings({ ...valid, pageSize: valid.pageSize ?? pageSize }, {
        maxInFlight: accepted.rateLimit?.maxInFlight
      })
      const query = queryOf(selection, settings)
      const checkpoints = yield* Scan.checkpointing(options, query)
      return Scan.make<A>(
        {
          microAppID: selection.microAppID,
          path: endpoints.rows.path,
          query,
          fetch: (window) => fetchPage(selection, window, options),
          decode: (rows, indexes, answer) =>
            decoder(rows, indexes, { endpoint: endpoints.rows, attempt: answer.attempts, status: answer.status })
        },
        settings,
        checkpoints
      )
    })

  /**
   * The row `rowID` read and decoded with `decoder`; `NotFound` when the service says it does not
   * exist (`noSuchRow` when in its own words); `UnexpectedResponse` when it answers another row.
   */
  const readRow = <A>(decoder: RowDecoder<A>, rowID: string, options: MicroappClient.CallOptions | undefined) =>
    Effect.gen(function*() {
      const id = yield* validateRowID(rowID)
      yield* Effect.annotateCurrentSpan({ rowID: id })
      const reply = yield* post(endpoints.row, { rowID: id }, options, { rowID: id })
      const info = { endpoint: endpoints.row, attempt: reply.attempts, status: reply.status }
      // a success envelope without the row is a NotFound for callers, and proves nothing
      const notFound = (at: typeof info) =>
        new NotFound({
          method: "POST",
          path: endpoints.row.path,
          status: at.status,
          rowID: id,
          attempts: at.attempt,
          noSuchRow: false
        })
      yield* Effect.annotateCurrentSpan({ attempt: reply.attempts })
      const body = yield* decodeCurrentRow(reply.json, info)
      const current = body.body?.currentRow
      if (current === undefined || current === null) return yield* notFound(info)
      const answered = IdSet.idOf(current)
      if (answered !== id) {
        return yield* new UnexpectedResponse({
          ...where(info),
          status: info.status,
          kind: "Row",
          reason: answered === null
            ? "the row answered has no _id: it cannot be shown to be the row asked for"
            // a server's id may be of any length: a short prefix names it
            : `the row answered is ${
              JSON.stringify(answered.length > 64 ? `${answered.slice(0, 64)}...` : answered)
            }, not the row asked for`,
          rowID: id,
          fieldPath: "_id"
        })
      }
      const read = yield* toEffect(decoder([current], undefined, info))
      return { read, info, notFound }
    })

  const makeReader = <A, I, B>(schema: Schema.Schema<A, I>, contract: Contract<B>): MicroappClient.Reader<A | B> => {
    const decoder = pageDecoder(schemaStep(schema, true), contract)
    const scan = scanWith(decoder)

    const rows = (options: MicroappClient.RowsOptions) => Stream.unwrap(Effect.map(scan(options), (scan) => scan.rows))

    const collect = Effect.fn("MicroappClient.collect")(function*(options: MicroappClient.CollectOptions) {
      const { max } = yield* validateMax(options)
      const collected = yield* Stream.runCollect(Stream.take(rows(options), max + 1))
      if (collected.length > max) return yield* new TooManyRows({ microAppID: options.microAppID, max })
      return Array.from(collected)
    })

    const query = Effect.fn("MicroappClient.query")(function*(options: MicroappClient.QueryOptions) {
      const valid = yield* validateQuery(options)
      const limit = valid.limit ?? pageSize
      const page = yield* fetchPage(checkSelection(valid), { skip: valid.skip ?? 0, limit }, options)
      // a server that sends more than asked is cut to the promise: at most `limit` rows
      const kept = page.rows.length > limit ? page.rows.slice(0, limit) : page.rows
      if (kept !== page.rows) {
        yield* Effect.logWarning("the server sent more rows than the limit asked for: the rows past it are dropped")
          .pipe(
            Effect.annotateLogs({ limit, sent: page.rows.length })
          )
      }
      const decoded = yield* toEffect(
        decoder(kept, undefined, { endpoint: endpoints.rows, attempt: page.attempts, status: page.status })
      )
      yield* Effect.forEach(decoded.invalid, (error) => Effect.logWarning(error.message), { discard: true })
      return decoded.rows
    })

    const getRow = Effect.fn("MicroappClient.getRow")(function*(
      rowID: string,
      options?: MicroappClient.CallOptions
    ) {
      const { info, notFound, read } = yield* readRow(decoder, rowID, options)
      const [row] = read.rows
      // a single row that failed its Schema cannot be skipped: report it
      if (row === undefined) return yield* Effect.fail(read.invalid[0] ?? notFound(info))
      return row
    })

    const identified = identifiedBy(schemaStep(schema, false), contract)
    const changes = makePass(
      scanWith(identified),
      Effect.fn("MicroappClient.changes.read")(function*(rowID, options) {
        // set aside as its policy says, as the scan would set it aside
        return (yield* readRow(identified, rowID, options)).read.rows[0]
      })
    )

    return { rows, scan, collect, query, getRow, changes }
  }

  const queryRaw = Effect.fn("MicroappClient.queryRaw")(function*(options: MicroappClient.QueryOptions) {
    const valid = yield* validateQuery(options)
    const selection = checkSelection(valid)
    const window = { skip: valid.skip ?? 0, limit: valid.limit ?? pageSize }
    yield* Effect.annotateCurrentSpan({ microAppID: selection.microAppID, skip: window.skip, limit: window.limit })
    return yield* authorised((credentials) =>
      requester.send(
        endpoints.rows,
        toRequestBody(selection, window, true),
        { credentials, timeout: options.timeout, retry: options.retry },
        (reply) => Effect.succeed(reply.text)
      )
    )
  })

  const updateRow = Effect.fn("MicroappClient.updateRow")(function*(options: MicroappClient.UpdateOptions) {
    const valid = yield* validateUpdate(options)
    yield* Effect.annotateCurrentSpan({ rowID: valid.rowID })
    const reply = yield* post(endpoints.update, valid, options, { rowID: valid.rowID })
    yield* Effect.annotateCurrentSpan({ attempt: reply.attempts })
    yield* decodeStatus(reply.json, { endpoint: endpoints.update, attempt: reply.attempts, status: reply.status })
  })

  const untyped = makeReader<Row, typeof Row.Encoded, never>(Row, { policy: "fail" })

  const runUpdates = makeUpdateRows({ endpoint: endpoints.update, updateRow, getRow: untyped.getRow })
  const updateRows = <E, R>(
    updates: Stream.Stream<MicroappClient.UpdateOptions | InvalidInput, E, R>,
    options: BulkUpdate.Options = {}
  ) => runUpdates(updates, options, Effect.succeed)

  function withSchema<A, I>(
    schema: Schema.Schema<A, I>,
    options: { readonly invalidRows: "raw" }
  ): MicroappClient.Reader<A | InvalidRow>
  function withSchema<A, I>(
    schema: Schema.Schema<A, I>,
    options?: { readonly invalidRows?: "fail" | "skip" | undefined }
  ): MicroappClient.Reader<A>
  function withSchema<A, I>(
    schema: Schema.Schema<A, I>,
    options?: { readonly invalidRows?: InvalidRowPolicy | undefined }
  ): MicroappClient.Reader<A | InvalidRow> {
    return makeReader(schema, contractOf(options?.invalidRows ?? "fail"))
  }

  const service: MicroappClient.Service = { ...untyped, queryRaw, updateRow, updateRows, withSchema }
  return service
})

/** Where a call gets its credentials, and how they are renewed after a 401 (if they can be). */
interface Session {
  readonly current: Effect.Effect<{ readonly credentials: Credentials; readonly generation: number }>
  /** Renews the credentials of `generation`, unless that already happened. */
  readonly renew: ((generation: number) => Effect.Effect<void, RequestError>) | undefined
}

export const make = (
  options: MicroappClient.Options
): Effect.Effect<MicroappClient.Service, never, HttpClient.HttpClient | Scope.Scope> =>
  makeWith(options, () =>
    Effect.succeed<Session>({
      current: Effect.succeed({ credentials: { authToken: options.authToken, userId: options.userId }, generation: 0 }),
      renew: undefined
    }))

export const makeLogin = (
  options: MicroappClient.LoginOptions
): Effect.Effect<MicroappClient.Service, MicroappError, HttpClient.HttpClient | Scope.Scope> =>
  makeWith(options, (requester, checked) =>
    Effect.gen(function*() {
      if (Either.isLeft(checked)) return yield* checked.left
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

/** One login, its sender closed after. */
export const login = (
  options: MicroappClient.LoginOptions
): Effect.Effect<MicroappClient.Credentials, MicroappError, HttpClient.HttpClient> =>
  Effect.scoped(
    Effect.flatMap(makeSender(options), ({ checked, requester }) =>
      Either.isLeft(checked) ? Effect.fail(checked.left) : logIn(requester, options))
  )

/** The client configured by `Config` values: the credentials read (and refused as `ConfigError`s), then `make`. */
export const makeConfig = (
  options: MicroappClient.ConfigOptions
): Effect.Effect<MicroappClient.Service, ConfigError.ConfigError, HttpClient.HttpClient | Scope.Scope> => {
  const { authToken, baseUrl, userId, ...tuning } = options
  return Effect.flatMap(
    Config.all({
      // a base URL that would garble every request fails here, naming its variable
      baseUrl: Config.mapOrFail(
        baseUrl ?? Config.string("MICROAPP_BASE_URL"),
        (url) => Either.mapLeft(normaliseBaseUrl(url), (error) => ConfigError.InvalidData([], error.reason))
      ),
      // as is every credential no header can carry
      authToken: headerSafeConfig(
        // Config.redacted would redact its own "missing" message too; a string config never shows its value
        authToken ?? Config.map(Config.string("MICROAPP_AUTH_TOKEN"), Redacted.make),
        "authToken",
        Redacted.value
      ),
      userId: headerSafeConfig(userId ?? Config.string("MICROAPP_USER_ID"), "userId", String)
    }),
    (credentials) => make({ ...tuning, ...credentials })
  )
}
