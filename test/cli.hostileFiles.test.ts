/**
 * `microapp rows --output FILE --checkpoint CKPT` among files that are not as the last run left
 * them: a CKPT edited, damaged or huge, a FILE changed under it, modes to keep, two runs at once,
 * a CKPT that cannot be written. Every refusal is one line, before any request, FILE untouched.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { checkpointFileLimit } from "../src/cli/checkpointed.js"
import { MicroappServer } from "../src/testing/index.js"
import {
  cli,
  halfDone,
  idsOf,
  referenceRows,
  refused,
  requestCount,
  root,
  rowsArgs,
  startCli,
  temporaryDirectory
} from "./cliSupport.js"
import { cleanEnv, endOf, runToEnd } from "./processSupport.js"
import { eventually } from "./support/eventually.js"

type CkptFields = Record<string, unknown>

const fieldsOf = (text: string) => JSON.parse(text) as CkptFields

/** A directory holding what one run without a checkpoint writes, and the arguments of a checkpointed run into it. */
const anExport = Effect.gen(function*() {
  const server = yield* MicroappServer
  const dir = yield* temporaryDirectory
  const expected = yield* referenceRows(dir)
  const file = path.join(dir, "out.ndjson")
  const ckpt = path.join(dir, "out.ckpt")
  return { server, dir, expected, file, ckpt, args: rowsArgs(server, ["--output", file, "--checkpoint", ckpt]) }
})

const modeOf = (file: string) => fs.statSync(file).mode & 0o777

/** A pid no process has: one that has just ended. */
const deadPid = () => {
  const ended = spawnSync(process.execPath, ["-e", ""])
  return ended.pid
}

const isRoot = process.getuid?.() === 0

