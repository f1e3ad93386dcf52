import { NodeHttpClient } from "@effect/platform-node"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import {
  ConfigError,
  ConfigProvider,
  Deferred,
  Duration,
  Effect,
  Fiber,
  HashMap,
  Inspectable,
  Layer,
  Logger,
  Redacted,
  Schedule,
  Stream,
  TestClock
} from "effect"
import * as Net from "node:net"
import { Changes, MicroappClient, type MicroappError } from "../src/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import {
  clientOf,
  hostileServer,
  plainRows,
  rowsAnswer,
  secretToken,
  secretUser,
  transports,
  writtenInAll
} from "./hostile.js"
import { nobodyAt, quiet, quietAt, recordingTracer, withEmulator } from "./support.js"

const microAppID = "66c000000000000000000001"
const rowID = "66c100000000000000000001"

const undici = NodeHttpClient.layerUndici

const read = Effect.flatMap(MicroappClient, (client) => client.query({ microAppID, limit: 10 }))
const write = Effect.flatMap(MicroappClient, (client) => client.updateRow({ rowID, rowData: { Name: "x" } }))

const calls: ReadonlyArray<readonly [string, Effect.Effect<unknown, MicroappError, MicroappClient>, string]> = [
  ["a read", read, "/api/microappdata"],
  ["updateRow", write, "/api/updatemicroapprow"]
]

describe("redirects are never followed", () => {
  for (const [transport, layer] of transports) {
    for (const status of [300, 301, 302, 303, 307, 308]) {
      for (const [call, effect, path] of calls) {
        it.live(`${transport}: ${status} to ${call} is Redirected, and nothing reaches the other origin`, () =>
          Effect.gen(function*() {
            const elsewhere = yield* hostileServer(() => Effect.succeed(rowsAnswer(plainRows(10))))
            const redirecting = yield* hostileServer(() =>
              Effect.succeed(HttpServerResponse.text("moved", {
                status,
                headers: { location: `${elsewhere.baseUrl}/api/microappdata?token=${secretToken}` }
              }))
            )
            const error = yield* Effect.flip(Effect.provide(effect, clientOf(redirecting.baseUrl, layer)))
            expect(error).toMatchObject({
              _tag: "Redirected",
              status,
              method: "POST",
              path,
              attempts: 1,
              location: elsewhere.baseUrl
            })
            expect(error.message).toBe(
              `the server redirected the request to ${elsewhere.baseUrl}; redirects are not followed`
            )
            expect(JSON.stringify(error)).not.toContain(secretToken)
            expect(yield* elsewhere.seen).toEqual([])
            // sent once, with its credentials, to its own origin only: a redirect is not retried
            const seen = yield* redirecting.seen
            expect(seen).toHaveLength(1)
            expect(seen[0]?.headers["x-auth-token"]).toBe(secretToken)
          }).pipe(Effect.scoped))
      }
    }

    it.live(`${transport}: a relative Location names the server's own origin`, () =>
      Effect.gen(function*() {
        const redirecting = yield* hostileServer(() =>
          Effect.succeed(HttpServerResponse.empty({ status: 302, headers: { location: "/login?next=/api" } }))
        )
        const error = yield* Effect.flip(Effect.provide(read, clientOf(redirecting.baseUrl, layer)))
        expect(error).toMatchObject({ _tag: "Redirected", status: 302, location: redirecting.baseUrl })
      }).pipe(Effect.scoped))

    it.live(`${transport}: a 3xx without Location is Redirected without a location`, () =>
      Effect.gen(function*() {
        const redirecting = yield* hostileServer(() => Effect.succeed(HttpServerResponse.empty({ status: 304 })))
        const error = yield* Effect.flip(Effect.provide(read, clientOf(redirecting.baseUrl, layer)))
        expect(error).toMatchObject({ _tag: "Redirected", status: 304 })
        expect(error).not.toHaveProperty("location")
      }).pipe(Effect.scoped))
  }

  it.live("a browser's fetch is asked not to follow, and its opaque answer (status 0) is Redirected", () =>
    Effect.gen(function*() {
      const elsewhere = yield* hostileServer(() => Effect.succeed(rowsAnswer(plainRows(10))))
      const redirecting = yield* hostileServer(() =>
        Effect.succeed(HttpServerResponse.empty({ status: 301, headers: { location: elsewhere.baseUrl } }))
      )
      const asked: Array<RequestRedirect | undefined> = []
      // what a browser does with `redirect: "manual"`: the real request, answered with an opaque
      // redirect, a response that has status 0 and no headers
      const browserFetch: typeof fetch = async (input, init) => {
        asked.push(init?.redirect)
        const response = await fetch(input, init)
        return response.status >= 300 && response.status < 400 ? Response.error() : response
      }
      const layer = FetchHttpClient.layer.pipe(Layer.provide(Layer.succeed(FetchHttpClient.Fetch, browserFetch)))
      const error = yield* Effect.flip(Effect.provide(read, clientOf(redirecting.baseUrl, layer)))
      expect(asked).toEqual(["manual"])
      expect(error).toMatchObject({ _tag: "Redirected", status: 0, path: "/api/microappdata" })
      expect(error).not.toHaveProperty("location")
      expect(yield* elsewhere.seen).toEqual([])
    }).pipe(Effect.scoped))

  it.live("a RequestInit of the caller is kept, with redirect set to manual", () =>
    Effect.gen(function*() {
      const server = yield* hostileServer(() => Effect.succeed(rowsAnswer(plainRows(3))))
      const inits: Array<RequestInit | undefined> = []
      const recording: typeof fetch = (input, init) => {
        inits.push(init)
        return fetch(input, init)
      }
      const layer = FetchHttpClient.layer.pipe(Layer.provide(Layer.succeed(FetchHttpClient.Fetch, recording)))
      const rows = yield* Effect.provide(read, clientOf(server.baseUrl, layer)).pipe(
        Effect.provideService(FetchHttpClient.RequestInit, { keepalive: true, redirect: "follow" })
      )
      expect(rows).toHaveLength(3)
      expect(inits.map((init) => [init?.keepalive, init?.redirect])).toEqual([[true, "manual"]])
    }).pipe(Effect.scoped))
})

