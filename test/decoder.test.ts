/**
 * The row decoder's compiled fast path must give exactly what Schema gives: the same rows (same
 * keys in the same order, arrays and objects rebuilt alike) and the same errors, for valid rows,
 * broken rows, reordered keys and schemas it does not compile.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Either, FastCheck as FC, Schema } from "effect"
import { decodeEnvelope, makeRowDecoder } from "../src/internal/http/decode.js"
import { faultOf } from "../src/internal/http/plainData.js"
import { RowsBody } from "../src/internal/http/wire.js"
import { Row } from "../src/Row.js"
import { makeProjectRows } from "../src/testing/index.js"

const info = { endpoint: { path: "/api/microappdata", write: false }, attempt: 1, status: 200 }

/** Equal values with their keys in the same order, at every depth. */
const sameShape = (a: unknown, b: unknown): boolean => {
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => sameShape(x, b[i]))
  if (typeof a === "object" && a !== null) {
    if (typeof b !== "object" || b === null || Array.isArray(b)) return false
    if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false
    const keysA = Reflect.ownKeys(a)
    const keysB = Reflect.ownKeys(b)
    const recordA = a as Record<PropertyKey, unknown>
    const recordB = b as Record<PropertyKey, unknown>
    return keysA.length === keysB.length &&
      keysA.every((key, i) => key === keysB[i] && sameShape(recordA[key], recordB[key]))
  }
  return Object.is(a, b)
}

/**
 * Whether the client's decoder and Schema's own agree on an input; on what JSON does not carry
 * unchanged, the decoder fails. Both are built once a schema, as a scan builds its decoder: a
 * compiled decoder keeps nothing from one call to the next.
 */
const agreement = <A, I>(schema: Schema.Schema<A, I>) => {
  const decoder = makeRowDecoder(schema, "fail")
  const decode = Schema.decodeUnknownEither(schema, { errors: "first" })
  return (input: unknown): boolean => {
    const ours = decoder([input], undefined, info)
    if (faultOf(input) !== undefined) return Either.isLeft(ours)
    const theirs = decode(input)
    if (Either.isRight(theirs)) {
      return Either.isRight(ours) && ours.right.rows.length === 1 && sameShape(ours.right.rows[0], theirs.right)
    }
    return Either.isLeft(ours)
  }
}

const expectAgreement = <A, I>(schema: Schema.Schema<A, I>, inputs: ReadonlyArray<unknown>) => {
  const agree = agreement(schema)
  const disagreements = inputs.filter((input) => !agree(input))
  expect(disagreements).toEqual([])
}

const agreesOnRow = agreement(Row)

/** A JSON round trip: the decoder only ever sees what `JSON.parse` returns. */
const viaJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value) ?? "null")

const demoRows = makeProjectRows(300).map(viaJson)

/** A demo row with one key's value replaced, or its keys reordered. */
const mutant = FC.tuple(
  FC.constantFrom(...demoRows),
  FC.oneof(
    FC.record({
      key: FC.constantFrom("_id", "viewers", "deviceID", "clientSubmitted", "Owner", "x"),
      value: FC.jsonValue()
    }).map(({ key, value }) => (row: Record<string, unknown>) => ({ ...row, [key]: value })),
    FC.constant((row: Record<string, unknown>) => Object.fromEntries(Object.entries(row).reverse())),
    FC.constant((row: Record<string, unknown>) => {
      const { _id, ...rest } = row
      return { ...rest, _id }
    }),
    FC.constant((row: Record<string, unknown>) => {
      const { userID: _, ...rest } = row
      return rest
    })
  )
).map(([row, change]) => viaJson(change(row as Record<string, unknown>)))

