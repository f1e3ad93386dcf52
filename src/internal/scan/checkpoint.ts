/**
 * Checkpoints: the scan's state after a page (`state.ts`) and the query it belongs to, as a value;
 * its JSON (version 1), checked field by field and by a checksum on the way in.
 */
import { Effect, Either, ParseResult, Predicate, Schema, SchemaAST, Stream } from "effect"
import type { Checkpoint, Query as QueryObject, TypeId as CheckpointTypeId } from "../../Checkpoint.js"
import { type CheckpointProblem, InvalidCheckpoint } from "../../MicroappError.js"
import * as Query from "../../Query.js"
import type * as RowStream from "../../RowStream.js"
import { bounds } from "../bounds.js"
import type * as Wire from "../http/wire.js"
import * as Engine from "./engine.js"
import * as IdSet from "./IdSet.js"
import * as ScanState from "./state.js"
import { summarise } from "./summary.js"

export const TypeId: CheckpointTypeId = Symbol.for("effect-microapp/Checkpoint") as CheckpointTypeId

/** The version of the JSON this library writes and reads. */
export const version = 1

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

const Version = Schema.Number.pipe(
  Schema.filter((n) =>
    n === version ||
    (Number.isSafeInteger(n) && n > version
      ? `version ${n} is newer than this library reads (${version}): read it with a newer effect-microapp`
      : `unknown version ${n}: this library reads version ${version}`)
  )
)

/** The JSON object of a checkpoint: the scan's state beside its version and query, and the checksum of them all. */
const Json = Schema.Struct({
  version: Version,
  query: QueryJson,
  ...ScanState.ScanState.fields,
  checksum: Schema.String
})

/** The keys of the objects `ast` encodes, each object's in its Schema's order. */
const keysOf = (ast: SchemaAST.AST): Array<string> => {
  switch (ast._tag) {
    case "TypeLiteral":
      return ast.propertySignatures.flatMap((property) => [String(property.name), ...keysOf(property.type)])
    case "Union":
      return ast.types.flatMap(keysOf)
    case "TupleType":
      return [...ast.elements, ...ast.rest].flatMap((element) => keysOf(element.type))
    default:
      return []
  }
}

/**
 * Every key of the format, in the Schema's order: `JSON.stringify` with this list writes any
 * checkpoint the same way, whatever the order of its keys, so that the checksum is of one text.
 */
const keyOrder = [...new Set(keysOf(SchemaAST.encodedAST(Json.ast)))]

const encodeProgress = Schema.encodeSync(ScanState.Progress)

/** The JSON object of a checkpoint but its checksum, as it is written (fields at their defaults left out). */
const bodyOf = (query: QueryJson, state: ScanState.ScanState) => {
  const { seen, ...progress } = state
  return { version, query, ...encodeProgress(progress), seen: ScanState.encodeSeen(seen) }
}

const canonical = (body: ReturnType<typeof bodyOf>): string => JSON.stringify(body, keyOrder)

/** FNV-1a (32 bits) of the UTF-16 code units of `text`, as 8 hex digits. */
const checksumOf = (text: string): string => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return (hash >>> 0).toString(16).padStart(8, "0")
}

export class CheckpointImpl implements Checkpoint {
  readonly [TypeId]: typeof TypeId = TypeId
  readonly summary: RowStream.ScanSummary

  constructor(readonly query: QueryJson, readonly state: ScanState.ScanState) {
    this.summary = summarise(state.counters, query.dedupe)
  }

  /** The checkpoint's JSON object, its checksum last: what `JSON.stringify` writes, not its inner workings. */
  toJSON(): unknown {
    const body = bodyOf(this.query, this.state)
    return { ...body, checksum: checksumOf(canonical(body)) }
  }
}

export const isCheckpoint = (u: unknown): u is Checkpoint => u instanceof CheckpointImpl

/** The checkpoint's JSON text: its object with the keys in the format's order, the checksum last. */
export const toJson = (checkpoint: Checkpoint): string => JSON.stringify(checkpoint, keyOrder)

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

const CheckpointSelf = Schema.declare(isCheckpoint, {
  identifier: "Checkpoint",
  message: () => "must be a Checkpoint: from a page of `pages`, or from `Checkpoint.fromJson`"
})

