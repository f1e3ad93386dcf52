/**
 * `microapp changes` against services that lie: no `d` event but for a row the service's own
 * `Row not found` proved gone, none when the whole table is left out of one listing, none past
 * the delete guard (`--max-deletes`), no `u` event of a row read under another id; and the
 * closing line says what was held back.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { cli, temporaryDirectory } from "./cliSupport.js"
import { lyingServer, type LyingService, rowNotFound, truthfulService, unprovenAnswers } from "./hostile.js"

const microAppID = "000000000000000000000d03"

interface Event {
  readonly op: string
  readonly id: string
  readonly after: { readonly _id?: string } | null
}

/** A `changes` run against `service`, into FILE number `file` (by default, a new one); its run, and FILE's events. */
const changesOf = (service: LyingService) =>
  Effect.gen(function*() {
    const dir = yield* temporaryDirectory
    const server = yield* lyingServer(service)
    let passes = 0
    return (extra: ReadonlyArray<string> = [], file = passes++) =>
      Effect.gen(function*() {
        const output = path.join(dir, `events-${file}.ndjson`)
        const run = yield* cli([
          "changes",
          microAppID,
          "--state",
          path.join(dir, "state"),
          "--output",
          output,
          "--page-size",
          "50",
          ...extra,
          "--base-url",
          server.baseUrl,
          "--token",
          "t",
          "--user-id",
          "u"
        ])
        const text = fs.existsSync(output) ? fs.readFileSync(output, "utf8") : ""
        const events = text === "" ? [] : text.trimEnd().split("\n").map((line) => JSON.parse(line) as Event)
        return { ...run, events }
      })
  })

const hiding = (service: LyingService, indexes: ReadonlyArray<number>) => {
  const hidden = new Set(indexes.map((i) => service.rows[i]?._id))
  service.listed = (rows) => rows.filter((row) => !hidden.has(row._id))
}

describe("microapp changes against services that lie", () => {
  it.scoped("5 of 50 rows left out, each answer of the row endpoint but the service's own: no d event", () =>
    Effect.gen(function*() {
      const service = truthfulService(50)
      const pass = yield* changesOf(service)
      expect((yield* pass()).events).toHaveLength(50)
      hiding(service, [2, 3, 20, 40, 49])
      for (const [name, answer] of unprovenAnswers) {
        service.answer = answer
        const run = yield* pass()
        expect(run.code, name).toBe(0)
        expect(run.events, name).toEqual([])
        expect(run.stderr, name).toMatch(
          /^done: inserted 0, updated 0, deleted 0, unchanged 45, confirmed 0 deletes with 5 reads, 5 unconfirmed, left for a later pass, /
        )
      }
    }))

  it.scoped("the whole table left out of one listing, \"Row not found\" for every row: no d event, the closing line says why", () =>
    Effect.gen(function*() {
      const service = truthfulService(120)
      const pass = yield* changesOf(service)
      yield* pass()
      service.listed = () => []
      service.answer = rowNotFound
      const run = yield* pass()
      expect(run.code).toBe(0)
      expect(run.events).toEqual([])
      expect(run.stderr).toContain(
        "120 unconfirmed, left for a later pass, 120 deletes of them held back: the pass saw no row to read as a control"
      )
      // under exhaustive-only deletes, the guard stops it
      const exhaustive = yield* pass(["--deletes", "exhaustive"], 9)
      expect(exhaustive.code).toBe(1)
      expect(exhaustive.events).toEqual([])
      expect(exhaustive.stderr).toMatch(
        /^error: the pass of \S+ would delete at least 120 of the copy's 120 or more rows/
      )
    }))

  it.scoped("the delete guard: one past --max-deletes no d event and exit 1; at it, every d event", () =>
    Effect.gen(function*() {
      const service = truthfulService(60)
      const pass = yield* changesOf(service)
      yield* pass()
      service.rows = service.rows.slice(11)
      const stopped = yield* pass(["--max-deletes", "10"], 1)
      expect(stopped.code).toBe(1)
      expect(stopped.events.filter((event) => event.op === "d")).toEqual([])
      expect(stopped.stderr).toContain("would delete 11 of the copy's 60 rows, more than maxDeletes (10)")
      // the pass in progress goes on into its FILE, allowed
      const allowed = yield* pass(["--max-deletes", "11"], 1)
      expect(allowed.code).toBe(0)
      expect(allowed.stderr).toMatch(/^done: inserted 0, updated 0, deleted 11, unchanged 49, /)
      expect(allowed.events.map((event) => event.op)).toEqual(Array.from({ length: 11 }, () => "d"))
    }))

  it.scoped("a row endpoint that answers row A for every id: no u event of a row under another id", () =>
    Effect.gen(function*() {
      const service = truthfulService(50)
      const pass = yield* changesOf(service)
      yield* pass()
      const first = service.rows[0]
      hiding(service, [10, 11, 12])
      service.answer = () =>
        HttpServerResponse.unsafeJson({ status: "success", body: { currentRow: { ...first, N: -5 } } })
      const run = yield* pass()
      expect(run.code).toBe(0)
      expect(run.events).toEqual([])
      expect(run.stderr).toContain("3 unconfirmed")
    }))
})
