/**
 * The README's full-table stream: a filtered, sorted scan handed row by row to the caller, and its
 * summary.
 */
import { Effect, Stream } from "effect"
import { MicroappClient, type Row } from "../src/index.js"

export const openRows = (microAppID: string, handle: (row: Row.Row) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const client = yield* MicroappClient
    const scan = yield* client.scan({
      microAppID,
      filters: [{ fieldID: "f_status", value: "Open" }],
      sort: { field: 1 }
    })
    yield* scan.rows.pipe(Stream.runForEach((row) => handle(row)))
    return yield* scan.summary
    // { pages, rows, duplicatesDropped, realignments, appearedBehind, caughtBehind, vanishedBehind,
    //   pagesDiscarded, serverCap, retries, inconsistencies, invalidRows, concurrencyReached,
    //   concurrency, complete, exhaustive, resumed, elapsedMillis }
  })
