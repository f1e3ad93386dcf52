import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option, Ref } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { mirror, type Sink } from "../scratchpad/pipeline.js"
import { closeOne } from "../scratchpad/projects.js"
import { openRows } from "../scratchpad/scan.js"
import { rename } from "../scratchpad/updateRow.js"
import { Checkpoint, MicroappClient, type Row } from "../src/index.js"
import { MicroappServer, peopleMicroAppID, projectsMicroAppID } from "../src/testing/index.js"
import { bundled } from "./processSupport.js"
import { withEmulator } from "./support.js"

const root = path.resolve(import.meta.dirname, "..")
const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
const docs = fs.readdirSync(path.join(root, "docs")).filter((file) => file.endsWith(".md"))
  .map((file) => fs.readFileSync(path.join(root, "docs", file), "utf8"))

/** The TypeScript blocks of the README and of docs/, each with the file it says it quotes. */
const blocks = [readme, ...docs].flatMap((page) =>
  [...page.matchAll(/(?:<!-- (scratchpad\/[\w-]+\.ts) -->\n)?```ts\n([\s\S]*?)```/g)]
    .map(([, file, code]) => ({ file, code: code ?? "" }))
)

/** A scratchpad file as a user of the package writes it: no leading doc comment, imports by package name. */
const asQuoted = (source: string) =>
  source.replace(/^\/\*\*[\s\S]*?\*\/\n/, "")
    .replaceAll(`"../src/index.js"`, `"effect-microapp"`)
    .replaceAll(`"../src/testing/index.js"`, `"effect-microapp/testing"`)
    .replaceAll(`"../src/sql/index.js"`, `"effect-microapp/sql"`)
    .replaceAll(`"../src/workflow/index.js"`, `"effect-microapp/workflow"`)
    .replaceAll(`"../src/debezium/index.js"`, `"effect-microapp/debezium"`)

const runnable = fs.readdirSync(path.join(root, "scratchpad"))
  .filter((file) => file.endsWith(".ts"))
  .filter((file) => fs.readFileSync(path.join(root, "scratchpad", file), "utf8").includes("NodeRuntime.runMain"))
  // the fleet needs a PostgreSQL and runs until stopped: workflow.failover.test.ts runs it
  .filter((file) => !file.startsWith("fleet"))

const bundle = (file: string) => bundled(file, "readme")

describe("the README's examples", () => {
  it("are files of scratchpad/ (which npm run check compiles), quoted exactly", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(8)
    for (const { code, file } of blocks) {
      expect(file, `a ts block without its file:\n${code.slice(0, 200)}`).toBeDefined()
      const source = fs.readFileSync(path.join(root, file ?? ""), "utf8")
      expect(code, `${file} differs from the README's block`).toBe(asQuoted(source))
    }
  })

  it("the quick start's command runs as written, with nothing but the project's dependencies", async () => {
    const page = fs.readFileSync(path.join(root, "docs", "quickstart.md"), "utf8")
    const commands = [...page.matchAll(/`(npx [^`]+)`/g)].map(([, command]) => command ?? "")
    expect(commands).toEqual(["npx tsx scratchpad/quickstart.ts"])
    for (const command of commands) {
      // --no: a package the project does not have fails at once instead of prompting to install it
      const [, ...args] = command.split(" ")
      const { stdout } = await promisify(execFile)("npx", ["--no", ...args], { timeout: 90_000, cwd: root })
      expect(stdout).toContain("rows in the table: ")
    }
  })

  it.each(runnable)("scratchpad/%s runs to the end against the emulator", async (file) => {
    const outfile = bundle(file)
    // in a directory of its own, for the files an example writes (the SQLite mirror's database)
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "microapp-readme-"))
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [outfile], { timeout: 60_000, cwd })
      expect(stdout.trim()).not.toBe("")
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true })
    }
  }, 90_000)

  it.live("the first example counts the open rows of a Microapp of the service its environment names", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const client = yield* MicroappClient
      const open = yield* client.collect({
        microAppID: projectsMicroAppID,
        filters: [{ fieldID: "f_status", value: "Open" }],
        max: 10_000
      })
      const env = {
        ...process.env,
        MICROAPP_BASE_URL: server.baseUrl,
        MICROAPP_AUTH_TOKEN: server.credentials.authToken,
        MICROAPP_USER_ID: server.credentials.userId,
        MICROAPP_ID: projectsMicroAppID
      }
      const outfile = bundle("realService.ts")
      const { stdout } = yield* Effect.promise(() =>
        promisify(execFile)(process.execPath, [outfile], { timeout: 60_000, env })
      )
      expect(open.length).toBeGreaterThan(0)
      expect(stdout.trim()).toBe(`open rows: ${open.length}`)
      const refused = yield* Effect.promise(() =>
        promisify(execFile)(process.execPath, [outfile], {
          timeout: 60_000,
          env: { ...env, MICROAPP_AUTH_TOKEN: "wrong" }
        })
      )
      expect(refused.stderr.trim()).toBe("the token was refused: log in again")
    }).pipe(Effect.provide(withEmulator({ demoRows: 1200 }))))

  it("runs quickstart, typed, updateMany and mirrorSqlite at least", () => {
    expect(runnable).toEqual(expect.arrayContaining(["quickstart.ts", "typed.ts", "updateMany.ts", "mirrorSqlite.ts"]))
  })
})

describe("the README as a newcomer reads it", () => {
  it("is at most 300 lines, starts with the two commands, and links every page of docs/", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(300)
    expect(readme).toMatch(/^# effect-microapp\n\n```sh\nnpm install && npm start .*\nnpm test /)
    const pages = fs.readdirSync(path.join(root, "docs")).filter((file) => file.endsWith(".md") && file !== "index.md")
    expect(pages.length).toBeGreaterThanOrEqual(10)
    for (const page of pages) expect(readme, page).toContain(`](docs/${page})`)
  })

  it("every install line names the Effect 3 version of each Effect package it installs", () => {
    const lines = [readme, ...docs].flatMap((page) => page.split("\n").filter((line) => /^npm install /.test(line)))
    expect(lines.length).toBeGreaterThanOrEqual(3)
    for (const line of lines) {
      const packages = line.replace(/#.*$/, "").split(/\s+/).slice(2).filter((word) => !word.startsWith("-"))
      for (const name of packages.filter((word) => /^(effect(@|$)|@effect\/)/.test(word))) {
        expect(name, line).toMatch(/@[~^]?\d/)
      }
    }
  })
})

