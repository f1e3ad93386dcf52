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
 * CKPT holds the scan's checkpoint in its sink-held form (`Checkpoint.withoutIds`): FILE holds
 * the rows, so a resumed run reads their ids back from it, up to the committed length, and CKPT
 * stays O(page) whatever the table's size. A CKPT of version 2 (the ids in it) or 3 (SHA-256) still
 * resumes. FILE grows, and CKPT moves on, as `committedFile.ts` has every resumable output do.
 *
 * Nothing a resumed run trusts goes unchecked: CKPT carries a checksum of all it records,
 * FILE must still end a row where CKPT says and hold exactly the ids CKPT counts (their count and
 * digest), finished or not, CKPT serves only the query it was written for (its scan's checkpoint
 * names the Microapp, filters, sort and page size; CKPT, the format), and `CKPT.lock` and
 * `FILE.lock` keep a second run away from both while one runs.
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import type * as Path from "@effect/platform/Path"
import { Effect, Either, Option, Schema, Stream } from "effect"
import * as Checkpoint from "../Checkpoint.js"
import * as Codec from "../internal/checkpointCodec.js"
import { idOf } from "../internal/rowId.js"
import { MicroappClient } from "../MicroappClient.js"
import type { MicroappError } from "../MicroappError.js"
import type { ScanSummary } from "../RowStream.js"
import { anotherQuery, appendPages, earlierChecksum, holdLocks } from "./committedFile.js"
import { type CommandFailed, UsageError } from "./exitCodes.js"
import { atomicFile, checkCommitted, failedOn, readSmallFile } from "./fileSafety.js"
import { refusedFile } from "./refusals.js"
import {
  firstFields,
  type Format,
  formats,
  type JsonRow,
  ndjsonLines,
  spooledKeys,
  writeCsvFromSpool
} from "./rowFormats.js"
import type { Stdio, WriteError } from "./stdio.js"

/**
 * The version of CKPT this command writes: 4 has the checksum of every format (`Codec.checksum`),
 * 3 had SHA-256 and left the ids to FILE, 2 held them, 1 had no checksum.
 */
const version = 4

/** The oldest version read is the first with a checksum. */
const Version = Codec.Version({
  current: version,
  reader: "this microapp",
  upgrade: "a newer microapp",
  oldest: { version: 2, before: "has no checksum, so what it records cannot be trusted" }
})

/** What CKPT holds but its checksum: the scan's checkpoint, and how far the file it writes is committed. */
const Body = Schema.Struct({
  kind: Schema.Literal("microapp rows --checkpoint"),
  version: Version,
  format: Schema.Literal(...formats),
  /** Bytes of FILE (of the spool, for CSV) that hold whole pages the checkpoint counts. */
  length: Schema.NonNegativeInt,
  /** FILE is complete: nothing is left to do. */
  finished: Schema.Boolean,
  scan: Schema.String
})
type Body = typeof Body.Type

/** CKPT: its body and the checksum of it, so that no byte a resumed run trusts goes unchecked. */
const CheckpointFile = Schema.Struct({ ...Body.fields, checksum: Schema.String })

/**
 * The largest CKPT read: a scan's checkpoint takes about 16 bytes a row, so this is room for 16
 * million rows; anything larger is refused unread.
 *
 * @since 0.2.0
 * @category constants
 */
export const checkpointFileLimit = 256 * 1024 * 1024

// a key CKPT does not have is an edit too
const decodeCheckpointFile = Codec.decoder(CheckpointFile, { onExcessProperty: "error" })

const keys = Codec.keyOrder(Body)

// the format nests two deep: anything deeper would overflow the parser's stack, not be a checkpoint
const bounds: Codec.Bounds = { chars: checkpointFileLimit, depth: 4 }

/** The checksum of a body written at its version: SHA-256 of its text before version 4. */
const checksumOf = (body: Body): string =>
  body.version < 4 ? earlierChecksum().update(Codec.textOf(body, keys)).digest("hex") : Codec.checksum(body)

/** How to start again when CKPT itself is refused. */
const restoreOrRemove = "restore it, or remove it to start again"

