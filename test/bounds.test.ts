import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, FastCheck as FC, Layer, Redacted, Stream } from "effect"
import { MicroappClient } from "../src/index.js"
import { MicroappServer } from "../src/testing/index.js"
import { numbersTable, withEmulator } from "./support.js"

const numbers = "000000000000000000000n04"

/** Numbers that are not whole numbers in `[min, max]`. */
const outside = (min: number, max: number) =>
  FC.oneof(
    FC.integer({ min: Number.MIN_SAFE_INTEGER, max: min - 1 }),
    FC.integer({ min: max + 1, max: Number.MAX_SAFE_INTEGER }),
    FC.integer({ min, max: max - 1 }).map((n) => n + 0.5),
    FC.constantFrom(NaN, Infinity, -Infinity, 1e300, 2 ** 53)
  )

/** Durations that are not in `[min, max]` milliseconds, or not durations at all. */
const durationOutside = (minMillis: number, maxMillis: number) =>
  FC.oneof(
    FC.integer({ min: maxMillis + 1, max: 1e12 }),
    FC.integer({ min: maxMillis + 1, max: 1e9 }).map((millis) => `${millis} millis`),
    FC.integer({ min: Math.ceil((maxMillis + 1) / 1000), max: 1e6 }).map((seconds) => `${seconds} seconds`),
    FC.integer({ min: -1e9, max: -1 }),
    FC.constantFrom<Array<unknown>>(NaN, Infinity, "Infinity", "soon", "-5 seconds", "1 fortnight", null, {}),
    ...(minMillis > 0 ? [FC.constant(0)] : [])
  )

const hour = 3_600_000
const MiB = 1024 * 1024

/** Each option a call takes, the call that passes it, and values beyond its bound. */
const callOptions: ReadonlyArray<{
  readonly input: string
  readonly values: FC.Arbitrary<unknown>
  readonly call: (client: MicroappClient.Service, value: never) => Effect.Effect<unknown, unknown>
}> = [
  {
    input: "pageSize",
    values: outside(1, 10_000),
    call: (client, pageSize) => Stream.runDrain(client.rows({ microAppID: numbers, pageSize }))
  },
  {
    input: "concurrency",
    values: outside(1, 32),
    call: (client, concurrency) => Stream.runDrain(client.rows({ microAppID: numbers, concurrency }))
  },
  {
    input: "maxConcurrency",
    values: outside(1, 32),
    call: (client, maxConcurrency) => Stream.runDrain(client.rows({ microAppID: numbers, maxConcurrency }))
  },
  {
    input: "prefetch",
    values: outside(1, 16),
    call: (client, prefetch) => Stream.runDrain(client.rows({ microAppID: numbers, prefetch }))
  },
  {
    input: "overlap",
    values: outside(0, 1_000),
    call: (client, overlap) => Stream.runDrain(client.rows({ microAppID: numbers, overlap }))
  },
  { input: "max", values: outside(0, 10_000_000), call: (client, max) => client.collect({ microAppID: numbers, max }) },
  { input: "limit", values: outside(1, 10_000), call: (client, limit) => client.query({ microAppID: numbers, limit }) },
  {
    input: "limit",
    values: outside(1, 10_000),
    call: (client, limit) => client.queryRaw({ microAppID: numbers, limit })
  },
  {
    input: "skip",
    values: FC.oneof(
      FC.integer({ min: Number.MIN_SAFE_INTEGER, max: -1 }),
      FC.integer({ min: 0, max: 1e9 }).map((n) => n + 0.5),
      FC.constantFrom(NaN, Infinity, 2 ** 53, 1e300)
    ),
    call: (client, skip) => client.query({ microAppID: numbers, skip })
  },
  {
    input: "timeout",
    values: durationOutside(1, hour),
    call: (client, timeout) => client.query({ microAppID: numbers, timeout })
  },
  {
    input: "timeout",
    values: durationOutside(1, hour),
    call: (client, timeout) => client.getRow("66c100000000000000000001", { timeout })
  },
  {
    input: "timeout",
    values: durationOutside(1, hour),
    call: (client, timeout) => client.updateRow({ rowID: "66c100000000000000000001", rowData: { N: 1 }, timeout })
  },
  {
    input: "timeout",
    values: durationOutside(1, hour),
    call: (client, timeout) => Stream.runDrain(client.rows({ microAppID: numbers, timeout }))
  },
  {
    input: "retry.maxAttempts",
    values: outside(1, 20),
    call: (client, maxAttempts) => client.getRow("66c100000000000000000001", { retry: { maxAttempts } })
  },
  {
    input: "retry.initialDelay",
    values: durationOutside(0, 60_000),
    call: (client, initialDelay) => client.query({ microAppID: numbers, retry: { initialDelay } })
  },
  {
    input: "retry.maxDelay",
    values: durationOutside(0, 600_000),
    call: (client, maxDelay) =>
      client.updateRow({ rowID: "66c100000000000000000001", rowData: { N: 1 }, retry: { maxDelay } })
  },
  {
    input: "retry.maxElapsed",
    values: durationOutside(0, hour),
    call: (client, maxElapsed) => Stream.runDrain(client.rows({ microAppID: numbers, retry: { maxElapsed } }))
  },
  {
    input: "retry",
    values: FC.constantFrom<Array<unknown>>(true, 0, "never", null, []),
    call: (client, retry) => client.queryRaw({ microAppID: numbers, retry })
  },
  {
    input: "concurrency",
    values: outside(1, 32),
    call: (client, concurrency) => Stream.runDrain(client.updateRows(Stream.empty, { concurrency }))
  },
  {
    input: "maxSends",
    values: outside(1, 20),
    call: (client, maxSends) => Stream.runDrain(client.updateRows(Stream.empty, { maxSends }))
  }
]

