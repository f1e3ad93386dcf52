/**
 * `microapp rows --output FILE --checkpoint CKPT`: rows appended to FILE page by page, and after
 * each page is on disk, CKPT replaced atomically with the scan's checkpoint and FILE's length. A
 * run that finds CKPT cuts FILE back to that length (a page half-written when the process died
 * goes) and resumes the scan from it, so FILE ends with every row once, as one uninterrupted run
 * writes it.
 *
 * CSV's header is the union of every row's keys, known only at the end: the rows go to a spool
 * beside CKPT (`CKPT.rows`, NDJSON) under the same rules, and FILE is written from it, atomically,
 * once the scan is complete.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import type * as Path from "@effect/platform/Path"
import { Effect, Option, ParseResult, Schema, Stream } from "effect"
import * as Checkpoint from "../Checkpoint.js"
import { MicroappClient } from "../MicroappClient.js"
import type { MicroappError } from "../MicroappError.js"
import type { ScanSummary } from "../RowStream.js"
import { type CommandFailed, UsageError } from "./exitCodes.js"
import {
  atomicFile,
  failedOn,
  type Format,
  formats,
  type JsonRow,
  ndjsonLines,
  spooledKeys,
  writeCsvFromSpool
} from "./output.js"
import type { Stdio, WriteError } from "./stdio.js"

/** What CKPT holds: the scan's checkpoint, and how far the file it writes is committed. */
const CheckpointFile = Schema.Struct({
  kind: Schema.Literal("microapp rows --checkpoint"),
  version: Schema.Literal(1),
  format: Schema.Literal(...formats),
  /** Bytes of FILE (of the spool, for CSV) that hold whole pages the checkpoint counts. */
  length: Schema.NonNegativeInt,
  /** FILE is complete: nothing is left to do. */
  finished: Schema.Boolean,
  scan: Schema.String
})
type CheckpointFile = typeof CheckpointFile.Type

const decodeCheckpointFile = Schema.decodeUnknownEither(Schema.parseJson(CheckpointFile))
const encoder = new TextEncoder()

