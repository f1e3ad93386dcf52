/**
 * Redirect refusal: a redirect is never followed, so the credentials never reach another origin
 * (`classify` turns the answer into `Redirected`).
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import { Context, Effect, Option } from "effect"

/**
 * `client` with fetch told not to follow redirects, keeping the rest of a `RequestInit` the caller
 * provided; other transports (undici, node:http) never follow them. The context is changed in one
 * step, as every request of every transport goes through it.
 */
export const refuseRedirects = <E, R>(client: HttpClient.HttpClient.With<E, R>): HttpClient.HttpClient.With<E, R> =>
  HttpClient.transform(
    client,
    (response) =>
      Effect.mapInputContext(
        response,
        (context: Context.Context<R>) =>
          Context.add(context, FetchHttpClient.RequestInit, {
            ...Option.getOrUndefined(Context.getOption(context, FetchHttpClient.RequestInit)),
            redirect: "manual"
          })
      )
  )
