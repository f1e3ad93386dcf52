import { NodeHttpClient } from "@effect/platform-node"
import {
  Chunk,
  Clock,
  Duration,
  Effect,
  Fiber,
  Layer,
  Predicate,
  Redacted,
  Schema,
  TestClock,
  TestServices,
  Tracer
} from "effect"
import * as DiagnosticsChannel from "node:diagnostics_channel"
import { MicroappClient } from "../src/index.js"
import {
  demoCredentials,
  type FieldDefinition,
  MicroappServer,
  type RequestRecord,
  type TableDefinition
} from "../src/testing/index.js"

/** The emulator on an ephemeral port, and a client of it over a real socket. */
export const withEmulator = (
  server: MicroappServer.Options = {},
  client: MicroappClient.Tuning = { retry: false }
): Layer.Layer<MicroappClient | MicroappServer, unknown> =>
  MicroappServer.layerWithClient(server, client).pipe(Layer.provide(NodeHttpClient.layerUndici))

/** The bodies of the requests the emulator saw on a path. */
export const bodiesTo = (path: string) =>
  Effect.map(
    Effect.flatMap(MicroappServer, (server) => server.log.requests),
    (log) => log.filter((record) => record.path === path).map((record) => record.body)
  )

/**
 * Waits, in real time, until the emulator's log satisfies `predicate` (the server answers on
 * fibers of its own); the log. Dies after ten seconds, which no machine needs.
 */
export const awaitLog = (predicate: (log: ReadonlyArray<RequestRecord>) => boolean) =>
  Effect.flatMap(MicroappServer, (server) =>
    TestServices.provideLive(
      Effect.gen(function*() {
        for (;;) {
          const log = yield* server.log.requests
          if (predicate(log)) return log
          yield* Effect.sleep("1 millis")
        }
      }).pipe(
        Effect.timeoutFail({
          duration: "10 seconds",
          onTimeout: () => new Error("the request log never reached the expected state")
        }),
        Effect.orDie
      )
    ))

/** A table of 250 rows whose ids are mostly the service's shape (packed in a checkpoint), some not (kept as strings). */
export const mixedTable = (microAppID: string) => ({
  microAppID,
  name: "Mixed",
  fields: [{ label: "N", fieldID: "f_n", kind: "integer" as const }],
  sortFields: ["N"],
  rows: Array.from({ length: 250 }, (_, i) => ({
    _id: i % 9 === 4 ? `row-${i}` : (0x20000000 + i).toString(16).padStart(24, "0"),
    N: i
  }))
})

/** A plain table definition with `count` simple rows, for paging tests. */
export const numbersTable = (microAppID: string, count: number) => ({
  microAppID,
  name: "Numbers",
  fields: [
    { label: "N", fieldID: "f_n", kind: "integer" as const },
    { label: "Parity", fieldID: "f_parity", kind: "text" as const }
  ],
  sortFields: ["N"],
  rows: Array.from({ length: count }, (_, i) => ({
    _id: (0x10000000 + i).toString(16).padStart(24, "0"),
    N: i,
    Parity: i % 2 === 0 ? "even" : "odd"
  }))
})

/** A client that logs in to `server` as the demo user. */
export const loginLayer = (server: MicroappServer.Service) =>
  MicroappClient.layerLogin({
    baseUrl: server.baseUrl,
    email: demoCredentials.email,
    password: Redacted.make(demoCredentials.password)
  }).pipe(Layer.provide(NodeHttpClient.layerUndici))

export const tasksMicroAppID = "66a000000000000000000001"

/** The `_id` of row `i` of `tasksTable`. */
export const taskID = (i: number) => (0x66b00000 + i).toString(16).padStart(24, "0")

/** The fields of `tasksTable`: text, integer, list, cross-app and location. */
export const taskFields: ReadonlyArray<FieldDefinition> = [
  { label: "Title", fieldID: "t_title" },
  { label: "Count", fieldID: "t_count", kind: "integer" },
  { label: "Tags", fieldID: "t_tags", kind: "list" },
  { label: "Owner", fieldID: "t_owner", kind: "crossApp" },
  { label: "Site", fieldID: "t_site", kind: "location" }
]

/** `count` rows (`Title` "task i", `Count` i) of a plain Microapp, for updates; those at `locked` refuse them. */
export const tasksTable = (count: number, locked: ReadonlyArray<number> = []): TableDefinition => ({
  microAppID: tasksMicroAppID,
  name: "Tasks",
  fields: taskFields,
  sortFields: ["Title"],
  rows: Array.from({ length: count }, (_, i) => ({
    _id: taskID(i),
    Title: `task ${i}`,
    Count: i,
    ...(locked.includes(i) ? { isLocked: true } : {})
  }))
})

/** The emulator's answers, as the tests read them over raw HTTP. */
export const AnswerRow = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export const RowsAnswer = Schema.Struct({
  status: Schema.Literal("success"),
  body: Schema.Struct({ microAppRows: Schema.Array(AnswerRow) })
})

export const CurrentRowAnswer = Schema.Struct({
  status: Schema.Literal("success"),
  body: Schema.Struct({ currentRow: AnswerRow })
})

export const SessionAnswer = Schema.Struct({
  status: Schema.Literal("success"),
  data: Schema.Struct({ authToken: Schema.String, userId: Schema.String })
})

// --- the test clock over real sockets --------------------------------------------------------------