/** CKPT, if it exists; a clear usage error if it is not a checkpoint of `microapp rows`. */
const load = (
  ckpt: string
): Effect.Effect<Option.Option<CheckpointFile>, UsageError | CommandFailed, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    if (!(yield* Effect.mapError(fs.exists(ckpt), failedOn(`cannot read ${ckpt}`)))) return Option.none()
    const text = yield* Effect.mapError(fs.readFileString(ckpt), failedOn(`cannot read ${ckpt}`))
    return yield* decodeCheckpointFile(text).pipe(
      Effect.mapError((error) =>
        new UsageError({
          message: `${ckpt} is not a checkpoint of microapp rows: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
        })
      ),
      Effect.map(Option.some)
    )
  })

/** Replaces CKPT atomically: a temporary file beside it, synced, renamed over it. */
const save = (ckpt: string, state: CheckpointFile) =>
  atomicFile(ckpt, (destination) => destination.write(`${JSON.stringify(state)}\n`))

/** The size of a file, or a usage error if it is shorter than CKPT says it was. */
const checkLength = (file: string, ckpt: string, length: number) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const info = yield* Effect.option(fs.stat(file))
    const size = Option.match(info, { onNone: () => -1, onSome: (info) => Number(info.size) })
    if (size < length) {
      return yield* new UsageError({
        message: `${file} ${size < 0 ? "is missing" : `holds ${size} bytes`}, but ${ckpt} records ${length}: ` +
          `it was changed since; remove ${ckpt} to start again`
      })
    }
  })

/** How a page's rows are written to the file that grows, given whether anything is written yet. */
const render = (format: Format, rows: ReadonlyArray<JsonRow>, started: boolean): string => {
  if (format !== "json") return ndjsonLines(rows)
  if (rows.length === 0) return ""
  const body = rows.map((row) => JSON.stringify(row)).join(",\n")
  return started ? `,\n${body}` : `[\n${body}`
}

/**
 * Writes the rows of `options`' scan to `output` in `format`, resumable through `ckpt`; the
 * scan's summary, or none when CKPT says FILE is already complete.
 *
 * @since 0.1.0
 * @category commands
 */
export const writeCheckpointed = (
  options: MicroappClient.RowsOptions,
  format: Format,
  output: string,
  ckpt: string,
  withProgress: (
    summary: Effect.Effect<ScanSummary>
  ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R | Stdio>
): Effect.Effect<
  Option.Option<ScanSummary>,
  UsageError | CommandFailed | WriteError | MicroappError,
  MicroappClient | FileSystem.FileSystem | Path.Path | Stdio
> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const stored = yield* load(ckpt)
    const growing = format === "csv" ? `${ckpt}.rows` : output
    if (Option.isSome(stored)) {
      const state = stored.value
      if (state.format !== format) {
        return yield* new UsageError({ message: `${ckpt} was written by --format ${state.format}, not ${format}` })
      }
      if (state.finished) {
        yield* Effect.ignore(fs.remove(`${ckpt}.rows`, { force: true }))
        return Option.none()
      }
      yield* checkLength(growing, ckpt, state.length)
    }
    const resume = yield* Option.match(stored, {
      onNone: () => Effect.succeed(undefined),
      onSome: (state) =>
        Effect.mapError(
          Checkpoint.fromJson(state.scan),
          (error) => new UsageError({ message: `${ckpt}: ${error.reason}` })
        )
    })
    const client = yield* MicroappClient
    const scan = yield* client.scan({ ...options, ...(resume === undefined ? {} : { resume }) }).pipe(
      Effect.mapError((error) =>
        error._tag === "InvalidInput" && error.input === "resume"
          ? new UsageError({ message: `${ckpt} belongs to another query: ${error.reason}` })
          : error
      )
    )
    let length = Option.match(stored, { onNone: () => 0, onSome: (state) => state.length })
    // nothing of FILE changes before the checkpoint has been accepted
    yield* Effect.mapError(
      Option.isSome(stored) ? fs.truncate(growing, length) : fs.writeFile(growing, new Uint8Array()),
      failedOn(`cannot write ${growing}`)
    )
    const saveAt = (finished: boolean, checkpoint: Checkpoint.Checkpoint) =>
      save(ckpt, {
        kind: "microapp rows --checkpoint",
        version: 1,
        format,
        length,
        finished,
        scan: Checkpoint.toJson(checkpoint)
      })
    let last: Checkpoint.Checkpoint | undefined = resume
    yield* withProgress(scan.summary)(Effect.scoped(Effect.gen(function*() {
      const file = yield* Effect.mapError(fs.open(growing, { flag: "a" }), failedOn(`cannot write ${growing}`))
      const append = (text: string) =>
        Effect.gen(function*() {
          const bytes = encoder.encode(text)
          if (bytes.length > 0) yield* Effect.mapError(file.writeAll(bytes), failedOn(`cannot write ${growing}`))
          yield* Effect.mapError(file.sync, failedOn(`cannot write ${growing}`))
          length += bytes.length
        })
      yield* Stream.runForEach(scan.pages, (page) =>
        Effect.gen(function*() {
          yield* append(render(format, page.rows, length > 0))
          last = page.checkpoint
          yield* saveAt(false, page.checkpoint)
        }))
      if (format === "json") yield* append(length > 0 ? "\n]\n" : "[]\n")
    })))
    if (format === "csv") {
      const header = Array.from(yield* spooledKeys(growing))
      yield* atomicFile(output, (destination) => writeCsvFromSpool(growing, header, destination))
    }
    const summary = yield* scan.summary
    if (last !== undefined) yield* saveAt(true, last)
    if (format === "csv") yield* Effect.ignore(fs.remove(growing))
    return Option.some(summary)
  })
