/**
 * Loaded into a `microapp` process by `--import` (passes.ts): as the process exits, writes its own
 * CPU time (user and system, µs) to the file named by `MICROAPP_BENCH_CPU`, which a parent cannot
 * read off a child once it has exited.
 */
import { writeFileSync } from "node:fs"

const file = process.env["MICROAPP_BENCH_CPU"]
if (file !== undefined) {
  process.on("exit", () => {
    const used = process.cpuUsage()
    writeFileSync(file, JSON.stringify({ user: used.user, system: used.system }))
  })
}
