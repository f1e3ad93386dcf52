/**
 * Checkpoints: the scan's state after a page (`state.ts`) and the query it belongs to, as a value;
 * its JSON (version 2; version 1 still read), checked field by field and by a checksum on the way in.
 */
import { Effect, Either, ParseResult, Predicate, Schema, Stream } from "effect"
import type { Checkpoint, Query as QueryObject, TypeId as CheckpointTypeId } from "../../Checkpoint.js"
import type { InvalidCheckpoint } from "../../MicroappError.js"
import * as Query from "../../Query.js"
import type * as RowStream from "../../RowStream.js"
import * as Codec from "../checkpointCodec.js"
import type * as Wire from "../http/wire.js"
import { bounds } from "../limits.js"
import * as Engine from "./engine.js"
import * as IdSet from "./IdSet.js"
import * as ScanState from "./state.js"
import { summarise } from "./summary.js"

export const TypeId: CheckpointTypeId = Symbol.for("effect-microapp/Checkpoint") as CheckpointTypeId

/** The version of the JSON this library writes: 2 has the checksum of every format (`Codec.checksum`), 1 had FNV-1a of its text. */
export const version = 2

/** What a scan asked, in the terms that give its position a meaning. */
const QueryFields = Schema.Struct({
  microAppID: Query.Identifier,
  /** Sorted by fieldID, then value: their order does not change the result. Values as sent. */
  filters: Schema.Array(Schema.Struct({ fieldID: Query.Identifier, value: Schema.String })),
  sort: Schema.Array(Schema.Struct({ field: ScanState.Positive, order: Schema.Literal("asc", "desc") })),
  pageSize: ScanState.Positive,
  overlap: ScanState.Count,
  dedupe: Schema.Literal("exact", "recent")
})

// typed as the public interface: this fails to compile if the two part
export const QueryJson: Schema.Schema<QueryObject> = QueryFields

export type QueryJson = QueryObject

/** Who reads the client's formats, and what reads a newer one. */
const readers = { reader: "this library", upgrade: "a newer effect-microapp" } as const

/** What a change pass's checkpoint reads: version 1, which has always had `Codec.checksum`. */
export const versions: Codec.Versions = { current: 1, ...readers }

/** What a scan's checkpoint reads: version 1 too, checked by the checksum it was written with. */
const scanVersions: Codec.Versions = {
  current: version,
  oldest: { version: 1, before: "was never written" },
  ...readers
}

/** The bounds of the client's formats' texts: a change pass's checkpoint holds a scan's. */
export const textBounds: Codec.Bounds = { chars: bounds.checkpointChars, depth: bounds.checkpointDepth }

/** The JSON object of a checkpoint: the scan's state beside its version and query, and the checksum of them all. */
const Json = Schema.Struct({
  version: Codec.Version(scanVersions),
  query: QueryJson,
  ...ScanState.ScanState.fields,
  checksum: Schema.String
})

/** Every key of the format in its order; no name appears twice, so each object's order is its Schema's. */
export const keyOrder = Codec.keyOrder(Json)

const encodeProgress = Codec.plainEncoder(ScanState.Progress)

/** The query's fields alone, each object's keys in its Schema's order, whatever the order or the extra keys given. */
const queryBody = Codec.plainEncoder(QueryFields)

/**
 * The JSON object of a checkpoint but its checksum, as it is written at `at` (fields at their
 * defaults left out): every object made in the format's key order, with no other key.
 */
const bodyOf = (query: QueryJson, state: ScanState.ScanState, at: number = version) => {
  const { seen, ...progress } = state
  return { version: at, query: queryBody(query), ...encodeProgress(progress), seen: ScanState.encodeSeen(seen) }
}

const packedKey = `"packed":"`

/**
 * `body`'s text, `Codec.textOf(body, keyOrder)` made faster: the keys in the order `bodyOf` made
 * them (JSON.stringify with a list of keys looks each one up in every object). The packed ids,
 * most of a large checkpoint's text, are base64 (as written, and checked so before a text read is
 * written again): nothing in them to escape, they go into the text as they are.
 */
const textOf = (body: ReturnType<typeof bodyOf>): string => {
  const { seen } = body
  if (!("packed" in seen)) return JSON.stringify(body)
  const text = JSON.stringify({ ...body, seen: { ...seen, packed: "" } })
  // the format's one key "packed", the last: a string's quotes are escaped, so no string holds this
  const at = text.lastIndexOf(packedKey) + packedKey.length
  return text.slice(0, at) + seen.packed + text.slice(at)
}

export class CheckpointImpl implements Checkpoint {
  readonly [TypeId]: typeof TypeId = TypeId
  #summary: RowStream.ScanSummary | undefined

