/**
 * The one place where HTTP statuses, bodies and platform errors become `MicroappError`s.
 * Nothing here keeps a request or a header: only method, path, status and the server's message.
 */
import type * as HttpClientError from "@effect/platform/HttpClientError"
import { Predicate } from "effect"
import {
  Forbidden,
  type MicroappError,
  NotFound,
  RateLimited,
  Redirected,
  type RequestError,
  RequestRejected,
  ServerError,
  Timeout,
  Transport,
  Unauthorized,
  UnexpectedResponse
} from "../../MicroappError.js"
import { isEncoded } from "./body.js"
import type { Endpoint } from "./endpoints.js"
import { parseExact } from "./plainData.js"

/** Identifies one attempt of one call in the errors it produces. */
export interface AttemptInfo {
  readonly endpoint: Endpoint
  readonly attempt: number
  /** What a 404 of this call means was not found. */
  readonly subject?: { readonly rowID: string } | { readonly microAppID: string } | undefined
  /** The values of the request's credential headers: no text of the transport keeps them. */
  readonly secrets?: ReadonlyArray<string> | undefined
}

/** An answer being read: its attempt, and the HTTP status it came with. */
export interface AnswerInfo extends AttemptInfo {
  readonly status: number
}

/** The fields every error of an attempt carries: method, endpoint path and attempt count. */
export const where = (info: AttemptInfo) => ({ method: "POST", path: info.endpoint.path, attempts: info.attempt })

/** Network error codes that mean the connection was never made, so the request was not sent. */
const notSentCodes: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT"
])

/** The chain of causes of a low-level error, innermost last (fetch and undici nest them). */
const causeChain = (error: unknown): ReadonlyArray<unknown> => {
  const chain: Array<unknown> = []
  let current: unknown = error
  while (current !== undefined && current !== null && chain.length < 8 && !chain.includes(current)) {
    chain.push(current)
    current = Predicate.hasProperty(current, "cause") ? current.cause : undefined
  }
  return chain
}

const codesOf = (error: unknown): ReadonlyArray<string> =>
  causeChain(error).flatMap((link) => [
    ...(Predicate.hasProperty(link, "code") && typeof link.code === "string" ? [link.code] : []),
    // happy-eyeballs connects report each address's failure in an AggregateError
    ...(Predicate.hasProperty(link, "errors") && Array.isArray(link.errors) ? link.errors.flatMap(codesOf) : [])
  ])

const messageOf = (error: unknown): string | undefined =>
  Predicate.hasProperty(error, "message") && typeof error.message === "string" && error.message !== ""
    ? error.message
    : undefined

const redacted = "<redacted>"

/** `text` with every secret of the attempt in it replaced: a transport may quote the headers it refuses. */
const scrub = (text: string, info: AttemptInfo): string =>
  (info.secrets ?? []).reduce(
    (scrubbed, secret) => secret === "" ? scrubbed : scrubbed.split(secret).join(redacted),
    text
  )

/**
 * The transport's error kept as a cause: as it is, or, when any text of its chain holds a secret,
 * a plain error with its name, scrubbed message and code (its own causes and stack are dropped).
 */
const keptCause = (cause: unknown, info: AttemptInfo): unknown => {
  const texts = causeChain(cause).flatMap((link) => [
    String(link),
    messageOf(link) ?? "",
    link instanceof Error ? link.stack ?? "" : ""
  ])
  if (texts.every((text) => scrub(text, info) === text)) return cause
  const copy = new Error(scrub(messageOf(cause) ?? "", info))
  copy.name = cause instanceof Error ? cause.name : "Error"
  return Predicate.hasProperty(cause, "code") && typeof cause.code === "string"
    ? Object.assign(copy, { code: cause.code })
    : copy
}

/** A platform request error (nothing came back) as `Transport`, keeping only the network cause. */
export const fromRequestError = (error: HttpClientError.RequestError, info: AttemptInfo): Transport => {
  const chain = causeChain(error.cause)
  const innermost = chain[chain.length - 1]
  const codes = codesOf(error.cause)
  const detail = [...chain].reverse().map(messageOf).find(Predicate.isNotUndefined) ?? error.reason
  return new Transport({
    ...where(info),
    notSent: error.reason !== "Transport" || codes.some((code) => notSentCodes.has(code)),
    description: scrub(
      codes.length === 0 || detail.includes(codes[0] ?? "") ? detail : `${detail} (${codes[0]})`,
      info
    ),
    ...(innermost === undefined ? {} : { cause: keptCause(innermost, info) })
  })
}

/** A body read that failed after the status arrived: the connection broke mid-response. */
export const fromBodyError = (error: HttpClientError.ResponseError, info: AttemptInfo): Transport =>
  new Transport({
    ...where(info),
    status: error.response.status,
    notSent: false,
    description: scrub(`the response body could not be read: ${messageOf(error.cause) ?? error.reason}`, info)
  })

/** What an error body says: the envelope's `message` and `status`, or a short text of a non-JSON body. */
export const serverSays = (text: string): { readonly message?: string; readonly status?: string } => {
  const json = parseJson(text)
  if (json !== undefined && Predicate.isRecord(json)) {
    return {
      ...(typeof json.message === "string" ? { message: json.message } : {}),
      ...(typeof json.status === "string" ? { status: json.status } : {})
    }
  }
  const plain = text.replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim()
  return plain === "" ? {} : { message: plain.length > 120 ? `${plain.slice(0, 117)}...` : plain }
}

/** `parseExact` without throwing: `undefined` for anything that is not JSON. */
export const parseJson = (text: string): unknown => {
  try {
    return parseExact(text)
  } catch {
    return undefined
  }
}