describe("bodies are read up to a bound", () => {
  const head = `{"status":"success","body":{"microAppRows":[`
  const item = `{"_id":"66c200000000000000000001","N":1},`

  for (const [transport, layer] of transports) {
    it.live(`${transport}: an endless body fails with UnexpectedResponse TooLarge, and its reading stops at the bound`, () =>
      Effect.gen(function*() {
        const server = yield* hostileServer((_, self) =>
          Effect.succeed(HttpServerResponse.stream(self.endless(head, item), { contentType: "application/json" }))
        )
        const error = yield* Effect.flip(
          Effect.provide(read, clientOf(server.baseUrl, layer, { maxResponseBytes: 1024 * 1024 }))
        )
        expect(error).toMatchObject({ _tag: "UnexpectedResponse", kind: "TooLarge", status: 200, attempts: 1 })
        expect(error.message).toContain("maxResponseBytes (1048576 bytes)")
        // the request was aborted: the server stops writing, having written about the bound and
        // what the sockets buffer, never an unbounded amount
        const written = yield* writtenInAll(server)
        expect(written).toBeGreaterThan(1024 * 1024)
        expect(written).toBeLessThan(24 * 1024 * 1024)
        expect(yield* server.seen).toHaveLength(1)
      }).pipe(Effect.scoped))

    it.live(`${transport}: a declared length above the bound fails before the body is read`, () =>
      Effect.gen(function*() {
        const server = yield* hostileServer((_, self) =>
          Effect.succeed(HttpServerResponse.stream(self.endless(head, item), {
            contentType: "application/json",
            contentLength: 100 * 1024 * 1024
          }))
        )
        const error = yield* Effect.flip(
          Effect.provide(read, clientOf(server.baseUrl, layer, { maxResponseBytes: 1024 * 1024 }))
        )
        expect(error).toMatchObject({ _tag: "UnexpectedResponse", kind: "TooLarge", status: 200 })
        expect(yield* writtenInAll(server)).toBeLessThan(24 * 1024 * 1024)
      }).pipe(Effect.scoped))

    it.live(`${transport}: a body longer than its declared length is not read past it`, () =>
      Effect.gen(function*() {
        const server = yield* hostileServer((_, self) =>
          Effect.succeed(
            HttpServerResponse.stream(self.endless(head, item), { contentType: "application/json", contentLength: 200 })
          )
        )
        const error = yield* Effect.flip(Effect.provide(read, clientOf(server.baseUrl, layer, { retry: false })))
        // the answer is the declared 200 bytes: a cut JSON document
        expect(error).toMatchObject({ _tag: "UnexpectedResponse", kind: "NotJson" })
        expect(yield* writtenInAll(server)).toBeLessThan(24 * 1024 * 1024)
      }).pipe(Effect.scoped))

    it.live(`${transport}: a refusal with an endless body is still the refusal it says`, () =>
      Effect.gen(function*() {
        const server = yield* hostileServer((_, self) =>
          Effect.succeed(
            HttpServerResponse.stream(self.endless("<html>", "<p>error</p>"), { status: 500, contentType: "text/html" })
          )
        )
        const error = yield* Effect.flip(Effect.provide(read, clientOf(server.baseUrl, layer, { retry: false })))
        expect(error).toMatchObject({ _tag: "ServerError", status: 500 })
        expect(yield* writtenInAll(server)).toBeLessThan(24 * 1024 * 1024)
      }).pipe(Effect.scoped))
  }

  it.live("the default bound is 64 MiB", () =>
    Effect.gen(function*() {
      const server = yield* hostileServer((_, self) =>
        Effect.succeed(HttpServerResponse.stream(self.endless(head, item), { contentType: "application/json" }))
      )
      const error = yield* Effect.flip(Effect.provide(read, clientOf(server.baseUrl, undici)))
      expect(error).toMatchObject({ _tag: "UnexpectedResponse", kind: "TooLarge" })
      expect(error.message).toContain(`(${64 * 1024 * 1024} bytes)`)
      const written = yield* writtenInAll(server)
      expect(written).toBeGreaterThan(64 * 1024 * 1024)
      expect(written).toBeLessThan(88 * 1024 * 1024)
    }).pipe(Effect.scoped), 60_000)
})

