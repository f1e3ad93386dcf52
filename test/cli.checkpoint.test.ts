/**
 * `microapp rows --output FILE --checkpoint CKPT`, in process: FILE as one uninterrupted run
 * writes it, whatever stopped the runs before; CKPT's refusals. SIGKILL is in `cli.process.test.ts`.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import {
  cli,
  halfDone,
  holdFrom,
  idsOf,
  refused,
  requestCount,
  rowsArgs,
  startCli,
  temporaryDirectory,
  untilRequests
} from "./cliSupport.js"
import { eventually } from "./support/eventually.js"

const formats = ["ndjson", "json", "csv"] as const

/** CKPT's text with `fields` and a checksum made anew, as CKPT is written: what only a forger writes. */
const signed = (fields: Record<string, unknown>) => {
  const { checksum: _, ...body } = fields
  const text = JSON.stringify(body, ["kind", "version", "format", "length", "finished", "scan"])
  return `${text.slice(0, -1)},"checksum":"${createHash("sha256").update(text).digest("hex")}"}\n`
}

/** What `rows` writes to FILE with no checkpoint, in one run. */
const reference = (dir: string, format: string, extra: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const file = path.join(dir, `reference.${format}`)
    const run = yield* cli(rowsArgs(server, ["--format", format, "--output", file, ...extra]))
    expect(run.code, run.stderr).toBe(0)
    return fs.readFileSync(file, "utf8")
  })

