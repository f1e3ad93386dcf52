/**
 * Decoding of answers: the envelope, then each row on its own, so a bad row is reported by its
 * index, `_id` and field path, and handled as the caller's policy says.
 */
import { Effect, Either, ParseResult, Schema } from "effect"
import type { InvalidRowPolicy } from "../../MicroappClient.js"
import { type RequestError, RequestRejected, UnexpectedResponse } from "../../MicroappError.js"
import { InvalidRow } from "../../Row.js"
import { idOf } from "../rowId.js"
import { type AnswerInfo, where } from "./errors.js"
import { makeDecoder, undecided } from "./fastDecode.js"
import { type Fault, faultOf } from "./plainData.js"
import { StatusEnvelope } from "./wire.js"

export const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key) => typeof key === "number" ? `[${key}]` : `.${String(key)}`).join("").replace(/^\./, "")

/** A ParseError as the one line that says what and where. */
const firstIssue = (error: ParseResult.ParseError): { readonly path: string; readonly message: string } => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  return { path: issue === undefined ? "" : formatPath(issue.path), message: issue?.message ?? error.message }
}

/**
 * Checks the envelope: JSON whose `status` is "success", then decodes it with `schema`.
 * A 2xx that refuses (status "error", "fail") is `RequestRejected` with the server's message.
 */
export const decodeEnvelope = <A, I>(schema: Schema.Schema<A, I>, options?: { readonly statusOptional: boolean }) => {
  const decodeStatus = options?.statusOptional === true
    ? makeDecoder(Schema.partial(StatusEnvelope)).decode
    : makeDecoder(StatusEnvelope).decode
  const decodeBody = makeDecoder(schema).decode
  return (json: unknown, info: AnswerInfo): Effect.Effect<A, RequestError> => {
    const status = info.status
    const envelope = decodeStatus(json)
    if (Either.isLeft(envelope)) {
      return Effect.fail(
        new UnexpectedResponse({ ...where(info), status, kind: "Envelope", reason: firstIssue(envelope.left).message })
      )
    }
    if (envelope.right.status !== undefined && envelope.right.status !== "success") {
      const message = envelope.right.message
      return Effect.fail(
        new RequestRejected({
          ...where(info),
          status,
          serverStatus: envelope.right.status,
          ...(typeof message === "string" ? { serverMessage: message } : {})
        })
      )
    }
    return Either.match(decodeBody(json), {
      onLeft: (error) => {
        const issue = firstIssue(error)
        return Effect.fail(
          new UnexpectedResponse({
            ...where(info),
            status,
            kind: "Envelope",
            reason: issue.message,
            ...(issue.path === "" ? {} : { fieldPath: issue.path })
          })
        )
      },
      onRight: Effect.succeed
    })
  }
}

/** The rows of one answer that decoded, and the errors of those that did not (under "skip"). */
export interface DecodedRows<A> {
  readonly rows: Array<A>
  readonly invalid: Array<UnexpectedResponse>
}

/**
 * Decodes one answer's rows, each on its own. `indexes[i]` is the index of `rows[i]` in the
 * answer's row array, for the error report.
 */
export type RowDecoder<A> = (
  rows: ReadonlyArray<unknown>,
  indexes: ReadonlyArray<number> | undefined,
  info: AnswerInfo
) => Either.Either<DecodedRows<A>, UnexpectedResponse>

/** Why a row as sent is invalid: where, and what; `fatal` when no policy may set it aside. */
export class RowFault {
  constructor(readonly path: string, readonly message: string, readonly fatal = false) {}
}

/** The step each row of a page takes, as the service sent it: the row, or why it is invalid. */
export type RowStep<A> = (raw: unknown) => A | RowFault

export const rowFaultOf = (fault: Fault): RowFault => new RowFault(formatPath(fault.path), fault.reason)

