/**
 * A fast stand-in for the service, run in its own process so that it does not share a core with
 * the client measured: answers `POST /api/updatemicroapprow` with success, `POST
 * /api/microappdata/row` with the row of that id (404 for an id it does not have), and
 * `POST /api/microappdata` by joining pre-serialised rows, honouring
 * `searchFilter[0].skip` (a numeric string or a number) and `limit`, after an optional fixed delay.
 * Any skip and limit are accepted: the client re-reads a few rows before each window. With
 * `refuseEvery: n`, every n-th read is answered at once with a 429 that has no `Retry-After`, as a
 * rate limiter that says only "slow down" does.
 *
 * Every answer is sent in one of three forms (`Answers`): whole with its `Content-Length`, as the
 * service's Express sends it; chunked, without a length, as a server streaming its answer does; or
 * gzip-compressed and chunked, as a compressing proxy in front of such a server does for a request
 * that accepts gzip (to one that asks for `identity`, as this client does, it passes the chunked
 * answer as it is). The form is the server's setting, or the first segment of the path
 * (`/chunked/api/...`), so that contenders reading each form take turns against one server.
 *
 * Run by `startServer`; tells its parent the port over IPC.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Zlib from "node:zlib"
import { answerForms, type Answers } from "./common.js"
import { serialisedRows } from "./table.js"

/** What the parent asks for. */
export interface ServerConfig {
  readonly rows: number
  readonly delayMillis: number
  /** Every n-th read is refused (429, no `Retry-After`); none when absent. */
  readonly refuseEvery?: number | undefined
  /** The form of an answer whose path names none; `length` when absent. */
  readonly answers?: Answers | undefined
}

/** What the server tells its parent once it listens. */
export interface ServerReady {
  readonly port: number
}

const head = `{"status":"success","body":{"microAppRows":[`
// an update is taken as the service takes it: the status alone
const updated = `{"status":"success"}`
const tail = `]}}`
// the service's silent default row cap, applied when a request names no limit
const defaultLimit = 1000
// a window of at most this many rows is one string, sent whole in the answers' form (with its
// length, as the service's Express sends every answer): a page and the rows re-read before it (1,011)
const wholeRows = 10_000
// a larger window is written in slices, so the whole-table answer is never one string in the server
const sliceRows = 1000

const window = (body: unknown): { readonly skip: number; readonly limit: number } | undefined => {
  if (typeof body !== "object" || body === null || !("searchFilter" in body)) return { skip: 0, limit: defaultLimit }
  const filters = body.searchFilter
  const first: unknown = Array.isArray(filters) ? filters[0] : undefined
  if (typeof first !== "object" || first === null) return { skip: 0, limit: defaultLimit }
  const skip = "skip" in first ? Number(first.skip) : 0
  const limit = "limit" in first ? Number(first.limit) : defaultLimit
  return Number.isSafeInteger(skip) && skip >= 0 && Number.isSafeInteger(limit) && limit >= 0
    ? { skip, limit }
    : undefined
}

const fail = (response: Http.ServerResponse, status: number, message: string) => {
  response.writeHead(status, { "content-type": "application/json" })
  response.end(JSON.stringify({ status: "error", message }))
}

/** Whether a request's `Accept-Encoding` takes gzip (`identity` alone, or `gzip;q=0`, does not). */
const acceptsGzip = (request: Http.IncomingMessage): boolean =>
  (request.headers["accept-encoding"] ?? "").split(",").some((coding) => {
    const [name, ...params] = coding.split(";").map((part) => part.trim().toLowerCase())
    return (name === "gzip" || name === "*") && !params.some((param) => /^q=0(?:\.0*)?$/.test(param))
  })

/** A whole answer, in the form `answers` asks for. */
const answer = (
  request: Http.IncomingMessage,
  response: Http.ServerResponse,
  answers: Answers,
  status: number,
  text: string
) => {
  if (answers === "length") {
    response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
    return response.end(text)
  }
  if (answers === "gzip" && acceptsGzip(request)) {
    response.writeHead(status, { "content-type": "application/json", "content-encoding": "gzip" })
    response.write(Zlib.gzipSync(text, { level: 1 }))
    return response.end()
  }
  // headers written before the body, and the body written before the end: no length is declared
  response.writeHead(status, { "content-type": "application/json" })
  response.write(text)
  response.end()
}

