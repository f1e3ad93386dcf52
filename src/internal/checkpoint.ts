/**
 * Checkpoints: the engine's state after a page, the driver's figures and the query they belong
 * to, as a value; its JSON (version 1), checked field by field and by a checksum on the way in.
 */
import { Effect, Either, ParseResult, Predicate, Schema } from "effect"
import type { Checkpoint, Json as JsonObject, Query as QueryObject, TypeId as CheckpointTypeId } from "../Checkpoint.js"
import { InvalidInput } from "../MicroappError.js"
import * as Query from "../Query.js"
import type * as RowStream from "../RowStream.js"
import { bounds } from "./bounds.js"
import { endpoints } from "./endpoints.js"
import * as IdSet from "./IdSet.js"
import * as Engine from "./scanEngine.js"
import { type Figures, summarise } from "./summary.js"
import type * as Wire from "./wire.js"

export const TypeId: CheckpointTypeId = Symbol.for("effect-microapp/Checkpoint") as CheckpointTypeId

/** The version of the JSON this library writes and reads. */
export const version = 1

const Count = Schema.NonNegativeInt
const Positive = Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))

/** What a scan asked, in the terms that give its position a meaning. */
const QueryFields = Schema.Struct({
  microAppID: Query.Identifier,
  /** Sorted by fieldID, then value: their order does not change the result. Values as sent. */
  filters: Schema.Array(Schema.Struct({ fieldID: Query.Identifier, value: Schema.String })),
  sort: Schema.Array(Schema.Struct({ field: Positive, order: Schema.Literal("asc", "desc") })),
  pageSize: Positive,
  overlap: Count,
  dedupe: Schema.Literal("exact", "recent")
})

// typed as the public interface: this fails to compile if the two part
export const QueryJson: Schema.Schema<QueryObject> = QueryFields

export type QueryJson = QueryObject

const Version = Schema.Number.pipe(
  Schema.filter((n) =>
    n === version ||
    (Number.isSafeInteger(n) && n > version
      ? `version ${n} is newer than this library reads (${version}): read it with a newer effect-microapp`
      : `unknown version ${n}: this library reads version ${version}`)
  )
)

const StateJson = Schema.Struct({
  position: Count,
  stride: Schema.NullOr(Positive),
  reread: Count,
  tail: Schema.Array(Schema.NullOr(Schema.String)),
  largestPage: Count,
  shortPage: Schema.NullOr(Positive),
  probe: Schema.NullOr(Schema.Struct({ rowsSeen: Count, past: Schema.Boolean })),
  stalled: Count
})

const CountersJson = Schema.Struct({
  complete: Schema.Boolean,
  pages: Count,
  rows: Count,
  emitted: Count,
  invalidRows: Count,
  retries: Count,
  duplicatesDropped: Count,
  realignments: Count,
  appearedBehind: Count,
  caughtBehind: Count,
  vanishedBehind: Count,
  pagesDiscarded: Count,
  inconsistencies: Count,
  serverCap: Schema.NullOr(Positive),
  concurrencyReached: Count,
  concurrency: Count,
  elapsedMillis: Count,
  resumed: Count
})

const SeenJson = Schema.Union(
  Schema.Struct({ packed: Schema.String, others: Schema.Array(Schema.String) }),
  Schema.Struct({ recent: Schema.Array(Schema.String) })
)

const bodyFields = { version: Version, query: QueryJson, state: StateJson, counters: CountersJson, seen: SeenJson }

/** The JSON object of a checkpoint. */
const JsonFields = Schema.Struct({ ...bodyFields, checksum: Schema.String })

// the public interface is the format: this fails to compile if the Schema says otherwise
export const Json: Schema.Schema<typeof JsonFields.Type, JsonObject> = JsonFields

export type Json = JsonObject

type Body = Omit<typeof Json.Type, "checksum">

/**
 * Every key of the format, in the order written: `JSON.stringify` with this list writes any body
 * the same way, whatever the order of its keys, so that the checksum is of one text.
 */
const keyOrder = [
  "version",
  "query",
  ...Object.keys(QueryFields.fields),
  "fieldID",
  "value",
  "field",
  "order",
  "state",
  ...Object.keys(StateJson.fields),
  "rowsSeen",
  "past",
  "counters",
  ...Object.keys(CountersJson.fields),
  "seen",
  "packed",
  "others",
  "recent"
]

const canonical = (body: Body): string => JSON.stringify(body, keyOrder)

/** FNV-1a (32 bits) of the UTF-16 code units of `text`, as 8 hex digits. */
const checksumOf = (text: string): string => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return (hash >>> 0).toString(16).padStart(8, "0")
}

export class CheckpointImpl implements Checkpoint {
  readonly [TypeId]: typeof TypeId = TypeId
  readonly summary: RowStream.ScanSummary

