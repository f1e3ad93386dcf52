/**
 * The primitive under `rows --checkpoint` and `changes --state`: pages appended to FILE and
 * synced, each record naming only bytes on disk, the next page appended while the record of the
 * one before is saved; a resumed FILE cut back to its committed length; a new FILE made with its
 * first page only.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Option, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { appendPages } from "../src/cli/committedFile.js"
import { temporaryDirectory } from "./cliSupport.js"

/** Pages of text, one an element, each rendered as itself and recorded by its text. */
const pagesOf = (...texts: ReadonlyArray<string>) => Stream.rechunk(Stream.fromIterable(texts), 1)

describe("appendPages", () => {
  it.scoped("the next page is appended while the record of the one before is saved; a record names only bytes on disk", () =>
    Effect.gen(function*() {
      const file = path.join(yield* temporaryDirectory, "out")
      const thirdRendered = yield* Deferred.make<void>()
      const commits: Array<{ readonly record: string; readonly length: number; readonly onDisk: string }> = []
      const length = yield* appendPages({
        file,
        committed: Option.none(),
        pages: pagesOf("a\n", "bb\n", "ccc\n"),
        render: (page) =>
          Effect.as(page === "ccc\n" ? Deferred.succeed(thirdRendered, undefined) : Effect.void, {
            text: page,
            record: page
          }),
        commit: (record, length) =>
          Effect.gen(function*() {
            // the first record is saved only once the second page is on disk: one at a time, this never ends
            if (record === "a\n") yield* Deferred.await(thirdRendered)
            commits.push({ record, length, onDisk: fs.readFileSync(file, "utf8") })
          })
      })
      expect(length).toBe(9)
      // the second page was on disk (the third may be too) before the first record was saved
      expect(commits[0]?.onDisk).toMatch(/^a\nbb\n/)
      expect(commits.map(({ length, record }) => [record, length])).toEqual([["a\n", 2], ["bb\n", 5], ["ccc\n", 9]])
      for (const { length, onDisk } of commits) expect(Buffer.byteLength(onDisk)).toBeGreaterThanOrEqual(length)
      expect(fs.readFileSync(file, "utf8")).toBe("a\nbb\nccc\n")
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("a resumed FILE is cut back to its committed length before the first page, then appended to", () =>
    Effect.gen(function*() {
      const file = path.join(yield* temporaryDirectory, "out")
      // a page half-written when the process died
      fs.writeFileSync(file, "a\nbb\nhal")
      const commits: Array<readonly [string, number]> = []
      const length = yield* appendPages({
        file,
        committed: Option.some(5),
        pages: pagesOf("ccc\n", "", "dddd\n"),
        render: (page, length) => Effect.succeed({ text: page, record: `${page.trim()} after ${length}` }),
        commit: (record, length) => Effect.sync(() => commits.push([record, length])),
        end: (length) => `end ${length}\n`
      })
      expect(fs.readFileSync(file, "utf8")).toBe("a\nbb\nccc\ndddd\nend 14\n")
      expect(length).toBe(21)
      // the end is appended, not committed
      expect(commits).toEqual([["ccc after 5", 9], [" after 9", 9], ["dddd after 9", 14]])
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("a new FILE is made, or emptied, with the first page: a run that fails before leaves it as it was", () =>
    Effect.gen(function*() {
      const dir = yield* temporaryDirectory
      const file = path.join(dir, "out")
      fs.writeFileSync(file, "an earlier export\n")
      const failed = yield* Effect.exit(appendPages({
        file,
        committed: Option.none(),
        pages: Stream.fail("refused before any page"),
        render: (page: string) => Effect.succeed({ text: page, record: page }),
        commit: () => Effect.void
      }))
      expect(failed).toEqual(Exit.fail("refused before any page"))
      expect(fs.readFileSync(file, "utf8")).toBe("an earlier export\n")
      const empty = path.join(dir, "empty")
      yield* appendPages({
        file: empty,
        committed: Option.none(),
        mode: 0o600,
        pages: pagesOf(""),
        render: (page) => Effect.succeed({ text: page, record: page }),
        commit: () => Effect.void
      })
      expect(fs.readFileSync(empty, "utf8")).toBe("")
      expect(fs.statSync(empty).mode & 0o777).toBe(0o600)
      yield* appendPages({
        file,
        committed: Option.none(),
        pages: pagesOf("x\n"),
        render: (page) => Effect.succeed({ text: page, record: page }),
        commit: () => Effect.void
      })
      expect(fs.readFileSync(file, "utf8")).toBe("x\n")
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
