/**
 * Reading a body in bounded memory: the client reads answers with it, the emulator requests.
 */
import { Effect, Option, Stream } from "effect"

/** What was read of a body: its text, up to the limit, and whether that was all of it. */
export interface Body {
  readonly text: string
  readonly complete: boolean
}

/** What was read of a body past its limit: nothing worth keeping. */
export const pastLimit: Body = { text: "", complete: false }

const decoder = new TextDecoder()

/** The text of a body's chunks, `bytes` in all, decoded once. */
export const decodeChunks = (chunks: ReadonlyArray<Uint8Array>, bytes: number): string => {
  const [first] = chunks
  if (chunks.length <= 1) return first === undefined ? "" : decoder.decode(first)
  const joined = new Uint8Array(bytes)
  let offset = 0
  for (const chunk of chunks) {
    joined.set(chunk, offset)
    offset += chunk.length
  }
  return decoder.decode(joined)
}

/** Whether a `Content-Encoding` names an encoding (gzip, br...) rather than the bytes as they are. */
export const isEncoded = (encoding: string | undefined): boolean => {
  const name = encoding?.trim().toLowerCase()
  return name !== undefined && name !== "" && name !== "identity"
}

/**
 * The length a body declares of its decoded bytes: its `Content-Length`, unless it is encoded,
 * when that counts bytes on the wire, which say nothing of what they inflate to.
 */
export const declaredLength = (headers: Readonly<Record<string, string | undefined>>): number | undefined => {
  const length = headers["content-length"]
  return !isEncoded(headers["content-encoding"]) && length !== undefined && /^\d+$/.test(length)
    ? Number(length)
    : undefined
}

/**
 * A body read in one piece, as the transport read it to its declared length: within `limit` it is
 * whole, past it (a transport that read past what was declared) it is refused all the same.
 */
export const wholeBody = (bytes: ArrayBuffer, limit: number): Body =>
  bytes.byteLength > limit ? pastLimit : { text: decoder.decode(bytes), complete: true }

/** The chunks of a body as they are counted in: kept while within `limit`, decoded once when read. */
const collect = (limit: number) => {
  const chunks: Array<Uint8Array> = []
  let kept = 0
  return {
    /** Keeps `chunk`; `false` (and keeps nothing) when it would take the body past the limit. */
    add: (chunk: Uint8Array): boolean => {
      if (kept + chunk.length > limit) return false
      chunks.push(chunk)
      kept += chunk.length
      return true
    },
    /** The whole body; decoded when first read: of a body past the limit, most callers read nothing. */
    body: (): Body => {
      let text: string | undefined
      return {
        complete: true,
        get text() {
          return text ??= decodeChunks(chunks, kept)
        }
      }
    }
  }
}

/**
 * The parts of a Node `Readable` (undici's body) read here, named so that the client, which runs
 * on any platform, imports nothing of Node.
 */
export interface NodeReadable {
  readonly readable: boolean
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown
  on(event: "end" | "close", listener: () => void): unknown
  on(event: "error", listener: (error: unknown) => void): unknown
  off(event: "data", listener: (chunk: Uint8Array) => void): unknown
  off(event: "end" | "close", listener: () => void): unknown
  off(event: "error", listener: (error: unknown) => void): unknown
  destroy(): unknown
}

/** A body a transport of @effect/platform keeps under its response, read here without an Effect stream. */
export type NativeBody =
  | { readonly _tag: "Web"; readonly stream: ReadableStream<Uint8Array> }
  | { readonly _tag: "Node"; readonly readable: NodeReadable }

const isObject = (value: unknown): value is Record<PropertyKey, unknown> => typeof value === "object" && value !== null

const isWebStream = (value: unknown): value is ReadableStream<Uint8Array> =>
  isObject(value) && typeof value.getReader === "function" && value.locked === false

const isNodeReadable = (value: unknown): value is NodeReadable =>
  isObject(value) && value.readable === true && typeof value.on === "function" && typeof value.off === "function" &&
  typeof value.destroy === "function"

