/**
 * The names of a mirror's tables and view, and the checks that refuse a name before any statement:
 * where a mirror is (`Target`).
 */
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { InvalidInput } from "../../MicroappError.js"
import { passesTable } from "./passes.js"
import { viewsTable } from "./typedView.js"

export const defaultTable = "microapp_rows"

export const historyTableOf = (table: string): string => `${table}_history`

export const deletesTableOf = (table: string): string => `${table}_pass_deletes`

export const keptTableOf = (table: string): string => `${table}_pass_kept`

export const seenTableOf = (table: string): string => `${table}_pass_seen`

/** The tables of a mirror, by name. */
export interface Tables {
  readonly rows: string
  readonly history: string | undefined
  readonly deletes: string
  readonly kept: string
  readonly seen: string
}

/** The tables of a mirror into `table`. */
export const tablesOf = (table: string, history: boolean): Tables => ({
  rows: table,
  history: history ? historyTableOf(table) : undefined,
  deletes: deletesTableOf(table),
  kept: keptTableOf(table),
  seen: seenTableOf(table)
})

/** One Microapp's mirror into one set of tables, on one database: what every step of a pass works on. */
export interface Target {
  readonly sql: SqlClient.SqlClient
  readonly tables: Tables
  readonly microAppID: string
}

/** Longest table name: PostgreSQL keeps 63 bytes of a name, and `_pass_deletes` is added to it. */
const maxTableName = 63 - "_pass_deletes".length

/** Longest view name: PostgreSQL keeps 63 bytes of a name, and would cut a longer one into another's. */
const maxViewName = 63

/** Why a table or view may not be named `name`, if it may not. */
const nameProblem = (name: string, max: number): string | undefined =>
  /^(?:sqlite_|pg_)/i.test(name)
    ? `'${name}' is reserved: names beginning sqlite_ or pg_ belong to the database`
    : /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && name.length <= max
    ? undefined
    : `'${name}' must be a letter or _ then letters, digits or _, at most ${max} characters`

export const tableOf = (options: { readonly table?: string | undefined }): Effect.Effect<string, InvalidInput> => {
  const table = options.table ?? defaultTable
  const reason = nameProblem(table, maxTableName)
  return reason === undefined ? Effect.succeed(table) : Effect.fail(new InvalidInput({ input: "table", reason }))
}

export const viewOf = (
  options: { readonly view: string; readonly table?: string | undefined }
): Effect.Effect<string, InvalidInput> => {
  const { view } = options
  const table = options.table ?? defaultTable
  const mirrorTable = [
    table,
    historyTableOf(table),
    deletesTableOf(table),
    keptTableOf(table),
    seenTableOf(table),
    passesTable,
    viewsTable
  ]
    .find((name) => name.toLowerCase() === view.toLowerCase())
  const reason = nameProblem(view, maxViewName) ??
    (mirrorTable === undefined ? undefined : `'${view}' is taken: the mirror keeps its table ${mirrorTable}`)
  return reason === undefined ? Effect.succeed(view) : Effect.fail(new InvalidInput({ input: "view", reason }))
}
