/**
 * Writing a stream of rows as NDJSON, a JSON array or CSV, to stdout or to a file that appears
 * under its name only when complete. Memory stays bounded whatever the table's size: NDJSON and
 * JSON are written page by page, and CSV rows wait in a temporary NDJSON file until the header
 * (the union of every row's keys) is known.
 *
 * @since 0.1.0
 */
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { Chunk, Effect, Exit, Option, Random, Schema, type Scope, Stream } from "effect"
import type { InvalidCheckpoint } from "../MicroappError.js"
import { CommandFailed, UsageError } from "./exitCodes.js"
import type { Destination, WriteError } from "./stdio.js"

/**
 * @since 0.1.0
 * @category models
 */
export const formats = ["ndjson", "json", "csv"] as const

/**
 * @since 0.1.0
 * @category models
 */
export type Format = typeof formats[number]

/**
 * A row as the service sends it: a JSON object.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonRow = { readonly [key: string]: unknown }

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

/** A refusal's `message`, and then what to do about it when there is a `remedy`. */
const withRemedy = (message: string, remedy: string | undefined) =>
  remedy === undefined ? message : `${message}; ${remedy}`

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

const unparsed = new Set<InvalidCheckpoint["problem"]>(["not JSON", "too large", "too deep"])

/**
 * A checkpoint file the codec refused, as a usage error: changed since it was written (its
 * checksum), or not `what` it should be, and where not; then `remedy`, how to start again.
 */
