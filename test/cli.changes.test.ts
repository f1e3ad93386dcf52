/**
 * `microapp changes APP --state STATE --output FILE`: a first pass's rows as snapshot reads, the
 * changes between two passes as events, each once; resumed after SIGKILL under faults and drift
 * (the built bin); and what it refuses, before anything is written or sent.
 */
import { describe, expect, layer } from "@effect/vitest"
import { createClient } from "@libsql/client"
import { Duration, Effect, Fiber, Schema } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { SqlDrivers } from "../src/cli/commands/mirror.js"
import { Changes } from "../src/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { changesArgs, cli, refused, startCli, temporaryDirectory, untilRequests } from "./cliSupport.js"
import { bin, cleanEnv, drift, drifted, killedFiveTimes, modifiedAt, scanFaults, touchedBy } from "./processSupport.js"
import { eventually } from "./support/eventually.js"

const Marker = Schema.Literal("first", "true", "last", "false")

const Columns = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** Debezium's envelope, whole, and nothing else: `source` as Debezium's PostgreSQL connector writes it. */
const Event = Schema.Struct({
  before: Schema.NullOr(Columns),
  after: Schema.NullOr(Columns),
  op: Schema.Literal("r", "c", "u", "d"),
  ts_ms: Schema.Number,
  ts_us: Schema.Number,
  ts_ns: Schema.Number,
  transaction: Schema.Null,
  source: Schema.Struct({
    version: Schema.String,
    connector: Schema.Literal("microapp"),
    name: Schema.Literal("microapp"),
    ts_ms: Schema.Number,
    ts_us: Schema.Number,
    ts_ns: Schema.Number,
    db: Schema.String,
    sequence: Schema.Null,
    schema: Schema.String,
    table: Schema.String,
    txId: Schema.Null,
    lsn: Schema.Null,
    xmin: Schema.Null,
    snapshot: Marker
  })
})
type Event = typeof Event.Type
const decodeEvent = Schema.decodeUnknownSync(Schema.parseJson(Event), { onExcessProperty: "error" })

const { version } = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  version: string
}

/** Entries in the order of their ids, as STATE reads them back. */
const byId = ([a]: readonly [string, unknown], [b]: readonly [string, unknown]) => a < b ? -1 : a > b ? 1 : 0

/** The id of the row an event is about. */
const idOf = (event: Event): string => String((event.after ?? event.before)?.["_id"])

/** A row as an event's columns hold it: each nested value as its JSON text; the columns of other rows' fields null. */
const expectColumns = (columns: Readonly<Record<string, unknown>> | null, row: Readonly<Record<string, unknown>>) => {
  expect(columns).not.toBeNull()
  for (const [label, value] of Object.entries(columns ?? {})) {
    const expected = row[label] ?? null
    expect(value, label).toEqual(
      typeof expected === "object" && expected !== null ? JSON.stringify(expected) : expected
    )
  }
  for (const label of Object.keys(row)) expect(Object.keys(columns ?? {})).toContain(label)
}

/** Each event's fields but its row's, as the op says: `source` of this Microapp, written after it was seen. */
const expectEnvelopes = (events: ReadonlyArray<Event>) => {
  for (const event of events) {
    expect(event.after === null).toBe(event.op === "d")
    expect(event.before === null).toBe(event.op === "r" || event.op === "c")
    expect(event.source).toMatchObject({
      version,
      db: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
      schema: projectsMicroAppID,
      table: projectsMicroAppID
    })
    expect(event.ts_ms).toBeGreaterThanOrEqual(event.source.ts_ms)
    expect(Math.trunc(event.ts_us / 1000)).toBe(event.ts_ms)
  }
}

/** A snapshot's markers, as Debezium writes them: its first row "first", its last "last", "true" between. */
const snapshotMarkers = (count: number) =>
  Array.from({ length: count }, (_, i) => i === 0 ? "first" : i === count - 1 ? "last" : "true")

/** FILE's events, each line checked against the envelope (a torn line fails). */
const eventsOf = (file: string): Array<Event> => {
  const text = fs.readFileSync(file, "utf8")
  return text === "" ? [] : text.trimEnd().split("\n").map((line) => decodeEvent(line))
}

