/**
 * What proves a delete, through the library, against services that lie: only the service's own 404
 * `Row not found` proves a row missing (the rule's table, then each other answer of the row
 * endpoint with rows left out of a listing, or the whole table), a control read must find a row
 * the scan saw, the delete guard stops a pass at its bound, a point read must answer the row asked
 * for; and errors say what happened (the status of an answer that failed to decode, a base URL at
 * which the server has no endpoint).
 */
import { NodeHttpClient } from "@effect/platform-node"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, FastCheck as FC, Ref, Stream } from "effect"
import {
  Changes,
  Checkpoint,
  isInvalidCheckpoint,
  MicroappClient,
  NotFound,
  RequestRejected,
  TooManyDeletes
} from "../src/index.js"
import { provesNoSuchRow } from "../src/internal/http/errors.js"
import { CheckpointImpl } from "../src/internal/scan/checkpoint.js"
import * as IdSet from "../src/internal/scan/IdSet.js"
import {
  clientOf,
  hostileServer,
  lyingServer,
  type LyingService,
  rowNotFound,
  type ServiceRow,
  truthfully,
  truthfulService,
  unprovenAnswers
} from "./hostile.js"

const microAppID = "000000000000000000000d01"

const baselineOf = (rows: ReadonlyArray<ServiceRow>): Changes.Baseline =>
  Changes.Baseline.fromMap(new Map(rows.map((row) => [row._id, Changes.fingerprint(row)])))

/** A pass of `service`'s client over the baseline `rows`, run to its end or its failure: its pages, summary and error. */
const passOver = (
  service: LyingService,
  rows: ReadonlyArray<ServiceRow>,
  options: Partial<Changes.Options<never, never>> = {}
) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* lyingServer(service)
    return yield* Effect.gen(function*() {
      const client = yield* MicroappClient
      const pass = yield* client.changes({ microAppID, pageSize: 20, baseline: baselineOf(rows), ...options })
      const pages = yield* Ref.make<ReadonlyArray<Changes.Page<unknown>>>([])
      const ended = yield* Effect.either(
        Stream.runForEach(pass.pages, (page) => Ref.update(pages, (all) => [...all, page]))
      )
      const collected = yield* Ref.get(pages)
      return {
        pages: collected,
        changes: collected.flatMap((page) => page.changes),
        summary: yield* pass.summary,
        error: Either.isLeft(ended) ? ended.left : undefined
      }
    }).pipe(Effect.provide(clientOf(server.baseUrl, NodeHttpClient.layerUndici, { retry: false })))
  }))

const deletedOf = (changes: ReadonlyArray<Changes.Change<unknown>>) =>
  changes.filter(Changes.Change.$is("Deleted")).map((change) => change.id)

/** `service` with the rows at `indexes` left out of its listing. */
const hiding = (service: LyingService, indexes: ReadonlyArray<number>): LyingService => {
  const hidden = new Set(indexes.map((i) => service.rows[i]?._id))
  return { ...service, listed: (rows) => rows.filter((row) => !hidden.has(row._id)) }
}

