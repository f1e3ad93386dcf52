/**
 * Redirect refusal: a redirect is never followed, so the credentials never reach another origin
 * (`classify` turns the answer into `Redirected`).
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import { Effect, Option } from "effect"

/**
 * `client` with fetch told not to follow redirects, keeping the rest of a `RequestInit` the caller
 * provided; other transports (undici, node:http) never follow them.
 */
export const refuseRedirects = <E, R>(client: HttpClient.HttpClient.With<E, R>): HttpClient.HttpClient.With<E, R> =>
  HttpClient.transform(client, (response) =>
    Effect.flatMap(
      Effect.serviceOption(FetchHttpClient.RequestInit),
      (init) =>
        Effect.provideService(response, FetchHttpClient.RequestInit, {
          ...Option.getOrUndefined(init),
          redirect: "manual"
        })
    ))
