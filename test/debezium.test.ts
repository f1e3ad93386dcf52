/**
 * `effect-microapp/debezium`: each event checked against Kafka Connect's rules for JSON with
 * schemas (what `JsonConverter` reads with `schemas.enable = true`) and against Debezium's
 * documented event (the envelope's fields, `source`, the names of the schemas, tombstones).
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as FC } from "effect"
import { Debezium } from "../src/debezium/index.js"
import { Changes, Microapp } from "../src/index.js"
import { Projects } from "../src/testing/index.js"

const source: Debezium.Source = {
  name: "microapp",
  db: "example.com",
  schema: "64b7c0f1a2d3e4f5a6b7c8d9",
  table: "projects",
  version: "0.2.0"
}

const writtenAt = 1_764_300_000_123_456_789n

const options = (
  fields: ReadonlyArray<Debezium.Field>,
  schemas: boolean,
  extra: Partial<Debezium.EventOptions> = {}
) => ({
  source,
  fields,
  marker: "false" as const,
  seenAt: 1_764_300_000_000,
  writtenAt,
  schemas,
  ...extra
})

/** Kafka Connect's types as `JsonConverter` names them in a schema. */
const connectTypes = new Set([
  "int8",
  "int16",
  "int32",
  "int64",
  "float",
  "double",
  "boolean",
  "string",
  "bytes",
  "array",
  "map",
  "struct"
])

/**
 * The problems of `payload` under `schema`, by `JsonConverter`'s rules: a struct is an object whose
 * every key is a field of its schema; null only where optional; a number fits its type.
 */
const problems = (schema: Record<string, unknown>, payload: unknown, at = "$"): Array<string> => {
  const type = String(schema["type"])
  if (!connectTypes.has(type)) return [`${at}: unknown type ${type}`]
  if (payload === null) return schema["optional"] === true ? [] : [`${at}: null but not optional`]
  switch (type) {
    case "struct": {
      if (typeof payload !== "object" || Array.isArray(payload)) return [`${at}: not an object`]
      const fields = schema["fields"] as Array<Record<string, unknown>>
      const names = fields.map((field) => String(field["field"]))
      const object = payload as Record<string, unknown>
      return [
        ...Object.keys(object).filter((key) => !names.includes(key)).map((key) => `${at}.${key}: not in the schema`),
        ...fields.flatMap((field) =>
          problems(field, object[String(field["field"])] ?? null, `${at}.${String(field["field"])}`)
        )
      ]
    }
    case "int64":
      // a nanosecond time is past 2^53: JSON.parse reads it rounded, still whole and within int64
      return Number.isInteger(payload) && Math.abs(payload as number) < 2 ** 63 ? [] : [`${at}: not an int64`]
    case "double":
      return typeof payload === "number" ? [] : [`${at}: not a number`]
    case "boolean":
      return typeof payload === "boolean" ? [] : [`${at}: not a boolean`]
    case "string":
      return typeof payload === "string" ? [] : [`${at}: not a string`]
    default:
      return [`${at}: a type no event uses: ${type}`]
  }
}

/** A message's text as `JsonConverter` with schemas reads it: exactly `schema` and `payload`, the payload valid. */
const expectConnect = (text: string) => {
  const json = JSON.parse(text) as Record<string, unknown>
  expect(Object.keys(json).sort()).toEqual(["payload", "schema"])
  expect(problems(json["schema"] as Record<string, unknown>, json["payload"])).toEqual([])
  return json as { schema: Record<string, unknown>; payload: Record<string, unknown> }
}

const row = {
  _id: "64b000000000000000000001",
  userID: "u1",
  Name: "Site survey",
  Budget: 1250.5,
  Priority: 2,
  Approved: true,
  Due: "2026-12-01",
  Owner: { crossAppRowID: "p1", microAppID: "m1", Name: "Ada" },
  Tags: ["a", "b"]
}

