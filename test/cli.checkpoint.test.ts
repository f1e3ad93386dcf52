/**
 * `microapp rows --output FILE --checkpoint CKPT`, in process: FILE as one uninterrupted run
 * writes it, whatever stopped the runs before; CKPT's refusals. SIGKILL is in `cli.process.test.ts`.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, FastCheck as FC } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { csvRecord, firstFields } from "../src/cli/rowFormats.js"
import { checksum } from "../src/internal/checkpointCodec.js"
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
  return `${text.slice(0, -1)},"checksum":"${checksum(body)}"}\n`
}

/** A scan checkpoint's text with `fields` and a checksum made anew, as `Checkpoint.toJson` writes it. */
const signedScan = (fields: Record<string, unknown>) => {
  const { checksum: _, ...body } = fields
  const text = JSON.stringify(body)
  return `${text.slice(0, -1)},"checksum":"${checksum(body)}"}`
}

/** FILE in `format` with its first `count` rows only, as this command writes such a FILE. */
const cutTo = (format: typeof formats[number], rows: string, count: number) => {
  switch (format) {
    case "ndjson":
      return rows.split("\n").slice(0, count).map((line) => `${line}\n`).join("")
    case "json":
      return `[\n${rows.split("\n").slice(1, count + 1).join("\n").slice(0, -1)}\n]\n`
    case "csv":
      return rows.split("\r\n").slice(0, count + 1).map((line) => `${line}\r\n`).join("")
  }
}

/** `rows --format FORMAT --output FILE --checkpoint CKPT` run to the end: FILE complete, and CKPT saying so. */
const finishedAs = (format: typeof formats[number]) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const dir = yield* temporaryDirectory
    const file = path.join(dir, `out.${format}`)
    const ckpt = path.join(dir, "out.ckpt")
    // as halfDone's: NDJSON by default
    const formatArgs = format === "ndjson" ? [] : ["--format", format]
    const args = rowsArgs(server, [...formatArgs, "--output", file, "--checkpoint", ckpt])
    const run = yield* cli(args)
    expect(run.code, run.stderr).toBe(0)
    const saved = fs.readFileSync(ckpt, "utf8")
    expect(JSON.parse(saved)).toMatchObject({ finished: true })
    return { server, dir, file, ckpt, args, saved, rows: fs.readFileSync(file, "utf8") }
  })

