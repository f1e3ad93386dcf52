/**
 * The emulator's authentication: auth headers, logins in both shapes, token expiry, unknown paths.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { demoCredentials, MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { json, send, withServer } from "./emulatorSupport.js"
import { SessionAnswer } from "./support.js"

const decodeSession = Schema.decodeUnknownSync(Schema.parseJson(SessionAnswer))

const decodeFlatSession = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({
  status: Schema.Literal("success"),
  authToken: Schema.String,
  userId: Schema.String
})))

describe("authentication", () => {
  it.live("rejects a call without auth headers with 401 and the service's message", () =>
    Effect.gen(function*() {
      const reply = yield* send("/api/microappdata", { microAppID: projectsMicroAppID }, { auth: "none" })
      expect(reply.status).toBe(401)
      expect(json(reply.text)).toEqual({ status: "error", message: "You must be logged in to do this." })
    }).pipe(withServer()))

  it.live("rejects a wrong token, and a token of another user", () =>
    Effect.gen(function*() {
      const wrong = yield* send("/api/microappdata", { microAppID: projectsMicroAppID }, {
        auth: { authToken: "nope", userId: demoCredentials.userId }
      })
      const mismatched = yield* send("/api/microappdata", { microAppID: projectsMicroAppID }, {
        auth: { authToken: demoCredentials.authToken, userId: "someone-else" }
      })
      expect([wrong.status, mismatched.status]).toEqual([401, 401])
    }).pipe(withServer()))

  it.live("checks auth before the body", () =>
    Effect.gen(function*() {
      const reply = yield* send("/api/microappdata", undefined, { auth: "none", rawBody: "{not json" })
      expect(reply.status).toBe(401)
    }).pipe(withServer()))

  it.live("logs in with the data shape; the token works; a wrong password is 401 Unauthorized", () =>
    Effect.gen(function*() {
      const ok = yield* send("/api/login", { email: demoCredentials.email, password: demoCredentials.password }, {
        auth: "none"
      })
      expect(ok.status).toBe(200)
      const session = decodeSession(ok.text).data
      expect(session.userId).toBe(demoCredentials.userId)
      const call = yield* send("/api/microappdata/row", { rowID: "0".repeat(24) }, { auth: session })
      expect(call.status).toBe(404)
      const wrong = yield* send("/api/login", { email: demoCredentials.email, password: "guess" }, { auth: "none" })
      expect(wrong.status).toBe(401)
      expect(json(wrong.text)).toEqual({ status: "error", message: "Unauthorized" })
    }).pipe(withServer()))

  it.live("logs in with the flat shape when configured", () =>
    Effect.gen(function*() {
      const reply = yield* send("/api/login", { email: demoCredentials.email, password: demoCredentials.password }, {
        auth: "none"
      })
      const session = decodeFlatSession(reply.text)
      expect(session.userId).toBe(demoCredentials.userId)
      expect(json(reply.text)).not.toHaveProperty("data")
    }).pipe(withServer({ loginShape: "flat" })))

  it.live("expireTokens invalidates issued tokens; a new login issues a fresh one", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      yield* server.sessions.expireTokens
      const expired = yield* send("/api/microappdata", { microAppID: projectsMicroAppID, searchFilter: [{ limit: 1 }] })
      expect(expired.status).toBe(401)
      const login = yield* send("/api/login", { email: demoCredentials.email, password: demoCredentials.password }, {
        auth: "none"
      })
      const session = decodeSession(login.text).data
      expect(session.authToken).not.toBe(demoCredentials.authToken)
      const again = yield* send("/api/microappdata", { microAppID: projectsMicroAppID, searchFilter: [{ limit: 1 }] }, {
        auth: session
      })
      expect(again.status).toBe(200)
    }).pipe(withServer()))

  it.live("answers unknown paths and other methods with 404 API endpoint does not exist", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* HttpClient.HttpClient
      const unknown = yield* send("/api/nothing", {})
      const get = yield* client.execute(HttpClientRequest.get(`${server.baseUrl}/api/microappdata`))
      expect(unknown.status).toBe(404)
      expect(json(unknown.text)).toEqual({ status: "error", message: "API endpoint does not exist" })
      expect(get.status).toBe(404)
    }).pipe(withServer()))
})