  constructor(readonly query: QueryJson, readonly state: ScanState.ScanState) {}

  // made when first read: a scan makes a checkpoint every page, and most are only stored
  get summary(): RowStream.ScanSummary {
    return this.#summary ??= summarise(this.state.counters, this.query.dedupe)
  }

  /** The checkpoint's JSON object, its checksum last: what `JSON.stringify` writes, not its inner workings. */
  toJSON(): unknown {
    const body = bodyOf(this.query, this.state)
    return { ...body, checksum: Codec.checksum(body) }
  }

  /** The text of `toJSON`'s object in the format's order, its body made once. */
  toJson(): string {
    const body = bodyOf(this.query, this.state)
    return Codec.seal(textOf(body), Codec.checksum(body))
  }
}

export const isCheckpoint = (u: unknown): u is Checkpoint => u instanceof CheckpointImpl

/** The checkpoint's JSON text: its object with the keys in the format's order, the checksum last. */
export const toJson = (checkpoint: Checkpoint): string =>
  checkpoint instanceof CheckpointImpl ? checkpoint.toJson() : JSON.stringify(checkpoint, keyOrder)

/** A problem of a decoded checkpoint: where, and what. */
type Problem = readonly [path: readonly [string, ...Array<string>], message: string]

/** The first way in which `state` is not a state the engine could have been in under `query`, if any. */
const problemOf = (query: QueryJson, { counters, seen, state }: ScanState.ScanState): Problem | undefined => {
  if (state.reread > query.overlap + 1) {
    return [["state", "reread"], `${state.reread} rows re-read, more than overlap + 1 (${query.overlap + 1})`]
  }
  if (state.tail.length > state.reread) {
    return [["state", "tail"], `holds ${state.tail.length} ids, more than the ${state.reread} rows re-read`]
  }
  if (state.tail.length > state.position) {
    return [
      ["state", "tail"],
      `holds ${state.tail.length} ids, more than the ${state.position} rows before the position`
    ]
  }
  if (state.tail.length > state.largestPage) {
    return [["state", "tail"], `holds ${state.tail.length} ids, more than the largest page (${state.largestPage})`]
  }
  if (state.shortPage !== null && state.shortPage > state.largestPage) {
    return [["state", "shortPage"], `${state.shortPage} is larger than the largest page (${state.largestPage})`]
  }
  if (state.probe !== null && state.probe.rowsSeen > state.largestPage) {
    return [
      ["state", "probe", "rowsSeen"],
      `${state.probe.rowsSeen} is larger than the largest page (${state.largestPage})`
    ]
  }
  if (state.stalled >= Engine.stallLimit) {
    return [["state", "stalled"], `${state.stalled} windows without progress: a scan gives up at ${Engine.stallLimit}`]
  }
  if (counters.pages === 0) return [["counters", "pages"], "no page judged: a checkpoint follows a page"]
  if (counters.rows > counters.emitted) {
    return [["counters", "rows"], `${counters.rows} rows handed on, more than the ${counters.emitted} emitted`]
  }
  if (counters.emitted - counters.rows > counters.invalidRows) {
    return [
      ["counters", "invalidRows"],
      `${
        counters.emitted - counters.rows
      } rows emitted were not handed on, but only ${counters.invalidRows} were invalid`
    ]
  }
  if (seen._tag === "Held") {
    if (query.dedupe !== "exact") {
      return [["seen"], `is held by a sink, but the query's dedupe is "${query.dedupe}"`]
    }
    if (seen.size > counters.emitted) {
      return [["seen", "held"], `counts ${seen.size} ids, more than the ${counters.emitted} rows emitted`]
    }
  } else if (seen._tag === "Exact") {
    if (query.dedupe !== "exact") {
      return [["seen"], `holds every id emitted, but the query's dedupe is "${query.dedupe}"`]
    }
    const packed = seen.packed()
    if (IdSet.decodeBase64(packed) === undefined || packed.length % 16 !== 0) {
      return [["seen", "packed"], "is not base64 of 12 bytes an id (its length must be a multiple of 16)"]
    }
    if (seen.size > counters.emitted) {
      return [["seen"], `holds ${seen.size} ids, more than the ${counters.emitted} rows emitted`]
    }
    const packable = seen.others().find(IdSet.isPacked)
    if (packable !== undefined) return [["seen", "others"], `holds "${packable}", which belongs in packed`]
  } else {
    if (query.dedupe !== "recent") {
      return [["seen"], `holds recent ids only, but the query's dedupe is "${query.dedupe}"`]
    }
    const capacity = Engine.recentCapacity(query)
    if (seen.ids.length > Math.min(capacity, counters.emitted)) {
      return [
        ["seen", "recent"],
        `holds ${seen.ids.length} ids, more than the ${capacity} kept or the ${counters.emitted} rows emitted`
      ]
    }
  }
  return undefined
}