const finished = finishedAs("ndjson")

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

  const oddIds = ["a,b", "q\"uote\"", "crlf\r\nin", "lf\nin", "\"", ",", "plain"]
  const oddTable = {
    microAppID: "000000000000000000000c5v",
    name: "Odd",
    fields: [{ label: "Note", fieldID: "f_note", kind: "text" as const }],
    sortFields: [],
    rows: oddIds.map((id, i) => ({ _id: id, Note: i % 2 === 0 ? "x,\"y\"\r\nz" : "" }))
  }
  layer(MicroappServer.layer({ tables: [oddTable] }), { excludeTestServices: true })("CSV", (it) => {
    it.scoped("a finished CSV FILE's ids are read back whatever they hold (commas, quotes, line ends), and checked", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        const file = path.join(dir, "out.csv")
        const ckpt = path.join(dir, "out.ckpt")
        const args = rowsArgs(server, ["--format", "csv", "--output", file, "--checkpoint", ckpt])
          .map((arg) => arg === projectsMicroAppID ? oddTable.microAppID : arg)
        const first = yield* cli(args)
        expect(first.code, first.stderr).toBe(0)
        const written = fs.readFileSync(file, "utf8")
        expect(written).toContain("\"crlf\r\nin\"")
        const again = yield* cli(args)
        expect(again.code, again.stderr).toBe(0)
        const edits: ReadonlyArray<readonly [string, RegExp]> = [
          // one quote fewer: the id is q"uote
          [written.replace("\"q\"\"uote\"\"\"", "\"q\"\"uote\""), /digest differs/],
          [`${written}"x`, /ends inside a record/],
          [written.replace("\"a,b\"", "\"a,c\""), /digest differs/],
          [written.replace("\"lf\nin\"", "\"lf\r\nin\""), /digest differs/],
          [written.slice(written.indexOf("\r\n") + 2), /does not begin with the header this command writes/],
          [written.slice(0, -2), /ends inside a record/]
        ]
        for (const [text, reason] of edits) {
          fs.writeFileSync(file, text)
          yield* refused(args, file, reason)
        }
      }))
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

    it.scoped.each(formats)(
      "--format %s: a run that fails before its first page (a wrong token) leaves no CKPT, and FILE as it was",
      (format) =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const dir = yield* temporaryDirectory
          const file = path.join(dir, `out.${format}`)
          const ckpt = path.join(dir, "out.ckpt")
          const args = rowsArgs(server, ["--format", format, "--output", file, "--checkpoint", ckpt])
          const typo = args.map((arg) => arg === server.credentials.authToken ? "not-the-token" : arg)
          const failed = yield* cli(typo)
          expect(failed.code, failed.stderr).toBe(3)
          expect(fs.readdirSync(dir)).toEqual([])
          fs.writeFileSync(file, "an earlier export\n")
          const again = yield* cli(typo)
          expect(again.code, again.stderr).toBe(3)
          expect(fs.readdirSync(dir)).toEqual([`out.${format}`])
          expect(fs.readFileSync(file, "utf8")).toBe("an earlier export\n")
          // the command corrected: nothing of the failed runs stands in its way
          const corrected = yield* cli(args)
          expect(corrected.code, corrected.stderr).toBe(0)
          expect(fs.readFileSync(file, "utf8")).toBe(yield* reference(dir, format))
        })
    )

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

    it.scoped("a CKPT that is garbage, cut short, of a future version, tampered, or of another format: each refusal says how to start again", () =>
      Effect.gen(function*() {
        const { args, ckpt, file, saved } = yield* halfDone
        const state = JSON.parse(saved) as Record<string, unknown>
        const scan = JSON.parse(String(state["scan"])) as Record<string, unknown>
        const tampered = scan["state"] as Record<string, unknown>
        const cases: ReadonlyArray<readonly [string, RegExp]> = [
          ["not json at all", /is not a checkpoint of microapp rows/],
          [saved.slice(0, saved.length >> 1), /is not a checkpoint of microapp rows/],
          [JSON.stringify({ ...state, version: 5 }), /is not a checkpoint of microapp rows: .*version 5 is newer/],
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
          const run = yield* refused(args, file, reason)
          expect(run.stderr).toMatch(
            /(remove it|remove \S*out\.ckpt) to start again|to replace it, remove \S*out\.ckpt\n$/
          )
        }
        fs.writeFileSync(ckpt, saved)
        const resumed = yield* cli(args)
        expect(resumed.code, resumed.stderr).toBe(0)
      }))

    it.scoped.each(["unfinished", "finished"] as const)(
      "a CKPT %s serves its own query only: another Microapp, filter, sort, order, page size or format is refused, saying how to start again",
      (which) =>
        Effect.gen(function*() {
          const { args, ckpt, dir, file, rows, saved } = yield* (which === "finished" ? finished : halfDone)
          const swap = (from: string, to: string) => args.map((arg) => arg === from ? to : arg)
          const startAgain =
            `to keep ${file}, give this command another --output and --checkpoint; to replace it, remove ${ckpt}`
          const otherApp = "64b7c0f1a2d3e4f5a6b7c8d9"
          const others: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
            [
              [...args, "--filter", "f_status=Open"],
              "filters (the checkpoint's: none; this scan's: f_status = \"Open\")"
            ],
            [[...args, "--sort", "1"], "sort (the checkpoint's: natural order; this scan's: sort field 1 asc)"],
            [[...args, "--sort", "1", "--order", "desc"], "this scan's: sort field 1 desc"],
            [
              swap(projectsMicroAppID, otherApp),
              `microAppID (the checkpoint's: ${projectsMicroAppID}; this scan's: ${otherApp})`
            ],
            [swap("20", "30"), "pageSize (the checkpoint's: 20; this scan's: 30)"]
          ]
          for (const [other, difference] of others) {
            const run = yield* refused(other, file, /^error: \S*out\.ckpt belongs to another query: /)
            expect(run.stderr).toContain(difference)
            expect(run.stderr).toContain(startAgain)
          }
          for (const format of ["json", "csv"]) {
            const run = yield* refused(
              [...args, "--format", format],
              file,
              new RegExp(`out\\.ckpt was written by --format ndjson, not ${format}: go on with --format ndjson`)
            )
            expect(run.stderr).toContain(startAgain)
          }
          expect(fs.readFileSync(ckpt, "utf8")).toBe(saved)
          expect(fs.readFileSync(file, "utf8")).toBe(rows)
          fs.rmSync(file)
          yield* refused(args, file, /is missing, but .*out\.ckpt records/)
          // as the refusals say: without CKPT, the filtered export replaces FILE
          fs.rmSync(ckpt)
          const filter = ["--filter", "f_status=Open"]
          const filtered = yield* cli([...args, ...filter])
          expect(filtered.code, filtered.stderr).toBe(0)
          expect(fs.readFileSync(file, "utf8")).toBe(yield* reference(dir, "ndjson", filter))
        })
    )

    it.scoped.each(formats)(
      "--format %s: a finished CKPT signed anew over a FILE cut to 40 rows, its counts forged to match, is refused",
      (format) =>
        Effect.gen(function*() {
          const { args, ckpt, file, rows, saved } = yield* finishedAs(format)
          const state = JSON.parse(saved) as Record<string, unknown>
          const scan = JSON.parse(String(state["scan"])) as {
            readonly counters: Record<string, number>
            readonly seen: { readonly held: number; readonly digest: string }
          }
          const all = scan.counters["rows"] ?? 0
          expect(scan.seen.held).toBe(all)
          const cut = cutTo(format, rows, 40)
          fs.writeFileSync(file, cut)
          const forgeries: ReadonlyArray<readonly [Record<string, unknown>, RegExp]> = [
            // as if the scan had read 40 rows: the ids' digest is not theirs
            [
              {
                counters: { ...scan.counters, rows: 40, emitted: 40 },
                seen: { ...scan.seen, held: 40 }
              },
              /as many ids as it counts, but not the same \(their digest differs\)/
            ],
            // as if the rest had been invalid: FILE holds fewer ids than counted
            [
              { counters: { ...scan.counters, rows: 40, invalidRows: all - 40 } },
              new RegExp(`40 ids, but it counts ${all}`)
            ]
          ]
          for (const [changes, reason] of forgeries) {
            const forged = signedScan({ ...scan, ...changes })
            const text = signed({ ...state, length: Buffer.byteLength(cut), scan: forged })
            fs.writeFileSync(ckpt, text)
            const run = yield* refused(args, file, reason)
            expect(run.stderr).toMatch(
              /does not hold the rows .*out\.ckpt counts .*: it was changed since; remove \S*out\.ckpt to start again/
            )
          }
          // and rows added after a finished FILE's end
          fs.writeFileSync(file, rows + (format === "ndjson" ? rows.slice(0, rows.indexOf("\n") + 1) : ""))
          fs.writeFileSync(ckpt, saved)
          if (format === "ndjson") yield* refused(args, file, /holds \d+ bytes, but .*out\.ckpt records \d+/)
        })
    )
  })
})

