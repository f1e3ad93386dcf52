/**
 * Each step of the transport alone, over real HTTP where it touches the network (the servers of
 * test/hostile.ts), and a step of the caller's own (`transformClient`) seeing every attempt.
 */
import { NodeHttpClient } from "@effect/platform-node"
import * as Headers from "@effect/platform/Headers"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, FiberRef, Metric, Redacted, Ref, Schedule, TestClock } from "effect"
import { MicroappClient } from "../src/index.js"
import { classify } from "../src/internal/http/classify.js"
import { endpoints } from "../src/internal/http/endpoints.js"
import { spannedUnlessNative, withinRace, withinTimeout, withinTimer } from "../src/internal/http/fastPath.js"
import * as InFlight from "../src/internal/http/inFlight.js"
import { refuseRedirects } from "../src/internal/http/redirects.js"
import { makeRateGate } from "../src/internal/http/retry.js"
import { addCredentials, checkCredentials, shapeRequest } from "../src/internal/http/shape.js"
import {
  countCall,
  holdOnRetryAfter,
  recordDuration,
  retrying,
  throughGate,
  withinInFlight
} from "../src/internal/http/steps.js"
import * as Metrics from "../src/internal/metrics.js"
import { RateLimited, type RequestError, ServerError } from "../src/MicroappError.js"
import { clientOf, hostileServer, rowsAnswer, transports } from "./hostile.js"
import { recordingTracer } from "./support.js"

const credentials = { authToken: Redacted.make("token-1"), userId: "user-1" }
const info = { endpoint: endpoints.rows, attempt: 1 }
const undici = NodeHttpClient.layerUndici

describe("request shaping and auth", () => {
  it("a request is a JSON POST to the endpoint under the base URL, asking for identity, with the credentials", () => {
    const request = addCredentials(credentials)(shapeRequest("http://host:1/base", endpoints.row, { rowID: "x" }))
    expect(request.method).toBe("POST")
    expect(request.url).toBe("http://host:1/base/api/microappdata/row")
    expect(request.headers["accept-encoding"]).toBe("identity")
    expect(request.headers["x-auth-token"]).toBe("token-1")
    expect(request.headers["x-user-id"]).toBe("user-1")
    expect(addCredentials(undefined)(shapeRequest("http://h", endpoints.login, {})).headers["x-auth-token"])
      .toBeUndefined()
  })

  it("credentials no header can carry are refused for the call, naming which", () => {
    expect(checkCredentials({ ...credentials, userId: "a\nb" }, endpoints.update)).toMatchObject({
      _tag: "InvalidInput",
      input: "userId",
      method: "POST",
      path: "/api/updatemicroapprow"
    })
    expect(checkCredentials(credentials, endpoints.update)).toBeUndefined()
  })

  it("every control character (C0, DEL, C1) inside a token or user id is refused, a space between others is not", () => {
    const controls = [
      ...Array.from({ length: 0x20 }, (_, code) => code),
      0x7f,
      ...Array.from({ length: 0x20 }, (_, code) => 0x80 + code)
    ].map((code) => String.fromCharCode(code))
    for (const control of controls) {
      const token = `abc${control}def`
      expect(
        checkCredentials({ ...credentials, authToken: Redacted.make(token) }, endpoints.update),
        JSON.stringify(token)
      )
        .toMatchObject({ _tag: "InvalidInput", input: "authToken" })
      expect(checkCredentials({ ...credentials, userId: token }, endpoints.update), JSON.stringify(token))
        .toMatchObject({ _tag: "InvalidInput", input: "userId" })
    }
    expect(checkCredentials({ ...credentials, authToken: Redacted.make("abc def") }, endpoints.update))
      .toBeUndefined()
  })
})

