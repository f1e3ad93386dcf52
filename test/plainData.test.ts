/**
 * Hostile data: answers whose rows hold a `__proto__` key, a number past what JSON.parse can hold
 * or nesting without end; updates whose `rowData` could not be sent as given; checkpoint texts
 * nested or sized to kill a parser. Each is a typed failure, never a prototype the server chose,
 * a value silently changed, a key silently dropped or a defect.
 */
import { NodeHttpClient } from "@effect/platform-node"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Chunk, Effect, Exit, FastCheck as FC, Schema, Stream } from "effect"
import { Changes, Checkpoint, InvalidInput, Microapp, MicroappClient, type MicroappError, Row } from "../src/index.js"
import { faultOf, markedNumbersMax, parseExact, readExact } from "../src/internal/http/plainData.js"
import { bounds } from "../src/internal/limits.js"
import { MicroappServer, Projects } from "../src/testing/index.js"
import { cli } from "./cliSupport.js"
import { clientOf, hostileServer, secretToken, secretUser } from "./hostile.js"
import { bodiesTo, taskID, tasksMicroAppID, tasksTable, withEmulator } from "./support.js"

const microAppID = "66c000000000000000000001"
const rowsPath = "/api/microappdata"
const rowPath = "/api/microappdata/row"
const updatePath = "/api/updatemicroapprow"

/** The window a rows request asks for. */
const Window = Schema.Struct({
  searchFilter: Schema.Tuple([Schema.Struct({ skip: Schema.NumberFromString, limit: Schema.Number })], Schema.Unknown)
})

/** A server whose rows are `rows` (JSON texts, written as they are), paged as asked; its row answer is the first. */
const serving = (rows: ReadonlyArray<string>) =>
  hostileServer((request) =>
    Effect.gen(function*() {
      let body = `{"currentRow":${rows[0] ?? "null"}}`
      if (request.url !== rowPath) {
        const { searchFilter: [{ limit, skip }] } = yield* Effect.orDie(
          Effect.flatMap(request.json, Schema.decodeUnknown(Window))
        )
        body = `{"microAppRows":[${rows.slice(skip, skip + limit).join(",")}]}`
      }
      return HttpServerResponse.text(`{"status":"success","body":${body}}`, { contentType: "application/json" })
    })
  )

type Read = (client: MicroappClient.Service) => Effect.Effect<ReadonlyArray<unknown>, MicroappError>

const query: Read = (client) => client.query({ microAppID, limit: 10 })
const scan: Read = (client) => Effect.map(Stream.runCollect(client.rows({ microAppID })), Chunk.toReadonlyArray)

/** The reads of the client, each of every row the server holds. */
const reads: ReadonlyArray<readonly [string, string, Read]> = [
  ["query", rowsPath, query],
  ["rows", rowsPath, scan],
  // the server answers its first row to any point read: the id asked for is that row's
  ["getRow", rowPath, (client) => Effect.map(client.getRow("r1"), (row) => [row])],
  // a Schema with a transformation is not compiled: Schema's own parser decodes every row
  ["a Schema's query", rowsPath, (client) =>
    client.withSchema(
      Schema.Struct(
        { _id: Schema.String, Due: Schema.optional(Schema.DateFromString) },
        Schema.Record({ key: Schema.String, value: Schema.Unknown })
      )
    ).query({ microAppID, limit: 10 })]
]

/** Reads every row of a server serving `rows` with `read`. */
const readFrom = (
  rows: ReadonlyArray<string>,
  read: Read
) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* serving(rows)
    return yield* Effect.either(
      Effect.provide(
        Effect.flatMap(MicroappClient, read),
        clientOf(server.baseUrl, NodeHttpClient.layerUndici, { retry: false })
      )
    )
  }))

const plainRow = `{"_id":"r0","isLocked":true,"Name":"plain"}`

