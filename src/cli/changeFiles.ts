/**
 * `microapp changes APP --state STATE --output FILE`: one change pass's events appended to FILE
 * as NDJSON page by page, in Debezium's envelope; after each page is on disk, STATE replaced
 * atomically with the baseline (every row's fingerprint by id, the changes written so far folded
 * in), the pass's checkpoint and FILE's length. A run that finds a pass in STATE cuts FILE back
 * to that length and goes on from the checkpoint, so FILE ends with every event once; when the
 * pass ends, STATE keeps only the baseline, for the next pass.
 *
 * STATE is one header line (the selection, the pass in progress, a SHA-256 checksum of all the
 * rest), then one `["id","fingerprint"]` line a row. `STATE.lock` and `FILE.lock` keep a second
 * run away from both while one runs.
 *
 * @since 0.2.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { Clock, Effect, Either, Option, Schema, Stream } from "effect"
import { createHash } from "node:crypto"
import * as Changes from "../Changes.js"
import * as Codec from "../internal/checkpointCodec.js"
import { MicroappClient } from "../MicroappClient.js"
import { isInvalidCheckpoint, type MicroappError } from "../MicroappError.js"
import { Filter } from "../Query.js"
import type { ScanSummary } from "../RowStream.js"
import { eventLines, markLast } from "./changeEvents.js"
import { type CommandFailed, UsageError } from "./exitCodes.js"
import { holdLock } from "./lockFile.js"
import { atomicFile, checkCommitted, failedOn, refusedFile, regularFileSize } from "./output.js"
import { packageVersion } from "./packageVersion.js"
import type { Stdio, WriteError } from "./stdio.js"

const kind = "microapp changes --state"

/** The version of STATE this command writes and reads. */
const version = 1

/** The pass in progress: where it writes, how much of FILE is committed, and where the pass stands. */
const Pass = Schema.Struct({
  /** FILE, as an absolute path. */
  output: Schema.String,
  length: Schema.NonNegativeInt,
  /** A first pass: its rows are snapshot reads (`"r"`), not inserts. */
  snapshot: Schema.Boolean,
  /** Lines `key<TAB>value` (`--key`); missing in a STATE written before `--key`. */
  key: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** `Changes.toJson` of the last page committed; null before the first. */
  checkpoint: Schema.NullOr(Schema.String)
})
type Pass = typeof Pass.Type

/** STATE's first line, but its checksum. */
const Header = Schema.Struct({
  kind: Schema.Literal(kind),
  version: Codec.Version({ current: version, reader: "this microapp", upgrade: "a newer microapp" }),
  microAppID: Schema.String,
  filters: Schema.Array(Filter),
  /** The baseline's lines that follow. */
  rows: Schema.NonNegativeInt,
  pass: Schema.NullOr(Pass)
})
type Header = typeof Header.Type

// a key STATE does not have is an edit too
const decodeHeader = Codec.decoder(Header, { onExcessProperty: "error" })

const keys = Codec.keyOrder(Header)

const fingerprintText = /^[0-9a-f]{16}$/

/**
 * The largest STATE read: about 50 bytes a row of the baseline, and the scan's checkpoint about
 * 16 more while a pass runs, so this is room for about 4 million rows.
 *
 * @since 0.2.0
 * @category constants
 */
export const stateFileLimit = 256 * 1024 * 1024

// the format nests three deep: anything deeper would overflow the parser's stack, not be a state file
const bounds: Codec.Bounds = { chars: stateFileLimit, depth: 4 }

/** What STATE holds. */
interface State {
  readonly header: Header
  readonly baseline: ReadonlyMap<string, string>
}

/** A baseline line's id and fingerprint, or what is wrong with it. */
const entryOf = (line: string): Either.Either<readonly [string, string], string> =>
  Either.flatMap(
    Either.try({ try: (): unknown => JSON.parse(line), catch: () => "a baseline line is not JSON" }),
    (entry) =>
      Array.isArray(entry) && entry.length === 2 && typeof entry[0] === "string" && typeof entry[1] === "string" &&
        fingerprintText.test(entry[1])
        ? Either.right([entry[0], entry[1]] as const)
        : Either.left("a baseline line is not [\"id\", \"16 hex digits\"]")
  )