/**
 * The body under a response of @effect/platform, where it is one the client can read itself: its
 * `source` (FetchHttpClient's web `Response`, whose `body` is a `ReadableStream`; NodeHttpClient's
 * undici answer, whose `body` is a Node `Readable`), not yet read. Any other response (a test's, a
 * caller's own) has none, and is read as its `stream`: both are the bytes that stream yields.
 */
export const nativeBodyOf = (response: object): Option.Option<NativeBody> => {
  const source = "source" in response ? response.source : undefined
  const body = isObject(source) ? source.body : undefined
  return isWebStream(body)
    ? Option.some({ _tag: "Web", stream: body })
    : isNodeReadable(body)
    ? Option.some({ _tag: "Node", readable: body })
    : Option.none()
}

interface WholeRead {
  text(): Promise<string>
}

const hasWholeRead = (value: unknown): value is WholeRead => isObject(value) && typeof value.text === "function"

/**
 * The transport's own read of a whole body as text under a response of @effect/platform, not yet
 * read: undici's body's `text()`, or the web `Response`'s; both decode UTF-8 as `TextDecoder` does,
 * a BOM dropped. The platform's reads call the same through an `Effect.cached` made and run on a
 * fiber of its own for every response (some 40 of the 500 effects a small call runs).
 */
export const wholeReadOf = (response: object): Option.Option<WholeRead> => {
  const source = "source" in response ? response.source : undefined
  const body = isObject(source) ? source.body : undefined
  return isNodeReadable(body) && hasWholeRead(body)
    ? Option.some(body)
    : isWebStream(body) && hasWholeRead(source)
    ? Option.some(source)
    : Option.none()
}

/** The bytes of `text` in UTF-8: one to three a code unit, a surrogate pair's four two apiece. */
export const utf8Length = (text: string): number => {
  let bytes = text.length
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit >= 0x80) bytes += unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 1 : 2
  }
  return bytes
}

/**
 * Whether a decoded body is within `limit` bytes, counted as UTF-8: a text of `limit` code units
 * or fewer takes at most three bytes each, so only one between a third of the limit and the limit
 * is counted.
 */
export const withinBytes = (text: string, limit: number): boolean =>
  text.length <= limit && (text.length <= limit / 3 || utf8Length(text) <= limit)

type Listener = (...args: Array<never>) => void

/** The listeners of a Node body (undici's) that its whole read adds. */
interface Listened {
  listeners(event: "close" | "error"): ReadonlyArray<Listener>
  off(event: "close" | "error", listener: Listener): unknown
  on(event: "error", listener: (error: unknown) => void): unknown
}

const isListened = (value: unknown): value is Listened =>
  isObject(value) && typeof value.listeners === "function" && typeof value.off === "function" &&
  typeof value.on === "function"

const ignore = (): void => {}

/** Takes off the `close` and `error` listeners of `body` not in `before`. */
const offAdded = (body: Listened, before: { readonly close: Set<Listener>; readonly error: Set<Listener> }) => {
  for (const event of ["close", "error"] as const) {
    for (const listener of body.listeners(event)) {
      if (!before[event].has(listener)) body.off(event, listener)
    }
  }
  // a body read to its end that fails later fails no one: without a listener its error would throw
  if (body.listeners("error").length === 0) body.on("error", ignore)
}

/**
 * The whole text of `body`. undici's read leaves a `close` and an `error` listener on the body
 * whose closures hold the read's promise, and so the text, for as long as the body is reachable,
 * which in a scan outlasted a scavenge: every page's text was promoted to the old generation (its
 * bytes, read by `arrayBuffer()`, likewise). They are taken off once it is read.
 */
const textOf = (body: WholeRead): Promise<string> => {
  if (!isListened(body)) return body.text()
  const before = { close: new Set(body.listeners("close")), error: new Set(body.listeners("error")) }
  return body.text().finally(() => offAdded(body, before))
}

/**
 * Reads a body in one piece with the transport's own read (`wholeReadOf`), which stops at its
 * declared length; a body read past `limit` all the same is refused.
 */
export const readWhole = <E>(
  body: WholeRead,
  limit: number,
  onError: (cause: unknown) => E
): Effect.Effect<Body, E> =>
  Effect.map(
    Effect.tryPromise({ try: () => textOf(body), catch: onError }),
    (text) => withinBytes(text, limit) ? { text, complete: true } : pastLimit
  )

