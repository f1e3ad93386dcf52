/**
 * The README's first example: every open row of a Microapp of the real service, with the
 * credentials from the environment, over the platform's own fetch.
 */
import { FetchHttpClient } from "@effect/platform"
import { Console, Effect, Stream } from "effect"
import { MicroappClient } from "../src/index.js"

// MICROAPP_BASE_URL, MICROAPP_AUTH_TOKEN and MICROAPP_USER_ID from the environment
const program = Effect.gen(function*() {
  const client = yield* MicroappClient
  const rows = client.rows({
    microAppID: process.env["MICROAPP_ID"] ?? "",
    filters: [{ fieldID: "f_status", value: "Open" }]
  })
  const open = yield* Stream.runCount(rows) // every page, never cut short by the server's row cap
  yield* Console.log(`open rows: ${open}`)
}).pipe(
  Effect.catchTag("Unauthorized", () => Console.error("the token was refused: log in again")),
  Effect.provide(MicroappClient.layerConfig()),
  Effect.provide(FetchHttpClient.layer)
)

Effect.runPromise(program).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