describe("the proof of a delete", () => {
  it("only the service's 404 Row not found proves a row missing", () => {
    const answers: ReadonlyArray<readonly [number, string, boolean]> = [
      [404, "{\"status\":\"error\",\"message\":\"Row not found\"}", true],
      [404, "{\"message\":\"Row not found\",\"status\":\"error\",\"code\":404}", true],
      [404, "{\"status\":\"error\",\"message\":\"row not found\"}", false],
      [404, "{\"status\":\"fail\",\"message\":\"Row not found\"}", false],
      [404, "{\"status\":\"error\",\"message\":\"API endpoint does not exist\"}", false],
      [404, "<html><body><h1>404 Not Found</h1><hr>nginx</body></html>", false],
      [404, "{\"error\":{\"code\":\"OVERLOADED\"}}", false],
      [404, "", false],
      [404, "\"Row not found\"", false],
      [404, "{\"status\":\"error\",\"message\":\"Row not found\"", false],
      [410, "{\"status\":\"error\",\"message\":\"Row not found\"}", false],
      [200, "{\"status\":\"error\",\"message\":\"Row not found\"}", false],
      [200, "{\"status\":\"success\",\"body\":{}}", false],
      [200, "{\"status\":\"success\",\"body\":{\"currentRow\":null}}", false],
      [200, "{\"status\":\"success\"}", false]
    ]
    for (const [status, text, proves] of answers) {
      expect(provesNoSuchRow(status, text), `${status} ${text}`).toBe(proves)
    }
  })

  it.scoped("getRow: NotFound for callers, with noSuchRow only for the service's own answer", () =>
    Effect.gen(function*() {
      const service = truthfulService(3)
      const server = yield* lyingServer(service)
      const getRow = (id: string) =>
        Effect.flip(Effect.flatMap(MicroappClient, (client) => client.getRow(id))).pipe(
          Effect.provide(clientOf(server.baseUrl, NodeHttpClient.layerUndici, { retry: false }))
        )
      const missing = "ffffffffffffffffffffffff"
      expect(yield* getRow(missing)).toMatchObject({ _tag: "NotFound", rowID: missing, noSuchRow: true, status: 404 })
      for (const [name, answer] of unprovenAnswers) {
        service.answer = answer
        const error = yield* getRow(missing)
        if (name.includes("API endpoint")) {
          expect(error, name).toBeInstanceOf(RequestRejected)
          continue
        }
        expect(error, name).toBeInstanceOf(NotFound)
        expect(error, name).toMatchObject({ rowID: missing, noSuchRow: false })
      }
    }))

  for (const [name, answer] of unprovenAnswers) {
    it.effect(`5 of 50 rows left out, the row endpoint answering ${name}: nothing deleted, 5 unconfirmed`, () =>
      Effect.gen(function*() {
        const service = hiding(truthfulService(50), [3, 10, 11, 30, 49])
        service.answer = answer
        const pass = yield* passOver(service, service.rows)
        expect(pass.error).toBeUndefined()
        expect(pass.changes).toEqual([])
        expect(pass.summary).toMatchObject({ deleted: 0, reads: 5, unconfirmed: 5, heldBack: 0, unchanged: 45 })
      }))
  }

  it.effect("the whole table left out for one pass: nothing deleted, whatever the row endpoint answers", () =>
    Effect.gen(function*() {
      const service: LyingService = { ...truthfulService(150), listed: () => [] }
      // truthful reads find every row
      const found = yield* passOver(service, service.rows)
      expect(found.changes).toEqual([])
      expect(found.summary).toMatchObject({ rows: 0, deleted: 0, reads: 150, unchanged: 150, unconfirmed: 0 })
      // "Row not found" for every row: no row of the pass to read as a control, so none is proven
      service.answer = rowNotFound
      const lied = yield* passOver(service, service.rows)
      expect(lied.error).toBeUndefined()
      expect(deletedOf(lied.changes)).toEqual([])
      expect(lied.summary).toMatchObject({ deleted: 0, reads: 150, unconfirmed: 150, heldBack: 150 })
      expect(lied.pages.flatMap((page) => page.unconfirmed)).toHaveLength(150)
      // each other answer is unconfirmed (5 of 50 rows, above, for each)
      for (const [, answer] of unprovenAnswers.slice(0, 2)) {
        service.answer = answer
        const unproven = yield* passOver(service, service.rows)
        expect(unproven.changes).toEqual([])
        expect(unproven.summary).toMatchObject({ deleted: 0, unconfirmed: 150, heldBack: 0 })
      }
    }))
})

describe("whatever the service answers", () => {
  it.effect.prop(
    "a pass deletes only rows gone from the service, and reports every row under its own id",
    [
      FC.integer({ min: 1, max: 60 }),
      FC.array(FC.nat(59), { maxLength: 20 }),
      FC.array(FC.nat(59), { maxLength: 20 }),
      FC.integer({ min: 0, max: unprovenAnswers.length + 2 })
    ],
    ([count, hiddenAt, goneAt, answerAt]) =>
      Effect.gen(function*() {
        const service = truthfulService(count)
        const baseline = service.rows
        const gone = new Set(goneAt.filter((i) => i < count).map((i) => baseline[i]?._id))
        const hidden = new Set(hiddenAt.filter((i) => i < count).map((i) => baseline[i]?._id))
        service.rows = baseline.filter((row) => !gone.has(row._id))
        service.listed = (rows) => rows.filter((row) => !hidden.has(row._id))
        // an answer that proves nothing, "Row not found" for every row, another row for every row, or the truth
        const other = baseline[0]
        service.answer = answerAt < unprovenAnswers.length
          ? unprovenAnswers[answerAt]?.[1] ?? truthfully
          : answerAt === unprovenAnswers.length
          ? rowNotFound
          : answerAt === unprovenAnswers.length + 1
          ? () => HttpServerResponse.unsafeJson({ status: "success", body: { currentRow: other } })
          : truthfully
        const pass = yield* passOver(service, baseline)
        expect(pass.error).toBeUndefined()
        for (const id of deletedOf(pass.changes)) expect(gone.has(id), id).toBe(true)
        for (const change of pass.changes) {
          if (change._tag !== "Deleted") expect((change.row as ServiceRow)._id).toBe(change.id)
        }
        // the truth, with a row the scan saw to read as a control: every row gone is deleted
        if (service.answer === truthfully && service.listed(service.rows).length > 0) {
          expect(deletedOf(pass.changes).sort()).toEqual([...gone].sort())
        }
      }),
    { fastCheck: { numRuns: 12 } }
  )
})

