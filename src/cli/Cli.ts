/**
 * The `microapp` command line: `rows`, `row`, `update`, `login`, `serve`, `demo`. Its commands,
 * flags and exit codes (see `exitCodes.ts`) are part of the package's public contract.
 *
 * @since 0.1.0
 */
import { Args, Command, HelpDoc, Options, Prompt, ValidationError } from "@effect/cli"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Terminal from "@effect/platform/Terminal"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import {
  Cause,
  Config,
  type Console,
  Duration,
  Effect,
  Either,
  Layer,
  Logger,
  LogLevel,
  Option,
  Predicate,
  Redacted,
  Schema
} from "effect"
import * as BulkUpdate from "../BulkUpdate.js"
import { MicroappClient } from "../MicroappClient.js"
import type { Filter, Sort } from "../Query.js"
import { type CliError, errorLine, ExitCode, exitCodeOf, Interrupted, type ReaderClosed, UsageError } from "./exitCodes.js"
import { atomicFile, formats, writeRows } from "./output.js"
import { progressLine, summaryLine, withProgress } from "./progress.js"
import type { ServeOptions } from "./serve.js"
import { shellQuote } from "./shell.js"
import { updateFrom } from "./updateFrom.js"
import {
  readStdin,
  stderr,
  stderrIsTerminal,
  stderrLine,
  stdinIsTerminal,
  stdout,
  stdoutIsTerminal,
  untilSignal
} from "./stdio.js"

// ---------------------------------------------------------------------------------------------
// option helpers
// ---------------------------------------------------------------------------------------------

/** A whole-number option of at least `min`; its error names the flag. */
const wholeNumber = (name: string, min: number) =>
  Options.integer(name).pipe(
    Options.withSchema(
      Schema.Int.pipe(Schema.greaterThanOrEqualTo(min, { message: () => `--${name} must be a whole number >= ${min}` }))
    ),
    Options.withPseudoName("N")
  )

const described = (description: string) => Options.withDescription(description)

// ---------------------------------------------------------------------------------------------
// options shared by the commands that talk to a service
// ---------------------------------------------------------------------------------------------

const baseUrl = Options.text("base-url").pipe(
  Options.withFallbackConfig(Config.string("MICROAPP_BASE_URL")),
  Options.withPseudoName("URL"),
  described("Where the service is, e.g. https://example.com (default: $MICROAPP_BASE_URL)")
)

const token = Options.redacted("token").pipe(
  Options.withFallbackConfig(Config.redacted("MICROAPP_AUTH_TOKEN")),
  Options.withPseudoName("TOKEN"),
  described("The auth token (default: $MICROAPP_AUTH_TOKEN); never printed")
)

const userId = Options.text("user-id").pipe(
  Options.withFallbackConfig(Config.string("MICROAPP_USER_ID")),
  Options.withPseudoName("ID"),
  described("The user id that goes with the token (default: $MICROAPP_USER_ID)")
)

const timeout = Options.float("timeout").pipe(
  Options.withSchema(
    Schema.Number.pipe(Schema.positive({ message: () => "--timeout must be a number of seconds > 0" }))
  ),
  Options.withDefault(30),
  Options.withPseudoName("SECONDS"),
  described("Seconds each request may take (each attempt), e.g. 30 or 2.5; default 30")
)

const retries = wholeNumber("retries", 0).pipe(
  Options.withDefault(4),
  described("Retries of a failed read (5xx, 408, 429, network failure, timeout), with backoff; default 4")
)

const tuning = { timeout, retries }

const connection = { baseUrl, token, userId, ...tuning }

interface Connection {
  readonly baseUrl: string
  readonly token: Redacted.Redacted<string>
  readonly userId: string
  readonly timeout: number
  readonly retries: number
}

const retryOf = (count: number) => count === 0 ? false as const : { maxAttempts: count + 1 }

const clientLayer = (options: Connection) =>
  MicroappClient.layer({
    baseUrl: options.baseUrl,
    authToken: options.token,
    userId: options.userId,
    timeout: Duration.seconds(options.timeout),
    retry: retryOf(options.retries)
  }).pipe(Layer.provide(NodeHttpClient.layerUndici))

// ---------------------------------------------------------------------------------------------
// rows
// ---------------------------------------------------------------------------------------------