describe("rows are plain data: no key of an answer sets a prototype", () => {
  for (const [call, path, read] of reads) {
    it.live(`${call}: a row with a "__proto__" key is UnexpectedResponse naming it`, () =>
      Effect.gen(function*() {
        const result = yield* readFrom(
          [`{"_id":"r1","Name":"x","__proto__":{"isLocked":"not-a-boolean"}}`],
          read
        )
        expect(result._tag).toBe("Left")
        if (result._tag === "Right") return
        expect(result.left).toMatchObject({
          _tag: "UnexpectedResponse",
          kind: "Row",
          path,
          rowIndex: 0,
          rowID: "r1",
          fieldPath: "__proto__"
        })
      }))

    it.live(`${call}: a "__proto__" key deeper in a row is refused too, with its path`, () =>
      Effect.gen(function*() {
        const result = yield* readFrom(
          [`{"_id":"r1","Owner":{"crossAppRowID":"x","value":{"label":"a","value":"b"},"additionalValues":{"__proto__":{"label":"l","value":"v"}}}}`],
          read
        )
        expect(result._tag === "Left" ? result.left : result.right).toMatchObject({
          _tag: "UnexpectedResponse",
          kind: "Row",
          rowID: "r1",
          fieldPath: "Owner.additionalValues.__proto__"
        })
      }))

    it.live(`${call}: a decoded row has Object.prototype and the system fields of its own keys`, () =>
      Effect.gen(function*() {
        const result = yield* readFrom([`{"_id":"r1","isLocked":true,"Name":"plain"}`], read)
        expect(result._tag).toBe("Right")
        if (result._tag === "Left") return
        const [row] = result.right
        expect(Object.getPrototypeOf(row)).toBe(Object.prototype)
        expect(row).toMatchObject({ _id: "r1", isLocked: true })
      }))
  }

  it.live("a system field of the wrong type is refused, whatever else the row holds", () =>
    Effect.gen(function*() {
      const result = yield* readFrom([`{"_id":"r1","isLocked":"not-a-boolean"}`], query)
      expect(result._tag === "Left" ? result.left : result.right).toMatchObject({
        _tag: "UnexpectedResponse",
        kind: "Row",
        fieldPath: "isLocked"
      })
    }))

  it.live(`invalidRows: "skip" skips the row with a "__proto__" key and keeps the others`, () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* serving([plainRow, `{"_id":"r1","__proto__":{"isLocked":"x"}}`])
      const rows = yield* Effect.flatMap(
        MicroappClient,
        (client) => client.withSchema(Row.Row, { invalidRows: "skip" }).query({ microAppID, limit: 10 })
      ).pipe(
        Effect.provide(clientOf(server.baseUrl, NodeHttpClient.layerUndici, { retry: false }))
      )
      expect(rows.map((row) => row._id)).toEqual(["r0"])
    })))

  it.live("the CLI fails (exit 5) naming the key, and writes no row without it", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* serving([`{"_id":"r1","Name":"x","__proto__":{"isLocked":"not-a-boolean"}}`])
      const run = yield* cli([
        "rows",
        microAppID,
        "--format",
        "json",
        "--base-url",
        server.baseUrl,
        "--token",
        secretToken,
        "--user-id",
        secretUser
      ])
      expect(run.code, run.stderr).toBe(5)
      expect(run.stderr).toContain("__proto__")
      expect(run.stdout).not.toContain("r1")
    })))
})