describe("redirect refusal", () => {
  for (const [name, transport] of transports) {
    it.scoped(`${name}: a redirect comes back as it is, never followed`, () =>
      Effect.gen(function*() {
        const server = yield* hostileServer((_, self) =>
          Effect.succeed(HttpServerResponse.empty({ status: 302, headers: { location: `${self.baseUrl}/elsewhere` } }))
        )
        const http = refuseRedirects(yield* HttpClient.HttpClient)
        const response = yield* http.execute(HttpClientRequest.post(`${server.baseUrl}/api/microappdata`))
        expect([302, 0]).toContain(response.status)
        expect((yield* server.seen).map((seen) => seen.path)).toEqual(["/api/microappdata"])
      }).pipe(Effect.provide(transport)))
  }
})

describe("classification under the body bound", () => {
  const exchangeWith = (answer: HttpServerResponse.HttpServerResponse, maxBytes = 1024) =>
    Effect.gen(function*() {
      const server = yield* hostileServer(() => Effect.succeed(answer))
      const http = yield* HttpClient.HttpClient
      const url = `${server.baseUrl}/api/microappdata`
      return yield* Effect.exit(classify(http.execute(HttpClientRequest.post(url)), url, maxBytes, info))
    }).pipe(Effect.provide(undici))

  it.scoped("a 2xx is a reply with its text", () =>
    Effect.gen(function*() {
      const exit = yield* exchangeWith(rowsAnswer([]))
      expect(exit).toMatchObject({ _tag: "Success", value: { status: 200, attempts: 1 } })
    }))

  it.scoped("a 2xx past the bound is UnexpectedResponse TooLarge", () =>
    Effect.gen(function*() {
      const exit = yield* exchangeWith(HttpServerResponse.text("x".repeat(4096)))
      expect(exit).toMatchObject({
        _tag: "Failure",
        cause: { error: { _tag: "UnexpectedResponse", kind: "TooLarge" } }
      })
    }))

  it.effect("a 2xx read in one piece by its declared length is TooLarge still, from a transport that read past it", () =>
    Effect.gen(function*() {
      const url = "http://127.0.0.1:1/api/microappdata"
      const answer = (declared: number, body: string) =>
        HttpClientResponse.fromWeb(
          HttpClientRequest.post(url),
          new Response(body, { status: 200, headers: { "content-length": String(declared) } })
        )
      // a web Response reads its whole body, whatever its Content-Length says
      const lying = yield* Effect.exit(classify(Effect.succeed(answer(10, "x".repeat(4096))), url, 1024, info))
      expect(lying).toMatchObject({
        _tag: "Failure",
        cause: { error: { _tag: "UnexpectedResponse", kind: "TooLarge" } }
      })
      const truthful = yield* classify(Effect.succeed(answer(2, "{}")), url, 1024, info)
      expect(truthful).toMatchObject({ status: 200, text: "{}", attempts: 1 })
    }))

  it.scoped("a 503 with Retry-After is a ServerError with the wait and the server's message", () =>
    Effect.gen(function*() {
      const exit = yield* exchangeWith(
        HttpServerResponse.unsafeJson({ message: "busy" }, { status: 503, headers: { "retry-after": "7" } })
      )
      expect(exit).toMatchObject({
        _tag: "Failure",
        cause: {
          error: { _tag: "ServerError", status: 503, retryAfterMillis: 7000, serverMessage: "busy", attempts: 1 }
        }
      })
    }))

  it.scoped("a redirect is Redirected, naming only the origin it pointed to", () =>
    Effect.gen(function*() {
      const exit = yield* exchangeWith(
        HttpServerResponse.empty({ status: 301, headers: { location: "https://other.example/secret?token=1" } })
      )
      expect(exit).toMatchObject({
        _tag: "Failure",
        cause: { error: { _tag: "Redirected", status: 301, location: "https://other.example" } }
      })
    }))

  it.effect("a connection refused is Transport, not sent", () =>
    Effect.gen(function*() {
      const http = yield* HttpClient.HttpClient
      const url = "http://127.0.0.1:1/api/microappdata"
      const exit = yield* Effect.exit(classify(http.execute(HttpClientRequest.post(url)), url, 1024, info))
      expect(exit).toMatchObject({ _tag: "Failure", cause: { error: { _tag: "Transport", notSent: true } } })
    }).pipe(Effect.provide(undici)))
})

