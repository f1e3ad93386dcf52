/**
 * The ids a scan has emitted: `add` says whether an id is new. Two kinds:
 *
 * - `exact`: every id, never a false answer. The service's ids (24 lower-case hex digits) are
 *   packed into 12 bytes: each one greater than every id before it (the service's ids grow with
 *   time, and a table is read in their order) is appended to a sorted run, which a binary search
 *   answers for; any other goes into open-addressing tables of typed arrays kept between half and
 *   three quarters full. Either takes at most 24 bytes an id. Any other id goes into a plain `Set`.
 * - `recent`: the last `capacity` ids only, in bounded memory; an id seen before those is new again.
 *
 * A set hands out its contents for a checkpoint, and is made again from them (`restore`). An
 * exact set does so only when made with a journal: its tables have no order to cut at, so the
 * journal keeps the packed ids in the order added, in base64 (16 characters an id), so that the
 * contents of any moment stay readable while ids are added after it.
 */
import { Either } from "effect"

/** What the scan asks of its set of emitted ids. */
export interface IdSet {
  /** Adds `id`; false when it was already there. */
  readonly add: (id: string) => boolean
  readonly has: (id: string) => boolean
  readonly size: () => number
  /** Bytes held by the packed ids' tables (ids of other shapes are in a `Set` besides). */
  readonly packedBytes: () => number
  /** The ids added so far, as a value later adds do not change; `undefined` for an exact set without a journal. */
  readonly contents: () => Contents | undefined
}

/** What a set holds, for a checkpoint; `Held`: only how many ids and their digest, the ids being a sink's. */
export type Contents = ExactContents | RecentContents | HeldContents

/** Every id added: the packed ones in base64, and the others, each in the order added. */
export interface ExactContents {
  readonly _tag: "Exact"
  /** Base64 of the packed ids, 12 bytes (16 characters) an id: the 24 hex digits as bytes. */
  readonly packed: () => string
  /** The ids of other shapes. */
  readonly others: () => ReadonlyArray<string>
  readonly size: number
  /** The digest of the ids (`digestOf`): 16 hex digits, whatever their order. */
  readonly digest: () => string
  /** The live set they were taken from, which holds them and every id added since. */
  readonly source?: IdSet
}

/** Every id added, held by a sink: how many, and their digest, to check the ids it gives back. */
export interface HeldContents {
  readonly _tag: "Held"
  readonly size: number
  readonly digest: string
}

/** The ids of the window, oldest first. */
export interface RecentContents {
  readonly _tag: "Recent"
  readonly ids: ReadonlyArray<string>
}

/** Exact contents as a checkpoint holds them: base64 of the packed ids, and the others. */
export const exactContents = (packed: string, others: ReadonlyArray<string>): ExactContents => ({
  _tag: "Exact",
  packed: () => packed,
  others: () => others,
  size: packed.length / 16 + others.length,
  digest: () => digestOfContents(packed, others)
})

/** The ids of exact contents, but their count and digest: what a checkpoint whose sink holds the ids keeps. */
export const heldContents = (contents: ExactContents): HeldContents => ({
  _tag: "Held",
  size: contents.size,
  digest: contents.digest()
})

export const recentContents = (ids: ReadonlyArray<string>): RecentContents => ({ _tag: "Recent", ids })

/** The value of each lower-case hex digit by its code, 16 for any other code below 128: one load a digit, no branch. */
const hexValues = Uint8Array.from(
  { length: 128 },
  (_, code) => code >= 48 && code <= 57 ? code - 48 : code >= 97 && code <= 102 ? code - 87 : 16
)

const hexDigit = (code: number): number => code < 128 ? hexValues[code] ?? 16 : 16

/** Eight hex digits of `id` from `at` as an unsigned 32-bit word, or -1 when one is not a lower-case hex digit. */
const word = (id: string, at: number): number => {
  let value = 0
  // a digit of 16 or more sets a bit past the four of a digit: one test for all eight
  let past = 0
  for (let i = at; i < at + 8; i++) {
    const digit = hexDigit(id.charCodeAt(i))
    past |= digit
    value = (value << 4) | (digit & 15)
  }
  return past > 15 ? -1 : value >>> 0
}

