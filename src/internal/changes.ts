/**
 * Change passes: a scan (the public scan, resumable by its checkpoints) of rows with the id and
 * fingerprint each had as the server sent it, compared page by page with a baseline; then the
 * baseline's ids the scan did not see, each proven deleted once a point read answers the
 * service's own "no such row" (or, under `deletes: "exhaustive"`, after an exhaustive scan,
 * without reads). The proven deletes are held until every candidate is answered, then reported
 * only when a control read finds a row the scan saw and the delete guard allows them. A pass's
 * checkpoint wraps the scan's with the counts, the phase, the ids already reported deleted and
 * the ids its point reads kept.
 */
import { Chunk, Data, Effect, Either, Ref, Schema, Stream } from "effect"
import type * as Changes from "../Changes.js"
import * as ScanCheckpoint from "../Checkpoint.js"
import type { MicroappClient } from "../MicroappClient.js"
import { type InvalidCheckpoint, InvalidInput, type RequestError, TooManyDeletes } from "../MicroappError.js"
import * as RowStream from "../RowStream.js"
import * as Codec from "./checkpointCodec.js"
import { fingerprint, Hash64 } from "./fingerprint.js"
import { type Contract, pageDecoder, type RowDecoder, RowFault, rowFaultOf, type RowStep } from "./http/decode.js"
import { endpoints } from "./http/endpoints.js"
import { faultOf, locateFault, Verdict, walk } from "./http/plainData.js"
import {
  CheckpointImpl as ScanCheckpointImpl,
  gatherIds,
  textBounds,
  versions,
  withIds as scanWithIds,
  withoutIds as scanWithoutIds
} from "./scan/checkpoint.js"
import * as IdSet from "./scan/IdSet.js"
import { Count, encodeSeen, HeldJson } from "./scan/state.js"

export const Change = Data.taggedEnum<Changes.ChangeDefinition>()

/** A row of a change pass: decoded, with the id and fingerprint of the row as the server sent it. */
export interface Identified<A> {
  readonly id: string
  readonly row: A
  readonly fingerprint: string
}

const noId = new RowFault("", "has no _id: a change pass compares rows by id", true)

/**
 * A change pass's step: the row walk with the fingerprint fed as it goes and what a copy cannot
 * keep looked for, then `step`, each row kept with the id and fingerprint of its undecoded form,
 * so that typed and untyped passes agree. A row without an id cannot be compared: it fails the
 * pass. A row a copy cannot keep exactly (its id, a text or a number) is an invalid row.
 */
const identify = <A>(step: RowStep<A>): RowStep<Identified<A>> => (raw) => {
  const hash = new Hash64()
  const verdict = walk(raw, 1, hash)
  if (verdict === Verdict.faulty) return rowFaultOf(locateFault(raw, verdict, null))
  const row = step(raw)
  if (row instanceof RowFault) return row
  const id = IdSet.idOf(raw)
  if (id === null) return noId
  if (verdict === Verdict.unstorable) return rowFaultOf(locateFault(raw, verdict, id))
  return { id, row, fingerprint: hash.digest() }
}

/**
 * The page loop over `identify(step)` under the reader's contract: under "raw" a row that fails
 * any check is handed on as the reader hands it on, with its id and the fingerprint of the row as
 * sent; without an id it fails the pass.
 */
export const identified = <A, B>(step: RowStep<A>, contract: Contract<B>): RowDecoder<Identified<A | B>> =>
  pageDecoder(
    identify(step),
    contract.policy === "raw"
      ? {
        policy: "raw",
        handOn: (raw, error): Identified<B> | RowFault => {
          const id = IdSet.idOf(raw)
          if (id === null) return noId
          const row = contract.handOn(raw, error)
          return row instanceof RowFault ? row : { id, row, fingerprint: fingerprint(raw) }
        }
      }
      : { policy: contract.policy }
  )

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

type DeletesMode = NonNullable<Changes.PassOptions<never, never>["deletes"]>

export const Counts = Schema.Struct({
  inserted: Count,
  updated: Count,
  unchanged: Count,
  deleted: Count,
  reads: Count,
  unconfirmed: Count,
  heldBack: Count
})

type Counts = typeof Counts.Type

const noCounts: Counts = {
  inserted: 0,
  updated: 0,
  unchanged: 0,
  deleted: 0,
  reads: 0,
  unconfirmed: 0,
  heldBack: 0
}

