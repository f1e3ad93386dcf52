/**
 * The emulator in a process of its own, for the programs that need its behaviour (a throttle)
 * rather than the raw speed of `server.ts`. Tells its parent the port over IPC, as `server.ts` does.
 */
import { Effect } from "effect"
import { MicroappServer } from "../../src/testing/index.js"
import type { ServerReady } from "./server.js"
import { rowId } from "./table.js"

/** What the parent asks for: a table of `rows` plain rows, served after `latencyMillis`, refusing load past `maxInFlight`. */
export interface EmulatorConfig {
  readonly microAppID: string
  readonly rows: number
  readonly latencyMillis: number
  readonly throttle: { readonly maxInFlight: number; readonly retryAfterSeconds: number } | undefined
}

const config: EmulatorConfig = JSON.parse(process.argv[2] ?? "{}")

Effect.runFork(
  Effect.gen(function*() {
    const server = yield* MicroappServer.make({
      tables: [{
        microAppID: config.microAppID,
        name: "Numbers",
        fields: [{ label: "N", fieldID: "f_n", kind: "integer" }],
        sortFields: ["N"],
        rows: Array.from({ length: config.rows }, (_, i) => ({ _id: rowId(i), N: i }))
      }],
      latency: config.latencyMillis,
      throttle: config.throttle
    })
    const ready: ServerReady = { port: Number(new URL(server.baseUrl).port) }
    process.send?.(ready)
    yield* Effect.never
  }).pipe(Effect.scoped)
)
