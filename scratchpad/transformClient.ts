/**
 * A step of the caller's own in the client's transport: a header on every attempt, and a log line
 * for each, retries included.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Redacted } from "effect"
import { MicroappClient } from "../src/index.js"

export const TaggedClient = MicroappClient.layer({
  baseUrl: "https://example.microapp-host.com",
  authToken: Redacted.make(process.env["MICROAPP_AUTH_TOKEN"] ?? ""),
  userId: process.env["MICROAPP_USER_ID"] ?? "",
  transformClient: (client) =>
    client.pipe(
      HttpClient.mapRequest(HttpClientRequest.setHeader("x-request-source", "billing")),
      HttpClient.tapRequest((request) => Effect.logDebug("attempt", request.url))
    )
})
