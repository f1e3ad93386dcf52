/**
 * An answer's body, read every way the client reads one: in one piece when it declares its length;
 * otherwise from the body the transport keeps under its response (undici's Node `Readable`,
 * fetch's web `ReadableStream`), or, for a response of the caller's own (a `transformClient` that
 * hands back another object), as its stream. Each way reads the same bytes under the same bounds,
 * whatever the answer's form: with a length, chunked, compressed (fetch decodes; undici decodes
 * nothing, see transport.test.ts), past the bound, a bomb, cut, or stalled until the timeout.
 */
import { NodeHttpClient, NodeHttpServerRequest } from "@effect/platform-node"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, FastCheck, type Layer, Option, Stream } from "effect"
import { EventEmitter } from "node:events"
import * as Zlib from "node:zlib"
import { MicroappClient } from "../src/index.js"
import { nativeBodyOf, readWhole, utf8Length, wholeReadOf, withinBytes } from "../src/internal/http/body.js"
import { clientOf, hostileServer, plainRows, transports, writtenInAll } from "./hostile.js"
import { runAtOnTestClock } from "./support.js"

const microAppID = "66c000000000000000000001"
const encoder = new TextEncoder()

/** The accesses of a response's `stream` and `arrayBuffer`: the reads of its body through the platform. */
interface Reads {
  stream: number
  arrayBuffer: number
}

/** The response as it is, its reads through the platform counted. */
const counted = (reads: Reads) => (response: HttpClientResponse.HttpClientResponse) =>
  new Proxy(response, {
    get: (target, key) => {
      if (key === "stream" || key === "arrayBuffer") reads[key]++
      return Reflect.get(target, key)
    }
  })

/** The response as a caller's own step may hand it back: the same answer, without what the transport keeps. */
const callersOwn = (reads: Reads) => (response: HttpClientResponse.HttpClientResponse) =>
  new Proxy(counted(reads)(response), {
    has: (target, key) => key !== "source" && Reflect.has(target, key),
    get: (target, key) => key === "source" ? undefined : Reflect.get(target, key)
  })

interface Reader {
  readonly name: string
  readonly transport: Layer.Layer<HttpClient.HttpClient>
  /** Whether the transport decodes a compressed answer (fetch does; undici does not). */
  readonly decodes: boolean
  /** Whether the body is read from what the transport keeps, rather than through the platform. */
  readonly native: boolean
  readonly wrap: (
    reads: Reads
  ) => (response: HttpClientResponse.HttpClientResponse) => HttpClientResponse.HttpClientResponse
}

const readers: ReadonlyArray<Reader> = transports.flatMap(([name, transport]) => [
  { name: `${name}, its body read from it`, transport, decodes: name === "fetch", native: true, wrap: counted },
  {
    name: `${name}, a response of the caller's own`,
    transport,
    decodes: name === "fetch",
    native: false,
    wrap: callersOwn
  }
])

/** A client of `baseUrl` reading its answers as `reader` does, and the reads it made through the platform. */
const clientReading = (reader: Reader, baseUrl: string, tuning: MicroappClient.Tuning = {}) => {
  const reads: Reads = { stream: 0, arrayBuffer: 0 }
  const layer = clientOf(baseUrl, reader.transport, {
    ...tuning,
    transformClient: HttpClient.transformResponse(Effect.map(reader.wrap(reads)))
  })
  return { layer, reads }
}

const read = (limit = 100) => Effect.flatMap(MicroappClient, (client) => client.query({ microAppID, limit }))

/** Rows whose text holds characters of two, three and four bytes in UTF-8, so that chunks split them. */
const rows = plainRows(40).map((row, i) => ({ ...row, Name: `Zoë ${i} — 日本 😀` }))
const answerText = JSON.stringify({ status: "success", body: { microAppRows: rows } })

/** `bytes` in pieces of `size`: every multi-byte character of `rows` is split by some boundary. */
const pieces = (bytes: Uint8Array, size = 7): ReadonlyArray<Uint8Array> =>
  Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size))

const chunked = (bytes: Uint8Array, headers: Record<string, string> = {}) =>
  HttpServerResponse.stream(Stream.fromIterable(pieces(bytes)), { contentType: "application/json", headers })

const compressions = [
  ["gzip", (text: string) => Zlib.gzipSync(text)],
  ["deflate", (text: string) => Zlib.deflateSync(text)],
  ["br", (text: string) => Zlib.brotliCompressSync(text)]
] as const

/** A bomb in `encoding`: small on the wire, a valid answer of 4 MiB once inflated. */
const bombOf = (compress: (text: string) => Uint8Array) =>
  compress(`{"status":"success","body":{"microAppRows":[${" ".repeat(4 * 1024 * 1024)}]}}`)

const head = `{"status":"success","body":{"microAppRows":[`

