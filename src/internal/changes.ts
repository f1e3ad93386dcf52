/**
 * Change passes: a scan (the public scan, resumable by its checkpoints) of rows with the id and
 * fingerprint each had as the server sent it, compared page by page with a baseline; then, after
 * an exhaustive scan, the baseline's ids the scan did not see, as deletes. A pass's checkpoint
 * wraps the scan's with the counts, the phase and the ids already reported deleted.
 */
import { Data, Effect, Either, Predicate, Ref, Schema, Stream } from "effect"
import type * as Changes from "../Changes.js"
import * as ScanCheckpoint from "../Checkpoint.js"
import type { InvalidRowPolicy, MicroappClient } from "../MicroappClient.js"
import { InvalidInput, UnexpectedResponse } from "../MicroappError.js"
import type * as RowStream from "../RowStream.js"
import { validateEither } from "./bounds.js"
import { fingerprint } from "./fingerprint.js"
import { formatPath, type RowDecoder } from "./http/decode.js"
import { endpoints } from "./http/endpoints.js"
import { where } from "./http/errors.js"
import { faultOf } from "./http/plainData.js"
import {
  CheckpointImpl as ScanCheckpointImpl,
  gatherIds,
  parseJsonText,
  withIds as scanWithIds,
  withoutIds as scanWithoutIds
} from "./scan/checkpoint.js"
import * as IdSet from "./scan/IdSet.js"
import { encodeSeen, HeldJson } from "./scan/state.js"
import { storableFault } from "./storable.js"

export const Change = Data.taggedEnum<Changes.ChangeDefinition>()

/** A row of a change pass: decoded, with the id and fingerprint of the row as the server sent it. */
export interface Identified<A> {
  readonly id: string
  readonly row: A
  readonly fingerprint: string
}

/**
 * `decoder`, each row kept with the id and fingerprint of its undecoded form, so that typed and
 * untyped passes agree. A row without an id cannot be compared: it fails the pass. A row a copy
 * cannot keep exactly (its id, a text or a number) is an invalid row, under the pass's `policy`.
 */
export const identified = <A>(decoder: RowDecoder<A>, policy: InvalidRowPolicy): RowDecoder<Identified<A>> =>
(
  rows,
  indexes,
  info
) => {
  const out: Array<Identified<A>> = []
  const invalid: Array<UnexpectedResponse> = []
  for (let i = 0; i < rows.length; i++) {
    const source = rows[i]
    const rowIndex = indexes?.[i] ?? i
    const decoded = decoder([source], [rowIndex], info)
    if (Either.isLeft(decoded)) return Either.left(decoded.left)
    invalid.push(...decoded.right.invalid)
    const [row] = decoded.right.rows
    if (row === undefined) continue
    const id = IdSet.idOf(source)
    if (id === null) {
      return Either.left(
        new UnexpectedResponse({
          ...where(info),
          status: 200,
          kind: "Row",
          reason: "has no _id: a change pass compares rows by id",
          rowIndex
        })
      )
    }
    const fault = storableFault(id, source)
    if (fault !== undefined) {
      const error = new UnexpectedResponse({
        ...where(info),
        status: 200,
        kind: "Row",
        reason: fault.reason,
        rowIndex,
        rowID: id,
        fieldPath: formatPath(fault.path)
      })
      if (policy === "fail") return Either.left(error)
      invalid.push(error)
      continue
    }
    out.push({ id, row, fingerprint: fingerprint(source) })
  }
  return Either.right({ rows: out, invalid })
}

const fromMap = (fingerprints: ReadonlyMap<string, string>): Changes.Baseline => ({
  lookup: (ids) =>
    Effect.sync(() => {
      const found = new Map<string, string>()
      for (const id of ids) {
        const known = fingerprints.get(id)
        if (known !== undefined) found.set(id, known)
      }
      return found
    }),
  unseen: (seen) =>
    Stream.fromIterable(fingerprints).pipe(
      Stream.filter(([id]) => !seen(id)),
      Stream.map(([id, fingerprint]) => ({ id, fingerprint }))
    )
})

