/**
 * Body bound and classification: what came back of one attempt, as a `Reply` (a 2xx body read up
 * to the client's bound) or as the `RequestError` it means.
 */
import type * as Headers from "@effect/platform/Headers"
import * as HttpClientError from "@effect/platform/HttpClientError"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Clock, Effect, Option } from "effect"
import type { RequestError } from "../../MicroappError.js"
import {
  declaredLength,
  nativeBodyOf,
  pastLimit,
  readNative,
  readUpTo,
  readWhole,
  wholeBody,
  wholeReadOf
} from "./body.js"
import * as Errors from "./errors.js"

/** A successful (2xx) answer: its body as text, its `Content-Encoding`, and how many attempts it took. */
export interface Reply {
  readonly status: number
  readonly text: string
  readonly encoding: string | undefined
  readonly attempts: number
}

/** Bytes of a refusal's body read for the server's message: the status alone says what happened. */
const errorBodyBytes = 64 * 1024

/**
 * Reads at most `limit` bytes of a body; a read that breaks is a `Transport` error. A body whose
 * declared length is past the limit is not read; one within it is read in one piece by the
 * transport's own read where it keeps one (every transport stops at the declared length, and
 * undici's own read of a whole body costs a page less than any read of its chunks). A body without a declared length is read from what a transport of
 * @effect/platform keeps (`nativeBodyOf`), chunks counted as they come: an Effect stream of it
 * cost a small chunked answer more than the rest of its call. Any other is read as its stream.
 */
const readAtMost = (
  response: HttpClientResponse.HttpClientResponse,
  headers: Headers.Headers,
  limit: number,
  info: Errors.AttemptInfo
) => {
  const declared = declaredLength(headers)
  if (declared !== undefined && declared > limit) return Effect.succeed(pastLimit)
  const onError = (cause: unknown) =>
    new HttpClientError.ResponseError({ request: response.request, response, reason: "Decode", cause })
  const read = declared === undefined
    ? Option.match(nativeBodyOf(response), {
      onSome: (native) => readNative(native, limit, onError),
      onNone: () => readUpTo(response.stream, limit, undefined)
    })
    : Option.match(wholeReadOf(response), {
      onSome: (whole) => readWhole(whole, limit, onError),
      onNone: () => Effect.map(response.arrayBuffer, (bytes) => wholeBody(bytes, limit))
    })
  return Effect.mapError(read, (error) => Errors.fromBodyError(error, info))
}

/** The body bound: a 2xx body read up to `maxBytes`; past them the read stops and the attempt fails (`TooLarge`). */
export const boundBody = (
  response: HttpClientResponse.HttpClientResponse,
  headers: Headers.Headers,
  maxBytes: number,
  info: Errors.AttemptInfo
): Effect.Effect<Reply, RequestError> =>
  Effect.flatMap(readAtMost(response, headers, maxBytes, info), (body) =>
    body.complete
      ? Effect.succeed({
        status: response.status,
        text: body.text,
        encoding: headers["content-encoding"],
        attempts: info.attempt
      })
      : Effect.fail(Errors.tooLarge(response.status, maxBytes, info)))

/**
 * What one exchange means: a platform error is a `Transport` error; a redirect, unread (the end of
 * the attempt aborts it), is `Redirected`; a 2xx is read under the body bound; any other status is
 * the error it means, with the server's message and `Retry-After`.
 */
export const classify = <R>(
  exchange: Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError, R>,
  url: string,
  maxBytes: number,
  info: Errors.AttemptInfo
): Effect.Effect<Reply, RequestError, R> =>
  Effect.flatMap(
    Effect.mapError(exchange, (error) =>
      error._tag === "RequestError" ? Errors.fromRequestError(error, info) : Errors.fromBodyError(error, info)),
    (response): Effect.Effect<Reply, RequestError> => {
      const status = response.status
      // a transport may build its headers afresh on each read of them (undici's does)
      const headers = response.headers
      if (Errors.isRedirect(status)) {
        return Effect.fail(Errors.redirected(status, headers["location"], url, info))
      }
      if (status >= 200 && status < 300) {
        return boundBody(response, headers, maxBytes, info)
      }
      return Effect.flatMap(
        Effect.zip(readAtMost(response, headers, errorBodyBytes, info), Clock.currentTimeMillis),
        ([{ text }, now]) =>
          Effect.fail(Errors.fromStatus(status, text, Errors.parseRetryAfter(headers["retry-after"], now), info, url))
      )
    }
  )
