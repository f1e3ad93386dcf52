import { spawnSync } from "node:child_process"
import * as path from "node:path"

/** Builds dist/ once before the suites that run the built package (the bin, the import graph). */
export default function setup(): void {
  const root = path.resolve(import.meta.dirname, "..")
  const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc")
  const result = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, encoding: "utf8" })
  if (result.status !== 0) throw new Error(`npm run build failed:\n${result.stdout}${result.stderr}`)
}
