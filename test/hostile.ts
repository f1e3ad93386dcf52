/**
 * Servers that misbehave on purpose, on an ephemeral port: each answers with the app it is given
 * and records every request it saw (method, path, headers), and the bytes of the bodies it wrote.
 */
import { NodeHttpClient } from "@effect/platform-node"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Layer, Redacted, Ref, type Scope, Stream } from "effect"
import * as Http from "node:http"
import { MicroappClient } from "../src/index.js"
import { eventually } from "./support/eventually.js"

/** One request as the server saw it. */
export interface Seen {
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
}

export interface HostileServer {
  readonly baseUrl: string
  readonly seen: Effect.Effect<ReadonlyArray<Seen>>
  /** Bytes of response bodies written so far by `endless` streams. */
  readonly written: Effect.Effect<number>
  /** `endless` streams that stopped: their connection closed, or their answer cut. */
  readonly ended: Effect.Effect<number>
  /** An endless body: `head`, then `item` again and again, counted into `written` as it goes. */
  readonly endless: (head: string, item: string) => Stream.Stream<Uint8Array>
}

/** Starts a server whose every request is answered by `answer`. */
export const hostileServer = (
  answer: (
    request: HttpServerRequest.HttpServerRequest,
    server: HostileServer
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
): Effect.Effect<HostileServer, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const seen = yield* Ref.make<ReadonlyArray<Seen>>([])
    const written = yield* Ref.make(0)
    const ended = yield* Ref.make(0)
    const nodeServer = Http.createServer()
    const server = yield* NodeHttpServer.make(() => nodeServer, { host: "127.0.0.1", port: 0 })
    // endless answers hold their connections: close them all at once
    yield* Effect.addFinalizer(() => Effect.sync(() => nodeServer.closeAllConnections()))
    const address = server.address
    const encoder = new TextEncoder()
    const hostile: HostileServer = {
      baseUrl: address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "http://127.0.0.1",
      seen: Ref.get(seen),
      written: Ref.get(written),
      ended: Ref.get(ended),
      endless: (head, item) => {
        const chunk = encoder.encode(item.repeat(Math.max(1, Math.floor(16_384 / item.length))))
        return Stream.concat(Stream.make(encoder.encode(head)), Stream.repeatValue(chunk)).pipe(
          Stream.tap((bytes) => Ref.update(written, (n) => n + bytes.length)),
          Stream.ensuring(Ref.update(ended, (n) => n + 1))
        )
      }
    }
    yield* server.serve(
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        yield* Ref.update(
          seen,
          (log) => [...log, { method: request.method, path: request.url, headers: request.headers }]
        )
        return yield* answer(request, hostile)
      }).pipe(Effect.interruptible)
    )
    return hostile
  })

/** Waits (in real time) until `server`'s endless answer has stopped; the bytes it wrote. */
export const writtenInAll = (server: HostileServer) =>
  Effect.zipRight(eventually(server.ended, (ended) => ended > 0), server.written)

/** A success answer with these rows. */
export const rowsAnswer = (rows: ReadonlyArray<{ readonly _id: string }>) =>
  HttpServerResponse.unsafeJson({ status: "success", body: { microAppRows: rows } })

/** `count` plain rows with ids of the service's shape. */
export const plainRows = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ _id: (0x20000000 + i).toString(16).padStart(24, "0"), N: i }))

/** The two transports the README offers. */
export const transports: ReadonlyArray<readonly [string, Layer.Layer<HttpClient.HttpClient>]> = [
  ["undici", NodeHttpClient.layerUndici],
  ["fetch", FetchHttpClient.layer]
]

export const secretToken = "secret-token-0001"
export const secretUser = "user-secret-0001"

/** A client of `baseUrl` over `transport`, with a token and user id a test can look for. */
export const clientOf = (
  baseUrl: string,
  transport: Layer.Layer<HttpClient.HttpClient>,
  tuning: MicroappClient.Tuning = {}
) =>
  MicroappClient.layer({ ...tuning, baseUrl, authToken: Redacted.make(secretToken), userId: secretUser }).pipe(
    Layer.provide(transport)
  )

