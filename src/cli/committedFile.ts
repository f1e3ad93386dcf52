/**
 * The primitive under every resumable output of the command line (`rows --output FILE
 * --checkpoint CKPT`, `changes --output FILE --state STATE`): FILE grows page by page, and a
 * record beside it (CKPT, STATE) says how many of FILE's bytes are committed, with where the run
 * stands. A page's bytes are appended and synced before the record names them; the record of one
 * page is saved while the next page is appended and synced, so the two waits overlap and the
 * record still names only synced bytes. A run that finds a record checks FILE against it, cuts FILE
 * back to the committed length (a page half-written when the process died goes) and appends from
 * there, so FILE ends with every page once. `RECORD.lock` and `FILE.lock` keep a second run away
 * from both while one runs.
 *
 * @since 0.2.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import { Effect, Option, Scope, Stream } from "effect"
import { createHash, type Hash } from "node:crypto"
import { isInvalidCheckpoint } from "../MicroappError.js"
import { type CommandFailed, UsageError } from "./exitCodes.js"
import { failedOn } from "./fileSafety.js"
import { holdLock } from "./lockFile.js"

/**
 * The locks of a record and the file it commits, held until the scope closes; taken before the
 * record is read, they show an unwritable directory before any request.
 *
 * @since 0.2.0
 * @category locks
 */
export const holdLocks = (record: string, file: string) =>
  Effect.zipRight(holdLock(record, `cannot create ${record}`), holdLock(file, `cannot write ${file}`))

/**
 * A refusal of a record's checkpoint as another query's (the scan checks it before any
 * request) as a usage error naming the record, then `remedy`; any other error as it is.
 *
 * @since 0.2.0
 * @category refusals
 */
export const anotherQuery = (record: string, remedy: string) => <E>(error: E): E | UsageError =>
  isInvalidCheckpoint(error) && error.problem === "another query"
    ? new UsageError({ message: `${record} belongs to another query: ${error.reason}; ${remedy}` })
    : error

/**
 * A page's text and what its commit records.
 *
 * @since 0.2.0
 * @category models
 */
export interface Rendered<C> {
  readonly text: string
  readonly record: C
}

/**
 * How pages are appended to FILE and committed.
 *
 * @since 0.2.0
 * @category models
 */
export interface Appending<P, C, E, R, E2, R2> {
  readonly file: string
  /**
   * The bytes of FILE its record commits, FILE cut back to them before the first page is
   * appended; none: a new FILE, made (or emptied) with the first page, so that a run that fails
   * before leaves FILE as it was.
   */
  readonly committed: Option.Option<number>
  /** The mode of a new FILE (else what the umask leaves). */
  readonly mode?: number
  readonly pages: Stream.Stream<P, E, R>
  /** A page's text, given FILE's length before it (0: nothing written yet). */
  readonly render: (page: P, length: number) => Effect.Effect<Rendered<C>, E2, R2>
  /** The record moved on to `record`, with FILE committed to `length` bytes. */
  readonly commit: (record: C, length: number) => Effect.Effect<unknown, E2, R2>
  /** What follows the last page (the end of a JSON array), given FILE's length: appended and synced, not committed. */
  readonly end?: (length: number) => string
}

const encoder = new TextEncoder()

/**
 * Appends each page's text to FILE and syncs it, then commits its record; the next page goes to
 * FILE (and its sync) while the record of the one before is saved. FILE's length at the end.
 *
 * @since 0.2.0
 * @category appending
 */
export const appendPages = <P, C, E, R, E2, R2>(
  appending: Appending<P, C, E, R, E2, R2>
): Effect.Effect<number, E | E2 | CommandFailed, R | R2 | FileSystem.FileSystem> =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const { commit, committed, end, file, mode, render } = appending
    const cannotWrite = failedOn(`cannot write ${file}`)
    // nothing of FILE changes before its record has been accepted; then a page half-written when the process died goes
    if (Option.isSome(committed)) yield* Effect.mapError(fs.truncate(file, committed.value), cannotWrite)
    let length = Option.getOrElse(committed, () => 0)
    const opened = yield* Effect.cached(
      fs.open(file, Option.isSome(committed) ? { flag: "a" } : { flag: "w", ...(mode === undefined ? {} : { mode }) })
        .pipe(
          // open until this block ends, not only while the stream that opens it runs
          Scope.extend(yield* Effect.scope),
          Effect.mapError(cannotWrite)
        )
    )
    // a new FILE is synced once however short its first page: its record then names a file that exists
    let synced = Option.isSome(committed)
    const append = (text: string) =>
      Effect.gen(function*() {
        const handle = yield* opened
        const bytes = encoder.encode(text)
        if (bytes.length === 0 && synced) return
        if (bytes.length > 0) yield* Effect.mapError(handle.writeAll(bytes), cannotWrite)
        yield* Effect.mapError(handle.sync, cannotWrite)
        synced = true
        length += bytes.length
      })
    yield* appending.pages.pipe(
      Stream.mapEffect((page) =>
        Effect.flatMap(render(page, length), ({ record, text }) => Effect.map(append(text), () => ({ record, length })))
      ),
      // the next page goes to FILE (and its sync) while the record names the one before: it only names synced bytes
      Stream.buffer({ capacity: 1 }),
      Stream.runForEach((done) => commit(done.record, done.length))
    )
    if (end !== undefined) yield* append(end(length))
    return length
  }))

/**
 * SHA-256, the checksum of the command line's records written before they took the checksum of
 * every format (`Codec.checksum`): CKPT before version 4, and STATE when it was a text. Read, no
 * longer written.
 *
 * @since 0.2.0
 * @category checksums
 */
export const earlierChecksum = (): Hash => createHash("sha256")
