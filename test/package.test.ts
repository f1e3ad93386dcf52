import { afterAll, describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "..")
const packageJson = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"))

/** The declarations `npm run build` emits, written to a directory of their own. */
const declarations = (): string => {
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-microapp-declarations-"))
  const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc")
  const result = spawnSync(
    process.execPath,
    [tsc, "-p", "tsconfig.build.json", "--emitDeclarationOnly", "--declarationMap", "false", "--outDir", outDir],
    { cwd: root, encoding: "utf8" }
  )
  if (!fs.existsSync(path.join(outDir, "index.d.ts"))) {
    throw new Error(`the build emitted no declarations:\n${result.stdout}${result.stderr}`)
  }
  return outDir
}

/** Every module specifier a built file imports or re-exports, statically or dynamically. */
const specifiers = (file: string): ReadonlyArray<string> =>
  Array.from(
    fs.readFileSync(file, "utf8").matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g),
    (match) => match[1] ?? ""
  )

/** The bare specifiers reachable from an entry point of the build, following relative imports. */
const externalImports = (entry: string): ReadonlySet<string> => {
  const seen = new Set<string>()
  const external = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const specifier of specifiers(file)) {
      if (specifier.startsWith(".")) visit(path.resolve(path.dirname(file), specifier))
      else external.add(specifier)
    }
  }
  visit(path.join(root, entry))
  return external
}

/** The names exported by the modules under src/internal. */
const internalExports = (): ReadonlySet<string> =>
  new Set(
    fs.readdirSync(path.join(root, "src/internal")).flatMap((file) =>
      Array.from(
        fs.readFileSync(path.join(root, "src/internal", file), "utf8").matchAll(
          /^export (?:declare )?(?:const|function|interface|type|class|let) (\w+)/gm
        ),
        (match) => match[1] ?? ""
      )
    )
  )

/** Every word of the public modules (src/*.ts): their exports, members, options and docs. */
const publicModuleWords = (): ReadonlySet<string> =>
  new Set(
    fs.readdirSync(path.join(root, "src")).filter((file) => file.endsWith(".ts")).flatMap((file) =>
      Array.from(fs.readFileSync(path.join(root, "src", file), "utf8").matchAll(/[A-Za-z_$][\w$]*/g), (match) => match[0])
    )
  )

/**
 * The identifiers the README's code names as its own heads: in code spans and code blocks, less
 * string literals, file names and the members after a dot (`Microapp.make` names `Microapp`).
 */
const readmeIdentifiers = (): ReadonlySet<string> => {
  const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
  const code = [
    ...Array.from(readme.matchAll(/```[a-z]*\n([\s\S]*?)```/g), (match) => match[1] ?? ""),
    ...Array.from(readme.replace(/```[\s\S]*?```/g, "").matchAll(/`([^`\n]+)`/g), (match) => match[1] ?? "")
  ]
  return new Set(
    code.flatMap((text) =>
      Array.from(
        text.replace(/"[^"\n]*"|'[^'\n]*'/g, "").replace(/[\w/.-]+\.(?:ts|js|md|json)\b/g, "").matchAll(
          /(?<![.\w$])[A-Za-z_$][\w$]*/g
        ),
        (match) => match[0]
      )
    )
  )
}

describe("the package", () => {
  const declared = declarations()
  afterAll(() => fs.rmSync(declared, { recursive: true, force: true }))

  it("exports the client, the emulator and the bin, with types", () => {
    expect(packageJson.name).toBe("effect-microapp")
    expect(packageJson.type).toBe("module")
    expect(packageJson.bin.microapp).toBe("./dist/cli/bin.js")
    for (const entry of Object.values(packageJson.exports) as Array<{ types: string; default: string }>) {
      expect(fs.existsSync(path.join(root, entry.default))).toBe(true)
      expect(entry.types).toMatch(/^\.\/dist\//)
      expect(fs.existsSync(path.join(declared, path.relative("dist", entry.types)))).toBe(true)
    }
  })

  it("the client imports only effect and @effect/platform (read from the built files)", () => {
    const external = [...externalImports(packageJson.exports["."].default)]
    expect(external.length).toBeGreaterThan(0)
    const allowed = /^(effect|@effect\/platform)(\/|$)/
    expect(external.filter((specifier) => !allowed.test(specifier))).toEqual([])
  })

  it("the emulator and the CLI are where the Node-only imports are", () => {
    const testing = [...externalImports(packageJson.exports["./testing"].default)]
    expect(testing.some((specifier) => specifier.startsWith("@effect/platform-node"))).toBe(true)
  })

  it("nothing the README names is found only in src/internal", () => {
    const internal = internalExports()
    expect(internal.has("makeRowDecoder")).toBe(true)
    const publicWords = publicModuleWords()
    expect([...readmeIdentifiers()].filter((name) => internal.has(name) && !publicWords.has(name))).toEqual([])
  })

  it("the paging engine itself is not exported: RowStream holds its options, defaults and summary only", async () => {
    const { RowStream } = await import("../src/index.js")
    expect(Object.keys(RowStream)).toEqual(["defaults"])
  })

  it("the public declarations refer to no type of src/internal", () => {
    const publicDeclarations = fs.readdirSync(declared).filter((file) => file.endsWith(".d.ts"))
    expect(publicDeclarations).toContain("index.d.ts")
    for (const file of publicDeclarations) {
      expect(fs.readFileSync(path.join(declared, file), "utf8"), file).not.toMatch(/internal\//)
    }
  })

  it("pins the Effect 3 line, never Effect 4", () => {
    const all = { ...packageJson.dependencies, ...packageJson.devDependencies, ...packageJson.peerDependencies }
    expect(all.effect).toBe("^3.22.4")
    expect(all["@effect/platform"]).toBe("^0.97.2")
    expect(all["@effect/platform-node"]).toBe("^0.108.2")
    expect(all["@effect/cli"]).toBe("^0.77.2")
    expect(all["@effect/vitest"]).toMatch(/^\^0\.30\./)
    expect(packageJson.engines.node).toBe(">=20.18.1")
    const installed = JSON.parse(fs.readFileSync(path.join(root, "node_modules/effect/package.json"), "utf8"))
    expect(installed.version).toMatch(/^3\./)
  })
})