describe("Debezium", () => {
  const fields = Debezium.widen([], [row])
  const inserted = Changes.Change.Inserted({ id: row._id, row, fingerprint: Changes.fingerprint(row) })
  const newer = { ...row, Budget: 7 }
  const updated = Changes.Change.Updated({
    id: row._id,
    row: newer,
    fingerprint: Changes.fingerprint(newer),
    previous: Changes.fingerprint(row)
  })
  const deleted = Changes.Change.Deleted({ id: row._id, previous: Changes.fingerprint(row) })

  it("with schemas: key and value exactly {schema, payload}, named as Debezium names them, the payload valid", () => {
    const message = Debezium.event(updated, options(Debezium.widen(fields, [newer]), true, { before: row }))
    const key = expectConnect(message.key)
    expect(key.schema).toMatchObject({ type: "struct", name: "microapp.64b7c0f1a2d3e4f5a6b7c8d9.projects.Key" })
    expect(key.payload).toEqual({ _id: row._id })
    const value = expectConnect(message.value ?? "")
    expect(value.schema["name"]).toBe("microapp.64b7c0f1a2d3e4f5a6b7c8d9.projects.Envelope")
    const envelope = value.schema["fields"] as Array<Record<string, unknown>>
    expect(envelope.map((field) => field["field"])).toEqual([
      "before",
      "after",
      "source",
      "transaction",
      "op",
      "ts_ms",
      "ts_us",
      "ts_ns"
    ])
    expect(envelope.slice(0, 2).map((field) => field["name"])).toEqual([
      "microapp.64b7c0f1a2d3e4f5a6b7c8d9.projects.Value",
      "microapp.64b7c0f1a2d3e4f5a6b7c8d9.projects.Value"
    ])
    const columns = envelope[0]?.["fields"] as Array<Record<string, unknown>>
    expect(Object.fromEntries(columns.map((field) => [field["field"], [field["type"], field["name"] ?? null]])))
      .toEqual({
        _id: ["string", null],
        userID: ["string", null],
        Name: ["string", null],
        Budget: ["double", null],
        Priority: ["int64", null],
        Approved: ["boolean", null],
        Due: ["string", null],
        Owner: ["string", "io.debezium.data.Json"],
        Tags: ["string", "io.debezium.data.Json"]
      })
    // the whole row before, nested values as their JSON
    expect(value.payload["before"]).toEqual({
      ...row,
      Owner: JSON.stringify(row.Owner),
      Tags: JSON.stringify(row.Tags)
    })
    expect(value.payload).toMatchObject({ op: "u", transaction: null })
  })

  it("without schemas, the payload alone, byte for byte; no field Debezium does not write", () => {
    const schemaed = JSON.parse(Debezium.event(inserted, options(fields, true)).value ?? "")
    const plain = Debezium.event(inserted, options(fields, false))
    expect(plain.key).toBe(JSON.stringify({ _id: row._id }))
    expect(JSON.parse(plain.value ?? "")).toEqual(schemaed.payload)
    const payload = JSON.parse(plain.value ?? "")
    expect(Object.keys(payload)).toEqual(["before", "after", "op", "ts_ms", "ts_us", "ts_ns", "transaction", "source"])
    expect(Object.keys(payload.source).sort()).toEqual(
      [
        "connector",
        "db",
        "lsn",
        "name",
        "schema",
        "sequence",
        "snapshot",
        "table",
        "ts_ms",
        "ts_ns",
        "ts_us",
        "txId",
        "version",
        "xmin"
      ]
    )
    expect(payload.source).toMatchObject({
      connector: "microapp",
      db: "example.com",
      table: "projects",
      snapshot: "false"
    })
  })

  it("the times: ts_ms, ts_us and ts_ns of one instant, the nanoseconds exact; source's when the change was seen", () => {
    const text = Debezium.event(inserted, options(fields, false)).value ?? ""
    expect(text).toContain(`"ts_ms":1764300000123,"ts_us":1764300000123456,"ts_ns":1764300000123456789`)
    expect(text).toContain(`"ts_ms":1764300000000,"ts_us":1764300000000000,"ts_ns":1764300000000000000`)
  })

  it("a snapshot's rows are r; a delete without its row holds the key only; a tombstone is the key and null", () => {
    expect(JSON.parse(Debezium.event(inserted, options(fields, false, { marker: "first" })).value ?? "").op).toBe("r")
    const gone = JSON.parse(Debezium.event(deleted, options(fields, false)).value ?? "")
    expect(gone.op).toBe("d")
    expect(gone.after).toBeNull()
    expect(gone.before._id).toBe(row._id)
    expect(Object.entries(gone.before).filter(([label, value]) => label !== "_id" && value !== null)).toEqual([])
    const update = JSON.parse(Debezium.event(updated, options(fields, false)).value ?? "")
    expect(update.before).toBeNull()
    expect(Debezium.tombstone(row._id, options(fields, true))).toEqual({
      key: Debezium.event(deleted, options(fields, true)).key,
      value: null
    })
  })

  it("the value ends with the marker, so that a snapshot's last event is marked in place", () => {
    for (const schemas of [false, true]) {
      expect(Debezium.event(inserted, options(fields, schemas, { marker: "true" })).value)
        .toMatch(/"snapshot":"true"\}{2,3}$/)
    }
  })

  it("a typed Microapp's fields give the columns their types before any row is seen", () => {
    const typed = Debezium.fieldsOf(Projects)
    expect(typed.find((field) => field.label === "Priority")?.kind).toBe("integer")
    expect(typed[0]).toEqual({ label: "_id", kind: "text" })
    const custom = Microapp.make({ microAppID: "m", name: "M", fields: { N: Microapp.number("f_n") } })
    expect(Debezium.fieldsOf(custom).map((field) => field.label)).toEqual(["_id", "N"])
  })

  it("widening: int64 with double is double, a date with a text a text, a text with a number JSON; nulls tell nothing", () => {
    const kinds = (rows: ReadonlyArray<Record<string, unknown>>) =>
      Object.fromEntries(Debezium.widen([], rows).map((field) => [field.label, field.kind]))
    expect(kinds([{ _id: "a", B: 1, D: "2026-01-01", M: "x" }, { _id: "b", B: 1.5, D: "soon", M: 3, N: null }]))
      .toEqual({ _id: "text", B: "number", D: "text", M: "json" })
    const before = Debezium.widen([], [{ _id: "a", B: 1 }])
    expect(Debezium.widen(before, [{ _id: "b", B: null }])).toEqual(before)
  })

  const Value = FC.oneof(
    FC.constant(null),
    FC.boolean(),
    FC.integer(),
    FC.double({ noNaN: true, noDefaultInfinity: true }),
    FC.string(),
    FC.jsonValue()
  )
  const Rows = FC.array(
    FC.dictionary(FC.constantFrom("Name", "Budget", "Owner", "Due", "weird \"label\"", "Tags"), Value),
    { minLength: 1, maxLength: 6 }
  )

  it.prop(
    "every event of rows widened into the fields is valid under its schema, whatever the values",
    [Rows],
    ([drafts]) => {
      const rows = drafts.map((draft, i) => ({ ...draft, _id: `id${i}` }))
      const widened = Debezium.widen([], rows)
      for (const [i, each] of rows.entries()) {
        const before = rows[(i + 1) % rows.length]
        const change = Changes.Change.Updated({ id: each._id, row: each, fingerprint: "f", previous: "p" })
        const message = Debezium.event(change, options(widened, true, { before }))
        expectConnect(message.key)
        expectConnect(message.value ?? "")
      }
    }
  )
})