/** Sends a raw HTTP request to `baseUrl`: `head`, then body bytes until the server closes; its answer and the bytes sent. */
const rawUpload = (baseUrl: string, head: string, body: "none" | "endless") =>
  Effect.async<{ readonly answer: string; readonly sent: number }>((resume) => {
    const url = new URL(baseUrl)
    const socket = Net.connect(Number(url.port), url.hostname)
    let answer = ""
    let sent = 0
    let open = true
    const chunk = Buffer.alloc(64 * 1024, "a")
    const framed = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")])
    const pump = () => {
      // a server that reads forever would take all of 256 MiB: the test then fails on `sent`
      while (open && sent < 256 * 1024 * 1024) {
        sent += framed.length
        if (!socket.write(framed)) return socket.once("drain", pump)
      }
    }
    socket.on("data", (data) => {
      answer += data.toString("latin1")
    })
    // the server ended its answer: a client stops sending there
    socket.on("end", () => socket.destroy())
    socket.on("error", () => {})
    socket.on("close", () => {
      open = false
      resume(Effect.succeed({ answer, sent }))
    })
    socket.write(head)
    if (body === "endless") pump()
    return Effect.sync(() => socket.destroy())
  })

describe("a stalled answer ends at the timeout, on the live clock, and its request is aborted", () => {
  const head = `{"status":"success","body":{"microAppRows":[`
  // each answer completes `closed` when the connection is gone: its handler, or its body, is interrupted
  const stalls = [
    [
      "before its headers",
      (closed: Deferred.Deferred<void>) => Effect.onInterrupt(Effect.never, () => Deferred.succeed(closed, undefined))
    ],
    ["in the middle of its body", (closed: Deferred.Deferred<void>) =>
      Effect.succeed(HttpServerResponse.stream(
        Stream.concat(Stream.make(new TextEncoder().encode(head)), Stream.never).pipe(
          Stream.ensuring(Deferred.succeed(closed, undefined))
        ),
        { contentType: "application/json" }
      ))]
  ] as const

  for (const [transport, layer] of transports) {
    for (const [where, answer] of stalls) {
      it.live(`${transport}: an answer that stalls ${where} is Timeout, and the server sees the connection closed`, () =>
        Effect.gen(function*() {
          const closed = yield* Deferred.make<void>()
          const server = yield* hostileServer(() => answer(closed))
          const error = yield* Effect.flip(
            Effect.provide(read, clientOf(server.baseUrl, layer, { timeout: "300 millis", retry: false }))
          )
          expect(error).toMatchObject({ _tag: "Timeout", timeoutMillis: 300, attempts: 1 })
          // the server's handler is interrupted when the client closes the connection
          yield* Deferred.await(closed)
          expect(yield* server.seen).toHaveLength(1)
        }).pipe(Effect.scoped))
    }
  }
})

