/**
 * The scan's state between two pages, defined once: the engine's mutable state, its snapshot and
 * a checkpoint's JSON (`state`, `counters`, `seen`, version 1) are all this Schema. Fields are in
 * the order a checkpoint writes them: its canonical text (and so its checksum) follows them.
 *
 * `null` stands for "not known yet" in the engine as on the wire, so that only the id set needs
 * encoding. The id set (`Seen`, O(table)) is kept apart from the rest (`Progress`, O(page)).
 */
import { Option, Predicate, Schema } from "effect"
import * as RowStream from "../../RowStream.js"
import * as IdSet from "./IdSet.js"

export const Count = Schema.NonNegativeInt
export const Positive = Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))

/**
 * A field added to a checkpoint after its version: absent, it is `value`, and written only when
 * it is not, so that older checkpoints are written again byte for byte.
 */
const absentAs = <A, I>(schema: Schema.Schema<A, I>, value: A) =>
  Schema.optionalToRequired(schema, Schema.typeSchema(schema), {
    decode: Option.getOrElse(() => value),
    encode: (a) => a === value ? Option.none() : Option.some(a)
  })

/** Where the scan stands and how it plans its next window. */
export const Cursor = Schema.Struct({
  /** Rows of the result behind the scan, in the coordinates of the latest page. */
  position: Count,
  /** New rows a full window yields, once known (a full page seen, or the server's cap). */
  stride: Schema.NullOr(Positive),
  /** Rows re-read before each window. */
  reread: Count,
  /** Ids of the rows before the position, as last read, oldest first (at most `reread`); null: a row without one. */
  tail: Schema.Array(Schema.NullOr(Schema.String)),
  largestPage: Count,
  /** The length of the last page, when it was short: a cap, if more rows follow. */
  shortPage: Schema.NullOr(Positive),
  /**
   * A page held only rows already passed, and as many as any page: the next window asks whether
   * anything follows the position. `rowsSeen`, that page's length, is the server's cap if
   * something does, if `short` (the window asked for more); `past`: ask from the position
   * itself, not from the rows passed last.
   */
  probe: Schema.NullOr(Schema.Struct({
    rowsSeen: Count,
    past: Schema.Boolean,
    short: absentAs(Schema.Boolean, true)
  })),
  /** Windows in a row that found nothing past the position, yet did not show the end. */
  stalled: Count,
  /**
   * A length answered to windows that asked for more while rows followed, and how many times in a
   * row: the server's cap once answered so `capProof` times (rows that vanished or were appended
   * cut pages short by chance). Checkpoints written before it have none. Its keys are named
   * unlike any other: a checkpoint writes keys in one order, the first place each name appears.
   */
  capSeen: absentAs(Schema.NullOr(Schema.Struct({ pageLength: Positive, times: Positive })), null)
})

export interface Cursor extends Schema.Schema.Type<typeof Cursor> {}

/**
 * The figures of a scan: the engine's, and those the driver keeps (`rows`, `invalidRows`,
 * `concurrencyReached`, `concurrency`, `elapsedMillis`, `resumed`), over all its runs.
 */
export const Counters = (({ exhaustive: _, serverCap: __, ...figures }) =>
  // in the order checkpoints have always written them: a checkpoint's text keeps its keys' order
  Schema.Struct({
    complete: figures.complete,
    pages: figures.pages,
    /** Rows handed on: decoded, or raw under `invalidRows: "raw"`. */
    rows: figures.rows,
    /** Rows the engine took. */
    emitted: Count,
    invalidRows: figures.invalidRows,
    retries: figures.retries,
    duplicatesDropped: figures.duplicatesDropped,
    realignments: figures.realignments,
    appearedBehind: figures.appearedBehind,
    caughtBehind: figures.caughtBehind,
    vanishedBehind: figures.vanishedBehind,
    pagesDiscarded: figures.pagesDiscarded,
    inconsistencies: figures.inconsistencies,
    serverCap: Schema.NullOr(Positive),
    concurrencyReached: figures.concurrencyReached,
    concurrency: figures.concurrency,
    /** Summed over the runs of a resumed scan. */
    elapsedMillis: figures.elapsedMillis,
    resumed: figures.resumed
  }))(RowStream.ScanSummary.fields)

export interface Counters extends Schema.Schema.Type<typeof Counters> {}

/** The counters of a scan that has not judged a page. */
export const noCounters: Counters = {
  complete: false,
  pages: 0,
  rows: 0,
  emitted: 0,
  invalidRows: 0,
  retries: 0,
  duplicatesDropped: 0,
  realignments: 0,
  appearedBehind: 0,
  caughtBehind: 0,
  vanishedBehind: 0,
  pagesDiscarded: 0,
  inconsistencies: 0,
  serverCap: null,
  concurrencyReached: 0,
  concurrency: 0,
  elapsedMillis: 0,
  resumed: 0
}

/** 16 hex digits: the digest of a set of ids. */
export const Digest = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{16}$/, { message: () => "must be 16 hex digits" }))

/** Every id emitted, held by a sink: how many, and their digest. */
export const HeldJson = Schema.Struct({ held: Count, digest: Digest })

/**
 * The ids emitted, on the wire: every one (`packed`: base64, 12 bytes an id; `others`), the
 * recent window, or, when a sink holds them, their count and digest.
 */
const SeenJson = Schema.Union(
  Schema.Struct({ packed: Schema.String, others: Schema.Array(Schema.String) }),
  Schema.Struct({ recent: Schema.Array(Schema.String) }),
  HeldJson
)

const Contents = Schema.declare(
  (u): u is IdSet.Contents =>
    Predicate.isTagged(u, "Exact") || Predicate.isTagged(u, "Recent") || Predicate.isTagged(u, "Held"),
  { identifier: "IdSet.Contents" }
)

/** The wire form of an id set's contents; the packed ids are joined only here, when a checkpoint is written. */
export const encodeSeen = (contents: IdSet.Contents): typeof SeenJson.Type => {
  switch (contents._tag) {
    case "Exact":
      return { packed: contents.packed(), others: contents.others() }
    case "Recent":
      return { recent: contents.ids }
    case "Held":
      return { held: contents.size, digest: contents.digest }
  }
}

/** The ids a scan emitted. */
export const Seen = Schema.transform(SeenJson, Contents, {
  strict: true,
  decode: (json) =>
    "packed" in json
      ? IdSet.exactContents(json.packed, json.others)
      : "recent" in json
      ? IdSet.recentContents(json.recent)
      : { _tag: "Held" as const, size: json.held, digest: json.digest },
  encode: encodeSeen
})

/** What a scan needs to go on, but the ids it emitted: O(page), whatever the table's size. */
export const Progress = Schema.Struct({ state: Cursor, counters: Counters })

/** All a scan needs to go on: its progress and the ids it emitted (or, held by a sink, their count and digest). */
export const ScanState = Schema.Struct({ ...Progress.fields, seen: Seen })

export interface ScanState extends Schema.Schema.Type<typeof ScanState> {}
