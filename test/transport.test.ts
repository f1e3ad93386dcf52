import { NodeHttpClient } from "@effect/platform-node"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import {
  ConfigError,
  ConfigProvider,
  Effect,
  HashMap,
  Inspectable,
  Layer,
  Logger,
  LogLevel,
  Predicate,
  Redacted
} from "effect"
import * as Zlib from "node:zlib"
import { describe as describeError, MicroappClient, type MicroappError } from "../src/index.js"
import { clientOf, hostileServer, plainRows, rowsAnswer, secretToken, secretUser, transports } from "./hostile.js"
import { recordingTracer } from "./support.js"

const microAppID = "66c000000000000000000001"

const read = Effect.flatMap(MicroappClient, (client) => client.query({ microAppID, limit: 10 }))

/**
 * A gzip bomb that is a valid answer once inflated: the envelope's head, 256 MiB of spaces, its
 * tail, as gzip members one after another (a gzip stream may hold many): about 260 KB on the wire.
 */
const bomb = (() => {
  const spaces = Zlib.gzipSync(Buffer.alloc(4 * 1024 * 1024, " "), { level: 9 })
  return Buffer.concat([
    Zlib.gzipSync(`{"status":"success","body":{"microAppRows":[`),
    ...Array.from({ length: 64 }, () => spaces),
    Zlib.gzipSync("]}}")
  ])
})()

const inflated = 256 * 1024 * 1024

/** Answers every request with the bomb, whatever it asked for, with its (small) declared length. */
const bombing = hostileServer(() =>
  Effect.succeed(HttpServerResponse.uint8Array(bomb, {
    contentType: "application/json",
    headers: { "content-encoding": "gzip", "content-length": String(bomb.length) }
  }))
)

describe("every bound on bytes holds on decoded bytes", () => {
  it("the bomb is small on the wire, past the bound once inflated", () => {
    expect(bomb.length).toBeLessThan(512 * 1024)
    expect(Zlib.gunzipSync(bomb).length).toBeGreaterThan(inflated)
  })

  for (const [transport, layer] of transports) {
    it.live(`${transport}: every request asks for no compression`, () =>
      Effect.gen(function*() {
        const server = yield* hostileServer(() => Effect.succeed(rowsAnswer(plainRows(2))))
        yield* Effect.provide(read, clientOf(server.baseUrl, layer))
        expect((yield* server.seen).map((seen) => seen.headers["accept-encoding"])).toEqual(["identity"])
      }).pipe(Effect.scoped))
  }

  it.live("fetch: a gzip bomb declaring a length within the bound fails TooLarge once its inflated bytes pass it, and is not retried", () =>
    Effect.gen(function*() {
      const server = yield* bombing
      const error = yield* Effect.flip(
        Effect.provide(read, clientOf(server.baseUrl, FetchHttpClient.layer, { maxResponseBytes: 1024 * 1024 }))
      )
      expect(error).toMatchObject({ _tag: "UnexpectedResponse", kind: "TooLarge", status: 200, attempts: 1 })
      expect(error.message).toContain("maxResponseBytes (1048576 bytes)")
      expect(yield* server.seen).toHaveLength(1)
    }).pipe(Effect.scoped))

  it.live("fetch: an inflated answer within the bound is read", () =>
    Effect.gen(function*() {
      const rows = plainRows(3)
      const body = Zlib.gzipSync(JSON.stringify({ status: "success", body: { microAppRows: rows } }))
      const server = yield* hostileServer(() =>
        Effect.succeed(HttpServerResponse.uint8Array(body, {
          contentType: "application/json",
          headers: { "content-encoding": "gzip" }
        }))
      )
      const read3 = yield* Effect.provide(read, clientOf(server.baseUrl, FetchHttpClient.layer))
      expect(read3.map((row) => row._id)).toEqual(rows.map((row) => row._id))
    }).pipe(Effect.scoped))

  it.live("undici: the bomb is not inflated (undici decodes nothing): its bytes as sent are not JSON", () =>
    Effect.gen(function*() {
      const server = yield* bombing
      const error = yield* Effect.flip(
        Effect.provide(
          read,
          clientOf(server.baseUrl, NodeHttpClient.layerUndici, { maxResponseBytes: 1024 * 1024, retry: false })
        )
      )
      expect(error).toMatchObject({ _tag: "UnexpectedResponse", kind: "NotJson", status: 200, attempts: 1 })
      expect(error.message).toContain("gzip")
    }).pipe(Effect.scoped))
})