/** A row as a lying service holds it. */
export type ServiceRow = { readonly _id: string } & Readonly<Record<string, unknown>>

/**
 * A service over `rows` that lies as the test says: `listed` makes the listing (by default, every
 * row), paged by the request's `skip` and `limit`; `answer` makes the row endpoint's answer (by
 * default, the truth: the row, or the service's 404 `Row not found`). Any other path is answered
 * as the service answers a path it does not serve.
 */
export interface LyingService {
  rows: ReadonlyArray<ServiceRow>
  listed: (rows: ReadonlyArray<ServiceRow>) => ReadonlyArray<ServiceRow>
  answer: (rowID: string, rows: ReadonlyArray<ServiceRow>) => HttpServerResponse.HttpServerResponse
}

/** The service's own answer for a row it does not hold. */
export const rowNotFound = () =>
  HttpServerResponse.unsafeJson({ status: "error", message: "Row not found" }, { status: 404 })

/** The service's answer for a path it does not serve. */
export const noSuchEndpoint = () =>
  HttpServerResponse.unsafeJson({ status: "error", message: "API endpoint does not exist" }, { status: 404 })

/** The row endpoint's truthful answer for `rowID`. */
export const truthfully = (rowID: string, rows: ReadonlyArray<ServiceRow>) => {
  const row = rows.find((candidate) => candidate._id === rowID)
  return row === undefined
    ? rowNotFound()
    : HttpServerResponse.unsafeJson({ status: "success", body: { currentRow: row } })
}

/** Answers of the row endpoint that do not prove a row missing, whatever the row: none may delete. */
export const unprovenAnswers: ReadonlyArray<readonly [string, () => HttpServerResponse.HttpServerResponse]> = [
  [
    "a proxy's HTML 404 page",
    () =>
      HttpServerResponse.text(
        "<html><head><title>404 Not Found</title></head><body><center><h1>404 Not Found</h1></center>" +
          "<hr><center>nginx</center></body></html>",
        { status: 404, contentType: "text/html" }
      )
  ],
  ["404 API endpoint does not exist", noSuchEndpoint],
  [
    "404 {\"error\":{\"code\":\"OVERLOADED\"}}",
    () => HttpServerResponse.unsafeJson({ error: { code: "OVERLOADED" } }, { status: 404 })
  ],
  ["404 with an empty body", () => HttpServerResponse.empty({ status: 404 })],
  ["200 {\"status\":\"success\",\"body\":{}}", () => HttpServerResponse.unsafeJson({ status: "success", body: {} })],
  ["200 with currentRow null", () => HttpServerResponse.unsafeJson({ status: "success", body: { currentRow: null } })],
  ["200 {\"status\":\"success\"}", () => HttpServerResponse.unsafeJson({ status: "success" })]
]

/** Where a listing request starts and how many rows it asks for. */
const windowOf = (body: unknown): { readonly skip: number; readonly limit: number } => {
  const window = (body as { readonly searchFilter?: ReadonlyArray<{ skip?: unknown; limit?: unknown }> } | null)
    ?.searchFilter?.[0]
  return { skip: Number(window?.skip ?? 0), limit: Number(window?.limit ?? 1000) }
}

/** Serves `service` (a value the test changes between passes) on an ephemeral port. */
export const lyingServer = (service: LyingService) =>
  hostileServer((request) =>
    Effect.map(Effect.orDie(request.json), (body) => {
      const path = request.url.replace(/\?.*$/, "")
      if (path === "/api/microappdata") {
        const { limit, skip } = windowOf(body)
        return rowsAnswer(service.listed(service.rows).slice(skip, skip + limit))
      }
      if (path === "/api/microappdata/row") {
        return service.answer(String((body as { readonly rowID?: unknown }).rowID), service.rows)
      }
      return noSuchEndpoint()
    })
  )

/** A lying service over `plainRows(count)`, truthful until the test says otherwise. */
export const truthfulService = (count: number): LyingService => ({
  rows: plainRows(count),
  listed: (rows) => rows,
  answer: truthfully
})