/** `FIELD_ID=VALUE`, split at the first `=`. */
const parseFilter = (text: string): Either.Either<Filter, UsageError> => {
  const at = text.indexOf("=")
  const fieldID = at < 0 ? "" : text.slice(0, at).trim()
  return fieldID === ""
    ? Either.left(new UsageError({ message: `invalid --filter "${text}": expected FIELD_ID=VALUE` }))
    : Either.right({ fieldID, value: text.slice(at + 1) })
}

const rows = Command.make(
  "rows",
  {
    microAppID: Args.text({ name: "microAppID" }).pipe(Args.withDescription("The Microapp to read")),
    filter: Options.text("filter").pipe(
      Options.withPseudoName("FIELD_ID=VALUE"),
      Options.repeated,
      described("Only rows whose field (by fieldID) equals the value; repeat to require several")
    ),
    sort: wholeNumber("sort", 1).pipe(
      Options.optional,
      described("Sort by sort field N, as configured in the Microapp's Results Tab")
    ),
    order: Options.choice("order", ["asc", "desc"]).pipe(Options.optional, described("Order of --sort; default asc")),
    pageSize: wholeNumber("page-size", 1).pipe(Options.optional, described("Rows per request; default 1000")),
    concurrency: wholeNumber("concurrency", 1).pipe(
      Options.optional,
      described(
        "Requests in flight once the server's page size is known, fixed; default adaptive: one, more while " +
          "rows per second improve, fewer on pushback, at most 8"
      )
    ),
    format: Options.choice("format", formats).pipe(
      Options.withDefault("ndjson"),
      described("ndjson (one row per line), json (one array) or csv (RFC 4180, header first); default ndjson")
    ),
    output: Options.file("output").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      described("Write to FILE, which appears only once complete (never half-written); default stdout")
    ),
    quiet: Options.boolean("quiet").pipe(described("No progress line and no summary on stderr")),
    ...connection
  },
  (args) =>
    Effect.gen(function*() {
      const filters = yield* Effect.forEach(args.filter, parseFilter)
      if (Option.isNone(args.sort) && Option.isSome(args.order)) {
        return yield* new UsageError({ message: "--order needs --sort" })
      }
      const sort: ReadonlyArray<Sort> = Option.match(args.sort, {
        onNone: () => [],
        onSome: (field) => [{ field, order: Option.getOrElse(args.order, () => "asc" as const) }]
      })
      const client = yield* MicroappClient
      const scan = yield* client.scan({
        microAppID: args.microAppID,
        filters,
        sort,
        ...Option.match(args.pageSize, { onNone: () => ({}), onSome: (pageSize) => ({ pageSize }) }),
        ...Option.match(args.concurrency, { onNone: () => ({}), onSome: (concurrency) => ({ concurrency }) })
      })
      // a progress line among rows printed on the same terminal would garble them
      const rowsOnTerminal = Option.isNone(args.output) && (yield* stdoutIsTerminal)
      const showProgress = !args.quiet && !rowsOnTerminal && (yield* stderrIsTerminal)
      const write = Option.match(args.output, {
        onNone: () => writeRows(args.format, scan.rows, stdout),
        onSome: (file) => atomicFile(file, (destination) => writeRows(args.format, scan.rows, destination))
      })
      const closingLine = (stoppedBy?: ReaderClosed) =>
        args.quiet ? Effect.void : Effect.flatMap(scan.summary, (summary) => stderrLine(summaryLine(summary, stoppedBy)))
      // the scan stops with the write that finds the reader gone, and the summary says so
      yield* withProgress(Effect.map(scan.summary, progressLine), showProgress)(write).pipe(
        Effect.tapErrorTag("ReaderClosed", closingLine)
      )
      yield* closingLine()
    }).pipe(Effect.provide(clientLayer(args)), untilSignal)
).pipe(Command.withDescription("Every row of a Microapp, through all pages, as NDJSON, JSON or CSV"))

// ---------------------------------------------------------------------------------------------
// row, update
// ---------------------------------------------------------------------------------------------

const rowID = Args.text({ name: "rowID" }).pipe(Args.withDescription("The row's _id"))

const row = Command.make(
  "row",
  { rowID, ...connection },
  (args) =>
    Effect.gen(function*() {
      const client = yield* MicroappClient
      const found = yield* client.getRow(args.rowID)
      yield* stdout.write(`${JSON.stringify(found, null, 2)}\n`)
    }).pipe(Effect.provide(clientLayer(args)), untilSignal)
).pipe(Command.withDescription("One row, as pretty JSON"))

