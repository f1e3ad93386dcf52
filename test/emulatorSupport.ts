/**
 * Requests to the emulator over HTTP, as the emulator's tests send them: the answer's status, type,
 * `Retry-After` and text, decoders of its bodies, and the server in a layer with the demo tables.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { expect } from "@effect/vitest"
import { Chunk, Effect, Either, Layer, Schema, TestClock, TestServices } from "effect"
import type { Row } from "../src/testing/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { CurrentRowAnswer, RowsAnswer, SessionAnswer } from "./support.js"

export type Auth = "demo" | "none" | { readonly authToken: string; readonly userId: string }

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

export const decodeRows = Schema.decodeUnknownSync(Schema.parseJson(RowsAnswer))
export const decodeCurrentRow = Schema.decodeUnknownSync(Schema.parseJson(CurrentRowAnswer))
export const decodeInserted = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
  status: Schema.Literal("success"),
  body: Schema.Struct({ rowID: Schema.String })
})))
export const decodeSession = Schema.decodeUnknownSync(Schema.parseJson(SessionAnswer))
export const decodeFlatSession = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
  status: Schema.Literal("success"),
  authToken: Schema.String,
  userId: Schema.String
})))

export const query = (body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const reply = yield* send("/api/microappdata", { microAppID: projectsMicroAppID, ...body })
    expect(reply.status).toBe(200)
    return decodeRows(reply.text).body.microAppRows
  })

export const isCrossApp = Schema.is(Schema.Struct({
  crossAppRowID: Schema.String,
  value: Schema.Struct({ label: Schema.String, value: Schema.String })
}))

export const ids = (rows: ReadonlyArray<Row>): ReadonlyArray<unknown> => rows.map((row) => row["_id"])

export const withServer = (options: MicroappServer.Options = {}) =>
  Effect.provide(Layer.merge(MicroappServer.layer({ demoRows: 300, ...options }), NodeHttpClient.layerUndici))

export const projects = { microAppID: projectsMicroAppID, searchFilter: [{ limit: 2 }] }

export const requests = Effect.flatMap(MicroappServer, (server) => server.log.requests)

export const awaitSleep = Effect.gen(function*() {
  for (let attempt = 0; attempt < 400; attempt++) {
    if (Chunk.isNonEmpty(yield* TestClock.sleeps())) return
    yield* TestServices.provideLive(Effect.sleep("5 millis"))
  }
  return yield* Effect.dieMessage("the server never started sleeping")
})

export const numbers = (rows: ReadonlyArray<Row>, label: string): ReadonlyArray<number> =>
  rows.map((row) => Number(row[label]))

export const isSortedBy = <A>(values: ReadonlyArray<A>, compare: (a: A, b: A) => number): boolean =>
  values.every((value, index) => {
    const previous = values[index - 1]
    return previous === undefined || compare(previous, value) <= 0
  })

export const transportFailure = (exit: Either.Either<Reply, unknown>): boolean =>
  Either.isLeft(exit) &&
  typeof exit.left === "object" && exit.left !== null && "_tag" in exit.left && exit.left._tag === "RequestError"