describe("CSV's first column, read back (what a finished CSV FILE's ids are checked by)", () => {
  // the characters CSV quotes, and some that it does not
  const field = FC.string({ unit: FC.constantFrom(",", "\"", "\r", "\n", "a", "é", " ", "😀") })
  const records = FC.array(FC.array(field, { minLength: 1, maxLength: 4 }), { maxLength: 8 })
  it.prop("each record's first field as csvRecord wrote it, whatever the pieces the text comes in", [
    records,
    FC.array(FC.nat(), { maxLength: 6 })
  ], ([written, cuts]) => {
    const text = written.map(csvRecord).join("")
    const at = [0, ...cuts.map((cut) => cut % (text.length + 1)).sort((a, b) => a - b), text.length]
    const reader = firstFields()
    const read = at.slice(1).flatMap((end, i) => reader.read(text.slice(at[i], end)))
    expect(read).toEqual(written.map((record) => record[0]))
    expect(reader.inRecord()).toBe(false)
  })

  it.prop("text cut inside a record is seen so", [records.filter((written) => written.length > 0), FC.nat()], (
    [written, cut]
  ) => {
    const text = written.map(csvRecord).join("")
    const ends = new Set(written.map((_, i) => written.slice(0, i + 1).map(csvRecord).join("").length))
    const at = 1 + cut % text.length
    const reader = firstFields()
    reader.read(text.slice(0, at))
    expect(reader.inRecord()).toBe(!ends.has(at))
  })
})
