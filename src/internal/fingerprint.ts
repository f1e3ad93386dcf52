/**
 * A row's content fingerprint: 64 bits, as 16 hex digits, of the row's canonical JSON (object keys
 * sorted at every depth), so two rows with the same keys and values have the same fingerprint
 * whatever the order of their keys. Two MurmurHash3 (x86, 32-bit) lanes with different seeds over
 * the text's UTF-16 code units: fast in plain JS, with no dependency and no platform crypto (which is
 * asynchronous in browsers). The units are fed as the value is walked: no text is built. A change
 * detector, not a defence against a forger: the server could choose colliding rows, but it could as
 * well just send the old row.
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

/** The two lanes over code units fed one at a time, two units a 32-bit block: the hash of their text. */
export class Hash64 {
  private low = seedLow
  private high = seedHigh
  private length = 0
  /** The first unit of a block not yet complete, or -1. */
  private pending = -1

  unit(code: number): void {
    this.length++
    if (this.pending < 0) {
      this.pending = code
      return
    }
    const key = this.pending | (code << 16)
    this.pending = -1
    this.low = mixHash(this.low, key)
    this.high = mixHash(this.high, key ^ 0x5bd1e995)
  }

  /** Feeds `text.slice(from, to)`: the lanes in locals, for the inner loop of every text of a row. */
  text(text: string, from = 0, to = text.length): void {
    let at = from
    if (at < to && this.pending >= 0) this.unit(text.charCodeAt(at++))
    const blocks = at
    let low = this.low
    let high = this.high
    for (; at + 1 < to; at += 2) {
      const key = text.charCodeAt(at) | (text.charCodeAt(at + 1) << 16)
      low = mixHash(low, key)
      high = mixHash(high, key ^ 0x5bd1e995)
    }
    this.low = low
    this.high = high
    this.length += at - blocks
    if (at < to) this.unit(text.charCodeAt(at))
  }

  /**
   * Feeds `JSON.stringify(text)`, quotes included, without building it; whether `text` can be
   * stored as itself (no NUL, no lone surrogate: UTF-8 storage turns one into U+FFFD).
   */
  quoted(text: string): boolean {
    this.unit(34)
    const end = text.length
    // a long text with nothing to escape (a checkpoint's packed ids) fed whole: the regex scans it faster than a loop
    if (end > longText && !toEscape.test(text)) {
      this.text(text)
      this.unit(34)
      return true
    }
    let at = 0
    if (end > 0 && this.pending >= 0) {
      const code = text.charCodeAt(0)
      if (!isPlain(code)) return this.escaped(text, 0)
      this.unit(code)
      at = 1
    }
    // two units a block, as `text` feeds them, while JSON writes both as they are: the lanes in locals
    const blocks = at
    let low = this.low
    let high = this.high
    for (; at + 1 < end; at += 2) {
      const first = text.charCodeAt(at)
      const second = text.charCodeAt(at + 1)
      if (!isPlain(first) || !isPlain(second)) break
      const key = first | (second << 16)
      low = mixHash(low, key)
      high = mixHash(high, key ^ 0x5bd1e995)
    }
    this.low = low
    this.high = high
    this.length += at - blocks
    return this.escaped(text, at)
  }

  /** `quoted` from `from` on, each unit JSON escapes written as it does, and the closing quote. */
  private escaped(text: string, from: number): boolean {
    let storable = true
    // runs of units JSON writes as they are, fed whole; each other unit as JSON escapes it
    let run = from
    for (let i = from; i < text.length; i++) {
      const code = text.charCodeAt(i)
      if (isPlain(code)) continue
      if (code >= 0xd800 && code <= 0xdbff && isLow(text.charCodeAt(i + 1))) {
        i++
        continue
      }
      this.text(text, run, i)
      run = i + 1
      // a quote, a backslash, a control character or a lone surrogate
      if (code === 0 || code >= 0xd800) storable = false
      this.text(JSON.stringify(String.fromCharCode(code)).slice(1, -1))
    }
    this.text(text, run, text.length)
    this.unit(34)
    return storable
  }

  /** 16 hex digits: the high lane's 32 bits, then the low lane's. */
  digest(): string {
    let low = this.low
    let high = this.high
    if (this.pending >= 0) {
      low ^= mixKey(this.pending)
      high ^= mixKey(this.pending ^ 0x5bd1e995)
    }
    const a = finalize(low, this.length)
    const b = finalize(high, this.length)
    return b.toString(16).padStart(8, "0") + a.toString(16).padStart(8, "0")
  }
}

const isLow = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff

/** A unit JSON writes as it is: no quote, backslash, control character or surrogate (a pair is written as it is, but looked at). */
const isPlain = (code: number): boolean =>
  code >= 0x20 && code !== 34 && code !== 92 && (code < 0xd800 || code > 0xdfff)