/** STATE, if it exists; a clear usage error if it is not a state file of `microapp changes` as written. */
export const load = (
  state: string
): Effect.Effect<Option.Option<State>, UsageError | CommandFailed, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const what = "a state file of microapp changes"
    const remedy = "restore it, or remove it to start again with a snapshot"
    const size = yield* regularFileSize(state, stateFileLimit, what, remedy)
    if (Option.isNone(size)) return Option.none()
    const notState = (reason: string) => new UsageError({ message: `${state} is not ${what}: ${reason}; ${remedy}` })
    const hash = createHash("sha256")
    const baseline = new Map<string, string>()
    let headerLine: { readonly text: string; readonly checksum: string } | undefined
    yield* fs.stream(state, { bytesToRead: FileSystem.Size(size.value) }).pipe(
      Stream.mapError(failedOn(`cannot read ${state}`)),
      Stream.decodeText(),
      Stream.splitLines,
      Stream.runForEach((line) => {
        if (headerLine === undefined) {
          headerLine = Codec.unseal(line)
          if (headerLine === undefined) return notState("its first line is not a header with a checksum")
          hash.update(`${headerLine.text}\n`)
          return Effect.void
        }
        hash.update(`${line}\n`)
        const entry = entryOf(line)
        if (Either.isLeft(entry)) return notState(entry.left)
        const [id, fingerprint] = entry.right
        if (baseline.has(id)) return notState(`the baseline has id ${JSON.stringify(id)} twice`)
        baseline.set(id, fingerprint)
        return Effect.void
      })
    )
    if (headerLine === undefined) return yield* notState("it is empty")
    const refused = refusedFile(state, what, remedy)
    if (hash.digest("hex") !== headerLine.checksum) return yield* refused(Codec.checksumRefused(""))
    const header = yield* Either.mapLeft(
      Either.flatMap(Codec.parse(headerLine.text, bounds, ""), (json) => decodeHeader(json, "")),
      refused
    )
    if (header.rows !== baseline.size) {
      return yield* notState(`its header counts ${header.rows} rows, but it holds ${baseline.size}`)
    }
    return Option.some({ header, baseline })
  })

/** Replaces STATE atomically (a temporary file beside it, synced, renamed over it); a new STATE is private. */
export const save = (state: string, header: Header, baseline: ReadonlyMap<string, string>) =>
  atomicFile(state, (destination) =>
    Effect.gen(function*() {
      const text = Codec.canonical(header, keys)
      const hash = createHash("sha256").update(`${text}\n`)
      // in pieces: a baseline of millions of rows is more than one string should hold
      const pieces: Array<string> = []
      let piece = ""
      for (const entry of baseline) {
        piece += `${JSON.stringify(entry)}\n`
        if (piece.length >= 1 << 16) {
          pieces.push(piece)
          piece = ""
        }
      }
      pieces.push(piece)
      for (const each of pieces) hash.update(each)
      yield* destination.write(`${Codec.seal(text, hash.digest("hex"))}\n`)
      for (const each of pieces) yield* destination.write(each)
    }), { mode: 0o600 })

const encoder = new TextEncoder()

/**
 * Runs the change pass of `options` into `output`, resumable through `state`; the pass's summary.
 * A new pass needs `output` missing or empty; a pass in progress, the `output` it writes.
 *
 * @since 0.2.0
 * @category commands
 */
