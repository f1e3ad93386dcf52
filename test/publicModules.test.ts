/**
 * Public modules are contracts: each reaches its implementation through the one internal module
 * named after it, and a module that only declares imports from src/internal at most the numbers
 * its Schemas are bounded by.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"

const src = path.resolve(import.meta.dirname, "..", "src")

/** The modules of src/internal a public module imports, by their path under src/internal. */
const internalImportsOf = (file: string): ReadonlyArray<string> =>
  Array.from(
    fs.readFileSync(path.join(src, file), "utf8").matchAll(/\bfrom\s*"\.\/internal\/([^"]+)\.js"/g),
    (match) => match[1] ?? ""
  )

describe("the public modules", () => {
  it("each reaches src/internal through the module named after it, or only for its bounds", () => {
    const publicModules = fs.readdirSync(src).filter((file) => file.endsWith(".ts") && file !== "index.ts").sort()
    expect(Object.fromEntries(publicModules.map((file) => [file, internalImportsOf(file)]))).toEqual({
      "BulkUpdate.ts": ["bulkUpdate"],
      "Changes.ts": ["changes/index"],
      "Checkpoint.ts": ["scan/checkpoint"],
      "Microapp.ts": ["microapp"],
      "MicroappClient.ts": ["client"],
      "MicroappError.ts": [],
      "Query.ts": ["limits"],
      "Row.ts": ["row"],
      "RowStream.ts": []
    })
  })
})
