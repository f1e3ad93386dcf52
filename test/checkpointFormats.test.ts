/**
 * The four checkpoint formats side by side: the texts each writes now read back and are written
 * again byte for byte, under the one checksum of every format; the texts written before it
 * (fixtures written by each format as it stood) still read, are checked by the checksum they were
 * written with, and are written again as now; each refuses a text whose checksum, version, size,
 * depth or JSON is wrong, with the same kind of answer.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck as FC, Layer, Option, ParseResult, Schema } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as ChangeFiles from "../src/cli/changeFiles.js"
import * as Checkpointed from "../src/cli/checkpointed.js"
import { Changes, Checkpoint } from "../src/index.js"
import * as Codec from "../src/internal/checkpointCodec.js"
import { temporaryDirectory } from "./cliSupport.js"

const fixture = (name: string): ReadonlyArray<string> =>
  JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "fixtures", name), "utf8"))

/** CKPT files written by `microapp rows --checkpoint`: each format, finished or not, a version 2 one, unicode in the scan's query. */
const ckptBefore = fixture("cli-checkpoints-v3.json")

/** The same CKPTs as written now (version 4, each a version 2 scan's checkpoint), in the same order. */
const ckptTexts = fixture("cli-checkpoints-v4.json")

/** STATE files written by `microapp changes --state`: with and without a pass, filters of each type, unicode in ids and paths. */
const stateTexts = fixture("cli-change-states-v1.json")

/** A scan's checkpoints as version 1 wrote them (FNV-1a), and as written now (version 2), in the same order. */
const scanBefore = fixture("checkpoints-v1.json")
const scanTexts = fixture("checkpoints-v2.json")
const changesTexts = fixture("changes-checkpoints-v1.json")

const files = Layer.merge(NodeFileSystem.layer, NodePath.layer)

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")

/** A header line's object with `checksum` last, as both CLI formats write it. */
const sealed = (text: string, checksum: string) => `${text.slice(0, -1)},"checksum":"${checksum}"}`

/** CKPT's text with `fields` under a checksum made anew: what only a forger writes. */
const forgedCkpt = (fields: Record<string, unknown>) => {
  const text = JSON.stringify(fields, ["kind", "version", "format", "length", "finished", "scan"])
  return `${sealed(text, Codec.checksum(fields))}\n`
}

/** STATE's text (the earlier version's, under SHA-256) with `header` and baseline `lines` under a checksum made anew. */
const forgedState = (header: string, lines: ReadonlyArray<string> = []) => {
  const rest = lines.map((line) => `${line}\n`).join("")
  return `${sealed(header, sha256(`${header}\n${rest}`))}\n${rest}`
}

/** The message `load` refuses `file` with once it holds `content`, or that many bytes (sparse: no disk used). */
const refusalOf = <A, E extends { readonly message: string }, R>(
  load: (file: string) => Effect.Effect<A, E, R>,
  file: string
) =>
(content: string | number) => {
  fs.writeFileSync(file, typeof content === "string" ? content : "")
  if (typeof content === "number") fs.truncateSync(file, content)
  return Effect.map(Effect.flip(load(file)), (error) => error.message)
}

/** Each of `texts` as a file, read by `load`, written again by `save`: the same bytes; then `check` of what was read. */
const writtenAgain = <A, E, R, E2, R2>(
  texts: ReadonlyArray<string>,
  load: (file: string) => Effect.Effect<Option.Option<A>, E, R>,
  save: (file: string, read: A) => Effect.Effect<unknown, E2, R2>,
  check: (read: A) => Effect.Effect<void, unknown>
) =>
  Effect.gen(function*() {
    const dir = yield* temporaryDirectory
    for (const [i, text] of texts.entries()) {
      fs.writeFileSync(path.join(dir, `read-${i}`), text)
      const read = Option.getOrThrow(yield* load(path.join(dir, `read-${i}`)))
      yield* save(path.join(dir, `written-${i}`), read)
      expect(fs.readFileSync(path.join(dir, `written-${i}`), "utf8")).toBe(text)
      yield* check(read)
    }
  })

