/**
 * `microapp serve`: the emulator on its own, until Ctrl-C.
 *
 * @since 0.1.0
 */
import { Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Effect, Either, Option, Schema } from "effect"
import { type FaultKind, faultKinds } from "../../testing/internal/fault.js"
import { described, wholeNumber } from "./options.js"

const defaultPort = 8787

/** The faults a client is expected to ride out: `--faults RATE` draws from these. */
const defaultFaultKinds: ReadonlyArray<FaultKind> = ["http500", "http503", "http429", "drop"]

// about 1.2 GB of memory: past it the process would grow until the machine runs out
const maxDemoRows = 1_000_000
const maxLatencyMillis = 60_000
const latencyMessage = {
  message: () => `--latency must be a whole number of milliseconds from 0 to ${maxLatencyMillis}`
}
const maxChurn = 10_000
const churnMessage = {
  message: () => `--churn must be a number of changes a second above 0 and at most ${maxChurn}`
}

/**
 * `--faults RATE[:KIND,...]`: the share of requests that meet a fault, and which faults.
 *
 * @since 0.2.0
 * @category options
 */
export const parseFaults = (
  text: string
): Either.Either<{ readonly rate: number; readonly kinds: ReadonlyArray<FaultKind> }, string> => {
  const [rateText = "", kindsText, ...rest] = text.split(":")
  const rate = rateText.trim() === "" ? NaN : Number(rateText)
  const kinds = kindsText === undefined ? defaultFaultKinds : kindsText.split(",").map((kind) => kind.trim())
  const unknown = kinds.filter((kind) => !faultKinds.some((known) => known === kind))
  const problem = rest.length > 0 || !(rate > 0 && rate <= 1)
    ? `--faults must be RATE or RATE:KIND,... with RATE a number in (0, 1], got '${text}'`
    : unknown.length > 0
    ? `--faults: unknown fault kind '${unknown[0]}' (one of ${faultKinds.join(", ")})`
    : undefined
  return problem === undefined
    ? Either.right({ rate, kinds: faultKinds.filter((kind) => kinds.includes(kind)) })
    : Either.left(problem)
}

const boundedNumber = (name: string, pseudo: string, schema: Schema.Schema<number>) =>
  Options.float(name).pipe(Options.withSchema(schema), Options.withPseudoName(pseudo), Options.optional)

/**
 * @since 0.1.0
 * @category commands
 */
export const serve = Command.make(
  "serve",
  {
    port: wholeNumber("port", 0).pipe(
      Options.withDefault(defaultPort),
      described(`Port on 127.0.0.1 (0: any free port); default ${defaultPort}`)
    ),
    rows: wholeNumber("rows", 0, maxDemoRows).pipe(
      Options.optional,
      described(`Rows of the demo Projects Microapp, at most ${maxDemoRows}; default 2500`)
    ),
    defaultLimit: wholeNumber("default-limit", 1).pipe(
      Options.optional,
      described("Rows returned to a request that sends no limit; default 1000")
    ),
    maxLimit: wholeNumber("max-limit", 1).pipe(
      Options.optional,
      described("Silently clamp every limit to N; default none")
    ),
    latency: boundedNumber(
      "latency",
      "MILLIS",
      Schema.Number.pipe(Schema.int(latencyMessage), Schema.between(0, maxLatencyMillis, latencyMessage))
    ).pipe(described("Milliseconds added to every answer, e.g. 50; default 0")),
    faults: Options.text("faults").pipe(
      Options.mapEffect((text) =>
        Either.mapLeft(parseFaults(text), (message) => ValidationError.invalidValue(HelpDoc.p(message)))
      ),
      Options.withPseudoName("RATE[:KIND,...]"),
      Options.optional,
      described(
        `Answer this share of requests (logins excepted) with a fault, drawn from --seed: e.g. 0.1, or ` +
          `0.05:http503,drop; kinds ${faultKinds.join(", ")}; default kinds ${defaultFaultKinds.join(", ")}`
      )
    ),
    throttle: wholeNumber("throttle", 1).pipe(
      Options.optional,
      described("Answer 429 (Retry-After: 1) to a request that arrives while more than N are in flight")
    ),
    churn: boundedNumber(
      "churn",
      "PER_SECOND",
      Schema.Number.pipe(Schema.greaterThan(0, churnMessage), Schema.lessThanOrEqualTo(maxChurn, churnMessage))
    ).pipe(
      described("Insert, update or delete a Projects row this many times a second (e.g. 10 or 0.5), drawn from --seed")
    ),
    seed: wholeNumber("seed", 0).pipe(
      Options.withDefault(1),
      described("Seed of --faults and --churn: the same seed, the same faults and changes; default 1")
    )
  },
  (args) =>
    // the emulator is loaded only by the commands that run it, so that the others start faster
    Effect.flatMap(Effect.promise(() => import("../serve.js")), (module) =>
      module.serve({
        port: args.port,
        rows: Option.getOrUndefined(args.rows),
        defaultLimit: Option.getOrUndefined(args.defaultLimit),
        maxLimit: Option.getOrUndefined(args.maxLimit),
        latencyMillis: Option.getOrUndefined(args.latency),
        faults: Option.getOrUndefined(args.faults),
        throttle: Option.getOrUndefined(args.throttle),
        churn: Option.getOrUndefined(args.churn),
        seed: args.seed
      }))
).pipe(Command.withDescription("Run the emulator of the service with demo data until Ctrl-C (then exit 0)"))
