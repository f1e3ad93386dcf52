/**
 * What every benchmark program shares: options, the server process, statistics and the report
 * sent to `run.ts`.
 */
import { execFile, fork } from "node:child_process"
import { readFileSync, rmSync } from "node:fs"
import * as path from "node:path"
import { PerformanceObserver } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import type { EmulatorConfig } from "./emulator.js"
import type { ServerConfig, ServerReady } from "./server.js"
import type { WorkerRun, WorkerSpec } from "./worker.js"

/** One line of the summary table: a figure, what was measured, and its goal. */
export interface Finding {
  readonly figure: string
  readonly measured: string
  readonly goal: string
  /** `undefined` when the figure has no goal to meet. */
  readonly met: boolean | undefined
}

/** What a program hands back: summary lines, and its own detail table in markdown. */
export interface Report {
  readonly title: string
  readonly findings: ReadonlyArray<Finding>
  readonly details: string
}

/** Command-line options of a program: `--smoke` and `--name=value` overrides. */
export const options = () => {
  const { values } = parseArgs({ strict: false, allowPositionals: true })
  const smoke = values["smoke"] === true
  const number = (name: string, full: number, tiny: number): number => {
    const given = values[name]
    return typeof given === "string" && given !== "" ? Number(given) : smoke ? tiny : full
  }
  const text = (name: string): string | undefined => {
    const given = values[name]
    return typeof given === "string" ? given : undefined
  }
  return { smoke, number, text }
}

/** The program's report: to the runner over IPC, or to stdout when run on its own. */
export const finish = (report: Report): void => {
  if (process.send !== undefined) {
    process.send(report, () => process.exit(0))
  } else {
    process.stdout.write(`${report.details}\n`)
    for (const finding of report.findings) process.stdout.write(`${finding.figure}: ${finding.measured}\n`)
    process.exit(0)
  }
}

/** A program's failure: printed, and a non-zero exit. */
export const failed = (error: unknown): void => {
  console.error(error)
  process.exit(1)
}

/** A child process's result, to its parent over IPC. */
export const replyToParent = (result: Promise<unknown>): void => {
  result.then((value) => process.send?.(value, () => process.exit(0)), failed)
}

/** The forms of the benchmark server's answers: with their length, chunked, or gzip-compressed and chunked. */
export const answerForms = ["length", "chunked", "gzip"] as const
export type Answers = typeof answerForms[number]

/** The base URL under which the benchmark server at `server` answers in the form `answers`. */
export const baseUrlOf = (server: string, answers: Answers): string => `${server}/${answers}`

/** The forms named by the option `--answers` (a comma-separated list), all three when absent. */
export const answersOption = (given: string | undefined): ReadonlyArray<Answers> =>
  given === undefined ? answerForms : answerForms.filter((form) => given.split(",").includes(form))

/** A server process and its address. */
export interface Server {
  readonly baseUrl: string
  readonly stop: () => void
}

/** Starts a server program (the benchmark server by default) in a process of its own; resolves once it listens. */
export const startServer = (config: ServerConfig | EmulatorConfig, program = "./server.js"): Promise<Server> =>
  new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL(program, import.meta.url)), [JSON.stringify(config)], {
      // none of the client's flags (heap limit, profiler) apply to the server
      execArgv: [],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    child.once("error", reject)
    child.once("exit", (code) => reject(new Error(`the benchmark server exited (${code})`)))
    child.once("message", (message) => {
      const ready = message as ServerReady
      resolve({ baseUrl: `http://127.0.0.1:${ready.port}`, stop: () => child.kill() })
    })
  })

/** Sums the garbage collector's pauses from now; `stop` gives them in ms, once the last entries arrived. */
export const gcTimer = () => {
  let millis = 0
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) millis += entry.duration
  })
  observer.observe({ entryTypes: ["gc"] })
  return {
    stop: async (): Promise<number> => {
      // entries are delivered asynchronously: let the last ones arrive
      await new Promise((resolve) => setImmediate(resolve))
      observer.disconnect()
      return millis
    }
  }
}

/** The median; NaN for none. */
export const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] ?? NaN : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2
}

/** Rotates `items` by `round`, so that no contender always runs first or after the same one. */
export const rotate = <A>(items: ReadonlyArray<A>, round: number): Array<A> =>
  items.map((_, i) => items[(i + round) % items.length]).filter((item): item is A => item !== undefined)

/** A whole number with thousands separators. */
export const formatInt = (n: number): string => Math.round(n).toLocaleString("en-US")

/** A ratio with `digits` decimals; a dash when it cannot be computed. */
export const formatRatio = (n: number, digits = 2): string => Number.isFinite(n) ? n.toFixed(digits) : "–"