const headerOf = (text: string): Record<string, unknown> => JSON.parse(text.slice(0, text.indexOf("\n")))

describe("CKPT of microapp rows", () => {
  it.scoped("each fixture reads back, its scan's checkpoint too, and is written again byte for byte", () =>
    Effect.gen(function*() {
      expect(ckptTexts.length).toBe(5)
      yield* writtenAgain(
        ckptTexts,
        Checkpointed.load,
        Checkpointed.save,
        (body) => Effect.map(Checkpoint.fromJson(body.scan), (scan) => expect(Checkpoint.toJson(scan)).toBe(body.scan))
      )
    }).pipe(Effect.provide(files)))

  it.scoped("each CKPT of version 3 (SHA-256) reads, checked by its checksum, and is written again as version 4 writes it", () =>
    Effect.gen(function*() {
      const dir = yield* temporaryDirectory
      expect(ckptBefore.length).toBe(ckptTexts.length)
      for (const [i, text] of ckptBefore.entries()) {
        const file = path.join(dir, `before-${i}`)
        fs.writeFileSync(file, text)
        const body = Option.getOrThrow(yield* Checkpointed.load(file))
        expect(body.version).toBe(JSON.parse(text).version)
        const scan = Checkpoint.toJson(yield* Checkpoint.fromJson(body.scan))
        yield* Checkpointed.save(path.join(dir, `now-${i}`), { ...body, version: 4, scan })
        expect(fs.readFileSync(path.join(dir, `now-${i}`), "utf8")).toBe(ckptTexts[i])
        // what a resumed run trusts is under the checksum it was written with
        fs.writeFileSync(file, text.replace(/"length":(\d+)/, (_, length) => `"length":${Number(length) + 1}`))
        expect(yield* Effect.flip(Checkpointed.load(file))).toMatchObject({
          message: expect.stringContaining("its checksum does not match its content")
        })
      }
    }).pipe(Effect.provide(files)))

  it.scoped("refuses a wrong checksum, version, size, depth or JSON, naming the file and what is wrong", () =>
    Effect.gen(function*() {
      const dir = yield* temporaryDirectory
      const ckpt = path.join(dir, "out.ckpt")
      const text = ckptTexts[0] ?? ""
      const fields = JSON.parse(text) as Record<string, unknown>
      const refusal = refusalOf(Checkpointed.load, ckpt)
      expect(yield* refusal(text.replace("\"length\":4821", "\"length\":4822"))).toBe(
        `${ckpt}: changed or damaged since it was written (its checksum does not match its content): ` +
          "restore it, or remove it to start again"
      )
      expect(yield* refusal(forgedCkpt({ ...fields, version: 5 }))).toBe(
        `${ckpt} is not a checkpoint of microapp rows: version: version 5 is newer than this microapp reads (4): ` +
          "read it with a newer microapp; restore it, or remove it to start again"
      )
      expect(yield* refusal(forgedCkpt({ ...fields, version: 1 }))).toBe(
        `${ckpt} is not a checkpoint of microapp rows: version: version 1 has no checksum, so what it records ` +
          "cannot be trusted; restore it, or remove it to start again"
      )
      expect(yield* refusal(`${"[".repeat(5)}${"]".repeat(5)}`)).toBe(
        `${ckpt} is not a checkpoint of microapp rows: it is nested deeper than 4 levels, as no checkpoint is; ` +
          "restore it, or remove it to start again"
      )
      expect(yield* refusal(text.slice(0, 100))).toMatch(
        new RegExp(`^${ckpt} is not a checkpoint of microapp rows: .*JSON.*; restore it, or remove it to start again$`)
      )
      expect(yield* refusal(Checkpointed.checkpointFileLimit + 1)).toMatch(
        new RegExp(
          `^${ckpt} is too large to be a checkpoint of microapp rows: .*; restore it, or remove it to start again$`
        )
      )
    }).pipe(Effect.provide(files)))
})