describe("a number JSON.parse cannot hold is reported, not changed", () => {
  for (const [call, path, read] of reads) {
    it.live(`${call}: 1e400 is UnexpectedResponse naming the row and the field`, () =>
      Effect.gen(function*() {
        const result = yield* readFrom([`{"_id":"r1","N":1e400}`], read)
        expect(result._tag === "Left" ? result.left : result.right).toMatchObject({
          _tag: "UnexpectedResponse",
          kind: "Row",
          path,
          rowIndex: 0,
          rowID: "r1",
          fieldPath: "N"
        })
      }))
  }

  it.live("a non-finite number deep in a row, in its second row, names both", () =>
    Effect.gen(function*() {
      const site = `{"address":{"geometry":{"type":"point","coordinates":[151.2,-1e999]}}}`
      const result = yield* readFrom([plainRow, `{"_id":"r2","Site":${site}}`], query)
      expect(result._tag === "Left" ? result.left : result.right).toMatchObject({
        _tag: "UnexpectedResponse",
        kind: "Row",
        rowIndex: 1,
        rowID: "r2",
        fieldPath: "Site.address.geometry.coordinates[1]"
      })
      if (result._tag === "Left") expect(result.left.message).toContain("-Infinity")
    }))

  it.live("a metadata number past the limit (submitted) is refused as well", () =>
    Effect.gen(function*() {
      const result = yield* readFrom([`{"_id":"r1","submitted":1e309}`], scan)
      expect(result._tag === "Left" ? result.left : result.right).toMatchObject({ fieldPath: "submitted" })
    }))

  for (const depth of [bounds.valueDepth + 1, 100_000]) {
    it.live(`a row nested ${depth} levels deep is UnexpectedResponse, not a defect`, () =>
      Effect.gen(function*() {
        const result = yield* readFrom([`{"_id":"r1","N":${"[".repeat(depth)}${"]".repeat(depth)}}`], query)
        expect(result._tag === "Left" ? result.left : result.right).toMatchObject({
          _tag: "UnexpectedResponse",
          kind: "Row",
          rowID: "r1"
        })
        if (result._tag === "Left" && result.left._tag === "UnexpectedResponse") {
          expect(result.left.fieldPath).toMatch(/^N(\[0\])+$/)
        }
      }))
  }

  it.live(`a row nested ${bounds.valueDepth} levels deep is read`, () =>
    Effect.gen(function*() {
      // the row itself is the first level
      const depth = bounds.valueDepth - 1
      const result = yield* readFrom([`{"_id":"r1","N":${"[".repeat(depth)}${"]".repeat(depth)}}`], query)
      expect(result._tag).toBe("Right")
    }))
})

/** A double as JSON carries it: -0 is written 0. */
const carried = (double: number): number => double === 0 ? 0 : double

describe("every double passes through the client as itself", () => {
  const doubles = FC.array(FC.double({ noNaN: true, noDefaultInfinity: true }).map(carried), {
    minLength: 1,
    maxLength: 40
  })

  it.effect.prop(
    "rows, changes and getRow read each double the emulator writes as itself; updateRow and updateRows send each as itself",
    [doubles],
    ([values]) =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const client = yield* MicroappClient
        const microAppID = tasksMicroAppID
        const rows = [62007044045103448, 1.7976931348623157e308, 5e-324, ...values].map((value, i) => ({
          _id: taskID(i),
          Count: value,
          Nested: { list: [value, carried(-value)] }
        }))
        yield* server.rows.setRows(microAppID, rows)
        const read = Chunk.toReadonlyArray(yield* Stream.runCollect(client.rows({ microAppID, pageSize: 7 })))
        expect(read.map(({ Count, Nested, _id }) => ({ _id, Count, Nested }))).toEqual(rows)
        const pass = yield* client.changes({ microAppID, pageSize: 7, baseline: Changes.Baseline.empty })
        const changes = Chunk.toReadonlyArray(yield* Stream.runCollect(pass.changes))
        expect(changes.map((change) => change._tag === "Inserted" ? change.row["Count"] : change._tag)).toEqual(
          rows.map((row) => row.Count)
        )
        // written back shifted by one row, then read back by id
        const shifted = rows.map((row, i) => ({
          rowID: row._id,
          rowData: { Count: rows[(i + 1) % rows.length]?.Count }
        }))
        const [first, ...rest] = shifted
        if (first !== undefined) yield* client.updateRow(first)
        const outcomes = Chunk.toReadonlyArray(yield* Stream.runCollect(client.updateRows(Stream.fromIterable(rest))))
        expect(outcomes.map((outcome) => outcome._tag)).toEqual(rest.map(() => "Updated"))
        const written = yield* Effect.forEach(rows, (row) => client.getRow(row._id))
        expect(written.map((row) => row["Count"])).toEqual(shifted.map((update) => update.rowData.Count))
      }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(1)] }))),
    { fastCheck: { numRuns: 15 } }
  )
})

