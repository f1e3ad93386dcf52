/**
 * A small seeded pseudo-random generator, so demo data and fault plans repeat exactly.
 */

/**
 * A stateful generator of floats in [0, 1) (mulberry32).
 */
export interface Prng {
  /** The next float in [0, 1). */
  readonly next: () => number
  /** The next integer in [0, bound). */
  readonly int: (bound: number) => number
  /** One element of a non-empty array. */
  readonly pick: <A>(items: readonly [A, ...Array<A>]) => A
}

export const make = (seed: number): Prng => {
  let state = seed >>> 0
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (bound: number): number => Math.floor(next() * bound)
  const pick = <A>(items: readonly [A, ...Array<A>]): A => items[int(items.length)] ?? items[0]
  return { next, int, pick }
}