export const Baseline = { empty: fromMap(new Map()), fromMap }

export const fold = (
  fingerprints: ReadonlyMap<string, string>,
  changes: Iterable<Changes.Change<unknown>>
): ReadonlyMap<string, string> => {
  const next = new Map(fingerprints)
  for (const change of changes) {
    if (change._tag === "Deleted") next.delete(change.id)
    else next.set(change.id, change.fingerprint)
  }
  return next
}

// --- checkpoints ---------------------------------------------------------------------------------

export const CheckpointTypeId: Changes.CheckpointTypeId = Symbol.for(
  "effect-microapp/Changes/Checkpoint"
) as Changes.CheckpointTypeId

type Phase = Changes.Checkpoint["phase"]

interface Counts {
  readonly inserted: number
  readonly updated: number
  readonly unchanged: number
  readonly deleted: number
}

const noCounts: Counts = { inserted: 0, updated: 0, unchanged: 0, deleted: 0 }

const summaryOf = (scan: RowStream.ScanSummary, phase: Phase, counts: Counts): Changes.Summary => ({
  ...scan,
  ...counts,
  deletes: phase === "scan" ? "pending" : scan.exhaustive ? "reported" : "skipped"
})

class CheckpointImpl implements Changes.Checkpoint {
  readonly [CheckpointTypeId]: Changes.CheckpointTypeId = CheckpointTypeId
  constructor(
    readonly scan: ScanCheckpoint.Checkpoint,
    readonly phase: Phase,
    readonly counts: Counts,
    /** The ids reported deleted so far, or their count and digest when a sink holds them. */
    readonly deleted: IdSet.ExactContents | IdSet.HeldContents
  ) {}
  get summary(): Changes.Summary {
    return summaryOf(this.scan.summary, this.phase, this.counts)
  }
}

export const isCheckpoint = (u: unknown): u is Changes.Checkpoint => u instanceof CheckpointImpl

const noneDeleted: IdSet.ExactContents = IdSet.exactContents("", [])

/** What a set of deleted ids (exact, with a journal) holds now, as a value. */
const contentsOf = (deleted: IdSet.IdSet): IdSet.ExactContents => {
  const contents = deleted.contents()
  return contents?._tag === "Exact" ? contents : noneDeleted
}

const Count = Schema.NonNegativeInt

const PackedIds = Schema.Struct({ packed: Schema.String, others: Schema.Array(Schema.String) })

const Json = Schema.Struct({
  version: Schema.Literal(1),
  phase: Schema.Literal("scan", "deletes", "done"),
  counts: Schema.Struct({ inserted: Count, updated: Count, unchanged: Count, deleted: Count }),
  deleted: Schema.Union(PackedIds, HeldJson),
  scan: ScanCheckpoint.Checkpoint,
  checksum: Schema.String
})

const encodeScan = Schema.encodeSync(ScanCheckpoint.Checkpoint)

/** Under a key, so that a failure's path starts with "checkpoint". */
const decodeJson = validateEither(Schema.Struct({ checkpoint: Json }), endpoints.rows, "checkpoint")

export const toJson = (checkpoint: Changes.Checkpoint): string => {
  // a value that only looks like a checkpoint is written as null, which fromJson refuses
  if (!(checkpoint instanceof CheckpointImpl)) return "null"
  const body = {
    version: 1,
    phase: checkpoint.phase,
    counts: checkpoint.counts,
    deleted: encodeSeen(checkpoint.deleted),
    scan: encodeScan(checkpoint.scan)
  }
  return JSON.stringify({ ...body, checksum: fingerprint(body) })
}

const invalid = (input: string, reason: string) =>
  new InvalidInput({ method: "POST", path: endpoints.rows.path, input, reason })