/** `op:id` of each event, sorted: what a pass reported, as a set that shows duplicates. */
const opsOf = (events: ReadonlyArray<Event>) => events.map((event) => `${event.op}:${idOf(event)}`).sort()

/** The table as the service sends it, by id. */
const rowsById = Effect.map(
  Effect.flatMap(MicroappServer, (server) => server.rows.table(projectsMicroAppID)),
  (rows) => new Map(rows.map((row) => [String(row._id), row]))
)

/** STATE's pass in progress (its FILE and committed length), and its baseline: each row's fingerprint and JSON. */
const stateOf = (state: string) =>
  Effect.acquireUseRelease(
    Effect.sync(() => createClient({ url: pathToFileURL(state).href })),
    (client) =>
      Effect.tryPromise(async () => {
        const [passes, rows] = await client.batch([
          "SELECT output, committed FROM changes_state",
          "SELECT row_id, fingerprint, data FROM baseline LEFT JOIN baseline_rows USING (row_id) ORDER BY row_id"
        ], "read")
        const [pass] = passes?.rows ?? []
        return {
          pass: pass?.["output"] == null ? null : { output: String(pass["output"]), length: Number(pass["committed"]) },
          baseline: new Map((rows?.rows ?? []).map((row) => [String(row["row_id"]), String(row["fingerprint"])])),
          rows: new Map(
            (rows?.rows ?? []).map((row) => [String(row["row_id"]), row["data"] === null ? null : String(row["data"])])
          )
        }
      }),
    (client) => Effect.sync(() => client.close())
  )

/** Runs a pass to its end in process; its run. */
const pass = (state: string, output: string, extra: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const run = yield* cli(changesArgs(server, state, output, extra))
    expect(run.code, run.stderr).toBe(0)
    return run
  })

let generation = 0

/** Updates, an update to the values a row has, deletes and inserts between two passes; the ids of each. */
const changeTable = Effect.gen(function*() {
  // values no earlier test wrote: each update changes its row
  generation++
  const server = yield* MicroappServer
  const ids = Array.from((yield* rowsById).keys())
  const at = (i: number) => ids[i] ?? ""
  const updated = [3, 50, 199].map(at)
  for (const id of updated) yield* server.rows.updateRow(id, { Name: `changed ${id} ${generation}` })
  // the values it has: no change of content
  const same = yield* server.rows.getRow(at(10))
  if (same._tag === "Some") yield* server.rows.updateRow(at(10), { Name: same.value["Name"] })
  const deleted = [0, 77, 120].map(at)
  for (const id of deleted) yield* server.rows.removeRow(id)
  const inserted = yield* Effect.forEach(
    [0, 1, 2, 3],
    (n) =>
      Effect.map(
        server.rows.insertRow(projectsMicroAppID, { Name: `new ${n}` }, { index: n * 50 }),
        (row) => String(row._id)
      )
  )
  return { updated, deleted, inserted }
})

/**
 * A first pass into STATE (run to its end in process, unless `firstPass` runs it), then the table
 * changed: what a second pass must report; the ids the first pass's drift touched, and the
 * baseline it left.
 */
const firstPassThenChanges = (
  firstPass: (state: string, output: string) => Effect.Effect<ReadonlySet<string>, unknown, MicroappServer> = (
    state,
    output
  ) => Effect.as(pass(state, output), new Set())
) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const dir = yield* temporaryDirectory
    const state = path.join(dir, "state")
    const touched = yield* firstPass(state, path.join(dir, "first.ndjson"))
    const { baseline, rows } = yield* stateOf(state)
    return { server, dir, state, touched, baseline, rows, changes: yield* changeTable }
  })

const expectedOps = (
  changes: { updated: ReadonlyArray<string>; deleted: ReadonlyArray<string>; inserted: ReadonlyArray<string> }
) =>
  [
    ...changes.updated.map((id) => `u:${id}`),
    ...changes.deleted.map((id) => `d:${id}`),
    ...changes.inserted.map((id) => `c:${id}`)
  ].sort()

