/**
 * A local emulator of the Microapp Data Service on a real socket, with controls for tests:
 * rows, settings, the request log, a request hook, faults and token expiry.
 *
 * @since 0.1.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Headers from "@effect/platform/Headers"
import type * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import type { Scope } from "effect"
import { Context, Effect, Layer, Redacted } from "effect"
import * as Http from "node:http"
import { MicroappClient } from "../MicroappClient.js"
import { makeApp } from "./internal/app.js"
import { churn, type ChurnOptions } from "./internal/churn.js"
import * as MicroappState from "./MicroappState.js"

/**
 * @since 0.1.0
 */
export declare namespace MicroappServer {
  /**
   * @since 0.1.0
   * @category models
   */
  export interface Options extends MicroappState.Options {
    /** Default 0: an ephemeral port. */
    readonly port?: number | undefined
    /** Default "127.0.0.1". */
    readonly host?: string | undefined
    /** Rows inserted, updated and deleted all along while the server runs; default none. */
    readonly churn?: ChurnOptions | undefined
  }

  /**
   * @since 0.1.0
   * @category models
   */
  export interface Service extends MicroappState.MicroappState {
    /** e.g. `http://127.0.0.1:43121`, without a trailing slash. */
    readonly baseUrl: string
  }
}

/** Headers that carry credentials: `authorization` is Effect's default already. */
const redactedHeaderNames = ["authorization", "x-auth-token"]

// Closing waits for open connections; a hanging request or an idle keep-alive socket would hold it forever.
const closeNow = (server: Http.Server): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    server.close(() => resume(Effect.void))
    server.closeAllConnections()
  })

/**
 * Starts the emulator on a Node HTTP server; closing the scope closes the server and every
 * connection at once, hanging requests included.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: MicroappServer.Options = {}
): Effect.Effect<MicroappServer.Service, HttpServerError.ServeError, Scope.Scope> =>
  Effect.gen(function*() {
    const state = yield* MicroappState.make(options)
    const host = options.host ?? "127.0.0.1"
    const nodeServer = Http.createServer()
    const server = yield* NodeHttpServer.make(() => nodeServer, { host, port: options.port ?? 0 })
    // Added after the server's own finalizer, so it runs first.
    yield* Effect.addFinalizer(() => closeNow(nodeServer))
    // the request fibers inherit it: their spans show these headers as "<redacted>"
    yield* Effect.locallyWith(
      server.serve(makeApp(state)),
      Headers.currentRedactedNames,
      (names) => [...names, ...redactedHeaderNames]
    )
    if (options.churn !== undefined) yield* Effect.forkScoped(churn(state.rows, options.churn))
    const address = server.address
    const baseUrl = address._tag === "TcpAddress" ? `http://${host}:${address.port}` : `http://${host}`
    return { ...state, baseUrl }
  })

/**
 * The running emulator.
 *
 * @example
 * ```ts
 * Effect.gen(function*() {
 *   const server = yield* MicroappServer
 *   yield* server.faults.inject("http503Html", { count: 2 })
 * }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 5000 })))
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class MicroappServer extends Context.Tag("effect-microapp/testing/MicroappServer")<
  MicroappServer,
  MicroappServer.Service
>() {
  /**
   * @since 0.1.0
   */
  static readonly make = make

  /**
   * The emulator on 127.0.0.1 (port 0 by default: read `baseUrl`).
   *
   * @since 0.1.0
   */
  static readonly layer = (
    options: MicroappServer.Options = {}
  ): Layer.Layer<MicroappServer, HttpServerError.ServeError> => Layer.scoped(MicroappServer, make(options))

  /**
   * The emulator and a `MicroappClient` of it, logged in as its first user; the transport is
   * the caller's (`NodeHttpClient.layerUndici`, `FetchHttpClient.layer`).
   *
   * @since 0.1.0
   */
  static readonly layerWithClient = (
    options: MicroappServer.Options = {},
    client: MicroappClient.Tuning = {}
  ): Layer.Layer<MicroappServer | MicroappClient, HttpServerError.ServeError, HttpClient.HttpClient> =>
    Layer.unwrapEffect(
      Effect.map(MicroappServer, (server) =>
        MicroappClient.layer({
          ...client,
          baseUrl: server.baseUrl,
          authToken: Redacted.make(server.credentials.authToken),
          userId: server.credentials.userId
        }))
    ).pipe(Layer.provideMerge(MicroappServer.layer(options)))
}
