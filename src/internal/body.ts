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

const decodeChunks = (chunks: ReadonlyArray<Uint8Array>, bytes: number): string => {
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

/**
 * Reads a body up to `limit` bytes. When its length is declared (`Content-Length`) and within the
 * limit, it is read whole with `whole`: the transport reads no more than declared. When the
 * declared length is past the limit, nothing is read. Otherwise it is read as it arrives, counting
 * its bytes, and the read stops past the limit. The chunks are kept as they come and decoded once,
 * at the end. A body not read to its end is the caller's to end: a client aborts the request, a
 * server answers and closes the connection.
 */
export const readUpTo = <E, R>(
  body: { readonly whole: Effect.Effect<string, E, R>; readonly stream: Stream.Stream<Uint8Array, E, R> },
  limit: number,
  declared: string | undefined
): Effect.Effect<Body, E, R> => {
  const length = declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : undefined
  if (length !== undefined) {
    return length <= limit
      ? Effect.map(body.whole, (text) => ({ text, complete: true }))
      : Effect.succeed({ text: "", complete: false })
  }
  return Effect.suspend(() => {
    const chunks: Array<Uint8Array> = []
    let kept = 0
    let complete = true
    return Effect.map(
      Stream.runForEachWhile(body.stream, (chunk) =>
        Effect.sync(() => {
          complete = kept + chunk.length <= limit
          if (!complete) return false
          chunks.push(chunk)
          kept += chunk.length
          return true
        })),
      (): Body => ({ text: decodeChunks(chunks, kept), complete })
    )
  })
}