/** The delete guard's default bound: a pass may delete `count` rows, or `share` of the copy when that is more. */
export const deleteGuard = { count: 100, share: 0.1 } as const

/** The most deletes a pass over a copy of `copy` rows may make: `maxDeletes`, or the default bound. */
export const allowedDeletes = (copy: number, maxDeletes: number | undefined): number =>
  maxDeletes ?? Math.max(deleteGuard.count, Math.floor(deleteGuard.share * copy))

const summaryOf = (scan: RowStream.ScanSummary, phase: Phase, mode: DeletesMode, counts: Counts): Changes.Summary => ({
  ...scan,
  ...counts,
  deletes: phase === "scan" ? "pending" : mode === "confirmed" || scan.exhaustive ? "reported" : "skipped"
})

type HeldOrExact = IdSet.ExactContents | IdSet.HeldContents

class CheckpointImpl implements Changes.Checkpoint {
  readonly [CheckpointTypeId]: Changes.CheckpointTypeId = CheckpointTypeId
  constructor(
    readonly scan: ScanCheckpoint.Checkpoint,
    readonly phase: Phase,
    readonly mode: DeletesMode,
    readonly counts: Counts,
    /** The ids reported deleted so far, or their count and digest when a sink holds them. */
    readonly deleted: HeldOrExact,
    /** The unseen ids a point read found, or could not confirm deleted; held like `deleted`. */
    readonly kept: HeldOrExact
  ) {}
  get summary(): Changes.Summary {
    return summaryOf(this.scan.summary, this.phase, this.mode, this.counts)
  }
  /** The checkpoint's JSON object, its checksum last: what `JSON.stringify` writes, not its inner workings. */
  toJSON(): unknown {
    // absent while 0, so that a text written before it was counted is written again as it was
    const { heldBack, ...counts } = this.counts
    const body = {
      version: 1,
      phase: this.phase,
      deletes: this.mode,
      counts: heldBack === 0 ? counts : this.counts,
      deleted: encodeSeen(this.deleted),
      kept: encodeSeen(this.kept),
      scan: encodeScan(this.scan)
    }
    return { ...body, checksum: fingerprint(body) }
  }
}

export const isCheckpoint = (u: unknown): u is Changes.Checkpoint => u instanceof CheckpointImpl

const noIds: IdSet.ExactContents = IdSet.exactContents("", [])

/** What a set of ids (exact, with a journal) holds now, as a value. */
const contentsOf = (ids: IdSet.IdSet): IdSet.ExactContents => {
  const contents = ids.contents()
  return contents?._tag === "Exact" ? contents : noIds
}

const PackedIds = Schema.Struct({ packed: Schema.String, others: Schema.Array(Schema.String) })

const IdsJson = Schema.Union(PackedIds, HeldJson)

// the fields of confirmed deletes are absent from the checkpoints of earlier versions: exhaustive-only, no reads
const Json = Schema.Struct({
  version: Codec.Version(versions),
  phase: Schema.Literal("scan", "deletes", "done"),
  deletes: Schema.optionalWith(Schema.Literal("confirmed", "exhaustive"), { default: () => "exhaustive" }),
  counts: Schema.Struct({
    ...Counts.fields,
    reads: Schema.optionalWith(Count, { default: () => 0 }),
    unconfirmed: Schema.optionalWith(Count, { default: () => 0 }),
    heldBack: Schema.optionalWith(Count, { default: () => 0 })
  }),
  deleted: IdsJson,
  kept: Schema.optionalWith(IdsJson, { default: () => ({ packed: "", others: [] }) }),
  scan: ScanCheckpoint.Checkpoint,
  checksum: Schema.String
})

const encodeScan = Schema.encodeSync(ScanCheckpoint.Checkpoint)

const decodeJson = Codec.decoder(Json)

/** The checkpoint's text: what its `toJSON` returns, written by `JSON.stringify`. */
export const toJson = (checkpoint: Changes.Checkpoint): string => JSON.stringify(checkpoint)

/** A call's argument refused, before the pass sends anything. */
const invalid = (input: string, reason: string) =>
  new InvalidInput({ method: "POST", path: endpoints.rows.path, input, reason })

