/**
 * What a row or an update's `rowData` may hold to pass between JSON and JavaScript unchanged:
 * no key named `__proto__` (an assignment of it, as in Schema's parser or `Object.assign`, sets a
 * prototype instead of a property), only finite numbers (JSON.parse reads `1e400` as Infinity,
 * JSON.stringify writes it as null), only numbers that pass as written (JSON.parse reads
 * `9007199254740993` as 9007199254740992: `readExact` marks such a number, for the check to name
 * it; numberText.ts says which pass) and nesting within `bounds.valueDepth` (JSON.stringify and
 * Schema's parser recurse).
 */
import { Either, Schema } from "effect"
import { feedScalar, Hash64, shapeOf } from "../fingerprint.js"
import { bounds } from "../limits.js"
import { type Direction, isDigit, numberFault } from "./numberText.js"

/** Where in a value it cannot pass unchanged, and why. */
export interface Fault {
  readonly path: ReadonlyArray<string | number>
  readonly reason: string
}

const protoKey = "__proto__"

/** The key of the object `readExact` puts, with why, where a number was that cannot pass as written: no row has a key with NUL. */
const inexactKey = "\u0000inexact"

const inexactText = (value: object): string | undefined => {
  const text = (value as Record<string, unknown>)[inexactKey]
  return typeof text === "string" ? text : undefined
}

/** What the row walk found: nothing; only what a copy cannot keep (NUL, a lone surrogate); what no reader passes. */
export const Verdict = { clean: 0, unstorable: 1, faulty: 2 } as const
export type Verdict = typeof Verdict[keyof typeof Verdict]

/** Whether a key and its value are what no reader passes: a key that would set a prototype, or a number `readExact` marked. */
const faultyMember = (key: string, item: unknown): boolean =>
  key === protoKey || (key === inexactKey && typeof item === "string")

/** Whether a value that is not an object is what no reader passes: a number JSON has none for, a bigint. */
const faultyScalar = (value: unknown): boolean =>
  typeof value === "number" ? !Number.isFinite(value) : typeof value === "bigint"

/**
 * The reader's walk: whether `value`, at `depth`, is or holds a fault, strings not looked at:
 * the check every row of every answer passes, so no path is built and nothing else is done.
 */
const holdsFault = (value: unknown, depth: number): boolean => {
  if (typeof value !== "object") return typeof value === "number" ? !Number.isFinite(value) : typeof value === "bigint"
  if (value === null) return false
  if (depth > bounds.valueDepth) return true
  if (Array.isArray(value)) {
    if (inexactText(value) !== undefined) return true
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      if (typeof item === "string" || typeof item === "boolean" ? false : holdsFault(item, depth + 1)) return true
    }
    return false
  }
  // for-in allocates no array of keys (Object.keys would, for every object of every row); the
  // keys it yields are compared with the two names, not each object asked for `inexactKey`
  for (const key in value) {
    if (key === protoKey) return true
    const item: unknown = (value as Record<string, unknown>)[key]
    if (key === inexactKey && typeof item === "string") return true
    if (typeof item === "string" || typeof item === "boolean" ? false : holdsFault(item, depth + 1)) return true
  }
  return false
}

/** The values of the object the copy's walk is in, by depth: an array a depth, not one an object. */
const scratch: Array<Array<unknown>> = []

/**
 * The copy's walk: the reader's check, and every text and key fed to `hash` as the value's
 * canonical JSON (fingerprint.ts: keys sorted) and checked for what storage cannot keep, in the
 * same loop. A faulty value stops the walk, and `hash` with it.
 */