describe("the control read", () => {
  it.effect("rows truly gone are deleted once the endpoint finds a row the scan saw", () =>
    Effect.gen(function*() {
      const service = truthfulService(50)
      const baseline = service.rows
      service.rows = baseline.filter((_, i) => ![3, 10, 49].includes(i))
      const pass = yield* passOver(service, baseline)
      expect(deletedOf(pass.changes).sort()).toEqual([3, 10, 49].map((i) => baseline[i]?._id).sort())
      expect(pass.summary).toMatchObject({ deleted: 3, reads: 3, unconfirmed: 0, heldBack: 0 })
    }))

  it.effect("a server that says \"Row not found\" of rows that exist deletes nothing: every candidate held back", () =>
    Effect.gen(function*() {
      const service = hiding(truthfulService(50), [3, 10, 11, 30, 49])
      const asked: Array<string> = []
      service.answer = (rowID) => {
        asked.push(rowID)
        return rowNotFound()
      }
      const pass = yield* passOver(service, service.rows)
      expect(pass.changes).toEqual([])
      // the five candidates, then three rows the scan saw as controls, none found
      expect(asked).toHaveLength(8)
      expect(pass.summary).toMatchObject({ deleted: 0, reads: 5, unconfirmed: 5, heldBack: 5 })
    }))

  it.effect("a control row gone since the scan: another row the scan saw is read, and rows truly gone are deleted", () =>
    Effect.gen(function*() {
      const service = truthfulService(50)
      const baseline = service.rows
      const gone = [3, 10, 49].map((i) => baseline[i]?._id)
      service.rows = baseline.filter((row) => !gone.includes(row._id))
      const controls: Array<string> = []
      service.answer = (rowID, rows) => {
        if (gone.includes(rowID)) return truthfully(rowID, rows)
        controls.push(rowID)
        // the first control row was deleted after the scan saw it
        return controls.length === 1 ? rowNotFound() : truthfully(rowID, rows)
      }
      const pass = yield* passOver(service, baseline)
      expect(deletedOf(pass.changes).sort()).toEqual([...gone].sort())
      expect(controls).toHaveLength(2)
      expect(new Set(controls).size).toBe(2)
      expect(pass.summary).toMatchObject({ deleted: 3, heldBack: 0 })
    }))

  it.effect("a control read answered with another row fails the control: nothing deleted", () =>
    Effect.gen(function*() {
      const service = hiding(truthfulService(50), [3, 10])
      const other = service.rows[20]
      service.answer = (rowID, rows) =>
        rows.slice(0, 2).some((row) => row._id === rowID)
          ? HttpServerResponse.unsafeJson({ status: "success", body: { currentRow: other } })
          : rowNotFound()
      const pass = yield* passOver(service, service.rows)
      expect(pass.changes).toEqual([])
      expect(pass.summary).toMatchObject({ deleted: 0, unconfirmed: 2, heldBack: 2 })
    }))
})

