/**
 * The lines `microapp changes` writes: each change as Debezium's event (`effect-microapp/debezium`),
 * its value alone or after its key and a TAB, as kcat's `-K '\t'` reads a line into a Kafka
 * message; with keys, a tombstone (the key, a TAB, nothing) after each delete unless
 * `--no-tombstones`.
 *
 * @since 0.2.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import { Effect } from "effect"
import type * as Changes from "../Changes.js"
import * as Debezium from "../debezium/Debezium.js"
import type { Row } from "../Row.js"
import type { CommandFailed } from "./exitCodes.js"
import { failedOn } from "./fileSafety.js"

/**
 * What the events of a page share.
 *
 * @since 0.2.0
 * @category models
 */
export interface EventContext {
  /** A first pass: its rows are snapshot reads (`"r"`). */
  readonly snapshot: boolean
  /** No event of the pass is written yet: the page's first is the snapshot's first. */
  readonly first: boolean
  readonly source: Debezium.Source
  readonly fields: ReadonlyArray<Debezium.Field>
  /** When the page was read, in milliseconds since the epoch. */
  readonly seenAt: number
  /** When its events are written, in nanoseconds since the epoch. */
  readonly writtenAt: bigint
  readonly key: boolean
  readonly schemas: boolean
  readonly tombstones: boolean
  /** The whole previous rows of the page's updates and deletes, by id; `undefined`: `--before key`. */
  readonly before: ReadonlyMap<string, Readonly<Record<string, unknown>>> | undefined
}

/**
 * A page's changes as lines, and how many of its updates and deletes carry only the key as their
 * `before` (STATE held no whole row for them). JSON escapes every TAB and line break inside the key
 * and the value.
 *
 * @since 0.2.0
 * @category encoding
 */
export const eventLines = (
  changes: ReadonlyArray<Changes.Change<Row>>,
  context: EventContext
): { readonly text: string; readonly lacking: number } => {
  let text = ""
  let lacking = 0
  let first = context.first
  for (const change of changes) {
    const marker: Debezium.Marker = !context.snapshot ? "false" : first ? "first" : "true"
    first = false
    let before: Readonly<Record<string, unknown>> | undefined
    if (change._tag !== "Inserted" && context.before !== undefined) {
      before = context.before.get(change.id)
      if (before === undefined) {
        lacking++
        before = { _id: change.id }
      }
    }
    const message = Debezium.event(change, { ...context, marker, before })
    text += context.key ? `${message.key}\t${message.value}\n` : `${message.value}\n`
    if (change._tag === "Deleted" && context.key && context.tombstones) text += `${message.key}\t\n`
  }
  return { text, lacking }
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** The end of a snapshot's event that is neither its first nor its last: its marker, then `source`'s and the value's ends. */
const between = /"snapshot":"true"(\}{2,3})\n$/

/**
 * Marks the last event of a snapshot in `file`, which ends at `length`: its `"true"` becomes
 * `"last"`, in place; a file that ends otherwise (no event, or the snapshot's only one, `"first"`,
 * or already marked) stays as it is, so a run that goes on after a crash marks it once.
 *
 * @since 0.2.0
 * @category encoding
 */
export const markLast = (
  file: string,
  length: number
): Effect.Effect<void, CommandFailed, FileSystem.FileSystem> =>
  Effect.scoped(Effect.gen(function*() {
    const tailLength = Math.min(length, 32)
    if (tailLength === 0) return
    const fs = yield* FileSystem.FileSystem
    const failed = failedOn(`cannot write ${file}`)
    const handle = yield* Effect.mapError(fs.open(file, { flag: "r+" }), failed)
    yield* handle.seek(length - tailLength, "start")
    const tail = new Uint8Array(tailLength)
    const read = yield* Effect.mapError(handle.read(tail), failed)
    const match = between.exec(decoder.decode(tail.subarray(0, Number(read))))
    if (Number(read) !== tailLength || match === null) return
    yield* handle.seek(length - `true"${match[1]}\n`.length, "start")
    yield* Effect.mapError(handle.writeAll(encoder.encode("last")), failed)
    yield* Effect.mapError(handle.sync, failed)
  }))
