/**
 * `SELECT status, count(*) ... GROUP BY status` over N demo Projects rows mirrored into PostgreSQL,
 * three ways side by side in one run: over `data` kept as JSON text (the mirror before jsonb,
 * `data::jsonb->>'Status'`), over the `jsonb` column by hand (`data->>'Status'`), and over the typed
 * view (`status`). The median of 5 runs of each, after one to warm the cache.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlMirror } from "../../src/sql/index.js"
import { MicroappServer, projectsMicroAppID } from "../../src/testing/index.js"
import { startPostgres } from "../postgres.js"
import { failed, finish, formatInt, median, options, type Report } from "./common.js"

const queries = {
  text: "SELECT data::jsonb->>'Status' AS status, count(*) FROM text_rows GROUP BY 1",
  jsonb: "SELECT data->>'Status' AS status, count(*) FROM microapp_rows GROUP BY 1",
  view: "SELECT status, count(*) FROM projects GROUP BY status"
} as const

const timed = (sql: SqlClient.SqlClient, query: string) =>
  Effect.gen(function*() {
    yield* sql.unsafe(query)
    const times: Array<number> = []
    for (let i = 0; i < 5; i++) {
      const start = performance.now()
      yield* sql.unsafe(query)
      times.push(performance.now() - start)
    }
    return median(times) / 1000
  })

const main = async (): Promise<Report> => {
  const opts = options()
  const rows = opts.number("rows", 100_000, 2_000)
  const postgres = await startPostgres()
  try {
    const emulator = MicroappServer.layerWithClient({ demoRows: rows }, { retry: false }).pipe(
      Layer.provide(NodeHttpClient.layerUndici)
    )
    const database = PgClient.layer({ url: Redacted.make(postgres.url) })
    const mirrorStart = performance.now()
    const seconds = await Effect.runPromise(
      Effect.gen(function*() {
        yield* SqlMirror.run({ microAppID: projectsMicroAppID, view: "projects", pageSize: 1000 })
        const mirrorSeconds = (performance.now() - mirrorStart) / 1000
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE text_rows AS SELECT microapp_id, row_id, data::text AS data FROM microapp_rows`
        yield* sql`VACUUM ANALYZE`
        return {
          mirror: mirrorSeconds,
          text: yield* timed(sql, queries.text),
          jsonb: yield* timed(sql, queries.jsonb),
          view: yield* timed(sql, queries.view)
        }
      }).pipe(Effect.provide(Layer.merge(emulator, database)))
    )
    const line = (name: keyof typeof queries, label: string) =>
      `| ${label} | \`${queries[name]}\` | ${seconds[name].toFixed(3)} | ${(seconds[name] / seconds.view).toFixed(1)} |`
    return {
      title: "views",
      findings: [
        {
          figure: `GROUP BY status over the typed view, ${formatInt(rows)} rows on PostgreSQL`,
          measured: `${seconds.view.toFixed(3)} s (JSON text ${seconds.text.toFixed(3)} s)`,
          goal: "<= 0.3 s",
          met: seconds.view <= 0.3
        }
      ],
      details: [
        `### GROUP BY status over ${formatInt(rows)} demo Projects rows on PostgreSQL (median of 5)`,
        "",
        `Mirrored with \`SqlMirror.run({ view: "projects" })\` in ${seconds.mirror.toFixed(1)} s.`,
        "",
        "| data | query | s | ratio to the view |",
        "|---|---|---:|---:|",
        line("text", "JSON text (before jsonb)"),
        line("jsonb", "jsonb column"),
        line("view", "typed view")
      ].join("\n")
    }
  } finally {
    await postgres.stop()
  }
}

main().then(finish, failed)