describe("the timeout's two paths", () => {
  const late = () => new ServerError({ method: "POST", path: "/p", serverMessage: "late" })

  it.live("the plain timer ends an attempt on the live clock, closing its scope", () =>
    Effect.gen(function*() {
      const closed = yield* Deferred.make<void>()
      // as a request does when its signal aborts: it ends once its scope is closed
      const exchange = Effect.zipRight(
        Effect.addFinalizer(() => Deferred.succeed(closed, undefined)),
        Effect.zipRight(Deferred.await(closed), Effect.fail(new ServerError({ method: "POST", path: "/p" })))
      )
      const exit = yield* Effect.exit(withinTimer(exchange, Duration.millis(5), late))
      expect(exit).toMatchObject({ _tag: "Failure", cause: { error: { serverMessage: "late" } } })
      expect(yield* Deferred.isDone(closed)).toBe(true)
    }))

  it.effect("the race ends an attempt when time on a TestClock passes, and is the path taken there", () =>
    Effect.gen(function*() {
      for (const within of [withinRace, withinTimeout]) {
        const fiber = yield* Effect.fork(Effect.exit(within(Effect.never, Duration.seconds(30), late)))
        yield* TestClock.adjust("30 seconds")
        expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Failure", cause: { error: { serverMessage: "late" } } })
      }
    }))

  it.live("a success leaves the scope unclosed when it holds only a finished request's abort, a failure closes it", () =>
    Effect.gen(function*() {
      let closed = 0
      const finalized = Effect.addFinalizer(() => Effect.sync(() => closed++))
      const answered = Effect.zipRight(finalized, Effect.succeed(1))
      const refused = Effect.zipRight(finalized, Effect.fail(new ServerError({ method: "POST", path: "/p" })))
      expect(yield* withinTimer(answered, Duration.seconds(1), late, true)).toBe(1)
      expect(closed).toBe(0)
      expect(yield* withinTimer(answered, Duration.seconds(1), late)).toBe(1)
      expect(closed).toBe(1)
      yield* Effect.exit(withinTimer(refused, Duration.seconds(1), late, true))
      expect(closed).toBe(2)
      // a request still running when its time is up ends once its scope is closed
      const ended = yield* Deferred.make<void>()
      const hanging = Effect.zipRight(
        Effect.addFinalizer(() => Effect.zipRight(Effect.sync(() => closed++), Deferred.succeed(ended, undefined))),
        Effect.zipRight(Deferred.await(ended), Effect.fail(new ServerError({ method: "POST", path: "/p" })))
      )
      const exit = yield* Effect.exit(withinTimer(hanging, Duration.millis(5), late, true))
      expect(exit).toMatchObject({ _tag: "Failure", cause: { error: { serverMessage: "late" } } })
      expect(closed).toBe(3)
    }))

  it.effect("an attempt that ends in time is its own result", () =>
    Effect.gen(function*() {
      expect(yield* withinRace(Effect.succeed(1), Duration.seconds(1), late)).toBe(1)
      expect(yield* withinTimer(Effect.succeed(2), Duration.seconds(1), late)).toBe(2)
    }))
})

describe("the abort of a request", () => {
  /** Counts the aborts of every `AbortController` while the scope is open. */
  const countingAborts = Effect.acquireRelease(
    Effect.sync(() => {
      const abort = AbortController.prototype.abort
      const counted = { aborts: 0, abort }
      AbortController.prototype.abort = function(this: AbortController, reason?: unknown) {
        counted.aborts++
        return abort.call(this, reason)
      }
      return counted
    }),
    (counted) => Effect.sync(() => (AbortController.prototype.abort = counted.abort))
  )

  it.live("a request read to its end is not aborted as its attempt ends, unless a caller's step may hold the scope", () =>
    Effect.gen(function*() {
      const server = yield* hostileServer(() => Effect.succeed(rowsAnswer([{ _id: "r1" }])))
      const reads = Effect.flatMap(
        MicroappClient,
        (client) => Effect.repeatN(client.query({ microAppID: "66c000000000000000000001" }), 2)
      )
      const counted = yield* countingAborts
      yield* Effect.provide(reads, clientOf(server.baseUrl, undici))
      expect(counted.aborts).toBe(0)
      yield* Effect.provide(reads, clientOf(server.baseUrl, undici, { transformClient: (client) => client }))
      expect(counted.aborts).toBe(3)
    }).pipe(Effect.scoped))
})

