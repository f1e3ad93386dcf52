/**
 * The lines `microapp changes` writes: each change in Debezium's envelope (`before`, `after`,
 * `source`, `op`, `ts_ms`, and the row's `id`), alone or after its key and a TAB, as kcat's
 * `-K '\t'` reads a line into a Kafka message.
 *
 * @since 0.2.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import { Effect } from "effect"
import type * as Changes from "../Changes.js"
import type { Row } from "../Row.js"
import type { CommandFailed } from "./exitCodes.js"
import { failedOn } from "./output.js"

/**
 * `source.snapshot` as Debezium writes it: a snapshot's first row `"first"`, its last `"last"`
 * (a snapshot of one row: `"first"`), the rows between `"true"`, a streamed change `"false"`.
 *
 * @since 0.2.0
 * @category models
 */
export type SnapshotMarker = "first" | "true" | "last" | "false"

/**
 * What the events of a page share: the pass, the Microapp, and when the page was read.
 *
 * @since 0.2.0
 * @category models
 */
export interface EventContext {
  /** A first pass: its rows are snapshot reads (`"r"`). */
  readonly snapshot: boolean
  /** No event of the pass is written yet: the page's first is the snapshot's first. */
  readonly first: boolean
  readonly microAppID: string
  /** effect-microapp's version, `source.version`. */
  readonly version: string
  /** When the page was read, in milliseconds since the epoch. */
  readonly now: number
  /** Each line `key<TAB>value`, the key `{"_id": ...}`. */
  readonly key: boolean
}

/** `source.connector`, and `source.name` (Debezium's logical name of the source). */
const connector = "microapp"

// the envelope ends with the marker, so that the last line's can be rewritten in place, at the same length
const markerEnd = (marker: SnapshotMarker) => `"snapshot":"${marker}"}}\n`

/**
 * A page's changes as lines: `c`, `u` and `d`, and `r` for a snapshot's rows; a `d` event's `before`
 * holds the key, as Debezium's does under a default replica identity; JSON escapes every TAB and
 * line break inside the key and the value.
 *
 * @since 0.2.0
 * @category encoding
 */
export const eventLines = (changes: ReadonlyArray<Changes.Change<Row>>, context: EventContext): string => {
  const { microAppID, now, snapshot, version } = context
  let text = ""
  let first = context.first
  for (const change of changes) {
    const op = change._tag === "Inserted" ? (snapshot ? "r" : "c") : change._tag === "Updated" ? "u" : "d"
    const key = { _id: change.id }
    const before = change._tag === "Deleted" ? key : null
    const after = change._tag === "Deleted" ? null : change.row
    const marker: SnapshotMarker = !snapshot ? "false" : first ? "first" : "true"
    first = false
    const source = JSON.stringify({ version, connector, name: connector, ts_ms: now, microAppID })
    const envelope = JSON.stringify({ before, after, op, ts_ms: now, id: change.id })
    const value = `${envelope.slice(0, -1)},"source":${source.slice(0, -1)},${markerEnd(marker)}`
    text += context.key ? `${JSON.stringify(key)}\t${value}` : value
  }
  return text
}

const encoder = new TextEncoder()
const between = encoder.encode(markerEnd("true"))
const last = encoder.encode("last")

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
    if (length < between.length) return
    const fs = yield* FileSystem.FileSystem
    const failed = failedOn(`cannot write ${file}`)
    const handle = yield* Effect.mapError(fs.open(file, { flag: "r+" }), failed)
    yield* handle.seek(length - between.length, "start")
    const tail = new Uint8Array(between.length)
    const read = yield* Effect.mapError(handle.read(tail), failed)
    if (Number(read) !== tail.length || !tail.every((byte, i) => byte === between[i])) return
    yield* handle.seek(length - "true\"}}\n".length, "start")
    yield* Effect.mapError(handle.writeAll(last), failed)
    yield* Effect.mapError(handle.sync, failed)
  }))