  constructor(readonly query: QueryJson, readonly engine: Engine.Snapshot, readonly figures: Figures) {
    this.summary = summarise(engine.counters, figures, query.dedupe)
  }

  /** `JSON.stringify` writes the checkpoint's JSON object, not its inner workings. */
  toJSON(): Json {
    return withChecksum(bodyOf(this))
  }
}

export const isCheckpoint = (u: unknown): u is Checkpoint => u instanceof CheckpointImpl

// JSON has null where the engine has undefined; the order of keys is the canonical text's business
const bodyOf = (checkpoint: CheckpointImpl): Body => {
  const { counters, seen, ...state } = checkpoint.engine
  return {
    version,
    query: checkpoint.query,
    state: {
      ...state,
      stride: state.stride ?? null,
      tail: state.tail.map((id) => id ?? null),
      shortPage: state.shortPage ?? null,
      probe: state.probe ?? null
    },
    counters: { ...counters, serverCap: counters.serverCap ?? null, ...checkpoint.figures },
    seen: seen._tag === "Exact" ? { packed: seen.packed(), others: seen.others() } : { recent: seen.ids }
  }
}

const withChecksum = (body: Body): Json => ({ ...body, checksum: checksumOf(canonical(body)) })

/**
 * The checkpoint's JSON text: the canonical text of its body, with the checksum of that text last.
 * A value that only looks like a checkpoint (a cast, a hand-made object) has no state to write: it
 * is written as `null`, which `fromJson` refuses, rather than thrown at.
 */
export const toJson = (checkpoint: Checkpoint): string => {
  if (!(checkpoint instanceof CheckpointImpl)) return "null"
  const text = canonical(bodyOf(checkpoint))
  return `${text.slice(0, -1)},"checksum":"${checksumOf(text)}"}`
}

/** A problem of a decoded body: where, and what. */
type Problem = readonly [path: readonly [string, ...Array<string>], message: string]

/** The first way in which `body` is not a state the engine could have been in, if any. */
const problemOf = (body: Body): Problem | undefined => {
  const { counters, query, seen, state } = body
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
  if ("packed" in seen) {
    if (query.dedupe !== "exact") {
      return [["seen"], `holds every id emitted, but the query's dedupe is "${query.dedupe}"`]
    }
    if (IdSet.decodeBase64(seen.packed) === undefined || seen.packed.length % 16 !== 0) {
      return [["seen", "packed"], "is not base64 of 12 bytes an id (its length must be a multiple of 16)"]
    }
    const ids = seen.packed.length / 16 + seen.others.length
    if (ids > counters.emitted) {
      return [["seen"], `holds ${ids} ids, more than the ${counters.emitted} rows emitted`]
    }
    const packable = seen.others.find(IdSet.isPacked)
    if (packable !== undefined) return [["seen", "others"], `holds "${packable}", which belongs in packed`]
  } else {
    if (query.dedupe !== "recent") {
      return [["seen"], `holds recent ids only, but the query's dedupe is "${query.dedupe}"`]
    }
    const capacity = Engine.recentCapacity(query)
    if (seen.recent.length > Math.min(capacity, counters.emitted)) {
      return [
        ["seen", "recent"],
        `holds ${seen.recent.length} ids, more than the ${capacity} kept or the ${counters.emitted} rows emitted`
      ]
    }
  }
  return undefined
}

const fromBody = (body: Body): CheckpointImpl => {
  const { counters, query, seen, state } = body
  const { concurrency, concurrencyReached, elapsedMillis, invalidRows, resumed, rows, serverCap, ...engine } = counters
  const contents: IdSet.Contents = "packed" in seen
    ? {
      _tag: "Exact",
      packed: () => seen.packed,
      others: () => seen.others,
      size: seen.packed.length / 16 + seen.others.length
    }
    : { _tag: "Recent", ids: seen.recent }
  return new CheckpointImpl(
    query,
    {
      ...state,
      stride: state.stride ?? undefined,
      tail: state.tail.map((id) => id ?? undefined),
      shortPage: state.shortPage ?? undefined,
      probe: state.probe ?? undefined,
      counters: { ...engine, serverCap: serverCap ?? undefined },
      seen: contents
    },
    { rows, invalidRows, concurrencyReached, concurrency, elapsedMillis, resumed }
  )
}

const CheckpointSelf = Schema.declare(isCheckpoint, {
  identifier: "Checkpoint",
  message: () => "must be a Checkpoint: from a page of `pages`, or from `Checkpoint.fromJson`"
})

