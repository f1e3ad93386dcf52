/**
 * What a row or an update's `rowData` may hold to pass between JSON and JavaScript unchanged:
 * no key named `__proto__` (an assignment of it, as in Schema's parser or `Object.assign`, sets a
 * prototype instead of a property), only finite numbers (JSON.parse reads `1e400` as Infinity,
 * JSON.stringify writes it as null), only numbers a double holds as written (JSON.parse reads
 * `9007199254740993` as 9007199254740992: `parseExact` keeps such a number's text, for the check
 * to name it) and nesting within `bounds.valueDepth` (JSON.stringify and Schema's parser recurse).
 */
import { Schema } from "effect"
import { bounds } from "../bounds.js"

/** Where in a value it cannot pass unchanged, and why. */
export interface Fault {
  readonly path: ReadonlyArray<string | number>
  readonly reason: string
}

const protoKey = "__proto__"

/** The key of the object `parseExact` puts where a number was that a double cannot hold as written: no row has a key with NUL. */
const inexactKey = "\u0000inexact"

const inexactText = (value: object): string | undefined => {
  const text = (value as Record<string, unknown>)[inexactKey]
  return typeof text === "string" ? text : undefined
}

/** Whether `value`, at `depth`, is or holds a fault: the check every row of every answer passes, so no path is built. */
const holdsFault = (value: unknown, depth: number): boolean => {
  if (typeof value !== "object") return typeof value === "number" && !Number.isFinite(value)
  if (value === null) return false
  if (depth > bounds.valueDepth) return true
  if (Array.isArray(value)) {
    if (inexactText(value) !== undefined) return true
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      if (typeof item === "object" || typeof item === "number" ? holdsFault(item, depth + 1) : false) return true
    }
    return false
  }
  // for-in allocates no array of keys (Object.keys would, for every object of every row); the
  // keys it yields are compared with the two names, not each object asked for `inexactKey`
  for (const key in value) {
    if (key === protoKey) return true
    const item: unknown = (value as Record<string, unknown>)[key]
    if (key === inexactKey && typeof item === "string") return true
    if (typeof item === "object" || typeof item === "number" ? holdsFault(item, depth + 1) : false) return true
  }
  return false
}

/** Where the fault `value` holds is, and what it is. */
const locate = (value: unknown, depth: number): Fault => {
  if (typeof value === "number") {
    return { path: [], reason: `is ${value}, not a finite number: JSON has none (it writes null)` }
  }
  if (depth > bounds.valueDepth) return { path: [], reason: `is nested deeper than ${bounds.valueDepth} levels` }
  const inexact = inexactText(value as object)
  if (inexact !== undefined) {
    return { path: [], reason: `is ${inexact}, which a double cannot hold: it would be read as ${Number(inexact)}` }
  }
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
  const key = keys.find((key) => holdsFault(record[key], depth + 1))
  if (key === undefined) return { path: [], reason: "holds nothing JSON cannot carry" }
  const fault = locate(record[key], depth + 1)
  return { path: [key, ...fault.path], reason: fault.reason }
}

/** A number's text as digits and an exponent, for texts of one value to compare equal: `1.50e2` and `150` alike. */
const canonical = (text: string): string => {
  const [mantissa = "", exponent = "0"] = text.toLowerCase().split("e")
  const negative = mantissa.startsWith("-")
  const [whole = "", fraction = ""] = mantissa.replace(/^[-+]/, "").split(".")
  const digits = (whole + fraction).replace(/^0+/, "")
  const significant = digits.replace(/0+$/, "")
  if (significant === "") return "0"
  const power = Number(exponent) - fraction.length + (digits.length - significant.length)
  return `${negative ? "-" : ""}${significant}e${power}`
}

/**
 * Whether JSON.parse reads `token` as another number than it says: its shortest text differs, or,
 * for an integer, the double differs by less than that text shows (`20000000000000070` reads as
 * ...068, whose shortest text is ...070). Infinity is left to `faultOf`'s own rule.
 */
const changedByParse = (token: string): boolean => {
  const read = Number(token)
  if (!Number.isFinite(read)) return false
  if (/^-?\d+$/.test(token)) return BigInt(token) !== BigInt(read)
  return canonical(token) !== canonical(String(read))
}

// a number token that may not survive JSON.parse: 16 digits or more, or an exponent (a string may match too)
const mayBeInexact = /[:,[]\s*-?(?:\d[\d.]{15,}|\d[\d.]*[eE])/

const isDigit = (code: number): boolean => code >= 48 && code <= 57

/**
 * `JSON.parse(text)`, each number a double cannot hold as written (`9007199254740993`,
 * `0.1000000000000000055511151231257827`, `1e-400`) left as an object holding its text, which
 * `faultOf` reports. Texts without a long number (nearly all) are parsed as they are.
 */
export const parseExact = (text: string): unknown => {
  if (!mayBeInexact.test(text)) return JSON.parse(text)
  let kept = ""
  let from = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 34) {
      // a string: to its closing quote, past escaped ones
      for (i++; i < text.length && text.charCodeAt(i) !== 34; i++) if (text.charCodeAt(i) === 92) i++
      continue
    }
    if (code !== 45 && !isDigit(code)) continue
    let end = i + 1
    let exponent = false
    for (; end < text.length; end++) {
      const next = text.charCodeAt(end)
      if (next === 101 || next === 69) exponent = true
      else if (!isDigit(next) && next !== 46 && next !== 43 && next !== 45) break
    }
    const token = text.slice(i, end)
    // fewer than 16 characters and no exponent: at most 15 digits, which a double always holds
    if ((exponent || end - i > 15) && changedByParse(token)) {
      kept += `${text.slice(from, i)}{${JSON.stringify(inexactKey)}:${JSON.stringify(token)}}`
      from = end
    }
    i = end - 1
  }
  return JSON.parse(from === 0 ? text : kept + text.slice(from))
}

/** The first place where `value` (the first level of nesting) cannot pass unchanged, if any. */
export const faultOf = (value: unknown): Fault | undefined => holdsFault(value, 1) ? locate(value, 1) : undefined

/**
 * Any value that passes between JSON and JavaScript unchanged; checked before a Record is built
 * from it, which would drop a `__proto__` key (or make it a prototype).
 */
export const Sendable = Schema.Unknown.pipe(Schema.filter((data) => {
  const fault = faultOf(data)
  return fault === undefined || { path: fault.path, message: fault.reason }
}))
