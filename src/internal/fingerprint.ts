/**
 * A row's content fingerprint: 64 bits, as 16 hex digits, of the row's canonical JSON (object keys
 * sorted at every depth), so two rows with the same keys and values have the same fingerprint
 * whatever the order of their keys. Two MurmurHash3 (x86, 32-bit) lanes with different seeds over
 * the text's UTF-16 code units: fast in plain JS, with no dependency and no platform crypto (which is
 * asynchronous in browsers). A change detector, not a defence against a forger: the server could
 * choose colliding rows, but it could as well just send the old row.
 */

const seedLow = 0x9747b28c
const seedHigh = 0x1b873593

const c1 = 0xcc9e2d51
const c2 = 0x1b873593

const mixKey = (key: number): number => Math.imul(rotl(Math.imul(key, c1), 15), c2)

const rotl = (x: number, r: number): number => (x << r) | (x >>> (32 - r))

const mixHash = (hash: number, key: number): number => (Math.imul(rotl(hash ^ mixKey(key), 13), 5) + 0xe6546b64) | 0

const finalize = (hash: number, length: number): number => {
  let h = hash ^ length
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

/** Both lanes over the code units of `text`, two units a 32-bit block. */
const hash64 = (text: string): string => {
  let low = seedLow
  let high = seedHigh
  const length = text.length
  const blocks = length & ~1
  for (let i = 0; i < blocks; i += 2) {
    const key = text.charCodeAt(i) | (text.charCodeAt(i + 1) << 16)
    low = mixHash(low, key)
    high = mixHash(high, key ^ 0x5bd1e995)
  }
  if (blocks < length) {
    const key = text.charCodeAt(blocks)
    low ^= mixKey(key)
    high ^= mixKey(key ^ 0x5bd1e995)
  }
  const a = finalize(low, length)
  const b = finalize(high, length)
  return b.toString(16).padStart(8, "0") + a.toString(16).padStart(8, "0")
}

/** Nesting past which `canonical` goes on without recursion, well within any call stack. */
const maxRecursion = 500

/** JSON text of a value that is not an object or array; `null` for what JSON cannot hold. */
const scalar = (value: unknown): string => JSON.stringify(value) ?? "null"

/** `keys` in code-unit order; most rows' keys come in an order already sorted or not far from it. */
const sortedKeys = (record: object): Array<string> => {
  const keys = Object.keys(record)
  for (let i = 1; i < keys.length; i++) {
    if ((keys[i - 1] as string) > (keys[i] as string)) return keys.sort()
  }
  return keys
}

/**
 * JSON with every object's keys in code-unit order; `undefined` members dropped, as JSON does.
 * Recursive, concatenating as it goes (a row's usual depth), until `maxRecursion`, where
 * `canonicalDeep` takes over.
 */
export const canonical = (value: unknown, depth = 0): string => {
  if (value === null || typeof value !== "object") return scalar(value)
  if (depth >= maxRecursion) return canonicalDeep(value)
  if (Array.isArray(value)) {
    let out = "["
    for (let i = 0; i < value.length; i++) out += (i === 0 ? "" : ",") + canonical(value[i] ?? null, depth + 1)
    return out + "]"
  }
  const record = value as Record<string, unknown>
  let out = "{"
  for (const key of sortedKeys(record)) {
    const item = record[key]
    if (item === undefined) continue
    out += (out.length === 1 ? "" : ",") + JSON.stringify(key) + ":" + canonical(item, depth + 1)
  }
  return out + "}"
}

/** `canonical` without recursion: a row nested deeper than the call stack still has a fingerprint. */
const canonicalDeep = (root: unknown): string => {
  const out: Array<string> = []
  // a value still to write, or text to write as it stands
  const stack: Array<{ readonly value: unknown } | string> = [{ value: root }]
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (typeof next === "string") {
      out.push(next)
      continue
    }
    const value = next.value
    if (value === null || typeof value !== "object") {
      out.push(scalar(value))
    } else if (Array.isArray(value)) {
      stack.push("]")
      for (let i = value.length - 1; i >= 0; i--) {
        stack.push({ value: value[i] ?? null })
        if (i > 0) stack.push(",")
      }
      out.push("[")
    } else {
      const record = value as Record<string, unknown>
      const keys = sortedKeys(record).filter((key) => record[key] !== undefined)
      stack.push("}")
      keys.reverse().forEach((key, i) => {
        stack.push({ value: record[key] }, `${i < keys.length - 1 ? "," : ""}${JSON.stringify(key)}:`)
      })
      out.push("{")
    }
  }
  return out.join("")
}

/** Nesting a row may have for `direct`, which recurses; a deeper row takes `canonical`, which does not. */
const maxDirectDepth = 64

/**
 * `canonical`'s text, built by recursion and string concatenation (about twice as fast for the rows
 * of a table); undefined when `value` nests deeper than `maxDirectDepth`.
 */
export const direct = (value: unknown, depth: number): string | undefined => {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null"
  if (depth > maxDirectDepth) return undefined
  if (Array.isArray(value)) {
    let text = "["
    for (let i = 0; i < value.length; i++) {
      const item = direct(value[i] ?? null, depth + 1)
      if (item === undefined) return undefined
      text += i === 0 ? item : `,${item}`
    }
    return `${text}]`
  }
  const record = value as Record<string, unknown>
  const keys = Object.keys(record).sort()
  let text = "{"
  let first = true
  for (const key of keys) {
    const member = record[key]
    if (member === undefined) continue
    const written = direct(member, depth + 1)
    if (written === undefined) return undefined
    text += `${first ? "" : ","}${JSON.stringify(key)}:${written}`
    first = false
  }
  return `${text}}`
}

/** The fingerprint of a row's content: equal for equal content, whatever the order of its keys. */
export const fingerprint = (row: unknown): string => hash64(direct(row, 0) ?? canonical(row))
