/**
 * `microapp describe`: the module it prints from the demo Microapps compiles against the package
 * and decodes every row of the table it came from; `--json` gives the inferred fields; and the
 * inference itself, kind by kind.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Schema, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"
import * as Infer from "../src/internal/infer.js"
import * as Microapp from "../src/Microapp.js"
import {
  MicroappServer,
  peopleMicroAppID,
  peopleSortFields,
  projectsMicroAppID,
  projectSortFields
} from "../src/testing/index.js"
import { cli, flags, root, type Run } from "./cliSupport.js"
import { withEmulator } from "./support.js"

/** A directory inside the project (so that its imports resolve), removed at the end. */
const projectDirectory = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(root, "test", ".describe-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** tsc's diagnostics for each of `files`, under the project's compiler options: one program for them all. */
const typeErrors = (files: ReadonlyArray<string>): ReadonlyArray<ReadonlyArray<string>> => {
  const config = ts.readConfigFile(path.join(root, "tsconfig.json"), ts.sys.readFile)
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root)
  const program = ts.createProgram(files, { ...parsed.options, noEmit: true })
  return files.map((file) =>
    ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) =>
      ts.flattenDiagnosticMessageText(d.messageText, "\n")
    )
  )
}

const tables = [[projectsMicroAppID, "Projects"], [peopleMicroAppID, "People"]] as const

/**
 * What `describe` printed for each demo table, written as a module of the project, and tsc's
 * diagnostics of each module: checked once for all (a program costs seconds; its modules' checks do not).
 */
class Printed extends Context.Tag("test/describe/Printed")<
  Printed,
  ReadonlyMap<string, { readonly run: Run; readonly file: string; readonly typeErrors: ReadonlyArray<string> }>
>() {}

const printed = Layer.scoped(
  Printed,
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const dir = yield* projectDirectory
    const runs = yield* Effect.forEach(
      tables,
      ([microAppID, name]) =>
        Effect.map(cli(["describe", microAppID, "--name", name, ...flags(server)]), (run) => {
          const file = path.join(dir, `${name}.ts`)
          // the package as the project's own source: dist carries no declarations
          fs.writeFileSync(file, run.stdout.replace(`"effect-microapp"`, `"../../src/index.js"`))
          return { name, run, file }
        })
    )
    const errors = typeErrors(runs.map(({ file }) => file))
    return new Map(runs.map(({ file, name, run }, i) => [name, { run, file, typeErrors: errors[i] ?? [] }]))
  })
)

describe("microapp describe", () => {
  layer(Layer.provideMerge(printed, MicroappServer.layer({ demoRows: 300 })), { excludeTestServices: true })((it) => {
    for (const [microAppID, name] of tables) {
      it.effect(`the module printed for ${name} compiles and decodes every row of the table`, () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const described = (yield* Printed).get(name)
          expect(described).toBeDefined()
          if (described === undefined) return
          const { file, run } = described
          expect(run.code, run.stderr).toBe(0)
          expect(run.stdout).toContain(`import { Microapp } from "effect-microapp"`)
          expect(described.typeErrors).toEqual([])
          const module = (yield* Effect.promise(() => import(file))) as Record<string, Microapp.AnyMicroapp>
          const definition = module[name] as Microapp.AnyMicroapp & {
            readonly schema: Schema.Schema<unknown, Readonly<Record<string, unknown>>>
          }
          const rows = yield* server.rows.table(microAppID)
          expect(rows.length).toBeGreaterThan(0)
          const decode = Schema.decodeUnknownEither(definition.schema)
          expect(rows.filter((row) => decode(row)._tag === "Left")).toEqual([])
          // the sort fields the rows told, from 1 on: never one the Results Tab does not have there
          const configured = microAppID === projectsMicroAppID ? projectSortFields : peopleSortFields
          expect(definition.sortFields).toEqual(configured.slice(0, definition.sortFields.length))
          if (microAppID === projectsMicroAppID) expect(definition.sortFields.length).toBeGreaterThanOrEqual(2)
        }))
    }

    it.effect("--json: the Projects fields with their kinds, required, and Status's choices", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const run = yield* cli(["describe", projectsMicroAppID, "--json", ...flags(server)])
        expect(run.code, run.stderr).toBe(0)
        const fields = Schema.decodeUnknownSync(Schema.parseJson(Schema.Array(Infer.InferredFieldSchema)))(run.stdout)
        const byLabel = new Map(fields.map((field) => [field.label, field]))
        expect(byLabel.get("Name")).toMatchObject({ kind: "text", required: true })
        expect(byLabel.get("Name")?.choices).toBeUndefined()
        expect(byLabel.get("Status")).toMatchObject({ kind: "text", choices: ["Done", "In progress", "Open"] })
        expect(byLabel.get("Due")?.kind).toBe("date")
        expect(byLabel.get("Approved")?.kind).toBe("boolean")
        expect(byLabel.get("Owner")?.kind).toBe("crossApp")
        expect(byLabel.get("Site")?.kind).toBe("location")
        expect(byLabel.get("Tags")).toMatchObject({ kind: "list", item: "text" })
        expect(["number", "integer"]).toContain(byLabel.get("Budget")?.kind)
        expect(byLabel.has("_id")).toBe(false)
      }))
  })
})

