/**
 * The emulator as an `HttpApp`: the endpoints of the Microapp Data Service over a
 * `MicroappState`, wrapped in request logging, authentication, the request hook, latency and
 * faults. Serve it with any Node HTTP server (see `MicroappServer`).
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
// deep imports: the package root loads every Node module of the platform
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Clock, Context, Duration, Effect, Either, identity, Option, ParseResult, Schema } from "effect"
import type * as Http from "node:http"
import { declaredLength, decodeChunks, readUpTo } from "../../internal/http/body.js"
import type { Arrival, Lag, MicroappState } from "../MicroappState.js"
import type { Fault } from "./fault.js"
import type { Row } from "./table.js"

/** What the routes need to know about the request beyond the platform request. */
class Call extends Context.Tag("effect-microapp/testing/internal/app/Call")<Call, {
  readonly text: string
  readonly userId: Option.Option<string>
}>() {}

const reply = (status: number, body: unknown): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(body, { status })

const errorReply = (status: number, message: string): HttpServerResponse.HttpServerResponse =>
  reply(status, { status: "error", message })

const unauthorized = errorReply(401, "You must be logged in to do this.")
const rowNotFound = errorReply(404, "Row not found")
const microappNotFound = errorReply(404, "Microapp not found")
// what the service's REST framework (Restivus) answers for a path it does not serve
const notFound = errorReply(404, "API endpoint does not exist")
const forbidden = errorReply(403, "You do not have permission to change rows of this Microapp.")

// --- request bodies ------------------------------------------------------------------------------

/**
 * The bounds of what a request may send, each far above what the service's clients send (a
 * Microapp has a few dozen fields at most); past one the answer is a 400 that names it, so that
 * no request makes the emulator work more than linearly in the table, or keep a value it cannot
 * serialize again. The body itself is bounded by `maxRequestBytes` (413).
 */
export const inputBounds = {
  /** Characters of an id: microAppID, rowID, resourceID, fieldID, embeddingRowID, userID. */
  idLength: 256,
  /** Characters of any other string: email, password, a filter value. */
  textLength: 4096,
  /** Elements of `optSearchFilters`. */
  filters: 256,
  /** Elements of `searchFilter` (sort fields with skip and limit). */
  sortElements: 64,
  /** Keys of the `rowData` of an update or an insert. */
  rowDataKeys: 256,
  /** Nesting of a value in `rowData` (objects and arrays). */
  valueDepth: 32,
  /** skip, limit and a sort field number. */
  count: Number.MAX_SAFE_INTEGER
} as const

const bounded = (what: string, max: number) => ({ message: () => `${what} longer than ${max} characters` })

const Id = Schema.String.pipe(Schema.maxLength(inputBounds.idLength, bounded("id", inputBounds.idLength)))
const NonEmptyId = Id.pipe(Schema.minLength(1))
const Text = Schema.String.pipe(Schema.maxLength(inputBounds.textLength, bounded("text", inputBounds.textLength)))

const atMost = (what: string, max: number) => ({ message: () => `more than ${max} ${what}` })

const DigitString = Schema.String.pipe(Schema.pattern(/^[0-9]{1,16}$/))
const NumberFromDigits = Schema.compose(DigitString, Schema.NumberFromString)
const aboveCount = { message: () => `a number above ${inputBounds.count}` }
// The seed sends skip as a numeric string, newer clients send numbers: both are accepted.
const Count = Schema.Union(Schema.NonNegativeInt, NumberFromDigits).pipe(
  Schema.lessThanOrEqualTo(inputBounds.count, aboveCount)
)
const SortField = Schema.Union(NumberFromDigits, Schema.Int).pipe(
  Schema.lessThanOrEqualTo(inputBounds.count, aboveCount)
)

// The official client sends null for every optional field its caller left out: null is absent.
const optionalOrNull = <S extends Schema.Schema.Any>(schema: S) =>
  Schema.optionalWith(schema, { exact: true, nullable: true })

const LoginBody = Schema.Struct({ email: Text, password: Text })

const FilterBody = Schema.Struct({
  resourceID: optionalOrNull(Id),
  fieldID: Id,
  value: Schema.Union(Text, Schema.Number, Schema.Boolean)
})

const SortPagingBody = Schema.Struct({
  resourceID: optionalOrNull(Id),
  field: optionalOrNull(SortField),
  order: optionalOrNull(Schema.Literal(1, -1)),
  skip: optionalOrNull(Count),
  limit: optionalOrNull(Count)
})