/** The first way in which a decoded checkpoint is not a state a pass could have been in, if any. */
const problemOf = (json: typeof Json.Type, deletedIds: number): InvalidInput | undefined => {
  const scan = json.scan.summary
  const { counts, phase } = json
  if (json.scan.query.dedupe !== "exact") {
    return invalid("checkpoint.scan.query.dedupe", "must be \"exact\": a change pass keeps every id it saw")
  }
  if (counts.inserted + counts.updated + counts.unchanged !== scan.rows) {
    return invalid(
      "checkpoint.counts",
      `count ${counts.inserted + counts.updated + counts.unchanged} rows compared, but the scan handed on ${scan.rows}`
    )
  }
  if ((phase === "scan") === scan.complete) {
    return invalid("checkpoint.phase", `is "${phase}", but the scan is ${scan.complete ? "" : "not "}complete`)
  }
  if (phase === "deletes" && !scan.exhaustive) {
    return invalid("checkpoint.phase", "is \"deletes\", but the scan was not exhaustive")
  }
  if (counts.deleted !== deletedIds) {
    return invalid(
      "checkpoint.counts.deleted",
      `is ${counts.deleted}, but the checkpoint holds ${deletedIds} deleted ids`
    )
  }
  if (counts.deleted > 0 && (phase === "scan" || !scan.exhaustive)) {
    return invalid("checkpoint.counts.deleted", "must be 0 until an exhaustive scan has ended")
  }
  return undefined
}

const parse = (text: string): Either.Either<CheckpointImpl, InvalidInput> =>
  Either.flatMap(parseJsonText(text), decodeParsed)

const decodeParsed = (json: unknown): Either.Either<CheckpointImpl, InvalidInput> => {
  // before Schema, which recurses and would set a prototype from a __proto__ key
  const fault = faultOf(json)
  if (fault !== undefined) return Either.left(invalid(["checkpoint", ...fault.path].join("."), fault.reason))
  if (!Predicate.isRecord(json) || typeof json.checksum !== "string") {
    return Either.left(
      invalid("checkpoint", "is not a change pass checkpoint: a JSON object with a checksum is expected")
    )
  }
  const { checksum, ...body } = json
  if (fingerprint(body) !== checksum) {
    return Either.left(
      invalid("checkpoint.checksum", "does not match the content: the checkpoint was damaged or edited")
    )
  }
  return Either.flatMap(decodeJson({ checkpoint: json }), ({ checkpoint }) =>
    Either.flatMap(
      "held" in checkpoint.deleted
        ? Either.right<IdSet.ExactContents | IdSet.HeldContents>({
          _tag: "Held",
          size: checkpoint.deleted.held,
          digest: checkpoint.deleted.digest
        })
        : Either.mapLeft(
          Either.map(
            IdSet.restore(IdSet.exactContents(checkpoint.deleted.packed, checkpoint.deleted.others), {
              journal: true,
              capacity: 0
            }),
            contentsOf
          ),
          (reason) => invalid("checkpoint.deleted", reason)
        ),
      (deleted) => {
        const problem = problemOf(checkpoint, deleted.size)
        return problem === undefined
          ? Either.right(new CheckpointImpl(checkpoint.scan, checkpoint.phase, checkpoint.counts, deleted))
          : Either.left(problem)
      }
    ))
}

/** The checkpoint without the scan's ids and the deleted ones, their counts and digests kept: for a sink that holds them. */
export const withoutIds = (checkpoint: Changes.Checkpoint): Changes.Checkpoint =>
  checkpoint instanceof CheckpointImpl
    ? new CheckpointImpl(
      scanWithoutIds(checkpoint.scan),
      checkpoint.phase,
      checkpoint.counts,
      checkpoint.deleted._tag === "Exact" ? IdSet.heldContents(checkpoint.deleted) : checkpoint.deleted
    )
    : checkpoint

