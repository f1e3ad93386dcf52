/**
 * What a pass compares with and makes: the `Change` constructors, the baselines held in memory,
 * and `fold`, the next pass's fingerprints from this one's changes.
 */
import { Data, Effect, Stream } from "effect"
import type * as Changes from "../../Changes.js"

export const Change = Data.taggedEnum<Changes.ChangeDefinition>()

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