/** CKPT, if it exists; a clear usage error if it is not a checkpoint of `microapp rows` as written. */
export const load = (
  ckpt: string
): Effect.Effect<Option.Option<Body>, UsageError | CommandFailed, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const what = "a checkpoint of microapp rows"
    const text = yield* readSmallFile(ckpt, checkpointFileLimit, what, restoreOrRemove)
    if (Option.isNone(text)) return Option.none()
    const refused = refusedFile(ckpt, what, restoreOrRemove)
    const { checksum, ...body } = yield* Either.mapLeft(
      Either.flatMap(Codec.parse(text.value, bounds, ""), (json) => decodeCheckpointFile(json, "")),
      refused
    )
    if (checksumOf(body) !== checksum) return yield* refused(Codec.checksumRefused(""))
    return Option.some(body)
  })

/** Replaces CKPT atomically (a temporary file beside it, synced, renamed over it); a new CKPT is private. */
export const save = (ckpt: string, body: Body) =>
  atomicFile(
    ckpt,
    (destination) => destination.write(`${Codec.seal(Codec.textOf(body, keys), checksumOf(body))}\n`),
    { mode: 0o600 }
  )

/** The `_id` of a line of the file that grows (an NDJSON line, or a row of the JSON array); null when it has none. */
const idOfLine = (line: string): Either.Either<string | null, string> => {
  // a JSON array's rows are one a line, after "[" and before ",": JSON.stringify escapes line ends
  const row = line.endsWith(",") ? line.slice(0, -1) : line
  // a complete JSON array begins "[" and ends "]", or is "[]" when empty
  if (row === "" || row === "[" || row === "]" || row === "[]") return Either.right(null)
  try {
    return Either.right(idOf(JSON.parse(row)))
  } catch {
    return Either.left("holds a line that is not a row")
  }
}

/** A usage error: `file` is not as CKPT left it, as `what` shows. */
const changedSince = (file: string, what: string, ckpt: string) =>
  new UsageError({ message: `${file} ${what}: it was changed since; remove ${ckpt} to start again` })

/**
 * The ids of the rows in the first `length` bytes of the file that grows, read as a stream: a
 * resumed run gives them back to the sink-held checkpoint, which checks them.
 */
const committedIds = (file: string, ckpt: string, length: number) =>
  Stream.unwrap(
    Effect.map(FileSystem.FileSystem, (fs) =>
      (length === 0 ? Stream.empty : fs.stream(file, { bytesToRead: FileSystem.Size(length) })).pipe(
        Stream.mapError(failedOn(`cannot read ${file}`)),
        Stream.decodeText(),
        Stream.splitLines,
        Stream.mapEffect((line) =>
          Either.mapLeft(idOfLine(line), (reason) => changedSince(file, reason, ckpt))
        ),
        Stream.filter((id): id is string => id !== null)
      ))
  )

/** The `_id`s of the rows of a CSV FILE this command wrote, its first column, read as a stream. */
const csvIds = (file: string, ckpt: string) =>
  Stream.suspend(() => {
    const notHeader = changedSince(file, "does not begin with the header this command writes", ckpt)
    const reader = firstFields()
    let header = true
    return Stream.unwrap(Effect.map(FileSystem.FileSystem, (fs) =>
      fs.stream(file).pipe(
        Stream.mapError(failedOn(`cannot read ${file}`)),
        Stream.decodeText(),
        Stream.mapConcatEffect((text): Either.Either<Array<string>, UsageError> => {
          const fields = reader.read(text)
          if (!header || fields.length === 0) return Either.right(fields)
          header = false
          return fields[0] === "_id" ? Either.right(fields.slice(1)) : Either.left(notHeader)
        }),
        // every record this command writes ends in CRLF, the last one too
        Stream.concat(Stream.suspend(() =>
          header
            ? Stream.fail(notHeader)
            : reader.inRecord()
            ? Stream.fail(changedSince(file, "ends inside a record", ckpt))
            : Stream.empty
        ))
      )))
  })

/** The scan's checkpoint CKPT holds, checked as `Checkpoint.fromJson` checks it. */
const scanOf = (state: Body, ckpt: string) =>
  Effect.mapError(
    Checkpoint.fromJson(state.scan),
    (error) => new UsageError({ message: `${ckpt}: ${error.reason}; ${restoreOrRemove}` })
  )

/** How to start again after a refusal of CKPT as another query's: FILE is another export, maybe one to keep. */
const startAgain = (ckpt: string, output: string) =>
  `to keep ${output}, give this command another --output and --checkpoint; to replace it, remove ${ckpt}`

