/**
 * The README's client of the real service: a layer over Node's transport, with the token from the
 * environment, kept `Redacted`.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Layer, Redacted } from "effect"
import { MicroappClient } from "../src/index.js"

export const MicroappLive = MicroappClient.layer({
  baseUrl: "https://example.microapp-host.com", // with or without a trailing "/"
  authToken: Redacted.make(process.env["MICROAPP_AUTH_TOKEN"] ?? ""),
  userId: process.env["MICROAPP_USER_ID"] ?? ""
}).pipe(Layer.provide(NodeHttpClient.layerUndici)) // or FetchHttpClient.layer