describe("the emulator reads request bodies up to 1 MiB", () => {
  it.live("a declared length above it is answered 413 at once, and the connection closed", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const { answer } = yield* rawUpload(
        server.baseUrl,
        "POST /api/microappdata HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2097152\r\n\r\n",
        "none"
      )
      expect(answer).toMatch(/^HTTP\/1\.1 413 /)
      expect(answer.toLowerCase()).toContain("connection: close")
    }).pipe(Effect.provide(withEmulator({ demoRows: 5 }))))

  it.live("an endless body is answered 413 once past it, and the connection closed: the rest is never read", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const { answer, sent } = yield* rawUpload(
        server.baseUrl,
        "POST /api/updatemicroapprow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        "endless"
      )
      expect(answer).toMatch(/^HTTP\/1\.1 413 /)
      expect(answer).toContain("Request body larger than 1048576 bytes")
      expect(sent).toBeLessThan(32 * 1024 * 1024)
    }).pipe(Effect.provide(withEmulator({ demoRows: 5 }))))
})

describe("query keeps its promise", () => {
  it.live("a server that sends more rows than the limit is cut to the limit, with a warning", () =>
    Effect.gen(function*() {
      const server = yield* hostileServer(() => Effect.succeed(rowsAnswer(plainRows(600))))
      const logged: Array<unknown> = []
      const rows = yield* Effect.flatMap(MicroappClient, (client) => client.query({ microAppID, limit: 100 })).pipe(
        Effect.provide(clientOf(server.baseUrl, undici)),
        Effect.provide(Logger.replace(
          Logger.defaultLogger,
          Logger.make(({ annotations, logLevel, message }) => {
            logged.push({
              level: logLevel.label,
              message,
              annotations: Object.fromEntries(HashMap.toEntries(annotations))
            })
          })
        ))
      )
      expect(rows.map((row) => row._id)).toEqual(plainRows(100).map((row) => row._id))
      expect(logged).toEqual([{
        level: "WARN",
        message: ["the server sent more rows than the limit asked for: the rows past it are dropped"],
        annotations: { limit: 100, sent: 600 }
      }])
    }).pipe(Effect.scoped))
})

