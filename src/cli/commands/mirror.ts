/**
 * `microapp mirror APP --db URL [--view NAME]`: one pass of `SqlMirror.run` into the database at URL (`file:PATH`
 * for SQLite, `postgres://...` for PostgreSQL), resumable after a kill. The driver is loaded by this
 * command only, from the user's node_modules: the bin does not carry it.
 *
 * @since 0.2.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as FileSystem from "@effect/platform/FileSystem"
import type { SqlClient } from "@effect/sql"
import type * as SqlLibsql from "@effect/sql-libsql"
import type * as SqlPg from "@effect/sql-pg"
import { Cause, Context, Effect, Layer, Option, Redacted } from "effect"
import { createRequire } from "node:module"
import * as nodePath from "node:path"
import { pathToFileURL } from "node:url"
import { MicroappClient } from "../../MicroappClient.js"
import * as SqlMirror from "../../sql/SqlMirror.js"
import { CommandFailed, UsageError } from "../exitCodes.js"
import { changesSummaryLine, mirrorProgressLine, withProgress } from "../progress.js"
import { stderrLine, Stdio, untilSignal } from "../stdio.js"
import { clientLayer, connection, deletes, described, maxDeletes, selection, selectionOf } from "./options.js"

/**
 * The database drivers, imported when a command needs one; a test may swap them.
 *
 * @since 0.2.0
 * @category services
 */
export class SqlDrivers extends Context.Reference<SqlDrivers>()("effect-microapp/cli/SqlDrivers", {
  defaultValue: () => ({
    libsql: (): Promise<typeof SqlLibsql> =>
      import("@effect/sql-libsql").catch((error: unknown) => fromWorkingDirectory("@effect/sql-libsql", error)),
    pg: (): Promise<typeof SqlPg> =>
      import("@effect/sql-pg").catch((error: unknown) => fromWorkingDirectory("@effect/sql-pg", error))
  })
}) {}

/**
 * `name` as installed beside the project the command runs in: a global install finds no driver
 * beside itself, and the install line it prints puts one in the working directory's node_modules.
 */
const fromWorkingDirectory = <A>(name: string, notBesideBin: unknown): Promise<A> => {
  let resolved: string
  try {
    resolved = createRequire(nodePath.join(process.cwd(), "noop.js")).resolve(name)
  } catch {
    return Promise.reject(notBesideBin)
  }
  return import(pathToFileURL(resolved).href) as Promise<A>
}

/** What a user installs to have a driver, in the versions of this package's Effect line. */
const installLines = {
  libsql: "npm install @effect/sql@~0.52.1 @effect/sql-libsql@~0.42.0",
  pg: "npm install @effect/sql@~0.52.1 @effect/sql-pg@~0.53.0"
} as const

const drivers = { "file:": "libsql", "postgres:": "pg", "postgresql:": "pg" } as const

/** The driver's module, or a usage error with the line that installs it. */
const load = <A>(driver: keyof typeof installLines, loader: (drivers: SqlDrivers["Type"]) => Promise<A>) =>
  Effect.flatMap(SqlDrivers, (loaders) =>
    Effect.tryPromise({
      try: () => loader(loaders),
      catch: () =>
        new UsageError({
          message: `--db needs the ${driver === "pg" ? "PostgreSQL" : "SQLite"} driver, which is not installed: ${
            installLines[driver]
          }`
        })
    }))

/**
 * What SQLite (SQLITE_FULL, or no room for its WAL index), PostgreSQL (could not extend file) and the OS (ENOSPC) say of a full disk.
 *
 * @since 0.2.0
 * @category errors
 */
export const diskFull = /SQLITE_FULL|SQLITE_IOERR_SHMSIZE|disk is full|ENOSPC|No space left|could not extend file/i

/**
 * What a driver's failure carries: where it failed, and the driver's error.
 *
 * @since 0.2.0
 * @category errors
 */
export interface Failure {
  readonly message: string
  readonly cause?: unknown
}

/**
 * A database failure as the command reports it: the driver's own words, and a full disk by name.
 *
 * @since 0.2.0
 * @category errors
 */
export const databaseFailed = (error: Failure): CommandFailed => {
  const words = SqlMirror.describeError(error)
  return new CommandFailed({
    message: diskFull.test(words) ? `the database: the disk is full (${error.message})` : `the database: ${words}`
  })
}

const badUrl = new UsageError({ message: "--db must be file:PATH (SQLite) or postgres://USER@HOST/DB (PostgreSQL)" })