/** Every printed form of an error a user or a log may see. */
const printed = (error: MicroappError): ReadonlyArray<string> => [
  error.message,
  describeError(error),
  JSON.stringify(error),
  String(error),
  Inspectable.format(error),
  ...("cause" in error && error.cause !== undefined ? [String(error.cause), Inspectable.format(error.cause)] : [])
]

/** Runs `effect` capturing as text every log, at every level, and every span it made (attributes and outcome). */
const capturing = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const logs: Array<string> = []
    const logger = Logger.make(({ annotations, message }) => {
      logs.push(Inspectable.format({ message, annotations: Object.fromEntries(HashMap.toEntries(annotations)) }))
    })
    const { spans, tracer } = yield* recordingTracer
    const exit = yield* Effect.exit(effect.pipe(
      Effect.withTracer(tracer),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
      Logger.withMinimumLogLevel(LogLevel.All)
    ))
    const traced = spans.map((span) => ({
      name: span.name,
      text: Inspectable.format({
        name: span.name,
        attributes: Object.fromEntries(span.attributes),
        exit: span.status._tag === "Ended" ? span.status.exit : undefined
      })
    }))
    return { exit, logs, spans: traced }
  })

const leaks = (texts: ReadonlyArray<string>, secrets: ReadonlyArray<string>) =>
  texts.filter((text) => secrets.some((secret) => text.includes(secret)))

