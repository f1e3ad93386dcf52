/**
 * Files the command line writes and reads without surprises: a file appears under its name only
 * when complete (`atomicFile`), one that grows keeps what was written (`progressiveFile`), a
 * file read is a regular file of a bounded size, and a committed length is checked before a run
 * trusts it. Every failure is named by the file it concerns.
 *
 * @since 0.2.0
 */
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { Effect, Exit, Option, Random, type Scope, Stream } from "effect"
import { CommandFailed, UsageError } from "./exitCodes.js"
import { withRemedy } from "./refusals.js"
import type { Destination } from "./stdio.js"

const encoder = new TextEncoder()

/**
 * A file operation's failure as `what: why`. A system error's why is its kind in words, without
 * the path it names, which may be a temporary file's rather than the one the user gave.
 *
 * @since 0.1.0
 * @category errors
 */
export const failedOn = (what: string) => (error: PlatformError | { readonly message: string }) =>
  new CommandFailed({
    message: `${what}: ${
      !("_tag" in error && error._tag === "SystemError")
        ? error.message
        : (error.reason === "Unknown" || error.reason === "BadResource") && error.description !== undefined
        ? error.description.split(", ")[0] // Node's "ECODE: what, syscall 'path'"
        : error.reason.replace(/(?<=.)([A-Z])/g, " $1").toLowerCase()
    }`
  })

/**
 * A file's size, when it is a regular file of at most `maxBytes`: none when it does not exist; a
 * usage error, saying it is not `what` (and `remedy`, what to do then), when it is something else
 * or too large.
 *
 * @since 0.2.0
 * @category files
 */
export const regularFileSize = (
  file: string,
  maxBytes: number,
  what: string,
  remedy?: string
): Effect.Effect<Option.Option<number>, UsageError | CommandFailed, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const info = yield* fs.stat(file).pipe(
      Effect.map(Option.some),
      Effect.catchIf((error) => error._tag === "SystemError" && error.reason === "NotFound", () => Effect.succeedNone),
      Effect.mapError(failedOn(`cannot read ${file}`))
    )
    if (Option.isNone(info)) return Option.none()
    // a FIFO or a device would be read forever, and a huge file whole, before anything could be judged
    if (info.value.type !== "File") {
      return yield* new UsageError({ message: withRemedy(`${file} is not ${what}: not a regular file`, remedy) })
    }
    if (info.value.size > maxBytes) {
      return yield* new UsageError({
        message: withRemedy(
          `${file} is too large to be ${what}: ${info.value.size} bytes, more than ${maxBytes}`,
          remedy
        )
      })
    }
    return Option.some(Number(info.value.size))
  })

/**
 * A small file's text, read only when it is a regular file of at most `maxBytes`: none when it
 * does not exist; a usage error, saying it is not `what` (and `remedy`), when it is something else
 * or too large.
 *
 * @since 0.2.0
 * @category files
 */
export const readSmallFile = (
  file: string,
  maxBytes: number,
  what: string,
  remedy?: string
): Effect.Effect<Option.Option<string>, UsageError | CommandFailed, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    if (Option.isNone(yield* regularFileSize(file, maxBytes, what, remedy))) return Option.none()
    // bounded again: the file may have grown since
    return yield* fs.stream(file, { bytesToRead: FileSystem.Size(maxBytes) }).pipe(
      Stream.decodeText(),
      Stream.mkString,
      Effect.map(Option.some),
      Effect.mapError(failedOn(`cannot read ${file}`))
    )
  })

/**
 * A usage error unless `file` holds at least (`exact`: exactly) the `length` bytes that `record`
 * (the file that records it) says were committed, the last of them `end`, as the run that
 * committed them wrote them; `remedy` says what to do then.
 *
 * @since 0.2.0
 * @category files
 */
