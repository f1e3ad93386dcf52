/**
 * `microapp demo` (`npm start`): the silent row cap of the service, shown on the emulator, and the
 * client that reads past it; then a row read, updated and read back. Ends by itself.
 *
 * @since 0.1.0
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Effect, Layer, Redacted, Schema, Stream } from "effect"
import { MicroappClient } from "../MicroappClient.js"
import { type MicroappError } from "../MicroappError.js"
import { MicroappServer, projectsMicroAppID } from "../testing/index.js"
import { CommandFailed } from "./exitCodes.js"
import { summaryLine } from "./progress.js"
import { Stdio, type WriteError } from "./stdio.js"

/** A table bigger than the server's default row limit: the gap is the point of the demo. */
const tableRows = 2500
const defaultLimit = 1000

const PlainAnswer = Schema.Struct({ body: Schema.Struct({ microAppRows: Schema.Array(Schema.Unknown) }) })

const statuses = ["Open", "In progress", "Done"] as const

const say = (...lines: ReadonlyArray<string>) =>
  Effect.flatMap(Stdio, (stdio) => stdio.stdout.write(`${lines.join("\n")}\n`))

const quoted = (value: unknown): string => JSON.stringify(value) ?? "undefined"

/**
 * @since 0.1.0
 * @category commands
 */
export const demo: Effect.Effect<void, MicroappError | WriteError, Stdio> = Effect.gen(function*() {
  const server = yield* MicroappServer
  const microAppID = projectsMicroAppID
  yield* say(
    `Microapp Data Service emulator on ${server.baseUrl}`,
    `  Projects (${microAppID}): ${tableRows} rows; the server's default row limit: ${defaultLimit}`,
    ""
  )

  // 1. what a naive client does: one request, no limit, trusting "success"
  const http = yield* HttpClient.HttpClient
  const plain = yield* http.execute(
    HttpClientRequest.post(`${server.baseUrl}/api/microappdata`).pipe(
      HttpClientRequest.setHeaders({
        "X-Auth-Token": server.credentials.authToken,
        "X-User-Id": server.credentials.userId
      }),
      HttpClientRequest.bodyUnsafeJson({ microAppID })
    )
  ).pipe(
    Effect.flatMap(HttpClientResponse.schemaBodyJson(PlainAnswer)),
    Effect.mapError((error) => new CommandFailed({ message: `the plain request failed: ${error.message}` }))
  )
  const plainCount = plain.body.microAppRows.length
  yield* say(
    "1. A plain request, as a naive client makes it",
    `   POST /api/microappdata {"microAppID": "${microAppID}"}`,
    `   -> status "success", ${plainCount} rows. No total, no "has more", no cursor: nothing says rows are missing.`,
    ""
  )

  // 2. the client's stream: explicit limits, skip by rows received, ends only on an empty page
  const client = yield* MicroappClient
  const scan = yield* client.scan({ microAppID })
  const seen = new Set<string>()
  let target: string | undefined
  yield* Stream.runForEach(scan.rows, (row) =>
    Effect.sync(() => {
      seen.add(row._id)
      // an unlocked row the plain request never returned (a locked one refuses updates)
      if (target === undefined && seen.size >= plainCount + 500 && row.isLocked !== true) target = row._id
    }))
  const summary = yield* scan.summary
  yield* say(
    "2. The same table through the client's stream",
    `   client.rows({ microAppID }) -> ${summary.rows} rows, ${seen.size} distinct ids, complete: ${summary.complete}`,
    `   ${summaryLine(summary)}`,
    ""
  )
  if (target === undefined) {
    return yield* new CommandFailed({ message: `the stream returned ${seen.size} rows, fewer than the demo needs` })
  }

  // 3-5. read, update, read back
  const before = yield* client.getRow(target)
  yield* say(
    `3. Read row ${target}, which the plain request never returned`,
    `   client.getRow(...) -> Name ${quoted(before["Name"])}, Status ${quoted(before["Status"])}`,
    ""
  )
  const current = statuses.findIndex((status) => status === before["Status"])
  const next = statuses[(current + 1) % statuses.length] ?? "Done"
  yield* client.updateRow({ rowID: target, rowData: { Status: next } })
  yield* say(
    "4. Update it",
    `   client.updateRow({ rowID, rowData: { Status: ${quoted(next)} } }) -> done (the server said "success")`,
    ""
  )
  const after = yield* client.getRow(target)
  yield* say(
    "5. Read it back",
    `   client.getRow(...) -> Status ${quoted(after["Status"])} (was ${quoted(before["Status"])})`,
    ""
  )

  const missing = summary.rows - plainCount
  yield* say(
    "Why it matters",
    `   The plain request answered "success" with ${plainCount} of ${summary.rows} rows: ${missing} rows ` +
      `(${Math.round((missing / summary.rows) * 100)}%) silently missing.`,
    "   The stream read them all: it asks for an explicit limit, advances by the rows received, ends",
    "   only when a request finds nothing more, and reports a shift it cannot realign instead of",
    "   passing a partial table off as the whole one.",
    "",
    "   Same thing from the command line:",
    "     microapp serve   (in another terminal; prints the credentials)",
    `     microapp rows ${microAppID} --format csv --output projects.csv`
  )
}).pipe(
  Effect.provide(
    Layer.unwrapEffect(
      Effect.map(MicroappServer, (emulator) =>
        MicroappClient.layer({
          baseUrl: emulator.baseUrl,
          authToken: Redacted.make(emulator.credentials.authToken),
          userId: emulator.credentials.userId
        }))
    ).pipe(Layer.provideMerge(MicroappServer.layer({ demoRows: tableRows, defaultLimit })))
  ),
  Effect.provide(NodeHttpClient.layerUndici),
  Effect.catchTag("ServeError", (error) =>
    new CommandFailed({
      message: `the emulator cannot start: ${error.cause instanceof Error ? error.cause.message : String(error.cause)}`
    }))
)
