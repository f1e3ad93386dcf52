/**
 * The SQL mirror's `data` column and typed views, on SQLite and a real PostgreSQL: `data` is jsonb
 * on PostgreSQL, a table an earlier version wrote with JSON text is migrated in place by the first
 * run and compares unchanged; a view with a typed column per field, from a definition or inferred
 * and widened, and `microapp mirror --view`; every label read as its own, 5,000 fields mirrored with
 * the first 1,500 as columns and the rest named in a warning, and view names checked as table names.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, FastCheck as FC, Layer, Logger } from "effect"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import { Changes, Microapp } from "../src/index.js"
import { SqlMirror } from "../src/sql/index.js"
import { columnNames, heldFields, maxViewFields, sqlitePath, warnLeftInData } from "../src/sql/internal/typedView.js"
import { MicroappServer, peopleMicroAppID, Projects, projectsMicroAppID } from "../src/testing/index.js"
import { cli, flags } from "./cliSupport.js"
import { databases, freshSqlite, storedData } from "./sqlDatabases.js"
import { withEmulator } from "./support.js"

const demoRows = 150

const emulator = withEmulator({ demoRows }, { retry: false })

/** The rows table as the version before jsonb created it and wrote a complete pass into it. */
const writtenByTextVersion = (table: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const server = yield* MicroappServer
    yield* sql`CREATE TABLE ${sql(table)} (
      microapp_id TEXT NOT NULL, row_id TEXT NOT NULL, data TEXT NOT NULL, fingerprint TEXT NOT NULL,
      pass INTEGER NOT NULL, PRIMARY KEY (microapp_id, row_id))`
    yield* sql`CREATE TABLE IF NOT EXISTS ${sql(SqlMirror.passesTable)} (
      row_table TEXT NOT NULL, microapp_id TEXT NOT NULL, pass INTEGER NOT NULL, complete INTEGER NOT NULL,
      checkpoint TEXT, inserted INTEGER NOT NULL, updated INTEGER NOT NULL, deleted INTEGER NOT NULL,
      unchanged INTEGER NOT NULL, exhaustive INTEGER NOT NULL, commits INTEGER NOT NULL,
      PRIMARY KEY (row_table, microapp_id))`
    const rows = yield* server.rows.table(projectsMicroAppID)
    yield* sql`INSERT INTO ${sql(table)} ${
      sql.insert(rows.map((row) => ({
        microapp_id: projectsMicroAppID,
        row_id: String(row["_id"]),
        data: JSON.stringify(row),
        fingerprint: Changes.fingerprint(row),
        pass: 1
      })))
    }`
    yield* sql`INSERT INTO ${sql(SqlMirror.passesTable)} ${
      sql.insert({
        row_table: table,
        microapp_id: projectsMicroAppID,
        pass: 1,
        complete: 1,
        checkpoint: null,
        inserted: rows.length,
        updated: 0,
        deleted: 0,
        unchanged: 0,
        exhaustive: 1,
        commits: 1
      })
    }`
    return rows
  })

const dataType = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.onDialectOrElse({
      pg: () =>
        Effect.map(
          sql<{ data_type: string }>`SELECT data_type FROM information_schema.columns
            WHERE table_name = ${table} AND column_name = 'data'`,
          (rows) => rows[0]?.data_type
        ),
      orElse: () =>
        Effect.map(
          sql<{ type: string; name: string }>`SELECT name, type FROM pragma_table_info(${table})`,
          (rows) => rows.find((row) => row.name === "data")?.type.toLowerCase()
        )
    }))

/** Each column of `view` and its type, as the database reports it (SQLite: the type of its values in the first row). */
const columnTypes = (view: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.onDialectOrElse({
      pg: () =>
        Effect.map(
          sql<{ column_name: string; data_type: string }>`SELECT column_name, data_type
            FROM information_schema.columns WHERE table_name = ${view} ORDER BY ordinal_position`,
          (rows) => Object.fromEntries(rows.map((row) => [row.column_name, row.data_type]))
        ),
      orElse: () =>
        Effect.gen(function*() {
          const names = (yield* sql<{ name: string }>`SELECT name FROM pragma_table_info(${view})`).map((row) =>
            row.name
          )
          const types = names.map((name) => `typeof("${name}") AS "${name}"`).join(", ")
          const [row] = yield* sql<Record<string, string>>`SELECT ${sql.literal(types)} FROM ${sql(view)}
            WHERE owner IS NOT NULL AND tags IS NOT NULL AND budget IS NOT NULL AND due IS NOT NULL LIMIT 1`
          return row ?? {}
        })
    }))