/** The checksum of a body written at version `at`: version 1's was of its text. */
const checksumAt = (at: number, body: ReturnType<typeof bodyOf>): string =>
  at === 1 ? Codec.fnv1a(textOf(body)) : Codec.checksum(body)

const mustBe = "must be a Checkpoint: from a page of `pages`, or from `Checkpoint.fromJson`"

const CheckpointSelf = Schema.declare(isCheckpoint, { identifier: "Checkpoint", message: () => mustBe })

// an Either, not an Effect: Schema runs a fiber for a transformation that returns an Effect
const decodeJsonObject = ParseResult.decodeUnknownEither(Json)

/**
 * A checkpoint from its JSON object: checked field by field, against the engine's rules, and by
 * its checksum; encodes to that object.
 */
export const CheckpointSchema: Schema.Schema<Checkpoint, unknown> = Schema.transformOrFail(
  Schema.Unknown,
  CheckpointSelf,
  {
    strict: true,
    decode: (input, options, ast) =>
      Either.flatMap(decodeJsonObject(input, options), ({ checksum, query, version: at, ...state }) => {
        const problem = problemOf(query, state)
        if (problem !== undefined) {
          const [path, message] = problem
          return ParseResult.fail(new ParseResult.Pointer(path, input, new ParseResult.Type(ast, input, message)))
        }
        if (checksumAt(at, bodyOf(query, state, at)) !== checksum) {
          const { reason } = Codec.checksumRefused("checksum")
          return ParseResult.fail(
            new ParseResult.Pointer(["checksum"], checksum, new ParseResult.Type(ast, checksum, reason))
          )
        }
        return ParseResult.succeed(new CheckpointImpl(query, state))
      }),
    encode: (checkpoint) => ParseResult.succeed(checkpoint.toJSON())
  }
)

const decodeJson = Codec.decoder(CheckpointSchema)

/** A checkpoint from its JSON text, or what is wrong with the text. */
const parseText = (text: string): Either.Either<Checkpoint, InvalidCheckpoint> =>
  Either.flatMap(
    Either.flatMap(Codec.parse(text, textBounds, "checkpoint"), (json) =>
      Codec.objectWith(json, "version", "a checkpoint")),
    (object) =>
      decodeJson(object, "checkpoint")
  )

/** A checkpoint from its JSON text, or what is wrong with the text. */
export const fromJson = (text: string): Effect.Effect<Checkpoint, InvalidCheckpoint> =>
  Effect.suspend(() => parseText(text))

/** A checkpoint from its JSON text, checked as `fromJson` checks it (`Schema.parseJson` would parse unbounded text). */
export const CheckpointFromJson: Schema.Schema<Checkpoint, string> = Schema.transformOrFail(
  Schema.String,
  CheckpointSelf,
  {
    strict: true,
    decode: (text, _, ast) =>
      Either.mapLeft(parseText(text), (error) => new ParseResult.Type(ast, text, `${error.input} ${error.reason}`)),
    encode: (checkpoint, _, ast) =>
      checkpoint instanceof CheckpointImpl
        ? ParseResult.succeed(toJson(checkpoint))
        : ParseResult.fail(new ParseResult.Type(ast, checkpoint, "not a checkpoint of this library"))
  }
)

/** The query of a scan, as a checkpoint records it. */
export const queryOf = (
  selection: Wire.CheckedSelection,
  settings: { readonly pageSize: number; readonly overlap: number; readonly dedupe: "exact" | "recent" }
): QueryJson => ({
  microAppID: selection.microAppID,
  filters: selection.filters
    .map((filter) => ({ fieldID: filter.fieldID, value: String(filter.value) }))
    .sort((a, b) =>
      a.fieldID < b.fieldID ? -1 : a.fieldID > b.fieldID ? 1 : a.value < b.value ? -1 : a.value > b.value ? 1 : 0
    ),
  sort: selection.sort,
  pageSize: settings.pageSize,
  overlap: settings.overlap,
  dedupe: settings.dedupe
})

const showFilters = (filters: QueryJson["filters"]) =>
  filters.length === 0
    ? "none"
    : filters.map((filter) => `${filter.fieldID} = ${JSON.stringify(filter.value)}`).join(" and ")

const showSort = (sort: QueryJson["sort"]) =>
  sort.length === 0 ? "natural order" : sort.map((key) => `sort field ${key.field} ${key.order}`).join(", then ")