describe("STATE of microapp changes", () => {
  it.scoped("each fixture reads back, its baseline and its pass's checkpoint too", () =>
    Effect.gen(function*() {
      expect(stateTexts.length).toBe(5)
      const dir = yield* temporaryDirectory
      for (const [i, text] of stateTexts.entries()) {
        const file = path.join(dir, `state-${i}`)
        fs.writeFileSync(file, text)
        const { baseline, header } = Option.getOrThrow(yield* ChangeFiles.load(file))
        const { checksum: _, ...written } = headerOf(text)
        expect(header).toMatchObject(written)
        expect(Array.from(baseline)).toEqual(text.trimEnd().split("\n").slice(1).map((line) => JSON.parse(line)))
        const saved = header.pass?.checkpoint ?? null
        if (saved !== null) {
          // written again as now: its scan's checkpoint at version 2, read back the same
          const pass = yield* Changes.fromJson(saved)
          const again = yield* Changes.fromJson(Changes.toJson(pass))
          expect(Changes.toJson(again)).toBe(Changes.toJson(pass))
          expect(again.summary).toEqual(pass.summary)
        }
      }
    }).pipe(Effect.provide(files)))

  it.scoped("refuses a wrong checksum, version, size, depth or JSON, naming the file and what is wrong", () =>
    Effect.gen(function*() {
      const dir = yield* temporaryDirectory
      const state = path.join(dir, "changes.state")
      const text = stateTexts[0] ?? ""
      const { checksum: _, ...header } = headerOf(text)
      const lines = text.trimEnd().split("\n").slice(1)
      const refusal = refusalOf(ChangeFiles.load, state)
      const notState = `${state} is not a state file of microapp changes`
      const remedy = `; restore it, or remove ${state} to start again with a snapshot`
      expect(yield* refusal(text.replace("fedcba9876543210", "fedcba9876543211"))).toBe(
        `${state}: changed or damaged since it was written (its checksum does not match its content): ` +
          `restore it, or remove ${state} to start again with a snapshot`
      )
      expect(yield* refusal(forgedState(JSON.stringify({ ...header, version: 2 }), lines))).toBe(
        `${notState}: version: version 2 is newer than this microapp reads (1): read it with a newer microapp${remedy}`
      )
      expect(yield* refusal(forgedState(JSON.stringify({ ...header, version: 0 }), lines))).toBe(
        `${notState}: version: unknown version 0: this microapp reads version 1${remedy}`
      )
      expect(yield* refusal(forgedState(JSON.stringify({ ...header, filters: [[[[[]]]]] }), lines))).toBe(
        `${notState}: it is nested deeper than 4 levels, as no checkpoint is${remedy}`
      )
      expect(yield* refusal(forgedState("{\"kind\":}"))).toMatch(new RegExp(`^${notState}: .*JSON.*${remedy}$`))
      expect(yield* refusal("not a state file\n")).toBe(
        `${notState}: its first line is not a header with a checksum${remedy}`
      )
      expect(yield* refusal(ChangeFiles.stateFileLimit + 1)).toMatch(
        new RegExp(`^${state} is too large to be a state file of microapp changes: .*${remedy}$`)
      )
    }).pipe(Effect.provide(files)))
})

/** What `fromJson` refused: its problem, where, and why. */
const refusedBy =
  <A>(fromJson: (text: string) => Effect.Effect<A, { problem: string; input: string; reason: string }>) =>
  (text: string) =>
    Effect.map(Effect.flip(fromJson(text)), ({ input, problem, reason }) => ({ problem, input, reason }))