describe("the request span", () => {
  it.scoped("a request has the platform's span under a tracer of the caller's, and none under the native one", () =>
    Effect.gen(function*() {
      const server = yield* hostileServer(() => Effect.succeed(rowsAnswer([])))
      const send = spannedUnlessNative(yield* HttpClient.HttpClient)
      const request = HttpClientRequest.post(`${server.baseUrl}/api/microappdata`)
      const { spans, tracer } = yield* recordingTracer
      yield* Effect.scoped(send(request))
      expect(spans).toEqual([])
      yield* Effect.withTracer(Effect.scoped(send(request)), tracer)
      expect(spans.map((span) => span.name)).toEqual(["http.client POST"])
    }).pipe(Effect.provide(undici)))
})

describe("the rate gate", () => {
  it.effect("a call whose budget ends inside a pause fails at once, not sent, with the wait left", () =>
    Effect.gen(function*() {
      const gate = yield* makeRateGate(Duration.minutes(1))
      yield* gate.holdFor(5000, "429")
      const exit = yield* Effect.exit(throughGate(gate, 1000, info)(Effect.succeed("sent")))
      expect(exit).toMatchObject({ _tag: "Failure", cause: { error: { _tag: "RateLimited", retryAfterMillis: 5000 } } })
      expect(Exit.isFailure(exit) && "status" in exit.cause && exit.cause.status).toBeFalsy()
    }))

  it.effect("a Retry-After of a 429 pauses the client; a bare 429 does not", () =>
    Effect.gen(function*() {
      const gate = yield* makeRateGate(Duration.minutes(1))
      const refused = (retryAfterMillis?: number) =>
        Effect.exit(
          holdOnRetryAfter(gate)(Effect.fail<RequestError>(
            new RateLimited({
              method: "POST",
              path: "/p",
              status: 429,
              ...(retryAfterMillis ? { retryAfterMillis } : {})
            })
          ))
        )
      yield* refused()
      expect(Exit.isSuccess(yield* Effect.exit(gate.pass(0)))).toBe(true)
      yield* refused(3000)
      expect(yield* Effect.flip(gate.pass(0))).toBe(3000)
    }))
})

describe("the in-flight limit", () => {
  it.effect("an attempt waits for a permit; a 429 with Retry-After cuts the limit", () =>
    Effect.gen(function*() {
      const inFlight = yield* InFlight.make(2)
      const release = yield* Deferred.make<void>()
      const limited = withinInFlight(inFlight, (attempt) => attempt)
      const first = yield* Effect.fork(limited(Deferred.await(release)))
      yield* Effect.fork(limited(Deferred.await(release)))
      yield* Effect.yieldNow()
      const third = yield* Effect.fork(limited(Effect.succeed("third")))
      yield* Effect.yieldNow()
      expect(third.unsafePoll()).toBeNull()
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(first)
      expect(yield* Fiber.join(third)).toBe("third")
      // a refusal at two in flight halves the limit to one
      const slow = yield* Deferred.make<void>()
      const refusal = new RateLimited({ method: "POST", path: "/p", status: 429, retryAfterMillis: 1 })
      const a = yield* Effect.fork(Effect.exit(limited(Effect.zipRight(Deferred.await(slow), Effect.fail(refusal)))))
      const b = yield* Effect.fork(Effect.exit(limited(Deferred.await(slow))))
      yield* Effect.yieldNow()
      yield* Deferred.succeed(slow, undefined)
      yield* Fiber.join(a)
      yield* Fiber.join(b)
      const gate = yield* Deferred.make<void>()
      yield* Effect.fork(limited(Deferred.await(gate)))
      yield* Effect.yieldNow()
      const next = yield* Effect.fork(limited(Effect.succeed("next")))
      yield* Effect.yieldNow()
      expect(next.unsafePoll()).toBeNull()
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(next)).toBe("next")
    }))
})