const statusCounts = (view: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ status: string | null; n: number | string }>`SELECT status, count(*) AS n FROM ${
        sql(view)
      } GROUP BY status`,
      (rows) => Object.fromEntries(rows.map((row) => [String(row.status), Number(row.n)]))
    ))

const expectedStatusCounts = Effect.map(
  Effect.flatMap(MicroappServer, (server) => server.rows.table(projectsMicroAppID)),
  (rows) => {
    const counts: Record<string, number> = {}
    for (const row of rows) {
      const status = String(row["Status"] ?? null)
      counts[status] = (counts[status] ?? 0) + 1
    }
    return counts
  }
)

/** A row id of the service's shape, the `n`th of a test's rows. */
const rowID = (n: number): string => `64b7c0f1a2d3e4f5a6b7${n.toString(16).padStart(4, "0")}`

/**
 * Labels each of which a view must read as its own: escapes a JSON path would decode, quotes, a
 * JSON path's own syntax, case and normal-form twins, spaces, control characters, and long labels
 * that snake_case cuts to one name.
 */
const hostileLabels = [
  "x\\u0041",
  "xA",
  "Sec\\u0072et",
  "Secret",
  "t\\tb",
  "t\tb",
  "back\\slash",
  "\\",
  "\\\\",
  "a\\",
  "\\n",
  "\\u0022",
  "Say \"hi\"",
  "\"",
  "\\\"",
  "\"\\",
  "it's",
  "'",
  "$",
  "$.x",
  "$cost",
  ".",
  "a.b",
  "[0]",
  "a[0]",
  "*",
  "line\nbreak",
  "cr\r",
  "\u0001",
  "\u007f",
  "\u00e9",
  "e\u0301",
  "Name",
  "name",
  "NAME",
  " ",
  "  ",
  " lead",
  "trail ",
  "",
  "\u{1F600}",
  `${"x".repeat(1000)}a`,
  `${"x".repeat(1000)}b`
]

/** The `r`th row's value of the `i`th hostile label: a text, an integer or a list, by turns; row 3 lacks every other label. */
const hostileValue = (i: number, r: number): unknown =>
  r === 3 && i % 2 === 0 ? undefined : i % 3 === 0 ? `${i}:${r}` : i % 3 === 1 ? i * 10 + r : [i, r]

/** A view's value as the row's: PostgreSQL's bigint comes as text, SQLite's JSON as text. */
const asRowValue = (value: unknown, like: unknown): unknown =>
  value === null
    ? undefined
    : typeof like === "number"
    ? Number(value)
    : Array.isArray(like)
    ? storedData(value)
    : value

/** The labels `view` was last made from, in their order. */
const viewLabels = (view: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ fields: string }>`SELECT fields FROM ${sql("microapp_views")} WHERE view_name = ${view}`,
      ([row]) => (JSON.parse(row?.fields ?? "[]") as Array<{ label: string }>).map((field) => field.label)
    ))

/** Whether the database has a table or view named `name`. */
const exists = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql.onDialectOrElse({
        pg: () => sql`SELECT 1 FROM pg_class WHERE relname = ${name}`,
        orElse: () => sql`SELECT 1 FROM sqlite_master WHERE name = ${name}`
      }),
      (rows) => rows.length > 0
    ))

