/**
 * Loaded into a `microapp` process by `--import` (passes.ts): as the process exits, writes its own
 * CPU time (user and system, µs) and, on Linux, the bytes it had written to storage
 * (`/proc/self/io`), to the file named by `MICROAPP_BENCH_CPU`, which a parent cannot read off a
 * child once it has exited.
 */
import { readFileSync, writeFileSync } from "node:fs"

/** Bytes this process caused to be written to storage; undefined where /proc does not say. */
const writtenBytes = (): number | undefined => {
  try {
    const match = /^write_bytes: (\d+)$/m.exec(readFileSync("/proc/self/io", "utf8"))
    return match?.[1] === undefined ? undefined : Number(match[1])
  } catch {
    return undefined
  }
}

const file = process.env["MICROAPP_BENCH_CPU"]
if (file !== undefined) {
  process.on("exit", () => {
    const used = process.cpuUsage()
    writeFileSync(file, JSON.stringify({ user: used.user, system: used.system, written: writtenBytes() }))
  })
}
