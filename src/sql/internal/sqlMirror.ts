/**
 * What `SqlMirror` does: its tables made, a mirror's state read, and a pass run to its end, page
 * by page, each page's changes, view and checkpoint in one transaction.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option, Ref, Stream } from "effect"
import * as Changes from "../../Changes.js"
import type * as SqlMirror from "../SqlMirror.js"
import * as Mirror from "./mirror.js"
import { tableOf, tablesOf, type Target, viewOf } from "./names.js"
import * as Passes from "./passes.js"
import * as TypedView from "./typedView.js"

export { databaseWords } from "./databaseWords.js"
export { defaultTable, deletesTableOf, historyTableOf, keptTableOf, seenTableOf, tableOf, viewOf } from "./names.js"
export { passesTable } from "./passes.js"
export { maxViewFields } from "./typedView.js"

export const createTables = Effect.fn("SqlMirror.createTables")(function*(
  options: { readonly table?: string | undefined; readonly history?: boolean | undefined }
) {
  const table = yield* tableOf(options)
  const sql = yield* SqlClient.SqlClient
  yield* Mirror.createTables(sql, tablesOf(table, options.history ?? false))
})

export const passState = Effect.fn("SqlMirror.passState")(function*(
  options: { readonly microAppID: string; readonly table?: string | undefined }
) {
  const table = yield* tableOf(options)
  const sql = yield* SqlClient.SqlClient
  // a read creates nothing: before the first run, there is no passes table and no pass
  if (!(yield* Passes.passesTableExists(sql))) return Option.none<SqlMirror.PassState>()
  const stored = yield* Passes.stored({ sql, tables: tablesOf(table, false), microAppID: options.microAppID })
  if (Option.isNone(stored)) return Option.none<SqlMirror.PassState>()
  const { checkpoint, complete, pass } = stored.value
  const summary = checkpoint === null
    ? Option.none<Changes.Summary>()
    : Option.some((yield* Changes.fromJson(checkpoint)).summary)
  return Option.some<SqlMirror.PassState>({ pass, complete: complete === 1, summary })
})

/** One pass, opened (resumed, or new) and run to its end; its summary. */
export const run = Effect.fn("SqlMirror.run")(
  function*<R>(options: SqlMirror.Options, watch: SqlMirror.Watch<R> | undefined) {
    const { definition, history = false, table: _, view, ...rows } = options
    const table = yield* tableOf(options)
    const viewed = view === undefined
      ? undefined
      : { name: yield* viewOf({ view, table }), table, microAppID: rows.microAppID }
    const sql = yield* SqlClient.SqlClient
    const target: Target = { sql, tables: tablesOf(table, history), microAppID: rows.microAppID }
    if (viewed !== undefined) yield* TypedView.claim(sql, viewed)
    yield* Mirror.createTables(sql, target.tables)
    const keepView = viewed === undefined ? undefined : yield* Mirror.openView(sql, viewed, definition)
    const opened = yield* sql.withTransaction(Mirror.openPass(target, rows))
    const commits = yield* Ref.make(opened.commits)
    const writing = yield* Ref.make(false)
    const pages = Stream.runForEach(opened.changes.pages, (page) =>
      Effect.gen(function*() {
        const before = yield* Ref.get(commits)
        // the commit count moves only with a transaction that committed
        const after = yield* sql.withTransaction(Effect.zipLeft(
          Effect.zipRight(
            Mirror.writePage(target, opened.pass, page),
            Mirror.savePass(target, before, { pass: opened.pass, checkpoint: page.checkpoint })
          ),
          keepView === undefined ? Effect.void : keepView(page.changes)
        )).pipe((write) => Effect.zipRight(Ref.set(writing, true), write), Effect.ensuring(Ref.set(writing, false)))
        yield* Ref.set(commits, after)
      }))
    const progress = Effect.map(
      Effect.all([opened.changes.summary, Ref.get(writing)]),
      ([summary, writes]): SqlMirror.Progress => ({
        summary,
        phase: writes ? "writing" : summary.deletes === "pending" ? "reading" : "confirming deletes"
      })
    )
    yield* watch === undefined ? pages : watch(progress)(pages)
    return yield* opened.changes.summary
  }
)