/**
 * Writes rows [from, to) in slices, waiting for the socket to drain between them; gzip-compressed
 * (in a stream, slice by slice) when the answers are and the request accepts it.
 */
const stream = async (
  request: Http.IncomingMessage,
  response: Http.ServerResponse,
  answers: Answers,
  rows: ReadonlyArray<string>,
  from: number,
  to: number
) => {
  const gzip = answers === "gzip" && acceptsGzip(request)
  response.writeHead(200, { "content-type": "application/json", ...(gzip ? { "content-encoding": "gzip" } : {}) })
  const out: NodeJS.WritableStream = gzip ? Zlib.createGzip({ level: 1 }) : response
  if (out !== response) (out as Zlib.Gzip).pipe(response)
  out.write(head)
  for (let start = from; start < to; start += sliceRows) {
    const piece = (start === from ? "" : ",") + rows.slice(start, Math.min(to, start + sliceRows)).join(",")
    if (!out.write(piece)) {
      await new Promise<void>((resolve) => out.once("drain", () => resolve()))
    }
  }
  out.end(tail)
}

/** A point read's answer: the row of the id asked for, or a 404 as the service's. */
const pointRead = (rows: ReadonlyArray<string>) => {
  let byId: Map<string, string> | undefined
  return (request: Http.IncomingMessage, response: Http.ServerResponse, answers: Answers, body: unknown) => {
    byId ??= new Map(rows.map((row) => [(JSON.parse(row) as { readonly _id: string })._id, row]))
    const id = typeof body === "object" && body !== null && "rowID" in body ? String(body.rowID) : ""
    const row = byId.get(id)
    if (row === undefined) return fail(response, 404, "Row not found")
    answer(request, response, answers, 200, `{"status":"success","body":{"currentRow":${row}}}`)
  }
}

/** The form a request asks for by its path's first segment, and the path without it. */
const formOf = (url: string, fallback: Answers): { readonly answers: Answers; readonly path: string } => {
  const segment = /^\/([a-z]+)(\/.*)$/.exec(url)
  const named = answerForms.find((form) => form === segment?.[1])
  return named === undefined || segment?.[2] === undefined
    ? { answers: fallback, path: url }
    : { answers: named, path: segment[2] }
}

const serve = (config: ServerConfig, rows: ReadonlyArray<string>) => {
  let reads = 0
  const read = pointRead(rows)
  return Http.createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      let body: unknown
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      } catch {
        return fail(response, 400, "body is not JSON")
      }
      const { answers, path } = formOf(request.url ?? "", config.answers ?? "length")
      if (path === "/api/updatemicroapprow") return answer(request, response, answers, 200, updated)
      if (path === "/api/microappdata/row") {
        if (config.delayMillis > 0) return setTimeout(() => read(request, response, answers, body), config.delayMillis)
        return read(request, response, answers, body)
      }
      const asked = window(body)
      if (path !== "/api/microappdata" || asked === undefined) return fail(response, 400, "bad request")
      reads++
      if (config.refuseEvery !== undefined && reads % config.refuseEvery === 0) {
        return fail(response, 429, "too many requests")
      }
      const from = Math.min(asked.skip, rows.length)
      const to = Math.min(rows.length, from + asked.limit)
      const send = () => {
        if (to - from <= wholeRows) {
          answer(request, response, answers, 200, head + rows.slice(from, to).join(",") + tail)
        } else {
          stream(request, response, answers, rows, from, to).catch(() => response.destroy())
        }
      }
      if (config.delayMillis > 0) setTimeout(send, config.delayMillis)
      else send()
    })
  })
}

const main = () => {
  const config = JSON.parse(process.argv[2] ?? "{}") as ServerConfig
  const rows = serialisedRows(config.rows)
  const server = serve(config, rows)
  // keep-alive longer than the longest pause between a contender's requests
  server.keepAliveTimeout = 60_000
  server.listen(0, "127.0.0.1", () => {
    const ready: ServerReady = { port: (server.address() as AddressInfo).port }
    process.send?.(ready)
  })
  // the parent's end is the server's end
  process.on("disconnect", () => process.exit(0))
}

main()
