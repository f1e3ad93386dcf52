/**
 * A mirror of a Microapp in a SQLite file, one pass a run: `SqlMirror.run` keeps the table
 * `microapp_rows` equal to the Microapp, each page of changes and the pass's checkpoint in one
 * transaction; run it again after a crash and it goes on from there, after a complete pass and it
 * starts the next. `npx vite-node scratchpad/mirrorSqlite.ts [DB_FILE] [MICROAPP_ID] [PAGE_SIZE]`
 * mirrors the embedded emulator's Projects, or the service at `$MICROAPP_BASE_URL` (with
 * `$MICROAPP_AUTH_TOKEN` and `$MICROAPP_USER_ID`) when set.
 */
import type { HttpClient } from "@effect/platform"
import { NodeHttpClient, NodeRuntime } from "@effect/platform-node"
import { LibsqlClient } from "@effect/sql-libsql"
import { Console, Effect, Layer } from "effect"
import * as path from "node:path"
import { MicroappClient } from "../src/index.js"
import { SqlMirror } from "../src/sql/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"

const [database = "mirror.db", microAppID = projectsMicroAppID, pageSize = "1000"] = process.argv.slice(2)

const Client: Layer.Layer<MicroappClient, unknown, HttpClient.HttpClient> =
  process.env["MICROAPP_BASE_URL"] === undefined
    ? MicroappServer.layerWithClient({ demoRows: 2500 }, { pageSize: Number(pageSize) })
    : MicroappClient.layerConfig({ pageSize: Number(pageSize) })

const program = Effect.gen(function*() {
  const summary = yield* SqlMirror.run({ microAppID })
  yield* Console.log(
    `${database}: ${summary.rows} rows of ${microAppID} in ${summary.pages} pages ` +
      `(inserted ${summary.inserted}, updated ${summary.updated}, deleted ${summary.deleted}, ` +
      `unchanged ${summary.unchanged}), resumed: ${summary.resumed}, exhaustive: ${summary.exhaustive}`
  )
})

program.pipe(
  Effect.provide(Layer.mergeAll(
    Client.pipe(Layer.provide(NodeHttpClient.layerUndici)),
    LibsqlClient.layer({ url: `file:${path.resolve(database)}` })
  )),
  NodeRuntime.runMain
)