const copyWalk = (value: unknown, depth: number, hash: Hash64): Verdict => {
  if (typeof value === "string") return hash.quoted(value) ? Verdict.clean : Verdict.unstorable
  if (typeof value !== "object") {
    if (faultyScalar(value)) return Verdict.faulty
    feedScalar(hash, value)
    return Verdict.clean
  }
  if (value === null) {
    hash.text("null")
    return Verdict.clean
  }
  if (depth > bounds.valueDepth) return Verdict.faulty
  let verdict: Verdict = Verdict.clean
  if (Array.isArray(value)) {
    if (inexactText(value) !== undefined) return Verdict.faulty
    hash.unit(91)
    for (let i = 0; i < value.length; i++) {
      if (i > 0) hash.unit(44)
      const found = copyWalk(value[i] ?? null, depth + 1, hash)
      if (found === Verdict.faulty) return found
      if (found > verdict) verdict = found
    }
    hash.unit(93)
    return verdict
  }
  const values = scratch[depth] ??= []
  const { members, nextMembers, order, sorted, storable } = shapeOf(value as Record<string, unknown>, values)
  hash.unit(123)
  let first = true
  for (let i = 0; i < sorted.length; i++) {
    const key = sorted[i] as string
    const item = values[order[i] as number]
    if (faultyMember(key, item)) return Verdict.faulty
    // a member holding undefined is left out, as JSON leaves it out
    if (item === undefined) continue
    // the key as JSON writes it, and the comma before it, fed as one text
    hash.text((first ? members[i] : nextMembers[i]) as string)
    first = false
    if (storable[i] !== true) verdict = Verdict.unstorable
    const found = copyWalk(item, depth + 1, hash)
    if (found === Verdict.faulty) return found
    if (found > verdict) verdict = found
  }
  hash.unit(125)
  return verdict
}

/**
 * The row walk: whether `value`, at `depth`, is or holds a fault, with no path built. Without
 * `hash` (a reader's check) strings are not looked at; with it (a copy's check) the value's
 * fingerprint is fed to `hash` and what storage cannot keep found, as it checks.
 */
export const walk = (value: unknown, depth: number, hash: Hash64 | undefined): Verdict =>
  hash === undefined
    ? holdsFault(value, depth) ? Verdict.faulty : Verdict.clean
    : copyWalk(value, depth, hash)

/** Why the text `s` cannot be stored as itself (SQLite and PostgreSQL store UTF-8 text, PostgreSQL no NUL), if it cannot. */
const textFault = (s: string): string | undefined =>
  s.includes("\u0000")
    ? "holds NUL, which SQLite and PostgreSQL text cannot keep as itself"
    : loneSurrogate.test(s)
    ? "holds a lone surrogate, which UTF-8 storage turns into U+FFFD (distinct ids would merge)"
    : undefined

// a high surrogate not followed by a low one, or a low one not preceded by a high one
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/**
 * Where the fault the walk found in `value` is, and what it is: with `copy`, what a copy cannot
 * keep, in a value that holds nothing worse. Walks again, but only for a row that failed.
 */
const locate = (value: unknown, depth: number, copy: boolean): Fault => {
  if (typeof value === "string") return { path: [], reason: textFault(value) ?? "holds nothing storage cannot keep" }
  if (typeof value === "bigint") {
    return { path: [], reason: "is a bigint, which JSON has no number for: send its digits as a string" }
  }
  if (typeof value === "number") {
    return { path: [], reason: `is ${value}, not a finite number: JSON has none (it writes null)` }
  }
  if (depth > bounds.valueDepth) return { path: [], reason: `is nested deeper than ${bounds.valueDepth} levels` }
  const inexact = inexactText(value as object)
  if (inexact !== undefined) return { path: [], reason: inexact }
  const record = value as Record<string, unknown>
  const keys: Array<string | number> = []
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) keys.push(i)
  } else {
    for (const key in record) {
      if (key === protoKey) {
        return {
          path: [protoKey],
          reason: `a key named "${protoKey}" cannot be kept: an assignment of it sets a prototype`
        }
      }
      keys.push(key)
    }
  }
  for (const key of keys) {
    const keyReason = copy && typeof key === "string" ? textFault(key) : undefined
    if (keyReason !== undefined) return { path: [key], reason: `its key ${keyReason}` }
    if (walk(record[key], depth + 1, copy ? new Hash64() : undefined) !== Verdict.clean) {
      const fault = locate(record[key], depth + 1, copy)
      return { path: [key, ...fault.path], reason: fault.reason }
    }
  }
  return { path: [], reason: "holds nothing JSON cannot carry" }
}

/** The first place where `value` (the first level of nesting) cannot pass unchanged, if any. */
export const faultOf = (value: unknown): Fault | undefined => holdsFault(value, 1) ? locate(value, 1, false) : undefined

/**
 * Where the fault is that the walk found in the row `row` (with `verdict`): with the id `id`
 * named first when it is what a copy cannot keep.
 */
export const locateFault = (row: unknown, verdict: Verdict, id: string | null): Fault => {
  if (verdict === Verdict.faulty) return locate(row, 1, false)
  const idReason = id === null ? undefined : textFault(id)
  return idReason === undefined ? locate(row, 1, true) : { path: ["_id"], reason: `the id ${idReason}` }
}

