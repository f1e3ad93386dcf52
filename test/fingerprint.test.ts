import { describe, expect, it } from "@effect/vitest"
import { FastCheck as FC } from "effect"
import { fingerprint, Hash64 } from "../src/internal/fingerprint.js"

/** The same value with every object's keys in another order, at every depth. */
const shuffled = (value: unknown, seed: number): unknown => {
  if (value === null || typeof value !== "object") return value
  if (Array.isArray(value)) return value.map((item, i) => shuffled(item, seed + i))
  const entries = Object.entries(value)
  const rotated = entries.map((_, i) => entries[(i + seed) % entries.length]!).reverse()
  return Object.fromEntries(rotated.map(([key, item], i) => [key, shuffled(item, seed + i)]))
}

const sortedJson = (value: unknown): string =>
  JSON.stringify(value, (_, item: unknown) =>
    item !== null && typeof item === "object" && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0))
      : item)

describe("fingerprint", () => {
  it.prop("does not depend on the order of keys, at any depth", [FC.jsonValue(), FC.nat()], ([value, seed]) => {
    expect(fingerprint(shuffled(value, seed))).toBe(fingerprint(value))
    expect(fingerprint(value)).toMatch(/^[0-9a-f]{16}$/)
  })

  it.prop("of a text is the hash of its JSON, long or short, with or without anything to escape", [
    FC.array(FC.oneof(FC.integer({ min: 0x20, max: 0x7e }), FC.integer({ min: 0, max: 0xffff })), { maxLength: 700 }),
    FC.integer({ min: 0, max: 2000 })
  ], ([codes, plain]) => {
    const hashOf = (text: string) => {
      const hash = new Hash64()
      hash.text(JSON.stringify(text))
      return hash.digest()
    }
    // units of every kind (lone surrogates too), and a long run of base64, as a checkpoint's packed ids are
    for (const text of [String.fromCharCode(...codes), "Ab+/9z=".repeat(plain), `${"x".repeat(plain)}"`]) {
      expect(fingerprint(text)).toBe(hashOf(text))
      expect(fingerprint({ packed: text })).toBe(fingerprint(JSON.parse(JSON.stringify({ packed: text }))))
      // as a key among others: a key is fed as JSON writes it too, in code-unit order
      const members = new Map<string, unknown>([["\u0000", 0], ["\uffff", true], [text, [text]]])
      const sorted = [...members.keys()].sort().map((key) =>
        `${JSON.stringify(key)}:${JSON.stringify(members.get(key))}`
      )
      const canonical = new Hash64()
      canonical.text(`{${sorted.join(",")}}`)
      expect(fingerprint(Object.fromEntries(members))).toBe(canonical.digest())
    }
  })

  it.prop("tells different contents apart (distinct canonical JSON, distinct fingerprints)", [
    FC.uniqueArray(FC.jsonValue(), { minLength: 2, maxLength: 200, selector: sortedJson })
  ], ([values]) => {
    expect(new Set(values.map(fingerprint)).size).toBe(values.length)
  })

  it("changes with any one value of a row, and with a key's name", () => {
    const row = {
      _id: "r1",
      Name: "Alpha",
      Budget: 1200,
      Owner: { crossAppRowID: "p1", value: { label: "Email", value: "a@b" } }
    }
    const base = fingerprint(row)
    expect(fingerprint({ ...row, Name: "Alphb" })).not.toBe(base)
    expect(fingerprint({ ...row, Budget: 1201 })).not.toBe(base)
    expect(fingerprint({ ...row, Budget: "1200" })).not.toBe(base)
    expect(fingerprint({ ...row, Owner: { ...row.Owner, crossAppRowID: "p2" } })).not.toBe(base)
    const { Name, ...rest } = row
    expect(fingerprint({ ...rest, name: Name })).not.toBe(base)
    expect(fingerprint({ ...row, Extra: undefined })).toBe(base)
  })

  it("is stable across releases: sinks keep fingerprints from one pass to the next", () => {
    expect(fingerprint({ _id: "64c000000000000000000001", Name: "Project 0001", Budget: 718.9, Tags: ["a", "b"] }))
      .toBe(fingerprint({ Tags: ["a", "b"], Budget: 718.9, Name: "Project 0001", _id: "64c000000000000000000001" }))
    expect(fingerprint({ a: 1 })).toBe("d8519e4dd6e81b5b")
    expect(fingerprint("")).toBe("e42cc3420e2b9cef")
  })

  it("keeps the fingerprints of rows deeper than the recursion and of every kind of value", () => {
    const row = {
      _id: "64c000000000000000000007",
      Name: "Project \u00e9 \"7\"",
      Budget: 1e21,
      Tags: ["b", null, { z: 1, a: [true, false, -0.5] }],
      "10": 1,
      "9": 2,
      Owner: { value: { label: "Email", value: "a@b" }, crossAppRowID: "p1" },
      "\ud83d\ude00": "smile"
    }
    expect(fingerprint(row)).toBe("68de9ad0ea5c6c5f")
    let deep: unknown = "x"
    for (let i = 0; i < 1000; i++) deep = i % 2 === 0 ? [deep, i] : { d: deep, a: i }
    expect(fingerprint(deep)).toBe("ebdb23f706326e16")
  })

  it("keeps an own __proto__ key, and takes rows nested deeper than the call stack", () => {
    const withProto = JSON.parse(`{"_id":"r1","__proto__":{"x":1}}`)
    expect(fingerprint(withProto)).not.toBe(fingerprint({ _id: "r1" }))
    let deep: unknown = 1
    for (let i = 0; i < 200_000; i++) deep = i % 2 === 0 ? [deep] : { d: deep }
    expect(fingerprint(deep)).toMatch(/^[0-9a-f]{16}$/)
  })
})