/** Bytes in decimal megabytes, as the goals are stated. */
export const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(0)} MB`

/** Peak resident set of this process so far, in bytes. */
export const peakRss = (): number => process.resourceUsage().maxRSS * 1024

/** Peak resident set of a running process, from Linux's /proc (VmHWM); undefined elsewhere. */
export const peakRssOf = (pid: number): number | undefined => {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
    return match?.[1] === undefined ? undefined : Number(match[1]) * 1024
  } catch {
    return undefined
  }
}

/** A contender run in a worker: which reader, at which concurrency, its key and its label in a table. */
export interface Contender {
  /** The contender and the form of the answers it reads, e.g. `A1@chunked`. */
  readonly key: string
  readonly label: string
  readonly contender: WorkerSpec["contender"]
  readonly concurrency: WorkerSpec["concurrency"]
}

/** A contender's process: `run` scans once; a worker that dies answers with how, and its last sampled peak RSS. */
export interface Worker {
  readonly run: () => Promise<WorkerRun & { readonly crashed?: boolean }>
  readonly stop: () => void
}

/**
 * Starts a contender in a process of its own, with `flags` for Node; resolves once it is ready.
 * `build`: the compiled benchmark build (`.bench-out` or another `--outDir`) whose worker runs it.
 */
export const startWorker = (spec: WorkerSpec, flags: ReadonlyArray<string> = [], build?: string): Promise<Worker> =>
  new Promise((resolve, reject) => {
    const program = build === undefined
      ? fileURLToPath(new URL("./worker.js", import.meta.url))
      : `${build}/test/bench/worker.js`
    const child = fork(program, [JSON.stringify(spec)], {
      execArgv: [...flags],
      stdio: ["ignore", "inherit", "pipe", "ipc"]
    })
    let stderr = ""
    child.stderr?.on("data", (chunk: Buffer) => {
      process.stderr.write(chunk)
      stderr = (stderr + chunk.toString("utf8")).slice(-4000)
    })
    let pending: ((run: WorkerRun & { readonly crashed?: boolean }) => void) | undefined
    let sampledPeak = 0
    let start = 0
    const sampler = setInterval(() => {
      if (pending === undefined || child.pid === undefined) return
      sampledPeak = Math.max(sampledPeak, peakRssOf(child.pid) ?? 0)
    }, 20)
    child.on("message", (message) => {
      if (message === "ready") {
        resolve({
          run: () =>
            new Promise((answer) => {
              pending = answer
              start = performance.now()
              child.send("run")
            }),
          stop: () => {
            clearInterval(sampler)
            // a disconnect lets the worker exit on its own, writing a profile if it was asked for one
            if (child.connected) child.disconnect()
            setTimeout(() => child.kill(), 10_000).unref()
          }
        })
        return
      }
      const answer = pending
      pending = undefined
      answer?.(message as WorkerRun)
    })
    child.on("exit", (code, signal) => {
      clearInterval(sampler)
      const fatal = /FATAL ERROR: [^\n]*/.exec(stderr)?.[0]
      const death = `${fatal ?? "died"} (${signal === null ? `exit ${code}` : signal})`
      pending?.({
        ok: false,
        crashed: true,
        millis: performance.now() - start,
        cpuMillis: 0,
        gcMillis: 0,
        peakRss: sampledPeak,
        error: death
      })
      pending = undefined
      reject(new Error(`a ${spec.contender} worker ${death} before it was ready`))
    })
  })

/** This build's `microapp`, compiled by `tsconfig.bench.json`. */
export const microappBin = fileURLToPath(new URL("../../src/cli/bin.js", import.meta.url))

const cpuReport = new URL("./cpuReport.js", import.meta.url).href

/** What one `microapp` process took: wall time, its own CPU time, and what it wrote to storage. */
export interface MicroappRun {
  readonly millis: number
  readonly cpuMillis: number
  /** Bytes the process wrote to storage (Linux); NaN where unknown. */
  readonly written: number
}

/**
 * One `microapp` process with `args` and the connection flags of the stand-in server at
 * `baseUrl`, its CPU reported through a file in `dir`; `program` another build's bin.
 */
export const microapp = (
  baseUrl: string,
  dir: string,
  args: ReadonlyArray<string>,
  { nodeFlags = [], program = microappBin }: {
    readonly nodeFlags?: ReadonlyArray<string>
    readonly program?: string | undefined
  } = {}
) =>
  new Promise<MicroappRun>((resolve, reject) => {
    const cpuFile = path.join(dir, "cpu.json")
    rmSync(cpuFile, { force: true })
    const start = performance.now()
    execFile(
      process.execPath,
      [
        ...nodeFlags,
        `--import=${cpuReport}`,
        program,
        ...args,
        "--quiet",
        "--base-url",
        baseUrl,
        "--token",
        "bench",
        "--user-id",
        "bench"
      ],
      { maxBuffer: 1 << 20, env: { ...process.env, MICROAPP_BENCH_CPU: cpuFile } },
      (error, _stdout, stderr) => {
        const millis = performance.now() - start
        if (error !== null) return reject(new Error(`microapp ${args[0]} failed: ${stderr}`))
        const cpu = JSON.parse(readFileSync(cpuFile, "utf8")) as { user: number; system: number; written?: number }
        resolve({ millis, cpuMillis: (cpu.user + cpu.system) / 1000, written: cpu.written ?? NaN })
      }
    )
  })