/** Updates whose `rowData` cannot be sent as given: the input path named, and the reason. */
const unsendable: ReadonlyArray<readonly [string, () => Record<string, unknown>, RegExp, RegExp]> = [
  [
    "a __proto__ key (from JSON.parse)",
    () => JSON.parse(`{"__proto__":1,"Title":"Open"}`),
    /^rowData\.__proto__$/,
    /__proto__/
  ],
  [
    "a __proto__ key holding an object",
    () => JSON.parse(`{"Title":"x","__proto__":{"Count":3}}`),
    /^rowData\.__proto__$/,
    /__proto__/
  ],
  [
    "a __proto__ key inside a value",
    () => ({ Title: JSON.parse(`{"__proto__":1}`) }),
    /^rowData\.Title\.__proto__$/,
    /__proto__/
  ],
  ["NaN", () => ({ Count: NaN }), /^rowData\.Count$/, /NaN.*finite/],
  ["Infinity", () => ({ Title: "x", Count: Infinity }), /^rowData\.Count$/, /Infinity.*finite/],
  ["-Infinity inside a list", () => ({ Tags: [1, -Infinity] }), /^rowData\.Tags\.1$/, /-Infinity.*finite/],
  ["nesting past the bound", () => ({ Tags: nested(bounds.valueDepth) }), /^rowData\.Tags(\.0)+$/, /nested deeper/],
  // a number no double holds cannot be sent as a number: a string carries its digits
  ["a bigint", () => ({ Count: 12345678901234567890n }), /^rowData\.Count$/, /bigint.*as a string/]
]

function nested(depth: number): unknown {
  let value: unknown = []
  for (let i = 1; i < depth; i++) value = [value]
  return value
}

const updatesSent = Effect.map(bodiesTo(updatePath), (bodies) => bodies.length)

describe("an update whose rowData cannot be sent is refused before any request", () => {
  for (const [name, rowData, input, reason] of unsendable) {
    it.live(`updateRow: ${name}`, () =>
      Effect.gen(function*() {
        const client = yield* MicroappClient
        const error = yield* Effect.flip(client.updateRow({ rowID: taskID(0), rowData: rowData() }))
        expect(error).toBeInstanceOf(InvalidInput)
        expect(error).toMatchObject({ _tag: "InvalidInput", path: updatePath })
        if (error._tag !== "InvalidInput") return
        expect(error.input).toMatch(input)
        expect(error.reason).toMatch(reason)
        expect(yield* updatesSent).toBe(0)
      }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(2)] }))))
  }

  it.live("updateRows: each such update is an Invalid outcome; the sendable ones are sent", () =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const updates = [...unsendable.map(([, rowData]) => ({ rowID: taskID(0), rowData: rowData() })), {
        rowID: taskID(1),
        rowData: { Title: "fine" }
      }]
      const outcomes = Chunk.toReadonlyArray(yield* Stream.runCollect(client.updateRows(Stream.fromIterable(updates))))
      expect(outcomes.map((outcome) => outcome._tag)).toEqual([...unsendable.map(() => "Invalid"), "Updated"])
      const inputs = outcomes.flatMap((outcome) => outcome._tag === "Invalid" ? [outcome.error.input] : [])
      expect(inputs).toHaveLength(unsendable.length)
      unsendable.forEach(([, , input], i) => expect(inputs[i]).toMatch(input))
      expect(yield* updatesSent).toBe(1)
    }).pipe(Effect.provide(withEmulator({ tables: [tasksTable(2)] }))))

  it.live("a typed update: a __proto__ key and a non-finite number are refused, updateRow and updateRows", () =>
    Effect.gen(function*() {
      const projects = yield* Microapp.bind(Projects)
      const [row] = yield* projects.query({ limit: 1 })
      const rowID = row?._id ?? ""
      const proto = yield* Effect.flip(
        projects.updateRow({ rowID, rowData: JSON.parse(`{"__proto__":1,"Name":"x"}`) })
      )
      expect(proto).toMatchObject({ _tag: "InvalidInput", input: "rowData.__proto__" })
      const infinite = yield* Effect.flip(projects.updateRow({ rowID, rowData: { Budget: Infinity } }))
      expect(infinite).toMatchObject({ _tag: "InvalidInput", input: "rowData.Budget" })
      const outcomes = yield* Stream.runCollect(projects.updateRows(Stream.make(
        { rowID, rowData: JSON.parse(`{"Name":"x","__proto__":{"Budget":1}}`) },
        { rowID, rowData: { Budget: NaN } }
      )))
      expect(Chunk.toReadonlyArray(outcomes).map((outcome) => outcome._tag)).toEqual(["Invalid", "Invalid"])
      expect(yield* updatesSent).toBe(0)
    }).pipe(Effect.provide(withEmulator({ demoRows: 5 }))))
})