describe("the body the transport keeps, and its read of a whole body, are found under the platform's responses, and only there", () => {
  for (const [name, transport] of transports) {
    it.live(`${name}: a response of the platform has its body; the same behind a caller's own object has none`, () =>
      Effect.gen(function*() {
        const server = yield* hostileServer(() => Effect.succeed(chunked(encoder.encode(answerText))))
        // as the client sends every request: in a scope, whose end aborts it (the platform wraps a
        // response sent otherwise, to abort it when it is dropped: its body is then read as its stream)
        const http = HttpClient.withScope(yield* HttpClient.HttpClient)
        const response = yield* http.post(`${server.baseUrl}/api/microappdata`)
        expect(Option.map(nativeBodyOf(response), (body) => body._tag)).toEqual(
          Option.some(name === "fetch" ? "Web" : "Node")
        )
        expect(nativeBodyOf(callersOwn({ stream: 0, arrayBuffer: 0 })(response))).toEqual(Option.none())
        // and so has the transport's own read of a whole body
        expect(Option.isSome(wholeReadOf(response))).toBe(true)
        expect(wholeReadOf(callersOwn({ stream: 0, arrayBuffer: 0 })(response))).toEqual(Option.none())
        // once read, the body is no longer one to read
        yield* response.arrayBuffer
        expect(nativeBodyOf(response)).toEqual(Option.none())
        expect(wholeReadOf(response)).toEqual(Option.none())
      }).pipe(Effect.provide(transport), Effect.scoped))
  }
})

describe("a whole read leaves nothing on undici's body that holds what it read", () => {
  it.live("the listeners the read added are taken off; an error after it reaches no one", () =>
    Effect.gen(function*() {
      const bytes = encoder.encode(answerText)
      const server = yield* hostileServer(() =>
        Effect.succeed(HttpServerResponse.uint8Array(bytes, { contentType: "application/json" }))
      )
      const http = HttpClient.withScope(yield* HttpClient.HttpClient)
      const response = yield* http.post(`${server.baseUrl}/api/microappdata`)
      const native = Option.getOrThrow(nativeBodyOf(response))
      const source = native._tag === "Node" ? native.readable : undefined
      if (!(source instanceof EventEmitter)) return expect.fail("undici's body is a Node stream")
      const before = { close: source.listeners("close").length, error: source.listeners("error").length }
      const whole = Option.getOrThrow(wholeReadOf(response))
      const body = yield* readWhole(whole, 1024 * 1024, (cause) => cause)
      expect(body).toEqual({ text: answerText, complete: true })
      expect(source.listeners("close").length).toBe(before.close)
      // the read's own error listener gives way to one that ignores
      expect(source.listeners("error").length).toBe(Math.max(before.error, 1))
      expect(() => source.emit("error", new Error("late"))).not.toThrow()
    }).pipe(Effect.provide(NodeHttpClient.layerUndici), Effect.scoped))
})