/**
 * `schema`'s decoding of a row as sent: its fast path first, Schema's parser for what that does
 * not vouch for (and for the error). `read`: a reader's step, which runs the reader's walk first
 * (strings unread), in the same closure as it runs for every row of every answer; without it the
 * caller has walked the row (a change pass's walk).
 */
export const schemaStep = <A, I>(schema: Schema.Schema<A, I>, read: boolean): RowStep<A> => {
  const { decode, fast } = makeDecoder(schema, { errors: "first" }, true)
  return (raw) => {
    // before either parser: Schema's would assign a `__proto__` key, and keeps Infinity
    const fault = read ? faultOf(raw) : undefined
    if (fault !== undefined) return rowFaultOf(fault)
    // the common case without the Either of `decode`
    const decoded = fast(raw)
    if (decoded !== undecided) return decoded
    const result = decode(raw)
    if (Either.isRight(result)) return result.right
    const issue = firstIssue(result.left)
    return new RowFault(issue.path, issue.message)
  }
}

/** What a row that failed is handed on as, under "raw"; a fault when it cannot be. */
export type HandOn<B> = (raw: unknown, error: UnexpectedResponse) => B | RowFault

/** What the page loop does with a row that fails its step: the `invalidRows` policy, and under "raw" what it hands on. */
export type Contract<B> = { readonly policy: "fail" | "skip" } | {
  readonly policy: "raw"
  readonly handOn: HandOn<B>
}

/** A reader's contract: under "raw" a row that fails is handed on as `InvalidRow`. */
export const contractOf = (policy: InvalidRowPolicy): Contract<InvalidRow> =>
  policy === "raw" ? { policy, handOn: (row, error) => new InvalidRow({ row, error }) } : { policy }

/**
 * The page loop: `step` for each row, and the contract's policy for each row that fails it,
 * applied here alone: "fail" fails the page, "skip" drops the row and reports it, "raw" reports it
 * and hands on what `handOn` makes of it. A fatal fault fails the page whatever the policy.
 */
export const pageDecoder =
  <A, B>(step: RowStep<A>, contract: Contract<B>): RowDecoder<A | B> => (rows, indexes, info) => {
    const out: Array<A | B> = []
    const invalid: Array<UnexpectedResponse> = []
    const errorOf = (raw: unknown, index: number, fault: RowFault) => {
      // the row's own id, to name it in the error, when it has a usable one
      const id = idOf(raw)
      return new UnexpectedResponse({
        ...where(info),
        status: info.status,
        kind: "Row",
        reason: fault.message,
        rowIndex: indexes?.[index] ?? index,
        ...(id === null ? {} : { rowID: id }),
        ...(fault.path === "" ? {} : { fieldPath: fault.path })
      })
    }
    for (let i = 0; i < rows.length; i++) {
      const raw = rows[i]
      const row = step(raw)
      if (!(row instanceof RowFault)) {
        out.push(row)
        continue
      }
      const error = errorOf(raw, i, row)
      if (contract.policy === "fail" || row.fatal) return Either.left(error)
      invalid.push(error)
      if (contract.policy !== "raw") continue
      const handed = contract.handOn(raw, error)
      if (handed instanceof RowFault) return Either.left(errorOf(raw, i, handed))
      out.push(handed)
    }
    return Either.right({ rows: out, invalid })
  }

/** A reader's row decoder compiled once; under "raw" an invalid row is handed on as `InvalidRow`. */
export function makeRowDecoder<A, I>(schema: Schema.Schema<A, I>, policy: "fail" | "skip"): RowDecoder<A>
export function makeRowDecoder<A, I>(schema: Schema.Schema<A, I>, policy: InvalidRowPolicy): RowDecoder<A | InvalidRow>
export function makeRowDecoder<A, I>(
  schema: Schema.Schema<A, I>,
  policy: InvalidRowPolicy
): RowDecoder<A | InvalidRow> {
  return pageDecoder(schemaStep(schema, true), contractOf(policy))
}
