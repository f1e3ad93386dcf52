/**
 * `readExact` of a text longer than `stepChars` in steps of some 10 ms, so that a run can be stopped
 * between them (a signal, a timeout): JSON.parse of 64 MiB of short numbers takes seconds, in one
 * piece. Each step scans its characters once, for the containers and the number tokens; then every
 * container still open is made, and the members each holds complete are parsed by JSON.parse, in
 * pieces. The structure between those pieces is checked here, the rest by JSON.parse: a text is
 * accepted exactly when JSON.parse accepts it, and read as the same value.
 */
import { Effect } from "effect"
import { bounds } from "../limits.js"
import { type Direction, isDigit } from "./numberText.js"
import { closingQuote, type Mark, markNumber, numberEnd, type Read, readExact, withMarks } from "./plainData.js"

/**
 * The longest text parsed in one piece: at `JSON.parse`'s slowest (short numbers) some 100 ms on a
 * loaded two-core machine; a page of 1,000 rows of 1 KB is.
 */
export const stepChars = 1024 * 1024

/** Characters scanned between two looks at the clock. */
const scanChars = 64 * 1024

/** How long a step scans before the members it found are parsed and the event loop turns. */
const stepMillis = 10

/**
 * How deep a text read in steps may nest: past what a row may hold (`bounds.valueDepth`) and the
 * envelopes around it, every row of such an answer would be refused anyway.
 */
export const stepsDepth = bounds.valueDepth + 16

type Container = Array<unknown> | Record<string, unknown>

const refusedAsJson = (at: number): SyntaxError => new SyntaxError(`Unexpected token in JSON at position ${at}`)

const isSpace = (code: number): boolean => code === 32 || code === 10 || code === 13 || code === 9

/** A property set as JSON.parse sets it: a key named `__proto__` is a property, not the prototype. */
const setMember = (container: Record<string, unknown>, key: string, value: unknown): void => {
  if (key === "__proto__") {
    Object.defineProperty(container, key, { value, writable: true, enumerable: true, configurable: true })
  } else {
    container[key] = value
  }
}

/**
 * A reader of `text` in steps: each call of `step` scans `chars` characters at a time for `millis`
 * ms (at least once, at most `stepChars` in all), then parses the members it found complete, and answers once the text is
 * read. A step's time is bounded by the clock, not by characters: on a loaded machine, where a
 * process gets a share of a core, it still ends within moments. Throws as JSON.parse does.
 */