/** A usage error unless `file:PATH` names a file in a directory that exists (libsql would fail a statement later). */
const checkSqliteFile = (db: string) =>
  Effect.gen(function*() {
    // as libsql reads it: the text after the scheme up to any query, relative to the working directory
    const file = decodeURIComponent(db.slice("file:".length).replace(/[?#].*$/, "").replace(/^\/\/(?=\/)/, ""))
    if (file === "" || file.endsWith("/")) return yield* badUrl
    const fs = yield* FileSystem.FileSystem
    const directory = nodePath.dirname(file)
    const info = yield* Effect.option(fs.stat(directory))
    if (Option.isNone(info) || info.value.type !== "Directory") {
      return yield* new UsageError({ message: `--db: no such directory: ${directory}` })
    }
  })

/**
 * The `SqlClient` of `--db`: its scheme picks the driver; the URL itself is never printed.
 *
 * @since 0.2.0
 * @category layers
 */
export const databaseLayer = (
  db: Redacted.Redacted<string>
): Layer.Layer<SqlClient.SqlClient, UsageError | CommandFailed, FileSystem.FileSystem> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const url = yield* Effect.try({ try: () => new URL(Redacted.value(db)), catch: () => badUrl })
    const driver = Object.hasOwn(drivers, url.protocol) ? drivers[url.protocol as keyof typeof drivers] : undefined
    if (driver === undefined) return yield* badUrl
    if (driver === "libsql") yield* checkSqliteFile(Redacted.value(db))
    const layer = driver === "libsql"
      ? (yield* load(driver, (loaders) => loaders.libsql())).LibsqlClient.layer({ url: Redacted.value(db) })
      : (yield* load(driver, (loaders) => loaders.pg())).PgClient.layer({ url: db })
    // libsql throws when it cannot open the file at all: its words are a defect of the layer
    const opened = Layer.catchAllCause(layer, (cause) =>
      Layer.failCause<Failure>(
        Cause.isDie(cause) ? Cause.fail({ message: "cannot open it", cause: Cause.squash(cause) }) : cause
      ))
    return Layer.mapError(opened, databaseFailed)
  }))

/**
 * @since 0.2.0
 * @category commands
 */
export const mirror = Command.make(
  "mirror",
  {
    microAppID: Args.text({ name: "microAppID" }).pipe(Args.withDescription("The Microapp to mirror")),
    db: Options.redacted("db").pipe(
      Options.withPseudoName("URL"),
      described(
        "The database: file:PATH (SQLite, needs @effect/sql-libsql) or postgres://USER:PASSWORD@HOST/DB " +
          "(PostgreSQL, needs @effect/sql-pg); never printed"
      )
    ),
    table: Options.text("table").pipe(
      Options.withPseudoName("TABLE"),
      Options.withDefault(SqlMirror.defaultTable),
      described(`The table of rows; default ${SqlMirror.defaultTable}`)
    ),
    history: Options.boolean("history").pipe(
      described("Also keep every version of every row, with valid_from and valid_to, in TABLE_history")
    ),
    view: Options.text("view").pipe(
      Options.withPseudoName("NAME"),
      Options.optional,
      described(
        "Also keep a view NAME (at most 63 characters) with a typed column per field (named from its label " +
          "in snake_case), the types inferred from the rows read and widened when values disagree; past " +
          `${SqlMirror.maxViewFields} fields, the others are left in data, with a warning naming them`
      )
    ),
    deletes,
    maxDeletes,
    quiet: Options.boolean("quiet").pipe(described("No progress line and no summary on stderr")),
    ...selection,
    ...connection
  },
  (args) =>
    Effect.gen(function*() {
      const showProgress = !args.quiet && (yield* Stdio).isTerminal.stderr
      const summary = yield* SqlMirror.run<Stdio>({
        microAppID: args.microAppID,
        table: args.table,
        history: args.history,
        view: Option.getOrUndefined(args.view),
        deletes: args.deletes,
        maxDeletes: Option.getOrUndefined(args.maxDeletes),
        ...yield* selectionOf(args)
      }, (progress) => withProgress(Effect.map(progress, mirrorProgressLine), showProgress)).pipe(
        Effect.catchTags({
          SqlError: databaseFailed,
          ConcurrentRun: (error) => new CommandFailed({ message: error.message })
        }),
        // @effect/sql turns a failed COMMIT into a defect: a full disk there is still the disk's
        Effect.catchSomeDefect((defect) =>
          diskFull.test(String(defect))
            ? Option.some(databaseFailed({ message: "a commit failed", cause: defect }))
            : Option.none()
        )
      )
      if (!args.quiet) yield* stderrLine(changesSummaryLine(summary))
    }).pipe(
      Effect.provide(databaseLayer(args.db)),
      // a Microapp that does not exist fails here (NotFound), before the database is opened: no pass left open
      (mirrored) =>
        Effect.zipRight(
          Effect.flatMap(MicroappClient, (client) => client.query({ microAppID: args.microAppID, limit: 1 })),
          mirrored
        ),
      Effect.provide(clientLayer(args)),
      // the table and the view are refused before the database is opened, which would create its file
      (mirrored) =>
        Effect.zipRight(
          Effect.zipRight(
            SqlMirror.tableOf({ table: args.table }),
            Effect.transposeMapOption(args.view, (view) => SqlMirror.viewOf({ view, table: args.table }))
          ),
          mirrored
        ),
      untilSignal
    )
).pipe(
  Command.withDescription(
    "One pass of a mirror of a Microapp in a database (table TABLE): rows inserted, updated and deleted " +
      "until it equals the Microapp; run it again after a crash and it goes on from where it stopped"
  )
)
