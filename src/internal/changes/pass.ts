/**
 * A change pass's runner: the scan's pages compared with the baseline, then the delete phase
 * (the baseline's ids the scan did not see, answered by point reads and proven as `deletes.ts`
 * says), each page handed out with the checkpoint of the state after it.
 */
import { Chunk, Effect, Either, Ref, Stream } from "effect"
import type * as Changes from "../../Changes.js"
import type * as ScanCheckpoint from "../../Checkpoint.js"
import type { MicroappClient } from "../../MicroappClient.js"
import { type InvalidCheckpoint, InvalidInput, type TooManyDeletes } from "../../MicroappError.js"
import * as RowStream from "../../RowStream.js"
import * as Codec from "../checkpointCodec.js"
import { endpoints } from "../http/endpoints.js"
import type { Identified } from "../http/identify.js"
import type * as IdSet from "../scan/IdSet.js"
import { Change } from "./baseline.js"
import {
  CheckpointImpl,
  contentsOf,
  type Counts,
  type DeletesMode,
  holdsNoIds,
  noCounts,
  notAPassCheckpoint,
  type Phase,
  restoreIds,
  seenOf,
  summaryOf
} from "./checkpoint.js"
import {
  type Answer,
  answerOf,
  controlRead,
  missing,
  type Proven,
  type ReadOf,
  tooManyDeletes,
  unconfirmed
} from "./deletes.js"

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

type ScanOptions<E, R> = Omit<Changes.Options<E, R>, keyof Changes.PassOptions<E, R>>

/** A pass's options, checked. */
interface Checked<E, R> {
  readonly baseline: Changes.Baseline<E, R>
  readonly mode: DeletesMode
  readonly maxDeletes: number | undefined
  readonly resume: CheckpointImpl | undefined
  readonly scanOptions: ScanOptions<E, R> & { readonly dedupe?: "exact" | undefined }
}

/** A call's argument refused, before the pass sends anything. */
const invalid = (input: string, reason: string) =>
  new InvalidInput({ method: "POST", path: endpoints.rows.path, input, reason })

/** The pass's own options checked, and a checkpoint to resume from checked against them. */
const check = <E, R>(
  options: Changes.Options<E, R>
): Either.Either<Checked<E, R>, InvalidInput | InvalidCheckpoint> => {
  const { baseline, deletes: mode = "confirmed", maxDeletes, resume, ...scanOptions } = options
  if (scanOptions.dedupe !== undefined && scanOptions.dedupe !== "exact") {
    return Either.left(invalid("dedupe", "must be \"exact\" in a change pass: its deletes need every id it saw"))
  }
  if (mode !== "confirmed" && mode !== "exhaustive") {
    return Either.left(invalid("deletes", "must be \"confirmed\" or \"exhaustive\""))
  }
  if (maxDeletes !== undefined && !(Number.isSafeInteger(maxDeletes) && maxDeletes >= 0)) {
    return Either.left(invalid("maxDeletes", "must be a whole number of rows, 0 or more"))
  }
  if (resume !== undefined && !(resume instanceof CheckpointImpl)) {
    return Either.left(notAPassCheckpoint("resume"))
  }
  if (resume !== undefined && resume.mode !== mode) {
    return Either.left(Codec.invalidCheckpoint(
      "another query",
      "resume",
      `is a checkpoint of a pass with ${resume.mode} deletes, not ${mode} ones`
    ))
  }
  if (resume !== undefined && holdsNoIds(resume)) {
    return Either.left(Codec.invalidCheckpoint(
      "ids held",
      "resume",
      "the checkpoint holds no ids, its sink does: resume from `Changes.withIds(checkpoint, { ids, deleted, kept })`"
    ))
  }
  return Either.right({ baseline, mode, maxDeletes, resume, scanOptions })
}

/** The ids a run has settled: those reported deleted, and those point reads kept. */
interface Sets {
  readonly deleted: IdSet.IdSet
  readonly kept: IdSet.IdSet
}

/** What the steps of one pass share: its settings, its point reads, and where its run stands. */
interface Runner<A> {
  readonly mode: DeletesMode
  readonly maxDeletes: number | undefined
  readonly microAppID: string
  /** Whether the scan's selection is filtered. */
  readonly filtered: boolean
  readonly readOf: ReadOf<A>
  readonly call: MicroappClient.CallOptions
  readonly readsAtOnce: number
  readonly latest: Ref.Ref<Run>
  readonly sets: Sets
}

