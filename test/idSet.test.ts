import { describe, expect, it } from "@effect/vitest"
import { FastCheck as FC } from "effect"
import * as IdSet from "../src/internal/IdSet.js"

const hexId = FC.stringMatching(/^[0-9a-f]{24}$/)
const anyId = FC.oneof(
  hexId,
  FC.stringMatching(/^[0-9a-fA-F]{24}$/),
  FC.string({ maxLength: 30 }),
  FC.constant("000000000000000000000000")
)

describe("the exact id set", () => {
  it.prop("answers as a Set does, for any ids, with repeats", [FC.array(anyId, { maxLength: 400 })], ([ids]) => {
    const set = IdSet.exact()
    const model = new Set<string>()
    for (const id of [...ids, ...ids.slice(0, ids.length / 2)]) {
      expect(set.has(id)).toBe(model.has(id))
      expect(set.add(id)).toBe(!model.has(id))
      model.add(id)
    }
    expect(set.size()).toBe(model.size)
  })

  it("never takes an upper-case id for its lower-case twin", () => {
    const set = IdSet.exact()
    expect(set.add("64b7c0f1a2d3e4f5a6b7c8da")).toBe(true)
    expect(set.add("64B7C0F1A2D3E4F5A6B7C8DA")).toBe(true)
    expect(set.add("64b7c0f1a2d3e4f5a6b7c8da")).toBe(false)
  })

  it("holds 200,000 service ids, none lost, in at most 24 bytes each", () => {
    const set = IdSet.exact()
    const count = 200_000
    const id = (i: number) => (0x64b7c0f1 + i).toString(16).padStart(24, "0")
    let added = 0
    let again = 0
    for (let i = 0; i < count; i++) added += set.add(id(i)) ? 1 : 0
    for (let i = 0; i < count; i++) again += set.add(id(i)) ? 1 : 0
    expect({ added, again, size: set.size() }).toEqual({ added: count, again: 0, size: count })
    expect(set.packedBytes()).toBeLessThanOrEqual(24 * count)
  })
})

describe("the recent id set", () => {
  it("forgets ids beyond its capacity: a row seen that long ago is new again", () => {
    const set = IdSet.recent(3)
    for (const id of ["a", "b", "c"]) expect(set.add(id)).toBe(true)
    expect(set.add("a")).toBe(false)
    expect(set.add("d")).toBe(true)
    expect(set.add("a")).toBe(true)
    expect(set.size()).toBe(3)
  })
})