/** The checkpoint with the ids its sink gave back (the scan's, the deleted ones), each checked as `Checkpoint.withIds` checks them. */
export const withIds = <E = never, R = never>(
  checkpoint: Changes.Checkpoint,
  ids: Changes.SinkIds<E, R>
): Effect.Effect<Changes.Checkpoint, InvalidInput | E, R> =>
  Effect.suspend(() => {
    if (!(checkpoint instanceof CheckpointImpl)) {
      return Effect.fail(invalid("checkpoint", "is not a checkpoint of a change pass (Changes.fromJson reads one)"))
    }
    const { deleted } = checkpoint
    return Effect.zipWith(
      scanWithIds(checkpoint.scan, ids.ids),
      deleted._tag === "Held"
        ? gatherIds(deleted, ids.deleted, "deleted")
        : Effect.succeed(deleted),
      (scan, deleted) => new CheckpointImpl(scan, checkpoint.phase, checkpoint.counts, deleted)
    )
  })

/** Whether a checkpoint leaves ids to its sink, which `withIds` must give back before a pass resumes from it. */
const holdsNoIds = (checkpoint: CheckpointImpl): boolean =>
  checkpoint.deleted._tag === "Held" ||
  (checkpoint.scan instanceof ScanCheckpointImpl && checkpoint.scan.state.seen._tag === "Held")

export const fromJson = (text: string): Effect.Effect<Changes.Checkpoint, InvalidInput> =>
  Effect.suspend(() => parse(text))

/**
 * The ids a complete scan emitted, from its checkpoint (under `dedupe: "exact"`, all of them): the
 * scan's own set when it has added nothing since, else one made again.
 */
const seenOf = (checkpoint: ScanCheckpoint.Checkpoint): Effect.Effect<IdSet.IdSet> =>
  Effect.orDie(Effect.suspend(() => {
    const seen = checkpoint instanceof ScanCheckpointImpl ? checkpoint.state.seen : undefined
    const restored = seen === undefined
      ? Either.left("not a checkpoint of this library")
      : seen._tag !== "Exact"
      ? Either.left("the scan kept only recent ids")
      : seen.source?.size() === seen.size
      ? Either.right(seen.source)
      : IdSet.restore(seen, { journal: false, capacity: 0 })
    return Either.mapLeft(restored, (reason) => new Error(`the scan's ids cannot be read back: ${reason}`))
  }))

// --- passes --------------------------------------------------------------------------------------

/** Where a run of a pass stands. */
interface Run {
  readonly phase: Phase
  readonly counts: Counts
  /** The scan's last checkpoint; undefined before the first page of a fresh pass. */
  readonly scan: ScanCheckpoint.Checkpoint | undefined
  /** Whether this run reads the scan (its summary is then the scan's, live). */
  readonly scanning: boolean
}

type ScanOf<A> = (
  options: MicroappClient.RowsOptions
) => Effect.Effect<RowStream.Scan<Identified<A>>, InvalidInput>