describe("view columns", () => {
  it("any labels: distinct names of lower-case letters, digits and _, none a bookkeeping column, at most 63 bytes", () => {
    FC.assert(FC.property(FC.array(FC.string({ unit: "grapheme", maxLength: 80 }), { maxLength: 30 }), (labels) => {
      const names = columnNames(labels)
      expect(new Set(names).size).toBe(labels.length)
      for (const name of names) {
        expect(name).toMatch(/^[a-z_][a-z0-9_]*$/)
        expect(["_id", "microapp_id", "pass", "fingerprint"]).not.toContain(name)
        expect(Buffer.byteLength(name)).toBeLessThanOrEqual(63)
      }
    }))
  })

  it(`a view holds the first ${maxViewFields} fields whose label holds no U+0000, in their order`, () => {
    const fields = Array.from({ length: maxViewFields + 10 }, (_, i) => ({
      label: i === 3 ? "nul\u0000label" : `f${i}`,
      kind: "text" as const
    }))
    const held = heldFields(fields)
    expect(held).toHaveLength(maxViewFields)
    expect(held.map((field) => field.label)).toEqual(
      fields.filter((_, i) => i !== 3).slice(0, maxViewFields).map((field) => field.label)
    )
  })

  it.effect("the warning of fields left in data names those newly left, as many as fit in 1,000 characters", () =>
    Effect.gen(function*() {
      const warnings: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ logLevel, message }) => {
          if (logLevel._tag === "Warning") warnings.push((Array.isArray(message) ? message : [message]).join(" "))
        })
      )
      const fields = (n: number, label = (i: number) => `f${i}`) =>
        Array.from({ length: n }, (_, i) => ({ label: label(i), kind: "text" as const }))
      const before = fields(maxViewFields + 5)
      const after = [...before, { label: "nul\u0000", kind: "text" as const }, ...fields(2, (i) => `new ${i}`)]
      const long = fields(maxViewFields + 3, (i) => i < maxViewFields ? `f${i}` : `${i}`.repeat(100))
      yield* Effect.provide(
        Effect.all([
          warnLeftInData("v", [], fields(maxViewFields)),
          warnLeftInData("v", before, before),
          warnLeftInData("v", before, after),
          warnLeftInData("v", [], long)
        ]),
        capture
      )
      expect(warnings).toEqual([
        `the view v holds ${maxViewFields} of ${
          maxViewFields + 8
        } fields as columns; 8 are left in data, 3 of them new: ` +
        `"nul\\u0000", "new 0", "new 1"`,
        `the view v holds ${maxViewFields} of ${maxViewFields + 3} fields as columns; 3 are left in data: ` +
        `${JSON.stringify(`${maxViewFields}`.repeat(100))}, ${
          JSON.stringify(`${maxViewFields + 1}`.repeat(100))
        } and 1 more`
      ])
    }))

  it("snake_case labels; a name taken by a bookkeeping column or an earlier field gets _2, _3", () => {
    expect(columnNames(["Due date", "due_date", "DueDate", "Pass", "_id", "Ünïcode", "1st", "!!"])).toEqual([
      "due_date",
      "due_date_2",
      "due_date_3",
      "pass_2",
      "id",
      "unicode",
      "f_1st",
      "field"
    ])
  })
})

/** Labels of the characters a JSON path gives a meaning to, or of any code point but U+0000 (which no view holds). */
const anyLabels = FC.uniqueArray(
  FC.oneof(
    FC.string({
      unit: FC.constantFrom(
        "\\",
        "\"",
        "'",
        "u",
        "0",
        "4",
        "1",
        "t",
        "n",
        "$",
        ".",
        "[",
        "]",
        "\t",
        "A",
        "\u00e9",
        "e\u0301"
      )
    }),
    FC.string({ unit: "binary" }).map((label) => label.replaceAll("\u0000", ""))
  ),
  { minLength: 1, maxLength: 30 }
)

layer(freshSqlite())((it) => {
  it.effect.prop(
    "SQLite: the path of any label finds that label's value among any others",
    [anyLabels],
    ([labels]) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const data = JSON.stringify(Object.fromEntries(labels.map((label, i) => [label, i])))
        const found = yield* Effect.forEach(labels, (label) =>
          Effect.map(
            sql<{ value: number | null }>`SELECT json_extract(${data}, ${sqlitePath(label)}) AS value`,
            ([row]) => row?.value
          ))
        expect(found).toEqual(labels.map((_, i) => i))
      }),
    { fastCheck: { numRuns: 200 } }
  )
})