/** `fromJson`'s failure, which must be InvalidInput and never a defect. */
const refusal = (text: string) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Checkpoint.fromJson(text))
    if (Exit.isSuccess(exit)) return expect.fail("accepted")
    const failure = Cause.failureOption(exit.cause)
    expect(failure._tag, Cause.pretty(exit.cause)).toBe("Some")
    return failure._tag === "Some" ? failure.value : expect.fail("died")
  })

describe("Checkpoint.fromJson bounds its input", () => {
  const shapes: ReadonlyArray<readonly [string, (depth: number) => string]> = [
    ["arrays", (depth) => `${"[".repeat(depth)}${"]".repeat(depth)}`],
    ["objects", (depth) => `${"{\"a\":".repeat(depth)}1${"}".repeat(depth)}`],
    ["arrays under a version", (depth) => `{"version":1,"query":${"[".repeat(depth)}${"]".repeat(depth)}}`],
    ["objects under a version", (depth) => `{"version":1,"state":${"{\"a\":".repeat(depth)}1${"}".repeat(depth)}}`],
    ["arrays as the version", (depth) => `{"version":${"[".repeat(depth)}${"]".repeat(depth)}}`]
  ]
  for (const depth of [3_000, 100_000]) {
    for (const [name, shape] of shapes) {
      it.effect(`${name} nested ${depth} deep: InvalidCheckpoint, too deep`, () =>
        Effect.gen(function*() {
          const error = yield* refusal(shape(depth))
          expect(error).toMatchObject({ _tag: "InvalidInput", input: "checkpoint", problem: "too deep" })
          expect(error.reason).toContain(`nested deeper than ${bounds.checkpointDepth}`)
          const decoded = Schema.decodeUnknownEither(Checkpoint.CheckpointFromJson)(shape(depth))
          expect(decoded._tag === "Left" ? decoded.left.message : "accepted").toContain("nested deeper")
        }))
    }
  }

  it.effect("brackets inside strings do not count as nesting", () =>
    Effect.gen(function*() {
      const error = yield* refusal(`{"version":1,"query":"${"[{".repeat(5_000)}\\"]"}`)
      expect(error).toMatchObject({ _tag: "InvalidInput", input: "checkpoint.query" })
    }))

  it.effect("a text past the size bound: InvalidCheckpoint, too large, before it is parsed", () =>
    Effect.gen(function*() {
      // a rope of repeats: its length is known without the characters being made
      const text = `{"version":1,"seen":"${"A".repeat(bounds.checkpointChars)}"}`
      const error = yield* refusal(text)
      expect(error).toMatchObject({ _tag: "InvalidInput", input: "checkpoint", problem: "too large" })
      expect(error.reason).toContain("characters")
    }))

  it("toJson of a value that is no checkpoint of this library does not throw", () => {
    const forged = { [Checkpoint.TypeId]: Checkpoint.TypeId } as unknown as Checkpoint.Checkpoint
    expect(() => Checkpoint.toJson(forged)).not.toThrow()
    const written = Checkpoint.toJson(forged)
    const read = Effect.runSyncExit(Checkpoint.fromJson(written))
    expect(Exit.isFailure(read)).toBe(true)
  })
})

/** The integer a shortest text of an integer-valued double says: `1.2345e+24` is 12345 followed by 20 zeros. */
const integerOf = (text: string): bigint => {
  const [mantissa = "", exponent = "0"] = text.split("e")
  const [whole = "", fraction = ""] = mantissa.split(".")
  const power = Number(exponent) - fraction.length
  return power >= 0 ? BigInt(whole + fraction) * 10n ** BigInt(power) : BigInt(whole)
}

/** A decimal text as a fraction of BigInts: numerator and denominator. */
const fractionOf = (text: string): readonly [bigint, bigint] => {
  const [mantissa = "", exponent = "0"] = text.toLowerCase().split("e")
  const [whole = "", fraction = ""] = mantissa.split(".")
  const power = Number(exponent) - fraction.length
  const digits = BigInt(whole + fraction)
  return power >= 0 ? [digits * 10n ** BigInt(power), 1n] : [digits, 10n ** BigInt(-power)]
}

const sameFraction = (a: string, b: string): boolean => {
  const [an, ad] = fractionOf(a)
  const [bn, bd] = fractionOf(b)
  return an * bd === bn * ad
}