const invalidField = (input: string, reason: string) => Codec.invalidCheckpoint("field", input, reason)

const notAPassCheckpoint = (input: string) =>
  Codec.invalidCheckpoint(
    "not a checkpoint",
    input,
    "is not a checkpoint of a change pass (Changes.fromJson reads one)"
  )

/** The first way in which a decoded checkpoint is not a state a pass could have been in, if any. */
const problemOf = (
  json: typeof Json.Type,
  held: { readonly deleted: number; readonly kept: number }
): InvalidCheckpoint | undefined => {
  const scan = json.scan.summary
  const { counts, deletes, phase } = json
  // the rows compared beyond the scan's are those point reads found
  const found = counts.inserted + counts.updated + counts.unchanged - scan.rows
  if (json.scan.query.dedupe !== "exact") {
    return invalidField("checkpoint.scan.query.dedupe", "must be \"exact\": a change pass keeps every id it saw")
  }
  if (found < 0) {
    return invalidField(
      "checkpoint.counts",
      `count ${counts.inserted + counts.updated + counts.unchanged} rows compared, but the scan handed on ${scan.rows}`
    )
  }
  const answered = found + counts.unconfirmed
  if (counts.reads < answered || counts.reads > answered + counts.deleted) {
    return invalidField(
      "checkpoint.counts.reads",
      `is ${counts.reads}, but ${found} rows found, ${counts.unconfirmed} unconfirmed and ${counts.deleted} deleted`
    )
  }
  if ((phase === "scan") === scan.complete) {
    return invalidField("checkpoint.phase", `is "${phase}", but the scan is ${scan.complete ? "" : "not "}complete`)
  }
  if (deletes === "exhaustive" && phase === "deletes" && !scan.exhaustive) {
    return invalidField("checkpoint.phase", "is \"deletes\", but the scan was not exhaustive")
  }
  if (counts.deleted !== held.deleted) {
    return invalidField(
      "checkpoint.counts.deleted",
      `is ${counts.deleted}, but the checkpoint holds ${held.deleted} deleted ids`
    )
  }
  if (answered !== held.kept) {
    return invalidField(
      "checkpoint.kept",
      `holds ${held.kept} ids, but the counts keep ${answered} rows a read found or left`
    )
  }
  if (counts.heldBack > counts.unconfirmed) {
    return invalidField(
      "checkpoint.counts.heldBack",
      `is ${counts.heldBack}, but only ${counts.unconfirmed} candidates are unconfirmed`
    )
  }
  if (deletes === "exhaustive" && counts.reads > 0) {
    return invalidField("checkpoint.counts.reads", "must be 0: exhaustive-only deletes read no row")
  }
  if (counts.reads > 0 && phase === "scan") {
    return invalidField("checkpoint.counts.reads", "must be 0 until the scan has ended")
  }
  if (counts.deleted > 0 && (phase === "scan" || (deletes === "exhaustive" && !scan.exhaustive))) {
    return invalidField("checkpoint.counts.deleted", "must be 0 until the scan has ended")
  }
  return undefined
}

const parse = (text: string): Either.Either<CheckpointImpl, InvalidCheckpoint> =>
  Either.flatMap(Codec.parse(text, textBounds, "checkpoint"), decodeParsed)

const decodeParsed = (json: unknown): Either.Either<CheckpointImpl, InvalidCheckpoint> => {
  // before Schema, which recurses and would set a prototype from a __proto__ key
  const fault = faultOf(json)
  if (fault !== undefined) return Either.left(invalidField(["checkpoint", ...fault.path].join("."), fault.reason))
  const object = Codec.objectWith(json, "checksum", "a change pass checkpoint")
  if (Either.isLeft(object)) return Either.left(object.left)
  const { checksum, ...body } = object.right
  if (fingerprint(body) !== checksum) return Either.left(Codec.checksumRefused("checkpoint.checksum"))
  return Either.flatMap(decodeJson(json, "checkpoint"), (checkpoint) =>
    Either.flatMap(
      Either.all([idsOf(checkpoint.deleted, "deleted"), idsOf(checkpoint.kept, "kept")]),
      ([deleted, kept]) => {
        const problem = problemOf(checkpoint, { deleted: deleted.size, kept: kept.size })
        return problem === undefined
          ? Either.right(
            new CheckpointImpl(checkpoint.scan, checkpoint.phase, checkpoint.deletes, checkpoint.counts, deleted, kept)
          )
          : Either.left(problem)
      }
    ))
}