// a text that is a number, not in an array or object: looked at whole
const isNumber = /^\s*[-\d]/

/** A digit or a point: what the digits of a number token before its exponent are made of. */
const isMantissa = (code: number): boolean => (code >= 48 && code <= 57) || code === 46

/** Whether a number token may start after the character at `at`: a sign, what opens a value, or the text's start. */
const opensNumber = (text: string, at: number): boolean => {
  if (at < 0) return true
  const code = text.charCodeAt(at)
  return code === 45 || code === 58 || code === 44 || code === 91 || code === 32 || code === 10 || code === 13 ||
    code === 9
}

/** Whether the digits of a number token may end before the character at `at`: its exponent, what closes a value, or the end. */
const closesMantissa = (text: string, at: number): boolean => {
  if (at >= text.length) return true
  const code = text.charCodeAt(at)
  return code === 44 || code === 125 || code === 93 || code === 32 || code === 10 || code === 13 || code === 9 ||
    (code | 32) === 101
}

/** Sixteen characters: a token with as many significant digits has a run of digits and point at least this long. */
const longRun = 16

/**
 * Whether `text` has a run of at least `longRun` digits and points that may be a number token's:
 * one character in `longRun` is looked at, and a run only when it is found there.
 */
const hasLongMantissa = (text: string): boolean => {
  const end = text.length
  for (let at = longRun - 1; at < end; at += longRun) {
    if (!isMantissa(text.charCodeAt(at))) continue
    let last = at + 1
    while (last < end && isMantissa(text.charCodeAt(last))) last++
    // digits followed by a quote or a letter are a string's (an id's)
    if (closesMantissa(text, last)) {
      let first = at
      while (first > 0 && isMantissa(text.charCodeAt(first - 1))) first--
      if (last - first >= longRun && opensNumber(text, first - 1)) return true
    }
    // every run from here on that is long enough holds one of the characters looked at next
    at = last - 1
  }
  return false
}

/**
 * Whether `text` has an exponent of at least three digits below zero after a number's digits: the
 * only exponent of a token of fewer than 16 digits that takes it out of a double's normal range
 * (an exponent above zero that does reads as Infinity, which is refused as it is). Each `-` is
 * found by a native search.
 */
const hasTinyExponent = (text: string): boolean => {
  for (let minus = text.indexOf("-"); minus >= 0; minus = text.indexOf("-", minus + 1)) {
    if ((text.charCodeAt(minus - 1) | 32) !== 101) continue
    if (!isDigit(text.charCodeAt(minus + 1)) || !isDigit(text.charCodeAt(minus + 2))) continue
    if (!isDigit(text.charCodeAt(minus + 3)) || !isMantissa(text.charCodeAt(minus - 2))) continue
    let first = minus - 2
    while (first > 0 && isMantissa(text.charCodeAt(first - 1))) first--
    if (opensNumber(text, first - 1)) return true
  }
  return false
}

/**
 * Whether `text` may hold a number token that does not say what JSON.parse reads: false only
 * when it holds none (numberText.ts: a token of at most 15 significant digits within a double's
 * normal range passes). A string may make it true; then every token is checked.
 */
const mayHoldInexact = (text: string): boolean => hasLongMantissa(text) || hasTinyExponent(text) || isNumber.test(text)

/** The index of the quote that closes the string opened at `open`, or -1 when none does. */
export const closingQuote = (text: string, open: number): number => {
  let at = open
  for (;;) {
    at = text.indexOf("\"", at + 1)
    if (at < 0) return at
    // each run of backslashes is counted once: it ends at this quote
    let backslashes = 0
    while (text.charCodeAt(at - 1 - backslashes) === 92) backslashes++
    if (backslashes % 2 === 0) return at
  }
}

/**
 * The most numbers of one text that a double cannot hold which are marked one by one, for each
 * row holding one to be named: one a row of the largest page. Past them the text is refused whole.
 */
export const markedNumbersMax = bounds.pageSize

/** A number of a text that cannot pass as written: where it is, and why. */
export interface Mark {
  readonly start: number
  readonly end: number
  readonly reason: string
}

/** What a text to be read is, as far as the exact-number check goes: its value, or why it is refused whole. */
export type Read = { readonly value: unknown } | { readonly refused: string }

/** The end of the number token (or of what a number starts, for JSON.parse to refuse) at `start`. */
export const numberEnd = (text: string, start: number): number => {
  let end = start + 1
  while (end < text.length) {
    const next = text.charCodeAt(end)
    if (!isDigit(next) && next !== 46 && next !== 43 && next !== 45 && next !== 101 && next !== 69) break
    end++
  }
  return end
}