/** The exact value of the finite double `x`, written as a fraction's text: m × 2^e. */
const exactText = (x: number): string => {
  const view = new DataView(new ArrayBuffer(8))
  view.setFloat64(0, Math.abs(x))
  const bits = view.getBigUint64(0)
  const biased = Number(bits >> 52n)
  const mantissa = biased === 0 ? bits & 0xfffffffffffffn : (bits & 0xfffffffffffffn) | (1n << 52n)
  const power = biased === 0 ? -1074 : biased - 1075
  const sign = x < 0 || Object.is(x, -0) ? "-" : ""
  return power >= 0 ? `${sign}${mantissa << BigInt(power)}` : `${sign}${mantissa * 5n ** BigInt(-power)}e${power}`
}

/** What JavaScript writes for doubles: each passes and is read as itself. */
const written = [
  "62007044045103450",
  "1152921504606847000",
  "9223372036854776000",
  "12345678901234567000",
  "123456789012345680000",
  "1e21",
  "5e-324",
  "-5e-324",
  "2.2250738585072014e-308",
  "1.7976931348623157e308",
  "0.30000000000000004",
  "1e307"
]

/** A double's exact value, other than what JavaScript writes for it: passes, read as that double. */
const exactValues = [
  ["62007044045103448", 62007044045103448],
  ["9223372036854775808", 2 ** 63],
  ["1.50e2", 150],
  ["0.1000000000000000055511151231257827021181583404541015625", 0.1],
  ["1" + "0".repeat(21), 1e21],
  ["-0.0e999999999999", -0]
] as const

/** Numbers that a double cannot hold as written, and the double each would be read as. */
const inexact = [
  ["9007199254740993", "9007199254740992"],
  ["62007044045103449", "62007044045103450"],
  ["12345678901234567890", "12345678901234567000"],
  ["0.1000000000000000055511151231257827", "0.1"],
  ["4.9406564584124654e-324", "5e-324"],
  ["1e-400", "0"],
  ["-1e-400", "0"]
] as const

