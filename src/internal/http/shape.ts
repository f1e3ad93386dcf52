/**
 * Request shaping and auth: the request one attempt sends, and the credentials refused before
 * anything is sent when no header can carry them.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Redacted } from "effect"
import type { MicroappClient } from "../../MicroappClient.js"
import { InvalidInput } from "../../MicroappError.js"
import type { Endpoint } from "./endpoints.js"

/** The two values that authenticate a call (the public `MicroappClient.Credentials`). */
export type Credentials = MicroappClient.Credentials

/** The credential headers: never on a span attribute or a printed request (`Headers.currentRedactedNames`). */
export const credentialHeaders: ReadonlyArray<string> = ["x-auth-token", "x-user-id"]

/**
 * Sent with every request: a compressed answer inflates past what its length says. A browser's
 * fetch drops the header (it is forbidden there) and decodes what comes, so every bound counts
 * decoded bytes as well.
 */
const noCompression = { "accept-encoding": "identity" }

/** The request of a call: `body` as JSON to `endpoint` under `baseUrl`, asking for an uncompressed answer. */
export const shapeRequest = (baseUrl: string, endpoint: Endpoint, body: unknown): HttpClientRequest.HttpClientRequest =>
  HttpClientRequest.post(`${baseUrl}${endpoint.path}`).pipe(
    HttpClientRequest.bodyUnsafeJson(body),
    HttpClientRequest.setHeaders(noCompression)
  )

/** `request` with the credential headers; login, which has none, goes as it is. */
export const addCredentials =
  (credentials: Credentials | undefined) =>
  (request: HttpClientRequest.HttpClientRequest): HttpClientRequest.HttpClientRequest =>
    credentials === undefined ? request : HttpClientRequest.setHeaders(request, {
      "X-Auth-Token": Redacted.value(credentials.authToken),
      "X-User-Id": credentials.userId
    })

/**
 * Whether a value goes into a header as it is, on every transport: printable ASCII, spaces only
 * between other characters (fetch would strip them at the ends, and send another value); no control
 * character, TAB included.
 */
const headerSafe = /^(?:[\x21-\x7e]+(?: +[\x21-\x7e]+)*)?$/

/** Why a credential no header can carry is refused; the value itself is never quoted. */
export const headerSafeReason =
  "must be printable ASCII, without line breaks or control characters or spaces at its ends: no header can carry it"

/** Whether `value` can be sent in a header as it is. */
export const isHeaderSafe = (value: string): boolean => headerSafe.test(value)

/** The credentials of a call, refused before anything is sent when a header cannot carry them. */
export const checkCredentials = (
  credentials: Credentials | undefined,
  endpoint: Endpoint
): InvalidInput | undefined => {
  if (credentials === undefined) return undefined
  const input = !isHeaderSafe(Redacted.value(credentials.authToken))
    ? "authToken"
    : !isHeaderSafe(credentials.userId)
    ? "userId"
    : undefined
  return input === undefined
    ? undefined
    : new InvalidInput({ method: "POST", path: endpoint.path, input, reason: headerSafeReason })
}
