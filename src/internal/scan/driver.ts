/**
 * The driver of the paging engine: fibers, prefetch, concurrency, chunking, checkpoints, the
 * scan's span and interruption around the state machine of `engine.ts`, which decides
 * everything else.
 */
import { Channel, Chunk, Clock, Effect, Either, Fiber, Queue, Ref, Schema, Stream, Take, type Tracer } from "effect"
import { type InvalidInput, type ScanError, ScanInconsistent, type UnexpectedResponse } from "../../MicroappError.js"
import * as RowStream from "../../RowStream.js"
import { CheckpointEvery, validate } from "../bounds.js"
import { invalidCheckpoint } from "../checkpointCodec.js"
import type { DecodedRows } from "../http/decode.js"
import { endpoints } from "../http/endpoints.js"
import * as Metrics from "../metrics.js"
import { CheckpointImpl, type QueryJson, resumeFrom } from "./checkpoint.js"
import * as Concurrency from "./concurrency.js"
import * as Engine from "./engine.js"
import { noCounters } from "./state.js"
import { summarise } from "./summary.js"

/** One answer of the server, undecoded, how many attempts it took and its HTTP status. */
export interface RawPage {
  readonly rows: ReadonlyArray<unknown>
  readonly attempts: number
  readonly status: number
}

/** What the engine needs from the client. */
export interface ScanSource<A> {
  readonly microAppID: string
  readonly path: string
  /** The query, as a checkpoint records it. */
  readonly query: QueryJson
  readonly fetch: (window: { readonly skip: number; readonly limit: number }) => Effect.Effect<RawPage, ScanError>
  readonly decode: (
    rows: ReadonlyArray<unknown>,
    indexes: ReadonlyArray<number>,
    answer: { readonly attempts: number; readonly status: number }
  ) => Either.Either<DecodedRows<A>, UnexpectedResponse>
}

/** The options with their defaults, checked by the caller. */
export interface Settings {
  readonly pageSize: number
  readonly concurrency: number | "auto"
  readonly maxConcurrency: number
  readonly prefetch: number
  readonly overlap: number
  readonly onInconsistent: "fail" | "continue"
  readonly dedupe: "exact" | "recent"
}

export const settings = (
  options: RowStream.ScanOptions,
  limits: { readonly maxInFlight?: number | undefined }
): Settings => {
  const maxConcurrency = Math.min(
    options.maxConcurrency ?? RowStream.defaults.maxConcurrency,
    limits.maxInFlight ?? Infinity
  )
  return {
    pageSize: options.pageSize ?? RowStream.defaults.pageSize,
    concurrency: options.concurrency ?? RowStream.defaults.concurrency,
    maxConcurrency: Math.max(1, maxConcurrency),
    prefetch: options.prefetch ?? RowStream.defaults.prefetch,
    overlap: options.overlap ?? RowStream.defaults.overlap,
    onInconsistent: options.onInconsistent ?? RowStream.defaults.onInconsistent,
    dedupe: options.dedupe ?? RowStream.defaults.dedupe
  }
}

/** Where a scan starts, and how often `pages` hands out a checkpoint. */
export interface Checkpointing {
  readonly resume: CheckpointImpl | undefined
  readonly every: RowStream.CheckpointEvery
}

const validateCheckpointEvery = validate(
  Schema.Struct({ checkpointEvery: Schema.optional(CheckpointEvery) }),
  endpoints.rows
)

/**
 * The checkpointing options, checked: `resume` must be a checkpoint of `query` (refused before
 * any request otherwise), `checkpointEvery` must name a bounded number of pages or rows.
 */
export const checkpointing = (
  options: RowStream.ScanOptions,
  query: QueryJson
): Effect.Effect<Checkpointing, InvalidInput> =>
  Effect.flatMap(
    validateCheckpointEvery(options),
    ({ checkpointEvery }) =>
      Either.match(resumeFrom(options.resume, query), {
        onLeft: Effect.fail,
        onRight: (resume) => Effect.succeed({ resume, every: checkpointEvery ?? RowStream.defaults.checkpointEvery })
      })
  )

/** Resumes after the event loop's next check phase (where `setImmediate` callbacks run). */
const nextTurn = Effect.async<void>((resume) => {
  const resumeNow = () => resume(Effect.void)
  if (typeof setImmediate === "function") {
    const handle = setImmediate(resumeNow)
    return Effect.sync(() => clearImmediate(handle))
  }
  const handle = setTimeout(resumeNow, 0)
  return Effect.sync(() => clearTimeout(handle))
})

