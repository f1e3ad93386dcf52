/**
 * A local emulator of the Microapp Data Service on a real socket, with controls for tests:
 * rows, settings, the request log, a request hook, faults and token expiry.
 *
 * @since 0.1.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import type { Scope } from "effect"
import { Context, Effect, Layer, Redacted } from "effect"
import * as Http from "node:http"
import { MicroappClient } from "../MicroappClient.js"
import { makeApp } from "./App.js"
import type { Credentials } from "./DemoData.js"
import type { FaultKind, InjectOptions } from "./Fault.js"
import * as MicroappState from "./MicroappState.js"
import type { Row } from "./Table.js"

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
  }

  /**
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** e.g. `http://127.0.0.1:43121`, without a trailing slash. */
    readonly baseUrl: string
    /** The first user (the demo user by default) with its initial token. */
    readonly credentials: Credentials
    /** The state behind the server, for anything the shortcuts below do not cover. */
    readonly state: MicroappState.MicroappState
    /** Current rows in natural order. */
    readonly table: (microAppID: string) => Effect.Effect<ReadonlyArray<Row>>
    /** Inserts a new row (metadata generated) at the end, or before position `index`. */
    readonly insertRow: (
      microAppID: string,
      rowData: Row,
      options?: { readonly index?: number | undefined }
    ) => Effect.Effect<Row>
    readonly removeRow: (rowID: string) => Effect.Effect<boolean>
    /** Update semantics of `/api/updatemicroapprow`, applied directly. */
    readonly updateRow: (rowID: string, rowData: Row) => Effect.Effect<MicroappState.UpdateOutcome>
    /** How many updates each row has had applied, through the endpoint or `updateRow`. */
    readonly appliedUpdates: Effect.Effect<ReadonlyMap<string, number>>
    readonly setRows: (microAppID: string, rows: ReadonlyArray<Row>) => Effect.Effect<void>
    readonly configure: (patch: MicroappState.SettingsPatch) => Effect.Effect<void>
    /** A snapshot of the request log. */
    readonly requests: Effect.Effect<ReadonlyArray<MicroappState.RequestRecord>>
    readonly clearRequests: Effect.Effect<void>
    /** Runs after each request is logged and authenticated, before it is answered. */
    readonly onRequest: (hook: MicroappState.RequestHook) => Effect.Effect<void>
    readonly clearHook: Effect.Effect<void>
    /** The next `count` matching requests get this fault, ahead of the seeded plan. */
    readonly injectFault: (kind: FaultKind, options?: InjectOptions) => Effect.Effect<void>
    /** Invalidates every issued token; a new login issues a fresh one. */
    readonly expireTokens: Effect.Effect<void>
  }
}

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
    yield* server.serve(makeApp(state))
    const address = server.address
    const baseUrl = address._tag === "TcpAddress" ? `http://${host}:${address.port}` : `http://${host}`
    return {
      baseUrl,
      credentials: state.credentials,
      state,
      table: state.table,
      insertRow: (microAppID, rowData, insertOptions) =>
        state.insertRow(microAppID, rowData, insertOptions === undefined ? {} : { index: insertOptions.index }),
      removeRow: state.removeRow,
      updateRow: (rowID, rowData) => state.updateRow(rowID, rowData),
      appliedUpdates: state.appliedUpdates,
      setRows: state.setRows,
      configure: state.configure,
      requests: state.requests,
      clearRequests: state.clearRequests,
      onRequest: state.onRequest,
      clearHook: state.clearHook,
      injectFault: state.injectFault,
      expireTokens: state.expireTokens
    }
  })

/**
 * The running emulator.
 *
 * @example
 * ```ts
 * Effect.gen(function*() {
 *   const server = yield* MicroappServer
 *   yield* server.injectFault("http503Html", { count: 2 })
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
