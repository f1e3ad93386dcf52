/**
 * The ids a scan has emitted: `add` says whether an id is new. Two kinds:
 *
 * - `exact`: every id, never a false answer. The service's ids (24 lower-case hex digits) are
 *   packed into 12 bytes in open-addressing tables of typed arrays kept between half and three
 *   quarters full (at most 24 bytes an id); any other id goes into a plain `Set`.
 * - `recent`: the last `capacity` ids only, in bounded memory; an id seen before those is new again.
 */

/** What the scan asks of its set of emitted ids. */
export interface IdSet {
  /** Adds `id`; false when it was already there. */
  readonly add: (id: string) => boolean
  readonly has: (id: string) => boolean
  readonly size: () => number
  /** Bytes held by the packed ids' tables (ids of other shapes are in a `Set` besides). */
  readonly packedBytes: () => number
}

const hexDigit = (code: number): number =>
  code >= 48 && code <= 57 ? code - 48 : code >= 97 && code <= 102 ? code - 87 : -1

/** Eight hex digits of `id` from `at` as an unsigned 32-bit word, or -1 when one is not a lower-case hex digit. */
const word = (id: string, at: number): number => {
  let value = 0
  for (let i = at; i < at + 8; i++) {
    const digit = hexDigit(id.charCodeAt(i))
    if (digit < 0) return -1
    value = value * 16 + digit
  }
  return value
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
 * Segments grow one at a time, so that a growing set never holds two copies of all its ids.
 * 256 segments: a rehash moves 1/256 of the ids.
 */
const segmentBits = 8
const initialSlots = 16
const maxLoad = 0.75
// from 3/4 full to 1/2 full: the most a slot of 12 bytes costs is 24 bytes an id
const growth = 1.5

/** One open-addressing table of packed ids; a slot of three zero words is empty. */
class Segment {
  words = new Uint32Array(initialSlots * 3)
  slots = initialSlots
  count = 0

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

/** Every id, exactly. */
export const exact = (): IdSet => {
  const segments = Array.from({ length: 1 << segmentBits }, () => new Segment())
  const others = new Set<string>()
  let zero = false
  let packed = 0
  /** Calls `packed` with the id's three words, or `other` when it is not 24 lower-case hex digits. */
  const route = <A>(id: string, other: () => A, zeros: () => A, packedId: (segment: Segment, a: number, b: number, c: number, hash: number) => A): A => {
    const a = id.length === 24 ? word(id, 0) : -1
    const b = a < 0 ? -1 : word(id, 8)
    const c = b < 0 ? -1 : word(id, 16)
    if (c < 0) return other()
    if (a === 0 && b === 0 && c === 0) return zeros()
    const hash = mix(a, b, c)
    return packedId(segments[hash & ((1 << segmentBits) - 1)]!, a, b, c, hash >>> segmentBits)
  }
  const add = (id: string): boolean =>
    route(
      id,
      () => others.size !== others.add(id).size,
      () => !zero && (zero = true),
      (segment, a, b, c, hash) => segment.add(a, b, c, hash) && ++packed > 0
    )
  const has = (id: string): boolean =>
    route(
      id,
      () => others.has(id),
      () => zero,
      (segment, a, b, c, hash) => segment.taken(segment.find(a, b, c, hash))
    )
  return {
    add,
    has,
    size: () => packed + others.size + (zero ? 1 : 0),
    packedBytes: () => segments.reduce((sum, segment) => sum + segment.words.byteLength, 0)
  }
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
  return { add, has: (id) => members.has(id), size: () => members.size, packedBytes: () => 0 }
}