const decodeJsonObject = ParseResult.decodeUnknown(Json)

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
      Effect.flatMap(decodeJsonObject(input, options), ({ checksum, query, version: _, ...state }) => {
        const problem = problemOf(query, state)
        if (problem !== undefined) {
          const [path, message] = problem
          return ParseResult.fail(new ParseResult.Pointer(path, input, new ParseResult.Type(ast, input, message)))
        }
        if (checksumOf(canonical(bodyOf(query, state))) !== checksum) {
          return ParseResult.fail(
            new ParseResult.Pointer(
              ["checksum"],
              checksum,
              new ParseResult.Type(ast, checksum, "does not match the content: the checkpoint was changed or corrupted")
            )
          )
        }
        return ParseResult.succeed(new CheckpointImpl(query, state))
      }),
    encode: (checkpoint) => ParseResult.succeed(checkpoint.toJSON())
  }
)

const decodeJson = Schema.decodeUnknownEither(CheckpointSchema, { errors: "first" })

/** What a checkpoint's decoding refused at `path` (its keys from the top): the version, the checksum, or another field. */
export const problemAt = (path: ReadonlyArray<string>): CheckpointProblem => {
  const key = path.at(-1)
  return key === "version" || key === "checksum" ? key : "field"
}

export const invalidCheckpoint = (problem: CheckpointProblem, input: string, reason: string) =>
  new InvalidCheckpoint({ input, reason, problem })

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
export const parseJsonText = (text: string): Either.Either<unknown, InvalidCheckpoint> => {
  if (typeof text !== "string") return Either.left(invalidCheckpoint("not JSON", "checkpoint", "must be a string"))
  if (text.length > bounds.checkpointChars) {
    return Either.left(invalidCheckpoint(
      "too large",
      "checkpoint",
      `is ${text.length.toLocaleString("en-US")} characters, more than the ${
        bounds.checkpointChars.toLocaleString("en-US")
      } a checkpoint may have`
    ))
  }
  if (nestsDeeperThan(text, bounds.checkpointDepth)) {
    return Either.left(invalidCheckpoint(
      "too deep",
      "checkpoint",
      `is nested deeper than ${bounds.checkpointDepth} levels: not a checkpoint (its format has four)`
    ))
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    const detail = error instanceof Error ? `: ${error.message}` : ""
    return Either.left(
      invalidCheckpoint("not JSON", "checkpoint", `is not JSON (truncated, or not a checkpoint)${detail}`)
    )
  }
  return Either.right(json)
}

/** A checkpoint from its JSON text, or what is wrong with the text. */
const parseText = (text: string): Either.Either<Checkpoint, InvalidCheckpoint> =>
  Either.flatMap(parseJsonText(text), decodeParsed)

const decodeParsed = (json: unknown): Either.Either<Checkpoint, InvalidCheckpoint> => {
  if (!Predicate.isRecord(json) || !("version" in json)) {
    return Either.left(
      invalidCheckpoint(
        "not a checkpoint",
        "checkpoint",
        "is not a checkpoint: a JSON object with a version is expected"
      )
    )
  }
  return Either.mapLeft(decodeJson(json), (error) => {
    const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
    const path = issue === undefined ? [] : issue.path.map(String)
    return invalidCheckpoint(problemAt(path), ["checkpoint", ...path].join("."), issue?.message ?? error.message)
  })
}

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
  invalidCheckpoint("ids differ", input, `the sink's ids are not the checkpoint's: ${reason}`)

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
      return Effect.fail(
        invalidCheckpoint(
          "not a checkpoint",
          "checkpoint",
          "must be a Checkpoint: from a page of `pages`, or from `Checkpoint.fromJson`"
        )
      )
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
    return Either.left(
      invalidCheckpoint(
        "not a checkpoint",
        "resume",
        "must be a Checkpoint: from a page of `pages`, or from `Checkpoint.fromJson`"
      )
    )
  }
  if (resume.state.seen._tag === "Held") {
    return Either.left(invalidCheckpoint(
      "ids held",
      "resume",
      "the checkpoint holds no ids, its sink does: resume from `Checkpoint.withIds(checkpoint, ids)` with the ids the sink committed"
    ))
  }
  const differ = differences(resume.query, query)
  return differ.length === 0
    ? Either.right(resume)
    : Either.left(
      invalidCheckpoint("another query", "resume", `the checkpoint is of another query: ${differ.join(", ")}`)
    )
}
