import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer, Redacted } from "effect"
import { MicroappClient } from "../src/index.js"
import { demoCredentials, MicroappServer } from "../src/testing/index.js"

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