const RowData = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())
const decodeRowData = Schema.decodeUnknownEither(RowData)

/** The row data of `update`: JSON that must be an object. */
const parseRowData = (text: string, source: string): Either.Either<typeof RowData.Type, UsageError> =>
  Either.flatMap(
    Either.mapLeft(decodeJson(text), () => new UsageError({ message: `${source} is not valid JSON` })),
    (json) =>
      Predicate.isRecord(json)
        ? Either.mapLeft(decodeRowData(json), () => new UsageError({ message: `${source} must be a JSON object` }))
        : Either.left(new UsageError({ message: `${source} must be a JSON object of field labels and values` }))
  )

const readDataFile = (file: string): Effect.Effect<string, UsageError, FileSystem.FileSystem> =>
  file === "-" ? readStdin : Effect.flatMap(FileSystem.FileSystem, (fs) =>
    Effect.mapError(
      fs.readFileString(file),
      (error) => new UsageError({ message: `cannot read --data-file ${file}: ${error.message}` })
    ))

/** `update ROW_ID --data ...`: one row. */
const updateOne = (
  rowID: string,
  args: { readonly data: Option.Option<string>; readonly dataFile: Option.Option<string> }
) =>
  Effect.gen(function*() {
    const input = Option.isSome(args.data)
      ? Option.isSome(args.dataFile)
        ? yield* new UsageError({ message: "give either --data or --data-file, not both" })
        : { text: args.data.value, source: "--data" }
      : Option.isSome(args.dataFile)
      ? { text: yield* readDataFile(args.dataFile.value), source: "--data-file" }
      : yield* new UsageError({ message: "update needs --data JSON or --data-file FILE (- for stdin)" })
    const rowData = yield* parseRowData(input.text, input.source)
    const client = yield* MicroappClient
    yield* client.updateRow({ rowID, rowData })
  })

const update = Command.make(
  "update",
  {
    rowID: rowID.pipe(Args.optional),
    data: Options.text("data").pipe(
      Options.withPseudoName("JSON"),
      Options.optional,
      described("The new values, a JSON object of field labels, e.g. '{\"Status\":\"Done\"}'")
    ),
    dataFile: Options.text("data-file").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      described("Read that JSON object from FILE, or from stdin with -")
    ),
    from: Options.text("from").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      described(
        "Many rows instead of one: NDJSON lines {\"rowID\": ..., \"rowData\": {...}} from FILE, or stdin with -; " +
          "one outcome line each on stdout"
      )
    ),
    report: Options.text("report").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      described("With --from: write the outcome lines to FILE (as they come) instead of stdout")
    ),
    concurrency: wholeNumber("concurrency", 1).pipe(
      Options.optional,
      described(`With --from: updates under way at once; default ${BulkUpdate.defaults.concurrency}`)
    ),
    quiet: Options.boolean("quiet").pipe(described("With --from: no progress line and no summary on stderr")),
    ...connection
  },
  (args) =>
    Effect.gen(function*() {
      if (Option.isNone(args.from)) {
        if (Option.isSome(args.report) || Option.isSome(args.concurrency) || args.quiet) {
          return yield* new UsageError({ message: "--report, --concurrency and --quiet go with --from" })
        }
        if (Option.isNone(args.rowID)) {
          return yield* new UsageError({ message: "update needs a rowID, or --from FILE (- for stdin)" })
        }
        return yield* untilSignal(updateOne(args.rowID.value, args))
      }
      if (Option.isSome(args.rowID) || Option.isSome(args.data) || Option.isSome(args.dataFile)) {
        return yield* new UsageError({
          message: "--from takes its rows from FILE: give no rowID, --data or --data-file with it"
        })
      }
      // no untilSignal: a signal stops the reading, and the updates under way are still reported
      return yield* updateFrom({
        from: args.from.value,
        report: args.report,
        concurrency: Option.getOrElse(args.concurrency, () => BulkUpdate.defaults.concurrency),
        // --retries bounds the sends of one update as it bounds the attempts of one request
        maxSends: args.retries + 1,
        quiet: args.quiet
      })
    }).pipe(Effect.provide(clientLayer(args)))
).pipe(
  Command.withDescription(
    "Set fields of a row by label (case sensitive); prints nothing on success. " +
      "With --from, many rows: exit 0 when every line is updated, 2 when a line is invalid, else 5 when one is not updated"
  )
)