describe("base URLs that would garble every request are refused", () => {
  const garbling = [
    ["a query string", "/?t=abc", "must not have a query string"],
    ["a bare ?", "?", "must not have a query string"],
    ["a fragment", "/#abc", "must not have a fragment"],
    ["userinfo", "", "must not hold a user name or password"]
  ] as const
  const withSuffix = (baseUrl: string, suffix: string, what: string) =>
    what === "userinfo" ? baseUrl.replace("http://", "http://someone:abc@") : `${baseUrl}${suffix}`

  for (const [what, suffix, reason] of garbling) {
    it.effect(`layer: with ${what}, every call fails with InvalidInput, and nothing is sent`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const baseUrl = withSuffix(server.baseUrl, suffix, what)
        const errors = yield* Effect.gen(function*() {
          const client = yield* MicroappClient
          return yield* Effect.all([
            Effect.flip(client.query({ microAppID })),
            Effect.flip(client.getRow(rowID)),
            Effect.flip(client.updateRow({ rowID, rowData: { Name: "x" } }))
          ])
        }).pipe(Effect.provide(clientOf(baseUrl, undici)))
        for (const error of errors) {
          expect(error).toMatchObject({ _tag: "InvalidInput", input: "baseUrl" })
          expect(error.message).toContain(reason)
          // the URL may hold a credential: it is never quoted
          expect(error.message).not.toContain("abc")
        }
        expect(yield* server.log.requests).toEqual([])
      }).pipe(Effect.provide(withEmulator({ demoRows: 5 }))))

    it.effect(`layerLogin and login: with ${what}, they fail with InvalidInput before logging in`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const options = {
          baseUrl: withSuffix(server.baseUrl, suffix, what),
          email: "demo@example.com",
          password: Redacted.make("demo")
        }
        expect(yield* Effect.flip(Effect.provide(MicroappClient, MicroappClient.layerLogin(options)))).toMatchObject({
          _tag: "InvalidInput",
          input: "baseUrl"
        })
        expect(yield* Effect.flip(MicroappClient.login(options))).toMatchObject({
          _tag: "InvalidInput",
          input: "baseUrl"
        })
        expect(yield* server.log.requests).toEqual([])
      }).pipe(Effect.provide(undici), Effect.provide(withEmulator({ demoRows: 5 }))))

    it.effect(`layerConfig: with ${what}, building fails with a ConfigError naming the variable`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const provider = ConfigProvider.fromMap(
          new Map([
            ["MICROAPP_BASE_URL", withSuffix(server.baseUrl, suffix, what)],
            ["MICROAPP_AUTH_TOKEN", "t"],
            ["MICROAPP_USER_ID", "u"]
          ])
        )
        const error = yield* Effect.flip(
          Effect.provide(MicroappClient, MicroappClient.layerConfig().pipe(Layer.provide(undici))).pipe(
            Effect.withConfigProvider(provider)
          )
        )
        expect(ConfigError.isConfigError(error)).toBe(true)
        expect(String(error)).toContain("MICROAPP_BASE_URL")
        expect(String(error)).toContain(reason)
        expect(String(error)).not.toContain("abc")
        expect(yield* server.log.requests).toEqual([])
      }).pipe(Effect.provide(withEmulator({ demoRows: 5 }))))
  }

  it.effect("a path prefix is a base URL like any other", () =>
    Effect.gen(function*() {
      const server = yield* hostileServer(() => Effect.succeed(rowsAnswer(plainRows(2))))
      const rows = yield* Effect.provide(read, clientOf(`${server.baseUrl}/prefix/`, undici))
      expect(rows).toHaveLength(2)
      expect((yield* server.seen).map((seen) => seen.path)).toEqual(["/prefix/api/microappdata"])
    }).pipe(Effect.scoped))
})

