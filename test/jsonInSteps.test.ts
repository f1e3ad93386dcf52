/**
 * An answer read in steps is read as JSON.parse reads it in one piece: the same value (key order,
 * `__proto__` keys as properties) for every text JSON.parse accepts, and a refusal for every text
 * it refuses, whatever the length of a step.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck as FC } from "effect"
import { readInSteps, readJson, stepChars, stepsDepth } from "../src/internal/http/jsonInSteps.js"
import { faultOf, type Read, readExact } from "../src/internal/http/plainData.js"

/** `text` read in steps of `chars` characters each. */
const inSteps = (text: string, chars: number): Read => {
  const reader = readInSteps(text, "read", chars, 0)
  for (;;) {
    const read = reader.step()
    if (read !== undefined) return read
  }
}

const outcome = (read: () => unknown): { readonly value: unknown } | "refused" => {
  try {
    return { value: read() }
  } catch {
    return "refused"
  }
}

/** What an edit inserts into a JSON text (or, empty, deletes from it): structure, numbers, quotes. */
const insertion = FC.constantFrom("", ",", "]", "}", "[", "{", ":", " ", "\"", "\\", "1", "-", "e", "x", "\u00a0")

describe("a text read in steps", () => {
  it.prop(
    "is read as in one piece, or refused when JSON.parse refuses it, whatever the step",
    [
      FC.jsonValue(),
      FC.integer({ min: 1, max: 40 }),
      FC.integer({ min: 0, max: 3 }),
      FC.array(FC.tuple(FC.nat(), insertion), { maxLength: 3 })
    ],
    ([value, chars, indent, edits]) => {
      let text = JSON.stringify(value, null, indent)
      for (const [at, inserted] of edits) {
        const i = at % (text.length + 1)
        text = text.slice(0, i) + inserted + text.slice(i + (inserted === "" ? 1 : 0))
      }
      // readExact in one piece: JSON.parse's value, a number a double cannot hold marked
      const expected = outcome(() => readExact(text))
      expect(expected === "refused").toBe(outcome(() => JSON.parse(text)) === "refused")
      const actual = outcome(() => inSteps(text, chars))
      expect(actual).toEqual(expected)
      if (actual !== "refused" && expected !== "refused") {
        expect(JSON.stringify(actual.value)).toBe(JSON.stringify(expected.value))
      }
    },
    { fastCheck: { numRuns: 2_000 } }
  )

  it("keeps a __proto__ key as a property at every depth, in its place, whatever the step", () => {
    const text = `{"a":[1,2,{"__proto__":{"x":1},"b":[3,4]}],"__proto__":[5],"c":{"__proto__":{"y":2}}}`
    for (let chars = 1; chars < text.length; chars++) {
      const read = inSteps(text, chars)
      expect("value" in read && JSON.stringify(read.value)).toBe(text)
      const value = "value" in read ? read.value as Record<string, unknown> : {}
      expect(Object.getPrototypeOf(value)).toBe(Object.prototype)
      expect(Object.keys(value)).toEqual(["a", "__proto__", "c"])
    }
  })

  it("marks a number a double cannot hold in whichever piece it falls, and names it", () => {
    const text = `{"rows":[{"n":1},{"n":9007199254740993},{"n":[1e-400]}]}`
    for (let chars = 1; chars < text.length; chars++) {
      const read = inSteps(text, chars)
      const rows = "value" in read ? (read.value as { rows: ReadonlyArray<unknown> }).rows : []
      expect(rows.map((row) => faultOf(row)?.path)).toEqual([undefined, ["n"], ["n", 0]])
    }
  })

  it(`refuses a text nested deeper than ${stepsDepth} levels as a whole`, () => {
    const text = `${"[".repeat(stepsDepth + 1)}${"]".repeat(stepsDepth + 1)}`
    expect(inSteps(text, 10)).toEqual({ refused: `it is nested deeper than ${stepsDepth} levels` })
    expect(inSteps(text.slice(1, -1), 10)).toMatchObject({ value: expect.any(Array) })
  })

  it.effect(`a text of more than ${stepChars.toLocaleString("en-US")} characters is read in steps, to the same value`, () =>
    Effect.gen(function*() {
      const rows = Array.from({ length: 40_000 }, (_, i) => ({ _id: `row ${i}`, n: i / 7, tags: ["a", { i }] }))
      const text = JSON.stringify({ status: "success", body: { microAppRows: rows } })
      expect(text.length).toBeGreaterThan(2 * stepChars)
      expect(yield* readJson(text)).toEqual({ value: JSON.parse(text) })
      expect(yield* Effect.either(readJson(`${text}]`))).toMatchObject({ _tag: "Left" })
    }))
})
