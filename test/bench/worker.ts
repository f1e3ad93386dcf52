/**
 * One contender in a process of its own, scanning the table each time its parent asks: its heap,
 * JIT and CPU time are its own, so contenders do not tax each other (C's huge heap would), and
 * its peak RSS is its alone. B and C load no Effect.
 */
import { gcTimer, peakRss } from "./common.js"
import { expectRows, type Tally } from "./plain.js"

/** Which contender, and the table it reads. */
export interface WorkerSpec {
  /** `B-loaded`: B in a process that has loaded A's modules and built its client. */
  readonly contender: "A" | "A-fetch" | "B" | "B-loaded" | "C"
  readonly baseUrl: string
  readonly rows: number
  readonly lastId: string | undefined
  readonly pageSize: number
  readonly concurrency: number | "auto"
}

/** One scan, as the worker measured it. */
export interface WorkerRun {
  readonly ok: boolean
  readonly millis: number
  /** CPU time of the worker process during the scan, user and system. */
  readonly cpuMillis: number
  /** Time in the garbage collector during the scan. */
  readonly gcMillis: number
  /** Peak RSS of the worker process so far. */
  readonly peakRss: number
  readonly concurrency?: Tally["concurrency"]
  readonly error?: string
}

const makeScan = async (spec: WorkerSpec): Promise<() => Promise<Tally>> => {
  switch (spec.contender) {
    case "A":
    case "A-fetch": {
      const { clientA } = await import("./contenders.js")
      const client = clientA(spec.baseUrl, spec.contender === "A" ? "undici" : "fetch")
      return () => client.scan({ pageSize: spec.pageSize, concurrency: spec.concurrency })
    }
    case "B": {
      const { scanB } = await import("./plain.js")
      return () => scanB(spec.baseUrl, spec.pageSize)
    }
    case "B-loaded": {
      const { clientA } = await import("./contenders.js")
      const { scanB } = await import("./plain.js")
      // kept, as an application keeps its client, so that the loaded code stays alive
      const client = clientA(spec.baseUrl, "undici")
      return () => scanB(spec.baseUrl, spec.pageSize).finally(() => void client)
    }
    case "C": {
      const { scanC } = await import("./plain.js")
      return () => scanC(spec.baseUrl)
    }
  }
}

const send = (message: WorkerRun) => process.send?.(message)

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error)).slice(0, 160)

const main = async () => {
  const spec = JSON.parse(process.argv[2] ?? "{}") as WorkerSpec
  const scan = await makeScan(spec)
  process.on("message", () => {
    const gc = gcTimer()
    const cpu = process.cpuUsage()
    const start = performance.now()
    const measured = async () => {
      const used = process.cpuUsage(cpu)
      const millis = performance.now() - start
      return { millis, cpuMillis: (used.user + used.system) / 1000, gcMillis: await gc.stop(), peakRss: peakRss() }
    }
    scan().then(
      async (seen) => {
        const figures = await measured()
        try {
          expectRows(spec.contender, seen, spec.rows, spec.lastId)
          send({ ok: true, ...figures, ...(seen.concurrency === undefined ? {} : { concurrency: seen.concurrency }) })
        } catch (error) {
          send({ ok: false, ...figures, error: describe(error) })
        }
      },
      async (error: unknown) => send({ ok: false, ...(await measured()), error: describe(error) })
    )
  })
  process.on("disconnect", () => process.exit(0))
  process.send?.("ready")
}

main().catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