describe("microapp rows --checkpoint, among hostile files", () => {
  layer(MicroappServer.layer({ demoRows: 300 }), { excludeTestServices: true })("CKPT edited or damaged", (it) => {
    const edits: ReadonlyArray<readonly [string, (fields: CkptFields) => CkptFields | string]> = [
      ["length 0", (fields) => ({ ...fields, length: 0 })],
      ["length 100 bytes short", (fields) => ({ ...fields, length: Number(fields["length"]) - 100 })],
      ["finished: true", (fields) => ({ ...fields, finished: true })],
      ["a key added", (fields) => ({ ...fields, note: "edited" })],
      ["the checksum removed", ({ checksum: _, ...fields }) => fields],
      ["one digit of the checksum changed", (fields) => ({
        ...fields,
        checksum: String(fields["checksum"]).replace(/^./, (c) => c === "0" ? "1" : "0")
      })],
      ["written before CKPT had a checksum (version 1)", ({ checksum: _, ...fields }) => ({ ...fields, version: 1 })],
      ["nested 100,000 deep", () => `${"[".repeat(100_000)}${"]".repeat(100_000)}`],
      [
        "its checkpoint nested 3,000 deep",
        (fields) => ({ ...fields, scan: JSON.parse(`${"[".repeat(3_000)}${"]".repeat(3_000)}`) })
      ],
      [
        "a byte of the text flipped",
        (fields) => JSON.stringify(fields).replace("\"finished\":false", "\"finished\":true ")
      ]
    ]

    it.scoped("each edit is refused (exit 2, one line naming CKPT); restored, CKPT resumes to every row once", () =>
      Effect.gen(function*() {
        const { args, ckpt, dir, file, saved } = yield* halfDone
        const expected = yield* referenceRows(dir)
        for (const [name, edit] of edits) {
          const edited = edit(fieldsOf(saved))
          fs.writeFileSync(ckpt, typeof edited === "string" ? edited : JSON.stringify(edited))
          const run = yield* refused(args, file, /out\.ckpt/)
          expect(run.stderr, name).toMatch(/out\.ckpt/)
        }
        fs.writeFileSync(ckpt, saved)
        const resumed = yield* cli(args)
        expect(resumed.code, resumed.stderr).toBe(0)
        expect(fs.readFileSync(file, "utf8")).toBe(expected)
      }))

    it.scoped("a FILE changed under CKPT: cut short, shifted by a byte, or gone once complete: refused", () =>
      Effect.gen(function*() {
        const { args, ckpt, file, rows, saved } = yield* halfDone
        const length = Number(fieldsOf(saved)["length"])
        fs.writeFileSync(file, rows.slice(0, length - 100))
        yield* refused(args, file, /out\.ndjson holds \d+ bytes, but .*out\.ckpt records/)
        // as long as ever, but not what this run wrote: its last committed row does not end where CKPT says
        fs.writeFileSync(file, ` ${rows}`)
        yield* refused(args, file, /out\.ndjson does not end a row at byte \d+, where .*out\.ckpt/)
        fs.writeFileSync(file, rows)
        const resumed = yield* cli(args)
        expect(resumed.code, resumed.stderr).toBe(0)
        fs.rmSync(file)
        yield* refused(args, file, /out\.ndjson is missing, but .*out\.ckpt/)
        expect(fs.readFileSync(ckpt, "utf8")).not.toBe(saved)
      }))

    it.scoped("a CKPT too large to be one: refused without reading it", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        const file = path.join(dir, "out.ndjson")
        const ckpt = path.join(dir, "out.ckpt")
        const args = rowsArgs(server, ["--output", file, "--checkpoint", ckpt])
        // sparse: no disk used, and a reader would allocate all of it
        fs.writeFileSync(ckpt, "")
        fs.truncateSync(ckpt, checkpointFileLimit + 1)
        yield* refused(
          args,
          file,
          new RegExp(`out\\.ckpt is too large to be a checkpoint of microapp rows: ${checkpointFileLimit + 1} bytes`)
        )
      }))
  })

  layer(MicroappServer.layer({ demoRows: 300 }), { excludeTestServices: true })("modes", (it) => {
    it.scoped("a FILE replaced whole keeps its mode, in every format, with or without a checkpoint", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const dir = yield* temporaryDirectory
        for (const format of ["ndjson", "json", "csv"]) {
          const file = path.join(dir, `out.${format}`)
          fs.writeFileSync(file, "old", { mode: 0o600 })
          fs.chmodSync(file, 0o600)
          const run = yield* cli(rowsArgs(server, ["--format", format, "--output", file]))
          expect(run.code, run.stderr).toBe(0)
          expect(modeOf(file), format).toBe(0o600)
        }
        const csv = path.join(dir, "checkpointed.csv")
        fs.writeFileSync(csv, "old")
        fs.chmodSync(csv, 0o640)
        const run = yield* cli(
          rowsArgs(server, ["--format", "csv", "--output", csv, "--checkpoint", path.join(dir, "csv.ckpt")])
        )
        expect(run.code, run.stderr).toBe(0)
        expect(modeOf(csv)).toBe(0o640)
      }))

    it.scoped("a new CKPT is private (0600); an existing one keeps its mode", () =>
      Effect.gen(function*() {
        const { args, ckpt } = yield* halfDone
        expect(modeOf(ckpt)).toBe(0o600)
        fs.chmodSync(ckpt, 0o640)
        const resumed = yield* cli(args)
        expect(resumed.code, resumed.stderr).toBe(0)
        expect(modeOf(ckpt)).toBe(0o640)
      }))
  })

  layer(MicroappServer.layer({ demoRows: 300 }), { excludeTestServices: true })("two runs at once", (it) => {
    it.scoped("a second run on the same CKPT, or the same FILE, is refused naming the lock and its pid", () =>
      Effect.gen(function*() {
        const { args, ckpt, dir, expected, file, server } = yield* anExport
        yield* server.configure({ latency: Duration.millis(20) })
        const first = yield* startCli(args)
        yield* eventually(Effect.sync(() => fs.existsSync(ckpt)), Boolean)
        const sameCkpt = yield* cli(rowsArgs(server, ["--output", path.join(dir, "other"), "--checkpoint", ckpt]))
        expect(sameCkpt.code, sameCkpt.stderr).toBe(2)
        expect(sameCkpt.stderr).toBe(
          `error: ${ckpt} is in use by another run (pid ${process.pid} on ${os.hostname()}, ` +
            `lock ${ckpt}.lock): wait for it to end\n`
        )
        expect(fs.existsSync(path.join(dir, "other"))).toBe(false)
        const sameFile = yield* cli(rowsArgs(server, ["--output", file, "--checkpoint", path.join(dir, "c2")]))
        expect(sameFile.code, sameFile.stderr).toBe(2)
        expect(sameFile.stderr).toMatch(new RegExp(`${file} is in use by another run \\(pid ${process.pid} `))
        expect(fs.existsSync(path.join(dir, "c2"))).toBe(false)
        yield* server.configure({ latency: Duration.zero })
        expect(yield* first.exit).toBe(0)
        expect(fs.readFileSync(file, "utf8")).toBe(expected)
        expect(fs.readdirSync(dir).sort()).toEqual(["out.ckpt", "out.ndjson", "reference.ndjson"])
      }))

    it.scoped("a lock left by a run that died (or by an earlier process of this pid) is taken over; one of another host, or not a lock, is refused", () =>
      Effect.gen(function*() {
        const { args, ckpt, dir, expected, file } = yield* anExport
        fs.writeFileSync(`${ckpt}.lock`, `${deadPid()} elsewhere.example 1\n`)
        yield* refused(
          args,
          file,
          new RegExp(
            `out\\.ckpt is in use by another run \\(pid \\d+ on elsewhere\\.example, lock .*out\\.ckpt\\.lock\\)`
          )
        )
        fs.writeFileSync(`${ckpt}.lock`, "not a lock")
        yield* refused(args, file, /out\.ckpt\.lock is not a lock of microapp: remove it if no run uses .*out\.ckpt/)
        // a directory, or a FIFO that a reader would wait on forever
        fs.rmSync(`${ckpt}.lock`)
        fs.mkdirSync(`${ckpt}.lock`)
        yield* refused(args, file, /out\.ckpt\.lock is not a lock of microapp: not a regular file/)
        fs.rmdirSync(`${ckpt}.lock`)
        fs.writeFileSync(`${ckpt}.lock`, `${deadPid()} ${os.hostname()} 1\n`)
        // this pid, but not this process's lock: an earlier process with the same pid left it
        fs.writeFileSync(`${file}.lock`, `${process.pid} ${os.hostname()} 1\n`)
        const run = yield* cli(args)
        expect(run.code, run.stderr).toBe(0)
        expect(fs.readFileSync(file, "utf8")).toBe(expected)
        expect(fs.readdirSync(dir).sort()).toEqual(["out.ckpt", "out.ndjson", "reference.ndjson"])
      }))
  })

  layer(MicroappServer.layer({ demoRows: 100 }), { excludeTestServices: true })(
    "a CKPT that cannot be written",
    (it) => {
      /** Runs `args`; expects exit 1 with one line matching `line`, no request sent and FILE never created. */
      const failsBeforeAnything = (args: ReadonlyArray<string>, file: string, line: string | RegExp) =>
        Effect.gen(function*() {
          const sent = yield* requestCount
          const run = yield* cli(args)
          expect(run.code, run.stderr).toBe(1)
          if (typeof line === "string") expect(run.stderr).toBe(`${line}\n`)
          else expect(run.stderr).toMatch(line)
          expect(yield* requestCount).toBe(sent)
          expect(fs.existsSync(file)).toBe(false)
        })

      it.scoped("CKPT in a directory that does not exist, or under a regular file: exit 1 before any request", () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const dir = yield* temporaryDirectory
          const file = path.join(dir, "out.ndjson")
          const missing = path.join(dir, "missing", "out.ckpt")
          yield* failsBeforeAnything(
            rowsArgs(server, ["--output", file, "--checkpoint", missing]),
            file,
            `error: cannot create ${missing}: not found`
          )
          const regular = path.join(dir, "regular")
          fs.writeFileSync(regular, "")
          const underFile = path.join(regular, "out.ckpt")
          yield* failsBeforeAnything(
            rowsArgs(server, ["--output", file, "--checkpoint", underFile]),
            file,
            // the flag's own check (@effect/cli's) finds it first
            new RegExp(`^error: .*ENOTDIR: not a directory, access '${underFile}'\n$`)
          )
        }))

      it.scoped.skipIf(process.platform !== "linux")(
        "CKPT where not even root can create a file (/proc): exit 1 before any request",
        () =>
          Effect.gen(function*() {
            const server = yield* MicroappServer
            const dir = yield* temporaryDirectory
            const file = path.join(dir, "out.ndjson")
            const ckpt = `/proc/microapp-${process.pid}.ckpt`
            yield* failsBeforeAnything(
              rowsArgs(server, ["--output", file, "--checkpoint", ckpt]),
              file,
              `error: cannot create ${ckpt}: not found`
            )
          })
      )

      it.scoped.skipIf(isRoot)(
        "CKPT in a read-only directory: exit 1 before any request (root writes anywhere)",
        () =>
          Effect.gen(function*() {
            const server = yield* MicroappServer
            const dir = yield* temporaryDirectory
            const file = path.join(dir, "out.ndjson")
            const readOnly = path.join(dir, "read-only")
            fs.mkdirSync(readOnly, { mode: 0o555 })
            const ckpt = path.join(readOnly, "out.ckpt")
            yield* failsBeforeAnything(
              rowsArgs(server, ["--output", file, "--checkpoint", ckpt]),
              file,
              `error: cannot create ${ckpt}: permission denied`
            )
          })
      )
    }
  )

  describe("two processes", () => {
    const bin = path.join(root, "dist", "cli", "bin.js")
    const start = (args: ReadonlyArray<string>) =>
      spawn(process.execPath, [bin, ...args], { env: cleanEnv, stdio: "pipe" })

    it.live(
      "a second process is refused while the first runs; the first SIGKILLed, a third resumes: every row once",
      () =>
        Effect.gen(function*() {
          const exported = yield* anExport
          const { ckpt, dir, expected, file, server } = exported
          const args = exported.args.filter((arg) => arg !== "--quiet")
          // slow enough that the first is still running when the second starts
          yield* server.configure({ latency: Duration.millis(300) })
          const first = yield* Effect.acquireRelease(
            Effect.sync(() => start(args)),
            (child) => Effect.sync(() => child.kill("SIGKILL"))
          )
          first.stdin.end()
          yield* eventually(Effect.sync(() => fs.existsSync(ckpt)), Boolean)
          const second = yield* runToEnd(() => start(args))
          expect(second.code, second.stderr).toBe(2)
          expect(second.stderr).toBe(
            `error: ${ckpt} is in use by another run (pid ${first.pid} on ${os.hostname()}, ` +
              `lock ${ckpt}.lock): wait for it to end\n`
          )
          first.kill("SIGKILL")
          expect(yield* endOf(first)).toEqual({ code: null, signal: "SIGKILL" })
          yield* server.configure({ latency: Duration.zero })
          const third = yield* runToEnd(() => start(args))
          expect(third.code, third.stderr).toBe(0)
          expect(third.stderr).toMatch(/^done: 300 rows, .*resumed once, exhaustive\n$/)
          const rows = fs.readFileSync(file, "utf8")
          expect(rows).toBe(expected)
          expect(new Set(idsOf(rows)).size).toBe(300)
          // the killed run's locks were taken over and are gone (a temporary file it was writing may remain)
          expect(fs.readdirSync(dir).filter((name) => name.includes(".lock"))).toEqual([])
        }).pipe(Effect.scoped, Effect.provide(MicroappServer.layer({ demoRows: 300 }))),
      60_000
    )
  })
})