// ---------------------------------------------------------------------------------------------
// login
// ---------------------------------------------------------------------------------------------

/** All of stdin, less one trailing newline. */
const passwordFromStdin = Effect.map(readStdin, (text) => Redacted.make(text.replace(/\r?\n$/, "")))

/** A hidden prompt, drawn on stderr so that stdout holds only the `export` lines. */
const passwordFromPrompt = Effect.gen(function*() {
  if (!(yield* stdinIsTerminal)) {
    return yield* new UsageError({ message: "no terminal to ask for the password: pipe it in with --password-stdin" })
  }
  return yield* Prompt.run(Prompt.hidden({ message: "Password" })).pipe(
    Effect.updateService(Terminal.Terminal, (terminal) =>
      Terminal.Terminal.of({ ...terminal, display: (text) => Effect.orDie(stderr.write(text)) })),
    Effect.catchTag("QuitException", () => new Interrupted({ signal: "Ctrl-C" }))
  )
})

const unused = "Accepted as by the other commands; login does not use it"

const login_ = Command.make(
  "login",
  {
    email: Options.text("email").pipe(Options.withPseudoName("EMAIL"), described("The account's email")),
    passwordStdin: Options.boolean("password-stdin").pipe(
      described("Read the password from stdin (one trailing newline removed) instead of a hidden prompt")
    ),
    baseUrl,
    ...tuning,
    token: token.pipe(Options.optional, described(unused)),
    userId: userId.pipe(Options.optional, described(unused))
  },
  (args) =>
    Effect.gen(function*() {
      const password = args.passwordStdin ? yield* passwordFromStdin : yield* passwordFromPrompt
      if (Redacted.value(password) === "") return yield* new UsageError({ message: "the password is empty" })
      const session = yield* MicroappClient.login({
        baseUrl: args.baseUrl,
        email: args.email,
        password,
        timeout: Duration.seconds(args.timeout),
        retry: retryOf(args.retries)
      })
      // the one place a token is printed: handing it over is what login is for
      yield* stdout.write(
        `export MICROAPP_AUTH_TOKEN=${shellQuote(Redacted.value(session.authToken))}\n` +
          `export MICROAPP_USER_ID=${shellQuote(session.userId)}\n`
      )
    }).pipe(Effect.provide(NodeHttpClient.layerUndici), untilSignal)
).pipe(
  Command.withDescription(
    "Log in with email and password; prints export lines for MICROAPP_AUTH_TOKEN and MICROAPP_USER_ID " +
      "(eval \"$(microapp login --email ...)\")"
  )
)

// ---------------------------------------------------------------------------------------------
// serve, demo
// ---------------------------------------------------------------------------------------------

// The emulator is loaded by the two commands that run it, so that the others start faster.
const serve = (options: ServeOptions) =>
  Effect.flatMap(Effect.promise(() => import("./serve.js")), (module) => module.serve(options))

const demo = Effect.flatMap(Effect.promise(() => import("./demo.js")), (module) => module.demo)

const defaultPort = 8787

const serve_ = Command.make(
  "serve",
  {
    port: wholeNumber("port", 0).pipe(
      Options.withDefault(defaultPort),
      described(`Port on 127.0.0.1 (0: any free port); default ${defaultPort}`)
    ),
    rows: wholeNumber("rows", 0).pipe(Options.optional, described("Rows of the demo Projects Microapp; default 2500")),
    defaultLimit: wholeNumber("default-limit", 1).pipe(
      Options.optional,
      described("Rows returned to a request that sends no limit; default 1000")
    ),
    maxLimit: wholeNumber("max-limit", 1).pipe(
      Options.optional,
      described("Silently clamp every limit to N; default none")
    )
  },
  (args) =>
    serve({
      port: args.port,
      rows: Option.getOrUndefined(args.rows),
      defaultLimit: Option.getOrUndefined(args.defaultLimit),
      maxLimit: Option.getOrUndefined(args.maxLimit)
    })
).pipe(Command.withDescription("Run the emulator of the service with demo data until Ctrl-C (then exit 0)"))

