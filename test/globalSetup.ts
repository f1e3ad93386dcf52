import { buildSync } from "esbuild"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * Builds dist/ once before the suites that run the built package (the bin, the import graph): the
 * modules transpiled file by file with esbuild, which the tsconfig's isolatedModules and
 * verbatimModuleSyntax make equivalent to tsc's output, and the bin bundled by `npm run build:bin`,
 * as `npm run build` does, in a second or two. Type errors are `npm run check`'s to report, and
 * the declarations are the package test's.
 */
export default function setup(): void {
  const root = path.resolve(import.meta.dirname, "..")
  const sources = fs.readdirSync(path.join(root, "src"), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts") && !file.startsWith(`cli${path.sep}`))
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
  const npm = process.env["npm_execpath"]
  const bin = npm === undefined
    ? spawnSync("npm", ["run", "--silent", "build:bin"], { cwd: root, encoding: "utf8" })
    : spawnSync(process.execPath, [npm, "run", "--silent", "build:bin"], { cwd: root, encoding: "utf8" })
  if (bin.status !== 0) throw new Error(`npm run build:bin failed:\n${bin.stdout}${bin.stderr}`)
}