describe("a point read answers the row asked for", () => {
  it.effect("a row endpoint that answers row A for every id: getRow fails, and a pass stores and reports nothing of it", () =>
    Effect.gen(function*() {
      const service = hiding(truthfulService(50), [5, 6, 7, 8, 9])
      const first = service.rows[0]
      const changed = service.rows.map((row) => ({ ...row, N: -1 }))
      service.answer = () =>
        HttpServerResponse.unsafeJson({ status: "success", body: { currentRow: { ...first, N: 1234 } } })
      // the baseline differs from the service's rows: a row read under another id would be an update
      const pass = yield* passOver(service, changed)
      // the 45 rows listed, each under its own id; none of the 5 read
      expect(pass.changes.map((change) => change._tag === "Updated" ? (change.row as ServiceRow)._id : change._tag))
        .toEqual(pass.changes.map((change) => change.id))
      expect(pass.changes.map((change) => change.id).sort()).toEqual(
        service.listed(service.rows).map((row) => row._id).sort()
      )
      expect(pass.summary).toMatchObject({ deleted: 0, reads: 5, unconfirmed: 5, updated: 45 })

      const server = yield* lyingServer(service)
      const asked = service.rows[7]?._id ?? ""
      const error = yield* Effect.flip(Effect.flatMap(MicroappClient, (client) => client.getRow(asked))).pipe(
        Effect.provide(clientOf(server.baseUrl, NodeHttpClient.layerUndici, { retry: false }))
      )
      expect(error).toMatchObject({
        _tag: "UnexpectedResponse",
        kind: "Row",
        rowID: asked,
        fieldPath: "_id",
        status: 200
      })
      expect(error.message).toContain(JSON.stringify(first?._id))
    }).pipe(Effect.scoped))
})

describe("the delete guard", () => {
  /** A pass over `count` rows of which `gone` were deleted from the service. */
  const deleting = (count: number, gone: number, options: Partial<Changes.Options<never, never>> = {}) => {
    const service = truthfulService(count)
    const baseline = service.rows
    service.rows = baseline.slice(gone)
    return passOver(service, baseline, options)
  }

  it.effect("by default 100 rows, or a tenth of the copy when that is more: at its bound it deletes, one past it nothing", () =>
    Effect.gen(function*() {
      const at = yield* deleting(200, 100)
      expect(at.error).toBeUndefined()
      expect(at.summary).toMatchObject({ deleted: 100 })
      const past = yield* deleting(200, 101)
      expect(past.error).toBeInstanceOf(TooManyDeletes)
      expect(past.error).toMatchObject({ deletes: 101, copy: 200, allowed: 100, given: false, atLeast: false })
      expect(past.error?.message).toContain("maxDeletes (--max-deletes) 101")
      expect(deletedOf(past.changes)).toEqual([])
      expect(past.summary.deleted).toBe(0)
      // a tenth of 1,500 rows
      expect((yield* deleting(1500, 150)).summary).toMatchObject({ deleted: 150 })
      expect((yield* deleting(1500, 151)).error).toMatchObject({ _tag: "TooManyDeletes", allowed: 150 })
    }))

  it.effect("maxDeletes: at its bound it deletes, one past it nothing; 0 allows none", () =>
    Effect.gen(function*() {
      expect((yield* deleting(200, 101, { maxDeletes: 101 })).summary).toMatchObject({ deleted: 101 })
      const past = yield* deleting(200, 4, { maxDeletes: 3 })
      expect(past.error).toMatchObject({ _tag: "TooManyDeletes", deletes: 4, allowed: 3, given: true })
      expect(deletedOf(past.changes)).toEqual([])
      expect((yield* deleting(200, 3, { maxDeletes: 3 })).summary).toMatchObject({ deleted: 3 })
      expect((yield* deleting(200, 1, { maxDeletes: 0 })).error).toMatchObject({ _tag: "TooManyDeletes", allowed: 0 })
      const refused = yield* Effect.flip(deleting(10, 0, { maxDeletes: -1 }))
      expect(refused).toMatchObject({ _tag: "InvalidInput", input: "maxDeletes" })
    }))

  it.effect("under exhaustive-only deletes, one empty listing does not empty the copy", () =>
    Effect.gen(function*() {
      const service: LyingService = { ...truthfulService(300), listed: () => [] }
      const pass = yield* passOver(service, service.rows, { deletes: "exhaustive" })
      // every candidate a delete: stopped at the first group past the bound, not after holding all 300
      expect(pass.error).toMatchObject({ _tag: "TooManyDeletes", deletes: 120, copy: 120, allowed: 100, atLeast: true })
      expect(pass.error?.message).toContain("would delete at least 120 of the copy's 120 or more rows")
      expect(deletedOf(pass.changes)).toEqual([])
    }))

  it.effect("a pass stopped by the guard resumes from its last checkpoint with a larger bound, and deletes then", () =>
    Effect.gen(function*() {
      const service = hiding(truthfulService(200), [0, 1])
      const baseline = service.rows
      service.rows = baseline.slice(120)
      const stopped = yield* passOver(service, baseline)
      expect(stopped.error).toBeInstanceOf(TooManyDeletes)
      const checkpoint = stopped.pages.at(-1)?.checkpoint
      expect(checkpoint?.phase).toBe("deletes")
      const resume = yield* Changes.fromJson(Changes.toJson(checkpoint!))
      const resumed = yield* passOver(service, baseline, { resume, maxDeletes: 120 })
      expect(resumed.error).toBeUndefined()
      expect(deletedOf(resumed.changes)).toHaveLength(120)
      expect(resumed.summary).toMatchObject({ deleted: 120, unconfirmed: 0, unchanged: 80 })
    }))
})