/** Each setting of the client, and values beyond its bound. */
const tuningOptions: ReadonlyArray<{
  readonly input: string
  readonly values: FC.Arbitrary<unknown>
  readonly tuning: (value: never) => MicroappClient.Tuning
}> = [
  { input: "timeout", values: durationOutside(1, hour), tuning: (timeout) => ({ timeout }) },
  { input: "pageSize", values: outside(1, 10_000), tuning: (pageSize) => ({ pageSize }) },
  { input: "maxResponseBytes", values: outside(1024, 256 * MiB), tuning: (maxResponseBytes) => ({ maxResponseBytes }) },
  { input: "retry.maxAttempts", values: outside(1, 20), tuning: (maxAttempts) => ({ retry: { maxAttempts } }) },
  {
    input: "retry.initialDelay",
    values: durationOutside(0, 60_000),
    tuning: (initialDelay) => ({ retry: { initialDelay } })
  },
  { input: "retry.maxDelay", values: durationOutside(0, 600_000), tuning: (maxDelay) => ({ retry: { maxDelay } }) },
  { input: "retry.maxElapsed", values: durationOutside(0, hour), tuning: (maxElapsed) => ({ retry: { maxElapsed } }) },
  {
    input: "rateLimit.requestsPerSecond",
    values: outside(1, 10_000),
    tuning: (requestsPerSecond) => ({ rateLimit: { requestsPerSecond } })
  },
  {
    input: "rateLimit.maxInFlight",
    values: outside(1, 1_024),
    tuning: (maxInFlight) => ({ rateLimit: { maxInFlight } })
  },
  { input: "rateLimit.maxPause", values: durationOutside(0, hour), tuning: (maxPause) => ({ rateLimit: { maxPause } }) }
]

const emulator = withEmulator({ tables: [numbersTable(numbers, 30)] })

const nothingSent = Effect.flatMap(MicroappServer, (server) => Effect.map(server.log.requests, (log) => log.length))

const clientWith = (server: MicroappServer.Service, tuning: MicroappClient.Tuning) =>
  MicroappClient.layer({
    ...tuning,
    baseUrl: server.baseUrl,
    authToken: Redacted.make(server.credentials.authToken),
    userId: server.credentials.userId
  }).pipe(Layer.provide(NodeHttpClient.layerUndici))

