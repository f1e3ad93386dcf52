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
 * Run by `startServer`; tells its parent the port over IPC.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { serialisedRows } from "./table.js"

/** What the parent asks for. */
export interface ServerConfig {
  readonly rows: number
  readonly delayMillis: number
  /** Every n-th read is refused (429, no `Retry-After`); none when absent. */
  readonly refuseEvery?: number | undefined
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
// a window of at most this many rows is one string sent with its length, as the service's Express
// sends every answer: a page and the rows the client re-reads before it (1,011) are such a window
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

/** Writes rows [from, to) in slices, waiting for the socket to drain between them. */
const stream = async (response: Http.ServerResponse, rows: ReadonlyArray<string>, from: number, to: number) => {
  response.writeHead(200, { "content-type": "application/json" })
  response.write(head)
  for (let start = from; start < to; start += sliceRows) {
    const piece = (start === from ? "" : ",") + rows.slice(start, Math.min(to, start + sliceRows)).join(",")
    if (!response.write(piece)) {
      await new Promise<void>((resolve) => response.once("drain", () => resolve()))
    }
  }
  response.end(tail)
}

/** A point read's answer: the row of the id asked for, or a 404 as the service's. */
const pointRead = (rows: ReadonlyArray<string>) => {
  let byId: Map<string, string> | undefined
  return (response: Http.ServerResponse, body: unknown) => {
    byId ??= new Map(rows.map((row) => [(JSON.parse(row) as { readonly _id: string })._id, row]))
    const id = typeof body === "object" && body !== null && "rowID" in body ? String(body.rowID) : ""
    const row = byId.get(id)
    if (row === undefined) return fail(response, 404, "Row not found")
    const text = `{"status":"success","body":{"currentRow":${row}}}`
    response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
    response.end(text)
  }
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
      if (request.url === "/api/updatemicroapprow") {
        response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(updated) })
        return response.end(updated)
      }
      if (request.url === "/api/microappdata/row") {
        if (config.delayMillis > 0) return setTimeout(() => read(response, body), config.delayMillis)
        return read(response, body)
      }
      const asked = window(body)
      if (request.url !== "/api/microappdata" || asked === undefined) return fail(response, 400, "bad request")
      reads++
      if (config.refuseEvery !== undefined && reads % config.refuseEvery === 0) {
        return fail(response, 429, "too many requests")
      }
      const from = Math.min(asked.skip, rows.length)
      const to = Math.min(rows.length, from + asked.limit)
      const answer = () => {
        if (to - from <= wholeRows) {
          const text = head + rows.slice(from, to).join(",") + tail
          response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
          response.end(text)
        } else {
          stream(response, rows, from, to).catch(() => response.destroy())
        }
      }
      if (config.delayMillis > 0) setTimeout(answer, config.delayMillis)
      else answer()
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
