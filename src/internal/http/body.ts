/**
 * Reading a body in bounded memory: the client reads answers with it, the emulator requests.
 */
import { Effect, Stream } from "effect"

/** What was read of a body: its text, up to the limit, and whether that was all of it. */
export interface Body {
  readonly text: string
  readonly complete: boolean
}

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
  bytes.byteLength > limit ? { text: "", complete: false } : { text: decoder.decode(bytes), complete: true }

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
    ? Effect.succeed({ text: "", complete: false })
    : Effect.suspend(() => {
      const chunks: Array<Uint8Array> = []
      let kept = 0
      let complete = true
      return Effect.map(
        Stream.runForEachWhile(body, (chunk) =>
          Effect.sync(() => {
            complete = kept + chunk.length <= limit
            if (!complete) return false
            chunks.push(chunk)
            kept += chunk.length
            return true
          })),
        (): Body => {
          // decoded when first read: of a body past the limit, most callers read nothing
          let text: string | undefined
          return {
            complete,
            get text() {
              return text ??= decodeChunks(chunks, kept)
            }
          }
        }
      )
    })