describe("metrics", () => {
  const endpoint = { path: "/steps-test", write: false }

  it.effect("each attempt adds one duration, with its status", () =>
    Effect.gen(function*() {
      const tags = {
        "http.request.method": "POST",
        "server.address": "steps.test",
        "microapp.endpoint": endpoint.path,
        "http.response.status_code": "200"
      }
      const before = (yield* Metric.value(Metrics.requestDuration(tags))).count
      yield* recordDuration("steps.test", endpoint)(Effect.succeed({ status: 200 }))
      expect((yield* Metric.value(Metrics.requestDuration(tags))).count).toBe(before + 1)
    }))

  it.effect("the credential headers are among the redacted names while the attempt runs, and only then", () =>
    Effect.gen(function*() {
      const redacted = FiberRef.get(Headers.currentRedactedNames)
      const before = yield* redacted
      const step = recordDuration("steps.test", endpoint, ["x-secret"])
      const inside = yield* step(Effect.map(redacted, (names) => ({ status: 200, names })))
      expect(inside.names).toEqual([...before, "x-secret"])
      expect(yield* redacted).toEqual(before)
      const failed = yield* Effect.exit(step(Effect.fail(new ServerError({ method: "POST", path: "/p" }))))
      expect(Exit.isFailure(failed)).toBe(true)
      expect(yield* redacted).toEqual(before)
    }))

  it.effect("each call adds one to its outcome", () =>
    Effect.gen(function*() {
      const failed = Metrics.requests({ endpoint: endpoint.path, outcome: "ServerError" })
      const before = (yield* Metric.value(failed)).count
      yield* Effect.exit(countCall(endpoint)(Effect.fail(new ServerError({ method: "POST", path: "/p" }))))
      expect((yield* Metric.value(failed)).count).toBe(before + 1)
    }))
})

describe("the retry policy", () => {
  it.effect("attempts are numbered and repeated as the schedule allows; none is repeated without one", () =>
    Effect.gen(function*() {
      const seen: Array<number> = []
      const attempt = (n: number) =>
        Effect.suspend(() => {
          seen.push(n)
          return n < 3 ? Effect.fail(new ServerError({ method: "POST", path: "/p" })) : Effect.succeed(n)
        })
      expect(yield* retrying(Schedule.recurs(5), 1000, attempt)).toBe(3)
      expect(seen).toEqual([1, 2, 3])
      seen.length = 0
      expect(yield* Effect.flip(retrying(undefined, 1000, attempt))).toMatchObject({ _tag: "ServerError" })
      expect(seen).toEqual([1])
    }))
})

describe("a step of the caller's own (transformClient)", () => {
  it.scopedLive("runs on every attempt, retries included, and its header reaches the server", () =>
    Effect.gen(function*() {
      const answered = yield* Ref.make(0)
      const server = yield* hostileServer(() =>
        Effect.map(
          Ref.getAndUpdate(answered, (n) => n + 1),
          (n) => n < 2 ? HttpServerResponse.text("busy", { status: 503 }) : rowsAnswer([])
        )
      )
      const attempts = yield* Ref.make(0)
      const rows = yield* Effect.flatMap(MicroappClient, (client) => client.query({ microAppID: "a".repeat(24) })).pipe(
        Effect.provide(clientOf(server.baseUrl, undici, {
          retry: { initialDelay: "1 millis", maxDelay: "1 millis" },
          transformClient: (client) =>
            client.pipe(
              HttpClient.mapRequest(HttpClientRequest.setHeader("x-caller-step", "yes")),
              HttpClient.tapRequest(() => Ref.update(attempts, (n) => n + 1))
            )
        }))
      )
      expect(rows).toEqual([])
      expect(yield* Ref.get(attempts)).toBe(3)
      expect((yield* server.seen).map((seen) => seen.headers["x-caller-step"])).toEqual(["yes", "yes", "yes"])
    }))
})