/**
 * Lets requests just forked reach the socket before a page is decoded, so that the server prepares
 * the next page meanwhile: the fetch fibers run first, then two turns of the event loop, since
 * undici writes a request on a reused connection from a `setImmediate` callback.
 */
const letRequestsOut = Effect.zipRight(Effect.yieldNow(), Effect.zipRight(nextTurn, nextTurn))

/**
 * The most rows in one chunk of the stream: some of Effect's sinks (`Stream.runFold`) recurse once
 * per element of a chunk, and overflow the stack on chunks of several thousand.
 */
const maxChunkSize = 2048

const chunksOf = <A>(rows: Array<A>): ReadonlyArray<Chunk.Chunk<A>> =>
  rows.length === 0
    ? []
    : rows.length <= maxChunkSize
    ? [Chunk.unsafeFromArray(rows)]
    : Array.from(
      { length: Math.ceil(rows.length / maxChunkSize) },
      (_, i) => Chunk.unsafeFromArray(rows.slice(i * maxChunkSize, (i + 1) * maxChunkSize))
    )

/**
 * What the scan hands the consumer through the queue: a page of rows (or the end), taken out once.
 * Whatever waited for it (a taker of the queue, a fiber) may have reached the old generation; were
 * the page still referenced from there once it is dead, it would be kept and promoted with it.
 */
class Parcel<A> {
  constructor(private take: Take.Take<A, ScanError> | undefined) {}
  open(): Take.Take<A, ScanError> {
    const take = this.take
    if (take === undefined) throw new Error("scan: a page was taken twice")
    this.take = undefined
    return take
  }
}

/**
 * A window being fetched. Its page is handed over through `slot`, emptied once taken, rather than
 * as the fiber's result, for the same reason as `Parcel`.
 */
interface InFlight {
  readonly window: Engine.Window
  readonly fiber: Fiber.RuntimeFiber<void, ScanError>
  readonly slot: { page: RawPage | undefined; millis: number }
}

/**
 * One run of a scan: the engine's state (whose counters the driver's figures are in too, carried
 * over from the checkpoint it resumed from, if any), and the controller's.
 */
interface Run {
  readonly engine: Engine.State
  readonly controller: Concurrency.Controller
  readonly startedAt: number
  endedAt: number | undefined
  /** Time spent by the runs before this one. */
  readonly earlierMillis: number
}

/** Brings up to `now` the two counters that move without a page: the concurrency, and the time spent. */
const stamp = (run: Run, now: number): void => {
  run.engine.counters.concurrency = run.controller.current
  run.engine.counters.elapsedMillis = run.earlierMillis + (run.endedAt ?? now) - run.startedAt
}

/**
 * Hands on the decoded rows of a window (`took`: the engine took rows from it, even if none
 * decoded), in order; `end`: the scan ends with them.
 */
type Deliver<A> = (rows: Array<A>, took: boolean, end: boolean) => Effect.Effect<void>

/** The final figures on the scan's span, as it ends. */
const annotate = (span: Tracer.Span, summary: RowStream.ScanSummary): void => {
  for (const [key, value] of Object.entries(summary)) {
    if (value !== undefined) span.attribute(key, value)
  }
}

/** A run from the start, or from `resume`; `journal`: for checkpoints. */
const start = (
  settings: Settings,
  resume: CheckpointImpl | undefined,
  journal: boolean
): Effect.Effect<Run, InvalidInput> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Either.match(
      resume === undefined
        ? Either.right(Engine.initial(settings, journal))
        : Engine.resume(settings, resume.state, journal),
      {
        // ids no scan could have emitted (one twice): the checkpoint is refused, as at `scan`, before any request
        onLeft: (reason) => Effect.fail(invalidCheckpoint("field", "resume", `the checkpoint ${reason}`)),
        onRight: (engine) => {
          if (resume !== undefined) engine.counters.resumed++
          return Effect.succeed<Run>({
            engine,
            controller: settings.concurrency === "auto"
              ? Concurrency.auto(settings.maxConcurrency)
              : Concurrency.fixed(settings.concurrency),
            startedAt: now,
            endedAt: undefined,
            earlierMillis: engine.counters.elapsedMillis
          })
        }
      }
    ))

const summaryOf = (run: Run, dedupe: Settings["dedupe"], now: number): RowStream.ScanSummary => {
  stamp(run, now)
  return summarise(run.engine.counters, dedupe)
}