describe("a definition as describe writes it, before its placeholders are filled in", () => {
  layer(withEmulator({ demoRows: 40 }), { excludeTestServices: true })((it) => {
    it.effect("a filter by a field whose fieldID is a placeholder, or a sort with no sortFields: InvalidInput, nothing sent", () =>
      Effect.gen(function*() {
        const written = Infer.moduleOf({
          microAppID: projectsMicroAppID,
          name: "Projects",
          rows: 40,
          fields: [{ label: "Name", kind: "text", required: true }, { label: "Status", kind: "text", required: true }]
        })
        expect(written).toContain(
          `  // the Results Tab's sort fields by label, sort field 1 first; the rows do not tell them: ["Name","Status"], say\n  sortFields: []\n})`
        )
        const Projects = Microapp.make({
          microAppID: projectsMicroAppID,
          name: "Projects",
          fields: {
            Name: Microapp.text(Infer.fieldIDPlaceholder("Name")),
            Status: Microapp.text(Infer.fieldIDPlaceholder("Status"))
          },
          sortFields: []
        })
        const projects = yield* Microapp.bind(Projects)
        const server = yield* MicroappServer
        const before = (yield* server.log.requests).length
        const filtered = yield* Effect.flip(Stream.runDrain(projects.rows({ filters: { Status: "Open" } })))
        expect(filtered._tag).toBe("InvalidInput")
        expect(filtered.message).toContain(
          `the fieldID of "Status" is the placeholder "FIELD_ID_OF:Status" that microapp describe wrote: replace it with ` +
            `the field's fieldID, shown in the field's properties in the Microapp editor`
        )
        // a sort by a label the definition does not list: the type refuses it too
        const sort = { field: "Name" } as unknown as Microapp.SortOf<typeof Projects>
        const sorted = yield* Effect.flip(Stream.runDrain(projects.rows({ sort })))
        expect(sorted.message).toContain(
          `"Name" is not a sort field of Projects (none: list the Results Tab's sort fields by label in sortFields, sort field 1 first)`
        )
        expect((yield* server.log.requests).length).toBe(before)
      }))
  })
})

describe("inference", () => {
  it("a sort field's label: the one label in order under it with more than one value; none when two are, or none is", () => {
    const rows = [{ a: 1, b: "z", c: 5 }, { a: 2, b: "y", c: 5 }, { a: 2, b: "x", c: 5 }]
    expect(Infer.sortFieldOf(["a", "b", "c"], rows)).toBe("a")
    expect(Infer.sortFieldOf(["a", "b", "c"], [{ a: 2, b: "y" }, { a: 1, b: "z" }, { a: 3, b: "x" }])).toBeUndefined()
    expect(Infer.sortFieldOf(["a", "d"], [{ a: 1, d: "p" }, { a: 2, d: "q" }])).toBeUndefined()
    // nothing sorts first, then numbers, then text
    expect(Infer.sortFieldOf(["a"], [{}, { a: 3 }, { a: "10" }])).toBe("a")
  })

  const inferred = (rows: ReadonlyArray<Record<string, unknown>>) => {
    const inference = Infer.make()
    rows.forEach(inference.add)
    return Object.fromEntries(inference.fields().map((field) => [field.label, field]))
  }

  it("widens when values disagree: integer and number to number, date and text to text, else json", () => {
    const fields = inferred([
      { _id: "a", n: 1, d: "2024-01-02", t: "x", m: 1, l: [1] },
      { _id: "b", n: 1.5, d: "soon", t: null, m: "one", l: ["a"] }
    ])
    expect(fields["n"]).toMatchObject({ kind: "number", required: true })
    expect(fields["d"]).toMatchObject({ kind: "text", required: true })
    expect(fields["t"]).toMatchObject({ kind: "text", required: false })
    expect(fields["m"]).toMatchObject({ kind: "json" })
    expect(fields["l"]).toMatchObject({ kind: "list", item: "json" })
  })

  it("an impossible date is text; a field only ever null is json and optional", () => {
    const fields = inferred([{ _id: "a", d: "2024-02-30", z: null }])
    expect(fields["d"]?.kind).toBe("text")
    expect(fields["z"]).toMatchObject({ kind: "json", required: false })
  })

  it("widen keeps the first kinds' order and joins a changed kind", () => {
    const before = inferred([{ _id: "a", a: 1, b: "x" }])
    const after = inferred([{ _id: "b", a: "y", c: true }])
    expect(Infer.widen(Object.values(before), Object.values(after)).map((f) => [f.label, f.kind])).toEqual([
      ["a", "json"],
      ["b", "text"],
      ["c", "boolean"]
    ])
  })

  it("a label that is not an identifier is quoted, and the constant's name is one", () => {
    const module = Infer.moduleOf({
      microAppID: "x",
      name: "2 my app",
      rows: 1,
      fields: [{ label: "Due date", kind: "date", required: false }]
    })
    expect(module).toContain(`export const M2MyApp = Microapp.make({`)
    expect(module).toContain(`"Due date": Microapp.date("FIELD_ID_OF:Due date")`)
  })
})