/** A set of ids of a checkpoint (`field`), packed or held, checked. */
const idsOf = (
  json: typeof IdsJson.Type,
  field: "deleted" | "kept"
): Either.Either<HeldOrExact, InvalidCheckpoint> =>
  "held" in json
    ? Either.right({ _tag: "Held", size: json.held, digest: json.digest })
    : Either.mapLeft(
      Either.map(
        IdSet.restore(IdSet.exactContents(json.packed, json.others), { journal: true, capacity: 0 }),
        contentsOf
      ),
      (reason) => invalidField(`checkpoint.${field}`, reason)
    )

const heldOf = (ids: HeldOrExact): IdSet.HeldContents => ids._tag === "Exact" ? IdSet.heldContents(ids) : ids

/** The checkpoint without the scan's ids and the deleted ones, their counts and digests kept: for a sink that holds them. */
export const withoutIds = (checkpoint: Changes.Checkpoint): Changes.Checkpoint =>
  checkpoint instanceof CheckpointImpl
    ? new CheckpointImpl(
      scanWithoutIds(checkpoint.scan),
      checkpoint.phase,
      checkpoint.mode,
      checkpoint.counts,
      heldOf(checkpoint.deleted),
      heldOf(checkpoint.kept)
    )
    : checkpoint

/** The checkpoint with the ids its sink gave back (the scan's, the deleted and kept ones), each checked as `Checkpoint.withIds` checks them. */
export const withIds = <E = never, R = never>(
  checkpoint: Changes.Checkpoint,
  ids: Changes.SinkIds<E, R>
): Effect.Effect<Changes.Checkpoint, InvalidCheckpoint | E, R> =>
  Effect.suspend(() => {
    if (!(checkpoint instanceof CheckpointImpl)) return Effect.fail(notAPassCheckpoint("checkpoint"))
    const gathered = (held: HeldOrExact, given: Changes.SinkIds<E, R>["kept"], input: "deleted" | "kept") =>
      held._tag === "Exact" ? Effect.succeed(held) : gatherIds(held, given ?? [], input)
    return Effect.map(
      Effect.all([
        scanWithIds(checkpoint.scan, ids.ids),
        gathered(checkpoint.deleted, ids.deleted, "deleted"),
        gathered(checkpoint.kept, ids.kept, "kept")
      ]),
      ([scan, deleted, kept]) =>
        new CheckpointImpl(scan, checkpoint.phase, checkpoint.mode, checkpoint.counts, deleted, kept)
    )
  })

/** Whether a checkpoint leaves ids to its sink, which `withIds` must give back before a pass resumes from it. */
const holdsNoIds = (checkpoint: CheckpointImpl): boolean =>
  checkpoint.deleted._tag === "Held" || checkpoint.kept._tag === "Held" ||
  (checkpoint.scan instanceof ScanCheckpointImpl && checkpoint.scan.state.seen._tag === "Held")

export const fromJson = (text: string): Effect.Effect<Changes.Checkpoint, InvalidCheckpoint> =>
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

/**
 * A point read of one row, as `getRow` makes it: the row, or undefined when it stands but the
 * pass's policy set it aside as invalid; `NotFound` when the service says it does not exist
 * (`noSuchRow` when in its own words: the one answer that proves it).
 */
export type ReadOf<A> = (
  rowID: string,
  options: MicroappClient.CallOptions
) => Effect.Effect<Identified<A> | undefined, RequestError>

/** What a point read answered for a baseline id the scan did not see. */
type Answer<A> =
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Found"; readonly row: Identified<A> }
  | { readonly _tag: "Unconfirmed" }

const missing = { _tag: "Missing" } as const
const unconfirmed = { _tag: "Unconfirmed" } as const

const answerOf = <A>(read: Effect.Effect<Identified<A> | undefined, RequestError>): Effect.Effect<Answer<A>> =>
  Effect.match(read, {
    // only the service's own word that the row does not exist proves a delete
    onFailure: (error): Answer<A> => error._tag === "NotFound" && error.noSuchRow === true ? missing : unconfirmed,
    onSuccess: (row): Answer<A> => row === undefined ? unconfirmed : { _tag: "Found", row }
  })