/** A scan's metrics, tagged once per scan, not once per page. */
const scanMetrics = (microAppID: string) => {
  const tags = { microapp_id: microAppID }
  return {
    rows: Metrics.rowsEmitted(tags),
    invalidRows: Metrics.invalidRows(tags),
    pages: Metrics.pages(tags),
    duplicatesDropped: Metrics.duplicatesDropped(tags),
    appearedBehind: Metrics.appearedBehind(tags),
    vanishedBehind: Metrics.vanishedBehind(tags),
    inconsistencies: Metrics.inconsistencies(tags),
    windowsInFlight: Metrics.windowsInFlight(tags)
  }
}

type ScanMetrics = ReturnType<typeof scanMetrics>

/** What every step of one run's drive works on: the windows in flight are the driver's own. */
interface Driving<A> {
  readonly source: ScanSource<A>
  readonly metric: ScanMetrics
  readonly engine: Engine.State
  readonly controller: Concurrency.Controller
  readonly deliver: Deliver<A>
  readonly inflight: Array<InFlight>
}

/** Fetches `window` into `slot`, with the time its answer took. */
const fetchInto = <A>(source: ScanSource<A>, window: Engine.Window, slot: InFlight["slot"]) =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (sentAt) =>
      Effect.flatMap(source.fetch({ skip: window.start, limit: window.limit }), (page) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          slot.page = page
          slot.millis = now - sentAt
        }))
  )

/** Forks the fetches of the windows the engine wants in flight and are not. */
const fill = <A>(d: Driving<A>): Effect.Effect<void> =>
  Effect.suspend(() => {
    const { engine, inflight } = d
    const wanted = Engine.wanted(engine, d.controller.current) - inflight.length
    // most pages, in a steady scan, find the windows they want in flight already
    if (wanted <= 0) return Effect.void
    return Effect.forEach(
      Array.from({ length: wanted }),
      () => {
        const window = Engine.plan(engine, inflight.length > 0)
        const slot: InFlight["slot"] = { page: undefined, millis: 0 }
        return Effect.map(Effect.fork(fetchInto(d.source, window, slot)), (fiber) => {
          inflight.push({ window, fiber, slot })
          engine.counters.concurrencyReached = Math.max(engine.counters.concurrencyReached, inflight.length)
        })
      },
      { discard: true }
    )
  })

const dropAhead = (inflight: Array<InFlight>): Effect.Effect<void> =>
  Effect.suspend(() => Fiber.interruptAll(inflight.splice(0).map((entry) => entry.fiber)))

/** Hands on the rows a page's verdict takes from the answer to the window at `skip`. */
const emit = <A>(
  d: Driving<A>,
  taken: { readonly rows: Array<unknown>; readonly indexes: Array<number> },
  skip: number,
  answer: RawPage,
  end: boolean
): Effect.Effect<void, ScanError> =>
  Effect.suspend(() => {
    const { engine, metric, source } = d
    if (taken.rows.length === 0) return end ? d.deliver([], false, true) : Effect.void
    // a row at fault is named by its place in the table as the scan reads it, not in one answer
    const indexes = taken.indexes.map((index) => skip + index)
    return Either.match(source.decode(taken.rows, indexes, answer), {
      onLeft: (error) => Effect.fail<ScanError>(error),
      onRight: (decoded) => {
        engine.counters.rows += decoded.rows.length
        engine.counters.invalidRows += decoded.invalid.length
        const counted = Metrics.increase(metric.rows, decoded.rows.length)
        return Effect.zipRight(
          decoded.invalid.length === 0 ? counted : Effect.all([
            counted,
            Metrics.increase(metric.invalidRows, decoded.invalid.length),
            // where the row failed, never its values (the Schema's message may quote them)
            Effect.forEach(decoded.invalid, (error) =>
              Effect.logWarning("a row failed its Schema").pipe(
                Effect.annotateLogs({
                  microAppID: source.microAppID,
                  rowIndex: error.rowIndex ?? -1,
                  rowID: error.rowID ?? "",
                  fieldPath: error.fieldPath ?? ""
                })
              ), { discard: true })
          ], { discard: true }),
          d.deliver(decoded.rows, true, end)
        )
      }
    })
  })

