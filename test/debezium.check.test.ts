/**
 * The change events as real consumers take them: three passes of `microapp changes` (a snapshot,
 * then inserts, updates and deletes between passes, the second pass killed with SIGKILL in its
 * middle and resumed), and the same passes through the library's builder, handed to
 * `debezium-check` (Flink's `debezium-json`, Kafka Connect's `JsonConverter` with Debezium's sink
 * layer and `ExtractNewRecordState`), which must take every event and end with the service's table.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Debezium } from "../src/debezium/index.js"
import { Changes, MicroappClient } from "../src/index.js"
import type { Row } from "../src/Row.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { changesArgs, cli, holdFrom, root, temporaryDirectory, untilRequests } from "./cliSupport.js"
import { bin, cleanEnv, outputOf } from "./processSupport.js"
import { loginLayer } from "./support.js"

/** The checker: beside the repository (as CI clones it), or beside the folder of its worktrees. */
const checker = ["../shared", "../../shared"].map((shared) => path.resolve(root, shared, "tools/debezium-check/check"))
  .find((file) => fs.existsSync(file))

const java = spawnSync("java", ["-version"], { encoding: "utf8" })

const skipped = checker === undefined
  ? "debezium-check is not beside the repository (../shared/tools/debezium-check)"
  : java.status !== 0
  ? "java (17) is not on PATH"
  : undefined

if (skipped !== undefined) console.warn(`debezium.check.test.ts skipped: ${skipped}`)

/** The fields compared, with Flink's types: text, numbers (Budget integer or not), a boolean and a cross-app value as its JSON. */
const fields = "Name:STRING,Status:STRING,Budget:DOUBLE,Priority:BIGINT,Approved:BOOLEAN,Owner:STRING"

/** The checker's verdict on `files` in `mode`, against the table as the service holds it now. */
const check = (mode: string, dir: string, files: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const expected = path.join(dir, `expected-${mode}.ndjson`)
    const table = yield* server.rows.table(projectsMicroAppID)
    fs.writeFileSync(expected, table.map((row) => `${JSON.stringify(row)}\n`).join(""))
    const run = spawnSync(checker ?? "", [mode, fields, expected, ...files], { encoding: "utf8" })
    // the verdict is the last line of standard output, and the exit code: Flink's classes also log to standard error
    return { code: run.status, stdout: run.stdout }
  })

let generation = 0

/** Inserts, updates (a Budget made fractional, a Status, an Owner cleared) and deletes, between two passes. */
const changeTable = Effect.gen(function*() {
  generation++
  const server = yield* MicroappServer
  const ids = (yield* server.rows.table(projectsMicroAppID)).map((row) => String(row._id))
  const at = (i: number) => ids[(i * 37 + generation) % ids.length] ?? ""
  for (let i = 0; i < 12; i++) {
    yield* server.rows.updateRow(at(i), {
      Name: `changed ${i} ${generation}`,
      Budget: i % 2 === 0 ? 1000 + i + 0.25 : 2000 + i,
      Status: "Done",
      ...(i % 3 === 0 ? { Owner: null } : {})
    })
  }
  for (let i = 12; i < 18; i++) yield* server.rows.removeRow(at(i))
  for (let n = 0; n < 5; n++) {
    yield* server.rows.insertRow(projectsMicroAppID, { Name: `new ${generation} ${n}`, Budget: n, Priority: n }, {
      index: n * 40
    })
  }
})

/**
 * A pass of the built bin killed with SIGKILL while the emulator holds its seventh request (of
 * 300 rows in pages of 25, about half are left whatever the machine's speed), then run to its end in process.
 */
const killedPass = (state: string, output: string, extra: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const seen = (yield* server.log.requests).length
    const { release } = yield* holdFrom(server, 7)
    const child = spawn(process.execPath, [bin, ...changesArgs(server, state, output, ["--quiet", ...extra], 25)], {
      env: cleanEnv,
      stdio: "pipe"
    })
    const said = outputOf(child)
    child.stdin.end()
    yield* untilRequests(server, seen + 7)
    child.kill("SIGKILL")
    yield* Effect.async<void>((resume) => {
      if (child.exitCode !== null || child.signalCode !== null) resume(Effect.void)
      else child.once("exit", () => resume(Effect.void))
    })
    expect(child.signalCode, said.stderr).toBe("SIGKILL")
    yield* release
    const run = yield* cli(changesArgs(server, state, output, ["--quiet", ...extra], 25))
    expect(run.code, run.stderr).toBe(0)
  })

/**
 * A pipeline of the library's own: `client.changes` over a baseline of whole rows it keeps in
 * memory, each change written by `Debezium.event` as `key<TAB>value` with `schemas`, a tombstone
 * after each delete: what a Kafka producer would send.
 */