const checkpointOf = <A>(
  runner: Runner<A>,
  scanned: ScanCheckpoint.Checkpoint,
  phase: Phase,
  counts: Counts
): CheckpointImpl =>
  new CheckpointImpl(
    scanned,
    phase,
    runner.mode,
    counts,
    contentsOf(runner.sets.deleted),
    contentsOf(runner.sets.kept)
  )

/** A page of a pass: what `parts` gives, nothing else. */
const pageOf = <A>(
  checkpoint: Changes.Checkpoint,
  parts: Partial<Omit<Changes.Page<A>, "checkpoint">>
): Changes.Page<A> => ({ changes: [], seen: [], found: [], unconfirmed: [], ...parts, checkpoint })

// --- the scan ------------------------------------------------------------------------------------

/** The changes of rows against the fingerprints the baseline holds for them, and how many did not change. */
const compare = <A>(rows: ReadonlyArray<Identified<A>>, previous: ReadonlyMap<string, string>) => {
  const changes: Array<Changes.Change<A>> = []
  let unchanged = 0
  for (const { fingerprint, id, row } of rows) {
    const was = previous.get(id)
    if (was === undefined) changes.push(Change.Inserted({ id, row, fingerprint }))
    else if (was !== fingerprint) changes.push(Change.Updated({ id, row, fingerprint, previous: was }))
    else unchanged++
  }
  return { changes, unchanged }
}

/** The phase after a page of the scan: its end starts the deletes, unless none are to be reported. */
const phaseAfter = (summary: RowStream.ScanSummary, mode: DeletesMode): Phase =>
  !summary.complete ? "scan" : mode === "confirmed" || summary.exhaustive ? "deletes" : "done"

/** A page of the scan compared with the baseline, its changes counted. */
const scanPage = <A, E, R>(runner: Runner<A>, baseline: Changes.Baseline<E, R>) =>
(
  page: RowStream.Page<Identified<A>>
): Effect.Effect<Changes.Page<A>, E, R> =>
  Effect.gen(function*() {
    const previous = page.rows.length === 0
      ? new Map<string, string>()
      : yield* baseline.lookup(page.rows.map((row) => row.id))
    const { changes, unchanged } = compare(page.rows, previous)
    const phase = phaseAfter(page.checkpoint.summary, runner.mode)
    return yield* Ref.modify(runner.latest, (run): [Changes.Page<A>, Run] => {
      const inserted = changes.filter(Change.$is("Inserted")).length
      const counts = {
        ...run.counts,
        inserted: run.counts.inserted + inserted,
        updated: run.counts.updated + changes.length - inserted,
        unchanged: run.counts.unchanged + unchanged
      }
      return [
        pageOf(checkpointOf(runner, page.checkpoint, phase, counts), {
          changes,
          seen: page.rows.map((row) => row.id)
        }),
        { ...run, phase, counts, scan: page.checkpoint }
      ]
    })
  })

// --- the deletes ---------------------------------------------------------------------------------

/** A candidate with its answer; `read`: whether a point read gave it. */
interface Answered<A> {
  readonly unseen: Changes.Unseen
  readonly answer: Answer<A>
  readonly read: boolean
}

/** The delete phase of a run: the candidates proven missing and held, and how they are answered. */
interface Candidates {
  readonly scanned: ScanCheckpoint.Checkpoint
  readonly proven: Map<string, Proven>
  /** Every candidate is missing, unread: under exhaustive deletes, or after an exhaustive scan of a filtered selection. */
  readonly unread: boolean
  /** No row of the scan to read as a control: nothing can be deleted, so what a read proves gone is held back at once. */
  readonly uncontrolled: boolean
}