/**
 * Reads a Node `Readable` up to `limit` bytes as its chunks arrive (one `Effect.async`, no stream):
 * past the limit it is destroyed and nothing of it kept. Fails with `onError` of the error that
 * ends it early (an abort included), or when it closes before its end; interrupted, it is destroyed.
 */
const readNode = <E>(readable: NodeReadable, limit: number, onError: (cause: unknown) => E) =>
  Effect.async<Body, E>((resume) => {
    const kept = collect(limit)
    const detach = () => {
      readable.off("data", onData)
      readable.off("end", onEnd)
      readable.off("error", onFailure)
      readable.off("close", onClose)
    }
    const onData = (chunk: Uint8Array) => {
      if (kept.add(chunk)) return
      detach()
      readable.destroy()
      resume(Effect.succeed(pastLimit))
    }
    const onEnd = () => {
      detach()
      resume(Effect.succeed(kept.body()))
    }
    const onFailure = (error: unknown) => {
      detach()
      resume(Effect.fail(onError(error)))
    }
    const onClose = () => onFailure(new Error("the body closed before its end"))
    readable.on("data", onData)
    readable.on("end", onEnd)
    readable.on("error", onFailure)
    readable.on("close", onClose)
    return Effect.sync(() => {
      detach()
      readable.destroy()
    })
  })

/**
 * Reads a web `ReadableStream` up to `limit` bytes with its reader, in one `Effect.async`: past the
 * limit it is cancelled and nothing of it kept. Fails with `onError` of the error a read rejects
 * with (an abort included); interrupted, the stream is cancelled.
 */
const readWeb = <E>(stream: ReadableStream<Uint8Array>, limit: number, onError: (cause: unknown) => E) =>
  Effect.async<Body, E>((resume) => {
    const reader = stream.getReader()
    const kept = collect(limit)
    let settled = false
    const cancel = () => {
      settled = true
      // what a cancelled stream rejects with is of no interest: the read is over
      reader.cancel().catch(() => undefined)
    }
    const onFailure = (error: unknown) => {
      if (settled) return
      settled = true
      resume(Effect.fail(onError(error)))
    }
    const onRead = (result: ReadableStreamReadResult<Uint8Array>): void => {
      if (settled) return
      if (result.done) {
        settled = true
        return resume(Effect.succeed(kept.body()))
      }
      if (!kept.add(result.value)) {
        cancel()
        return resume(Effect.succeed(pastLimit))
      }
      reader.read().then(onRead, onFailure)
    }
    reader.read().then(onRead, onFailure)
    return Effect.sync(() => {
      if (!settled) cancel()
    })
  })

/**
 * Reads a body the transport keeps (`nativeBodyOf`) up to `limit` bytes, decoded whatever the
 * encoding (the transport decodes, or does not, before these bytes): as `readUpTo` does over its
 * stream, at the cost of one callback a chunk rather than an Effect stream's pulls.
 */
export const readNative = <E>(
  body: NativeBody,
  limit: number,
  onError: (cause: unknown) => E
): Effect.Effect<Body, E> =>
  body._tag === "Web" ? readWeb(body.stream, limit, onError) : readNode(body.readable, limit, onError)

/**
 * Reads a body up to `limit` bytes, as they come out of the transport (decoded, whatever the
 * encoding): when its declared length (`declaredLength`) is past the limit, nothing is read;
 * otherwise its bytes are counted as they arrive, and the read stops past the limit, whatever
 * length was declared. The chunks are kept as they come and decoded once, when the text is first
 * read. A body not read to its end is the caller's to end: a client aborts the request, a server
 * answers and closes the connection.
 */
export const readUpTo = <E, R>(
  body: Stream.Stream<Uint8Array, E, R>,
  limit: number,
  declared: number | undefined
): Effect.Effect<Body, E, R> =>
  declared !== undefined && declared > limit
    ? Effect.succeed(pastLimit)
    : Effect.suspend(() => {
      const kept = collect(limit)
      let complete = true
      return Effect.map(
        Stream.runForEachWhile(body, (chunk) => Effect.sync(() => complete = kept.add(chunk))),
        (): Body => complete ? kept.body() : pastLimit
      )
    })