describe("the row decoder's fast path", () => {
  it("decodes the demo rows exactly as Schema does", () => {
    expectAgreement(Row, demoRows)
  })

  it("agrees with Schema on rows changed at random", () => {
    FC.assert(FC.property(mutant, agreesOnRow), { numRuns: 2000 })
  })

  it("agrees with Schema on rows Schema generates, and on any JSON value", () => {
    FC.assert(FC.property(Arbitrary.make(Row).map(viaJson), agreesOnRow), { numRuns: 500 })
    FC.assert(FC.property(FC.jsonValue().map(viaJson), agreesOnRow), { numRuns: 2000 })
  })

  it("hands on a row that decodes to itself, and its arrays, rather than a copy of them", () => {
    const rows = makeProjectRows(50).map(viaJson) as Array<Record<string, unknown>>
    const decoded = Either.getOrThrow(makeRowDecoder(Row, "fail")(rows, undefined, info)).rows
    expect(decoded.every((row, i) => row === rows[i] && row.viewers === rows[i]?.viewers)).toBe(true)
    // a row that needs another shape is still built as Schema builds it, the parsed one left as it was
    const reordered = viaJson({ Name: "x", _id: "a" })
    const [built] = Either.getOrThrow(makeRowDecoder(Row, "fail")([reordered], undefined, info)).rows
    expect(built).not.toBe(reordered)
    expect(Object.keys(built ?? {})).toEqual(["_id", "Name"])
    expect(Object.keys(reordered as object)).toEqual(["Name", "_id"])
  })

  it("agrees with Schema while Object.prototype has an enumerable key, which for-in finds on every row", () => {
    const prototype = Object.prototype as Record<string, unknown>
    for (const key of ["userID", "polluted"]) {
      prototype[key] = 1
      try {
        expectAgreement(Row, [...demoRows.slice(0, 20), viaJson({ _id: "a" }), viaJson({ _id: "a", userID: "u" })])
        expectAgreement(Schema.Struct({ _id: Schema.String, userID: Schema.optional(Schema.String) }), [
          viaJson({ _id: "a" }),
          viaJson({ _id: "a", userID: "u" })
        ])
      } finally {
        delete prototype[key]
      }
    }
  })

  it("refuses a `__proto__` key, which Schema's parser would make the row's prototype", () => {
    const rows = [
      JSON.parse(`{"_id":"a","__proto__":{"isLocked":"polluted"},"Name":"x"}`),
      JSON.parse(`{"__proto__":null,"_id":"a"}`)
    ]
    expect(Schema.decodeUnknownSync(Row)(rows[0])).toHaveProperty("isLocked", "polluted")
    const decoded = makeRowDecoder(Row, "skip")(rows, undefined, info)
    expect(Either.getOrThrow(decoded).invalid.map((error) => error.fieldPath)).toEqual(["__proto__", "__proto__"])
  })

  it("agrees with Schema on other shapes: excess keys, unions, tuples, typed index signatures, transformations", () => {
    const Numbers = Schema.Record({ key: Schema.String, value: Schema.Number })
    const Item = Schema.Struct({ x: Schema.Number })
    const Short = Schema.Struct({ a: Schema.Number })
    const Point = Schema.Tuple(Schema.Number, Schema.Number)
    const checks: ReadonlyArray<(input: unknown) => boolean> = [
      agreement(Schema.Struct({ a: Schema.Number, b: Schema.optional(Schema.NullOr(Schema.String)) })),
      agreement(Schema.Struct({ a: Schema.Number }, Numbers)),
      agreement(Schema.Struct({ tag: Schema.Literal("p", "q"), items: Schema.Array(Item) })),
      agreement(Schema.Union(Short, Schema.Struct({ a: Schema.Number, b: Schema.String }))),
      agreement(Schema.Struct({ point: Point, any: Schema.Unknown, empty: Schema.Struct({}) })),
      agreement(Schema.Struct({ n: Schema.NumberFromString, when: Schema.optional(Schema.DateFromString) }))
    ]
    const inputs = [
      { a: 1 },
      { a: 1, b: null, c: 3 },
      { b: "x", a: 2 },
      { a: "1" },
      { a: 1, b: "s", z: 2 },
      { tag: "p", items: [{ x: 1, y: 2 }, { x: 2 }] },
      { tag: "r", items: [] },
      { point: [1, 2], any: { deep: [1] }, empty: { k: 1 } },
      { point: [1, 2, 3], any: null, empty: {} },
      { point: [1], empty: 0 },
      { n: "12", when: "2024-01-01" },
      { n: 12 },
      [1, 2],
      null,
      "text"
    ].map(viaJson)
    for (const check of checks) expect(inputs.filter((input) => !check(input))).toEqual([])
    for (const check of checks) FC.assert(FC.property(FC.jsonValue().map(viaJson), check), { numRuns: 300 })
  })

  it("reads an answer's envelope as Schema does", () => {
    const decode = decodeEnvelope(RowsBody)
    const bodies = [
      { status: "success", body: { microAppRows: demoRows.slice(0, 3) } },
      { body: { microAppRows: [] }, status: "success", extra: 1 },
      { status: "success", body: { microAppRows: "none" } },
      { status: "error", message: "no" }
    ].map(viaJson)
    for (const body of bodies) {
      const ours = Effect.runSync(Effect.either(decode(body, info)))
      const theirs = Schema.decodeUnknownEither(RowsBody)(body)
      if (Either.isRight(ours)) expect(Either.isRight(theirs) && sameShape(ours.right, theirs.right)).toBe(true)
      else expect(ours.left._tag).toMatch(/UnexpectedResponse|RequestRejected/)
    }
  })
})
