/**
 * Counts the operations Effect's fibers run, rather than sampling their time: loaded by
 * `--import` into a program of this directory (e.g. `node --import ./.bench-out/test/bench/opCount.js
 * .bench-out/test/bench/profile.js --what=writes --updates=500 --rounds=1`), it prints, as the
 * process exits, the operations run by their kind (`_op`), the steps of streams' channels, and the
 * operations by the place in src/ that made them: the innermost frame of src/ on the stack when
 * each was made, or, for one made inside Effect's runtime (a continuation), the place of the
 * operation its fiber ran last. `OPCOUNT_UNITS` divides every figure (the updates or
 * pages the program ran); `OPCOUNT_EVERY=N` looks at the stack of one effect in N (the others
 * take the place of the operation running). Slow: for counts, never for times.
 */
import { register } from "node:module"

register("./opCountHooks.js", import.meta.url)

const units = Number(process.env["OPCOUNT_UNITS"] ?? 1)
const every = Number(process.env["OPCOUNT_EVERY"] ?? 1)
Error.stackTraceLimit = 60

interface Counted {
  _op?: unknown
  _tag?: unknown
  __madeAt?: string
}

const byOp = new Map<string, number>()
const byChannel = new Map<string, number>()
const byPlace = new Map<string, number>()
let operations = 0
let channelSteps = 0
let made = 0
// the place of each fiber's operation running: what an effect made by the runtime itself is put down to
const runningIn = new WeakMap<object, string>()
let running = "(made before the first place in src/: Effect's shared constants)"

const bump = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1)

/** The innermost frame of src/ in a stack, as `file:line`. */
const placeIn = (stack: string | undefined): string | undefined => {
  for (const line of (stack ?? "").split("\n").slice(2)) {
    const match = /\/(src\/[^:)]+):(\d+):\d+\)?$/.exec(line)
    if (match !== null && !line.includes("/node_modules/")) return `${match[1]}:${match[2]}`
  }
  return undefined
}

const hooks = globalThis as unknown as Record<string, (value: Counted, fiber: object) => void>
hooks["__effectMade"] = (effect) => {
  effect.__madeAt = ++made % every === 0 ? placeIn(new Error().stack) ?? running : running
}
const shared = running
hooks["__effectRun"] = (effect, fiber) => {
  operations++
  bump(byOp, String(effect._op))
  const place = effect.__madeAt === undefined || effect.__madeAt === shared
    ? runningIn.get(fiber) ?? shared
    : effect.__madeAt
  runningIn.set(fiber, place)
  running = place
  bump(byPlace, place)
}
hooks["__channelStep"] = (channel) => {
  channelSteps++
  bump(byChannel, String(channel?._tag ?? "an effect"))
}

const per = (n: number) => (n / units).toFixed(1).padStart(8)
const table = (
  title: string,
  counts: Map<string, number>,
  rows: number
) => [title, ...[...counts].sort((a, b) => b[1] - a[1]).slice(0, rows).map(([key, n]) => `${per(n)}  ${key}`)]

process.on("exit", () => {
  process.stderr.write(
    [
      `Effect operations run: ${per(operations)} a unit; channel steps: ${per(channelSteps)} (units: ${units})`,
      ...table("by kind:", byOp, 20),
      ...table("channel steps by kind:", byChannel, 12),
      ...table("by the place in src/ that made them:", byPlace, 40)
    ].join("\n") + "\n"
  )
})