/** What JSON escapes in a string, and any surrogate (a lone one is escaped, a pair is not: the loop tells them apart). */
const toEscape = /["\\\u0000-\u001f\ud800-\udfff]/
/** Texts longer than this are looked at by `toEscape` first; shorter ones, as a row's values are, go through the loop. */
const longText = 256

/**
 * An object's keys in code-unit order, each also as JSON writes it before its value (`"key":`,
 * and `,"key":` after another member), and whether it can be stored as itself.
 */
export interface Shape {
  readonly sorted: ReadonlyArray<string>
  /** Where each of `sorted` is among the object's own keys in their order. */
  readonly order: ReadonlyArray<number>
  readonly members: ReadonlyArray<string>
  readonly nextMembers: ReadonlyArray<string>
  readonly storable: ReadonlyArray<boolean>
}

const shapeOfKeys = (keys: ReadonlyArray<string>): Shape => {
  const order = keys.map((_, i) => i).sort((a, b) => compareUnits(keys[a] as string, keys[b] as string))
  const sorted = order.map((i) => keys[i] as string)
  const members = sorted.map((key) => `${JSON.stringify(key)}:`)
  return {
    sorted,
    order,
    members,
    nextMembers: members.map((member) => `,${member}`),
    storable: sorted.map((key) => new Hash64().quoted(key))
  }
}

/** Code-unit order, as `Array.prototype.sort` puts strings by default. */
const compareUnits = (a: string, b: string): number => a < b ? -1 : a > b ? 1 : 0

/** The last shapes asked for, by first key: the objects of a page's rows share a few shapes. */
const shapes = new Map<string, { readonly keys: ReadonlyArray<string>; readonly shape: Shape }>()
const shapesMax = 256
/** More keys than this and an object's shape is not kept: the cache holds no large object's keys. */
const shapeKeysMax = 64

/**
 * The shape kept for `record`'s keys in their order, if one is, with `values` set to its values
 * in that order: for-in makes no array, and reads each value by its place rather than by its name.
 */
const knownShape = (record: Record<string, unknown>, values: Array<unknown>): Shape | undefined => {
  let known: { readonly keys: ReadonlyArray<string>; readonly shape: Shape } | undefined
  let count = 0
  for (const key in record) {
    known ??= shapes.get(key)
    if (known === undefined || known.keys[count] !== key) return undefined
    values[count++] = record[key]
  }
  return known !== undefined && count === known.keys.length ? known.shape : undefined
}

/**
 * The shape of a plain object (as JSON.parse makes them), that of the last object of the same keys
 * when there was one, and its values in its keys' order, in `values`.
 */
export const shapeOf = (record: Record<string, unknown>, values: Array<unknown>): Shape => {
  const known = knownShape(record, values)
  if (known !== undefined) return known
  const keys = Object.keys(record)
  for (let i = 0; i < keys.length; i++) values[i] = record[keys[i] as string]
  const shape = shapeOfKeys(keys)
  const first = keys[0]
  if (first === undefined || keys.length > shapeKeysMax) return shape
  if (shapes.size >= shapesMax) shapes.clear()
  shapes.set(first, { keys, shape })
  return shape
}

/** Feeds a value that is neither an object nor a string as JSON writes it (`null` for what it leaves out). */
export const feedScalar = (hash: Hash64, value: unknown): void => {
  hash.text(
    typeof value === "number" && Number.isFinite(value)
      ? String(value)
      : typeof value === "boolean"
      ? value ? "true" : "false"
      : JSON.stringify(value) ?? "null"
  )
}

/**
 * The fingerprint of a value of any shape or depth: JSON with every object's keys in code-unit
 * order, `undefined` members dropped, as JSON does. Iterative: a row nested deeper than the call
 * stack still has one. A row within `bounds.valueDepth` gets the same from the row walk
 * (plainData.ts), which checks it as it feeds.
 */
export const fingerprint = (root: unknown): string => {
  const hash = new Hash64()
  // a value still to feed, or text to feed as it stands
  const stack: Array<{ readonly value: unknown } | string> = [{ value: root }]
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (typeof next === "string") {
      hash.text(next)
      continue
    }
    const value = next.value
    if (typeof value === "string") {
      hash.quoted(value)
    } else if (value === null || typeof value !== "object") {
      feedScalar(hash, value)
    } else if (Array.isArray(value)) {
      stack.push("]")
      for (let i = value.length - 1; i >= 0; i--) {
        stack.push({ value: value[i] ?? null })
        if (i > 0) stack.push(",")
      }
      hash.unit(91)
    } else {
      const values: Array<unknown> = []
      const { members, nextMembers, order } = shapeOf(value as Record<string, unknown>, values)
      // members holding undefined left out, as JSON leaves them out; the first fed has no comma
      let first = 0
      while (first < order.length && values[order[first] as number] === undefined) first++
      stack.push("}")
      for (let i = order.length - 1; i >= first; i--) {
        const item = values[order[i] as number]
        if (item !== undefined) stack.push({ value: item }, (i === first ? members[i] : nextMembers[i]) as string)
      }
      hash.unit(123)
    }
  }
  return hash.digest()
}
