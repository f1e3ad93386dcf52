import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer, Redacted, Schema } from "effect"
import { MicroappClient } from "../src/index.js"
import { demoCredentials, type FieldDefinition, MicroappServer, type TableDefinition } from "../src/testing/index.js"

/** The emulator on an ephemeral port, and a client of it over a real socket. */
export const withEmulator = (
  server: MicroappServer.Options = {},
  client: MicroappClient.Tuning = { retry: false }
): Layer.Layer<MicroappClient | MicroappServer, unknown> =>
  MicroappServer.layerWithClient(server, client).pipe(Layer.provide(NodeHttpClient.layerUndici))

/** The bodies of the requests the emulator saw on a path. */
export const bodiesTo = (path: string) =>
  Effect.map(
    Effect.flatMap(MicroappServer, (server) => server.requests),
    (log) => log.filter((record) => record.path === path).map((record) => record.body)
  )

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