/** A checkpoint from its JSON object: checked field by field, against the engine's rules, and by its checksum. */
export const CheckpointSchema: Schema.Schema<Checkpoint, Json> = Schema.transformOrFail(Json, CheckpointSelf, {
  strict: true,
  decode: ({ checksum, ...body }, _, ast) => {
    const problem = problemOf(body)
    if (problem !== undefined) {
      const [path, message] = problem
      return ParseResult.fail(new ParseResult.Pointer(path, body, new ParseResult.Type(ast, body, message)))
    }
    if (checksumOf(canonical(body)) !== checksum) {
      return ParseResult.fail(
        new ParseResult.Pointer(
          ["checksum"],
          checksum,
          new ParseResult.Type(ast, checksum, "does not match the content: the checkpoint was changed or corrupted")
        )
      )
    }
    return ParseResult.succeed(fromBody(body))
  },
  encode: (checkpoint, _, ast) =>
    checkpoint instanceof CheckpointImpl
      ? ParseResult.succeed(withChecksum(bodyOf(checkpoint)))
      : ParseResult.fail(new ParseResult.Type(ast, checkpoint, "not a checkpoint of this library"))
})

const decodeJson = Schema.decodeUnknownEither(CheckpointSchema, { errors: "first" })

const invalidCheckpoint = (input: string, reason: string) =>
  new InvalidInput({ method: "POST", path: endpoints.rows.path, input, reason })

const quote = 0x22
const backslash = 0x5c

/** Whether the quote at `at` is escaped: an odd run of backslashes before it. */
const isEscaped = (text: string, at: number): boolean => {
  let run = 0
  while (text.charCodeAt(at - 1 - run) === backslash) run++
  return run % 2 === 1
}

/**
 * Whether brackets outside strings nest deeper than `limit` in `text`: one pass, strings skipped
 * by `indexOf` (a checkpoint's bulk is one string), and no parser's stack to overflow.
 */
export const nestsDeeperThan = (text: string, limit: number): boolean => {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === quote) {
      let end = text.indexOf("\"", i + 1)
      while (end !== -1 && isEscaped(text, end)) end = text.indexOf("\"", end + 1)
      // an unterminated string is JSON.parse's to report
      if (end === -1) return false
      i = end
    } else if (code === 0x5b || code === 0x7b) {
      if (++depth > limit) return true
    } else if (code === 0x5d || code === 0x7d) {
      depth--
    }
  }
  return false
}

/**
 * The JSON value of a checkpoint's text, its size and nesting bounded before JSON.parse runs: what
 * comes after it (Schema, its error messages) recurses. Change passes' checkpoints read theirs too.
 */
export const parseJsonText = (text: string): Either.Either<unknown, InvalidInput> => {
  if (typeof text !== "string") return Either.left(invalidCheckpoint("checkpoint", "must be a string"))
  if (text.length > bounds.checkpointChars) {
    return Either.left(invalidCheckpoint(
      "checkpoint",
      `is ${text.length.toLocaleString("en-US")} characters, more than the ${
        bounds.checkpointChars.toLocaleString("en-US")
      } a checkpoint may have`
    ))
  }
  if (nestsDeeperThan(text, bounds.checkpointDepth)) {
    return Either.left(invalidCheckpoint(
      "checkpoint",
      `is nested deeper than ${bounds.checkpointDepth} levels: not a checkpoint (its format has four)`
    ))
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    const detail = error instanceof Error ? `: ${error.message}` : ""
    return Either.left(invalidCheckpoint("checkpoint", `is not JSON (truncated, or not a checkpoint)${detail}`))
  }
  return Either.right(json)
}

/** A checkpoint from its JSON text, or what is wrong with the text. */
const parseText = (text: string): Either.Either<Checkpoint, InvalidInput> =>
  Either.flatMap(parseJsonText(text), decodeParsed)

const decodeParsed = (json: unknown): Either.Either<Checkpoint, InvalidInput> => {
  if (!Predicate.isRecord(json) || !("version" in json)) {
    return Either.left(
      invalidCheckpoint("checkpoint", "is not a checkpoint: a JSON object with a version is expected")
    )
  }
  return Either.mapLeft(decodeJson(json), (error) => {
    const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
    const path = issue === undefined ? [] : issue.path.map(String)
    return invalidCheckpoint(["checkpoint", ...path].join("."), issue?.message ?? error.message)
  })
}

/** A checkpoint from its JSON text, or what is wrong with the text. */
export const fromJson = (text: string): Effect.Effect<Checkpoint, InvalidInput> => Effect.suspend(() => parseText(text))

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

/** The checkpoint `resume` names, checked against the query of the scan that resumes from it. */
export const resumeFrom = (
  resume: Checkpoint | undefined,
  query: QueryJson
): Either.Either<CheckpointImpl | undefined, InvalidInput> => {
  if (resume === undefined) return Either.right(undefined)
  if (!(resume instanceof CheckpointImpl)) {
    return Either.left(
      invalidCheckpoint("resume", "must be a Checkpoint: from a page of `pages`, or from `Checkpoint.fromJson`")
    )
  }
  const differ = differences(resume.query, query)
  return differ.length === 0
    ? Either.right(resume)
    : Either.left(invalidCheckpoint("resume", `the checkpoint is of another query: ${differ.join(", ")}`))
}