export const refusedFile = (file: string, what: string, remedy: string) => (error: InvalidCheckpoint) =>
  new UsageError({
    message: error.problem === "checksum"
      ? `${file}: changed or damaged since it was written (its checksum does not match its content): ${remedy}`
      : withRemedy(
        `${file} is not ${what}: ${
          error.input !== "" ? `${error.input}: ` : unparsed.has(error.problem) ? "it " : ""
        }${error.reason}`,
        remedy
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

/**
 * One row per line. Each write holds whole lines, so output cut short by a failure ends on a
 * complete line.
 *
 * @since 0.1.0
 * @category formats
 */
export const writeNdjson = <E, R>(
  rows: Stream.Stream<JsonRow, E, R>,
  destination: Destination
): Effect.Effect<void, E | WriteError, R> =>
  Stream.runForEachChunk(rows, (chunk) => destination.write(ndjsonLines(chunk)))

/**
 * Rows as NDJSON lines, each ending in LF.
 *
 * @since 0.1.0
 * @category formats
 */
export const ndjsonLines = (chunk: Iterable<JsonRow>): string => {
  let text = ""
  for (const row of chunk) text += `${JSON.stringify(row)}\n`
  return text
}

/**
 * One JSON array, one row per line, written as the rows arrive.
 *
 * @since 0.1.0
 * @category formats
 */
export const writeJsonArray = <E, R>(
  rows: Stream.Stream<JsonRow, E, R>,
  destination: Destination
): Effect.Effect<void, E | WriteError, R> =>
  Effect.flatMap(
    Stream.runFoldEffect(rows.pipe(Stream.chunks), false, (started, chunk) => {
      if (Chunk.isEmpty(chunk)) return Effect.succeed(started)
      const body = Chunk.toReadonlyArray(chunk).map((row) => JSON.stringify(row)).join(",\n")
      return Effect.as(destination.write(started ? `,\n${body}` : `[\n${body}`), true)
    }),
    (started) => destination.write(started ? "\n]\n" : "[]\n")
  )

/**
 * One CSV field as RFC 4180 has it: quoted when it holds a comma, a quote, CR or LF, with quotes
 * doubled.
 *
 * @since 0.1.0
 * @category csv
 */
export const csvField = (text: string): string => /[",\r\n]/.test(text) ? `"${text.replace(/"/g, "\"\"")}"` : text

/**
 * One value as the text of a cell: strings as they are, numbers and booleans as written in JSON,
 * nothing for `null` and missing keys, and compact JSON for anything nested (cross-application
 * and location values, lists).
 *
 * @since 0.1.0
 * @category csv
 */
export const csvCell = (value: unknown): string => {
  if (value === undefined || value === null) return ""
  if (typeof value === "string") return value
  if (typeof value === "number" || typeof value === "boolean") return String(value)
  return JSON.stringify(value) ?? ""
}

/**
 * A CSV record with its CRLF line end.
 *
 * @since 0.1.0
 * @category csv
 */
export const csvRecord = (fields: ReadonlyArray<string>): string => `${fields.map(csvField).join(",")}\r\n`

/**
 * Reads back the first field of each record of CSV as `csvRecord` writes them, from its text in
 * pieces of any size.
 *
 * @since 0.2.0
 * @category csv
 */
export interface FirstFields {
  /** The first fields of the records that end in `text`, in order. */
  readonly read: (text: string) => Array<string>
  /** Whether the text read so far stops inside a record. */
  readonly inRecord: () => boolean
}

// what ends a run of plain characters outside quotes
const unquotedEnd = /[",\n]/g

/**
 * A reader of the first field of each CSV record (RFC 4180: quoted fields may hold commas,
 * doubled quotes and line ends; records end in CRLF), which skips from one quote, comma or line
 * end to the next.
 *
 * @since 0.2.0
 * @category csv
 */
export const firstFields = (): FirstFields => {
  let first = ""
  let column = 0
  let quoted = false
  // a quote just closed a quoted field: a quote right after it is one of its characters
  let closed = false
  // anything of a record read since the last one ended (`""` is a field, and CR alone no end)
  let started = false
  const read = (text: string): Array<string> => {
    const fields: Array<string> = []
    let at = 0
    while (at < text.length) {
      if (quoted) {
        const end = text.indexOf("\"", at)
        if (column === 0) first += text.slice(at, end === -1 ? text.length : end)
        if (end === -1) break
        quoted = false
        closed = true
        at = end + 1
        continue
      }
      unquotedEnd.lastIndex = at
      const found = unquotedEnd.exec(text)
      const end = found === null ? text.length : found.index
      if (end > at) {
        // CR outside quotes only ends a record: a field that holds one is quoted
        if (column === 0) first += text.slice(at, end).replace(/\r/g, "")
        closed = false
        started = true
      }
      if (found === null) break
      const char = text[end]
      if (char === "\"") {
        if (closed && column === 0) first += char
        quoted = true
        started = true
      } else if (char === ",") {
        column++
        started = true
      } else {
        fields.push(first)
        first = ""
        column = 0
        started = false
      }
      closed = false
      at = end + 1
    }
    return fields
  }
  return { read, inRecord: () => started }
}

const SpooledRow = Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
const decodeSpooled = Schema.decodeUnknown(SpooledRow)

/**
 * Appends `rows` to the spool, a file of NDJSON lines, and collects every key seen.
 *
 * @since 0.1.0
 * @category csv
 */
export const spoolRows = <E, R>(
  rows: Stream.Stream<JsonRow, E, R>,
  spool: Destination,
  keys: Set<string>
): Effect.Effect<void, E | WriteError, R> =>
  Stream.runForEachChunk(rows, (chunk) => {
    for (const row of chunk) for (const key of Object.keys(row)) keys.add(key)
    return spool.write(ndjsonLines(chunk))
  })

const spooledRows = (spool: string) =>
  Stream.unwrap(Effect.map(FileSystem.FileSystem, (fs) =>
    fs.stream(spool).pipe(
      Stream.mapError(failedOn("cannot read a temporary file")),
      Stream.decodeText(),
      Stream.splitLines,
      Stream.filter((line) => line !== ""),
      Stream.mapEffect((line) => Effect.mapError(decodeSpooled(line), failedOn("cannot read a temporary file")))
    )))

/**
 * The keys of a spool's rows, `_id` first, then in the order they first appear.
 *
 * @since 0.1.0
 * @category csv
 */
export const spooledKeys = (spool: string): Effect.Effect<Set<string>, CommandFailed, FileSystem.FileSystem> =>
  Stream.runFold(spooledRows(spool), new Set<string>(["_id"]), (keys, row) => {
    for (const key of Object.keys(row)) keys.add(key)
    return keys
  })

/**
 * The spool's rows as CSV under `header`, header first.
 *
 * @since 0.1.0
 * @category csv
 */
export const writeCsvFromSpool = (
  spool: string,
  header: ReadonlyArray<string>,
  destination: Destination
): Effect.Effect<void, WriteError, FileSystem.FileSystem> =>
  Effect.zipRight(
    destination.write(csvRecord(header)),
    Stream.runForEachChunk(spooledRows(spool), (chunk) => {
      let text = ""
      for (const row of chunk) text += csvRecord(header.map((key) => csvCell(row[key])))
      return destination.write(text)
    })
  )

/**
 * CSV with a header of every key seen, `_id` first, then in the order keys first appear. The rows
 * go to a temporary NDJSON file while the keys are collected, then header and rows are written to
 * `destination`: nothing reaches it before the scan has ended.
 *
 * @since 0.1.0
 * @category formats
 */
export const writeCsv = <E, R>(
  rows: Stream.Stream<JsonRow, E, R>,
  destination: Destination
): Effect.Effect<void, E | WriteError, R | FileSystem.FileSystem> =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const spool = yield* Effect.mapError(
      fs.makeTempFileScoped({ prefix: "microapp-csv-" }),
      failedOn("cannot create a temporary file")
    )
    const keys = new Set<string>(["_id"])
    yield* Effect.scoped(Effect.gen(function*() {
      const file = yield* Effect.mapError(fs.open(spool, { flag: "w" }), failedOn("cannot write a temporary file"))
      yield* spoolRows(rows, fileDestination(file, "a temporary file"), keys)
    }))
    yield* writeCsvFromSpool(spool, Array.from(keys), destination)
  }))

/**
 * Writes `rows` in `format` to `destination`.
 *
 * @since 0.1.0
 * @category formats
 */
export const writeRows = <E, R>(
  format: Format,
  rows: Stream.Stream<JsonRow, E, R>,
  destination: Destination
): Effect.Effect<void, E | WriteError, R | FileSystem.FileSystem> => {
  switch (format) {
    case "ndjson":
      return writeNdjson(rows, destination)
    case "json":
      return writeJsonArray(rows, destination)
    case "csv":
      return writeCsv(rows, destination)
  }
}