for (const database of databases) {
  describe(database.name, () => {
    layer(Layer.merge(database.layer(), emulator), { excludeTestServices: true })((it) => {
      it.effect("data is jsonb on PostgreSQL, JSON text on SQLite, for rows and history", () =>
        Effect.gen(function*() {
          yield* SqlMirror.run({ microAppID: projectsMicroAppID, table: "fresh", history: true })
          const expected = database.name === "postgres" ? "jsonb" : "text"
          expect(yield* dataType("fresh")).toBe(expected)
          expect(yield* dataType(SqlMirror.historyTableOf("fresh"))).toBe(expected)
        }))

      it.effect("a table written with JSON text by an earlier version is migrated by the first run and compares unchanged", () =>
        Effect.gen(function*() {
          const rows = yield* writtenByTextVersion("earlier")
          const server = yield* MicroappServer
          const changed = String(rows[10]?.["_id"])
          yield* server.rows.updateRow(changed, { Status: "Done", Priority: 99 })
          const summary = yield* SqlMirror.run({ microAppID: projectsMicroAppID, table: "earlier" })
          // fingerprints, not data, are compared: jsonb's key order changes nothing
          expect(summary).toMatchObject({ inserted: 0, updated: 1, deleted: 0, unchanged: demoRows - 1 })
          expect(yield* dataType("earlier")).toBe(database.name === "postgres" ? "jsonb" : "text")
          const sql = yield* SqlClient.SqlClient
          const stored = yield* sql<{ row_id: string; data: unknown }>`SELECT row_id, data FROM ${sql("earlier")}`
          const now = new Map((yield* server.rows.table(projectsMicroAppID)).map((row) => [String(row["_id"]), row]))
          expect(stored).toHaveLength(demoRows)
          for (const row of stored) expect(storedData(row.data), row.row_id).toEqual(now.get(row.row_id))
          const again = yield* SqlMirror.run({ microAppID: projectsMicroAppID, table: "earlier" })
          expect(again).toMatchObject({ inserted: 0, updated: 0, deleted: 0, unchanged: demoRows })
        }))

      it.effect("a view typed from a definition: a column per field with the field's type, _id and bookkeeping", () =>
        Effect.gen(function*() {
          yield* SqlMirror.run({
            microAppID: projectsMicroAppID,
            table: "typed",
            view: "typed_view",
            definition: Projects
          })
          const types = yield* columnTypes("typed_view")
          expect(types).toEqual(
            database.name === "postgres"
              ? {
                _id: "text",
                name: "text",
                status: "text",
                budget: "double precision",
                priority: "bigint",
                approved: "boolean",
                due: "timestamp with time zone",
                owner: "jsonb",
                site: "jsonb",
                tags: "jsonb",
                microapp_id: "text",
                pass: "integer",
                fingerprint: "text"
              }
              : expect.objectContaining({
                _id: "text",
                status: "text",
                budget: "real",
                priority: "integer",
                approved: "integer",
                due: "text",
                owner: "text",
                tags: "text",
                pass: "integer"
              })
          )
          expect(yield* statusCounts("typed_view")).toEqual(yield* expectedStatusCounts)
          const sql = yield* SqlClient.SqlClient
          const [first] = yield* sql<{ _id: string; due: unknown; tags: unknown }>`SELECT _id, due, tags
            FROM ${sql("typed_view")} WHERE due IS NOT NULL AND tags IS NOT NULL ORDER BY _id LIMIT 1`
          const server = yield* MicroappServer
          const row = (yield* server.rows.table(projectsMicroAppID)).find((row) => row["_id"] === first?._id)
          expect(first?.due instanceof Date ? first.due.toISOString().slice(0, 10) : first?.due).toBe(row?.["Due"])
          expect(storedData(first?.tags)).toEqual(row?.["Tags"])
        }))

      it.effect("labels with quotes or a leading $, and dates no calendar has: each value read, none fails the view", () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const odd = Microapp.make({
            microAppID: peopleMicroAppID,
            fields: {
              "Say \"hi\"": Microapp.text("f_say"),
              "$cost": Microapp.number("f_cost"),
              Due: Microapp.date("f_due")
            }
          })
          const dates = ["2026-02-28", "2026-02-30", "2025-13-01", "0000-01-01", "2024-02-29", "2023-02-29"]
          yield* server.rows.setRows(
            peopleMicroAppID,
            dates.map((Due, i) => ({
              _id: `64b7c0f1a2d3e4f5a6b7d0${String(i).padStart(2, "0")}`,
              "Say \"hi\"": `hello ${i}`,
              "$cost": i + 0.5,
              Due
            }))
          )
          yield* SqlMirror.run({ microAppID: peopleMicroAppID, table: "odd", view: "odd_view", definition: odd })
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{ _id: string; say_hi: string | null; cost: number | null; due: unknown }>`
            SELECT _id, say_hi, cost, due FROM ${sql("odd_view")} ORDER BY _id`
          expect(rows.map((row) => row.say_hi)).toEqual(dates.map((_, i) => `hello ${i}`))
          expect(rows.map((row) => row.cost)).toEqual(dates.map((_, i) => i + 0.5))
          const day = (due: unknown) => due instanceof Date ? due.toISOString().slice(0, 10) : due
          // PostgreSQL types the column: a day no calendar has is NULL there; SQLite keeps the text
          expect(rows.map((row) => day(row.due))).toEqual(
            database.name === "postgres"
              ? ["2026-02-28", null, null, null, "2024-02-29", null]
              : dates
          )
        }))

      it.effect("an inferred view: typed from the rows read, replaced when a later pass widens a field", () =>
        Effect.gen(function*() {
          const run = SqlMirror.run({ microAppID: projectsMicroAppID, table: "inferred", view: "inferred_view" })
          yield* run
          const types = yield* columnTypes("inferred_view")
          expect(types["status"]).toBe("text")
          expect(types["due"]).toBe(database.name === "postgres" ? "timestamp with time zone" : "text")
          expect(types["approved"]).toBe(database.name === "postgres" ? "boolean" : "integer")
          expect(yield* statusCounts("inferred_view")).toEqual(yield* expectedStatusCounts)
          const server = yield* MicroappServer
          const [row] = yield* server.rows.table(projectsMicroAppID)
          yield* server.rows.updateRow(String(row?.["_id"]), { Approved: "not yet" })
          const second = yield* run
          expect(second.updated).toBe(1)
          // a boolean and a text disagree: the column widens to JSON
          expect((yield* columnTypes("inferred_view"))["approved"]).toBe(
            database.name === "postgres" ? "jsonb" : "text"
          )
          expect(yield* statusCounts("inferred_view")).toEqual(yield* expectedStatusCounts)
        }))

      it.scoped("microapp mirror --view NAME keeps the view", () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const url = yield* database.url
          const run = yield* cli([
            "mirror",
            projectsMicroAppID,
            "--db",
            url,
            "--view",
            "cli_view",
            "--quiet",
            ...flags(server)
          ])
          expect(run.code, run.stderr).toBe(0)
          const counts = yield* Effect.provide(statusCounts("cli_view"), database.client(url))
          expect(counts).toEqual(yield* expectedStatusCounts)
        }))

      it.effect("every label reads its own value: backslashes, quotes, escapes, path syntax, case and NFC/NFD twins, long labels", () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const rows = Array.from({ length: 4 }, (_, r) => ({
            _id: rowID(r),
            ...Object.fromEntries(hostileLabels.flatMap((label, i) => {
              const value = hostileValue(i, r)
              return value === undefined ? [] : [[label, value]]
            }))
          }))
          yield* server.rows.setRows(peopleMicroAppID, rows)
          const summary = yield* SqlMirror.run({ microAppID: peopleMicroAppID, table: "hostile", view: "hostile_view" })
          expect(summary.inserted).toBe(rows.length)
          const labels = yield* viewLabels("hostile_view")
          expect([...labels].sort()).toEqual([...hostileLabels].sort())
          const names = columnNames(labels)
          const sql = yield* SqlClient.SqlClient
          const viewed = yield* sql<Record<string, unknown>>`SELECT * FROM ${sql("hostile_view")} ORDER BY _id`
          expect(viewed.map((row) => row["_id"])).toEqual(rows.map((row) => row._id))
          viewed.forEach((row, r) =>
            labels.forEach((label, i) => {
              const expected = (rows[r] as Record<string, unknown> | undefined)?.[label]
              expect(asRowValue(row[names[i] ?? ""], expected), `${JSON.stringify(label)} of row ${r}`).toEqual(
                expected
              )
            })
          )
        }))

      it.effect.skipIf(database.name !== "sqlite")(
        "SQLite: a view an earlier version made, reading x\\u0041 as xA, is made again by the next run",
        () =>
          Effect.gen(function*() {
            const server = yield* MicroappServer
            yield* server.rows.setRows(peopleMicroAppID, [{ _id: rowID(1), "x\\u0041": "escaped", xA: "plain" }])
            const run = SqlMirror.run({
              microAppID: peopleMicroAppID,
              table: "earlier_paths",
              view: "earlier_paths_view"
            })
            yield* run
            const sql = yield* SqlClient.SqlClient
            // the view as the earlier version made it: the label's path read its escape
            yield* sql`DROP VIEW earlier_paths_view`
            yield* sql.unsafe(`CREATE VIEW earlier_paths_view AS SELECT row_id AS _id,
              CAST(json_extract(data, '$."x\\u0041"') AS TEXT) AS x_u0041, CAST(json_extract(data, '$."xA"') AS TEXT) AS x_a
              FROM earlier_paths`)
            const read = sql<{ x_u0041: string; x_a: string }>`SELECT x_u0041, x_a FROM earlier_paths_view`
            expect(yield* read).toEqual([{ x_u0041: "plain", x_a: "plain" }])
            yield* run
            expect(yield* read).toEqual([{ x_u0041: "escaped", x_a: "plain" }])
          })
      )

      it.scoped(
        `5,000 fields: every row mirrored, the view holds the first ${maxViewFields} and is selectable, and each run names the fields left in data`,
        () =>
          Effect.gen(function*() {
            const server = yield* MicroappServer
            const labels = Array.from({ length: 5000 }, (_, i) => `f${String(i).padStart(4, "0")}`)
            // few rows: PostgreSQL decompresses a row's data for each column it reads
            const rows = Array.from({ length: 3 }, (_, r) => ({
              _id: rowID(r),
              ...Object.fromEntries(labels.map((label, i) => [label, i * 100 + r]))
            }))
            yield* server.rows.setRows(peopleMicroAppID, rows)
            const url = yield* database.url
            const mirror = cli(["mirror", peopleMicroAppID, "--db", url, "--view", "wide_view", ...flags(server)])
            const left = new RegExp(
              `warn: the view wide_view holds ${maxViewFields} of 5000 fields as columns; ` +
                `${5000 - maxViewFields} are left in data: "f${maxViewFields}", "f${
                  maxViewFields + 1
                }", .* and \\d+ more\n`
            )
            const first = yield* mirror
            expect(first.code, first.stderr).toBe(0)
            expect(first.stderr).toContain("inserted 3,")
            expect(first.stderr).toMatch(left)
            const viewed = yield* Effect.provide(
              Effect.flatMap(SqlClient.SqlClient, (sql) =>
                sql<Record<string, unknown>>`SELECT * FROM ${sql("wide_view")} ORDER BY _id`),
              database.client(url)
            )
            expect(viewed).toHaveLength(rows.length)
            viewed.forEach((row, r) => {
              expect(Object.keys(row)).toHaveLength(maxViewFields + 4)
              expect(Number(row["f0000"])).toBe(r)
              expect(Number(row[`f${maxViewFields - 1}`])).toBe((maxViewFields - 1) * 100 + r)
              expect(row).not.toHaveProperty(`f${maxViewFields}`)
            })
            const second = yield* mirror
            expect(second.code, second.stderr).toBe(0)
            expect(second.stderr).toContain("unchanged 3,")
            expect(second.stderr).toMatch(left)
          })
      )

      it.effect("a view name too long, or a mirror's table, is refused before any statement; each of two at 63 characters keeps its own rows", () =>
        Effect.gen(function*() {
          const long = (tail: string) => `v${"x".repeat(61)}${tail}`
          for (const [view, table] of [[long("ab"), "long_a"], [long("cd"), "long_b"], ["long_c", "long_c"]] as const) {
            const refused = yield* Effect.flip(SqlMirror.run({ microAppID: projectsMicroAppID, table, view }))
            expect(refused).toMatchObject({ _tag: "InvalidInput", input: "view" })
            expect(yield* exists(table)).toBe(false)
          }
          for (
            const view of [
              "Microapp_Passes",
              "microapp_views",
              "LONG_C_history",
              "long_c_pass_kept",
              "Long_C_Pass_Seen"
            ]
          ) {
            expect(yield* Effect.flip(SqlMirror.viewOf({ view, table: "long_c" }))).toMatchObject({ input: "view" })
          }
          const server = yield* MicroappServer
          yield* server.rows.setRows(peopleMicroAppID, [{ _id: rowID(1), Status: "Open" }])
          yield* SqlMirror.run({ microAppID: projectsMicroAppID, table: "long_a", view: long("a") })
          yield* SqlMirror.run({ microAppID: peopleMicroAppID, table: "long_b", view: long("b") })
          expect(yield* statusCounts(long("a"))).toEqual(yield* expectedStatusCounts)
          expect(yield* statusCounts(long("b"))).toEqual({ Open: 1 })
        }))

      it.effect("a view another mirror keeps, its name in another case, or a table no mirror made is refused, and left as it was", () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          yield* server.rows.setRows(peopleMicroAppID, [{ _id: rowID(1), Status: "Open" }])
          yield* SqlMirror.run({ microAppID: projectsMicroAppID, table: "first", view: "shared_view" })
          const sql = yield* SqlClient.SqlClient
          yield* sql`CREATE TABLE mine (status TEXT)`
          yield* sql`INSERT INTO mine VALUES ('mine')`
          for (
            const [microAppID, table, view] of [
              [peopleMicroAppID, "second", "shared_view"],
              [projectsMicroAppID, "second", "shared_view"],
              [projectsMicroAppID, "first", "Shared_View"],
              [peopleMicroAppID, "second", "mine"],
              [peopleMicroAppID, "second", "MINE"]
            ] as const
          ) {
            const refused = yield* Effect.flip(SqlMirror.run({ microAppID, table, view }))
            expect(refused, `${microAppID} ${table} ${view}`).toMatchObject({ _tag: "InvalidInput", input: "view" })
            expect(refused.message).toMatch(/is taken/)
          }
          expect(yield* exists("second")).toBe(false)
          expect(yield* statusCounts("shared_view")).toEqual(yield* expectedStatusCounts)
          expect(yield* statusCounts("mine")).toEqual({ mine: 1 })
          // its own mirror goes on keeping it
          yield* SqlMirror.run({ microAppID: projectsMicroAppID, table: "first", view: "shared_view" })
          expect(yield* statusCounts("shared_view")).toEqual(yield* expectedStatusCounts)
        }))

      it.scoped("microapp mirror --view with a name over 63 characters is a usage error before the database is opened", () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const url = yield* database.url
          const requests = (yield* server.log.requests).length
          const run = yield* cli([
            "mirror",
            projectsMicroAppID,
            "--db",
            url,
            "--view",
            "v".repeat(64),
            ...flags(server)
          ])
          expect(run.code).toBe(2)
          expect(run.stderr).toMatch(/invalid view: 'v{64}' must be .* at most 63 characters/)
          if (database.name === "sqlite") expect(fs.existsSync(fileURLToPath(url))).toBe(false)
          else expect(yield* Effect.provide(exists(SqlMirror.passesTable), database.client(url))).toBe(false)
          expect(yield* server.log.requests).toHaveLength(requests)
        }))
    })
  })
}
