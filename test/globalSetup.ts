import { buildSync } from "esbuild"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * Builds dist/ once before the suites that run the built package (the bin, the import graph).
 * Transpiled file by file with esbuild, which the tsconfig's isolatedModules and
 * verbatimModuleSyntax make equivalent to tsc's output, in well under a second; type errors are
 * `npm run check`'s to report, and the declarations are the package test's.
 */
export default function setup(): void {
  const root = path.resolve(import.meta.dirname, "..")
  const sources = fs.readdirSync(path.join(root, "src"), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => path.join(root, "src", file))
  buildSync({
    entryPoints: sources,
    outdir: path.join(root, "dist"),
    outbase: path.join(root, "src"),
    format: "esm",
    platform: "node",
    target: "node20",
    logLevel: "error"
  })
}