/** murmur3's finaliser over three words: the slot a packed id starts its probe at. */
const mix = (a: number, b: number, c: number): number => {
  let h = Math.imul(a ^ Math.imul(b, 0x9e3779b1) ^ Math.imul(c, 0x85ebca77), 0xc2b2ae3d)
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

/**
 * An order-independent digest of a set of ids: two 32-bit sums of two hashes of each id (of its
 * three words when packed, of its UTF-16 code units otherwise). A check that a sink gave back the
 * ids it committed, not a defence against one forging them.
 */
class Digest {
  private low = 0
  private high = 0

  /** A packed id's words, with `hash` = mix(a, b, c), computed already for its slot. */
  addPacked(a: number, b: number, c: number, hash: number): void {
    this.low = (this.low + hash) >>> 0
    this.high = (this.high + mix(c, a, b)) >>> 0
  }

  addOther(id: string): void {
    let x = 0x811c9dc5, y = 0x9747b28c
    for (let i = 0; i < id.length; i++) {
      const code = id.charCodeAt(i)
      x = Math.imul(x ^ code, 0x01000193)
      y = Math.imul(y ^ code, 0x5bd1e995)
    }
    this.low = (this.low + mix(x, y, id.length)) >>> 0
    this.high = (this.high + mix(y, id.length, x)) >>> 0
  }

  /** The digest now, as a value. */
  value(): string {
    return this.high.toString(16).padStart(8, "0") + this.low.toString(16).padStart(8, "0")
  }
}

/** The digest of exact contents as a checkpoint holds them: base64 of the packed ids, and the others. */
const digestOfContents = (packed: string, others: ReadonlyArray<string>): string => {
  const digest = new Digest()
  const bytes = decodeBase64(packed) ?? ""
  for (let at = 0; at + 12 <= bytes.length; at += 12) {
    const a = wordAt(bytes, at), b = wordAt(bytes, at + 4), c = wordAt(bytes, at + 8)
    digest.addPacked(a, b, c, mix(a, b, c))
  }
  for (const id of others) digest.addOther(id)
  return digest.value()
}

/**
 * Segments grow one at a time, so that a growing set never holds two copies of all its ids.
 * 256 segments: a rehash moves 1/256 of the ids.
 */
const segmentBits = 8
// 48 bytes: V8 keeps a typed array this small in its heap, far cheaper to make than one outside
const initialSlots = 4
const maxLoad = 0.75
// from 3/4 full to 1/2 full: the most a slot of 12 bytes costs is 24 bytes an id
const growth = 1.5

/** One open-addressing table of packed ids; a slot of three zero words is empty. */
class Segment {
  words: Uint32Array
  count = 0

  /** `slots`: room for the ids a restore puts in at once, at 2/3 full, without a rehash. */
  constructor(public slots = initialSlots) {
    this.words = new Uint32Array(slots * 3)
  }

  /** The offset of the packed id's slot, or of the empty slot where it would go. */
  find(a: number, b: number, c: number, hash: number): number {
    const words = this.words
    for (let slot = hash % this.slots;; slot = slot + 1 === this.slots ? 0 : slot + 1) {
      const at = slot * 3
      const x = words[at], y = words[at + 1], z = words[at + 2]
      if ((x === a && y === b && z === c) || (x === 0 && y === 0 && z === 0)) return at
    }
  }

  /** Whether the slot at `at` holds an id. */
  taken(at: number): boolean {
    return this.words[at] !== 0 || this.words[at + 1] !== 0 || this.words[at + 2] !== 0
  }

  /** Adds the packed id; false when present. The id is never all zeros (that one is kept apart). */
  add(a: number, b: number, c: number, hash: number): boolean {
    if (this.count + 1 > this.slots * maxLoad) this.grow()
    const at = this.find(a, b, c, hash)
    if (this.taken(at)) return false
    this.words[at] = a
    this.words[at + 1] = b
    this.words[at + 2] = c
    this.count++
    return true
  }

  private grow(): void {
    const old = this.words
    this.slots = Math.ceil(this.slots * growth)
    this.words = new Uint32Array(this.slots * 3)
    for (let at = 0; at < old.length; at += 3) {
      const a = old[at] ?? 0, b = old[at + 1] ?? 0, c = old[at + 2] ?? 0
      if (a !== 0 || b !== 0 || c !== 0) {
        const to = this.find(a, b, c, mix(a, b, c) >>> segmentBits)
        this.words[to] = a
        this.words[to + 1] = b
        this.words[to + 2] = c
      }
    }
  }
}

/** Whether the packed id (a, b, c) sorts before (x, y, z), as unsigned words, most significant first. */
const before = (a: number, b: number, c: number, x: number, y: number, z: number): boolean =>
  a !== x ? a < x : b !== y ? b < y : c < z

/** The most ids one piece of a run holds: 48 KB. */
const runPieceIds = 4096

/**
 * Packed ids in ascending order, appended in pieces that double up to `runPieceIds` ids, so that
 * nothing is ever copied and the room is at most about twice the ids. An id is found by two
 * binary searches: among the pieces by their last id, then in one.
 */
class Run {
  private readonly pieces: Array<Uint32Array> = []
  /** The ids in the last piece: every piece before it is full. */
  private filled = 0

  /** How many ids piece `i` holds. */
  private count(i: number): number {
    return i === this.pieces.length - 1 ? this.filled : (this.pieces[i]?.length ?? 0) / 3
  }

  /** Whether (a, b, c) sorts after every id of the run: appending it keeps it sorted. */
  follows(a: number, b: number, c: number): boolean {
    const piece = this.pieces[this.pieces.length - 1]
    if (piece === undefined) return true
    const at = (this.filled - 1) * 3
    return before(piece[at] ?? 0, piece[at + 1] ?? 0, piece[at + 2] ?? 0, a, b, c)
  }

  /** Appends (a, b, c), which `follows` the run. */
  append(a: number, b: number, c: number): void {
    let piece = this.pieces[this.pieces.length - 1]
    if (piece === undefined || this.filled * 3 === piece.length) {
      piece = new Uint32Array(3 * (piece === undefined ? initialSlots : Math.min(runPieceIds, 2 * piece.length / 3)))
      this.pieces.push(piece)
      this.filled = 0
    }
    const at = this.filled * 3
    piece[at] = a
    piece[at + 1] = b
    piece[at + 2] = c
    this.filled++
  }

  has(a: number, b: number, c: number): boolean {
    const pieces = this.pieces
    // the first piece whose last id is not before (a, b, c)
    let low = 0
    let high = pieces.length
    while (low < high) {
      const middle = (low + high) >>> 1
      const piece = pieces[middle] as Uint32Array
      const at = (this.count(middle) - 1) * 3
      if (before(piece[at] ?? 0, piece[at + 1] ?? 0, piece[at + 2] ?? 0, a, b, c)) low = middle + 1
      else high = middle
    }
    const piece = pieces[low]
    if (piece === undefined) return false
    let first = 0
    let last = this.count(low) - 1
    while (first <= last) {
      const middle = (first + last) >>> 1
      const at = middle * 3
      const x = piece[at] ?? 0, y = piece[at + 1] ?? 0, z = piece[at + 2] ?? 0
      if (x === a && y === b && z === c) return true
      if (before(x, y, z, a, b, c)) first = middle + 1
      else last = middle - 1
    }
    return false
  }

  bytes(): number {
    return this.pieces.reduce((sum, piece) => sum + piece.byteLength, 0)
  }
}

/** The three words of the id `pack` read last. */
const words = new Uint32Array(3)

/** Reads `id` into `words`; false when it is not 24 lower-case hex digits, which the exact set packs. */
const pack = (id: string): boolean => {
  if (id.length !== 24) return false
  const a = word(id, 0), b = word(id, 8), c = word(id, 16)
  if (a < 0 || b < 0 || c < 0) return false
  words[0] = a
  words[1] = b
  words[2] = c
  return true
}

/** Whether the exact set packs `id`: 24 lower-case hex digits. */
export const isPacked: (id: string) => boolean = pack

/** The word of the four bytes of a binary string from `at`. */
const wordAt = (bytes: string, at: number): number =>
  ((bytes.charCodeAt(at) << 24) | (bytes.charCodeAt(at + 1) << 16) | (bytes.charCodeAt(at + 2) << 8) |
    bytes.charCodeAt(at + 3)) >>> 0

/** Bytes of ids a journal gathers before it writes them as a chunk: 1,024 ids. */
const chunkBytes = 12 * 1024

/**
 * The packed ids in the order added, as base64 chunks, written every 1,024 ids and at each `cut`
 * (`btoa` is native wherever the client runs, and some 30 times faster than a codec written in
 * JavaScript). Chunks are only ever appended, so the contents of a moment, its first chunks, stay
 * as they were.
 */
class Journal {
  /** The bytes of the ids not yet in a chunk, grown as ids come: a set restored for one page holds a few. */
  private pending = new Uint8Array(12 * 16)
  private filled = 0

  constructor(readonly chunks: Array<string>, public packed: number) {}

  add(a: number, b: number, c: number): void {
    this.put(a)
    this.put(b)
    this.put(c)
    this.packed++
    if (this.filled === chunkBytes) this.write()
  }

  /** The four bytes of a word, first the most significant. */
  private put(word: number): void {
    const at = this.filled
    if (at === this.pending.length) this.grow()
    const pending = this.pending
    pending[at] = word >>> 24
    pending[at + 1] = (word >>> 16) & 255
    pending[at + 2] = (word >>> 8) & 255
    pending[at + 3] = word & 255
    this.filled = at + 4
  }

  private grow(): void {
    const pending = new Uint8Array(Math.min(chunkBytes, this.pending.length * 4))
    pending.set(this.pending)
    this.pending = pending
  }

  private write(): void {
    if (this.filled === 0) return
    const bytes = this.filled === this.pending.length ? this.pending : this.pending.subarray(0, this.filled)
    this.chunks.push(btoa(String.fromCharCode.apply(null, bytes as unknown as Array<number>)))
    this.filled = 0
  }

  /** Every packed id so far, as a count of chunks. */
  cut(): number {
    this.write()
    return this.chunks.length
  }
}

/** The first `count` elements of an iterable. */
const firstOf = <A>(items: Iterable<A>, count: number): Array<A> => {
  const out: Array<A> = []
  if (count === 0) return out
  for (const item of items) {
    out.push(item)
    if (out.length === count) break
  }
  return out
}

/** Every id, exactly. `journal`: keep what `contents` needs (16 bytes an id more). */
export const exact = (options: { readonly journal?: boolean } = {}): IdSet => makeExact(options.journal === true).set

/** The segment of a packed id whose words' mix is `hash`. */
const segmentOf = (hash: number): number => hash & ((1 << segmentBits) - 1)

/**
 * An exact set, and `insert`, which adds a packed id without journaling it. `from`: the base64
 * chunk the journal starts with (ids inserted from it); `ids`: how many of them go to each segment.
 */
const makeExact = (journaled: boolean, from = "", ids?: Uint32Array) => {
  // made on first use: a small set (a short scan, or a model test's thousands) needs few of them
  const segments: Array<Segment | undefined> = new Array(1 << segmentBits)
  if (ids !== undefined) {
    ids.forEach((count, index) => {
      if (count > 0) segments[index] = new Segment(Math.max(initialSlots, Math.ceil(count * growth)))
    })
  }
  const others = new Set<string>()
  const journal = journaled ? new Journal(from === "" ? [] : [from], from.length / 16) : undefined
  // kept with the journal only: a checkpoint's contents are what need it
  const digest = journaled ? new Digest() : undefined
  const run = new Run()
  let zero = false
  let packed = 0
  const insert = (a: number, b: number, c: number): boolean => {
    if (a === 0 && b === 0 && c === 0) {
      if (zero) return false
      zero = true
    } else {
      // an id after the run's last is in no table: those hold only ids that were before it
      if (run.follows(a, b, c)) run.append(a, b, c)
      else {
        if (run.has(a, b, c)) return false
        const hash = mix(a, b, c)
        const index = segmentOf(hash)
        const segment = segments[index] ?? (segments[index] = new Segment())
        if (!segment.add(a, b, c, hash >>> segmentBits)) return false
      }
      packed++
    }
    digest?.addPacked(a, b, c, mix(a, b, c))
    return true
  }
  const add = (id: string): boolean => {
    if (!pack(id)) {
      if (others.size === others.add(id).size) return false
      digest?.addOther(id)
      return true
    }
    const a = words[0] ?? 0, b = words[1] ?? 0, c = words[2] ?? 0
    if (!insert(a, b, c)) return false
    journal?.add(a, b, c)
    return true
  }
  const has = (id: string): boolean => {
    if (!pack(id)) return others.has(id)
    const a = words[0] ?? 0, b = words[1] ?? 0, c = words[2] ?? 0
    if (a === 0 && b === 0 && c === 0) return zero
    if (run.follows(a, b, c)) return false
    if (run.has(a, b, c)) return true
    const hash = mix(a, b, c)
    const segment = segments[segmentOf(hash)]
    return segment !== undefined && segment.taken(segment.find(a, b, c, hash >>> segmentBits))
  }
  const contents = (): ExactContents | undefined => {
    if (journal === undefined || digest === undefined) return undefined
    const chunks = journal.chunks
    const count = journal.cut()
    const othersCount = others.size
    const digestNow = digest.value()
    return {
      _tag: "Exact",
      packed: () => chunks.slice(0, count).join(""),
      // a Set iterates in the order added, and an exact set never removes an id
      others: () => firstOf(others, othersCount),
      size: journal.packed + othersCount,
      digest: () => digestNow,
      source: set
    }
  }
  const set: IdSet = {
    add,
    has,
    size: () => packed + others.size + (zero ? 1 : 0),
    packedBytes: () => segments.reduce((sum, segment) => sum + (segment?.words.byteLength ?? 0), run.bytes()),
    contents
  }
  return { set, insert }
}

/** The last `capacity` ids only. */
export const recent = (capacity: number): IdSet => {
  const ring = new Array<string | undefined>(capacity)
  const members = new Set<string>()
  let next = 0
  const add = (id: string): boolean => {
    if (members.has(id)) return false
    const evicted = ring[next]
    if (evicted !== undefined) members.delete(evicted)
    ring[next] = id
    members.add(id)
    next = (next + 1) % capacity
    return true
  }
  const contents = (): RecentContents =>
    recentContents([...ring.slice(next), ...ring.slice(0, next)].filter((id): id is string => id !== undefined))
  return { add, has: (id) => members.has(id), size: () => members.size, packedBytes: () => 0, contents }
}

/**
 * The set `contents` were taken from (an exact one with a journal when `journal`), or why they
 * cannot be one: an id twice, a packed id among the others, base64 that does not hold whole ids.
 */
export const restore = (
  contents: Contents,
  options: { readonly journal: boolean; readonly capacity: number }
): Either.Either<IdSet, string> => {
  if (contents._tag === "Held") {
    return Either.left(`holds no ids but their count (${contents.size}): its sink holds them`)
  }
  if (contents._tag === "Recent") {
    if (contents.ids.length > options.capacity) {
      return Either.left(`holds ${contents.ids.length} recent ids, more than the ${options.capacity} kept`)
    }
    const set = recent(options.capacity)
    const twice = contents.ids.find((id) => !set.add(id))
    return twice === undefined ? Either.right(set) : Either.left(`holds id "${twice}" twice`)
  }
  const base64 = contents.packed()
  const bytes = decodeBase64(base64)
  if (bytes === undefined || bytes.length % 12 !== 0) {
    return Either.left("packed ids are not base64 of 12 bytes an id")
  }
  // each segment made once, at its size: no rehash, and none of the small ones made on the way;
  // an id after every one before it goes to the run, as it did when it was added
  const ids = new Uint32Array(1 << segmentBits)
  let runs = false
  let x = 0, y = 0, z = 0
  for (let at = 0; at < bytes.length; at += 12) {
    const a = wordAt(bytes, at), b = wordAt(bytes, at + 4), c = wordAt(bytes, at + 8)
    if (a === 0 && b === 0 && c === 0) continue
    if (!runs || before(x, y, z, a, b, c)) {
      runs = true
      x = a
      y = b
      z = c
      continue
    }
    const index = segmentOf(mix(a, b, c))
    ids[index] = (ids[index] ?? 0) + 1
  }
  const { insert, set } = makeExact(options.journal, base64, ids)
  for (let at = 0; at < bytes.length; at += 12) {
    if (!insert(wordAt(bytes, at), wordAt(bytes, at + 4), wordAt(bytes, at + 8))) {
      return Either.left(`holds packed id ${hexOf(bytes, at)} twice`)
    }
  }
  for (const id of contents.others()) {
    if (isPacked(id)) return Either.left(`holds "${id}" among the ids of other shapes, where packed ids do not go`)
    if (!set.add(id)) return Either.left(`holds id "${id}" twice`)
  }
  return Either.right(set)
}

/** The bytes of strict base64 (no padding, no white space) as a binary string; undefined when it is not. */
export const decodeBase64 = (text: string): string | undefined => {
  // atob skips white space and accepts missing padding: the length shows both
  if (text.length % 4 !== 0) return undefined
  try {
    const bytes = atob(text)
    return bytes.length * 4 === text.length * 3 ? bytes : undefined
  } catch {
    return undefined
  }
}

/** The 24 hex digits of the packed id at `at` of a binary string. */
const hexOf = (bytes: string, at: number): string =>
  Array.from({ length: 12 }, (_, i) => bytes.charCodeAt(at + i).toString(16).padStart(2, "0")).join("")

/**
 * Up to `count` ids of exact contents, spread over them (the first, the last and between): packed
 * ones first, then the others; none when they hold none.
 */
export const someIdsOf = (contents: ExactContents, count: number): Array<string> => {
  const packed = contents.packed()
  const ids = packed.length / 16
  const at = new Set(
    Array.from({ length: Math.min(count, ids) }, (_, i) => Math.round(i * (ids - 1) / Math.max(1, count - 1)))
  )
  const found: Array<string> = []
  for (const i of at) {
    const bytes = decodeBase64(packed.slice(i * 16, i * 16 + 16))
    if (bytes !== undefined && bytes.length === 12) found.push(hexOf(bytes, 0))
  }
  return [...found, ...contents.others().slice(0, count - found.length)]
}

export { idOf } from "../rowId.js"