const demo_ = Command.make("demo", {}, () => untilSignal(demo)).pipe(
  Command.withDescription("Show the service's silent row cap, and the client reading past it, on the emulator")
)

// ---------------------------------------------------------------------------------------------
// the application
// ---------------------------------------------------------------------------------------------

const microapp = Command.make(
  "microapp",
  {},
  () => new UsageError({ message: "a command is required: rows, row, update, login, serve or demo (see --help)" })
).pipe(
  Command.withDescription(
    "Client of the Microapp Data Service, and its local emulator. " +
      "Exit codes: 0 ok, 1 other failure, 2 usage or invalid input, 3 authentication, 4 not found, " +
      "5 the service or the network failed (after retries) or refused the request, 130 interrupted, " +
      "141 standard output closed by its reader."
  ),
  Command.withSubcommands([rows, row, update, login_, serve_, demo_])
)

const PackageJson = Schema.parseJson(Schema.Struct({ version: Schema.String }))

/** The package's version, from the package.json two levels above this module (src/cli or dist/cli). */
const readVersion = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const file = yield* path.fromFileUrl(new URL("../../package.json", import.meta.url))
  return (yield* Schema.decodeUnknown(PackageJson)(yield* fs.readFileString(file))).version
}).pipe(Effect.orElseSucceed(() => "unknown"))

/** The console with `error` silenced: only @effect/cli writes there, to print usage errors. */
const quietErrors = (console: Console.Console): Console.Console => ({ ...console, error: () => Effect.void })

const envOf: Readonly<Record<string, string>> = {
  "--base-url": "MICROAPP_BASE_URL",
  "--token": "MICROAPP_AUTH_TOKEN",
  "--user-id": "MICROAPP_USER_ID"
}

/** A usage error of @effect/cli as one line, each distinct message once. */
const usageLine = (error: ValidationError.ValidationError): string => {
  const text = HelpDoc.toAnsiText(error.error).replace(/\u001b\[[0-9;]*m/g, "")
  const messages = new Set(
    text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== "").map((line) =>
      line.replace(/^Expected to find option: '(--[a-z-]+)'$/, (found, flag: string) => {
        const variable = envOf[flag]
        return variable === undefined ? found : `missing ${flag} (or set ${variable})`
      })
    )
  )
  return `error: ${Array.from(messages).join("; ")}`
}

/** A failure's line on stderr, if it has one. */
const reported = (error: CliError): Effect.Effect<void> => {
  const line = errorLine(error)
  return line === undefined ? Effect.void : stderrLine(line)
}

const describeDefect = (cause: Cause.Cause<unknown>): string => {
  const defect = Cause.squash(cause)
  return defect instanceof Error ? defect.message : String(defect)
}

/** Log lines (warnings about skipped rows, for example) go to stderr: stdout carries data. */
const stderrLogger = Logger.make<unknown, void>(({ logLevel, message }) => {
  const parts: ReadonlyArray<unknown> = Array.isArray(message) ? message : [message]
  process.stderr.write(`${logLevel.label.toLowerCase()}: ${parts.map(String).join(" ")}\n`)
})

/**
 * Runs the command line on `argv` (as `process.argv`: the runtime and the script first) and
 * returns the exit code. Every failure prints one line on stderr and no stack trace.
 *
 * @since 0.1.0
 * @category running
 */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<ExitCode> =>
  Effect.gen(function*() {
    const version = yield* readVersion
    const run = Command.run(microapp, { name: "microapp", version })
    return yield* run(argv).pipe(
      // @effect/cli renders its usage errors over several lines; one line is printed instead
      Effect.withConsole(quietErrors(yield* Effect.console)),
      Effect.as(ExitCode.ok),
      Effect.catchAll((error: CliError | ValidationError.ValidationError) =>
        ValidationError.isValidationError(error)
          ? Effect.as(stderrLine(usageLine(error)), ExitCode.usage)
          : Effect.as(reported(error), exitCodeOf(error))
      )
    )
  }).pipe(
    // a defect: one line, no stack trace
    Effect.catchAllCause((cause) =>
      Effect.as(stderrLine(`error: unexpected failure: ${describeDefect(cause)}`), ExitCode.failure)
    ),
    Effect.provide(Logger.replace(Logger.defaultLogger, stderrLogger)),
    Logger.withMinimumLogLevel(LogLevel.Warning),
    Effect.provide(NodeContext.layer)
  )