const MicroappDataBody = Schema.Struct({
  microAppID: NonEmptyId,
  optSearchFilters: optionalOrNull(
    Schema.Array(FilterBody).pipe(Schema.maxItems(inputBounds.filters, atMost("filters", inputBounds.filters)))
  ),
  searchFilter: optionalOrNull(
    Schema.Array(SortPagingBody).pipe(
      Schema.maxItems(inputBounds.sortElements, atMost("sort elements", inputBounds.sortElements))
    )
  ),
  serviceFormat: optionalOrNull(Schema.Boolean),
  // Documented features of the real service that the emulator refuses (see `notEmulated`).
  optViewFilters: optionalOrNull(Schema.Unknown),
  optViewSort: optionalOrNull(Schema.Unknown),
  optLimit: optionalOrNull(Schema.Unknown),
  optIsVectorSearch: optionalOrNull(Schema.Boolean),
  // Only read by the real service when optIsVectorSearch is true, which is refused: harmless here.
  optVectorSearchString: optionalOrNull(Schema.String)
})

// Answering these with unfiltered rows would make a test pass that the real service fails.
const notEmulated = (body: typeof MicroappDataBody.Type): ReadonlyArray<string> => [
  ...(body.optViewFilters === undefined ? [] : ["optViewFilters"]),
  ...(body.optViewSort === undefined ? [] : ["optViewSort"]),
  ...(body.optLimit === undefined ? [] : ["optLimit"]),
  ...(body.optIsVectorSearch === true ? ["optIsVectorSearch"] : [])
]

const RowBody = Schema.Struct({ rowID: NonEmptyId })

/** Whether `value` nests objects and arrays no deeper than `depth`; stops at the first level past it. */
const nestsWithin = (value: unknown, depth: number): boolean => {
  if (typeof value !== "object" || value === null) return true
  if (depth === 0) return false
  return Object.values(value).every((item) => nestsWithin(item, depth - 1))
}

/**
 * Where a body nests deeper than a row value may (the first key at fault, or the body itself), checked
 * before the body's Schema: its parser and its messages recurse, and would echo the whole value.
 */
const tooDeep = (body: unknown): string | undefined => {
  if (typeof body !== "object" || body === null) return undefined
  const deep = (value: unknown) => !nestsWithin(value, inputBounds.valueDepth + 1)
  if (Array.isArray(body)) return deep(body) ? "" : undefined
  return Object.keys(body).find((key) => deep((body as Record<string, unknown>)[key]))
}

const RowData = Schema.Record({ key: Schema.String, value: Schema.Unknown }).pipe(
  Schema.filter((rowData) =>
    Object.keys(rowData).length <= inputBounds.rowDataKeys || `more than ${inputBounds.rowDataKeys} keys`
  )
)

const UpdateBody = Schema.Struct({
  rowID: NonEmptyId,
  rowData: RowData,
  embeddingRowID: optionalOrNull(Id),
  userID: optionalOrNull(Id),
  // The emulator has no action rules, so skipping them changes nothing.
  ignoreActionRules: optionalOrNull(Schema.Boolean)
})

const InsertBody = Schema.Struct({ microAppID: NonEmptyId, rowData: RowData })

const describeParseError = (error: ParseResult.ParseError): string => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  if (issue === undefined) return "Invalid request body"
  if (issue._tag === "Unexpected") return `Invalid request body: unknown key ${issue.path.join(".")}`
  return issue.path.length === 0
    ? `Invalid request body: ${issue.message}`
    : `Invalid request body: ${issue.path.join(".")}: ${issue.message}`
}

const parseJson = Schema.decodeUnknownEither(Schema.parseJson())
const refuse = (error: ParseResult.ParseError) => errorReply(400, describeParseError(error))

/**
 * A body's decoder, built once a Schema, and synchronous: none of its work waits. A key it does not
 * know is refused: ignored, a misplaced one (`skip` beside `microAppID` rather than in
 * `searchFilter`) would answer as if the request had been understood.
 */
const decodeBody = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema, { onExcessProperty: "error" })
  return (text: string): Either.Either<A, HttpServerResponse.HttpServerResponse> =>
    Either.flatMap(Either.mapLeft(parseJson(text), refuse), (json) => {
      const key = tooDeep(json)
      return key === undefined
        ? Either.mapLeft(decode(json), refuse)
        : Either.left(errorReply(
          400,
          `Invalid request body: ${
            key === "" ? "" : `${key}: `
          }a value nested deeper than ${inputBounds.valueDepth} levels`
        ))
    })
}