/** Acts on the next page in order, as the engine judges it; false once the scan is over. */
const act = <A>(
  d: Driving<A>,
  window: Engine.Window,
  page: RawPage,
  millis: number
): Effect.Effect<boolean, ScanError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const { engine, metric } = d
    const before = { ...engine.counters }
    const verdict = Engine.judge(engine, window, page.rows, page.attempts)
    const after = engine.counters
    // a page of a steady scan moves only the pages counter: the others are not run for nothing
    const moved = (["pages", "duplicatesDropped", "appearedBehind", "vanishedBehind", "inconsistencies"] as const)
      .filter((counter) => after[counter] !== before[counter])
      .map((counter) => Metrics.increase(metric[counter], after[counter] - before[counter]))
    const counted = Effect.all([...moved, Metrics.update(metric.windowsInFlight, d.inflight.length)], { discard: true })
    Concurrency.observe(d.controller, {
      now,
      rows: page.rows.length,
      latencyMillis: millis,
      pushedBack: page.attempts > 1,
      full: verdict._tag === "Continue" && !verdict.dropAhead
    })
    return Effect.zipRight(counted, actOn(d, verdict, window, page))
  })

const actOn = <A>(
  d: Driving<A>,
  verdict: Engine.Verdict,
  window: Engine.Window,
  page: RawPage
): Effect.Effect<boolean, ScanError> => {
  switch (verdict._tag) {
    case "Inconsistent":
      return Effect.fail(
        new ScanInconsistent({
          method: "POST",
          path: d.source.path,
          microAppID: d.source.microAppID,
          position: d.engine.cursor.position,
          rowsEmitted: d.engine.counters.rows,
          pages: d.engine.counters.pages,
          reason: verdict.reason
        })
      )
    case "End":
      return Effect.as(Effect.zipRight(dropAhead(d.inflight), emit(d, verdict, window.start, page, true)), false)
    case "Continue":
      // fetch ahead before the consumer takes the rows
      return (verdict.dropAhead ? Effect.zipRight(dropAhead(d.inflight), fill(d)) : fill(d)).pipe(
        // one window in flight only: with more, the pause would let more of them be answered before a drop
        Effect.zipRight(d.controller.current === 1 ? letRequestsOut : Effect.void),
        Effect.zipRight(emit(d, verdict, window.start, page, false)),
        Effect.as(true)
      )
  }
}

/**
 * One page in order: fetch ahead, take the next answer and act on it; false once the scan is
 * over. Combinators rather than a generator, whose locals would hold the page: whatever waits
 * for the network may reach the old generation, and keep a page promoted long after its step.
 */
const step = <A>(d: Driving<A>): Effect.Effect<boolean, ScanError> =>
  Effect.flatMap(fill(d), () => {
    const head = d.inflight.shift()
    if (head === undefined) return Effect.dieMessage("scan: no window in flight")
    // its exit, not `Fiber.join`: the driver takes nothing of the fetch's fiber-local state
    return Effect.flatMap(Effect.flatten(Fiber.await(head.fiber)), () => {
      const page = head.slot.page
      head.slot.page = undefined
      if (page === undefined) return Effect.dieMessage("scan: a window ended without its page")
      return act(d, head.window, page, head.slot.millis)
    })
  })

/** Runs the engine of `run` to its end, handing each window's rows to `deliver`. */
const drive = <A>(
  source: ScanSource<A>,
  metric: ScanMetrics,
  run: Run,
  deliver: Deliver<A>
): Effect.Effect<void, ScanError> => {
  const d: Driving<A> = {
    source,
    metric,
    engine: run.engine,
    controller: run.controller,
    deliver,
    inflight: []
  }
  const once = step(d)
  const loop: Effect.Effect<void, ScanError> = Effect.flatMap(once, (more) => more ? loop : Effect.void)
  // a complete checkpoint leaves nothing to ask
  return Effect.onExit(run.engine.counters.complete ? Effect.void : loop, () => dropAhead(d.inflight))
}

/** What one scan's runs share: where they read, how, and the latest run, for `summary`. */
interface Scanning<A> {
  readonly source: ScanSource<A>
  readonly settings: Settings
  readonly checkpoints: Checkpointing
  readonly metric: ScanMetrics
  readonly latest: Ref.Ref<Run | undefined>
}

/**
 * One run, as a stream of what `deliverTo` offers. Its span covers the run, from before the
 * first request to the last element taken or the interruption, and ends with the summary.
 */
