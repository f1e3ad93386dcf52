/**
 * Rows as NDJSON, a JSON array or CSV, written to a `Destination` as they come. Memory stays
 * bounded whatever the table's size: NDJSON and JSON are written page by page, and CSV rows wait
 * in a temporary NDJSON file (a spool) until the header (the union of every row's keys) is known.
 *
 * @since 0.2.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import { Chunk, Effect, Schema, Stream } from "effect"
import type { CommandFailed } from "./exitCodes.js"
import { failedOn, fileDestination } from "./fileSafety.js"
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