// one emulator for every refusal: none of them may reach it, so its log stays empty throughout
layer(emulator)((it) => {
  describe("every number a call takes has a bound: beyond it, InvalidInput naming it, and nothing sent", () => {
    for (const option of callOptions) {
      it.effect.prop(
        `${option.input} (${option.call.toString().match(/client\.(\w+)/)?.[1]})`,
        [option.values],
        ([value]) =>
          Effect.gen(function*() {
            const client = yield* MicroappClient
            const error = yield* Effect.flip(option.call(client, value as never))
            expect(error).toMatchObject({ _tag: "InvalidInput", input: option.input })
            expect(yield* nothingSent).toBe(0)
          }),
        { fastCheck: { numRuns: 25 } }
      )
    }
  })

  describe("every setting of the client has a bound: beyond it, every call fails with InvalidInput naming it, and nothing is sent", () => {
    for (const option of tuningOptions) {
      it.effect.prop(option.input, [option.values], ([value]) =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          const error = yield* Effect.flip(
            Effect.provide(
              Effect.flatMap(MicroappClient, (client) => client.query({ microAppID: numbers })),
              clientWith(server, option.tuning(value as never))
            )
          )
          expect(error).toMatchObject({ _tag: "InvalidInput", input: option.input })
          expect(yield* nothingSent).toBe(0)
        }), { fastCheck: { numRuns: 25 } })
    }

    it.effect("layerLogin and login fail to build with that InvalidInput, before logging in", () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const options = { baseUrl: server.baseUrl, email: "a@b.c", password: Redacted.make("p"), pageSize: 20_000 }
        const built = yield* Effect.flip(Effect.provide(MicroappClient, MicroappClient.layerLogin(options)))
        expect(built).toMatchObject({ _tag: "InvalidInput", input: "pageSize" })
        expect(yield* Effect.flip(MicroappClient.login(options))).toMatchObject({
          _tag: "InvalidInput",
          input: "pageSize"
        })
        expect(yield* nothingSent).toBe(0)
      }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
  })
})

describe("the bounds themselves are accepted", () => {
  it.effect("at the largest values, each call goes through", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const tuning: MicroappClient.Tuning = {
        timeout: "1 hour",
        pageSize: 10_000,
        maxResponseBytes: 256 * MiB,
        retry: { maxAttempts: 20, initialDelay: "1 minute", maxDelay: "10 minutes", maxElapsed: "1 hour" },
        rateLimit: { requestsPerSecond: 10_000, maxInFlight: 1_024, maxPause: "1 hour" }
      }
      const rows = yield* Effect.gen(function*() {
        const client = yield* MicroappClient
        const all = yield* client.collect({
          microAppID: numbers,
          pageSize: 10_000,
          concurrency: 32,
          prefetch: 16,
          overlap: 1_000,
          max: 10_000_000
        })
        const some = yield* client.query({ microAppID: numbers, limit: 10_000, skip: Number.MAX_SAFE_INTEGER })
        return [all.length, some.length]
      }).pipe(Effect.provide(clientWith(server, tuning)))
      expect(rows).toEqual([30, 0])
    }).pipe(Effect.provide(emulator)))

  it.effect("at the smallest values, each call goes through", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const tuning: MicroappClient.Tuning = {
        timeout: "1 hour",
        pageSize: 1,
        maxResponseBytes: 1024 * 1024,
        retry: { maxAttempts: 1, initialDelay: 0, maxDelay: 0, maxElapsed: 0 },
        rateLimit: { requestsPerSecond: 1_000, maxInFlight: 1, maxPause: 0 }
      }
      const rows = yield* Effect.gen(function*() {
        const client = yield* MicroappClient
        const one = yield* client.query({ microAppID: numbers, limit: 1, skip: 0, timeout: 1_000 })
        const all = yield* client.collect({
          microAppID: numbers,
          pageSize: 2,
          concurrency: 1,
          prefetch: 1,
          overlap: 0,
          max: 30
        })
        return [one.length, all.length]
      }).pipe(Effect.provide(clientWith(server, tuning)))
      expect(rows).toEqual([1, 30])
    }).pipe(Effect.provide(emulator)))
})