/**
 * `Retry-After` as milliseconds from `now`: delay-seconds or an HTTP date.
 * Anything else is ignored rather than trusted.
 */
export const parseRetryAfter = (header: string | undefined, now: number): number | undefined => {
  if (header === undefined) return undefined
  const trimmed = header.trim()
  // a figure too large for a number is kept as the largest safe one, never as Infinity
  if (/^\d+$/.test(trimmed)) return Math.min(Number(trimmed) * 1000, Number.MAX_SAFE_INTEGER)
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** What the service says of a row it does not hold, in its error envelope, with HTTP 404 (SPEC.md). */
export const noSuchRowMessage = "Row not found"

/** What the service says, with HTTP 404, of a path it has no endpoint at (as Restivus, which serves its API, says it). */
export const noSuchEndpointMessage = "API endpoint does not exist"

/**
 * Whether an answer is the service's own word that a row does not exist: HTTP 404 with the error
 * envelope `{"status": "error", "message": "Row not found"}` (other keys aside). Nothing else
 * proves it: not a proxy's 404 page, not "API endpoint does not exist", not another JSON shape or
 * an empty body, not a success without a row. The one rule a change pass's deletes rest on.
 */
export const provesNoSuchRow = (status: number, text: string): boolean => {
  if (status !== 404) return false
  const json = parseJson(text)
  return Predicate.isRecord(json) && json.status === "error" && json.message === noSuchRowMessage
}

/** A non-2xx status as the error it means; `url`: where the request went. */
export const fromStatus = (
  status: number,
  text: string,
  retryAfterMillis: number | undefined,
  info: AttemptInfo,
  url: string
): RequestError => {
  const said = serverSays(text)
  const fields = {
    ...where(info),
    status,
    ...(said.message === undefined ? {} : { serverMessage: said.message })
  }
  switch (status) {
    case 401:
      return new Unauthorized(fields)
    case 403:
      return new Forbidden(fields)
    case 404:
      // no endpoint there: the base URL is wrong, and nothing was looked for
      if (said.message === noSuchEndpointMessage) {
        return new RequestRejected({
          ...fields,
          ...(said.status === undefined ? {} : { serverStatus: said.status }),
          url
        })
      }
      return new NotFound({
        ...fields,
        ...info.subject,
        ...(info.subject !== undefined && "rowID" in info.subject
          ? { noSuchRow: provesNoSuchRow(status, text) }
          : {})
      })
    case 408:
      return new Timeout(fields)
    case 429:
      return new RateLimited({ ...fields, ...(retryAfterMillis === undefined ? {} : { retryAfterMillis }) })
  }
  return status >= 500
    ? new ServerError({ ...fields, ...(retryAfterMillis === undefined ? {} : { retryAfterMillis }) })
    : new RequestRejected({ ...fields, ...(said.status === undefined ? {} : { serverStatus: said.status }) })
}

/** A request not sent: the client holds back for `waitMillis` more, longer than the call may wait. */
export const heldBack = (info: AttemptInfo, waitMillis: number): RateLimited =>
  new RateLimited({ ...where(info), retryAfterMillis: waitMillis })

/** The client's own per-request timeout passed. */
export const timedOut = (info: AttemptInfo, timeoutMillis: number): Timeout =>
  new Timeout({ ...where(info), timeoutMillis })

/** Whether a status is a redirect: a 3xx, or 0, the opaque answer of a browser's fetch to a redirect. */
export const isRedirect = (status: number): boolean => status === 0 || (status >= 300 && status < 400)

/** The origin of a `Location` header, relative to the request's URL: never its path or query, which may carry credentials. */
const originOf = (location: string | undefined, requestUrl: string): string | undefined => {
  if (location === undefined) return undefined
  try {
    const origin = new URL(location, requestUrl).origin
    return origin === "null" ? undefined : origin
  } catch {
    return undefined
  }
}

/** A redirect, never followed. */
export const redirected = (
  status: number,
  location: string | undefined,
  requestUrl: string,
  info: AttemptInfo
): Redirected => {
  const origin = originOf(location, requestUrl)
  return new Redirected({ ...where(info), status, ...(origin === undefined ? {} : { location: origin }) })
}

/** A 2xx body larger than the client reads. */
export const tooLarge = (status: number, maxBytes: number, info: AttemptInfo): UnexpectedResponse =>
  new UnexpectedResponse({
    ...where(info),
    status,
    kind: "TooLarge",
    reason: `the body is larger than maxResponseBytes (${maxBytes} bytes); its reading was stopped there`
  })

/** A 2xx body that is not JSON at all; `encoding`: its `Content-Encoding`, which a transport may not have decoded. */
export const notJson = (status: number, encoding: string | undefined, info: AttemptInfo): UnexpectedResponse =>
  new UnexpectedResponse({
    ...where(info),
    status,
    kind: "NotJson",
    reason: !isEncoded(encoding)
      ? "the body is not valid JSON"
      : `the body is not valid JSON (the server sent it encoded, ${encoding}, though asked for identity)`
  })

/**
 * Whether another attempt may help, and may be made: reads retry every transient failure; writes
 * only what the server certainly did not act on (a 429, or a request that was never sent), because
 * an update can fire the Microapp's action rules.
 */
export const isRetryable = (error: MicroappError, endpoint: Endpoint): boolean => {
  switch (error._tag) {
    case "RateLimited":
      return true
    case "Transport":
      return !endpoint.write || error.notSent
    case "Timeout":
    case "ServerError":
      return !endpoint.write
    case "UnexpectedResponse":
      return !endpoint.write && error.kind === "NotJson"
    default:
      return false
  }
}
