/**
 * The row path of a change pass: each row walked once, with the fingerprint of its content fed as
 * the walk goes, and kept with the id and fingerprint of the row as the server sent it.
 */
import { fingerprint, Hash64 } from "../fingerprint.js"
import { idOf } from "../rowId.js"
import { type Contract, pageDecoder, type RowDecoder, RowFault, rowFaultOf, type RowStep } from "./decode.js"
import { locateFault, Verdict, walk } from "./plainData.js"

/** A row of a change pass: decoded, with the id and fingerprint of the row as the server sent it. */
export interface Identified<A> {
  readonly id: string
  readonly row: A
  readonly fingerprint: string
}

const noId = new RowFault("", "has no _id: a change pass compares rows by id", true)

/**
 * A change pass's step: the row walk with the fingerprint fed as it goes and what a copy cannot
 * keep looked for, then `step`, each row kept with the id and fingerprint of its undecoded form,
 * so that typed and untyped passes agree. A row without an id cannot be compared: it fails the
 * pass. A row a copy cannot keep exactly (its id, a text or a number) is an invalid row.
 */
const identify = <A>(step: RowStep<A>): RowStep<Identified<A>> => (raw) => {
  const hash = new Hash64()
  const verdict = walk(raw, 1, hash)
  if (verdict === Verdict.faulty) return rowFaultOf(locateFault(raw, verdict, null))
  const row = step(raw)
  if (row instanceof RowFault) return row
  const id = idOf(raw)
  if (id === null) return noId
  if (verdict === Verdict.unstorable) return rowFaultOf(locateFault(raw, verdict, id))
  return { id, row, fingerprint: hash.digest() }
}

/**
 * The page loop over `identify(step)` under the reader's contract: under "raw" a row that fails
 * any check is handed on as the reader hands it on, with its id and the fingerprint of the row as
 * sent; without an id it fails the pass.
 */
export const identified = <A, B>(step: RowStep<A>, contract: Contract<B>): RowDecoder<Identified<A | B>> =>
  pageDecoder(
    identify(step),
    contract.policy === "raw"
      ? {
        policy: "raw",
        handOn: (raw, error): Identified<B> | RowFault => {
          const id = idOf(raw)
          if (id === null) return noId
          const row = contract.handOn(raw, error)
          return row instanceof RowFault ? row : { id, row, fingerprint: fingerprint(raw) }
        }
      }
      : { policy: contract.policy }
  )