/** The answers for `group`: each candidate's point read, within the scan's bound on requests at once. */
const answersOf = <A>(
  runner: Runner<A>,
  candidates: Candidates,
  group: ReadonlyArray<Changes.Unseen>
): Effect.Effect<ReadonlyArray<Answered<A>>> =>
  candidates.unread
    ? Effect.succeed(group.map((unseen) => ({ unseen, answer: missing, read: false })))
    : Effect.forEach(
      group,
      (unseen) =>
        Effect.map(answerOf(runner.readOf(unseen.id, runner.call)), (answer) => ({
          unseen,
          // a found row may have left a filtered selection: only an exhaustive scan says it did
          answer: runner.filtered && answer._tag === "Found" ? unconfirmed : answer,
          read: true
        })),
      { concurrency: runner.readsAtOnce }
    )

/**
 * A group of answers counted into `run`: the candidates proven missing held (each read counted
 * with its delete), the rows found compared, the others kept; an id answered before, skipped.
 */
const countAnswers = <A>(runner: Runner<A>, candidates: Candidates, answered: ReadonlyArray<Answered<A>>) =>
(
  run: Run
): [Changes.Page<A>, Run] => {
  const { sets } = runner
  const { proven } = candidates
  const changes: Array<Changes.Change<A>> = []
  const found: Array<string> = []
  const unsettled: Array<string> = []
  let { heldBack, reads, unchanged, unconfirmed, updated } = run.counts
  for (const { answer, read, unseen: { fingerprint, id } } of answered) {
    // an id the baseline gave twice is answered once
    if (sets.deleted.has(id) || sets.kept.has(id) || proven.has(id)) continue
    if (answer._tag === "Missing" && !candidates.uncontrolled) {
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
      changes.push(Change.Updated({ id, row: row.row, fingerprint: row.fingerprint, previous: fingerprint }))
    }
  }
  const counts = { ...run.counts, heldBack, reads, unchanged, unconfirmed, updated }
  return [
    pageOf(checkpointOf(runner, candidates.scanned, "deletes", counts), { changes, found, unconfirmed: unsettled }),
    { ...run, phase: "deletes", counts }
  ]
}

/** The proven candidates of `group` counted into `run`: deleted when `confirmed`, else kept, held back. */
const countSettled =
  <A>(runner: Runner<A>, scanned: ScanCheckpoint.Checkpoint, group: ReadonlyArray<Proven>, confirmed: boolean) =>
  (
    run: Run
  ): [Changes.Page<A>, Run] => {
    const { sets } = runner
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
      pageOf(checkpointOf(runner, scanned, "deletes", counts), { changes, unconfirmed: unsettled }),
      { ...run, phase: "deletes", counts }
    ]
  }

/** Fails the pass when the deletes it proved, with those it reported, are more than the guard allows. */
const guard = <A>(runner: Runner<A>, candidates: Candidates, atLeast: boolean): Effect.Effect<void, TooManyDeletes> =>
  Effect.flatMap(Ref.get(runner.latest), ({ counts }) => {
    const refused = tooManyDeletes({
      microAppID: runner.microAppID,
      maxDeletes: runner.maxDeletes,
      counts,
      proven: candidates.proven.size,
      atLeast
    })
    return refused === undefined ? Effect.void : Effect.fail(refused)
  })

/** A page of candidates answered and counted; unread, every candidate is a delete, so the guard is checked at once. */
const answeredPage = <A>(runner: Runner<A>, candidates: Candidates) => (group: ReadonlyArray<Changes.Unseen>) =>
  Effect.flatMap(
    answersOf(runner, candidates, group),
    (answered) => Ref.modify(runner.latest, countAnswers(runner, candidates, answered))
  ).pipe(
    // a pass past the guard stays past it, so it stops at once
    Effect.tap(() => candidates.unread ? guard(runner, candidates, true) : Effect.void)
  )

/**
 * Once every candidate is answered: the proven ones deleted when the control read finds a row
 * the scan saw (unread: at once) and the guard allows them, else kept, held back.
 */
const settle = <A>(runner: Runner<A>, candidates: Candidates) =>
  Effect.gen(function*() {
    const { proven, scanned } = candidates
    if (proven.size === 0) return Stream.empty
    const confirmed = candidates.unread || (yield* controlRead(runner.readOf, runner.call, scanned))
    if (confirmed) yield* guard(runner, candidates, false)
    return Stream.fromIterable(proven.values()).pipe(
      Stream.grouped(scanned.query.pageSize),
      Stream.mapEffect((group) =>
        Ref.modify(runner.latest, countSettled(runner, scanned, Chunk.toReadonlyArray(group), confirmed))
      )
    )
  })

