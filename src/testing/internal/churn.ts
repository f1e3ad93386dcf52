/**
 * A table that changes under its readers: inserts, updates and deletes at a steady rate, drawn
 * from a seeded generator and timed on Effect's clock, so that a test can replay them exactly.
 */
import { Duration, Effect, Option } from "effect"
import { projectsMicroAppID } from "../DemoData.js"
import * as Prng from "./prng.js"
import type { RowStore } from "./rowStore.js"

export interface ChurnOptions {
  /** The Microapp that changes; default the demo Projects. */
  readonly microAppID?: string | undefined
  /** Changes a second, evenly spread; each is an insert, an update or a delete, equally likely. */
  readonly perSecond: number
  /** Default 1. */
  readonly seed?: number | undefined
}

/**
 * The most changes a second: one each 100 microseconds.
 */
export const maxChurnPerSecond = 10_000

const statuses: readonly [string, ...Array<string>] = ["Open", "In progress", "Done"]

/** Field values of a Projects row; labels a Microapp does not have are dropped, as by the service. */
const rowData = (prng: Prng.Prng, name: string) => ({
  Name: name,
  Status: prng.pick(statuses),
  Budget: Math.round(prng.next() * 50_000_000) / 100,
  Priority: 1 + prng.int(5)
})

/**
 * Changes the rows of `microAppID` `perSecond` times a second until interrupted: an insert at
 * the end, an update of a row anywhere, or a delete of a row anywhere (an update of a locked row
 * is refused, as the service refuses it).
 */
export const churn = (rows: RowStore, options: ChurnOptions): Effect.Effect<never> =>
  Effect.suspend(() => {
    const microAppID = options.microAppID ?? projectsMicroAppID
    const prng = Prng.make(options.seed ?? 1)
    const interval = Duration.millis(1000 / Math.min(Math.max(options.perSecond, 1e-3), maxChurnPerSecond))
    let changes = 0
    // a row anywhere in the table, if it has any
    const withSomeRow = (act: (rowID: string) => Effect.Effect<unknown>): Effect.Effect<unknown> =>
      Effect.flatMap(
        Effect.flatMap(rows.size(microAppID), (size) => rows.rowAt(microAppID, prng.int(size))),
        Option.match({ onNone: () => Effect.void, onSome: (row) => act(String(row["_id"])) })
      )
    const change = Effect.suspend((): Effect.Effect<unknown> => {
      changes += 1
      switch (prng.int(3)) {
        case 0:
          return rows.insertRow(microAppID, rowData(prng, `Churn ${changes}`))
        case 1:
          return withSomeRow((rowID) => rows.updateRow(rowID, rowData(prng, `Changed ${changes}`)))
        default:
          return withSomeRow(rows.removeRow)
      }
    })
    return Effect.forever(Effect.zipRight(Effect.sleep(interval), change))
  })
