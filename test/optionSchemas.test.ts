import { describe, expect, it } from "@effect/vitest"
import { Duration, Either, ParseResult, Schema } from "effect"
import {
  checking,
  CollectMax,
  durationIn,
  durationReason,
  RowsOptionsSchema,
  TuningSchema,
  UpdateRowsOptionsSchema,
  validateEither
} from "../src/internal/bounds.js"
import { bounds } from "../src/internal/limits.js"
import type { InvalidInput } from "../src/MicroappError.js"

interface Public {
  readonly a?: number | undefined
  readonly b?: Duration.DurationInput | undefined
}

describe("each option Schema takes exactly its public type", () => {
  it("a Schema with the public type's keys and types compiles; one with a key more, a key less or another type does not", () => {
    const exact = checking<Public>()(Schema.Struct({
      a: Schema.optional(Schema.Number),
      b: Schema.optional(durationIn(Duration.zero, Duration.seconds(1)))
    }))
    // @ts-expect-error a key the public type does not have
    checking<Public>()(Schema.Struct({ a: Schema.optional(Schema.Number), c: Schema.optional(Schema.Number) }))
    // @ts-expect-error a key of the public type missing
    checking<Public>()(Schema.Struct({ a: Schema.optional(Schema.Number) }))
    // @ts-expect-error a duration taken as a number only
    checking<Public>()(Schema.Struct({ a: Schema.optional(Schema.Number), b: Schema.optional(Schema.Number) }))
    expect(Either.isRight(Schema.decodeUnknownEither(exact)({ a: 1, b: "500 millis" }))).toBe(true)
  })

  it("a duration is any Duration.DurationInput in range; anything else is refused with the range", () => {
    const decode = Schema.decodeUnknownEither(durationIn(Duration.zero, Duration.seconds(1)))
    for (const input of [0, 999, 1000n, "1 second", Duration.millis(5), [0, 5] as const]) {
      expect(Either.isRight(decode(input)), String(input)).toBe(true)
    }
    for (const input of [1001, "2 seconds", "soon", null, {}, -1, "-5 millis"]) {
      const result = decode(input)
      const issues = Either.isLeft(result) ? ParseResult.ArrayFormatter.formatErrorSync(result.left) : []
      expect(issues.map((issue) => issue.message), String(input)).toEqual([
        durationReason(Duration.zero, Duration.seconds(1))
      ])
    }
  })
})

describe("bounds.ts holds the option Schemas, each refusing past its bound with the option's name", () => {
  const rows = validateEither(RowsOptionsSchema, undefined)
  const tuning = validateEither(TuningSchema, undefined)
  const collect = validateEither(CollectMax, undefined)
  const updates = validateEither(UpdateRowsOptionsSchema, undefined)
  const cases: ReadonlyArray<{
    readonly check: (input: unknown) => Either.Either<unknown, InvalidInput>
    readonly base: object
    readonly input: string
    readonly bound: number
  }> = [
    { check: rows, base: { microAppID: "app" }, input: "pageSize", bound: bounds.pageSize },
    { check: rows, base: { microAppID: "app" }, input: "maxConcurrency", bound: bounds.concurrency },
    { check: rows, base: { microAppID: "app" }, input: "prefetch", bound: bounds.prefetch },
    { check: tuning, base: {}, input: "pageSize", bound: bounds.pageSize },
    { check: tuning, base: {}, input: "maxResponseBytes", bound: bounds.maxResponseBytes },
    { check: collect, base: {}, input: "max", bound: bounds.collectMax },
    { check: updates, base: {}, input: "concurrency", bound: bounds.concurrency },
    { check: updates, base: {}, input: "maxSends", bound: bounds.maxSends }
  ]
  for (const { base, bound, check, input } of cases) {
    it(`${input}: at most ${bound}`, () => {
      expect(Either.isRight(check({ ...base, [input]: bound }))).toBe(true)
      const refused = check({ ...base, [input]: bound + 1 })
      expect(Either.isLeft(refused) && refused.left).toMatchObject({
        _tag: "InvalidInput",
        input,
        reason: expect.stringContaining(bound.toLocaleString("en-US"))
      })
    })
  }
})
