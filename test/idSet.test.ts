import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as FC } from "effect"
import * as IdSet from "../src/internal/scan/IdSet.js"

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

  it.prop(
    "answers as a Set does for ids that come mostly in ascending order, some out of it, some again",
    [
      FC.uniqueArray(FC.bigInt({ min: 0n, max: (1n << 96n) - 1n }), { minLength: 1, maxLength: 600 }),
      FC.array(FC.tuple(FC.nat(), FC.nat()), { maxLength: 40 }),
      FC.array(FC.nat(), { maxLength: 40 })
    ],
    ([values, swaps, repeats]) => {
      const ids = values.sort((a, b) => (a < b ? -1 : 1)).map((value) => value.toString(16).padStart(24, "0"))
      for (const [i, j] of swaps) {
        const x = i % ids.length, y = j % ids.length
        ;[ids[x], ids[y]] = [ids[y] as string, ids[x] as string]
      }
      for (const at of repeats) ids.splice(at % ids.length, 0, ids[(at * 7) % ids.length] as string)
      const set = IdSet.exact({ journal: true })
      const model = new Set<string>()
      for (const id of ids) {
        expect(set.has(id)).toBe(model.has(id))
        expect(set.add(id)).toBe(!model.has(id))
        model.add(id)
      }
      expect(set.size()).toBe(model.size)
      for (const id of model) expect(set.has(id)).toBe(true)
      const contents = set.contents()
      if (contents?._tag !== "Exact") return expect(contents?._tag).toBe("Exact")
      const again = Either.getOrThrow(IdSet.restore(contents, { journal: false, capacity: 0 }))
      expect(again.size()).toBe(model.size)
      for (const id of model) expect(again.add(id)).toBe(false)
    }
  )

  it.prop(
    "packs exactly the ids of 24 lower-case hex digits, whatever codes sit beside the digits",
    [FC.array(FC.constantFrom(..."0123456789abcdefABCDEFg/:`@\u0130\u0660\u0000\uff10"), {
      minLength: 23,
      maxLength: 25
    })],
    ([chars]) => {
      const id = chars.join("")
      expect(IdSet.isPacked(id)).toBe(/^[0-9a-f]{24}$/.test(id))
    },
    {
      fastCheck: {
        numRuns: 2_000,
        examples: [[[..."00000000000000000000000g"]], [[..."0000000000000000000000\u01300"]]]
      }
    }
  )

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

describe("the contents of a set, for a checkpoint", () => {
  it.prop(
    "an exact set with a journal is made again from its contents: the same answers, whatever the ids",
    [FC.array(anyId, { maxLength: 300 }), FC.array(anyId, { maxLength: 100 })],
    ([before, after]) => {
      const set = IdSet.exact({ journal: true })
      for (const id of before) set.add(id)
      const contents = set.contents()
      // ids added after the contents were taken are not in them
      for (const id of after) set.add(id)
      expect(contents?._tag).toBe("Exact")
      if (contents?._tag !== "Exact") return
      expect(contents.size).toBe(new Set(before).size)
      const again = Either.getOrThrow(IdSet.restore(contents, { journal: true, capacity: 0 }))
      for (const id of [...before, ...after]) expect(again.has(id)).toBe(before.includes(id))
      // and its own contents, after more ids, are the old ones and the new ones
      for (const id of after) again.add(id)
      const next = again.contents()
      if (next?._tag !== "Exact") return expect(next?._tag).toBe("Exact")
      const last = Either.getOrThrow(IdSet.restore(next, { journal: false, capacity: 0 }))
      expect(last.size()).toBe(new Set([...before, ...after]).size)
      for (const id of [...before, ...after]) expect(last.has(id)).toBe(true)
    }
  )

  it("packs a service id into 16 characters of base64: its 12 bytes", () => {
    const set = IdSet.exact({ journal: true })
    set.add("64b7c0f1a2d3e4f5a6b7c8da")
    set.add("not-an-object-id")
    const contents = set.contents()
    if (contents?._tag !== "Exact") return expect(contents?._tag).toBe("Exact")
    expect(contents.packed()).toBe(
      btoa(String.fromCharCode(0x64, 0xb7, 0xc0, 0xf1, 0xa2, 0xd3, 0xe4, 0xf5, 0xa6, 0xb7, 0xc8, 0xda))
    )
    expect(contents.others()).toEqual(["not-an-object-id"])
  })

  it("contents name the live set they were taken from, which grows past them; restored contents name the new set", () => {
    const set = IdSet.exact({ journal: true })
    set.add("64b7c0f1a2d3e4f5a6b7c8da")
    set.add("not-packed")
    const contents = set.contents()
    if (contents?._tag !== "Exact") return expect.fail("no exact contents")
    expect(contents.source).toBe(set)
    set.add("64b7c0f1a2d3e4f5a6b7c8db")
    expect([contents.size, contents.source?.size()]).toEqual([2, 3])
    const restored = Either.getOrThrow(IdSet.restore(contents, { journal: true, capacity: 0 }))
    expect(restored.contents()?._tag === "Exact" && restored.contents()).toMatchObject({ size: 2, source: restored })
    expect(IdSet.exactContents(contents.packed(), contents.others()).source).toBeUndefined()
  })

  it("an exact set without a journal has no contents to hand out", () => {
    expect(IdSet.exact().contents()).toBeUndefined()
  })

  it("a recent set is made again from its window, oldest first: it forgets in the same order", () => {
    const set = IdSet.recent(3)
    for (const id of ["a", "b", "c", "d"]) set.add(id)
    const contents = set.contents()
    expect(contents).toEqual({ _tag: "Recent", ids: ["b", "c", "d"] })
    if (contents?._tag !== "Recent") return
    const again = Either.getOrThrow(IdSet.restore(contents, { journal: false, capacity: 3 }))
    expect(again.add("e")).toBe(true)
    // "b" was the oldest: forgotten first
    expect([again.has("b"), again.has("c"), again.has("d"), again.has("e")]).toEqual([false, true, true, true])
  })

  it("contents that no set could hand out are refused, saying why", () => {
    const id = "64b7c0f1a2d3e4f5a6b7c8da"
    const twice = { _tag: "Exact" as const, packed: () => "", others: () => ["x", "x"], size: 2, digest: () => "" }
    const packedTwice = btoa(String.fromCharCode(...Array.from({ length: 24 }, (_, i) => i % 12)))
    const cases: ReadonlyArray<readonly [IdSet.Contents, string]> = [
      [twice, "holds id \"x\" twice"],
      [
        { _tag: "Exact", packed: () => packedTwice, others: () => [], size: 2, digest: () => "" },
        "holds packed id 000102030405060708090a0b twice"
      ],
      [
        { _tag: "Exact", packed: () => "", others: () => [id], size: 1, digest: () => "" },
        "among the ids of other shapes"
      ],
      [{ _tag: "Exact", packed: () => "AAAA AAAAAAAAAAA", others: () => [], size: 1, digest: () => "" }, "not base64"],
      [
        { _tag: "Exact", packed: () => "AAAAAAAA", others: () => [], size: 1, digest: () => "" },
        "not base64 of 12 bytes an id"
      ],
      [{ _tag: "Recent", ids: ["a", "b", "a"] }, "holds id \"a\" twice"],
      [{ _tag: "Recent", ids: ["a", "b", "c", "d"] }, "more than the 3 kept"]
    ]
    for (const [contents, reason] of cases) {
      const restored = IdSet.restore(contents, { journal: false, capacity: 3 })
      expect(Either.isLeft(restored) && restored.left).toContain(reason)
    }
  })
})