describe("errors that say what happened", () => {
  it.scoped("a base URL at which the server has no endpoint: RequestRejected naming the URL and the base URL", () =>
    Effect.gen(function*() {
      const server = yield* lyingServer(truthfulService(3))
      const base = `${server.baseUrl}/api`
      const error = yield* Effect.flip(
        Effect.flatMap(MicroappClient, (client) => client.query({ microAppID })).pipe(
          Effect.provide(clientOf(base, NodeHttpClient.layerUndici, { retry: false }))
        )
      )
      expect(error).toBeInstanceOf(RequestRejected)
      expect(error).toMatchObject({ status: 404, url: `${base}/api/microappdata` })
      expect(error.message).toContain(`no endpoint at ${base}/api/microappdata`)
      expect(error.message).toContain(`is the base URL ${base} right?`)
    }))

  it.scoped("a scan that cannot resume its checkpoint: InvalidCheckpoint, naming no call", () =>
    Effect.gen(function*() {
      const service: LyingService = {
        ...truthfulService(0),
        rows: ["row-a", "row-b", "row-c"].map((_id, N) => ({ _id, N }))
      }
      const server = yield* lyingServer(service)
      const error = yield* Effect.gen(function*() {
        const client = yield* MicroappClient
        const first = yield* client.scan({ microAppID, pageSize: 2 })
        const [page] = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.take(first.pages, 1)))
        if (!(page?.checkpoint instanceof CheckpointImpl)) return yield* Effect.dieMessage("no checkpoint")
        const { query, state } = page.checkpoint
        // the same id twice, under a checksum made anew: read back, but no scan can go on from it
        const forged = new CheckpointImpl(query, { ...state, seen: IdSet.exactContents("", ["row-a", "row-a"]) })
        const resume = yield* Checkpoint.fromJson(Checkpoint.toJson(forged))
        const resumed = yield* client.scan({ microAppID, pageSize: 2, resume })
        return yield* Effect.flip(Stream.runDrain(resumed.rows))
      }).pipe(Effect.provide(clientOf(server.baseUrl, NodeHttpClient.layerUndici, { retry: false })))
      expect(isInvalidCheckpoint(error)).toBe(true)
      expect(error).toMatchObject({ input: "resume", problem: "field" })
      expect(error).not.toHaveProperty("method")
      expect(error.message).toContain("twice")
    }))

  it.scoped("every decode error says the status the answer came with", () =>
    Effect.gen(function*() {
      const answers: ReadonlyArray<readonly [number, unknown]> = [
        [203, { status: "success", body: { microAppRows: [{ N: 1 }] } }],
        [206, { status: "success", body: { microAppRows: "none" } }],
        [201, { status: "error", message: "no" }]
      ]
      const next = yield* Ref.make(0)
      const server = yield* hostileServer(() =>
        Effect.map(Ref.getAndUpdate(next, (n) => n + 1), (n) => {
          const [status, body] = answers[n % answers.length] ?? [200, {}]
          return HttpServerResponse.unsafeJson(body, { status })
        })
      )
      const errors = yield* Effect.forEach(answers, () =>
        Effect.flip(Effect.flatMap(MicroappClient, (client) =>
          client.query({ microAppID }))).pipe(
            Effect.provide(clientOf(server.baseUrl, NodeHttpClient.layerUndici, { retry: false }))
          ))
      expect(errors.map((error) => [error._tag, "status" in error ? error.status : undefined])).toEqual([
        ["UnexpectedResponse", 203],
        ["UnexpectedResponse", 206],
        ["RequestRejected", 201]
      ])
      const rows = yield* Effect.flip(
        Effect.flatMap(MicroappClient, (client) =>
          Stream.runCollect(client.rows({ microAppID }))).pipe(
            Effect.provide(clientOf(server.baseUrl, NodeHttpClient.layerUndici, { retry: false }))
          )
      )
      expect(rows).toMatchObject({ _tag: "UnexpectedResponse", status: 203 })
    }))
})
