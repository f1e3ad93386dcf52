import { afterAll, describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { refusedBaseUrl } from "./support.js"

const root = path.resolve(import.meta.dirname, "..")
const packageJson = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"))

/** What `tsc -p tsconfig.build.json` (the first half of `npm run build`) emits, in a directory of its own. */
const tscBuild = (): string => {
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-microapp-build-"))
  const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc")
  const result = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json", "--outDir", outDir], {
    cwd: root,
    encoding: "utf8"
  })
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
    fs.readdirSync(path.join(root, "src/internal"), { recursive: true, encoding: "utf8" }).filter((file) =>
      file.endsWith(".ts")
    ).flatMap((file) =>
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
      Array.from(
        fs.readFileSync(path.join(root, "src", file), "utf8").matchAll(/[A-Za-z_$][\w$]*/g),
        (match) => match[0]
      )
    )
  )

/**
 * The identifiers the README's and docs/' code names as its own heads: in code spans and code
 * blocks, less string literals, file names and the members after a dot (`Microapp.make` names `Microapp`).
 */
const readmeIdentifiers = (): ReadonlySet<string> => {
  const readme = ["README.md", ...fs.readdirSync(path.join(root, "docs")).map((file) => path.join("docs", file))]
    .filter((file) => file.endsWith(".md"))
    .map((file) => fs.readFileSync(path.join(root, file), "utf8"))
    .join("\n")
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
  const declared = tscBuild()
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

  it("./sql imports effect, @effect/platform and @effect/sql only: no driver, cluster, workflow or node module", () => {
    const external = [...externalImports(packageJson.exports["./sql"].default)]
    expect(external).toContain("@effect/sql")
    const allowed = /^(effect|@effect\/platform|@effect\/sql)(\/|$)/
    expect(external.filter((specifier) => !allowed.test(specifier))).toEqual([])
  })

  it("./debezium imports effect only: a producer of any runtime builds the events", () => {
    const external = [...externalImports(packageJson.exports["./debezium"].default)]
    expect(external).toContain("effect")
    expect(external.filter((specifier) => !/^effect(\/|$)/.test(specifier))).toEqual([])
  })

  it("./workflow imports effect, @effect/platform, @effect/sql, @effect/cluster and @effect/workflow only", () => {
    const external = [...externalImports(packageJson.exports["./workflow"].default)]
    expect(external).toEqual(expect.arrayContaining(["@effect/cluster", "@effect/workflow"]))
    const allowed = /^(effect|@effect\/(platform|sql|cluster|workflow))(\/|$)/
    expect(external.filter((specifier) => !allowed.test(specifier))).toEqual([])
  })

  it("the bin loads the database drivers only when a command needs one, from node_modules", () => {
    const source = fs.readFileSync(path.join(root, packageJson.bin.microapp), "utf8")
    expect(source).toContain("import(\"@effect/sql-libsql\")")
    expect(source).toContain("import(\"@effect/sql-pg\")")
    expect(
      specifiers(path.join(root, packageJson.bin.microapp)).filter((specifier) =>
        /^(@effect\/sql-[\w-]+|@libsql\/[\w-]+|libsql|pg)(\/|$)/.test(specifier)
      ).sort()
    ).toEqual(["@effect/sql-libsql", "@effect/sql-pg"])
  })

  it("the bin is bundled, with the chunks it imports when a command needs them: it runs with no node_modules beside it", () => {
    // away from this repository's node_modules: whatever it needs, it carries
    const alone = fs.mkdtempSync(path.join(os.tmpdir(), "effect-microapp-bin-"))
    try {
      const chunks = path.join(path.dirname(packageJson.bin.microapp), "chunks")
      fs.cpSync(path.join(root, chunks), path.join(alone, chunks), { recursive: true })
      fs.copyFileSync(path.join(root, packageJson.bin.microapp), path.join(alone, packageJson.bin.microapp))
      fs.copyFileSync(path.join(root, "package.json"), path.join(alone, "package.json"))
      const run = spawnSync(process.execPath, [path.join(alone, packageJson.bin.microapp), "--version"], {
        cwd: alone,
        encoding: "utf8"
      })
      expect(run.stderr).toBe("")
      expect(run.stdout.trim()).toBe(packageJson.version)
      // a command that talks to a service imports its HTTP client's chunk: here, refused
      const talking = spawnSync(process.execPath, [
        path.join(alone, packageJson.bin.microapp),
        "describe",
        "64b7c0f1a2d3e4f5a6b7c8d9",
        ...["--base-url", refusedBaseUrl, "--token", "not-a-token", "--user-id", "someone", "--retries", "0"]
      ], { cwd: alone, encoding: "utf8" })
      expect([talking.status, talking.stderr]).toEqual([5, expect.stringMatching(/^error: network failure: connect /)])
    } finally {
      fs.rmSync(alone, { recursive: true, force: true })
    }
  })

  it("a user of the client installs effect and @effect/platform, nothing of the CLI's or the emulator's", () => {
    expect(packageJson.dependencies ?? {}).toEqual({})
    expect(Object.keys(packageJson.peerDependencies).sort()).toEqual([
      "@effect/cluster",
      "@effect/platform",
      "@effect/platform-node",
      "@effect/sql",
      "@effect/workflow",
      "effect"
    ])
    expect(packageJson.peerDependencies["@effect/sql"]).toBe("~0.52.1")
    expect(packageJson.peerDependencies["@effect/cluster"]).toBe("~0.60.2")
    expect(packageJson.peerDependencies["@effect/workflow"]).toBe("~0.19.1")
    expect(packageJson.peerDependenciesMeta).toEqual({
      "@effect/cluster": { optional: true },
      "@effect/platform-node": { optional: true },
      "@effect/sql": { optional: true },
      "@effect/workflow": { optional: true }
    })
  })

  it("the build ships no source maps and no modules of the command line (the bin bundles them)", () => {
    const emitted = fs.readdirSync(declared, { recursive: true, encoding: "utf8" })
    expect(emitted).toContain("index.js")
    expect(emitted.filter((file) => file.endsWith(".map") || file.startsWith(`cli${path.sep}`))).toEqual([])
  })

  it("packs LICENSE, README.md and dist, builds before it packs, and says where it comes from", () => {
    const packed = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: root,
      encoding: "utf8"
    })
    const files: Array<string> = JSON.parse(packed.stdout)[0].files.map((file: { path: string }) => file.path)
    expect(files.filter((file) => !file.startsWith("dist/")).sort()).toEqual(["LICENSE", "README.md", "package.json"])
    expect(files).toContain("dist/cli/bin.js")
    expect(packageJson.scripts.prepack).toBe("npm run build")
    expect(packageJson.license).toBe("MIT")
    expect(fs.readFileSync(path.join(root, "LICENSE"), "utf8")).toMatch(/^MIT License/)
    expect(packageJson.repository.url).toMatch(/^git\+https:/)
    expect(packageJson.sideEffects).toBe(false)
  })

  it("the layers import only downwards; the paging engine imports only IdSet and effect", () => {
    const importsOf = (dir: string) =>
      fs.readdirSync(path.join(root, "src", dir), { recursive: true, encoding: "utf8" })
        .filter((file) => file.endsWith(".ts"))
        .flatMap((file) =>
          specifiers(path.join(root, "src", dir, file)).map((specifier) => ({ file: path.join(dir, file), specifier }))
        )
    const library = importsOf("").filter(({ file }) => !file.startsWith("cli") && !file.startsWith("testing"))
    expect(library.length).toBeGreaterThan(20)
    expect(library.filter(({ specifier }) => /\/(cli|testing)\//.test(specifier))).toEqual([])
    expect(importsOf("testing").filter(({ specifier }) => /\/cli\//.test(specifier))).toEqual([])
    expect(specifiers(path.join(root, "src/internal/scan/engine.ts"))).toEqual(["effect", "./IdSet.js", "./state.js"])
  })

  it("the scan subsystem imports what src/internal/scan/README.md allows: nothing of the transport", () => {
    const scan = path.join(root, "src/internal/scan")
    const outside = new Set(
      fs.readdirSync(scan).filter((file) => file.endsWith(".ts")).flatMap((file) =>
        specifiers(path.join(scan, file)).filter((specifier) => !specifier.startsWith("./"))
      )
    )
    const allowed = [
      "effect",
      ...["Checkpoint", "MicroappError", "Query", "RowStream"].map((module) => `../../${module}.js`),
      ...["bounds", "checkpointCodec", "limits", "metrics", "rowId"].map((module) => `../${module}.js`),
      ...["endpoints", "decode", "wire"].map((module) => `../http/${module}.js`)
    ]
    expect([...outside].filter((specifier) => !allowed.includes(specifier))).toEqual([])
  })

  it("the transport imports nothing of the scan subsystem nor of client.ts", () => {
    const http = path.join(root, "src/internal/http")
    const imported = fs.readdirSync(http).filter((file) => file.endsWith(".ts")).flatMap((file) =>
      specifiers(path.join(http, file))
    )
    expect(imported.length).toBeGreaterThan(20)
    expect(imported.filter((specifier) => /^\.\.\/(scan\/|client\.js)/.test(specifier))).toEqual([])
  })

  it("the emulator and the CLI are where the Node-only imports are", () => {
    const testing = [...externalImports(packageJson.exports["./testing"].default)]
    expect(testing.some((specifier) => specifier.startsWith("@effect/platform-node"))).toBe(true)
  })

  it("nothing the README or docs/ name is found only in src/internal", () => {
    const internal = internalExports()
    expect(internal.has("makeRowDecoder")).toBe(true)
    const publicWords = publicModuleWords()
    expect([...readmeIdentifiers()].filter((name) => internal.has(name) && !publicWords.has(name))).toEqual([])
  })

  it("the paging engine itself is not exported: RowStream holds its options, defaults and summary only", async () => {
    const { RowStream } = await import("../src/index.js")
    expect(Object.keys(RowStream).sort()).toEqual(["ScanSummary", "defaults"])
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