const decodeLogin = decodeBody(LoginBody)
const decodeMicroappData = decodeBody(MicroappDataBody)
const decodeRow = decodeBody(RowBody)
const decodeUpdate = decodeBody(UpdateBody)
const decodeInsert = decodeBody(InsertBody)

// --- routes --------------------------------------------------------------------------------------

type Handler = Effect.Effect<HttpServerResponse.HttpServerResponse, HttpServerResponse.HttpServerResponse, Call>

const answered = (handler: Handler) => Effect.merge(handler)

// Authentication comes before any look at the body.
const withUser = (handle: (userId: string, text: string) => Handler) =>
  answered(Effect.flatMap(Call, (call) =>
    Option.match(call.userId, {
      onNone: () => Effect.fail(unauthorized),
      onSome: (userId) => handle(userId, call.text)
    })))

const makeRoutes = (state: MicroappState) => {
  // which row of `lag.every` an answer leaves out moves on with each answer
  let answers = 0
  const lagged = (rows: ReadonlyArray<Row>, lag: Lag | undefined): ReadonlyArray<Row> => {
    if (lag === undefined) return rows
    const hidden = new Set(lag.ids ?? [])
    const every = lag.every ?? 0
    const left = every > 0 ? answers++ % every : -1
    return rows.filter((row, i) => !hidden.has(String(row["_id"])) && (every === 0 || i % every !== left))
  }
  // A read-only user is refused before the body is looked at, like an unauthenticated one.
  const withWriter = (handle: (userId: string, text: string) => Handler) =>
    withUser((userId, text) =>
      Effect.flatMap(
        state.sessions.canWrite(userId),
        (allowed) => allowed ? handle(userId, text) : Effect.fail(forbidden)
      )
    )

  const login = answered(Effect.gen(function*() {
    const call = yield* Call
    const body = yield* decodeLogin(call.text)
    const session = yield* state.sessions.login(body.email, body.password)
    if (Option.isNone(session)) return yield* Effect.fail(errorReply(401, "Unauthorized"))
    const settings = yield* state.settings
    return settings.loginShape === "flat"
      ? reply(200, { status: "success", ...session.value })
      : reply(200, { status: "success", data: session.value })
  }))

  const microappData = withUser((_, text) =>
    Effect.gen(function*() {
      const body = yield* decodeMicroappData(text)
      const refused = notEmulated(body)
      if (refused.length > 0) {
        const verb = refused.length === 1 ? "is" : "are"
        return yield* Effect.fail(errorReply(400, `${refused.join(", ")} ${verb} not emulated by this emulator`))
      }
      const result = yield* state.rows.query({
        microAppID: body.microAppID,
        filters: body.optSearchFilters ?? [],
        sortPaging: body.searchFilter ?? []
      }, yield* state.settings)
      if (Either.isLeft(result)) return yield* Effect.fail(errorReply(result.left.status, result.left.message))
      const rows = lagged(result.right, (yield* state.settings).lag)
      // Raw output is deliberately not one JSON document: one serialized row per line.
      return body.serviceFormat === true
        ? HttpServerResponse.text(rows.map((row) => JSON.stringify(row)).join("\n"), {
          contentType: "text/plain; charset=utf-8"
        })
        : reply(200, { status: "success", body: { microAppRows: rows } })
    })
  )

  const row = withUser((_, text) =>
    Effect.gen(function*() {
      const body = yield* decodeRow(text)
      const found = yield* state.rows.getRow(body.rowID)
      if (Option.isNone(found)) return yield* Effect.fail(rowNotFound)
      return reply(200, { status: "success", body: { currentRow: found.value } })
    })
  )

  const update = withWriter((_, text) =>
    Effect.gen(function*() {
      const body = yield* decodeUpdate(text)
      const outcome = yield* state.rows.updateRow(body.rowID, body.rowData, {
        embeddingRowID: body.embeddingRowID,
        userID: body.userID
      })
      switch (outcome) {
        case "notFound":
          return yield* Effect.fail(rowNotFound)
        case "locked":
          // An application-level refusal: HTTP 200 with status "error".
          return reply(200, { status: "error", message: "Row is locked" })
        case "updated":
          return reply(200, { status: "success" })
      }
    })
  )

  const insert = withWriter((userId, text) =>
    Effect.gen(function*() {
      const body = yield* decodeInsert(text)
      const inserted = yield* state.rows.tryInsertRow(body.microAppID, body.rowData, userId)
      if (Option.isNone(inserted)) return yield* Effect.fail(microappNotFound)
      return reply(200, { status: "success", body: { rowID: inserted.value["_id"] } })
    })
  )

  const remove = withWriter((_, text) =>
    Effect.gen(function*() {
      const body = yield* decodeRow(text)
      const removed = yield* state.rows.removeRow(body.rowID)
      return removed ? reply(200, { status: "success" }) : yield* Effect.fail(rowNotFound)
    })
  )

  return HttpRouter.empty.pipe(
    HttpRouter.post("/api/login", login),
    HttpRouter.post("/api/microappdata", microappData),
    HttpRouter.post("/api/microappdata/row", row),
    HttpRouter.post("/api/updatemicroapprow", update),
    HttpRouter.post("/api/insertmicroapprow", insert),
    HttpRouter.post("/api/removemicroapprow", remove)
  ).pipe(Effect.catchTag("RouteNotFound", () => Effect.succeed(notFound)))
}