describe("install lines that work before the package is published", () => {
  it("every line that installs effect-microapp from the registry says it works once published", () => {
    const lines = [readme, ...docs].flatMap((page) => page.split("\n").filter((line) => /^npm install /.test(line)))
    const fromRegistry = lines.filter((line) => /\seffect-microapp(\s|$)/.test(line.replace(/#.*$/, "")))
    expect(fromRegistry.length).toBeGreaterThan(0)
    for (const line of fromRegistry) expect(line).toMatch(/# once published/)
    // the tarball `npm pack` names after the version, in the clone beside the project
    const { version } = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"))
    const fromTarball = lines.filter((line) => /\.tgz\s/.test(line.replace(/#.*$/, "")))
    expect(fromTarball.length).toBeGreaterThanOrEqual(4)
    for (const line of fromTarball) expect(line).toContain(` ../effect-microapp/effect-microapp-${version}.tgz `)
  })
})

describe("the README's library examples, against the emulator", () => {
  it.layer(withEmulator({ demoRows: 600 }, { pageSize: 100 }))((it) => {
    it.effect("openRows hands every open project to the caller and returns the summary", () =>
      Effect.gen(function*() {
        const seen = yield* Ref.make<ReadonlyArray<Row.Row>>([])
        const summary = yield* openRows(projectsMicroAppID, (row) => Ref.update(seen, (rows) => [...rows, row]))
        const rows = yield* Ref.get(seen)
        const client = yield* MicroappClient
        const expected = yield* client.collect({
          microAppID: projectsMicroAppID,
          filters: [{ fieldID: "f_status", value: "Open" }],
          max: 10_000
        })
        expect(rows.length).toBe(expected.length)
        expect(rows.length).toBeGreaterThan(0)
        expect(rows.every((row) => row["Status"] === "Open")).toBe(true)
        expect(summary.rows).toBe(rows.length)
        expect(summary.complete).toBe(true)
      }))

    it.effect("rename sets the name and budget and clears the owner", () =>
      Effect.gen(function*() {
        const client = yield* MicroappClient
        const [row] = yield* client.query({ microAppID: projectsMicroAppID, limit: 1 })
        if (row === undefined) return expect(row).toBeDefined()
        yield* rename(row._id)
        const after = yield* client.getRow(row._id)
        expect(after["Name"]).toBe("New name")
        expect(after["Budget"]).toBe(1200)
        expect(after["Owner"] ?? null).toBe(null)
      }))

    it.effect("closeOne closes the project, then fails InvalidInput on the misspelt label, unsent", () =>
      Effect.gen(function*() {
        const client = yield* MicroappClient
        const server = yield* MicroappServer
        const [row] = yield* client.query({ microAppID: projectsMicroAppID, limit: 1 })
        if (row === undefined) return expect(row).toBeDefined()
        const updates = Effect.map(
          server.log.requests,
          (log) => log.filter((record) => record.path === "/api/updatemicroapprow").length
        )
        const before = yield* updates
        const exit = yield* Effect.exit(closeOne(row._id))
        expect(yield* updates).toBe(before + 1)
        const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
        expect(error?._tag).toBe("InvalidInput")
        expect(error?.message).toContain("Nmae")
        const after = yield* client.getRow(row._id)
        expect(after["Status"]).toBe("Done")
        expect(after["Due"]).toBe("2031-07-14")
      }))

    it.effect("mirror commits every row with its checkpoint, and a second run resumes complete with nothing", () =>
      Effect.gen(function*() {
        const stored = yield* Ref.make<{ rows: Map<string, Row.Row>; checkpoint: Option.Option<string> }>({
          rows: new Map(),
          checkpoint: Option.none()
        })
        const commits = yield* Ref.make(0)
        const sink: Sink<never, never> = {
          loadCheckpoint: Ref.get(stored).pipe(Effect.map((state) => state.checkpoint)),
          insert: (rows) =>
            Ref.update(stored, (state) => ({
              ...state,
              rows: new Map([...state.rows, ...rows.map((row) => [row._id, row] as const)])
            })),
          saveCheckpoint: (json) => Ref.update(stored, (state) => ({ ...state, checkpoint: Option.some(json) })),
          withTransaction: (effect) => Effect.zipLeft(effect, Ref.update(commits, (n) => n + 1))
        }
        const first = yield* mirror(peopleMicroAppID, sink)
        const afterFirst = yield* Ref.get(stored)
        const client = yield* MicroappClient
        const everyone = yield* client.collect({ microAppID: peopleMicroAppID, max: 10_000 })
        expect(afterFirst.rows.size).toBe(everyone.length)
        expect(first.rows).toBe(everyone.length)
        expect(first.complete).toBe(true)
        const checkpoint = yield* Checkpoint.fromJson(Option.getOrThrow(afterFirst.checkpoint))
        expect(checkpoint.summary.complete).toBe(true)
        const pagesCommitted = yield* Ref.get(commits)
        expect(pagesCommitted).toBeGreaterThan(1)

        const again = yield* mirror(peopleMicroAppID, sink)
        expect(again.complete).toBe(true)
        expect(again.resumed).toBe(1)
        expect(yield* Ref.get(commits)).toBe(pagesCommitted)
      }))

    it.effect("mirror, crashed after two commits, resumes and stores each row exactly once", () =>
      Effect.gen(function*() {
        const inserts = new Map<string, number>()
        const checkpoint = yield* Ref.make(Option.none<string>())
        const commits = yield* Ref.make(0)
        const crashAfter = (limit: number): Sink<string, never> => ({
          loadCheckpoint: Ref.get(checkpoint),
          insert: (rows) =>
            Effect.sync(() => {
              for (const row of rows) inserts.set(row._id, (inserts.get(row._id) ?? 0) + 1)
            }),
          saveCheckpoint: (json) => Ref.set(checkpoint, Option.some(json)),
          // a transaction: the page's inserts count only if it commits
          withTransaction: (effect) =>
            Effect.gen(function*() {
              const before = new Map(inserts)
              const committed = yield* Ref.get(checkpoint)
              const n = yield* Ref.get(commits)
              if (n >= limit) {
                yield* effect
                inserts.clear()
                for (const [id, count] of before) inserts.set(id, count)
                yield* Ref.set(checkpoint, committed)
                return yield* Effect.fail("crash")
              }
              const result = yield* effect
              yield* Ref.set(commits, n + 1)
              return result
            })
        })
        const crashed = yield* Effect.flip(mirror(projectsMicroAppID, crashAfter(2)))
        expect(crashed).toBe("crash")
        expect(inserts.size).toBe(200)
        const summary = yield* mirror(projectsMicroAppID, crashAfter(Infinity))
        const client = yield* MicroappClient
        const all = yield* client.collect({ microAppID: projectsMicroAppID, max: 10_000 })
        expect(inserts.size).toBe(all.length)
        expect([...inserts.values()].every((count) => count === 1)).toBe(true)
        expect(summary.rows).toBe(all.length)
        expect(summary.resumed).toBe(1)
      }))
  })
})