/**
 * The scan's checkpoint CKPT holds, with the ids of the rows FILE holds (of the spool, for CSV
 * not yet finished) given back, checked against the count and digest it records: finished or
 * not, CKPT is trusted only as far as FILE agrees with it.
 */
const resumable = (state: Body, format: Format, output: string, ckpt: string) =>
  Effect.gen(function*() {
    if (state.format !== format) {
      return yield* new UsageError({
        message: `${ckpt} was written by --format ${state.format}, not ${format}: go on with --format ` +
          `${state.format}, or ${startAgain(ckpt, output)}`
      })
    }
    const checkpoint = yield* scanOf(state, ckpt)
    if (state.finished && !checkpoint.summary.complete) {
      return yield* new UsageError({
        message:
          `${ckpt}: says FILE is complete, but its scan is not: it was changed since; remove ${ckpt} to start again`
      })
    }
    // a finished CSV FILE was written whole from the spool, which is gone: its rows are read from FILE itself
    const csvWritten = state.finished && format === "csv"
    const rows = format === "csv" && !state.finished ? `${ckpt}.rows` : output
    yield* checkCommitted(rows, {
      length: csvWritten ? 0 : state.length,
      // a JSON array's rows end in "}" until it is finished, the comma comes with the next page
      end: format === "json" && !state.finished ? "}" : "\n",
      // nothing follows a finished FILE's last committed byte
      exact: state.finished && !csvWritten,
      record: ckpt,
      remedy: `remove ${ckpt} to start again`
    })
    // a version 2 CKPT holds its ids: FILE is checked against them all the same
    return yield* Checkpoint.withIds(
      Checkpoint.withoutIds(checkpoint),
      csvWritten ? csvIds(output, ckpt) : committedIds(rows, ckpt, state.length)
    ).pipe(Effect.catchTag("InvalidInput", (error) =>
      changedSince(rows, `does not hold the rows ${ckpt} counts (${error.reason})`, ckpt)))
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
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    yield* holdLocks(ckpt, output)
    const stored = yield* load(ckpt)
    const growing = format === "csv" ? `${ckpt}.rows` : output
    const resume = Option.isSome(stored) ? yield* resumable(stored.value, format, output, ckpt) : undefined
    const client = yield* MicroappClient
    // finished or not, CKPT serves its own query only: the scan refuses another's before any request
    const scan = yield* client.scan({ ...options, ...(resume === undefined ? {} : { resume }) }).pipe(
      Effect.mapError(anotherQuery(ckpt, startAgain(ckpt, output)))
    )
    if (Option.isSome(stored) && stored.value.finished) {
      yield* Effect.ignore(fs.remove(`${ckpt}.rows`, { force: true }))
      return Option.none()
    }
    const saveAt = (finished: boolean, checkpoint: Checkpoint.Checkpoint, committed: number) =>
      save(ckpt, {
        kind: "microapp rows --checkpoint",
        version,
        format,
        length: committed,
        finished,
        scan: Checkpoint.toJson(Checkpoint.withoutIds(checkpoint))
      })
    let last: Checkpoint.Checkpoint | undefined = resume
    const length = yield* withProgress(scan.summary)(appendPages({
      file: growing,
      committed: Option.map(stored, (state) => state.length),
      // the spool holds rows, and is no one else's business; FILE is made as any file is
      ...(format === "csv" ? { mode: 0o600 } : {}),
      pages: scan.pages,
      render: (page, length) =>
        Effect.succeed({ text: render(format, page.rows, length > 0), record: page.checkpoint }),
      commit: (checkpoint, committed) =>
        Effect.zipRight(saveAt(false, checkpoint, committed), Effect.sync(() => (last = checkpoint))),
      ...(format === "json" ? { end: (length: number) => length > 0 ? "\n]\n" : "[]\n" } : {})
    }))
    if (format === "csv") {
      const header = Array.from(yield* spooledKeys(growing))
      yield* atomicFile(output, (destination) => writeCsvFromSpool(growing, header, destination))
    }
    const summary = yield* scan.summary
    if (last !== undefined) yield* saveAt(true, last, length)
    if (format === "csv") yield* Effect.ignore(fs.remove(growing))
    return Option.some(summary)
  }))
