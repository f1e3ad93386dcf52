/**
 * The API reference (`npm run docs`, @effect/docgen) covers every entry point of the package, and
 * documents every static of `MicroappClient`: docgen lists a class's static methods, not static
 * properties, so the layers must stay methods. It lands in `docs/api/`, apart from the written pages:
 * docgen writes its examples two folders below the root (it imports them from `../../src`), so
 * `npm run docs` has it write to a folder of the root and moves that. Its pages are the modules
 * the package exports, which docgen.json's exclusions decide: an entry point's index, and the
 * modules it re-exports from outside an `internal/` folder.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { MicroappClient } from "../src/index.js"

const root = path.resolve(import.meta.dirname, "..")
const readJson = (file: string): unknown => JSON.parse(fs.readFileSync(path.join(root, file), "utf8"))

const docgen = readJson("docgen.json") as {
  readonly srcDir: string
  readonly exclude: ReadonlyArray<string>
  readonly outDir: string
}
const packageJson = readJson("package.json") as {
  readonly exports: Record<string, { readonly default: string }>
  readonly scripts: Record<string, string>
  readonly version: string
}
const exportsOf = packageJson.exports

/** A docgen exclude glob as a RegExp over paths like `src/testing/internal/app.ts`. */
const globToRegExp = (glob: string) =>
  new RegExp(
    `^${
      glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*\*\//g, "\u0000").replace(/\*/g, "[^/]*").replace(
        /\u0000/g,
        "(?:.*/)?"
      )
    }$`
  )
const excluded = docgen.exclude.map(globToRegExp)
const documented = (file: string) => !excluded.some((pattern) => pattern.test(file))

/** Every module under src/, as `src/sql/SqlMirror.ts`. */
const sourceModules = fs.readdirSync(path.join(root, "src"), { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".ts")).map((file) => path.posix.join("src", file.split(path.sep).join("/")))

/**
 * The modules the package exports: each entry point's index, and the modules it re-exports from,
 * but those of an `internal/` folder, whose names the index itself documents.
 */
const exportedModules = Object.values(exportsOf).flatMap(({ default: built }) => {
  const index = built.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts")
  const reexported = Array.from(
    fs.readFileSync(path.join(root, index), "utf8").matchAll(/^export\b[^;]*?\bfrom "(\.[^"]+)\.js"/gms),
    (match) => path.posix.join(path.posix.dirname(index), `${match[1]}.ts`)
  )
  return [index, ...reexported.filter((module) => !module.split("/").includes("internal"))]
})

describe("the API reference", () => {
  it("documents exactly the modules the package exports: docs/api has a page for each and for no other", () => {
    expect(docgen.srcDir).toBe("src")
    expect(exportedModules).toContain("src/testing/index.ts")
    expect(exportedModules).toContain("src/testing/MicroappState.ts")
    expect(sourceModules.filter(documented).sort()).toEqual([...new Set(exportedModules)].sort())
  })

  it.each(Object.keys(exportsOf))("entry point %s has documented modules", (entry) => {
    const dir = path.posix.join("src", path.posix.dirname(exportsOf[entry]?.default.replace(/^\.\/dist\//, "") ?? ""))
    const modules = fs.readdirSync(path.join(root, dir)).filter((file) => file.endsWith(".ts"))
      .map((file) => path.posix.join(dir, file))
    expect(modules.filter(documented).length, dir).toBeGreaterThan(0)
  })

  it("has a folder of its own, docs/api/, which git ignores, as it does docgen's own", () => {
    expect(docgen.outDir).toMatch(/^[\w.-]+$/)
    expect(packageJson.scripts["docs"]).toBe(`docgen && rm -rf docs/api && mv ${docgen.outDir} docs/api`)
    const ignored = fs.readFileSync(path.join(root, ".gitignore"), "utf8").split("\n")
    expect(ignored).toEqual(expect.arrayContaining(["docs/api/", `${docgen.outDir}/`]))
  })

  it("every @since names a version the CHANGELOG has a section for", () => {
    const versions = Array.from(
      fs.readFileSync(path.join(root, "CHANGELOG.md"), "utf8").matchAll(/^## (\d+\.\d+\.\d+)/gm),
      (match) => match[1]
    )
    expect(versions).toContain(packageJson.version)
    const sources = fs.readdirSync(path.join(root, "src"), { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts"))
    const tagged = sources.flatMap((file) =>
      Array.from(
        fs.readFileSync(path.join(root, "src", file), "utf8").matchAll(/@since (\S+)/g),
        (match) => `${file} ${match[1]}`
      )
    )
    expect(tagged.length).toBeGreaterThan(400)
    expect(tagged.filter((entry) => !versions.includes(entry.split(" ")[1]))).toEqual([])
  })

  it("every static of MicroappClient is a method, which docgen documents", () => {
    for (const name of ["layer", "layerConfig", "layerLogin", "login"]) {
      const descriptor = Object.getOwnPropertyDescriptor(MicroappClient, name)
      expect(typeof descriptor?.value, name).toBe("function")
      // a static property is enumerable and left out of the reference; a static method is not
      expect(descriptor?.enumerable, name).toBe(false)
    }
  })
})
