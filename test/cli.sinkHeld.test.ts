/**
 * `microapp rows --output FILE --checkpoint CKPT` with the sink-held checkpoint: CKPT leaves the
 * ids to FILE, which a resumed run reads them back from and checks; a CKPT of version 2, which
 * holds them, and one of version 3, under SHA-256, still resume.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { Checkpoint } from "../src/index.js"
import { checksum, fnv1a } from "../src/internal/checkpointCodec.js"
import { MicroappServer } from "../src/testing/index.js"
import { cli, halfDone, idsOf, referenceRows, refused } from "./cliSupport.js"

/** The rows of FILE that CKPT counts: a run stopped between a page's write and its checkpoint leaves more. */
const committed = (rows: string, state: Record<string, unknown>) =>
  Buffer.from(rows).subarray(0, Number(state["length"])).toString("utf8")

/**
 * CKPT's text with `fields` and its checksum as a CKPT of version 2 or 3 was written (SHA-256 of
 * its text), its scan's checkpoint as version 1 wrote it (FNV-1a of its text).
 */
const signedBefore = (fields: Record<string, unknown>) => {
  const { checksum: _, ...body } = fields
  const { checksum: __, ...scan } = JSON.parse(String(body["scan"])) as Record<string, unknown>
  const scanText = JSON.stringify({ ...scan, version: 1 })
  body["scan"] = `${scanText.slice(0, -1)},"checksum":"${fnv1a(scanText)}"}`
  const text = JSON.stringify(body, ["kind", "version", "format", "length", "finished", "scan"])
  return `${text.slice(0, -1)},"checksum":"${createHash("sha256").update(text).digest("hex")}"}\n`
}

describe("microapp rows --checkpoint, the ids held by FILE", () => {
  layer(MicroappServer.layer({ demoRows: 230 }), { excludeTestServices: true })("resumable output", (it) => {
    it.scoped("CKPT counts the ids FILE holds, without them; a resumed run reads them back", () =>
      Effect.gen(function*() {
        const { args, dir, file, rows, saved } = yield* halfDone
        const state = JSON.parse(saved) as Record<string, unknown>
        expect(state["version"]).toBe(4)
        const { checksum: written, ...body } = state
        expect(written).toBe(checksum(body))
        const scan = JSON.parse(String(state["scan"])) as { seen: Record<string, unknown> }
        expect(scan.seen).toEqual({
          held: idsOf(committed(rows, state)).length,
          digest: expect.stringMatching(/^[0-9a-f]{16}$/)
        })
        expect(saved.length).toBeLessThan(2000)
        const resumed = yield* cli(args)
        expect(resumed.code, resumed.stderr).toBe(0)
        expect(fs.readFileSync(file, "utf8")).toBe(yield* referenceRows(dir))
      }))

    it.scoped("a FILE whose committed rows were changed, of the same length, is refused before any request", () =>
      Effect.gen(function*() {
        const { args, ckpt, file, rows, saved } = yield* halfDone
        const [first, second] = idsOf(rows)
        if (first === undefined || second === undefined) return expect.fail("two rows at least")
        const cases: ReadonlyArray<readonly [string, RegExp]> = [
          // another id in place of one: as many ids, not the same
          [rows.replace(first, first.replace(/.$/, (c) => (c === "0" ? "1" : "0"))), /digest differs/],
          // one id twice, another gone
          [rows.replace(second, first), /comes twice/],
          [rows.replace("{", "["), /not a row/]
        ]
        for (const [text, reason] of cases) {
          fs.writeFileSync(file, text)
          fs.writeFileSync(ckpt, saved)
          const run = yield* refused(args, file, reason)
          expect(run.stderr).toMatch(/does not hold the rows .*out\.ckpt counts|is not a row|not a row/)
        }
        fs.writeFileSync(file, rows)
        const resumed = yield* cli(args)
        expect(resumed.code, resumed.stderr).toBe(0)
      }))

    it.scoped("a CKPT of version 2, the ids in it, still resumes, and FILE is the same", () =>
      Effect.gen(function*() {
        const { args, ckpt, dir, file, rows, saved } = yield* halfDone
        const state = JSON.parse(saved) as Record<string, unknown>
        const held = yield* Checkpoint.fromJson(String(state["scan"]))
        const whole = yield* Checkpoint.withIds(held, idsOf(committed(rows, state)))
        fs.writeFileSync(ckpt, signedBefore({ ...state, version: 2, scan: Checkpoint.toJson(whole) }))
        const resumed = yield* cli(args)
        expect(resumed.code, resumed.stderr).toBe(0)
        expect(fs.readFileSync(file, "utf8")).toBe(yield* referenceRows(dir))
      }))

    it.scoped("a CKPT of version 3, as written before the checksum of every format, resumes, and FILE is the same", () =>
      Effect.gen(function*() {
        const { args, ckpt, dir, file, saved } = yield* halfDone
        const earlier = signedBefore({ ...JSON.parse(saved), version: 3 })
        fs.writeFileSync(ckpt, earlier)
        // what a resumed run trusts is checked as it was: one byte changed is refused
        fs.writeFileSync(ckpt, earlier.replace("\"finished\":false", "\"finished\":true"))
        yield* refused(args, file, /changed or damaged since it was written/)
        fs.writeFileSync(ckpt, earlier)
        const resumed = yield* cli(args)
        expect(resumed.code, resumed.stderr).toBe(0)
        expect(fs.readFileSync(file, "utf8")).toBe(yield* referenceRows(dir))
        expect(JSON.parse(fs.readFileSync(ckpt, "utf8"))).toMatchObject({ version: 4, finished: true })
      }))
  })
})
