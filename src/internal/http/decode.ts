/**
 * Decoding of answers: the envelope, then each row on its own, so a bad row is reported by its
 * index, `_id` and field path, and handled as the caller's policy says.
 */
import { Effect, Either, ParseResult, Predicate, Schema } from "effect"
import type { InvalidRowPolicy } from "../../MicroappClient.js"
import { type RequestError, RequestRejected, UnexpectedResponse } from "../../MicroappError.js"
import { InvalidRow } from "../../Row.js"
import { type AnswerInfo, where } from "./errors.js"
import { makeDecoder, undecided } from "./fastDecode.js"
import { faultOf } from "./plainData.js"
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

/** A row decoder compiled once; under "raw" an invalid row is handed on as `InvalidRow`. */
export function makeRowDecoder<A, I>(schema: Schema.Schema<A, I>, policy: "fail" | "skip"): RowDecoder<A>
export function makeRowDecoder<A, I>(schema: Schema.Schema<A, I>, policy: InvalidRowPolicy): RowDecoder<A | InvalidRow>
export function makeRowDecoder<A, I>(
  schema: Schema.Schema<A, I>,
  policy: InvalidRowPolicy
): RowDecoder<A | InvalidRow> {
  const { decode, fast } = makeDecoder(schema, { errors: "first" }, true)
  return (rows, indexes, info) => {
    const out: Array<A | InvalidRow> = []
    const invalid: Array<UnexpectedResponse> = []
    for (let i = 0; i < rows.length; i++) {
      const raw = rows[i]
      // before either parser: Schema's would assign a `__proto__` key, and keeps Infinity
      const fault = faultOf(raw)
      let issue: { readonly path: string; readonly message: string }
      if (fault === undefined) {
        // the common case without the Either of `decode`
        const decoded = fast(raw)
        if (decoded !== undecided) {
          out.push(decoded)
          continue
        }
        const result = decode(raw)
        if (Either.isRight(result)) {
          out.push(result.right)
          continue
        }
        issue = firstIssue(result.left)
      } else {
        issue = { path: formatPath(fault.path), message: fault.reason }
      }
      // the row's own id, to name it in the error, when it has a usable one
      const id = Predicate.isRecord(raw) && typeof raw._id === "string" ? raw._id : null
      const error = new UnexpectedResponse({
        ...where(info),
        status: info.status,
        kind: "Row",
        reason: issue.message,
        rowIndex: indexes?.[i] ?? i,
        ...(id === null ? {} : { rowID: id }),
        ...(issue.path === "" ? {} : { fieldPath: issue.path })
      })
      if (policy === "fail") return Either.left(error)
      invalid.push(error)
      if (policy === "raw") out.push(new InvalidRow({ row: raw, error }))
    }
    return Either.right({ rows: out, invalid })
  }
}
