/**
 * `microapp login --email EMAIL`: logs in, and prints the export lines of the base URL, token and user id.
 *
 * @since 0.1.0
 */
import { Command, Options, Prompt } from "@effect/cli"
import * as Terminal from "@effect/platform/Terminal"
import { Duration, Effect, Redacted } from "effect"
import { MicroappClient } from "../../MicroappClient.js"
import { Interrupted, UsageError } from "../exitCodes.js"
import { shellQuote } from "../shell.js"
import { readStdin, Stdio, untilSignal } from "../stdio.js"
import { connection, described, endpointOf, retryOf, undiciLayer } from "./options.js"

/** All of stdin, less one trailing newline. */
const passwordFromStdin = Effect.map(readStdin, (text) => Redacted.make(text.replace(/\r?\n$/, "")))

/** A hidden prompt, drawn on stderr so that stdout holds only the `export` lines. */
const passwordFromPrompt = Effect.gen(function*() {
  const stdio = yield* Stdio
  if (!stdio.isTerminal.stdin) {
    return yield* new UsageError({ message: "no terminal to ask for the password: pipe it in with --password-stdin" })
  }
  return yield* Prompt.run(Prompt.hidden({ message: "Password" })).pipe(
    Effect.updateService(
      Terminal.Terminal,
      (terminal) => Terminal.Terminal.of({ ...terminal, display: (text) => Effect.orDie(stdio.stderr.write(text)) })
    ),
    Effect.catchTag("QuitException", () => new Interrupted({ signal: "Ctrl-C" }))
  )
})

const unused = "Accepted as by the other commands; login does not use it"

/**
 * @since 0.1.0
 * @category commands
 */
export const login = Command.make(
  "login",
  {
    email: Options.text("email").pipe(Options.withPseudoName("EMAIL"), described("The account's email")),
    passwordStdin: Options.boolean("password-stdin").pipe(
      described("Read the password from stdin (one trailing newline removed) instead of a hidden prompt")
    ),
    ...connection,
    token: connection.token.pipe(described(unused)),
    userId: connection.userId.pipe(described(unused))
  },
  (args) =>
    Effect.gen(function*() {
      const password = args.passwordStdin ? yield* passwordFromStdin : yield* passwordFromPrompt
      if (Redacted.value(password) === "") return yield* new UsageError({ message: "the password is empty" })
      const endpoint = yield* endpointOf(args)
      const session = yield* MicroappClient.login({
        baseUrl: endpoint.baseUrl,
        email: args.email,
        password,
        timeout: Duration.seconds(endpoint.timeout),
        retry: retryOf(endpoint.retries)
      })
      const stdio = yield* Stdio
      // the one place a token is printed: handing it over is what login is for
      // the base URL too, so that every command works after `eval`
      yield* stdio.stdout.write(
        `export MICROAPP_BASE_URL=${shellQuote(endpoint.baseUrl)}\n` +
          `export MICROAPP_AUTH_TOKEN=${shellQuote(Redacted.value(session.authToken))}\n` +
          `export MICROAPP_USER_ID=${shellQuote(session.userId)}\n`
      )
    }).pipe(Effect.provide(undiciLayer), untilSignal)
).pipe(
  Command.withDescription(
    "Log in with email and password; prints export lines for MICROAPP_BASE_URL, MICROAPP_AUTH_TOKEN and " +
      "MICROAPP_USER_ID " +
      "(eval \"$(microapp login --email ...)\")"
  )
)
