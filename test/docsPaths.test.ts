/**
 * Every file the README, the docs/ pages and the scan's README name exists: a path from the project's root, a link to
 * another page, or a bare file name (the layout drawn in docs/development.md is docsClaims.test.ts's). Files move;
 * the pages that name them must follow. CHANGELOG.md is history and may name what is gone.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "..")

const pages = [
  "README.md",
  ...fs.readdirSync(path.join(root, "docs")).filter((file) => file.endsWith(".md"))
    .map((file) => `docs/${file}`),
  "src/internal/scan/README.md"
]

/** Where the build writes (the package, the API reference, the benchmarks' programs): named, never committed. */
const built = /^(?:dist|docs\/api|\.bench-out)(?:\/|$)/

/** A page's text less its TypeScript blocks, which are scratchpad/ files quoted and checked by readme.test.ts. */
const prose = (page: string) => fs.readFileSync(path.join(root, page), "utf8").replace(/```ts\n[\s\S]*?```/g, "")

/** Every file under the project's own folders, by path from the root. */
const files: ReadonlyArray<string> = ["src", "test", "scratchpad", "docs", ".ci"].flatMap((dir) =>
  fs.readdirSync(path.join(root, dir), { recursive: true, encoding: "utf8" }).map((file) => `${dir}/${file}`)
).concat(fs.readdirSync(root))

/** A path of the project, a `*` in it matching one path segment or part of one. */
const exists = (name: string) => {
  const pattern = new RegExp(`^${name.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")}/?$`)
  return files.some((file) => pattern.test(file) || pattern.test(`${file}/`))
}

/** The benchmark programs are named by their built place: `.bench-out/test/bench/x.js` is `test/bench/x.ts`. */
const source = (name: string) => name.replace(/^\.bench-out\/(test\/bench\/[\w-]+)\.js$/, "$1.ts")

const rootPaths = (text: string) =>
  Array.from(
    text.matchAll(/(?<![\w./-])((?:src|test|scratchpad|docs|\.ci|\.bench-out)\/[\w./*-]*[\w*/])/g),
    (match) => match[1] ?? ""
  )

const links = (page: string, text: string) =>
  Array.from(
    text.matchAll(/\]\(([^)#\s:]+)(?:#[^)]*)?\)/g),
    (match) => path.posix.join(path.posix.dirname(page), match[1] ?? "")
  )

const bareNames = (text: string) =>
  Array.from(
    text.matchAll(/`[^`\n]*`/g),
    ([span]) =>
      Array.from(span.matchAll(/(?<![\w./*-])([\w-]+\.(?:ts|md|json|mjs))\b(?!\/)/g), (match) => match[1] ?? "")
  ).flat()

describe("the paths the docs name", () => {
  it.each(pages)("%s names only files that exist", (page) => {
    const text = prose(page)
    const named = [...rootPaths(text).map(source), ...links(page, text)].filter((name) => !built.test(name))
    expect(named.filter((name) => !exists(name))).toEqual([])
    const basenames = new Set(files.map((file) => path.posix.basename(file)))
    expect(bareNames(text).filter((name) => !basenames.has(name))).toEqual([])
  })

  it("the check catches a moved file", () => {
    expect(exists("src/internal/fastDecode.ts")).toBe(false)
    expect(exists("src/internal/http/fastDecode.ts")).toBe(true)
  })
})