export const readInSteps = (
  text: string,
  direction: Direction,
  chars = scanChars,
  millis = stepMillis
): { readonly step: () => Read | undefined } => {
  // the containers open at the scan's position, by level: level 0 is the text itself, as an array of one value
  const opens: Array<number> = [-1]
  const isArray: Array<boolean> = [true]
  const keyStarts: Array<number> = [-1]
  const keyEnds: Array<number> = [-1]
  const lastCommas: Array<number> = [-1]
  // of the containers already made (levels 0 to `made` - 1): the container, where its text not yet
  // parsed starts (-1 while a member made is open), and whether it has a member yet
  const built: Array<Container> = [[]]
  const cursors: Array<number> = [0]
  const hasMembers: Array<boolean> = [false]
  let level = 0
  let made = 1
  let position = 0
  let lastStringStart = -1
  let lastStringEnd = -1
  const marks: Array<Mark> = []
  let nextMark = 0

  /** The index past the whitespace from `from`. */
  const skipSpace = (from: number, to: number): number => {
    let at = from
    while (at < to && isSpace(text.charCodeAt(at))) at++
    return at
  }

  /** Where the members of level `at` start in `text.slice(from, to)`: past the comma after a member. */
  const membersFrom = (at: number, from: number, to: number): number => {
    if (!hasMembers[at]) return from
    const comma = skipSpace(from, to)
    if (text.charCodeAt(comma) !== 44 || comma >= to) throw refusedAsJson(comma)
    return comma + 1
  }

  /** Parses the members `text.slice(from, to)` (complete, comma separated) into the container of level `at`. */
  const addMembers = (at: number, from: number, to: number): void => {
    const { next, text: members } = withMarks(text, from, to, marks, nextMark)
    nextMark = next
    const container = built[at]
    if (Array.isArray(container)) {
      const values = JSON.parse(`[${members}]`) as Array<unknown>
      for (const value of values) container.push(value)
    } else if (container !== undefined) {
      const values = JSON.parse(`{${members}}`) as Record<string, unknown>
      for (const key of Object.keys(values)) setMember(container, key, values[key])
    }
    hasMembers[at] = true
  }

  /** Parses the members of level `at` complete up to its last comma. */
  const addCompleteMembers = (at: number): void => {
    const cursor = cursors[at] ?? -1
    const comma = lastCommas[at] ?? -1
    // a comma right after a member parsed is the separator the next members start with
    if (cursor < 0 || comma < cursor || (hasMembers[at] && skipSpace(cursor, comma) === comma)) return
    const from = membersFrom(at, cursor, comma)
    if (skipSpace(from, comma) === comma) throw refusedAsJson(comma)
    addMembers(at, from, comma)
    cursors[at] = comma
  }

  /** Makes the container open at level `at`, its parent made, as a member of its parent. */
  const make = (at: number): void => {
    const parent = at - 1
    addCompleteMembers(parent)
    const open = opens[at] ?? 0
    const from = membersFrom(parent, cursors[parent] ?? 0, open)
    const container: Container = isArray[at] ? [] : {}
    const into = built[parent]
    if (Array.isArray(into)) {
      if (skipSpace(from, open) !== open) throw refusedAsJson(from)
      into.push(container)
    } else if (into !== undefined) {
      // `"key" :` between the parent's members and this container
      const keyStart = keyStarts[at] ?? -1
      const keyEnd = keyEnds[at] ?? -1
      const colon = skipSpace(keyEnd, open)
      if (keyStart < from || skipSpace(from, keyStart) !== keyStart || text.charCodeAt(colon) !== 58) {
        throw refusedAsJson(from)
      }
      if (skipSpace(colon + 1, open) !== open) throw refusedAsJson(colon)
      setMember(into, JSON.parse(text.slice(keyStart, keyEnd)) as string, container)
    }
    hasMembers[parent] = true
    cursors[parent] = -1
    built[at] = container
    cursors[at] = open + 1
    hasMembers[at] = false
    made = at + 1
  }

  /** Parses the last members of the made container of level `at`, which ends at `close`. */
  const finish = (at: number, close: number): void => {
    const cursor = cursors[at] ?? 0
    if (skipSpace(cursor, close) !== close) {
      const from = membersFrom(at, cursor, close)
      if (skipSpace(from, close) === close) throw refusedAsJson(close)
      addMembers(at, from, close)
    }
    made = at
    if (at > 0) cursors[at - 1] = close + 1
  }

  /** Scans up to `stop`; why the text is refused whole, if it is. */
  const scan = (stop: number): string | undefined => {
    while (position < stop) {
      const code = text.charCodeAt(position)
      if (code === 34) {
        const close = closingQuote(text, position)
        if (close < 0) throw refusedAsJson(position)
        lastStringStart = position
        lastStringEnd = close + 1
        position = close + 1
      } else if (code === 91 || code === 123) {
        if (level === stepsDepth) return `it is nested deeper than ${stepsDepth} levels`
        level++
        opens[level] = position
        isArray[level] = code === 91
        keyStarts[level] = lastStringStart
        keyEnds[level] = lastStringEnd
        lastCommas[level] = -1
        position++
      } else if (code === 93 || code === 125) {
        if (level === 0 || isArray[level] !== (code === 93)) throw refusedAsJson(position)
        if (level < made) finish(level, position)
        level--
        position++
      } else if (code === 44) {
        lastCommas[level] = position
        position++
      } else if (code === 45 || isDigit(code)) {
        const end = numberEnd(text, position)
        const refused = markNumber(text, position, end, direction, marks)
        if (refused !== undefined) return refused
        position = end
      } else {
        position++
      }
    }
    return undefined
  }

  const step = (): Read | undefined => {
    const startedAt = performance.now()
    // at most `stepChars` a step: what a step copies to parse is bounded as well
    const last = Math.min(text.length, position + stepChars)
    do {
      const refused = scan(Math.min(last, position + chars))
      if (refused !== undefined) return { refused }
    } while (position < last && performance.now() - startedAt < millis)
    // every container open is made, and the members complete in each parsed
    for (let at = made; at <= level; at++) make(at)
    addCompleteMembers(level)
    if (position < text.length) return undefined
    if (level > 0) throw refusedAsJson(position)
    finish(0, text.length)
    const [value, ...more] = built[0] as Array<unknown>
    if (more.length > 0 || !hasMembers[0]) throw refusedAsJson(text.length)
    return { value }
  }
  return { step }
}

/** A turn of the event loop: its timers, I/O and signals run before the next step (Node's `setImmediate` waits for no timer). */
const nextTurn = typeof setImmediate === "function"
  ? Effect.async<void>((resume) => {
    const immediate = setImmediate(() => resume(Effect.void))
    return Effect.sync(() => clearImmediate(immediate))
  })
  : Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), 0)
    return Effect.sync(() => clearTimeout(timer))
  })

/**
 * `readExact`: in one piece for a text of at most `stepChars`; else in steps, the event loop
 * turning between them, so that the fiber can be interrupted there. Fails as JSON.parse throws.
 */
export const readJson = (text: string, direction: Direction = "read"): Effect.Effect<Read, unknown> => {
  if (text.length <= stepChars) return Effect.try(() => readExact(text, direction))
  return Effect.suspend(() => {
    const { step } = readInSteps(text, direction)
    const rest: Effect.Effect<Read, unknown> = Effect.flatMap(
      Effect.try(step),
      (read) => read === undefined ? Effect.zipRight(nextTurn, rest) : Effect.succeed(read)
    )
    return rest
  })
}
