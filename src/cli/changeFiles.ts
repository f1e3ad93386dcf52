/**
 * `microapp changes APP --state STATE --output FILE`: one change pass's events appended to FILE
 * as NDJSON page by page, as Debezium's events (`effect-microapp/debezium`); after each page is on
 * disk, STATE moves on in one transaction (`changeState.ts`: the baseline's rows, the pass's
 * checkpoint, FILE's length). A run that finds a pass in STATE cuts FILE back to that length and
 * goes on from the checkpoint, so FILE ends with every event once: FILE grows, and STATE moves on,
 * as `committedFile.ts` has every resumable output do.
 *
 * STATE written by the earlier version (a text: a header line, then one `["id","fingerprint"]`
 * line a row, under SHA-256; `load` reads it) is made an SQLite STATE by the next run, with the
 * fingerprints and no whole rows: the updates and deletes of its next pass carry only their key as
 * `before`.
 *
 * @since 0.2.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Layer, Option, Redacted, Schema, Stream } from "effect"
import { pathToFileURL } from "node:url"
import * as Changes from "../Changes.js"
import * as Debezium from "../debezium/Debezium.js"
import * as Codec from "../internal/checkpointCodec.js"
import { MicroappClient } from "../MicroappClient.js"
import type { MicroappError } from "../MicroappError.js"
import { Filter } from "../Query.js"
import type { ScanSummary } from "../RowStream.js"
import { eventLines, markLast } from "./changeEvents.js"
import * as State from "./changeState.js"
import { databaseFailed, databaseLayer } from "./commands/mirror.js"
import { anotherQuery, appendPages, earlierChecksum, holdLocks } from "./committedFile.js"
import { type CommandFailed, UsageError } from "./exitCodes.js"
import { checkCommitted, failedOn, regularFileSize } from "./fileSafety.js"
import { packageVersion } from "./packageVersion.js"
import { refusedFile } from "./refusals.js"
import type { Stdio, WriteError } from "./stdio.js"

const kind = "microapp changes --state"

/** The version of the earlier STATE, a text. */
const version = 1

/** The pass in progress: where it writes, how much of FILE is committed, and where the pass stands. */
const PassSchema = Schema.Struct({
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

/** STATE's first line, but its checksum. */
const Header = Schema.Struct({
  kind: Schema.Literal(kind),
  version: Codec.Version({ current: version, reader: "this microapp", upgrade: "a newer microapp" }),
  microAppID: Schema.String,
  filters: Schema.Array(Filter),
  /** The baseline's lines that follow. */
  rows: Schema.NonNegativeInt,
  pass: Schema.NullOr(PassSchema)
})
type Header = typeof Header.Type

// a key STATE does not have is an edit too
const decodeHeader = Codec.decoder(Header, { onExcessProperty: "error" })

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

/** What the earlier version's STATE holds. */
interface EarlierState {
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

/** The earlier version's STATE, if it exists; a clear usage error if it is not a state file of `microapp changes` as written. */
export const load = (
  state: string
): Effect.Effect<Option.Option<EarlierState>, UsageError | CommandFailed, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const what = "a state file of microapp changes"
    const remedy = `restore it, or ${startAgain(state)}`
    const size = yield* regularFileSize(state, stateFileLimit, what, remedy)
    if (Option.isNone(size)) return Option.none()
    const notState = (reason: string) => new UsageError({ message: `${state} is not ${what}: ${reason}; ${remedy}` })
    const hash = earlierChecksum()
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

/** Pages in a row that changed nothing, committed at once: a commit syncs STATE, which costs more than the page. */
const quietPagesACommit = 16

/** What an SQLite database's first 16 bytes are. */
const sqliteMagic = "SQLite format 3\u0000"

/** Whether `file` begins as an SQLite database does (else it is the earlier version's text, or not a STATE). */
const isSqlite = (file: string) =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const handle = yield* Effect.mapError(fs.open(file, { flag: "r" }), failedOn(`cannot read ${file}`))
    const head = new Uint8Array(sqliteMagic.length)
    const read = yield* Effect.mapError(handle.read(head), failedOn(`cannot read ${file}`))
    return Number(read) === head.length && new TextDecoder().decode(head) === sqliteMagic
  }))

