/**
 * Answers whose numbers are built to cost time or memory, read by the built `microapp` in a child
 * process: the exact-number check is linear in the answer, an answer is parsed in steps that a
 * signal or the timeout stops, and the memory an answer costs is bounded.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { beforeAll } from "vitest"
import { hostileServer } from "./hostile.js"
import { bin, cleanEnv, endOf, outputOf, runToEnd } from "./processSupport.js"
import { eventually } from "./support/eventually.js"

beforeAll(() => {
  if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: the global setup should have built it`)
})

const microAppID = "66c000000000000000000001"
const rowID = "66c200000000000000000001"

const Window = Schema.Struct({
  searchFilter: Schema.Tuple([Schema.Struct({ skip: Schema.NumberFromString })], Schema.Unknown)
})

/** When a server first saw a request (ms): the run's own time starts there, past node's start. */
const firstRequests = new WeakMap<object, number>()

/** A server whose first page is one row holding `value` (JSON text as it is), and whose row endpoint answers 404 with `notFound`. */
const serving = (value: string, notFound = "") =>
  hostileServer((request, server) =>
    Effect.gen(function*() {
      if (!firstRequests.has(server)) firstRequests.set(server, Date.now())
      if (request.url === "/api/microappdata/row") {
        return HttpServerResponse.text(notFound, { status: 404, contentType: "application/json" })
      }
      const { searchFilter: [{ skip }] } = yield* Effect.orDie(
        Effect.flatMap(request.json, Schema.decodeUnknown(Window))
      )
      const rows = skip === 0 ? `{"_id":"${rowID}","V":${value}}` : ""
      return HttpServerResponse.text(`{"status":"success","body":{"microAppRows":[${rows}]}}`, {
        contentType: "application/json"
      })
    })
  )

const start = (baseUrl: string, args: ReadonlyArray<string>, node: ReadonlyArray<string> = []) =>
  spawn(process.execPath, [...node, bin, ...args, "--base-url", baseUrl, "--token", "t", "--user-id", "u"], {
    env: cleanEnv,
    stdio: "pipe"
  })

/**
 * Milliseconds since `server` first saw a request. The bounds below leave a busy machine room (the
 * child starts and exits slower there); each is far below what the run took before it stopped at
 * its timeout or signal, and docs/hostile-inputs.md has the figures of a quiet one.
 */
const sinceFirstRequest = (server: object): number => Date.now() - (firstRequests.get(server) ?? 0)

/** A list of `count` copies of `number`. */
const numbers = (number: string, count: number) => `[${`${number},`.repeat(count - 1)}${number}]`

describe("answers built to cost time or memory", () => {
  it.live("a number of a million digits: rows under --timeout 5 ends within it, exit 5, its error quoting 24 of its characters", () =>
    Effect.gen(function*() {
      const digits = `1.${"0".repeat(1_000_000)}1e1`
      const server = yield* serving(digits)
      const run = yield* runToEnd(() => start(server.baseUrl, ["rows", microAppID, "--timeout", "5", "--retries", "0"]))
      expect(sinceFirstRequest(server)).toBeLessThan(10_000)
      expect(run.code, run.stderr).toBe(5)
      expect(run.stderr).toContain(`at V: is ${digits.slice(0, 24)}... (a number of 1,000,005 characters)`)
      expect(run.stderr.length).toBeLessThan(600)
    }).pipe(Effect.scoped))

  it.live("a 404 whose body holds a number of 60,000 digits: row under --timeout 1 ends within it", () =>
    Effect.gen(function*() {
      const server = yield* serving("1", `{"status":"error","message":"Row not found","n":1${"0".repeat(60_000)}1}`)
      const run = yield* runToEnd(() => start(server.baseUrl, ["row", rowID, "--timeout", "1", "--retries", "0"]))
      expect(sinceFirstRequest(server)).toBeLessThan(4_000)
      expect(run.stderr).toContain("Row not found")
    }).pipe(Effect.scoped))

  it.live("a 64 MiB answer of short numbers, longer to read and parse than --timeout 1: the run ends within it, Timeout, exit 5", () =>
    Effect.gen(function*() {
      // read whole, the answer would be parsed for seconds (37 s before it was parsed in steps)
      const server = yield* serving(numbers("1e-40", 11_000_000))
      const run = yield* runToEnd(() => start(server.baseUrl, ["rows", microAppID, "--timeout", "1", "--retries", "0"]))
      expect(sinceFirstRequest(server)).toBeLessThan(8_000)
      expect(run.code, run.stderr).toBe(5)
      expect(run.stderr).toContain("no response within 1000 ms (Timeout, POST /api/microappdata)")
    }).pipe(Effect.scoped))

  it.live("SIGTERM while a 64 MiB answer of short numbers is parsed: the run ends at once, exit 130", () =>
    Effect.gen(function*() {
      // 1e-40 has an exponent: each of these 11 million numbers is checked
      const server = yield* serving(numbers("1e-40", 11_000_000))
      const child = start(server.baseUrl, ["rows", microAppID, "--timeout", "120", "--retries", "0"])
      const output = outputOf(child)
      child.stdin.end()
      yield* eventually(server.seen, (seen) => seen.length > 0)
      // the answer is sent and read in well under a second: the run is parsing it
      yield* Effect.sleep("1500 millis")
      const signalledAt = Date.now()
      child.kill("SIGTERM")
      expect(yield* endOf(child)).toEqual({ code: 130, signal: null })
      expect(Date.now() - signalledAt).toBeLessThan(4_000)
      expect(output.stderr).toContain("interrupted by SIGTERM")
    }).pipe(Effect.scoped))

  it.live("60 MB of numbers a double cannot hold (1e-400) under a heap of 160 MB: refused whole at the first past 10,000, exit 5", () =>
    Effect.gen(function*() {
      const server = yield* serving(numbers("1e-400", 8_700_000))
      const run = yield* runToEnd(() =>
        start(server.baseUrl, ["rows", microAppID, "--timeout", "120", "--retries", "0"], ["--max-old-space-size=160"])
      )
      expect(run.code, run.stderr).toBe(5)
      expect(run.stderr).toContain(
        "it holds more than 10,000 numbers that a double cannot hold as written; the first is 1e-400"
      )
    }).pipe(Effect.scoped))
})
