/**
 * What a row or an update's `rowData` may hold to pass between JSON and JavaScript unchanged:
 * no key named `__proto__` (an assignment of it, as in Schema's parser or `Object.assign`, sets a
 * prototype instead of a property), only finite numbers (JSON.parse reads `1e400` as Infinity,
 * JSON.stringify writes it as null) and nesting within `bounds.valueDepth` (JSON.stringify and
 * Schema's parser recurse).
 */
import { Schema } from "effect"
import { bounds } from "../bounds.js"

/** Where in a value it cannot pass unchanged, and why. */
export interface Fault {
  readonly path: ReadonlyArray<string | number>
  readonly reason: string
}

const protoKey = "__proto__"

/** Whether `value`, at `depth`, is or holds a fault: the check every row of every answer passes, so no path is built. */
const holdsFault = (value: unknown, depth: number): boolean => {
  if (typeof value !== "object") return typeof value === "number" && !Number.isFinite(value)
  if (value === null) return false
  if (depth > bounds.valueDepth) return true
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      if (typeof item === "object" || typeof item === "number" ? holdsFault(item, depth + 1) : false) return true
    }
    return false
  }
  // for-in allocates no array of keys (Object.keys would, for every object of every row)
  for (const key in value) {
    if (key === protoKey) return true
    const item: unknown = (value as Record<string, unknown>)[key]
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