describe("no credential reaches an error or a log, whatever the transport says", () => {
  // a newline inside, a TAB inside, a trailing newline (fetch would strip it and send another token), a NUL, a
  // character past latin1, one past ASCII
  const unsendable = [
    "abc\ndef-secret",
    "abc\tdef-secret",
    "abc-secret\n",
    "abc\u0000-secret",
    "tok€n-secret",
    "tökén-secret"
  ]

  for (const [transport, layer] of transports) {
    for (const token of unsendable) {
      it.live(`${transport}: a token no header can carry (${JSON.stringify(token)}) fails InvalidInput naming authToken, and nothing is sent`, () =>
        Effect.gen(function*() {
          const server = yield* hostileServer(() => Effect.succeed(rowsAnswer(plainRows(2))))
          const client = MicroappClient.layer({
            baseUrl: server.baseUrl,
            authToken: Redacted.make(token),
            userId: secretUser
          })
            .pipe(Layer.provide(layer))
          const { exit, logs, spans } = yield* capturing(Effect.flip(Effect.provide(read, client)))
          expect(exit._tag).toBe("Success")
          if (exit._tag !== "Success") return
          const error = exit.value
          expect(error).toMatchObject({ _tag: "InvalidInput", input: "authToken" })
          expect(leaks([...printed(error), ...logs, ...spans.map((span) => span.text)], [token, token.trim()]))
            .toEqual([])
          expect(yield* server.seen).toEqual([])
        }).pipe(Effect.scoped))
    }

    it.live(`${transport}: a user id no header can carry fails InvalidInput naming userId, and nothing is sent`, () =>
      Effect.gen(function*() {
        const server = yield* hostileServer(() => Effect.succeed(rowsAnswer(plainRows(2))))
        const userId = "user\r\nx-injected: 1"
        const client = MicroappClient.layer({
          baseUrl: server.baseUrl,
          authToken: Redacted.make(secretToken),
          userId
        }).pipe(Layer.provide(layer))
        const error = yield* Effect.flip(Effect.provide(read, client))
        expect(error).toMatchObject({ _tag: "InvalidInput", input: "userId" })
        expect(leaks(printed(error), [userId, secretToken])).toEqual([])
        expect(yield* server.seen).toEqual([])
      }).pipe(Effect.scoped))
  }

  it.live("layerConfig: a token no header can carry fails building with a ConfigError naming the option, not the value", () =>
    Effect.gen(function*() {
      const server = yield* hostileServer(() => Effect.succeed(rowsAnswer(plainRows(2))))
      const token = "abc\ndef-secret"
      const provider = ConfigProvider.fromMap(
        new Map([
          ["MICROAPP_BASE_URL", server.baseUrl],
          ["MICROAPP_AUTH_TOKEN", token],
          ["MICROAPP_USER_ID", secretUser]
        ])
      )
      const error = yield* Effect.flip(
        Effect.provide(read, MicroappClient.layerConfig().pipe(Layer.provide(FetchHttpClient.layer))).pipe(
          Effect.withConfigProvider(provider)
        )
      )
      expect(ConfigError.isConfigError(error)).toBe(true)
      expect(String(error)).toContain("invalid authToken: must be printable ASCII")
      expect(leaks([String(error), JSON.stringify(error)], [token, "def-secret"])).toEqual([])
      expect(yield* server.seen).toEqual([])
    }).pipe(Effect.scoped))

  it.live("layerLogin: a token from the login answer that no header can carry fails the call InvalidInput, unquoted", () =>
    Effect.gen(function*() {
      const token = "abc\ndef-secret"
      const server = yield* hostileServer((request) =>
        Effect.succeed(
          request.url === "/api/login"
            ? HttpServerResponse.unsafeJson({ data: { authToken: token, userId: secretUser } })
            : rowsAnswer(plainRows(2))
        )
      )
      const client = MicroappClient.layerLogin({
        baseUrl: server.baseUrl,
        email: "demo@example.com",
        password: Redacted.make("pw")
      }).pipe(Layer.provide(FetchHttpClient.layer))
      const { exit, logs, spans } = yield* capturing(Effect.flip(Effect.provide(read, client)))
      expect(exit._tag).toBe("Success")
      if (exit._tag !== "Success") return
      expect(exit.value).toMatchObject({ _tag: "InvalidInput", input: "authToken" })
      expect(leaks([...printed(exit.value), ...logs, ...spans.map((span) => span.text)], [token, "def-secret"]))
        .toEqual([])
      expect((yield* server.seen).map((seen) => seen.path)).toEqual(["/api/login"])
    }).pipe(Effect.scoped))

  it.live("a transport error that quotes the credential headers is scrubbed in the error, its cause, the logs and the client's spans", () =>
    Effect.gen(function*() {
      const server = yield* hostileServer(() => Effect.succeed(rowsAnswer(plainRows(2))))
      // a fetch that refuses the request quoting its headers, as some transports do for values they reject
      const quoting: typeof fetch = (_input, init) => {
        const headers = Predicate.isRecord(init?.headers) ? Object.values(init.headers).join(", ") : ""
        return Promise.reject(
          new TypeError(`Headers.append: "${headers}" is an invalid header value.`, {
            cause: new Error(`while sending ${headers}`)
          })
        )
      }
      const layer = FetchHttpClient.layer.pipe(Layer.provide(Layer.succeed(FetchHttpClient.Fetch, quoting)))
      const { exit, logs, spans } = yield* capturing(
        Effect.flip(
          Effect.provide(read, clientOf(server.baseUrl, layer, { retry: { maxAttempts: 2, initialDelay: "1 millis" } }))
        )
      )
      expect(exit._tag).toBe("Success")
      if (exit._tag !== "Success") return
      const error = exit.value
      expect(error).toMatchObject({ _tag: "Transport", attempts: 2 })
      expect(error.message).toContain("while sending")
      // the retry was logged with its cause
      expect(logs.some((log) => log.includes("retrying request"))).toBe(true)
      // the client's own spans; the platform's request span ends with the transport's error as it was
      const ours = spans.filter((span) => !span.name.startsWith("http.client")).map((span) => span.text)
      expect(ours.length).toBeGreaterThan(0)
      expect(leaks([...printed(error), ...logs, ...ours], [secretToken, secretUser])).toEqual([])
    }).pipe(Effect.scoped))
})