describe("a scan's checkpoint", () => {
  const refused = refusedBy(Checkpoint.fromJson)
  const text = scanTexts[0] ?? ""
  const checksumRefused = {
    problem: "checksum",
    input: "checkpoint.checksum",
    reason: "does not match the content: the checkpoint was changed or damaged"
  }
  it.effect("each of version 1 (FNV-1a) reads, checked by its checksum, and is written again as version 2 writes it", () =>
    Effect.gen(function*() {
      expect(scanBefore.length).toBe(scanTexts.length)
      for (const [i, before] of scanBefore.entries()) {
        expect(Checkpoint.toJson(yield* Checkpoint.fromJson(before))).toBe(scanTexts[i])
        expect(Checkpoint.toJson(yield* Checkpoint.fromJson(scanTexts[i] ?? ""))).toBe(scanTexts[i])
      }
      expect(yield* refused((scanBefore[0] ?? "").replace("\"position\":88", "\"position\":87"))).toEqual(
        checksumRefused
      )
      // a text of version 2 under version 1's checksum is refused, as is one of version 1 under version 2's
      const now = (scanTexts[0] ?? "").replace(/"checksum":"[0-9a-f]+"/, "")
      expect(yield* refused(`${now.slice(0, -2)},"checksum":"${Codec.fnv1a(now.slice(0, -2) + "}")}"}`)).toEqual(
        checksumRefused
      )
      const { checksum: _, ...body } = JSON.parse(scanBefore[0] ?? "") as Record<string, unknown>
      expect(yield* refused(JSON.stringify({ ...body, checksum: Codec.checksum(body) }))).toEqual(checksumRefused)
    }))

  it.effect("refuses a wrong checksum, version, depth or JSON with its problem", () =>
    Effect.gen(function*() {
      expect(yield* refused(text.replace("\"position\":88", "\"position\":87"))).toEqual(checksumRefused)
      expect(yield* refused(text.replace("{\"version\":2,", "{\"version\":3,"))).toEqual({
        problem: "version",
        input: "checkpoint.version",
        reason: "version 3 is newer than this library reads (2): read it with a newer effect-microapp"
      })
      expect(yield* refused(text.replace("{\"version\":2,", "{\"version\":0,"))).toEqual({
        problem: "version",
        input: "checkpoint.version",
        reason: "version 0 was never written"
      })
      expect(yield* refused(`{"version":1,"query":${"[".repeat(17)}${"]".repeat(17)}}`)).toEqual({
        problem: "too deep",
        input: "checkpoint",
        reason: "is nested deeper than 16 levels, as no checkpoint is"
      })
      expect(yield* refused(text.slice(0, 50))).toMatchObject({
        problem: "not JSON",
        input: "checkpoint",
        reason: expect.stringMatching(/^is not JSON \(truncated, or not a checkpoint\): /)
      })
    }))
})

describe("a change pass's checkpoint", () => {
  const refused = refusedBy(Changes.fromJson)
  const text = changesTexts[0] ?? ""
  const { checksum: _, ...body } = JSON.parse(text) as Record<string, unknown>
  const resealed = (fields: Record<string, unknown>) =>
    JSON.stringify({ ...fields, checksum: Changes.fingerprint(fields) })
  it.effect("refuses a wrong checksum, version, depth or JSON with its problem", () =>
    Effect.gen(function*() {
      expect(yield* refused(text.replace("\"updated\":48", "\"updated\":47"))).toEqual({
        problem: "checksum",
        input: "checkpoint.checksum",
        reason: "does not match the content: the checkpoint was changed or damaged"
      })
      expect(yield* refused(resealed({ ...body, version: 2 }))).toEqual({
        problem: "version",
        input: "checkpoint.version",
        reason: "version 2 is newer than this library reads (1): read it with a newer effect-microapp"
      })
      expect(yield* refused(resealed({ ...body, version: 0 }))).toEqual({
        problem: "version",
        input: "checkpoint.version",
        reason: "unknown version 0: this library reads version 1"
      })
      expect(yield* refused(`{"version":1,"scan":${"[".repeat(17)}${"]".repeat(17)}}`)).toEqual({
        problem: "too deep",
        input: "checkpoint",
        reason: "is nested deeper than 16 levels, as no checkpoint is"
      })
      expect(yield* refused(text.slice(0, 50))).toMatchObject({ problem: "not JSON", input: "checkpoint" })
    }))
})