describe("microapp rows --checkpoint (in process)", () => {
  layer(MicroappServer.layer({ demoRows: 230 }), { excludeTestServices: true })("resumable output", (it) => {
    it.scoped.each(formats)(
      "--format %s: one run writes what a run without it writes; again: nothing to do, no request",
      (format) =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const dir = yield* temporaryDirectory
          const expected = yield* reference(dir, format)
          const file = path.join(dir, `out.${format}`)
          const ckpt = path.join(dir, "out.ckpt")
          const args = rowsArgs(server, ["--format", format, "--output", file, "--checkpoint", ckpt])
          const first = yield* cli(args)
          expect(first.code, first.stderr).toBe(0)
          expect(fs.readFileSync(file, "utf8")).toBe(expected)
          expect(fs.readdirSync(dir).sort()).toEqual([`out.${format}`, "out.ckpt", `reference.${format}`].sort())

          const before = yield* requestCount
          // without --quiet, which would silence the notice
          const again = yield* cli(args.filter((arg) => arg !== "--quiet"))
          expect(again.code, again.stderr).toBe(0)
          expect(again.stderr).toBe(`${file} is already complete: nothing to do\n`)
          expect(yield* requestCount).toBe(before)
          expect(fs.readFileSync(file, "utf8")).toBe(expected)
        }),
      60_000
    )

    it.scoped.each(formats)(
      "--format %s: stopped by SIGINT twice, with a torn line left behind, then resumed: the same bytes",
      (format) =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const dir = yield* temporaryDirectory
          const expected = yield* reference(dir, format)
          const file = path.join(dir, `out.${format}`)
          const ckpt = path.join(dir, "out.ckpt")
          const args = rowsArgs(server, ["--format", format, "--output", file, "--checkpoint", ckpt])
          for (const stopAfter of [3, 5]) {
            const seen = (yield* server.log.requests).length
            const { release } = yield* holdFrom(server, stopAfter)
            const started = yield* startCli(args)
            yield* untilRequests(server, seen + stopAfter)
            expect(yield* started.raise("SIGINT")).toBe(true)
            yield* release
            expect(yield* started.exit).toBe(130)
            // what a process killed in the middle of a write leaves
            fs.appendFileSync(format === "csv" ? `${ckpt}.rows` : file, "{\"_id\":\"64b")
          }
          const last = yield* cli(args)
          expect(last.code, last.stderr).toBe(0)
          expect(fs.readFileSync(file, "utf8")).toBe(expected)
          expect(fs.existsSync(`${ckpt}.rows`)).toBe(false)
        }),
      60_000
    )

    it.scoped("a filter that matches nothing: the same empty FILE as without a checkpoint, in every format", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        for (const format of formats) {
          const filter = ["--filter", "f_status=Nothing"]
          const expected = yield* reference(dir, format, filter)
          const file = path.join(dir, `empty.${format}`)
          const ckpt = path.join(dir, `empty.${format}.ckpt`)
          const run = yield* cli(
            rowsArgs(server, [...filter, "--format", format, "--output", file, "--checkpoint", ckpt])
          )
          expect(run.code, run.stderr).toBe(0)
          expect(fs.readFileSync(file, "utf8")).toBe(expected)
          const again = yield* cli(
            rowsArgs(server, [...filter, "--format", format, "--output", file, "--checkpoint", ckpt])
          )
          expect(again.code, again.stderr).toBe(0)
        }
      }))

    it.scoped(
      "--checkpoint-every N: commits less often, and a resumed run still writes every row once",
      () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const dir = yield* temporaryDirectory
          const expected = yield* reference(dir, "ndjson")
          const file = path.join(dir, "out.ndjson")
          const ckpt = path.join(dir, "out.ckpt")
          const args = rowsArgs(server, ["--output", file, "--checkpoint", ckpt, "--checkpoint-every", "60"])
          const seen = (yield* server.log.requests).length
          const { release } = yield* holdFrom(server, 5)
          const started = yield* startCli(args)
          // stopped once a commit is on disk, and the scan has asked for more
          yield* eventually(Effect.sync(() => fs.existsSync(ckpt)), Boolean)
          yield* untilRequests(server, seen + 5)
          yield* started.raise("SIGINT")
          yield* release
          expect(yield* started.exit).toBe(130)
          // a commit after 60 rows, not after each page of 20: FILE holds a multiple of 60 rows beyond what was committed
          const committed = JSON.parse(fs.readFileSync(ckpt, "utf8")) as { length: number }
          const committedRows = fs.readFileSync(file, "utf8").slice(0, committed.length).split("\n").length - 1
          expect(committedRows % 60).toBe(0)
          expect(committedRows).toBeGreaterThanOrEqual(60)
          const last = yield* cli(args)
          expect(last.code, last.stderr).toBe(0)
          expect(fs.readFileSync(file, "utf8")).toBe(expected)
          expect(new Set(idsOf(expected)).size).toBe(230)
        }),
      60_000
    )
  })

  layer(MicroappServer.layer({ demoRows: 300 }), { excludeTestServices: true })("refusals", (it) => {
    it.scoped("an --output or a CKPT that cannot be written: exit 1, naming the file given, never a temporary one", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        const missing = path.join(dir, "missing")
        for (const format of formats) {
          const plain = yield* cli(rowsArgs(server, ["--format", format, "--output", path.join(missing, "out")]))
          expect(plain.code, plain.stderr).toBe(1)
          expect(plain.stderr).toBe(`error: cannot create ${path.join(missing, "out")}: not found\n`)
        }
        const intoMissing = yield* cli(
          rowsArgs(server, ["--output", path.join(missing, "out"), "--checkpoint", path.join(dir, "c")])
        )
        expect(intoMissing.code, intoMissing.stderr).toBe(1)
        expect(intoMissing.stderr).toBe(`error: cannot write ${path.join(missing, "out")}: not found\n`)
        const ckptInMissing = yield* cli(
          rowsArgs(server, ["--output", path.join(dir, "out"), "--checkpoint", path.join(missing, "c")])
        )
        expect(ckptInMissing.code, ckptInMissing.stderr).toBe(1)
        expect(ckptInMissing.stderr).toBe(`error: cannot create ${path.join(missing, "c")}: not found\n`)
        const intoDirectory = yield* cli(rowsArgs(server, ["--output", dir, "--checkpoint", path.join(dir, "c2")]))
        expect(intoDirectory.code, intoDirectory.stderr).toBe(2)
        expect(intoDirectory.stderr).toBe(`error: Expected path '${dir}' to be a regular file\n`)
      }))

    it.scoped("--checkpoint without --output, and --checkpoint-every without --checkpoint", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        yield* refused(
          rowsArgs(server, ["--checkpoint", path.join(dir, "c")]),
          path.join(dir, "none"),
          /--checkpoint needs --output/
        )
        yield* refused(
          rowsArgs(server, ["--checkpoint-every", "10"]),
          path.join(dir, "none"),
          /--checkpoint-every needs --checkpoint/
        )
      }))

    it.scoped("a CKPT that is garbage, cut short, of a future version, tampered, or of another format", () =>
      Effect.gen(function*() {
        const { args, ckpt, file, saved } = yield* halfDone
        const state = JSON.parse(saved) as Record<string, unknown>
        const scan = JSON.parse(String(state["scan"])) as Record<string, unknown>
        const tampered = scan["state"] as Record<string, unknown>
        const cases: ReadonlyArray<readonly [string, RegExp]> = [
          ["not json at all", /is not a checkpoint of microapp rows/],
          [saved.slice(0, saved.length >> 1), /is not a checkpoint of microapp rows/],
          [JSON.stringify({ ...state, version: 4 }), /is not a checkpoint of microapp rows: .*version 4 is newer/],
          [JSON.stringify({ ...state, length: -1 }), /is not a checkpoint of microapp rows/],
          [JSON.stringify({ ...state, scan: "{}" }), /out\.ckpt: changed or damaged .*checksum does not match/],
          // signed anew, as by a forger: the checks behind the checksum still hold
          [signed({ ...state, scan: "{}" }), /out\.ckpt: /],
          [signed({ ...state, scan: JSON.stringify({ ...scan, version: 99 }) }), /out\.ckpt: version 99 is newer/],
          [
            signed({ ...state, scan: JSON.stringify({ ...scan, state: { ...tampered, position: 0 } }) }),
            /out\.ckpt: /
          ],
          [signed({ ...state, format: "csv" }), /was written by --format csv, not ndjson/],
          [signed({ ...state, length: 1e9 }), /holds \d+ bytes, but .*records 1000000000/],
          // finished over a scan its own checkpoint says is incomplete, and a FILE short of it
          [signed({ ...state, finished: true }), /out\.ckpt: says FILE is complete, but its scan is not/]
        ]
        for (const [text, reason] of cases) {
          fs.writeFileSync(ckpt, text)
          yield* refused(args, file, reason)
        }
        fs.writeFileSync(ckpt, saved)
        const resumed = yield* cli(args)
        expect(resumed.code, resumed.stderr).toBe(0)
      }))

    it.scoped("a CKPT of another query (Microapp, filter, sort, order): refused before any request, FILE untouched", () =>
      Effect.gen(function*() {
        const { args, ckpt, file, server } = yield* halfDone
        const others = [
          ["--filter", "f_status=Open"],
          ["--sort", "1"],
          ["--sort", "1", "--order", "desc"]
        ]
        for (const extra of others) {
          yield* refused([...args, ...extra], file, /out\.ckpt belongs to another query/)
        }
        const otherApp = args.map((arg) => arg === projectsMicroAppID ? "64b7c0f1a2d3e4f5a6b7c8d9" : arg)
        yield* refused(otherApp, file, /out\.ckpt belongs to another query/)
        const otherPageSize = args.map((arg) => arg === "20" ? "30" : arg)
        yield* refused(otherPageSize, file, /out\.ckpt belongs to another query/)
        fs.rmSync(file)
        yield* refused(args, file, /is missing, but .*out\.ckpt records/)
        expect(fs.existsSync(ckpt)).toBe(true)
        expect(server).toBeDefined()
      }))
  })
})