describe("Retry-After with sense: a client-wide pause lasts at most rateLimit.maxPause", () => {
  const requestCount = Effect.flatMap(MicroappServer, (server) => Effect.map(server.log.requests, (log) => log.length))

  const cases = [
    {
      name:
        "a 429 asking for 31,700 years fails its call with the server's figure; later calls go out once 60 s (the default) have passed",
      fault: "http429",
      retryAfterSeconds: 1_000_000_000_000,
      error: { _tag: "RateLimited", status: 429, retryAfterMillis: 1e15 },
      tuning: {},
      pauseSeconds: 60
    },
    {
      // 30 s is within the call's budget of 60 s, but longer than this client pauses
      name: "a shorter maxPause caps the pause, and fails the call that was asked for longer",
      fault: "http503",
      retryAfterSeconds: 30,
      error: { _tag: "ServerError", status: 503, retryAfterMillis: 30_000 },
      tuning: { rateLimit: { maxPause: "5 seconds" } },
      pauseSeconds: 5
    }
  ] as const

  for (const { error, fault, name, pauseSeconds, retryAfterSeconds, tuning } of cases) {
    it.effect(name, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const client = yield* MicroappClient
        yield* server.faults.inject(fault, { retryAfterSeconds })
        expect(yield* Effect.flip(client.query({ microAppID: projectsMicroAppID, limit: 1 }))).toMatchObject({
          ...error,
          attempts: 1
        })
        const later = yield* Effect.fork(client.query({ microAppID: projectsMicroAppID, limit: 2 }))
        yield* TestClock.adjust(Duration.seconds(pauseSeconds - 1))
        // whatever the call sends now is answered before the count
        yield* quiet
        expect(yield* requestCount).toBe(1)
        yield* TestClock.adjust("1 second")
        expect(yield* Fiber.join(later)).toHaveLength(2)
        expect(yield* requestCount).toBe(2)
      }).pipe(Effect.provide(withEmulator({ demoRows: 5 }, tuning))))
  }

  for (
    const [what, header, pauseMillis] of [
      // read as no Retry-After: the retry waits only its backoff
      ["not a number", "soon", 0],
      ["negative", "-5", 0],
      ["a date in the past", "Wed, 21 Oct 2015 07:28:00 GMT", 0]
    ] as const
  ) {
    it.effect(`a Retry-After that is ${what} is read as before: a pause of ${pauseMillis} ms`, () =>
      Effect.gen(function*() {
        const server = yield* hostileServer((_, self) =>
          Effect.map(self.seen, (seen) =>
            seen.length === 1
              ? HttpServerResponse.unsafeJson({ status: "error" }, { status: 429, headers: { "retry-after": header } })
              : rowsAnswer(plainRows(3)))
        )
        // dates are read against the clock: today's, not the test clock's 1970
        yield* TestClock.setTime(Date.now())
        const spaced = { retry: { schedule: Schedule.spaced("10 millis") } }
        const fiber = yield* Effect.fork(Effect.provide(read, clientOf(server.baseUrl, undici, spaced)))
        const seen = Effect.map(server.seen, (log) => log.length)
        // the server holds no request: quiet once the call waits for nothing but the clock
        const settled = quietAt(nobodyAt(server.baseUrl))
        yield* settled
        expect(yield* seen).toBe(1)
        yield* TestClock.adjust(Math.max(0, pauseMillis - 1))
        yield* settled
        expect(yield* seen).toBe(1)
        yield* TestClock.adjust(11)
        expect(yield* Fiber.join(fiber)).toHaveLength(3)
        expect(yield* seen).toBe(2)
      }).pipe(Effect.scoped))
  }
})