/** How two queries differ, each difference a phrase naming both sides; empty when they do not. */
const differences = (was: QueryJson, now: QueryJson): Array<string> => {
  const aspects: ReadonlyArray<readonly [string, (query: QueryJson) => string]> = [
    ["microAppID", (query) => query.microAppID],
    ["filters", (query) => showFilters(query.filters)],
    ["sort", (query) => showSort(query.sort)],
    ["pageSize", (query) => String(query.pageSize)],
    ["overlap", (query) => String(query.overlap)],
    ["dedupe", (query) => query.dedupe]
  ]
  return aspects.flatMap(([name, show]) =>
    show(was) === show(now) ? [] : [`${name} (the checkpoint's: ${show(was)}; this scan's: ${show(now)})`]
  )
}

/** The checkpoint without its ids, their count and digest kept: for a sink that holds them. Recent ids are kept. */
export const withoutIds = (checkpoint: Checkpoint): Checkpoint =>
  checkpoint instanceof CheckpointImpl && checkpoint.state.seen._tag === "Exact"
    ? new CheckpointImpl(checkpoint.query, { ...checkpoint.state, seen: IdSet.heldContents(checkpoint.state.seen) })
    : checkpoint

const idsRefused = (input: string, reason: string) =>
  Codec.invalidCheckpoint("ids differ", input, `the sink's ids are not the checkpoint's: ${reason}`)

/**
 * The checkpoint with the ids its sink gave back, checked against the count and digest it kept;
 * one that holds its ids is returned as it is, `ids` unread.
 */
export const withIds = <E = never, R = never>(
  checkpoint: Checkpoint,
  ids: Iterable<string> | Stream.Stream<string, E, R>
): Effect.Effect<Checkpoint, InvalidCheckpoint | E, R> =>
  Effect.suspend(() => {
    if (!(checkpoint instanceof CheckpointImpl)) {
      return Effect.fail(Codec.invalidCheckpoint("not a checkpoint", "checkpoint", mustBe))
    }
    const { seen } = checkpoint.state
    if (seen._tag !== "Held") return Effect.succeed(checkpoint)
    return Effect.map(
      gatherIds(seen, ids, "ids"),
      (contents) => new CheckpointImpl(checkpoint.query, { ...checkpoint.state, seen: contents })
    )
  })

/**
 * The ids a sink gave back (`input` names them in a refusal) as a set's contents, refused unless
 * they are, once each, the ids `held` counts; reading stops at the first one too many.
 */
export const gatherIds = <E, R>(
  held: IdSet.HeldContents,
  ids: Iterable<string> | Stream.Stream<string, E, R>,
  input: string
): Effect.Effect<IdSet.ExactContents, InvalidCheckpoint | E, R> => {
  const set = IdSet.exact({ journal: true })
  const refused = (reason: string) => Effect.fail(idsRefused(input, reason))
  return Effect.flatMap(
    Stream.runForEachChunk(Predicate.isIterable(ids) ? Stream.fromIterable(ids) : ids, (chunk) =>
      Effect.suspend(() => {
        for (const id of chunk) {
          if (typeof id !== "string") return refused(`${typeof id} among them, not an id`)
          if (!set.add(id)) return refused(`"${id}" comes twice`)
        }
        return set.size() > held.size ? refused(`more than the ${held.size} it counts`) : Effect.void
      })),
    () => {
      const contents = set.contents()
      if (contents?._tag !== "Exact") return Effect.dieMessage("scan: an exact set with a journal has contents")
      if (contents.size !== held.size) {
        return refused(`${contents.size} ids, but it counts ${held.size}`)
      }
      return contents.digest() === held.digest
        ? Effect.succeed(contents)
        : refused("as many ids as it counts, but not the same (their digest differs)")
    }
  )
}

/** The checkpoint `resume` names, checked against the query of the scan that resumes from it. */
export const resumeFrom = (
  resume: Checkpoint | undefined,
  query: QueryJson
): Either.Either<CheckpointImpl | undefined, InvalidCheckpoint> => {
  if (resume === undefined) return Either.right(undefined)
  if (!(resume instanceof CheckpointImpl)) {
    return Either.left(Codec.invalidCheckpoint("not a checkpoint", "resume", mustBe))
  }
  if (resume.state.seen._tag === "Held") {
    return Either.left(Codec.invalidCheckpoint(
      "ids held",
      "resume",
      "the checkpoint holds no ids, its sink does: resume from `Checkpoint.withIds(checkpoint, ids)` with the ids the sink committed"
    ))
  }
  const differ = differences(resume.query, query)
  return differ.length === 0
    ? Either.right(resume)
    : Either.left(
      Codec.invalidCheckpoint("another query", "resume", `the checkpoint is of another query: ${differ.join(", ")}`)
    )
}