const libraryPass = (keeper: { rows: Map<string, Row>; fields: ReadonlyArray<Debezium.Field> }, file: string) =>
  Effect.gen(function*() {
    const client = yield* MicroappClient
    const fingerprints = new Map(Array.from(keeper.rows, ([id, row]) => [id, Changes.fingerprint(row)]))
    const pass = yield* client.changes({
      microAppID: projectsMicroAppID,
      baseline: Changes.Baseline.fromMap(fingerprints)
    })
    const snapshot = keeper.rows.size === 0
    const source = { name: "microapp", db: "library", schema: projectsMicroAppID, table: "projects", version: "test" }
    let text = ""
    yield* Stream.runForEach(pass.pages, (page) =>
      Effect.sync(() => {
        const befores = new Map(page.changes.flatMap((change) => {
          const before = keeper.rows.get(change.id)
          return change._tag === "Inserted" || before === undefined ? [] : [[change.id, before] as const]
        }))
        keeper.fields = Debezium.widen(keeper.fields, [
          ...page.changes.flatMap((change) => change._tag === "Deleted" ? [] : [change.row]),
          ...befores.values()
        ])
        for (const change of page.changes) {
          const options = {
            source,
            fields: keeper.fields,
            marker: snapshot ? "true" as const : "false" as const,
            before: befores.get(change.id),
            seenAt: Date.now(),
            writtenAt: BigInt(Date.now()) * 1_000_000n,
            schemas: true
          }
          const message = Debezium.event(change, options)
          text += `${message.key}\t${message.value}\n`
          if (change._tag === "Deleted") {
            text += `${Debezium.tombstone(change.id, options).key}\t\n`
            keeper.rows.delete(change.id)
          } else keeper.rows.set(change.id, change.row)
        }
      }))
    fs.writeFileSync(file, text)
  })

describe.skipIf(skipped !== undefined)(`debezium-check${skipped === undefined ? "" : ` (skipped: ${skipped})`}`, () => {
  layer(MicroappServer.layer({ demoRows: 300 }), { excludeTestServices: true })("three passes", (it) => {
    it.scoped(
      "plain, --schemas and --schemas --key files, and the library's: every event taken as is, the table the service's",
      () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const dir = yield* temporaryDirectory
          const formats = { plain: [], schemas: ["--schemas"], keyed: ["--schemas", "--key"] } as const
          const files: Record<keyof typeof formats | "library", Array<string>> = {
            plain: [],
            schemas: [],
            keyed: [],
            library: []
          }
          const keeper = { rows: new Map<string, Row>(), fields: [] as ReadonlyArray<Debezium.Field> }
          for (const passNumber of [1, 2, 3]) {
            for (const [name, extra] of Object.entries(formats)) {
              const state = path.join(dir, `${name}.state`)
              const output = path.join(dir, `${name}-${passNumber}.ndjson`)
              if (passNumber === 2) yield* killedPass(state, output, extra)
              else {
                const run = yield* cli(changesArgs(server, state, output, ["--quiet", ...extra], 25))
                expect(run.code, run.stderr).toBe(0)
              }
              files[name as keyof typeof formats].push(output)
            }
            const library = path.join(dir, `library-${passNumber}.ndjson`)
            yield* libraryPass(keeper, library).pipe(Effect.provide(loginLayer(server)))
            files.library.push(library)
            if (passNumber < 3) yield* changeTable
          }
          const verdicts = {
            flink: yield* check("flink", dir, files.plain),
            "flink-s": yield* check("flink-s", dir, files.schemas),
            "connect-s": yield* check("connect-s", dir, files.schemas),
            "flink-s keyed": yield* check("flink-s", dir, files.keyed),
            "connect-s keyed": yield* check("connect-s", dir, files.keyed),
            "connect-s library": yield* check("connect-s", dir, files.library),
            "flink-s library": yield* check("flink-s", dir, files.library)
          }
          for (const [mode, verdict] of Object.entries(verdicts)) {
            expect(verdict.code, `${mode}: ${verdict.stdout}`).toBe(0)
            expect(verdict.stdout, mode).toMatch(
              /0 (refused|events not taken); table \d+ rows against \d+ expected: 0 missing, 0 extra, 0 differ: TAKEN AS IS\n$/
            )
          }
          // the passes changed rows: updates and deletes reached the consumers
          expect(verdicts["connect-s keyed"].stdout).toMatch(/x op=u: unwrapped/)
          expect(verdicts["connect-s keyed"].stdout).toMatch(/x op=d: unwrapped, __deleted=true/)
          expect(verdicts["flink-s keyed"].stdout).toMatch(/x emitted -U \+U/)
        }),
      300_000
    )
  })
})