/** The last page of a pass: nothing changed, the phase `"done"`. */
const done = <A>(runner: Runner<A>, scanned: ScanCheckpoint.Checkpoint) =>
  Ref.modify(runner.latest, (run): [Changes.Page<A>, Run] => [
    pageOf(checkpointOf(runner, scanned, "done", run.counts), {}),
    { ...run, phase: "done" }
  ])

/**
 * The baseline's ids the complete scan `scanned` did not see: each read (unless unread), the
 * rows found compared and the others kept, page by page; those proven missing held until every
 * candidate is answered, then settled; then the end.
 */
const deletes = <A, E, R>(runner: Runner<A>, baseline: Changes.Baseline<E, R>, scanned: ScanCheckpoint.Checkpoint) =>
  Stream.unwrap(Effect.map(seenOf(scanned), (seen) => {
    const { sets } = runner
    const proven = new Map<string, Proven>()
    const resolved = (id: string) => seen.has(id) || sets.deleted.has(id) || sets.kept.has(id) || proven.has(id)
    // filters name fields by fieldID, rows by label: only an exhaustive scan of the selection
    // says a found row left it, and then a read adds nothing
    const unread = runner.mode === "exhaustive" || (runner.filtered && scanned.summary.exhaustive)
    const candidates: Candidates = { scanned, proven, unread, uncontrolled: !unread && seen.size() === 0 }
    return baseline.unseen(resolved).pipe(
      // what the sink hands back is checked against the scan: no row it saw is ever deleted or read
      Stream.filter((unseen) => !resolved(unseen.id)),
      Stream.grouped(scanned.query.pageSize),
      Stream.mapEffect((group) => answeredPage(runner, candidates)(Chunk.toReadonlyArray(group))),
      Stream.filter((page) => page.changes.length + page.found.length + page.unconfirmed.length > 0),
      Stream.concat(Stream.unwrap(settle(runner, candidates))),
      Stream.concat(Stream.fromEffect(done(runner, scanned)))
    )
  }))

// --- the pass ------------------------------------------------------------------------------------

export const makePass = <A>(scanOf: ScanOf<A>, readOf: ReadOf<A>) =>
  Effect.fnUntraced(function*<E, R>(options: Changes.Options<E, R>) {
    const { baseline, maxDeletes, mode, resume, scanOptions } = yield* check(options)
    // a scan of another query refuses the checkpoint here, even when the pass has no scan left to run
    const scan = yield* scanOf({ ...scanOptions, resume: resume?.scan })
    const start: Run = resume === undefined
      ? { phase: "scan", counts: noCounts, scan: undefined, scanning: false }
      : { phase: resume.phase, counts: resume.counts, scan: resume.scan, scanning: false }
    const latest = yield* Ref.make(start)

    /** A run's runner: the sets of ids it settles, restored from the checkpoint it resumes. */
    const runnerOf: Effect.Effect<Runner<A>> = Effect.gen(function*() {
      return {
        mode,
        maxDeletes,
        microAppID: scanOptions.microAppID,
        filtered: (scanOptions.filters?.length ?? 0) > 0,
        readOf,
        call: { timeout: scanOptions.timeout, retry: scanOptions.retry },
        // within the scan's own bound on requests at once (and the client's, which every call takes)
        readsAtOnce: typeof scanOptions.concurrency === "number"
          ? scanOptions.concurrency
          : scanOptions.maxConcurrency ?? RowStream.defaults.maxConcurrency,
        latest,
        sets: { deleted: yield* restoreIds(resume?.deleted), kept: yield* restoreIds(resume?.kept) }
      }
    })

    const pages = Stream.unwrap(
      Effect.gen(function*() {
        const runner = yield* runnerOf
        yield* Ref.set(latest, { ...start, scanning: start.phase === "scan" })
        const scanned = start.phase === "scan" ? Stream.mapEffect(scan.pages, scanPage(runner, baseline)) : Stream.empty
        const rest = Stream.unwrap(
          Effect.map(
            Ref.get(latest),
            (run) =>
              run.phase === "deletes" && run.scan !== undefined ? deletes(runner, baseline, run.scan) : Stream.empty
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