describe("credentials stay out of spans and printed requests", () => {
  it.live("X-User-Id is redacted like X-Auth-Token in the request spans, and in a logged request", () =>
    Effect.gen(function*() {
      const server = yield* hostileServer(() => Effect.succeed(rowsAnswer(plainRows(2))))
      const { spans, tracer: recording } = yield* recordingTracer
      // a transport that logs each request it sends, and a logger that prints what it is given
      const printed: Array<string> = []
      const logging = Layer.effect(
        HttpClient.HttpClient,
        Effect.map(HttpClient.HttpClient, HttpClient.tapRequest((request) => Effect.log(request)))
      ).pipe(Layer.provide(undici))
      const printer = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ message }) => printed.push(Inspectable.format(message)))
      )
      yield* Effect.provide(read, clientOf(server.baseUrl, logging)).pipe(
        Effect.withTracer(recording),
        Effect.provide(printer)
      )
      const request = spans.find((span) => span.attributes.has("http.request.header.x-user-id"))
      expect(request?.attributes.get("http.request.header.x-user-id")).toBe("<redacted>")
      expect(request?.attributes.get("http.request.header.x-auth-token")).toBe("<redacted>")
      const attributes = spans.flatMap((span) => Array.from(span.attributes.values(), String))
      expect(attributes.filter((value) => value.includes(secretUser) || value.includes(secretToken))).toEqual([])
      expect(printed).toHaveLength(1)
      expect(printed[0]).toContain(`"x-user-id": "<redacted>"`)
      expect(printed[0]).toContain(`"x-auth-token": "<redacted>"`)
      expect(printed[0]).not.toContain(secretUser)
      expect(printed[0]).not.toContain(secretToken)
      // the request itself carried both
      expect((yield* server.seen)[0]?.headers).toMatchObject({ "x-user-id": secretUser, "x-auth-token": secretToken })
    }).pipe(Effect.scoped))
})

describe("a request's span is made only where a tracer records it", () => {
  it.live("under Effect's own tracer no request span is made and no trace header sent; under another, both", () =>
    Effect.gen(function*() {
      const server = yield* hostileServer(() => Effect.succeed(rowsAnswer(plainRows(1))))
      const { spans, tracer: recording } = yield* recordingTracer
      const client = clientOf(server.baseUrl, undici)
      yield* Effect.provide(read, client)
      yield* Effect.provide(read, client).pipe(Effect.withTracer(recording))
      const [untraced, traced] = yield* server.seen
      expect(untraced?.headers).not.toHaveProperty("traceparent")
      expect(traced?.headers).toHaveProperty("traceparent")
      expect(spans.filter((span) => span.name.startsWith("http.client"))).toHaveLength(1)
    }).pipe(Effect.scoped))
})

describe("rows a scan cannot compare, deep in a table", () => {
  // 500 rows in pages of 50; at index 377, a row without `_id`, or an array
  const table = plainRows(500)
  const spoilt = [
    ["without _id", { N: 377 }],
    ["as an array", [377]]
  ] as const
  for (const [what, row] of spoilt) {
    it.live(`a row ${what} at row 377 fails the scan with UnexpectedResponse naming it, not ScanInconsistent`, () =>
      Effect.gen(function*() {
        const served: ReadonlyArray<unknown> = table.map((each, i) => i === 377 ? row : each)
        const server = yield* hostileServer((request) =>
          Effect.map(request.json, (body) => {
            const window = (body as { searchFilter?: ReadonlyArray<{ skip?: string; limit?: number }> })
              .searchFilter?.[0]
            const skip = Number(window?.skip ?? 0)
            return HttpServerResponse.unsafeJson({
              status: "success",
              body: { microAppRows: served.slice(skip, skip + (window?.limit ?? 1000)) }
            })
          }).pipe(Effect.orDie)
        )
        const scans = [
          Effect.flatMap(MicroappClient, (client) => Stream.runDrain(client.rows({ microAppID, pageSize: 50 }))),
          Effect.flatMap(MicroappClient, (client) =>
            Effect.flatMap(
              client.changes({ microAppID, pageSize: 50, baseline: Changes.Baseline.empty }),
              (pass) => Stream.runDrain(pass.changes)
            ))
        ]
        for (const scan of scans) {
          const error = yield* Effect.flip(Effect.provide(scan, clientOf(server.baseUrl, undici, { retry: false })))
          expect(error).toMatchObject({ _tag: "UnexpectedResponse", kind: "Row", method: "POST" })
          expect(error).toMatchObject({ rowIndex: 377 })
          expect(error.message).toMatch(/^unexpected response in row 377/)
        }
      }).pipe(Effect.scoped))
  }
})