export const checkCommitted = (
  file: string,
  committed: {
    readonly length: number
    readonly end: string
    /** No more than `length` bytes either: `file` is finished. */
    readonly exact?: boolean
    readonly record: string
    readonly remedy: string
  }
): Effect.Effect<void, UsageError | CommandFailed, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const { end, exact = false, length, record, remedy } = committed
    const changed = (what: string) => new UsageError({ message: `${file} ${what}: it was changed since; ${remedy}` })
    const info = yield* Effect.option(fs.stat(file))
    if (Option.isNone(info)) return yield* changed(`is missing, but ${record} records it`)
    const size = Number(info.value.size)
    if (size < length || (exact && size > length)) {
      return yield* changed(`holds ${size} bytes, but ${record} records ${length}`)
    }
    if (length === 0) return
    const last = yield* fs.stream(file, { offset: FileSystem.Size(length - 1), bytesToRead: FileSystem.Size(1) }).pipe(
      Stream.decodeText(),
      Stream.mkString,
      Effect.mapError(failedOn(`cannot read ${file}`))
    )
    if (last !== end) return yield* changed(`does not end a row at byte ${length}, where ${record} records its end`)
  })

/**
 * A file open for writing as a `Destination`.
 *
 * @since 0.1.0
 * @category destinations
 */
export const fileDestination = (file: FileSystem.File, name: string): Destination => ({
  // a zero-length write is refused by writeAll, and there is nothing to write
  write: (text) =>
    text.length === 0
      ? Effect.void
      : Effect.mapError(file.writeAll(encoder.encode(text)), failedOn(`cannot write ${name}`))
})

/**
 * Runs `use` with a destination that writes to a temporary file beside `target`, then renames it
 * to `target`. On failure or interruption the temporary file is removed and `target` is left as
 * it was: a reader never sees a half-written file under its final name. A `target` that exists
 * keeps its permissions; a new one gets `mode` when given (else what the umask leaves).
 *
 * @since 0.1.0
 * @category destinations
 */
export const atomicFile = <A, E, R>(
  target: string,
  use: (destination: Destination) => Effect.Effect<A, E, R>,
  options: { readonly mode?: number } = {}
): Effect.Effect<A, E | CommandFailed, R | FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const suffix = (yield* Random.nextIntBetween(0, 0x7fffffff)).toString(36)
    // the same directory keeps the rename atomic (one file system)
    const temporary = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}-${suffix}.partial`)
    const mode = Option.match(yield* Effect.option(fs.stat(target)), {
      onNone: () => options.mode,
      onSome: (info) => info.mode & 0o777
    })
    return yield* Effect.scoped(Effect.gen(function*() {
      yield* Effect.addFinalizer((exit) => Exit.isSuccess(exit) ? Effect.void : Effect.ignore(fs.remove(temporary)))
      const result = yield* Effect.scoped(Effect.gen(function*() {
        const file = yield* Effect.mapError(
          fs.open(temporary, { flag: "wx", ...(mode === undefined ? {} : { mode }) }),
          failedOn(`cannot create ${target}`)
        )
        // the umask may have narrowed the mode the file was created with; never widened
        if (mode !== undefined) yield* Effect.mapError(fs.chmod(temporary, mode), failedOn(`cannot create ${target}`))
        const value = yield* use(fileDestination(file, target))
        yield* Effect.mapError(file.sync, failedOn(`cannot write ${target}`))
        return value
      }))
      yield* Effect.mapError(fs.rename(temporary, target), failedOn(`cannot write ${target}`))
      return result
    }))
  })

/**
 * A file (created, or emptied) written as the text comes: what was written before a failure or
 * an interruption stays, as a report of work done must.
 *
 * @since 0.1.0
 * @category destinations
 */
export const progressiveFile = (
  target: string
): Effect.Effect<Destination, CommandFailed, FileSystem.FileSystem | Scope.Scope> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) =>
    Effect.map(
      Effect.mapError(fs.open(target, { flag: "w" }), failedOn(`cannot create ${target}`)),
      (file) => fileDestination(file, target)
    ))