describe("the codec's envelope", () => {
  const jsonObject = FC.dictionary(FC.string(), FC.jsonValue(), { minKeys: 1 })
  it.prop("seal adds the checksum as the last key, and unseal gives back the text and the checksum", [
    jsonObject,
    FC.stringMatching(/^[0-9a-f]{8,64}$/)
  ], ([object, checksum]) => {
    const text = JSON.stringify(object)
    const sealedText = Codec.seal(text, checksum)
    expect(JSON.parse(sealedText)).toEqual({ ...JSON.parse(text), checksum })
    expect(Codec.unseal(sealedText)).toEqual({ text, checksum })
  })

  it.prop("a format's text and its checksum are one whatever the order of the keys", [FC.jsonValue()], ([value]) => {
    const Body = Schema.Struct({ b: Schema.Unknown, a: Schema.Struct({ d: Schema.Unknown, c: Schema.Unknown }) })
    const keys = Codec.keyOrder(Body)
    expect(keys).toEqual(["b", "a", "d", "c"])
    const inOrder = { b: value, a: { d: 1, c: value } }
    const reversed = { a: { c: value, d: 1 }, b: value }
    expect(Codec.textOf(reversed, keys)).toBe(Codec.textOf(inOrder, keys))
    expect(Codec.checksum(reversed)).toBe(Codec.checksum(inOrder))
    expect(Codec.checksum({ ...inOrder, a: { d: 2, c: value } })).not.toBe(Codec.checksum(inOrder))
  })

  it.scoped("every format written now carries the one checksum: the fingerprint of its value but the checksum", () =>
    Effect.gen(function*() {
      const dir = yield* temporaryDirectory
      const pass = yield* Changes.fromJson(changesTexts[0] ?? "")
      fs.writeFileSync(path.join(dir, "ckpt"), ckptTexts[0] ?? "")
      const written = [
        Checkpoint.toJson(yield* Checkpoint.fromJson(scanTexts[0] ?? "")),
        Changes.toJson(pass),
        JSON.parse(Changes.toJson(pass)).scan,
        fs.readFileSync(path.join(dir, "ckpt"), "utf8")
      ]
      yield* Checkpointed.save(
        path.join(dir, "ckpt"),
        Option.getOrThrow(yield* Checkpointed.load(path.join(dir, "ckpt")))
      )
      written.push(fs.readFileSync(path.join(dir, "ckpt"), "utf8"))
      for (const text of written) {
        const { checksum, ...body } = typeof text === "string" ? JSON.parse(text) : text
        expect(checksum).toBe(Changes.fingerprint(body))
        expect(checksum).toMatch(/^[0-9a-f]{16}$/)
      }
    }).pipe(Effect.provide(files)))

  it("a version: read from the oldest to the current, else newer, older or unknown", () => {
    const decode = Schema.decodeUnknownEither(
      Codec.Version({ current: 3, oldest: { version: 2, before: "is too old" }, reader: "this", upgrade: "that" })
    )
    const reason = (n: number) => {
      const decoded = decode(n)
      return decoded._tag === "Right" ? "read" : ParseResult.ArrayFormatter.formatErrorSync(decoded.left)[0]?.message
    }
    expect([2, 3].map(reason)).toEqual(["read", "read"])
    expect(reason(4)).toBe("version 4 is newer than this reads (3): read it with that")
    expect(reason(1)).toBe("version 1 is too old")
    expect(reason(2.5)).toBe("unknown version 2.5: this reads version 3")
  })
})