export const makePass = <A>(scanOf: ScanOf<A>) =>
  Effect.fnUntraced(function*<E, R>(options: Changes.Options<E, R>) {
    const { baseline, resume, ...scanOptions } = options
    if (scanOptions.dedupe !== undefined && scanOptions.dedupe !== "exact") {
      return yield* invalid("dedupe", "must be \"exact\" in a change pass: its deletes need every id it saw")
    }
    if (resume !== undefined && !(resume instanceof CheckpointImpl)) {
      return yield* invalid("resume", "is not a checkpoint of a change pass (Changes.fromJson reads one)")
    }
    if (resume !== undefined && holdsNoIds(resume)) {
      return yield* invalid(
        "resume",
        "the checkpoint holds no ids, its sink does: resume from `Changes.withIds(checkpoint, { ids, deleted })`"
      )
    }
    // a scan of another query refuses the checkpoint here, even when the pass has no scan left to run
    const scan = yield* scanOf({ ...scanOptions, resume: resume?.scan })
    const start: Run = resume === undefined
      ? { phase: "scan", counts: noCounts, scan: undefined, scanning: false }
      : { phase: resume.phase, counts: resume.counts, scan: resume.scan, scanning: false }
    const latest = yield* Ref.make(start)

    const compare = (page: RowStream.Page<Identified<A>>, deleted: IdSet.IdSet) =>
      Effect.gen(function*() {
        const previous = page.rows.length === 0
          ? new Map<string, string>()
          : yield* baseline.lookup(page.rows.map((row) => row.id))
        const changes: Array<Changes.Change<A>> = []
        let unchanged = 0
        for (const { fingerprint, id, row } of page.rows) {
          const was = previous.get(id)
          if (was === undefined) changes.push(Change.Inserted({ id, row, fingerprint }))
          else if (was !== fingerprint) changes.push(Change.Updated({ id, row, fingerprint, previous: was }))
          else unchanged++
        }
        const { summary } = page.checkpoint
        const phase: Phase = !summary.complete ? "scan" : summary.exhaustive ? "deletes" : "done"
        return yield* Ref.modify(latest, (run): [Changes.Page<A>, Run] => {
          const inserted = changes.filter(Change.$is("Inserted")).length
          const counts = {
            ...run.counts,
            inserted: run.counts.inserted + inserted,
            updated: run.counts.updated + changes.length - inserted,
            unchanged: run.counts.unchanged + unchanged
          }
          return [
            { changes, checkpoint: new CheckpointImpl(page.checkpoint, phase, counts, contentsOf(deleted)) },
            { ...run, phase, counts, scan: page.checkpoint }
          ]
        })
      })

    /** The baseline's ids the complete scan `scanned` did not see, as deletes, then the end. */
    const deletes = (scanned: ScanCheckpoint.Checkpoint, deleted: IdSet.IdSet) =>
      Stream.unwrap(Effect.map(seenOf(scanned), (seen) => {
        const page = (group: Iterable<Changes.Unseen>, phase: Phase) =>
          Ref.modify(latest, (run): [Changes.Page<A>, Run] => {
            const changes: Array<Changes.Change<A>> = []
            for (const { fingerprint, id } of group) {
              // what the sink hands back is checked against the scan: no row it saw is ever deleted
              if (!seen.has(id) && deleted.add(id)) changes.push(Change.Deleted({ id, previous: fingerprint }))
            }
            const counts = { ...run.counts, deleted: run.counts.deleted + changes.length }
            return [
              { changes, checkpoint: new CheckpointImpl(scanned, phase, counts, contentsOf(deleted)) },
              { ...run, phase, counts }
            ]
          })
        return baseline.unseen((id) => seen.has(id) || deleted.has(id)).pipe(
          Stream.grouped(scanned.query.pageSize),
          Stream.mapEffect((group) => page(group, "deletes")),
          Stream.filter((page) => page.changes.length > 0),
          Stream.concat(Stream.fromEffect(page([], "done")))
        )
      }))

    const pages = Stream.unwrap(
      Effect.gen(function*() {
        const deleted = yield* restoreDeleted(resume)
        yield* Ref.set(latest, { ...start, scanning: start.phase === "scan" })
        const scanned = start.phase === "scan"
          ? Stream.mapEffect(scan.pages, (page) => compare(page, deleted))
          : Stream.empty
        const rest = Stream.unwrap(Effect.map(Ref.get(latest), (run) =>
          run.phase === "deletes" && run.scan !== undefined ? deletes(run.scan, deleted) : Stream.empty))
        return Stream.concat(scanned, rest)
      })
    )

    const summary = Effect.flatMap(Ref.get(latest), (run) =>
      Effect.map(
        run.scanning || run.scan === undefined ? scan.summary : Effect.succeed(run.scan.summary),
        (scanSummary) =>
          summaryOf(scanSummary, run.phase, run.counts)
      ))

    return {
      pages,
      changes: Stream.mapConcat(pages, (page) => page.changes),
      summary
    } satisfies Changes.Pass<A, E, R>
  })

/** The set of ids a checkpoint says were reported deleted (a new, empty one for a fresh pass). */
const restoreDeleted = (resume: CheckpointImpl | undefined): Effect.Effect<IdSet.IdSet> =>
  resume === undefined
    ? Effect.sync(() => IdSet.exact({ journal: true }))
    : Effect.orDie(Effect.suspend(() =>
      Either.mapLeft(
        IdSet.restore(resume.deleted, { journal: true, capacity: 0 }),
        (reason) => new Error(`the deleted ids cannot be read back: ${reason}`)
      )
    ))
