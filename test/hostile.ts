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