/**
 * Checks the number token `text.slice(start, end)`, adding it to `marks` when it cannot pass as
 * written; why the text is refused whole, when that makes more than `markedNumbersMax`.
 */
export const markNumber = (
  text: string,
  start: number,
  end: number,
  direction: Direction,
  marks: Array<Mark>
): string | undefined => {
  // fewer than 16 characters and no exponent: at most 15 digits, which a double always holds
  if (end - start <= 15) {
    let at = start
    while (at < end && (text.charCodeAt(at) | 32) !== 101) at++
    if (at === end) return undefined
  }
  const reason = numberFault(text, start, end, direction)
  if (reason === undefined) return undefined
  if (marks.length === markedNumbersMax) {
    return `it holds more than ${markedNumbersMax.toLocaleString("en-US")} numbers that a double ` +
      `cannot hold as written; the first ${marks[0]?.reason ?? reason}`
  }
  marks.push({ start, end, reason })
  return undefined
}

/** The numbers of `text` that cannot pass as written; why the text is refused whole, when there are too many. */
const faultyNumbers = (text: string, direction: Direction): Array<Mark> | string => {
  const marks: Array<Mark> = []
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 34) {
      i = closingQuote(text, i)
      if (i < 0) break
    } else if (code === 45 || isDigit(code)) {
      const end = numberEnd(text, i)
      const refused = markNumber(text, i, end, direction, marks)
      if (refused !== undefined) return refused
      i = end - 1
    }
  }
  return marks
}

/**
 * `text.slice(from, to)`, each of `marks` from `marks[first]` on that starts before `to` replaced
 * by an object holding why, which `faultOf` finds; the index of the first mark left.
 */
export const withMarks = (
  text: string,
  from: number,
  to: number,
  marks: ReadonlyArray<Mark>,
  first: number
): { readonly text: string; readonly next: number } => {
  let next = first
  const parts: Array<string> = []
  let at = from
  for (let mark = marks[next]; mark !== undefined && mark.start < to; mark = marks[++next]) {
    parts.push(text.slice(at, mark.start), `{${JSON.stringify(inexactKey)}:${JSON.stringify(mark.reason)}}`)
    at = mark.end
  }
  if (parts.length === 0) return { text: text.slice(from, to), next }
  parts.push(text.slice(at, to))
  return { text: parts.join(""), next }
}

/**
 * `JSON.parse(text)`, each number that cannot pass as written (`9007199254740993`,
 * `0.1000000000000000055511151231257827`, `1e-400`) left as an object holding why, which `faultOf`
 * reports; `refused` for a text holding more than `markedNumbersMax` of them. Throws as JSON.parse
 * does. A text without a long number (nearly all) is looked at in one character of 16 and its `-`s
 * found, and parsed as it is; one with long numbers that all pass is scanned once more and parsed as it is.
 */
export const readExact = (text: string, direction: Direction = "read"): Read => {
  if (!mayHoldInexact(text)) return { value: JSON.parse(text) }
  const marks = faultyNumbers(text, direction)
  if (typeof marks === "string") return { refused: marks }
  return { value: JSON.parse(marks.length === 0 ? text : withMarks(text, 0, text.length, marks, 0).text) }
}

/**
 * A text a caller wrote to be sent (`update --data`, a line of `update --from`), read as `readExact`
 * reads it, a number that would be sent with other digits marked: its value, or why it is not one.
 */
export const readToSend = (text: string): Either.Either<unknown, string> =>
  Either.flatMap(
    Either.try({ try: () => readExact(text, "sent"), catch: () => "not valid JSON" }),
    (read) => "refused" in read ? Either.left(read.refused) : Either.right(read.value)
  )

/** `readExact`'s value; throws for a text it refuses as for one that is not JSON. */
export const parseExact = (text: string, direction: Direction = "read"): unknown => {
  const read = readExact(text, direction)
  if ("refused" in read) throw new Error(read.refused)
  return read.value
}

/**
 * Any value that passes between JSON and JavaScript unchanged; checked before a Record is built
 * from it, which would drop a `__proto__` key (or make it a prototype).
 */
export const Sendable = Schema.Unknown.pipe(Schema.filter((data) => {
  const fault = faultOf(data)
  return fault === undefined || { path: fault.path, message: fault.reason }
}))
