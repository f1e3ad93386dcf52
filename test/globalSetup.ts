import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * Builds dist/ once before the suites that run the built package (the bin, the import graph).
 * Type errors are `npm run check`'s to report; here only a build that emits nothing fails.
 */
export default function setup(): void {
  const root = path.resolve(import.meta.dirname, "..")
  const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc")
  const result = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, encoding: "utf8" })
  for (const entry of ["dist/index.js", "dist/testing/index.js", "dist/cli/bin.js"]) {
    if (!fs.existsSync(path.join(root, entry))) {
      throw new Error(`the build did not produce ${entry}:\n${result.stdout}${result.stderr}`)
    }
  }
}