const closing = (counts: string) => new RegExp(`^done: ${counts}, \\d+ rows, [^\\n]*, exhaustive\\n$`)

describe("microapp changes", () => {
  layer(MicroappServer.layer({ demoRows: 230 }), { excludeTestServices: true })("passes", (it) => {
    it.scoped("a first pass: every row once as \"r\", as the service sends it; STATE private, with no pass", () =>
      Effect.gen(function*() {
        const dir = yield* temporaryDirectory
        const state = path.join(dir, "state")
        const output = path.join(dir, "first.ndjson")
        const run = yield* pass(state, output)
        expect(run.stderr).toMatch(closing("read 230 \\(a snapshot\\)"))
        const events = eventsOf(output)
        const table = yield* rowsById
        expect(events.map(idOf)).toEqual(Array.from(table.keys()))
        expect(events.every((event) => event.op === "r")).toBe(true)
        for (const event of events) expectColumns(event.after, table.get(idOf(event)) ?? {})
        expectEnvelopes(events)
        expect(events.map((event) => event.source.snapshot)).toEqual(snapshotMarkers(230))
        const { baseline, rows, ...stored } = yield* stateOf(state)
        expect(stored.pass).toBeNull()
        expect(baseline).toEqual(new Map([...table].sort(byId).map(([id, row]) => [id, Changes.fingerprint(row)])))
        for (const [id, row] of table) expect(JSON.parse(rows.get(id) ?? "null")).toEqual(row)
        expect(fs.statSync(state).mode & 0o777).toBe(0o600)
        expect(fs.readdirSync(dir).sort()).toEqual(["first.ndjson", "state"])
      }))

    it.scoped("the second pass: exactly the updates, inserts and deletes made between, each once; then nothing", () =>
      Effect.gen(function*() {
        const { changes, dir, rows, state } = yield* firstPassThenChanges()
        const second = path.join(dir, "second.ndjson")
        const run = yield* pass(state, second)
        expect(run.stderr).toMatch(
          closing("inserted 4, updated 3, deleted 3, unchanged 224, confirmed 3 deletes with 3 reads")
        )
        const events = eventsOf(second)
        expect(opsOf(events)).toEqual(expectedOps(changes))
        const table = yield* rowsById
        for (const event of events) {
          if (event.op !== "d") expectColumns(event.after, table.get(idOf(event)) ?? {})
          // the whole row as the first pass saw it
          if (event.op !== "c") expectColumns(event.before, JSON.parse(rows.get(idOf(event)) ?? "null"))
        }
        expectEnvelopes(events)
        expect(events.every((event) => event.source.snapshot === "false")).toBe(true)
        // deletes come last
        expect(events.slice(-3).map((event) => event.op)).toEqual(["d", "d", "d"])
        expect((yield* stateOf(state)).baseline).toEqual(
          new Map([...table].sort(byId).map(([id, row]) => [id, Changes.fingerprint(row)]))
        )

        const third = path.join(dir, "third.ndjson")
        const still = yield* pass(state, third)
        expect(fs.readFileSync(third, "utf8")).toBe("")
        expect(still.stderr).toMatch(closing("inserted 0, updated 0, deleted 0, unchanged 231"))
      }))

    it.scoped("a second pass stopped by SIGINT twice, a torn line left behind each time: every change once", () =>
      Effect.gen(function*() {
        const { changes, dir, server, state } = yield* firstPassThenChanges()
        const second = path.join(dir, "second.ndjson")
        yield* server.configure({ latency: Duration.millis(20) })
        for (const stopAfter of [4, 6]) {
          const seen = (yield* server.log.requests).length
          const started = yield* startCli(changesArgs(server, state, second, ["--quiet"]))
          yield* untilRequests(server, seen + stopAfter)
          yield* started.raise("SIGINT")
          expect(yield* started.exit).toBe(130)
          expect((yield* stateOf(state)).pass).not.toBeNull()
          fs.appendFileSync(second, "{\"op\":\"u\",\"id\":\"64b")
        }
        yield* server.configure({ latency: Duration.zero })
        const run = yield* pass(state, second)
        expect(run.stderr).toMatch(/, resumed (once|\d+ times), exhaustive\n$/)
        expect(opsOf(eventsOf(second))).toEqual(expectedOps(changes))
        expect(eventsOf(second).every((event) => event.source.snapshot === "false")).toBe(true)
      }))

    it.scoped("--key: each line a key {\"_id\"}, one TAB, the event; a TAB or line break in a value stays escaped", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        yield* server.rows.insertRow(projectsMicroAppID, { Name: "a\tTAB and a\nline break" })
        const dir = yield* temporaryDirectory
        const state = path.join(dir, "state")
        /** FILE's lines as [key, event], each delete's tombstone checked: a line with a raw TAB in its key or value fails. */
        const keyed = (file: string) => {
          const lines = fs.readFileSync(file, "utf8").split("\n").slice(0, -1).map((line) => {
            const parts = line.split("\t")
            expect(parts).toHaveLength(2)
            const [key = "", value = ""] = parts
            return { key: JSON.parse(key), value }
          })
          return lines.flatMap(({ key, value }, i) => {
            if (value === "") {
              // a tombstone follows its delete, with its key
              expect(lines[i - 1]?.key).toEqual(key)
              expect(JSON.parse(lines[i - 1]?.value ?? "{}").op).toBe("d")
              return []
            }
            const event = decodeEvent(value)
            expect(key).toEqual({ _id: idOf(event) })
            if (event.op === "d") expect(lines[i + 1]).toEqual({ key, value: "" })
            return [event]
          })
        }
        const first = path.join(dir, "first.ndjson")
        yield* pass(state, first, ["--key"])
        const snapshot = keyed(first)
        expect(snapshot.map((event) => event.source.snapshot)).toEqual(snapshotMarkers(snapshot.length))
        expect(snapshot.map((event) => event.after?.["Name"])).toContain("a\tTAB and a\nline break")
        const changes = yield* changeTable
        const second = path.join(dir, "second.ndjson")
        yield* pass(state, second, ["--key"])
        const events = keyed(second)
        expect(opsOf(events)).toEqual(expectedOps(changes))
        expectEnvelopes(events)
      }))
  })

  layer(MicroappServer.layer({ demoRows: 40 }), { excludeTestServices: true })("schemas", (it) => {
    it.scoped("--schemas --fields: the columns' types from describe --json, widened by the rows; a bad file refused", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        const fieldsFile = path.join(dir, "fields.json")
        fs.writeFileSync(
          fieldsFile,
          JSON.stringify([
            { label: "Priority", kind: "number", required: false },
            { label: "Extra", kind: "text", required: false }
          ])
        )
        const output = path.join(dir, "out.ndjson")
        yield* pass(path.join(dir, "state"), output, ["--schemas", "--fields", fieldsFile])
        const [line = ""] = fs.readFileSync(output, "utf8").split("\n")
        const { schema } = JSON.parse(line) as { schema: { fields: Array<{ field: string; fields: Array<unknown> }> } }
        const columns = Object.fromEntries(
          (schema.fields[1]?.fields as Array<{ field: string; type: string; name?: string }>).map((column) => [
            column.field,
            column.name ?? column.type
          ])
        )
        expect(columns).toMatchObject({
          _id: "string",
          Priority: "double",
          Extra: "string",
          Budget: "double",
          Owner: "io.debezium.data.Json"
        })
        fs.writeFileSync(fieldsFile, "[{\"label\": 1}]")
        const other = path.join(dir, "other.ndjson")
        yield* refused(
          changesArgs(server, path.join(dir, "other.state"), other, ["--fields", fieldsFile]),
          other,
          /--fields .*fields\.json is not the output of microapp describe --json/
        )
      }))
  })

  layer(MicroappServer.layer({ demoRows: 230 }), { excludeTestServices: true })("key-only before images", (it) => {
    it.scoped("--before key: STATE of fingerprints only; an update's before null, a delete's the key; --no-tombstones", () =>
      Effect.gen(function*() {
        const dir = yield* temporaryDirectory
        const state = path.join(dir, "state")
        const flagsOf = ["--before", "key", "--key", "--no-tombstones"]
        yield* pass(state, path.join(dir, "first.ndjson"), flagsOf)
        expect([...(yield* stateOf(state)).rows.values()].every((data) => data === null)).toBe(true)
        const changes = yield* changeTable
        const second = path.join(dir, "second.ndjson")
        const run = yield* pass(state, second, flagsOf)
        expect(run.stderr).not.toContain("carry only their key")
        const lines = fs.readFileSync(second, "utf8").trimEnd().split("\n").map((line) => line.split("\t"))
        // no tombstone: every line a key and an event
        expect(lines.every(([, value]) => value !== undefined && value !== "")).toBe(true)
        const events = lines.map(([, value]) => decodeEvent(value ?? ""))
        expect(opsOf(events)).toEqual(expectedOps(changes))
        for (const event of events) {
          if (event.op === "u") expect(event.before).toBeNull()
          if (event.op === "d") {
            expect(Object.entries(event.before ?? {}).filter(([, value]) => value !== null)).toEqual([[
              "_id",
              idOf(event)
            ]])
          }
        }
      }))
  })

  layer(MicroappServer.layer({ demoRows: 230 }), { excludeTestServices: true })("refusals", (it) => {
    /** A first pass stopped by SIGINT after a few pages: STATE with a pass in progress. */
    const halfDone = Effect.gen(function*() {
      const server = yield* MicroappServer
      const dir = yield* temporaryDirectory
      const state = path.join(dir, "state")
      const output = path.join(dir, "out.ndjson")
      yield* server.configure({ latency: Duration.millis(20) })
      const seen = (yield* server.log.requests).length
      const started = yield* startCli(changesArgs(server, state, output, ["--quiet"]))
      yield* untilRequests(server, seen + 4)
      // a page committed: read while the run writes, a busy STATE is read again
      yield* eventually(
        Effect.suspend(() => fs.existsSync(state) ? stateOf(state) : Effect.fail(new Error("no STATE yet"))),
        (stored) => (stored.pass?.length ?? 0) > 0
      )
      yield* started.raise("SIGINT")
      expect(yield* started.exit).toBe(130)
      yield* server.configure({ latency: Duration.zero })
      return { server, dir, state, output, saved: fs.readFileSync(state) }
    })

    it.scoped("a new pass into a FILE that is not empty: exit 2, one line, nothing written, no request", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        const state = path.join(dir, "state")
        const output = path.join(dir, "out.ndjson")
        fs.writeFileSync(output, "something\n")
        yield* refused(changesArgs(server, state, output), output, /out\.ndjson exists and is not empty/)
        expect(fs.existsSync(state)).toBe(false)
        // after a complete pass too
        const done = path.join(dir, "done.ndjson")
        yield* pass(state, done)
        const saved = fs.readFileSync(state, "utf8")
        yield* refused(changesArgs(server, state, done), done, /done\.ndjson exists and is not empty/)
        expect(fs.readFileSync(state, "utf8")).toBe(saved)
        expect(fs.readdirSync(dir).sort()).toEqual(["done.ndjson", "out.ndjson", "state"])
      }))

    it.scoped("while a pass is in progress, another --output: refused with the path it writes; then it goes on", () =>
      Effect.gen(function*() {
        const { dir, output, saved, server, state } = yield* halfDone
        const other = path.join(dir, "other.ndjson")
        const run = yield* refused(changesArgs(server, state, other), other, /has a pass in progress/)
        expect(run.stderr).toContain(`writes ${output}: go on with --output ${output}`)
        expect(fs.existsSync(other)).toBe(false)
        expect(fs.readFileSync(state)).toEqual(saved)
        const resumed = yield* pass(state, output)
        expect(resumed.stderr).toMatch(closing("read 230 \\(a snapshot\\)"))
        const events = eventsOf(output)
        expect(events.map(idOf)).toEqual(Array.from((yield* rowsById).keys()))
        expect(events.every((event) => event.op === "r")).toBe(true)
        expect(events.map((event) => event.source.snapshot)).toEqual(snapshotMarkers(230))
      }))

    it.scoped("a pass in progress goes on as it began, with or without --key", () =>
      Effect.gen(function*() {
        const { output, saved, server, state } = yield* halfDone
        yield* refused(
          changesArgs(server, state, output, ["--key"]),
          output,
          /writes no keys, no schemas, row before images, table \w+: go on with --before row --table \w+, or remove .*state and .*out\.ndjson to start again with a snapshot/
        )
        expect(fs.readFileSync(state)).toEqual(saved)
        yield* pass(state, output)
        expect(eventsOf(output).map((event) => event.source.snapshot)).toEqual(snapshotMarkers(230))
      }))

    it.scoped("a STATE damaged, of another Microapp or filter, or of another query; a FILE cut short", () =>
      Effect.gen(function*() {
        const { output, saved, server, state } = yield* halfDone
        const cases: ReadonlyArray<readonly [string | Buffer, ReadonlyArray<string>, RegExp]> = [
          ["not a state file\n", [], /is not a state file of microapp changes: .*remove .*state to start again/],
          [
            Buffer.concat([saved.subarray(0, 100), Buffer.alloc(4000, "x"), saved.subarray(4100)]),
            [],
            /is not a state file of microapp changes \(.+\): restore it, or remove .*state to start again/
          ],
          [
            saved,
            ["--filter", "f_status=Open"],
            /holds the state of Microapp .* not of this one: .*give another --state, or remove .*state to start again/
          ],
          [saved, ["--sort", "1"], /state belongs to another query: .*or remove .* to start again/]
        ]
        for (const [text, extra, reason] of cases) {
          fs.writeFileSync(state, text)
          yield* refused(changesArgs(server, state, output, extra), output, reason)
        }
        fs.writeFileSync(state, saved)
        const events = fs.readFileSync(output, "utf8")
        fs.writeFileSync(output, events.slice(0, 10))
        yield* refused(changesArgs(server, state, output), output, /holds 10 bytes, but .*state records/)
        fs.writeFileSync(output, events)
        expect((yield* pass(state, output)).code).toBe(0)
      }))
  })

  layer(MicroappServer.layer({ demoRows: 230 }), { excludeTestServices: true })("earlier STATEs and mistakes", (it) => {
    /** STATE as the earlier version wrote it after a pass over this table as the layer makes it: fingerprints only. */
    const legacyState = (state: string) =>
      Effect.gen(function*() {
        const written = path.join(import.meta.dirname, "fixtures", "cli-change-state-v1-projects.state")
        const baseline = fs.readFileSync(written, "utf8").trimEnd().split("\n").slice(1).map((line) => JSON.parse(line))
        // the fixture is of the table as it was before any test changed it
        const table = yield* rowsById
        expect(baseline).toEqual(Array.from(table, ([id, row]) => [id, Changes.fingerprint(row)]))
        fs.copyFileSync(written, state)
      })

    it.scoped("a STATE of the earlier version reads: its next pass says which events lack a whole before; the pass after has them", () =>
      Effect.gen(function*() {
        const dir = yield* temporaryDirectory
        const state = path.join(dir, "state")
        yield* legacyState(state)
        const changes = yield* changeTable
        const second = path.join(dir, "second.ndjson")
        const run = yield* pass(state, second)
        expect(run.stderr).toContain("6 updates and deletes carry only their key as before")
        const events = eventsOf(second)
        expect(opsOf(events)).toEqual(expectedOps(changes))
        for (const event of events.filter((event) => event.op === "u" || event.op === "d")) {
          expect(Object.entries(event.before ?? {}).filter(([, value]) => value !== null)).toEqual([[
            "_id",
            idOf(event)
          ]])
        }
        expect(fs.readFileSync(state).subarray(0, 15).toString()).toBe("SQLite format 3")
        // the rows this pass wrote are whole now: their next update carries its before
        const server = yield* MicroappServer
        for (const id of changes.updated) yield* server.rows.updateRow(id, { Name: `again ${id}` })
        const third = path.join(dir, "third.ndjson")
        const again = yield* pass(state, third)
        expect(again.stderr).not.toContain("carry only their key")
        for (const event of eventsOf(third)) expect(event.before?.["Name"]).toBe(`changed ${idOf(event)} ${generation}`)
      }))

    it.scoped("a STATE of the earlier version with a pass in progress: refused, saying how to start again", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        const state = path.join(dir, "state")
        const output = path.join(dir, "out.ndjson")
        // a STATE the earlier version wrote while its pass was under way
        const inProgress = JSON.parse(
          fs.readFileSync(path.join(import.meta.dirname, "fixtures", "cli-change-states-v1.json"), "utf8")
        )[1]
        fs.writeFileSync(state, inProgress)
        yield* refused(
          changesArgs(server, state, output),
          output,
          /holds a pass in progress written by an earlier microapp.*or remove .*state and .*events\.ndjson to start again/
        )
      }))

    it.scoped("a typo in the Microapp's id costs nothing: exit 4, no STATE and no FILE left; the corrected command runs", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        const state = path.join(dir, "state")
        const output = path.join(dir, "out.ndjson")
        const args = changesArgs(server, state, output).map((arg) =>
          arg === projectsMicroAppID ? "64b7c0f1a2d3e4f5a6b7c8ff" : arg
        )
        const run = yield* cli(args)
        expect(run.code, run.stderr).toBe(4)
        expect(fs.readdirSync(dir)).toEqual([])
        const corrected = yield* pass(state, output)
        const rows = (yield* rowsById).size
        expect(corrected.stderr).toMatch(closing(`read ${rows} \\(a snapshot\\)`))
      }))

    it.scoped("without the SQLite driver: exit 2 with the line that installs it, no STATE and no FILE left", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        const missing = () => Promise.reject(new Error("Cannot find package"))
        const run = yield* Effect.provideService(
          cli(changesArgs(server, path.join(dir, "state"), path.join(dir, "out.ndjson"))),
          SqlDrivers,
          { libsql: missing, pg: missing }
        )
        expect(run.code, run.stderr).toBe(2)
        expect(run.stderr).toBe(
          "error: --state needs the SQLite driver, which is not installed: " +
            "npm install @effect/sql@~0.52.1 @effect/sql-libsql@~0.42.0\n"
        )
        expect(fs.readdirSync(dir)).toEqual([])
      }))

    it.scoped("a STATE left by a run killed before its first commit is replaced by the corrected command", () =>
      Effect.gen(function*() {
        const dir = yield* temporaryDirectory
        const state = path.join(dir, "state")
        const output = path.join(dir, "out.ndjson")
        // what a run of another selection leaves when SIGKILL stops it before its first page: a pass opened, nothing committed
        yield* pass(state, output, ["--filter", "f_status=Nothing such"])
        fs.rmSync(output)
        const client = createClient({ url: pathToFileURL(state).href })
        yield* Effect.promise(() =>
          client.batch([
            "UPDATE changes_state SET passes = 0, output = 'elsewhere', committed = 0, snapshot = 1, " +
            `format = '{"key":false,"schemas":false,"tombstones":true,"before":"row","table":"t"}'`
          ], "write")
        )
        client.close()
        const run = yield* pass(state, output)
        const rows = (yield* rowsById).size
        expect(run.stderr).toMatch(closing(`read ${rows} \\(a snapshot\\)`))
        expect(eventsOf(output)).toHaveLength(rows)
      }))
  })

  // long enough that a run killed only once STATE has moved has pages left: quiet pages commit sixteen at a time
  layer(MicroappServer.layer({ demoRows: 2400 }), { excludeTestServices: true })("the built bin", (it) => {
    /**
     * A pass of the built bin into FILE under faults and, unless `disturbances` is "faults", drift,
     * killed with SIGKILL five times, then run to its end: its last run and the ids drift touched.
     */
    const killedPass = (state: string, output: string, disturbances: string) =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const touched = drifted()
        yield* server.configure({ latency: Duration.millis(10), faults: scanFaults })
        const drifting = yield* Effect.fork(
          disturbances === "faults" ? Effect.never : drift(server, projectsMicroAppID, touched)
        )
        const last = yield* killedFiveTimes(
          server,
          () => spawn(process.execPath, [bin, ...changesArgs(server, state, output)], { env: cleanEnv, stdio: "pipe" }),
          modifiedAt(state)
        )
        yield* Fiber.interrupt(drifting)
        yield* server.configure({ latency: Duration.zero, faults: undefined })
        expect(last.code, last.stderr).toBe(0)
        expect(last.stderr).toMatch(/^done: (inserted \d+|read \d+ \(a snapshot\)), .*, resumed (once|\d+ times), /)
        // without drift, the pass vouches for every row
        if (disturbances === "faults") expect(last.stderr).toMatch(/, exhaustive\n$/)
        else expect(touched.removed.size).toBeGreaterThan(0)
        return { last, touched: touchedBy(touched) }
      })

    /** A first pass killed five times under faults and drift: each row that stood still once in FILE, as "r". */
    const killedFirstPass = (state: string, output: string) =>
      Effect.gen(function*() {
        const { last, touched } = yield* killedPass(state, output, "faults and drift")
        const events = eventsOf(output) // fails on a torn line
        expect(new Set(events.map(idOf)).size).toBe(events.length)
        expect(last.stderr).toMatch(new RegExp(`^done: read ${events.length} \\(a snapshot\\), `))
        expect(events.filter((event) => event.op !== "r")).toEqual([])
        // the markers hold across the kills: the last is marked once the pass ends
        expect(events.map((event) => event.source.snapshot)).toEqual(snapshotMarkers(events.length))
        const read = new Map(events.map((event) => [idOf(event), event.after]))
        for (const [id, row] of yield* rowsById) if (!touched.has(id)) expectColumns(read.get(id) ?? null, row)
        return touched
      })

    it.scoped.each<readonly [string, string]>([
      ["run to its end", "faults and drift"],
      ["run to its end", "faults"],
      ["killed five times under faults and drift", "faults and drift"]
    ])(
      "a first pass %s, a second killed with SIGKILL five times under %s: each event once, the changes of the rows that stood still",
      ([first, disturbances]) =>
        Effect.gen(function*() {
          const { baseline, changes, dir, state, touched: touchedFirst } = yield* firstPassThenChanges(
            first === "run to its end" ? undefined : killedFirstPass
          )
          const table = yield* rowsById
          const output = path.join(dir, "second.ndjson")
          const { touched } = yield* killedPass(state, output, disturbances)
          const events = eventsOf(output) // fails on a torn line
          expect(new Set(events.map(idOf)).size).toBe(events.length)
          // the rows that stood still through both passes: the changes made between them
          const stoodStill = (id: string) => !touchedFirst.has(id) && !touched.has(id)
          const made = (ids: ReadonlyArray<string>) => ids.filter(stoodStill)
          expect(opsOf(events.filter((event) => stoodStill(idOf(event))))).toEqual(expectedOps({
            updated: made(changes.updated),
            inserted: made(changes.inserted),
            // exhaustive or not, a pass confirms the deletes made before it
            deleted: made(changes.deleted)
          }))
          // each row that stood still through the second pass: what changed from the first pass's baseline
          const due = [...new Set([...baseline.keys(), ...table.keys()])].filter((id) => !touched.has(id)).flatMap(
            (id) => {
              const [was, row] = [baseline.get(id), table.get(id)]
              if (was === undefined) return [`c:${id}`]
              if (row === undefined) return [`d:${id}`]
              return was === Changes.fingerprint(row) ? [] : [`u:${id}`]
            }
          )
          expect(opsOf(events.filter((event) => !touched.has(idOf(event))))).toEqual(due.sort())
          // the rows inserted during the pass, if seen, are inserts
          expect(
            events.filter((event) => !table.has(idOf(event)) && event.op !== "d").every((event) => event.op === "c")
          )
            .toBe(true)

          // the baseline folded over the runs: a third pass, with the table still, leaves STATE as the table is
          const third = path.join(dir, "third.ndjson")
          yield* pass(state, third)
          expect((yield* stateOf(state)).baseline).toEqual(
            new Map([...(yield* rowsById)].sort(byId).map(([id, row]) => [id, Changes.fingerprint(row)]))
          )
        }),
      180_000
    )
  })
})