/**
 * The HTTP requests undici (under `NodeHttpClient` and `fetch` alike) has created and not yet seen
 * through, answered in full or failed. Watched from the start, so that none is missed.
 */
const unsettled = new Set<object>()

const requestOf = (message: unknown): object | undefined =>
  Predicate.hasProperty(message, "request") && Predicate.isObject(message.request) ? message.request : undefined

DiagnosticsChannel.subscribe("undici:request:create", (message) => {
  const request = requestOf(message)
  if (request !== undefined) unsettled.add(request)
})
for (const name of ["undici:request:trailers", "undici:request:error"]) {
  DiagnosticsChannel.subscribe(name, (message) => {
    const request = requestOf(message)
    if (request !== undefined) unsettled.delete(request)
  })
}

/** Where a program under test sends its requests, and how many of them are held there unanswered. */
export interface Peer {
  readonly baseUrl: string
  readonly held: Effect.Effect<number>
}

/** The emulator: it holds a request while it sleeps (latency, a hook) or hangs. */
const emulatorPeer: Effect.Effect<Peer, never, MicroappServer> = Effect.map(MicroappServer, (server) => ({
  baseUrl: server.baseUrl,
  held: server.log.unfinished
}))

/** An address that answers nothing and holds nothing (a refused port). */
export const nobodyAt = (baseUrl: string): Peer => ({ baseUrl, held: Effect.succeed(0) })

/** An address where nothing listens: a connection to it is refused, so a request is known not sent. */
export const refusedBaseUrl = "http://127.0.0.1:1"

/** A client of `refusedBaseUrl` over a real socket: every call fails to connect. */
export const refusedClient = (tuning: MicroappClient.Tuning = { retry: false }): Layer.Layer<MicroappClient> =>
  MicroappClient.layer({ ...tuning, baseUrl: refusedBaseUrl, authToken: Redacted.make("t"), userId: "u" }).pipe(
    Layer.provide(NodeHttpClient.layerUndici)
  )

/** Whether a file is being read or written in this thread: a program doing so waits on no clock. */
const filesBusy = (): boolean => process.getActiveResourcesInfo().some((resource) => resource.startsWith("FSReq"))

/**
 * Waits, in real time, until a program under test waits for nothing but the clock: every request it
 * sent to `peer` is answered and read, or held there, and no file is being read or written. Seen
 * twice, a timer apart, so that whatever the last answer set going has run meanwhile (fibers resume
 * on microtasks, before any timer).
 */
export const quietAt = (peer: Peer): Effect.Effect<void> =>
  TestServices.provideLive(Effect.gen(function*() {
    for (let calm = 0; calm < 2;) {
      yield* Effect.sleep("1 millis")
      let open = 0
      for (const request of unsettled) {
        if (Predicate.hasProperty(request, "origin") && request.origin === peer.baseUrl) open++
      }
      calm = open === (yield* peer.held) && !filesBusy() ? calm + 1 : 0
    }
  }))

/** `quietAt` the emulator. */
export const quiet: Effect.Effect<void, never, MicroappServer> = Effect.flatMap(emulatorPeer, quietAt)

/**
 * Moves the test clock to each wake-up in turn, whenever the program waits for nothing else, until
 * `done`: time passes as it would for a program that takes no time itself, on any machine. The
 * virtual milliseconds it took; dies when the next wake-up is more than `limit` away from the start.
 */
export const advanceAtUntil = <E, R>(
  peer: Peer,
  done: Effect.Effect<boolean, E, R>,
  limit: Duration.DurationInput = "1 hour"
): Effect.Effect<number, E, R> =>
  Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    const most = Duration.toMillis(limit)
    for (;;) {
      yield* quietAt(peer)
      const now = yield* Clock.currentTimeMillis
      if (yield* done) return now - start
      const next = Chunk.reduce(yield* TestClock.sleeps(), Infinity, (min, at) => (at > now && at < min ? at : min))
      // nothing on the clock: the program waits on something else, which will come in real time
      if (next === Infinity) continue
      if (next - start > most) return yield* Effect.dieMessage(`nothing was done within ${most} ms of the test clock`)
      // to a whole millisecond, as the live clock reads: a jittered delay ends between two
      yield* TestClock.adjust(Math.ceil(next) - now)
    }
  })

/** `advanceAtUntil` the emulator. */
export const advanceUntil = <E, R>(done: Effect.Effect<boolean, E, R>, limit?: Duration.DurationInput) =>
  Effect.flatMap(emulatorPeer, (peer) => advanceAtUntil(peer, done, limit))

/** Runs `program` to its end, moving the test clock whenever it waits on nothing else. */
export const runAtOnTestClock = <A, E, R>(peer: Peer, program: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(program)
    yield* advanceAtUntil(peer, Effect.sync(() => fiber.unsafePoll() !== null), Duration.infinity)
    return yield* Fiber.join(fiber)
  })

/** `runAtOnTestClock` against the emulator. */
export const onTestClock = <A, E, R>(program: Effect.Effect<A, E, R>) =>
  Effect.flatMap(emulatorPeer, (peer) => runAtOnTestClock(peer, program))

/** A tracer that records every span it starts, over the tracer in force. */
export const recordingTracer = Effect.map(Effect.tracer, (native) => {
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span: (...args) => {
      const span = native.span(...args)
      spans.push(span)
      return span
    },
    context: (f, fiber) => native.context(f, fiber)
  })
  return { spans, tracer }
})
