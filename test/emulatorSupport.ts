/**
 * Requests to the emulator over HTTP, as the emulator's tests send them (any body, any credentials
 * or none; the answer's status, type, `Retry-After` and text), a query of the demo Projects, the
 * requests logged, and the server in a layer with the demo tables.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { expect } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import type { Row } from "../src/testing/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { RowsAnswer } from "./support.js"

type Auth = "demo" | "none" | { readonly authToken: string; readonly userId: string }

export interface Reply {
  readonly status: number
  readonly contentType: string | undefined
  readonly retryAfter: string | undefined
  readonly text: string
}

/** POSTs `body` as JSON (or `rawBody` as it is) as the demo user, another or none: the answer. */
export const send = (
  path: string,
  body: unknown,
  options: { readonly auth?: Auth; readonly rawBody?: string } = {}
) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const client = yield* HttpClient.HttpClient
    const auth = options.auth ?? "demo"
    const credentials = auth === "demo" ? server.credentials : auth === "none" ? undefined : auth
    const base = HttpClientRequest.post(server.baseUrl + path)
    const withBody = options.rawBody === undefined
      ? HttpClientRequest.bodyUnsafeJson(base, body)
      : HttpClientRequest.bodyText(base, options.rawBody, "application/json")
    const request = credentials === undefined
      ? withBody
      : HttpClientRequest.setHeaders(withBody, {
        "X-Auth-Token": credentials.authToken,
        "X-User-Id": credentials.userId
      })
    const response = yield* client.execute(request)
    const text = yield* response.text
    const reply: Reply = {
      status: response.status,
      contentType: response.headers["content-type"],
      retryAfter: response.headers["retry-after"],
      text
    }
    return reply
  })

export const json = (text: string): unknown => Schema.decodeUnknownSync(Schema.parseJson())(text)

const decodeRows = Schema.decodeUnknownSync(Schema.parseJson(RowsAnswer))

export const query = (body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const reply = yield* send("/api/microappdata", { microAppID: projectsMicroAppID, ...body })
    expect(reply.status).toBe(200)
    return decodeRows(reply.text).body.microAppRows
  })

export const ids = (rows: ReadonlyArray<Row>): ReadonlyArray<unknown> => rows.map((row) => row["_id"])

export const withServer = (options: MicroappServer.Options = {}) =>
  Effect.provide(Layer.merge(MicroappServer.layer({ demoRows: 300, ...options }), NodeHttpClient.layerUndici))

export const requests = Effect.flatMap(MicroappServer, (server) => server.log.requests)