// --- faults --------------------------------------------------------------------------------------

const serviceUnavailableHtml = "<html><head><title>503 Service Temporarily Unavailable</title></head>" +
  "<body><center><h1>503 Service Temporarily Unavailable</h1></center></body></html>"

// A proper prefix of a JSON object is never valid JSON, so cutting the answer in half breaks it.
const truncate = (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse => {
  const bytes = response.body._tag === "Uint8Array"
    ? response.body.body
    : new TextEncoder().encode("{\"status\":\"success\"}")
  return HttpServerResponse.uint8Array(bytes.slice(0, Math.max(1, Math.floor(bytes.length / 2))), {
    status: 200,
    contentType: "application/json"
  })
}

const destroySocket = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
  Effect.sync(() => {
    NodeHttpServerRequest.toIncomingMessage(request).socket.destroy()
  }))

/**
 * The most bytes of a request body read: no request of the service comes near it.
 */
export const maxRequestBytes = 1024 * 1024

// the connection closes after it, so that the rest of an oversized body is never read
const payloadTooLarge = HttpServerResponse.unsafeJson(
  { status: "error", message: `Request body larger than ${maxRequestBytes} bytes` },
  { status: 413, headers: { connection: "close" } }
)

/** How long a connection refused 413 stays half-closed for its client to read the answer. */
const lingerMillis = 2_000

/**
 * Closes the connection of a 413 as servers linger: the answer, then an end of the stream, and
 * the socket itself only once the client closed or `lingerMillis` passed, reading nothing more.
 * Node would destroy it at once, with the body's rest unread: that is a TCP reset, which may
 * discard the answer before a busy client reads it.
 */
const lingeringClose = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.sync(() => {
    const socket = NodeHttpServerRequest.toIncomingMessage(request).socket
    socket.destroySoon = () => {
      socket.pause()
      socket.end()
      setTimeout(() => socket.destroy(), lingerMillis).unref()
    }
  })

/**
 * A body whose declared length is within `maxRequestBytes`, read whole as its chunks arrive (Node's
 * parser stops at that length): cheaper than a stream of it, which every request would pay for.
 * Fails when the request ends without its body (an abort, a closed connection).
 */
const readDeclared = (message: Http.IncomingMessage): Effect.Effect<string, Error> =>
  Effect.async<string, Error>((resume) => {
    const chunks: Array<Uint8Array> = []
    let bytes = 0
    const onData = (chunk: Uint8Array) => {
      chunks.push(chunk)
      bytes += chunk.length
    }
    const onEnd = () => resume(Effect.succeed(decodeChunks(chunks, bytes)))
    const onError = (error: Error) => resume(Effect.fail(error))
    const onClose = () => resume(Effect.fail(new Error("request closed before its body ended")))
    message.on("data", onData)
    message.once("end", onEnd)
    message.once("error", onError)
    message.once("close", onClose)
    return Effect.sync(() => {
      message.off("data", onData)
      message.off("end", onEnd)
      message.off("error", onError)
      message.off("close", onClose)
    })
  })

/**
 * The request's body, read up to `maxRequestBytes`; `undefined` past them (or when its declared
 * length is). The Node request is left open when the read stops (the platform's reader would
 * destroy it, and the socket with it), so that the 413 can be sent.
 */
