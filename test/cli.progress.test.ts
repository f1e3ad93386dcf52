/**
 * The live line of the long commands besides `rows`: `mirror` (rows, pages, rate and what the pass
 * does now) and `describe`, drawn on a terminal's stderr only and not with `--quiet`; and the
 * progress `SqlMirror.run` hands its watch, seen at the emulator's requests.
 */
import { LibsqlClient } from "@effect/sql-libsql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Option, Ref } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqlMirror } from "../src/sql/index.js"
import { MicroappServer } from "../src/testing/index.js"
import { cli, flags } from "./cliSupport.js"
import { numbersTable, withEmulator } from "./support.js"

const numbers = "000000000000000000000c02"

/** The progress line's erasure, before each redraw and at the end. */
const clearLine = "\r\u001b[2K"

const tempFile = (name: string) =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "microapp-progress-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    ),
    (dir) => path.join(dir, name)
  )

describe("progress of mirror and describe", () => {
  layer(withEmulator({ tables: [numbersTable(numbers, 120)] }), { excludeTestServices: true })((it) => {
    it.effect("mirror on a terminal: the live line with its phase, erased before the closing line; none piped or quiet", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const db = `file:${yield* tempFile("copy.db")}`
        const args = ["mirror", numbers, "--db", db, "--page-size", "10", "--concurrency", "1", ...flags(server)]
        const run = yield* cli(args, { terminal: { stderr: true } })
        expect(run.code, run.stderr).toBe(0)
        const drawn = run.stderr.split(clearLine)
        expect(drawn[0]).toBe("")
        expect(drawn.length).toBeGreaterThanOrEqual(3)
        for (const line of drawn.slice(1, -1)) {
          expect(line).toMatch(
            /^\d+ rows?, \d+ pages?, (\d+|-) rows\/s, (reading|writing|confirming deletes \(\d+ reads?\))$/
          )
        }
        expect(drawn.at(-1)).toMatch(/^done: inserted 120, [^\r\u001b]+\n$/)

        const piped = yield* cli(args)
        expect(piped.code, piped.stderr).toBe(0)
        expect(piped.stderr).toMatch(/^done: inserted 0, updated 0, deleted 0, unchanged 120, [^\r\u001b]+\n$/)
        const quiet = yield* cli([...args, "--quiet"], { terminal: { stderr: true } })
        expect([quiet.code, quiet.stderr]).toEqual([0, ""])
      }).pipe(Effect.scoped))

    it.effect("describe on a terminal: the live line while it reads, then the module alone on stdout; none quiet", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const args = ["describe", numbers, ...flags(server)]
        const run = yield* cli(args, { terminal: { stderr: true } })
        expect(run.code, run.stderr).toBe(0)
        const drawn = run.stderr.split(clearLine)
        expect(drawn.length).toBeGreaterThanOrEqual(3)
        for (const line of drawn.slice(1, -1)) expect(line).toMatch(/^\d+ rows?, \d+ pages?, (\d+|-) rows\/s$/)
        expect(drawn.at(-1)).toBe("")
        const quiet = yield* cli([...args, "--quiet"], { terminal: { stderr: true } })
        expect([quiet.code, quiet.stderr, quiet.stdout]).toEqual([0, "", run.stdout])
        expect(run.stdout).toContain("Microapp.make(")
      }))

    it.effect("SqlMirror.run's watch: reading at each page's request, confirming deletes at each point read", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const db = `file:${yield* tempFile("watched.db")}`
        const watched = yield* Ref.make(Option.none<Effect.Effect<SqlMirror.Progress>>())
        const seen = yield* Ref.make<ReadonlyArray<readonly [string, SqlMirror.Progress]>>([])
        yield* server.log.onRequest((record) =>
          Effect.flatMap(Ref.get(watched), (progress) =>
            Option.match(progress, {
              onNone: () => Effect.void,
              onSome: (current) =>
                Effect.flatMap(current, (now) => Ref.update(seen, (all) => [...all, [record.path, now] as const]))
            }))
        )
        const pass = SqlMirror.run(
          { microAppID: numbers, pageSize: 30, concurrency: 1 },
          (progress) => (run) => Effect.zipRight(Ref.set(watched, Option.some(progress)), run)
        ).pipe(
          Effect.provide(LibsqlClient.layer({ url: db }))
        )
        yield* pass
        const first = yield* Ref.getAndSet(seen, [])
        expect(first.length).toBeGreaterThanOrEqual(4)
        for (const [path, progress] of first) {
          expect([path, progress.phase]).toEqual(["/api/microappdata", "reading"])
        }
        expect(first.map(([, progress]) => progress.summary.pages)).toEqual(first.map((_, page) => page))

        const [gone] = yield* server.rows.table(numbers)
        yield* server.rows.removeRow(String(gone?._id))
        const summary = yield* pass
        expect(summary.deleted).toBe(1)
        const reads = (yield* Ref.get(seen)).filter(([path]) => path === "/api/microappdata/row")
        // each candidate's read, and the control read of a row the pass saw, which the summary does not count
        expect(reads.length).toBe(summary.reads + 1)
        for (const [, progress] of reads) expect(progress.phase).toBe("confirming deletes")
        yield* server.log.onRequest(() => Effect.void)
      }).pipe(Effect.scoped))
  })
})
