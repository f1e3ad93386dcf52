/**
 * The row walk (plainData.ts `walk`): one pass over a row that checks it is plain data, that no
 * number lost a digit, that a copy can keep every text, and feeds its fingerprint. Each property
 * holds it to what the checks it replaced said, written out here as they were: a recursive
 * plain-data check, a recursive storage check with a regex on each text, and the hash of a
 * sorted-key JSON text built whole. Fingerprints that sinks and STATE files keep must not move.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as FC } from "effect"
import { fingerprint, Hash64 } from "../src/internal/fingerprint.js"
import { faultOf, locateFault, parseExact, Verdict, walk } from "../src/internal/http/plainData.js"
import { bounds } from "../src/internal/limits.js"

// --- the checks as they were ------------------------------------------------------------------

const hash64 = (text: string): string => {
  const mixKey = (key: number) => Math.imul(rotl(Math.imul(key, 0xcc9e2d51), 15), 0x1b873593)
  const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r))
  const mixHash = (hash: number, key: number) => (Math.imul(rotl(hash ^ mixKey(key), 13), 5) + 0xe6546b64) | 0
  const finalize = (hash: number, length: number) => {
    let h = hash ^ length
    h ^= h >>> 16
    h = Math.imul(h, 0x85ebca6b)
    h ^= h >>> 13
    h = Math.imul(h, 0xc2b2ae35)
    h ^= h >>> 16
    return h >>> 0
  }
  let low = 0x9747b28c
  let high = 0x1b873593
  const blocks = text.length & ~1
  for (let i = 0; i < blocks; i += 2) {
    const key = text.charCodeAt(i) | (text.charCodeAt(i + 1) << 16)
    low = mixHash(low, key)
    high = mixHash(high, key ^ 0x5bd1e995)
  }
  if (blocks < text.length) {
    const key = text.charCodeAt(blocks)
    low ^= mixKey(key)
    high ^= mixKey(key ^ 0x5bd1e995)
  }
  return finalize(high, text.length).toString(16).padStart(8, "0") +
    finalize(low, text.length).toString(16).padStart(8, "0")
}

const canonical = (value: unknown): string => {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null"
  if (Array.isArray(value)) return `[${value.map((item) => canonical(item ?? null)).join(",")}]`
  const record = value as Record<string, unknown>
  const keys = Object.keys(record).filter((key) => record[key] !== undefined).sort()
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(record[key])}`).join(",")}}`
}

const oldFingerprint = (value: unknown): string => hash64(canonical(value))

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const textFault = (s: string): string | undefined =>
  s.includes("\u0000")
    ? "holds NUL, which SQLite and PostgreSQL text cannot keep as itself"
    : loneSurrogate.test(s)
    ? "holds a lone surrogate, which UTF-8 storage turns into U+FFFD (distinct ids would merge)"
    : undefined

interface OldFault {
  readonly path: ReadonlyArray<string | number>
  readonly reason: string
}

const valueFault = (value: unknown): OldFault | undefined => {
  if (typeof value === "string") {
    const reason = textFault(value)
    return reason === undefined ? undefined : { path: [], reason }
  }
  if (typeof value !== "object" || value === null) return undefined
  for (const key of Object.keys(value)) {
    const keyReason = Array.isArray(value) ? undefined : textFault(key)
    if (keyReason !== undefined) return { path: [key], reason: `its key ${keyReason}` }
    const fault = valueFault((value as Record<string, unknown>)[key])
    if (fault !== undefined) {
      return { path: [Array.isArray(value) ? Number(key) : key, ...fault.path], reason: fault.reason }
    }
  }
  return undefined
}

const storableFault = (id: string, row: unknown): OldFault | undefined => {
  const idReason = textFault(id)
  return idReason === undefined ? valueFault(row) : { path: ["_id"], reason: `the id ${idReason}` }
}

// --- values ---------------------------------------------------------------------------------------

/** Texts of any code units: lone surrogates, NUL, quotes, backslashes and control characters among them. */
const text = FC.oneof(
  FC.string({ unit: "binary", maxLength: 8 }),
  FC.string({
    unit: FC.constantFrom("\u0000", "\ud83d", "\ude00", "\"", "\\", "\n", "\u001f", "a", "é"),
    maxLength: 6
  }),
  FC.constantFrom("__proto__", "_id", "0", "10", "2")
)

const json = FC.letrec((tie) => ({
  value: FC.oneof(
    { depthSize: "small", withCrossShrink: true },
    FC.constant(null),
    FC.boolean(),
    FC.double({ noNaN: true, noDefaultInfinity: true }),
    FC.integer(),
    text,
    FC.array(tie("value"), { maxLength: 4 }),
    FC.dictionary(text, tie("value"), { maxKeys: 4 })
  )
})).value

/** A value as JSON.parse makes it from JSON text: `__proto__` an own key, never a prototype. */
const parsed = json.map((value) => JSON.parse(JSON.stringify(value)) as unknown)

const row = FC.record({ _id: text, body: parsed }).map(({ _id, body }) =>
  JSON.parse(JSON.stringify({ _id, body })) as { readonly _id: string }
)

describe("the row walk", () => {
  it.prop("feeds the fingerprint the old text gave, for any value", [json], ([value]) => {
    expect(fingerprint(value)).toBe(oldFingerprint(value))
  }, { fastCheck: { numRuns: 2_000 } })

  it.prop("feeds, as it checks a row, the fingerprint the old text gave", [parsed], ([value]) => {
    const hash = new Hash64()
    if (walk(value, 1, hash) !== Verdict.faulty) expect(hash.digest()).toBe(oldFingerprint(value))
  }, { fastCheck: { numRuns: 2_000 } })

  it.prop("finds what the plain-data and storage checks found, together", [row], ([value]) => {
    const verdict = walk(value, 1, new Hash64())
    const plain = faultOf(value)
    const stored = storableFault(value._id, value)
    expect(verdict).toBe(
      plain !== undefined ? Verdict.faulty : stored !== undefined ? Verdict.unstorable : Verdict.clean
    )
    // a reader's walk, strings unread, sees only what no reader passes
    expect(walk(value, 1, undefined) === Verdict.faulty).toBe(plain !== undefined)
    if (verdict !== Verdict.clean) expect(locateFault(value, verdict, value._id)).toEqual(plain ?? stored)
  })

  it("finds numbers marked as read inexact, Infinity, depth and __proto__, which stop it", () => {
    const marked = parseExact(`{"_id":"a","n":[1,9007199254740993]}`)
    expect(walk(marked, 1, new Hash64())).toBe(Verdict.faulty)
    expect(locateFault(marked, Verdict.faulty, "a").path).toEqual(["n", 1])
    expect(walk({ n: Infinity }, 1, new Hash64())).toBe(Verdict.faulty)
    expect(walk(JSON.parse(`{"__proto__":1}`), 1, undefined)).toBe(Verdict.faulty)
    let deep: unknown = 1
    for (let i = 0; i <= bounds.valueDepth; i++) deep = [deep]
    expect(walk(deep, 1, new Hash64())).toBe(Verdict.faulty)
    expect(walk(deep, 1, undefined)).toBe(Verdict.faulty)
    expect(walk((deep as Array<unknown>)[0], 1, new Hash64())).toBe(Verdict.clean)
  })

  it("fingerprints the same after a walk as it would before: baselines already stored keep matching", () => {
    const hash = new Hash64()
    expect(walk({ a: 1 }, 1, hash)).toBe(Verdict.clean)
    expect(hash.digest()).toBe("d8519e4dd6e81b5b")
    expect(fingerprint("")).toBe("e42cc3420e2b9cef")
  })
})