export const writeChanges = (
  options: Omit<Changes.Options<never, never>, "baseline" | "resume">,
  output: string,
  state: string,
  key: boolean,
  withProgress: (
    summary: Effect.Effect<ScanSummary>
  ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R | Stdio>
): Effect.Effect<
  Changes.Summary,
  UsageError | CommandFailed | WriteError | MicroappError,
  MicroappClient | FileSystem.FileSystem | Path.Path | Stdio
> =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const target = path.resolve(output)
    if (target === path.resolve(state)) {
      return yield* new UsageError({ message: `--state and --output are the same file: ${output}` })
    }
    // held until the run ends, from before STATE is read; taking them shows an unwritable directory before any request
    yield* holdLock(state, `cannot create ${state}`)
    yield* holdLock(output, `cannot write ${output}`)
    const stored = yield* load(state)
    const selection = { microAppID: options.microAppID, filters: options.filters ?? [] }
    const inProgress: Pass | null = Option.match(stored, { onNone: () => null, onSome: ({ header }) => header.pass })
    if (Option.isSome(stored)) {
      const { filters, microAppID } = stored.value.header
      if (JSON.stringify({ microAppID, filters }) !== JSON.stringify(selection)) {
        return yield* new UsageError({
          message: `${state} holds the state of Microapp ${microAppID} with filters ${JSON.stringify(filters)}, ` +
            `not of this one: each Microapp and filter has a STATE of its own`
        })
      }
    }
    if (inProgress === null) {
      const info = yield* Effect.option(fs.stat(output))
      if (Option.isSome(info) && info.value.size > 0) {
        return yield* new UsageError({
          message: `${output} exists and is not empty: a new pass writes its events to a new or empty file`
        })
      }
    } else {
      if (inProgress.output !== target) {
        return yield* new UsageError({
          message: `${state} has a pass in progress that writes ${inProgress.output}: go on with --output ` +
            `${inProgress.output}`
        })
      }
      if (inProgress.key !== key) {
        return yield* new UsageError({
          message: `${state} has a pass in progress that writes ${key ? "no keys" : "keys"}: go on ` +
            `${key ? "without" : "with"} --key`
        })
      }
      yield* checkCommitted(output, {
        length: inProgress.length,
        end: "\n",
        record: state,
        remedy: `restore it, or remove ${state} and it to start again with a snapshot`
      })
    }
    const saved = inProgress?.checkpoint ?? null
    const resume = saved === null ? undefined : yield* Effect.mapError(
      Changes.fromJson(saved),
      (error) => new UsageError({ message: `${state}: ${error.reason}` })
    )
    let baseline: ReadonlyMap<string, string> = Option.match(stored, {
      onNone: () => new Map<string, string>(),
      onSome: (s) => s.baseline
    })
    const client = yield* MicroappClient
    const release = yield* packageVersion
    const pass = yield* client.changes({ ...options, baseline: Changes.Baseline.fromMap(baseline), resume }).pipe(
      Effect.mapError((error) =>
        isInvalidCheckpoint(error) && error.problem === "another query"
          ? new UsageError({ message: `${state} belongs to another query: ${error.reason}` })
          : error
      )
    )
    const snapshot = inProgress?.snapshot ?? Option.isNone(stored)
    let length = inProgress?.length ?? 0
    const saveAt = (checkpoint: Changes.Checkpoint | undefined, ongoing: boolean) =>
      save(state, {
        kind,
        version,
        ...selection,
        rows: baseline.size,
        pass: ongoing
          ? {
            output: target,
            length,
            snapshot,
            key,
            checkpoint: checkpoint === undefined ? null : Changes.toJson(checkpoint)
          }
          : null
      }, baseline)
    if (inProgress === null) {
      // FILE first, then STATE: a run killed between the two finds FILE empty and starts the pass again
      yield* Effect.mapError(fs.writeFile(output, new Uint8Array(), { flag: "a" }), failedOn(`cannot write ${output}`))
      yield* saveAt(undefined, true)
    } else {
      // a page half-written when the process died goes
      yield* Effect.mapError(fs.truncate(output, length), failedOn(`cannot write ${output}`))
    }
    yield* withProgress(pass.summary)(Effect.scoped(Effect.gen(function*() {
      const file = yield* Effect.mapError(fs.open(output, { flag: "a" }), failedOn(`cannot write ${output}`))
      yield* Stream.runForEach(pass.pages, (page) =>
        Effect.gen(function*() {
          const bytes = encoder.encode(eventLines(page.changes, {
            snapshot,
            first: length === 0,
            microAppID: options.microAppID,
            version: release,
            now: yield* Clock.currentTimeMillis,
            key
          }))
          if (bytes.length > 0) {
            yield* Effect.mapError(file.writeAll(bytes), failedOn(`cannot write ${output}`))
            yield* Effect.mapError(file.sync, failedOn(`cannot write ${output}`))
            length += bytes.length
          }
          baseline = Changes.fold(baseline, page.changes)
          yield* saveAt(page.checkpoint, true)
        }))
    })))
    if (snapshot) yield* markLast(output, length)
    // the last page's checkpoint is "done": a run killed before this commit resumes from it, and has only this left
    yield* saveAt(undefined, false)
    return yield* pass.summary
  }))