const runStream = <A, O>(
  scanning: Scanning<A>,
  journal: boolean,
  deliverTo: (run: Run, queue: Queue.Enqueue<Parcel<O>>) => Deliver<A>
): Stream.Stream<O, ScanError> =>
  Stream.unwrapScoped(
    Effect.gen(function*() {
      const { settings, source } = scanning
      const span = yield* Effect.makeSpanScoped("MicroappClient.scan", {
        attributes: { microAppID: source.microAppID }
      })
      const run = yield* start(settings, scanning.checkpoints.resume, journal)
      yield* Ref.set(scanning.latest, run)
      // finalizers run last first: this one after the run below has stopped, before the span ends
      yield* Effect.addFinalizer(() =>
        Effect.map(Clock.currentTimeMillis, (now) => annotate(span, summaryOf(run, settings.dedupe, now)))
      )
      const queue = yield* Queue.bounded<Parcel<O>>(settings.prefetch)
      yield* Effect.forkScoped(
        drive(source, scanning.metric, run, deliverTo(run, queue)).pipe(
          Effect.withParentSpan(span),
          Effect.ensuring(Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => (run.endedAt = now)))),
          Effect.exit,
          Effect.flatMap((exit) =>
            Queue.offer(queue, new Parcel(exit._tag === "Success" ? Take.end : Take.failCause(exit.cause)))
          )
        )
      )
      return Stream.fromChannel(emptying(queue))
    })
  )

/** A channel that writes a scan's chunks, and ends or fails as the scan does. */
type Chunks<O> = Channel.Channel<Chunk.Chunk<O>, unknown, ScanError, unknown, void, unknown>

/**
 * The queue's parcels as one channel, each opened as it is taken: a chunk a page, written as it
 * comes, the end, or the failure (a third of the channel steps a page of the stream that takes
 * the queue, opens the parcels and flattens their takes in stages).
 */
const emptying = <O>(queue: Queue.Dequeue<Parcel<O>>): Chunks<O> => {
  const next: Chunks<O> = Channel.flatMap(
    Channel.fromEffect(Queue.take(queue)),
    (parcel) =>
      Take.match(parcel.open(), {
        onEnd: () => Channel.void,
        onFailure: Channel.failCause,
        onSuccess: (chunk) => Channel.zipRight(Channel.write(chunk), Channel.suspend(() => next))
      })
  )
  return next
}

/** Hands on each window's rows as they are, in chunks. */
const offerRows = <A>(_: Run, queue: Queue.Enqueue<Parcel<A>>): Deliver<A> => (rows) =>
  Effect.forEach(chunksOf(rows), (chunk) => Queue.offer(queue, new Parcel(Take.chunk(chunk))), { discard: true })

/** Gathers the rows of windows into pages, each with the checkpoint of the state after its rows. */
const gather = <A>(
  source: ScanSource<A>,
  every: RowStream.CheckpointEvery,
  run: Run,
  queue: Queue.Enqueue<Parcel<RowStream.Page<A>>>
): Deliver<A> => {
  const enoughPages = every.pages ?? Infinity
  const enoughRows = every.rows ?? Infinity
  let rows: Array<A> = []
  let windows = 0
  return (decoded, took, end) =>
    Effect.suspend(() => {
      if (took) {
        windows++
        if (rows.length === 0) rows = decoded
        else for (const row of decoded) rows.push(row)
      }
      if (!end && (windows === 0 || (windows < enoughPages && rows.length < enoughRows))) return Effect.void
      return Effect.flatMap(Clock.currentTimeMillis, (now) => {
        stamp(run, now)
        const checkpoint = new CheckpointImpl(source.query, Engine.stateOf(run.engine))
        const page: RowStream.Page<A> = { rows, checkpoint }
        rows = []
        windows = 0
        return Queue.offer(queue, new Parcel(Take.of(page)))
      })
    })
}

/** Builds a scan over `source`: each run of `rows` or `pages` is a scan of its own. */
export const make = <A>(source: ScanSource<A>, settings: Settings, checkpoints: Checkpointing): RowStream.Scan<A> => {
  const scanning: Scanning<A> = {
    source,
    settings,
    checkpoints,
    metric: scanMetrics(source.microAppID),
    latest: Ref.unsafeMake<Run | undefined>(undefined)
  }
  const summary = Effect.flatMap(
    Ref.get(scanning.latest),
    (run) =>
      Effect.map(
        Clock.currentTimeMillis,
        (now) => run === undefined ? summarise(noCounters, settings.dedupe) : summaryOf(run, settings.dedupe, now)
      )
  )
  return {
    rows: runStream(scanning, false, offerRows),
    pages: runStream(scanning, true, (run, queue) => gather(source, checkpoints.every, run, queue)),
    summary
  }
}