describe("numbers a double cannot hold as written", () => {
  it.prop(
    "any double, as JavaScript writes it, is read as itself and passes; integer digits pass when they are a double's exact value or its shortest text",
    [FC.double({ noNaN: true, noDefaultInfinity: true }), FC.stringMatching(/^-?[1-9][0-9]{15,24}$/)],
    ([double, digits]) => {
      const read = parseExact(`{"n":${JSON.stringify(double)}}`) as { n: unknown }
      expect(faultOf(read)).toBeUndefined()
      expect(Object.is(read.n, double) || (double === 0 && read.n === 0)).toBe(true)
      const held = Number(digits)
      const passes = BigInt(held) === BigInt(digits) || integerOf(String(held)) === BigInt(digits)
      const fault = faultOf(parseExact(`[${digits}]`))
      expect(fault === undefined).toBe(passes)
      if (fault !== undefined) expect(fault).toMatchObject({ path: [0], reason: expect.stringContaining(digits) })
    },
    {
      fastCheck: {
        numRuns: 500,
        examples: [[62007044045103448, "9007199254740993"], [1e21, "62007044045103450"], [5e-324, "62007044045103448"]]
      }
    }
  )

  it.prop(
    "a number token passes read exactly when, as a fraction, it equals its finite double's value or that double's shortest text; sent, the shortest text",
    [
      FC.boolean(),
      FC.stringMatching(/^(0|[1-9][0-9]{0,30})$/),
      FC.option(FC.stringMatching(/^[0-9]{1,30}$/)),
      FC.option(FC.integer({ min: -400, max: 400 }))
    ],
    ([negative, whole, fraction, exponent]) => {
      const text = `${negative ? "-" : ""}${whole}${fraction === null ? "" : `.${fraction}`}${
        exponent === null ? "" : `e${exponent}`
      }`
      const read = Number(text)
      // past the largest double it is Infinity, refused as not finite
      const passes = Number.isFinite(read) && (sameFraction(text, String(read)) || sameFraction(text, exactText(read)))
      expect(faultOf(parseExact(`[${text}]`)) === undefined, text).toBe(passes)
      // sent, it is written as its double's shortest text: it passes when that has its value
      const sent = Number.isFinite(read) && sameFraction(text, String(read))
      expect(faultOf(parseExact(`[${text}]`, "sent")) === undefined, text).toBe(sent)
    },
    {
      fastCheck: {
        numRuns: 2_000,
        examples: [
          [false, "62007044045103448", null, null],
          [false, "1", "50", 2],
          [false, "4", "9406564584124654", -324],
          [true, "0", "0", 999]
        ]
      }
    }
  )

  it.prop(
    "in a row of strings full of digits, exponents and minus signs, at any offset, a number token is found exactly when it does not pass",
    [
      FC.boolean(),
      FC.stringMatching(/^(0|[1-9][0-9]{0,24})$/),
      FC.option(FC.stringMatching(/^[0-9]{1,24}$/)),
      FC.option(FC.tuple(FC.constantFrom("e", "E", "e-", "E+", "e-0"), FC.integer({ min: 0, max: 400 }))),
      FC.stringMatching(/^[0-9a-f .e+-]{0,40}$/),
      FC.constantFrom("", " ", "\n\t", "  "),
      FC.boolean(),
      FC.boolean()
    ],
    ([negative, whole, fraction, exponent, noise, space, inArray, decoys]) => {
      const token = `${negative ? "-" : ""}${whole}${fraction === null ? "" : `.${fraction}`}${
        exponent === null ? "" : `${exponent[0]}${exponent[1]}`
      }`
      const read = Number(token)
      const passes = Number.isFinite(read) &&
        (sameFraction(token, String(read)) || sameFraction(token, exactText(read)))
      // digits of ids and strings around it, the token anywhere against the characters looked at;
      // with decoys, strings that hold what an inexact token holds
      const value = inArray ? `[${space}"${noise}",${space}${token}${space}]` : `${space}${token}${space}`
      const strings = decoys ? `,"s":"${noise}${token}","t":"${token}e-400"` : ""
      const text = `{"_id":"64d0${noise.replace(/[^0-9a-f]/g, "0")}"${strings},"n":${value}}`
      const fault = faultOf(parseExact(text))
      expect(fault === undefined, text).toBe(passes)
      if (fault !== undefined) expect(fault.path, text).toEqual(inArray ? ["n", 1] : ["n"])
    },
    {
      fastCheck: {
        numRuns: 3_000,
        examples: [
          [false, "1", null, ["e-", 400], "", "", false, false],
          [false, "9007199254740993", null, null, "0123456789012345", "", true, false],
          [true, "0", "10000000000000000001", null, "e-1234", "\n\t", false, true]
        ]
      }
    }
  )

  it("a token of the fewest digits that can lose one, and of the shortest exponent that can, is found at every offset", () => {
    for (let offset = 0; offset < 40; offset++) {
      for (const token of ["9007199254740993", "-9007199254740993", "1e-400", "1E-0400", "5e-324"]) {
        const text = `{"p":"${"x".repeat(offset)}","n":${token}}`
        const expected = token === "5e-324" ? undefined : ["n"]
        expect(faultOf(parseExact(text))?.path, text).toEqual(expected)
      }
    }
  })

  it("what JavaScript writes for a double, and a double's exact value, pass as that double; what no double holds is named, with the double it would be read as", () => {
    for (const text of written) {
      const read = parseExact(`[${text}]`)
      expect(faultOf(read), text).toBeUndefined()
      expect(read).toEqual([Number(text)])
    }
    for (const [text, double] of exactValues) {
      const read = parseExact(`{"n":${text}}`) as { n: unknown }
      expect(faultOf(read), text).toBeUndefined()
      expect(Object.is(read.n, double), text).toBe(true)
    }
    for (const [text, readAs] of inexact) {
      const fault = faultOf(parseExact(`{"a":[true,{"n":${text}}]}`))
      expect(fault, text).toEqual({
        path: ["a", 1, "n"],
        reason: `is ${text}, which a double cannot hold as written: it would be read as ${readAs}`
      })
    }
  })

  it("a string that looks like a number is a string; a text that is no JSON is refused as JSON.parse refuses it", () => {
    const text = String.raw`{"a":"9007199254740993","b":"x\\","c":"\\\"1e-400","d":[1e-40,"12345678901234567890"]}`
    const read = parseExact(text)
    expect(faultOf(read)).toBeUndefined()
    expect(read).toEqual(JSON.parse(text))
    for (const bad of ["[1e-400", "[9007199254740993,]", "[01234567890123456789]", "[1.e-400]", "[--1e-400]"]) {
      expect(() => parseExact(bad), bad).toThrow()
    }
  })

  it("a number of a million digits is checked in one pass; its error quotes its first 24 characters and says how long it is", () => {
    const zeros = "0".repeat(1_000_000)
    for (
      const [text, length] of [
        [`1.${zeros}1e1`, "1,000,005"],
        [`0.${zeros}1`, "1,000,003"],
        [`1${zeros}1e-1000000`, "1,000,011"]
      ] as const
    ) {
      const fault = faultOf(parseExact(`{"V":${text}}`))
      expect(fault?.path).toEqual(["V"])
      expect(fault?.reason).toBe(
        `is ${text.slice(0, 24)}... (a number of ${length} characters), which a double cannot hold as written: ` +
          `it would be read as ${Number(text)}`
      )
    }
    // its digits past the point are zeros: it says 10, and is read as 10
    expect(faultOf(parseExact(`{"V":1.${zeros}e1}`))).toBeUndefined()
  })

  it(`an answer holding more than ${markedNumbersMax.toLocaleString("en-US")} such numbers is refused whole, at the first past them`, () => {
    const numbers = (count: number) => `{"V":[${Array.from({ length: count }, () => "1e-400").join(",")}]}`
    const marked = readExact(numbers(markedNumbersMax))
    expect("value" in marked && faultOf(marked.value)?.path).toEqual(["V", 0])
    expect(readExact(numbers(markedNumbersMax + 1))).toEqual({
      refused:
        `it holds more than ${
          markedNumbersMax.toLocaleString("en-US")
        } numbers that a double cannot hold as written; ` +
        "the first is 1e-400, which a double cannot hold as written: it would be read as 0"
    })
  })

  it("sent, a number passes when JavaScript writes its double with the same value: a double's other exact digits are refused, saying what to write", () => {
    for (const text of [...written, "1.50e2", "-0"]) {
      expect(faultOf(parseExact(`{"n":${text}}`, "sent")), text).toBeUndefined()
    }
    expect(faultOf(parseExact(`{"n":62007044045103448}`, "sent"))).toEqual({
      path: ["n"],
      reason: "is 62007044045103448, which would be sent as 62007044045103450: a double holds it exactly, " +
        "but JavaScript writes that double's shortest digits; write 62007044045103450 to send it"
    })
    for (const [text, sentAs] of inexact) {
      expect(faultOf(parseExact(`{"n":${text}}`, "sent"))?.reason).toBe(
        `is ${text}, which a double cannot hold as written: it would be sent as ${sentAs}`
      )
    }
  })

  it.live("a row holding one fails the read naming its row and field; under invalidRows \"skip\" it is left out, counted", () =>
    Effect.gen(function*() {
      const body = `{"status":"success","body":{"microAppRows":[` +
        `{"_id":"66c200000000000000000001","Amount":1.5},` +
        `{"_id":"66c200000000000000000002","Amount":0.1000000000000000055511151231257827},` +
        `{"_id":"66c200000000000000000003","Count":12345678901234567891}]}}`
      const server = yield* hostileServer(() =>
        Effect.succeed(HttpServerResponse.text(body, { contentType: "application/json" }))
      )
      const client = clientOf(server.baseUrl, NodeHttpClient.layerUndici, { retry: false })
      const failed = yield* Effect.flip(
        Effect.provide(
          Effect.flatMap(MicroappClient, (c) => c.query({ microAppID: "66c000000000000000000001" })),
          client
        )
      )
      expect(failed).toMatchObject({
        _tag: "UnexpectedResponse",
        kind: "Row",
        rowIndex: 1,
        rowID: "66c200000000000000000002",
        fieldPath: "Amount"
      })
      expect(failed.message).toContain("0.1000000000000000055511151231257827")
      const skipped = yield* Effect.provide(
        Effect.flatMap(
          MicroappClient,
          (c) =>
            c.withSchema(Schema.Struct({ _id: Schema.String }), { invalidRows: "skip" }).query({
              microAppID: "66c000000000000000000001"
            })
        ),
        client
      )
      expect(skipped.map((row) => row._id)).toEqual(["66c200000000000000000001"])
    }).pipe(Effect.scoped))
})