describe("every way of reading a body reads the same answer, under the same bounds", () => {
  for (const reader of readers) {
    it.live(`${reader.name}: an answer with its length is read whole`, () =>
      Effect.gen(function*() {
        const bytes = encoder.encode(answerText)
        const server = yield* hostileServer(() =>
          Effect.succeed(HttpServerResponse.uint8Array(bytes, { contentType: "application/json" }))
        )
        const { layer, reads } = clientReading(reader, server.baseUrl)
        expect(yield* Effect.provide(read(), layer)).toEqual(rows)
        // read in one piece by the transport, which stops at the declared length: by its own read
        // where it keeps one, without the platform's cached effect around it
        expect(reads).toEqual({ stream: 0, arrayBuffer: reader.native ? 0 : 1 })
      }).pipe(Effect.scoped))

    it.live(`${reader.name}: a chunked answer in pieces that split its characters is read whole`, () =>
      Effect.gen(function*() {
        const server = yield* hostileServer(() => Effect.succeed(chunked(encoder.encode(answerText))))
        const { layer, reads } = clientReading(reader, server.baseUrl)
        expect(yield* Effect.provide(read(), layer)).toEqual(rows)
        // the platform's Effect stream of the body is not what reads it, where the body is at hand
        expect(reads).toEqual(reader.native ? { stream: 0, arrayBuffer: 0 } : { stream: 1, arrayBuffer: 0 })
      }).pipe(Effect.scoped))

    it.live(`${reader.name}: a chunked answer past the bound fails TooLarge, and its reading stops there`, () =>
      Effect.gen(function*() {
        const server = yield* hostileServer((_, self) =>
          Effect.succeed(HttpServerResponse.stream(self.endless(head, `{"_id":"66c200000000000000000001"},`)))
        )
        const { layer } = clientReading(reader, server.baseUrl, { maxResponseBytes: 1024 * 1024 })
        const error = yield* Effect.flip(Effect.provide(read(), layer))
        expect(error).toMatchObject({ _tag: "UnexpectedResponse", kind: "TooLarge", status: 200, attempts: 1 })
        // the server stops writing once the client aborts: about the bound and what the sockets hold
        expect(yield* writtenInAll(server)).toBeLessThan(24 * 1024 * 1024)
      }).pipe(Effect.scoped))

    it.live(`${reader.name}: an answer cut before its end is a Transport error, nothing of it taken`, () =>
      Effect.gen(function*() {
        // the head is written, then the connection ends, without the chunked body's end
        const server = yield* hostileServer((request) => {
          const socket = NodeHttpServerRequest.toIncomingMessage(request).socket
          const cut = Stream.execute(Effect.sync(() => socket.end()))
          return Effect.succeed(HttpServerResponse.stream(
            Stream.concat(Stream.make(encoder.encode(head)), Stream.concat(cut, Stream.never)),
            { contentType: "application/json" }
          ))
        })
        const { layer } = clientReading(reader, server.baseUrl, { retry: false })
        const error = yield* Effect.flip(Effect.provide(read(), layer))
        expect(error).toMatchObject({ _tag: "Transport", status: 200, notSent: false, attempts: 1 })
      }).pipe(Effect.scoped))

    it.effect(`${reader.name}: an answer that stalls in its body ends at the timeout, and its connection is closed`, () =>
      Effect.gen(function*() {
        const closed = yield* Deferred.make<void>()
        const server = yield* hostileServer(() =>
          Effect.succeed(HttpServerResponse.stream(
            Stream.concat(Stream.make(encoder.encode(head)), Stream.never).pipe(
              Stream.ensuring(Deferred.succeed(closed, undefined))
            ),
            { contentType: "application/json" }
          ))
        )
        const { layer } = clientReading(reader, server.baseUrl, { timeout: "5 seconds", retry: false })
        // the server holds the one request, its body begun, until the client lets it go
        const peer = { baseUrl: server.baseUrl, held: Effect.map(Deferred.isDone(closed), (done) => done ? 0 : 1) }
        const error = yield* runAtOnTestClock(peer, Effect.flip(Effect.provide(read(), layer)))
        expect(error).toMatchObject({ _tag: "Timeout", timeoutMillis: 5000, attempts: 1 })
        yield* Deferred.await(closed)
      }).pipe(Effect.scoped))

    if (!reader.decodes) continue

    for (const [encoding, compress] of compressions) {
      it.live(`${reader.name}: a ${encoding} answer, chunked, is read decoded`, () =>
        Effect.gen(function*() {
          const server = yield* hostileServer(() =>
            Effect.succeed(chunked(compress(answerText), { "content-encoding": encoding }))
          )
          const { layer } = clientReading(reader, server.baseUrl)
          expect(yield* Effect.provide(read(), layer)).toEqual(rows)
        }).pipe(Effect.scoped))

      it.live(`${reader.name}: a ${encoding} bomb fails TooLarge once its decoded bytes pass the bound`, () =>
        Effect.gen(function*() {
          const bomb = bombOf(compress)
          expect(bomb.length).toBeLessThan(64 * 1024)
          const server = yield* hostileServer(() =>
            Effect.succeed(HttpServerResponse.uint8Array(bomb, {
              contentType: "application/json",
              headers: { "content-encoding": encoding }
            }))
          )
          const { layer } = clientReading(reader, server.baseUrl, { maxResponseBytes: 1024 * 1024 })
          const error = yield* Effect.flip(Effect.provide(read(), layer))
          expect(error).toMatchObject({ _tag: "UnexpectedResponse", kind: "TooLarge", status: 200, attempts: 1 })
        }).pipe(Effect.scoped))
    }
  }
})

describe("a body read whole as text is held to its bound in UTF-8 bytes", () => {
  // whole code points, as a decoder hands them: ASCII, two-, three- and four-byte ones
  const decodedText = FastCheck.array(
    FastCheck.oneof(
      FastCheck.integer({ min: 0, max: 0x7f }),
      FastCheck.integer({ min: 0x80, max: 0x7ff }),
      FastCheck.integer({ min: 0x800, max: 0xd7ff }),
      FastCheck.integer({ min: 0xe000, max: 0xffff }),
      FastCheck.integer({ min: 0x10000, max: 0x10ffff })
    ).map((point) => String.fromCodePoint(point)),
    { maxLength: 200 }
  ).map((points) => points.join(""))

  it.prop("utf8Length is the length TextEncoder writes", [decodedText], ([text]) => {
    expect(utf8Length(text)).toBe(encoder.encode(text).length)
  })

  it.prop(
    "withinBytes is whether the encoded text fits the limit, whatever the limit",
    [decodedText, FastCheck.integer({ min: 0, max: 900 })],
    ([text, limit]) => {
      expect(withinBytes(text, limit)).toBe(encoder.encode(text).length <= limit)
    }
  )
})