const readRequestBody = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<string | undefined> => {
  const declared = declaredLength(request.headers)
  const message = NodeHttpServerRequest.toIncomingMessage(request)
  const read = declared !== undefined && declared <= maxRequestBytes
    ? readDeclared(message)
    : Effect.map(
      readUpTo(NodeStream.fromReadable(() => message, identity, { closeOnDone: false }), maxRequestBytes, declared),
      (body) => body.complete ? body.text : undefined
    )
  return Effect.orElseSucceed(read, () => "")
}

const pathOf = (url: string): string => {
  const query = url.indexOf("?")
  return query < 0 ? url : url.slice(0, query)
}

/**
 * The emulator app over a state. It needs a Node HTTP server underneath (dropped connections
 * destroy the Node socket).
 */
export const makeApp = (state: MicroappState): HttpApp.Default => {
  const routes = makeRoutes(state)

  const route = (call: Context.Tag.Service<Call>) => Effect.provideService(routes, Call, call)

  const answerFault = (
    arrival: Arrival,
    fault: Fault,
    call: Context.Tag.Service<Call>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest> =>
    Effect.gen(function*() {
      switch (fault.kind) {
        case "http500":
        case "http500AfterApply":
          if (fault.kind === "http500AfterApply") yield* route(call)
          yield* arrival.complete({ status: 500 })
          return errorReply(500, "Internal server error")
        case "http503Html":
          yield* arrival.complete({ status: 503 })
          return HttpServerResponse.text(serviceUnavailableHtml, {
            status: 503,
            contentType: "text/html; charset=utf-8"
          })
        case "http408":
          yield* arrival.complete({ status: 408 })
          return errorReply(408, "Request timeout")
        case "http503":
        case "http429": {
          const status = fault.kind === "http429" ? 429 : 503
          const now = yield* Clock.currentTimeMillis
          const seconds = fault.retryAfterSeconds
          // An HTTP date has whole seconds: round up so the client never comes back early.
          const until = fault.retryAfterAsDate ? Math.ceil((now + seconds * 1000) / 1000) * 1000 : now + seconds * 1000
          const retryAfter = fault.retryAfterAsDate ? new Date(until).toUTCString() : String(seconds)
          yield* arrival.complete({ status, retryAfterUntil: until })
          return HttpServerResponse.unsafeJson(
            { status: "error", message: status === 429 ? "Too many requests" : "Service unavailable" },
            { status, headers: { "retry-after": retryAfter } }
          )
        }
        case "drop":
          yield* arrival.complete({ outcome: "dropped" })
          yield* destroySocket
          return yield* Effect.never
        case "dropAfterApply":
          yield* route(call)
          yield* arrival.complete({ outcome: "dropped" })
          yield* destroySocket
          return yield* Effect.never
        case "hang":
          // Interrupted when the client goes away or the server closes its connections.
          return yield* Effect.never
        case "malformedJson": {
          const response = yield* route(call)
          yield* arrival.complete({ status: 200 })
          return truncate(response)
        }
      }
    })

  const handle = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const path = pathOf(request.url)
    const text = yield* readRequestBody(request)
    if (text === undefined) return yield* Effect.as(lingeringClose(request), payloadTooLarge)
    const authToken = request.headers["x-auth-token"]
    const headerUserId = request.headers["x-user-id"]
    const userId = authToken === undefined || headerUserId === undefined
      ? Option.none<string>()
      : yield* state.sessions.authenticate(authToken, headerUserId)
    const call = { text, userId }
    const respond = (arrival: Arrival) =>
      Effect.gen(function*() {
        const hook = yield* state.log.hook
        if (Option.isSome(hook)) yield* hook.value(arrival.record)
        if (Duration.greaterThan(arrival.latency, Duration.zero)) yield* Effect.sleep(arrival.latency)
        if (arrival.fault !== undefined) return yield* answerFault(arrival, arrival.fault, call)
        const response = yield* route(call)
        yield* arrival.complete({ status: response.status })
        return response
      })
    // Logged and counted in flight atomically with the finalizers that settle the record.
    return yield* Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(
        state.begin({ method: request.method, path, body: text, authorized: Option.isSome(userId) }),
        (arrival) =>
          restore(respond(arrival)).pipe(
            Effect.onInterrupt(() => arrival.abandon),
            Effect.ensuring(arrival.end)
          )
      )
    )
  })

  // The platform runs apps uninterruptibly; a hang or a slow answer must yield to a client abort.
  return Effect.interruptible(handle)
}
