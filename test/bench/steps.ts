/**
 * Attributes the samples of a V8 CPU profile (`node --cpu-prof`, e.g. of profile.js) to the steps
 * of a call: each sample goes to the step of the innermost frame on its stack that a step claims,
 * so a closure of the client that builds an effect owns what it calls, and the fiber runtime owns
 * only the running of effects between them. Prints one markdown table, each step's share of the
 * CPU (idle excluded) and, given `--cpu=µs` (the CPU of one update or page as profile.js measured it
 * without the profiler, which slows what it samples), each step's share of that.
 *
 *   node .bench-out/test/bench/steps.js PROFILE.cpuprofile [--cpu=µs]
 */
import { readFileSync } from "node:fs"
import { formatInt, formatRatio, options } from "./common.js"

interface CallFrame {
  readonly functionName: string
  readonly url: string
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}

interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** A step, and the frames it claims: by the file's path (a fragment of its URL) and, optionally, the function. */
interface Step {
  readonly step: string
  readonly url: RegExp
  readonly fn?: RegExp
}

// innermost claimed frame wins, so the order here matters only between rules for one frame
const steps: ReadonlyArray<Step> = [
  { step: "garbage collection", url: /^$/, fn: /^\(garbage collector\)$/ },
  { step: "JSON.parse of the answer", url: /internal\/http\/errors\.js$/, fn: /^parseJson$/ },
  { step: "JSON.parse of the answer", url: /^$/, fn: /^parse$/ },
  // JSON.parse is inlined into readExact's frame; the look for long numbers is its regex's own frame
  { step: "JSON.parse of the answer", url: /internal\/http\/plainData\.js$/, fn: /^readExact$/ },
  { step: "look for numbers a double cannot hold (readExact)", url: /^$/, fn: /^RegExp: \(\?:\^\|\[:,\[\]/ },
  { step: "look for numbers a double cannot hold (readExact)", url: /internal\/http\/numberText\.js$/ },
  { step: "request building (shape, JSON.stringify, headers)", url: /internal\/http\/shape\.js$/ },
  {
    step: "request building (shape, JSON.stringify, headers)",
    url: /platform\/dist\/esm\/internal\/httpClientRequest\.js$/
  },
  { step: "request building (shape, JSON.stringify, headers)", url: /platform\/dist\/esm\/internal\/httpBody\.js$/ },
  { step: "__proto__ and number walk (faultOf)", url: /internal\/http\/plainData\.js$/ },
  { step: "input check (Schema)", url: /internal\/bounds\.js$/ },
  { step: "answer decode (envelope, rows)", url: /internal\/http\/(decode|fastDecode|wire)\.js$/ },
  { step: "answer decode (envelope, rows)", url: /internal\/client\.js$/, fn: /^decode$/ },
  { step: "in-flight permit and rate gate", url: /internal\/http\/(inFlight|retry)\.js$/ },
  { step: "in-flight permit and rate gate", url: /internal\/http\/steps\.js$/, fn: /^(throughGate|withinInFlight)$/ },
  { step: "retry and schedule", url: /internal\/http\/(policy)\.js$/ },
  { step: "retry and schedule", url: /effect\/dist\/esm\/internal\/schedule/ },
  { step: "metrics", url: /internal\/metrics\.js$/ },
  { step: "metrics", url: /effect\/dist\/esm\/internal\/metric/ },
  { step: "spans", url: /effect\/dist\/esm\/internal\/tracer\.js$/, fn: /^(NativeSpan|end|attribute)$/ },
  { step: "spans", url: /effect\/dist\/esm\/internal\/core-effect\.js$/, fn: /Span|annotate/i },
  { step: "spans", url: /effect\/dist\/esm\/Effect\.js$/, fn: /^(defineLength|fnApply|captureStackTrace)$/ },
  { step: "timeout and the attempt's scope", url: /internal\/http\/fastPath\.js$/ },
  { step: "abort of the request as its scope closes", url: /abort_controller|domexception|event_target/ },
  { step: "response read (body stream, UTF-8 decode)", url: /internal\/http\/(body|classify)\.js$/ },
  { step: "response read (body stream, UTF-8 decode)", url: /node:internal\/encoding$/ },
  { step: "response read (body stream, UTF-8 decode)", url: /platform-node\/dist\/esm\/internal\/stream\.js$/ },
  { step: "id set", url: /internal\/scan\/IdSet\.js$/ },
  { step: "scan engine and driver", url: /internal\/scan\/(engine|driver|state|concurrency|checkpoint|summary)\.js$/ },
  { step: "bulk engine (order, turns, outcomes)", url: /internal\/(bulkUpdate|inOrder)\.js$/ },
  { step: "change pass: fingerprint", url: /internal\/fingerprint\.js$/ },
  { step: "change pass: storable check", url: /internal\/storable\.js$/ },
  { step: "change pass: compare, baseline, checkpoint", url: /internal\/changes\.js$|\/Changes\.js$/ },
  { step: "mirror: SQL statements built (@effect/sql)", url: /@effect\/sql\/dist/ },
  { step: "mirror: libsql (SQLite)", url: /libsql|sql-libsql/ },
  { step: "mirror: PostgreSQL driver (pg)", url: /\/pg\/|pg-protocol|sql-pg/ },
  { step: "mirror: its steps (writePage, savePass)", url: /sql\/internal\/mirror\.js$|sql\/SqlMirror\.js$/ },
  { step: "CLI: output (FILE, STATE) and the command", url: /src\/cli\// },
  { step: "streams and their chunks", url: /effect\/dist\/esm\/internal\/(channel|stream|sink|core-stream)/ },
  { step: "undici and the socket", url: /undici|node:net|node:internal\/(stream_base_commons|streams|net)/ },
  { step: "undici and the socket", url: /^$/, fn: /^(writev|writeBuffer|writeUtf8String|writeLatin1String)$/ },
  { step: "Effect's fiber runtime (running effects between steps)", url: /effect\/dist\/esm/ },
  { step: "Effect's fiber runtime (running effects between steps)", url: /@effect\/platform/ }
]

const other = "other (Node, module loading, the benchmark)"

const stepOf = (frames: ReadonlyArray<CallFrame>): string | undefined => {
  const [leaf] = frames
  if (leaf?.functionName === "(idle)") return undefined
  for (const frame of frames) {
    for (const rule of steps) {
      if (rule.url.test(frame.url) && (rule.fn === undefined || rule.fn.test(frame.functionName))) return rule.step
    }
  }
  return other
}

const main = () => {
  const opts = options()
  const path = process.argv.slice(2).find((arg) => !arg.startsWith("--"))
  if (path === undefined) throw new Error("usage: steps.js PROFILE.cpuprofile [--cpu=µs]")
  const cpu = opts.number("cpu", 0, 0)
  const profile = JSON.parse(readFileSync(path, "utf8")) as Profile
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const parents = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id)
  const micros = new Map<number, number>()
  profile.samples.forEach((id, i) => micros.set(id, (micros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
  const bySteps = new Map<string, number>()
  for (const [id, time] of micros) {
    const frames: Array<CallFrame> = []
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
      const node = nodes.get(at)
      if (node !== undefined) frames.push(node.callFrame)
    }
    const step = stepOf(frames)
    if (step !== undefined) bySteps.set(step, (bySteps.get(step) ?? 0) + time)
  }
  const busy = [...bySteps.values()].reduce((sum, t) => sum + t, 0)
  const rows = [...bySteps].sort(([, a], [, b]) => b - a).map(([step, time]) =>
    `| ${step} | ${formatRatio((100 * time) / busy, 1)}% |${cpu > 0 ? ` ${formatInt((cpu * time) / busy)} |` : ""}`
  )
  process.stdout.write(
    [
      `| Step | share of CPU |${cpu > 0 ? " µs per one |" : ""}`,
      `|---|---:|${cpu > 0 ? "---:|" : ""}`,
      ...rows,
      `| all (idle excluded) | 100% |${cpu > 0 ? ` ${formatInt(cpu)} |` : ""}`
    ].join("\n") + "\n"
  )
}

main()
