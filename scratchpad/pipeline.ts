/**
 * The README's pipeline: each page's rows and the checkpoint after them committed together to any
 * store with transactions, and the scan resumed from the checkpoint committed last.
 */
import { Effect, Option, Stream } from "effect"
import { Checkpoint, MicroappClient, type Row } from "../src/index.js"

/** Where the rows and the checkpoint go: any store with transactions. */
export interface Sink<E, R> {
  readonly loadCheckpoint: Effect.Effect<Option.Option<string>, E, R>
  readonly insert: (rows: ReadonlyArray<Row.Row>) => Effect.Effect<void, E, R> // rows it never had
  readonly saveCheckpoint: (json: string) => Effect.Effect<void, E, R>
  readonly withTransaction: <A, E2, R2>(effect: Effect.Effect<A, E2, R2>) => Effect.Effect<A, E | E2, R | R2>
}

export const mirror = <E, R>(microAppID: string, sink: Sink<E, R>) =>
  Effect.gen(function*() {
    const client = yield* MicroappClient
    const stored = yield* sink.loadCheckpoint // the checkpoint committed last, if any
    const resume = Option.isSome(stored) ? yield* Checkpoint.fromJson(stored.value) : undefined
    // a checkpoint of another query fails here, before any request and before the sink is touched
    const scan = yield* client.scan({ microAppID, sort: { field: 1 }, resume })
    yield* Stream.runForEach(scan.pages, (page) =>
      // the rows and the checkpoint after them, together or not at all
      sink.withTransaction(
        Effect.zipRight(sink.insert(page.rows), sink.saveCheckpoint(Checkpoint.toJson(page.checkpoint)))
      ))
    const summary = yield* scan.summary // the whole scan's figures, over every run
    if (!summary.exhaustive) yield* Effect.logWarning("rows may have been missed: read again", summary)
    return summary
  })