/** Rows read as the control of a pass's deletes, the first found enough: a row the scan saw may be deleted since. */
const controlReads = 3

/** Rows the complete scan saw, to read as the control of its deletes; none when it saw none. */
const controlIdsOf = (scanned: ScanCheckpoint.Checkpoint): ReadonlyArray<string> => {
  const seen = scanned instanceof ScanCheckpointImpl ? scanned.state.seen : undefined
  return seen?._tag === "Exact" ? IdSet.someIdsOf(seen, controlReads) : []
}

/** A candidate a read answered "no such row" (or, unread, any), held until every candidate is answered. */
interface Proven {
  readonly id: string
  readonly previous: string
  readonly read: boolean
}

export const makePass = <A>(scanOf: ScanOf<A>, readOf: ReadOf<A>) =>
  Effect.fnUntraced(function*<E, R>(options: Changes.Options<E, R>) {
    const { baseline, deletes: mode = "confirmed", maxDeletes, resume, ...scanOptions } = options
    if (scanOptions.dedupe !== undefined && scanOptions.dedupe !== "exact") {
      return yield* invalid("dedupe", "must be \"exact\" in a change pass: its deletes need every id it saw")
    }
    if (mode !== "confirmed" && mode !== "exhaustive") {
      return yield* invalid("deletes", "must be \"confirmed\" or \"exhaustive\"")
    }
    if (maxDeletes !== undefined && !(Number.isSafeInteger(maxDeletes) && maxDeletes >= 0)) {
      return yield* invalid("maxDeletes", "must be a whole number of rows, 0 or more")
    }
    if (resume !== undefined && !(resume instanceof CheckpointImpl)) {
      return yield* notAPassCheckpoint("resume")
    }
    if (resume !== undefined && resume.mode !== mode) {
      return yield* Codec.invalidCheckpoint(
        "another query",
        "resume",
        `is a checkpoint of a pass with ${resume.mode} deletes, not ${mode} ones`
      )
    }
    if (resume !== undefined && holdsNoIds(resume)) {
      return yield* Codec.invalidCheckpoint(
        "ids held",
        "resume",
        "the checkpoint holds no ids, its sink does: resume from `Changes.withIds(checkpoint, { ids, deleted, kept })`"
      )
    }
    // a scan of another query refuses the checkpoint here, even when the pass has no scan left to run
    const scan = yield* scanOf({ ...scanOptions, resume: resume?.scan })
    const start: Run = resume === undefined
      ? { phase: "scan", counts: noCounts, scan: undefined, scanning: false }
      : { phase: resume.phase, counts: resume.counts, scan: resume.scan, scanning: false }
    const latest = yield* Ref.make(start)
    const call = { timeout: scanOptions.timeout, retry: scanOptions.retry }
    // within the scan's own bound on requests at once (and the client's, which every call takes)
    const readsAtOnce = typeof scanOptions.concurrency === "number"
      ? scanOptions.concurrency
      : scanOptions.maxConcurrency ?? RowStream.defaults.maxConcurrency

    interface Sets {
      readonly deleted: IdSet.IdSet
      readonly kept: IdSet.IdSet
    }
    const checkpointOf = (scanned: ScanCheckpoint.Checkpoint, phase: Phase, counts: Counts, sets: Sets) =>
      new CheckpointImpl(scanned, phase, mode, counts, contentsOf(sets.deleted), contentsOf(sets.kept))

    const compare = (page: RowStream.Page<Identified<A>>, sets: Sets) =>
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
        const phase: Phase = !summary.complete
          ? "scan"
          : mode === "confirmed" || summary.exhaustive
          ? "deletes"
          : "done"
        return yield* Ref.modify(latest, (run): [Changes.Page<A>, Run] => {
          const inserted = changes.filter(Change.$is("Inserted")).length
          const counts = {
            ...run.counts,
            inserted: run.counts.inserted + inserted,
            updated: run.counts.updated + changes.length - inserted,
            unchanged: run.counts.unchanged + unchanged
          }
          return [
            {
              changes,
              seen: page.rows.map((row) => row.id),
              found: [],
              unconfirmed: [],
              checkpoint: checkpointOf(page.checkpoint, phase, counts, sets)
            },
            { ...run, phase, counts, scan: page.checkpoint }
          ]
        })
      })

    /**
     * The baseline's ids the complete scan `scanned` did not see: each read (unless unread), the
     * rows found compared and the others kept, page by page; those proven missing held until every
     * candidate is answered, then deleted once the control read and the guard pass (or kept, held
     * back, when the control read fails); then the end.
     */
    const deletes = (scanned: ScanCheckpoint.Checkpoint, sets: Sets) =>
      Stream.unwrap(Effect.map(seenOf(scanned), (seen) => {
        const proven = new Map<string, Proven>()
        const resolved = (id: string) => seen.has(id) || sets.deleted.has(id) || sets.kept.has(id) || proven.has(id)
        // a found row may have left a filtered selection (filters name fields by fieldID, rows by label):
        // only an exhaustive scan of the selection says it did, and then a read adds nothing
        const filtered = (scanOptions.filters?.length ?? 0) > 0
        const unread = mode === "exhaustive" || (filtered && scanned.summary.exhaustive)
        // no row of the scan to read as a control: nothing can be deleted, so what a read proves gone is held back at once
        const uncontrolled = !unread && seen.size() === 0
        const answers = (group: ReadonlyArray<Changes.Unseen>) =>
          unread
            ? Effect.succeed(group.map((unseen) => ({ unseen, answer: missing as Answer<A>, read: false })))
            : Effect.forEach(
              group,
              (unseen) =>
                Effect.map(answerOf(readOf(unseen.id, call)), (answer) => ({
                  unseen,
                  answer: filtered && answer._tag === "Found" ? unconfirmed : answer,
                  read: true
                })),
              { concurrency: readsAtOnce }
            )
        /**
         * Fails the pass when the deletes it proved, with those it reported, are more than the guard
         * allows; `atLeast`: before every candidate is counted.
         */
        const guard = (atLeast: boolean) =>
          Effect.flatMap(Ref.get(latest), ({ counts }) => {
            const total = counts.deleted + proven.size
            // the rows the baseline held: those compared, those kept, those deleted and to delete
            const copy = counts.updated + counts.unchanged + counts.unconfirmed + total
            const allowed = allowedDeletes(copy, maxDeletes)
            return total > allowed
              ? Effect.fail(
                new TooManyDeletes({
                  microAppID: scanOptions.microAppID,
                  deletes: total,
                  copy,
                  allowed,
                  given: maxDeletes !== undefined,
                  atLeast
                })
              )
              : Effect.void
          })
        const page = (group: ReadonlyArray<Changes.Unseen>) =>
          Effect.flatMap(answers(group), (answered) =>
            Ref.modify(latest, (run): [Changes.Page<A>, Run] => {
              const changes: Array<Changes.Change<A>> = []
              const found: Array<string> = []
              const unsettled: Array<string> = []
              let { heldBack, reads, unchanged, unconfirmed, updated } = run.counts
              for (const { answer, read, unseen: { fingerprint, id } } of answered) {
                // an id the baseline gave twice is answered once
                if (sets.deleted.has(id) || sets.kept.has(id) || proven.has(id)) continue
                if (answer._tag === "Missing" && !uncontrolled) {
                  // its read is counted with its delete
                  proven.set(id, { id, previous: fingerprint, read })
                  continue
                }
                if (read) reads++
                sets.kept.add(id)
                ;(answer._tag === "Found" ? found : unsettled).push(id)
                if (answer._tag === "Missing") {
                  unconfirmed++
                  heldBack++
                } else if (answer._tag === "Unconfirmed") unconfirmed++
                else if (answer.row.fingerprint === fingerprint) unchanged++
                else {
                  updated++
                  const { row } = answer
                  changes.push(
                    Change.Updated({ id, row: row.row, fingerprint: row.fingerprint, previous: fingerprint })
                  )
                }
              }
              const counts = { ...run.counts, heldBack, reads, unchanged, unconfirmed, updated }
              return [
                {
                  changes,
                  seen: [],
                  found,
                  unconfirmed: unsettled,
                  checkpoint: checkpointOf(scanned, "deletes", counts, sets)
                },
                { ...run, phase: "deletes", counts }
              ]
            })).pipe(
              // unread, every candidate is a delete: a pass past the guard stays past it, so it stops at once
              Effect.tap(() => unread ? guard(true) : Effect.void)
            )
        /** The proven candidates of `group`: deleted when `confirmed`, else kept, held back. */
        const settled = (group: ReadonlyArray<Proven>, confirmed: boolean) =>
          Ref.modify(latest, (run): [Changes.Page<A>, Run] => {
            const changes: Array<Changes.Change<A>> = []
            const unsettled: Array<string> = []
            let { deleted, heldBack, reads, unconfirmed } = run.counts
            for (const { id, previous, read } of group) {
              if (read) reads++
              if (confirmed) {
                sets.deleted.add(id)
                deleted++
                changes.push(Change.Deleted({ id, previous }))
              } else {
                sets.kept.add(id)
                unconfirmed++
                heldBack++
                unsettled.push(id)
              }
            }
            const counts = { ...run.counts, deleted, heldBack, reads, unconfirmed }
            return [
              {
                changes,
                seen: [],
                found: [],
                unconfirmed: unsettled,
                checkpoint: checkpointOf(scanned, "deletes", counts, sets)
              },
              { ...run, phase: "deletes", counts }
            ]
          })
        // the row endpoint must find a row the scan saw before any "no such row" of it counts
        const control = Effect.suspend(() =>
          Effect.exists(
            controlIdsOf(scanned),
            (id) => Effect.match(readOf(id, call), { onFailure: () => false, onSuccess: () => true })
          )
        )
        const settle = Effect.gen(function*() {
          if (proven.size === 0) return Stream.empty
          const confirmed = unread || (yield* control)
          if (confirmed) yield* guard(false)
          return Stream.fromIterable(proven.values()).pipe(
            Stream.grouped(scanned.query.pageSize),
            Stream.mapEffect((group) => settled(Chunk.toReadonlyArray(group), confirmed))
          )
        })
        const done = Ref.modify(latest, (run): [Changes.Page<A>, Run] => [
          {
            changes: [],
            seen: [],
            found: [],
            unconfirmed: [],
            checkpoint: checkpointOf(scanned, "done", run.counts, sets)
          },
          { ...run, phase: "done" }
        ])
        return baseline.unseen(resolved).pipe(
          // what the sink hands back is checked against the scan: no row it saw is ever deleted or read
          Stream.filter((unseen) => !resolved(unseen.id)),
          Stream.grouped(scanned.query.pageSize),
          Stream.mapEffect((group) => page(Chunk.toReadonlyArray(group))),
          Stream.filter((page) => page.changes.length + page.found.length + page.unconfirmed.length > 0),
          Stream.concat(Stream.unwrap(settle)),
          Stream.concat(Stream.fromEffect(done))
        )
      }))

    const pages = Stream.unwrap(
      Effect.gen(function*() {
        const sets: Sets = { deleted: yield* restoreIds(resume?.deleted), kept: yield* restoreIds(resume?.kept) }
        yield* Ref.set(latest, { ...start, scanning: start.phase === "scan" })
        const scanned = start.phase === "scan"
          ? Stream.mapEffect(scan.pages, (page) => compare(page, sets))
          : Stream.empty
        const rest = Stream.unwrap(
          Effect.map(
            Ref.get(latest),
            (run) => run.phase === "deletes" && run.scan !== undefined ? deletes(run.scan, sets) : Stream.empty
          )
        )
        return Stream.concat(scanned, rest)
      })
    )

    const summary = Effect.flatMap(Ref.get(latest), (run) =>
      Effect.map(
        run.scanning || run.scan === undefined ? scan.summary : Effect.succeed(run.scan.summary),
        (scanSummary) => summaryOf(scanSummary, run.phase, mode, run.counts)
      ))

    return {
      pages,
      changes: Stream.mapConcat(pages, (page) => page.changes),
      summary
    } satisfies Changes.Pass<A, E, R>
  })

/** A set of ids a checkpoint holds (the deleted or the kept ones), or a new, empty one for a fresh pass. */
const restoreIds = (ids: HeldOrExact | undefined): Effect.Effect<IdSet.IdSet> =>
  ids === undefined
    ? Effect.sync(() => IdSet.exact({ journal: true }))
    : Effect.orDie(Effect.suspend(() =>
      Either.mapLeft(
        IdSet.restore(ids, { journal: true, capacity: 0 }),
        (reason) => new Error(`the checkpoint's ids cannot be read back: ${reason}`)
      )
    ))
