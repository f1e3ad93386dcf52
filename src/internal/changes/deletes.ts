/**
 * The proof before a delete: a candidate (a baseline id the scan did not see) is proven missing
 * only by a point read answering the service's own "no such row"; the proven ones are reported
 * only once a control read finds a row the scan saw, and only within the delete guard.
 */
import { Effect } from "effect"
import type * as ScanCheckpoint from "../../Checkpoint.js"
import type { MicroappClient } from "../../MicroappClient.js"
import { type RequestError, TooManyDeletes } from "../../MicroappError.js"
import type { Identified } from "../http/identify.js"
import { CheckpointImpl as ScanCheckpointImpl } from "../scan/checkpoint.js"
import * as IdSet from "../scan/IdSet.js"
import type { Counts } from "./checkpoint.js"

/**
 * A point read of one row, as `getRow` makes it: the row, or undefined when it stands but the
 * pass's policy set it aside as invalid; `NotFound` when the service says it does not exist
 * (`noSuchRow` when in its own words: the one answer that proves it).
 */
export type ReadOf<A> = (
  rowID: string,
  options: MicroappClient.CallOptions
) => Effect.Effect<Identified<A> | undefined, RequestError>

/** What a point read answered for a baseline id the scan did not see. */
export type Answer<A> =
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Found"; readonly row: Identified<A> }
  | { readonly _tag: "Unconfirmed" }

export const missing = { _tag: "Missing" } as const
export const unconfirmed = { _tag: "Unconfirmed" } as const

export const answerOf = <A>(read: Effect.Effect<Identified<A> | undefined, RequestError>): Effect.Effect<Answer<A>> =>
  Effect.match(read, {
    // only the service's own word that the row does not exist proves a delete
    onFailure: (error): Answer<A> => error._tag === "NotFound" && error.noSuchRow === true ? missing : unconfirmed,
    onSuccess: (row): Answer<A> => row === undefined ? unconfirmed : { _tag: "Found", row }
  })

/** Rows read as the control of a pass's deletes, the first found enough: a row the scan saw may be deleted since. */
const controlReads = 3

/** Rows the complete scan saw, to read as the control of its deletes; none when it saw none. */
const controlIdsOf = (scanned: ScanCheckpoint.Checkpoint): ReadonlyArray<string> => {
  const seen = scanned instanceof ScanCheckpointImpl ? scanned.state.seen : undefined
  return seen?._tag === "Exact" ? IdSet.someIdsOf(seen, controlReads) : []
}

/** Whether the row endpoint finds a row the scan `scanned` saw: before it does, no "no such row" of it counts. */
export const controlRead = <A>(
  readOf: ReadOf<A>,
  call: MicroappClient.CallOptions,
  scanned: ScanCheckpoint.Checkpoint
): Effect.Effect<boolean> =>
  Effect.suspend(() =>
    Effect.exists(
      controlIdsOf(scanned),
      (id) => Effect.match(readOf(id, call), { onFailure: () => false, onSuccess: () => true })
    )
  )

/** A candidate a read answered "no such row" (or, unread, any), held until every candidate is answered. */
export interface Proven {
  readonly id: string
  readonly previous: string
  readonly read: boolean
}

/** The delete guard's default bound: a pass may delete `count` rows, or `share` of the copy when that is more. */
export const deleteGuard = { count: 100, share: 0.1 } as const

/** The most deletes a pass over a copy of `copy` rows may make: `maxDeletes`, or the default bound. */
const allowedDeletes = (copy: number, maxDeletes: number | undefined): number =>
  maxDeletes ?? Math.max(deleteGuard.count, Math.floor(deleteGuard.share * copy))

/**
 * The guard's refusal of a pass that would delete `proven` rows besides those its `counts` have
 * reported, when that is more than it allows; `atLeast`: before every candidate is counted.
 */
export const tooManyDeletes = (
  guarded: {
    readonly microAppID: string
    readonly maxDeletes: number | undefined
    readonly counts: Counts
    readonly proven: number
    readonly atLeast: boolean
  }
): TooManyDeletes | undefined => {
  const { atLeast, counts, maxDeletes, microAppID } = guarded
  const total = counts.deleted + guarded.proven
  // the rows the baseline held: those compared, those kept, those deleted and to delete
  const copy = counts.updated + counts.unchanged + counts.unconfirmed + total
  const allowed = allowedDeletes(copy, maxDeletes)
  return total > allowed
    ? new TooManyDeletes({ microAppID, deletes: total, copy, allowed, given: maxDeletes !== undefined, atLeast })
    : undefined
}