/**
 * Now in nanoseconds since the epoch, on the clock of `source.ts_ms` (the monotonic clock's
 * nanoseconds drift from it by milliseconds): its milliseconds, and the monotonic clock's rest.
 */
const writtenNow = Effect.zipWith(
  Clock.currentTimeMillis,
  Clock.currentTimeNanos,
  (millis, nanos) => BigInt(millis) * 1_000_000n + nanos % 1_000_000n
)

/** The files SQLite keeps beside a database while it is open, or after a crash. */
const sqliteFiles = (file: string) => [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]

const removeAll = (files: ReadonlyArray<string>) =>
  Effect.flatMap(
    FileSystem.FileSystem,
    (fs) => Effect.forEach(files, (file) => Effect.ignore(fs.remove(file, { force: true })), { discard: true })
  )

/** The SQLite database at `file`, as `mirror --db file:...` opens it; what it refuses named as STATE's. */
const sqliteAt = (file: string) =>
  Layer.mapError(
    databaseLayer(Redacted.make(pathToFileURL(file).href)),
    (error) =>
      error._tag === "UsageError" ? new UsageError({ message: error.message.replace(/^--db/, "--state") }) : error
  )

/** The remedy every refusal of STATE ends with. */
const startAgain = (state: string, output?: string) =>
  `remove ${state}${output === undefined ? "" : ` and ${output}`} to start again with a snapshot`

/**
 * The earlier version's STATE at `state` made an SQLite STATE in place: the same selection and
 * baseline (fingerprints, no whole rows), after one complete pass. A pass in progress cannot go on
 * under this version: its checkpoint holds what only the earlier one reads back.
 */
const upgrade = (state: string, legacy: EarlierState) =>
  Effect.gen(function*() {
    const { header } = legacy
    if (header.pass !== null) {
      return yield* new UsageError({
        message: `${state} holds a pass in progress written by an earlier microapp, which this one cannot go on ` +
          `with: finish it with that version, or ${startAgain(state, header.pass.output)}`
      })
    }
    const fs = yield* FileSystem.FileSystem
    const next = `${state}.upgrade`
    yield* removeAll(sqliteFiles(next))
    yield* Effect.scoped(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* State.createTables(sql)
        yield* sql.withTransaction(Effect.zipRight(
          State.reset(sql, { microAppID: header.microAppID, filters: header.filters }, 1),
          State.insertBaseline(
            sql,
            Array.from(legacy.baseline, ([row_id, fingerprint]) => ({ row_id, fingerprint, data: null }))
          )
        ))
      }).pipe(
        Effect.catchTag("SqlError", databaseFailed),
        Effect.provide(sqliteAt(next))
      )
    )
    yield* Effect.mapError(fs.chmod(next, 0o600), failedOn(`cannot write ${next}`))
    yield* Effect.mapError(fs.rename(next, state), failedOn(`cannot write ${state}`))
  })

/**
 * How `microapp changes` writes: the format of FILE (`--key`, `--schemas`, tombstones, `--before`,
 * `--table`), and where the events say they come from.
 *
 * @since 0.2.0
 * @category models
 */
export interface Writing {
  readonly format: State.Format
  /** `source.name` and `source.db`. */
  readonly name: string
  readonly db: string
  /** Columns known before any row is read (`--fields`: `microapp describe --json`'s output). */
  readonly fields: ReadonlyArray<Debezium.Field>
}

/**
 * Runs the change pass of `options` into `output`, resumable through `state`; the pass's summary,
 * and how many of its events carry only the key as their `before` (STATE held no whole row for
 * them). A new pass needs `output` missing or empty; a pass in progress, the `output` and format
 * it writes. A run that fails before its first page is committed leaves neither a STATE nor a
 * FILE it created.
 *
 * @since 0.2.0
 * @category commands
 */
