/**
 * What a copy can keep exactly: the check every row of a change pass passes before any sink sees
 * it. SQLite and PostgreSQL store text as UTF-8, so a lone surrogate becomes U+FFFD there (merging
 * `\ud83d`, `\ud83e` and `\ufffd` into one id), and PostgreSQL refuses NUL in text and both in
 * jsonb. Every finite number is kept: each is written as its shortest text, which reads back as
 * the same double, and a number the service sent that a double cannot hold was refused when its
 * answer was read.
 */
import type { Fault } from "./http/plainData.js"

// a high surrogate not followed by a low one, or a low one not preceded by a high one
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Why the text `s` cannot be stored as itself, if it cannot. */
const textFault = (s: string): string | undefined =>
  s.includes("\u0000")
    ? "holds NUL, which SQLite and PostgreSQL text cannot keep as itself"
    : loneSurrogate.test(s)
    ? "holds a lone surrogate, which UTF-8 storage turns into U+FFFD (distinct ids would merge)"
    : undefined

/** Why the value at a path cannot be stored as itself, if it cannot; no path is built while all is well. */
const valueFault = (value: unknown): Fault | undefined => {
  if (typeof value === "string") {
    const reason = textFault(value)
    return reason === undefined ? undefined : { path: [], reason }
  }
  if (typeof value !== "object" || value === null) return undefined
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const fault = valueFault(value[i])
      if (fault !== undefined) return { path: [i, ...fault.path], reason: fault.reason }
    }
    return undefined
  }
  for (const key in value) {
    const keyReason = textFault(key)
    if (keyReason !== undefined) return { path: [key], reason: `its key ${keyReason}` }
    const fault = valueFault((value as Record<string, unknown>)[key])
    if (fault !== undefined) return { path: [key, ...fault.path], reason: fault.reason }
  }
  return undefined
}

/** The first place where a row with id `id` cannot be kept exactly by a copy, if any. */
export const storableFault = (id: string, row: unknown): Fault | undefined => {
  const idReason = textFault(id)
  return idReason === undefined ? valueFault(row) : { path: ["_id"], reason: `the id ${idReason}` }
}
