/**
 * A row's id as the service sent it: the one reading of `_id` that the transport, the scan and
 * the change passes share.
 */
import { Predicate } from "effect"

/** The `_id` of an undecoded row; null when it has none. */
export const idOf = (row: unknown): string | null =>
  Predicate.isRecord(row) && typeof row._id === "string" ? row._id : null