export const writeChanges = (
  options: Omit<Changes.Options<never, never>, "baseline" | "resume">,
  output: string,
  state: string,
  writing: Writing,
  withProgress: (
    summary: Effect.Effect<ScanSummary>
  ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R | Stdio>
): Effect.Effect<
  {
    readonly summary: Changes.Summary
    readonly lacking: number
    /** A first pass, whose events are all snapshot reads. */
    readonly snapshot: boolean
  },
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
    yield* holdLocks(state, output)
    const stateExisted = Option.isSome(yield* regularFileSize(state, Number.MAX_SAFE_INTEGER, "a state file"))
    const outputExisted = Option.isSome(yield* Effect.option(fs.stat(output)))
    if (stateExisted && !(yield* isSqlite(state))) {
      const legacy = yield* load(state).pipe(
        Effect.mapError((error) =>
          error._tag === "UsageError" && !error.message.includes("start again")
            ? new UsageError({ message: `${error.message}: ${startAgain(state)}` })
            : error
        )
      )
      if (Option.isSome(legacy)) yield* upgrade(state, legacy.value)
    }
    if (!stateExisted) {
      // a new STATE is private: SQLite opens the empty file as a database, and gives its journal the file's mode
      yield* Effect.mapError(fs.writeFile(state, new Uint8Array(), { mode: 0o600 }), failedOn(`cannot create ${state}`))
    }
    const { format } = writing
    const selection = { microAppID: options.microAppID, filters: options.filters ?? [] }
    let committed = false
    const run = Effect.scoped(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const notState = (error: { readonly message: string; readonly cause?: unknown }) =>
          new UsageError({
            message: `${state} is not a state file of microapp changes (${
              error.cause instanceof Error ? error.cause.message : error.message
            }): restore it, or ${startAgain(state)}`
          })
        yield* Effect.mapError(State.createTables(sql), notState)
        let stored = yield* Effect.mapError(State.stored(sql), notState)
        const replaceable = Option.match(stored, {
          onNone: () => true,
          // nothing of it was ever committed: a command corrected after a mistake starts afresh
          onSome: (s) => s.passes === 0 && (Option.isNone(s.pass) || s.pass.value.checkpoint === null)
        })
        if (Option.isSome(stored) && stored.value.version > State.stateVersion) {
          return yield* new UsageError({
            message: `${state} was written by a newer microapp (version ${stored.value.version}; this one reads ` +
              `${State.stateVersion}): read it with a newer microapp, or ${startAgain(state)}`
          })
        }
        const sameSelection = Option.exists(
          stored,
          ({ filters, microAppID }) => JSON.stringify({ microAppID, filters }) === JSON.stringify(selection)
        )
        if (!sameSelection) {
          if (Option.isSome(stored) && !replaceable) {
            const { filters, microAppID } = stored.value
            return yield* new UsageError({
              message: `${state} holds the state of Microapp ${microAppID} with filters ${JSON.stringify(filters)}, ` +
                `not of this one: each Microapp and filter has a STATE of its own; give another --state, or ` +
                startAgain(state)
            })
          }
          yield* Effect.mapError(sql.withTransaction(State.reset(sql, selection)), notState)
          stored = yield* Effect.mapError(State.stored(sql), notState)
        }
        const current = yield* Option.match(stored, {
          onNone: () => Effect.die(new Error("STATE has no row after it was made")),
          onSome: Effect.succeed
        })
        const inProgress = Option.getOrUndefined(current.pass)
        if (inProgress === undefined) {
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
                `${inProgress.output}, or ${startAgain(state, inProgress.output)}`
            })
          }
          if (JSON.stringify(inProgress.format) !== JSON.stringify(format)) {
            return yield* new UsageError({
              message: `${state} has a pass in progress that writes ${formatText(inProgress.format)}: go on with ` +
                `${flagsOf(inProgress.format)}, or ${startAgain(state, output)}`
            })
          }
          yield* checkCommitted(output, {
            length: inProgress.length,
            end: "\n",
            record: state,
            remedy: `restore it, or ${startAgain(state, output)}`
          })
        }
        const resume = inProgress?.checkpoint == null ? undefined : yield* Changes.fromJson(inProgress.checkpoint).pipe(
          Effect.flatMap((held) => Changes.withIds(held, State.sinkIds(sql))),
          Effect.mapError((error) =>
            error._tag === "SqlError" ? notState(error) : new UsageError({ message: `${state}: ${error.reason}` })
          )
        )
        const client = yield* MicroappClient
        const release = yield* packageVersion
        const pass = yield* client.changes({ ...options, baseline: State.baseline(sql), resume }).pipe(
          Effect.mapError(
            anotherQuery(state, `go on with the flags of the pass in progress, or ${startAgain(state, output)}`)
          )
        )
        const snapshot = inProgress?.snapshot ?? current.passes === 0
        let lacking = inProgress?.lacking ?? 0
        let fields = Debezium.widen(current.fields, [], writing.fields)
        if (inProgress === undefined) {
          // FILE first, then STATE: a run killed between the two finds FILE empty and starts the pass again
          yield* Effect.mapError(
            fs.writeFile(output, new Uint8Array(), { flag: "a" }),
            failedOn(`cannot write ${output}`)
          )
          yield* sql.withTransaction(State.openPass(sql, { output: target, snapshot, format }))
        }
        const source: Debezium.Source = {
          name: writing.name,
          db: writing.db,
          schema: options.microAppID,
          table: format.table,
          version: release
        }
        const unsaved: Array<ReadonlyArray<string>> = []
        const length = yield* withProgress(pass.summary)(appendPages({
          file: output,
          committed: Option.some(inProgress?.length ?? 0),
          pages: pass.pages,
          render: (page, length) =>
            Effect.gen(function*() {
              const seenAt = yield* Clock.currentTimeMillis
              const changed = page.changes.flatMap((change) => change._tag === "Inserted" ? [] : [change.id])
              const before = format.before === "key"
                ? undefined
                : changed.length === 0
                ? new Map<string, Readonly<Record<string, unknown>>>()
                : yield* State.previousRows(sql, changed)
              fields = Debezium.widen(fields, [
                ...page.changes.flatMap((change) => change._tag === "Deleted" ? [] : [change.row]),
                ...(before?.values() ?? [])
              ])
              const lines = eventLines(page.changes, {
                snapshot,
                first: length === 0,
                source,
                fields,
                seenAt,
                writtenAt: yield* writtenNow,
                key: format.key,
                schemas: format.schemas,
                tombstones: format.tombstones,
                before
              })
              lacking += lines.lacking
              // the commit records what this page leaves: the next page is rendered while it commits
              return { text: lines.text, record: { page, fields, lacking } }
            }),
          commit: ({ fields, lacking, page }, length) => {
            const quiet = page.changes.length + page.found.length + page.unconfirmed.length === 0 &&
              page.checkpoint.phase === "scan"
            // a page that changed nothing moves no row and writes no event: its ids wait for a later commit,
            // and a run stopped before it reads the page again, with nothing written twice
            if (quiet && unsaved.length < quietPagesACommit) {
              unsaved.push(page.seen)
              return Effect.void
            }
            return Effect.zipRight(
              State.commitPage(sql, { ...page, seen: [...unsaved.flat(), ...page.seen] }, {
                wholeRows: format.before === "row",
                length,
                fields,
                lacking
              }),
              Effect.sync(() => {
                unsaved.length = 0
                committed = true
              })
            )
          }
        }))
        if (snapshot) yield* markLast(output, length)
        // the last page's checkpoint is "done": a run killed before this commit resumes from it, and has only this left
        yield* State.closePass(sql)
        return { summary: yield* pass.summary, lacking, snapshot }
      }).pipe(
        Effect.catchTag("SqlError", databaseFailed),
        Effect.provide(sqliteAt(state))
      )
    )
    return yield* run.pipe(
      // a mistake costs nothing: what a run that committed nothing created goes with it
      Effect.onError(() =>
        committed || stateExisted
          ? Effect.void
          : Effect.zipRight(removeAll(sqliteFiles(state)), outputExisted ? Effect.void : removeAll([output]))
      )
    )
  }))

/** A format in words, for a refusal. */
const formatText = (format: State.Format) =>
  [
    format.key ? "keys" : "no keys",
    format.schemas ? "schemas" : "no schemas",
    `${format.before} before images`,
    ...(format.key ? [format.tombstones ? "tombstones" : "no tombstones"] : []),
    `table ${format.table}`
  ].join(", ")

/** The flags that write a format. */
const flagsOf = (format: State.Format) =>
  [
    ...(format.key ? ["--key"] : []),
    ...(format.schemas ? ["--schemas"] : []),
    `--before ${format.before}`,
    ...(format.key && !format.tombstones ? ["--no-tombstones"] : []),
    `--table ${format.table}`
  ].join(" ")
