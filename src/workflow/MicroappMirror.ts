/**
 * The mirror pass of `effect-microapp/sql` (`SqlMirror.run`) as a durable workflow of
 * `@effect/workflow`: run on `@effect/cluster`, one execution per Microapp, table and run slot (a
 * scheduled time, say), resumed on another runner when its runner dies.
 *
 * An execution has two activities: `start` records which pass the run must see complete (the one
 * in progress, or the next), and `pass` runs `SqlMirror.run` to that pass's end. A runner killed
 * in the middle of `pass` has it run again on another (at-least-once), and `SqlMirror.run` goes on
 * from the pass's last commit. One killed after the pass completed, before the cluster stored the
 * activity's result, has it run again too: it finds the pass complete and returns the summary the
 * database holds, instead of starting a pass of its own.
 *
 * The mirror's database is the `MirrorDatabase` service, apart from the cluster's storage (which is
 * what `SqlClient` is on a runner); both may be one PostgreSQL.
 *
 * @since 0.2.0
 */
import { SqlClient, SqlError } from "@effect/sql"
import { Activity, Workflow, type WorkflowEngine } from "@effect/workflow"
import { Context, Effect, Exit, Layer, Option, Schema, Scope } from "effect"
import * as Changes from "../Changes.js"
import { checking, validate } from "../internal/bounds.js"
import { MicroappClient } from "../MicroappClient.js"
import { type InvalidInput, ScanError, TooManyDeletes, TypeId } from "../MicroappError.js"
import { DataOptions } from "../sql/internal/options.js"
import * as SqlMirror from "../sql/SqlMirror.js"

/**
 * The database the mirrors are kept in, a `SqlClient` of its own: on a runner, `SqlClient` is the
 * cluster's storage.
 *
 * @since 0.2.0
 * @category services
 */
export class MirrorDatabase extends Context.Tag("effect-microapp/workflow/MirrorDatabase")<
  MirrorDatabase,
  SqlClient.SqlClient
>() {
  /**
   * The mirrors' database from a layer of `SqlClient` (`PgClient.layer(...)`, say), kept apart from
   * any other `SqlClient` of the runner.
   *
   * @since 0.2.0
   */
  static readonly layer = <E, R>(client: Layer.Layer<SqlClient.SqlClient, E, R>): Layer.Layer<MirrorDatabase, E, R> =>
    Layer.effect(MirrorDatabase, SqlClient.SqlClient).pipe(Layer.provide(client))
}

/**
 * The summary of a pass (`Changes.Summary`) as a Schema: what an execution returns.
 *
 * @since 0.2.0
 * @category schemas
 */
export const Summary: Schema.Schema<Changes.Summary> = Changes.Summary

/**
 * The mirror's database failed: the driver's own words (`SqlMirror.describeError`, any URL's
 * password hidden), and the `SqlError` as its cause, which crosses the wire as its name and message.
 *
 * @since 0.2.0
 * @category errors
 */
export class MirrorDatabaseError extends Schema.TaggedError<MirrorDatabaseError>(
  "effect-microapp/workflow/MicroappMirror/MirrorDatabaseError"
)("MirrorDatabaseError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  /** @since 0.2.0 */
  readonly [TypeId]: TypeId = TypeId
  /**
   * @since 0.2.0
   */
  static readonly fromSqlError = (error: SqlError.SqlError): MirrorDatabaseError =>
    new MirrorDatabaseError({ message: SqlMirror.describeError(error), cause: error })
}

/**
 * What an execution fails with: a scan's errors (a run collects nothing, so never `TooManyRows`),
 * `TooManyDeletes` (the pass's delete guard), `SqlMirror.ConcurrentRun`, or the mirror database's.
 *
 * @since 0.2.0
 * @category schemas
 */
export const MirrorError = Schema.Union(
  ...ScanError.members,
  TooManyDeletes,
  SqlMirror.ConcurrentRun,
  MirrorDatabaseError
)

/**
 * @since 0.2.0
 * @category models
 */
export type MirrorError = typeof MirrorError.Type

/**
 * An execution's payload: every option of `SqlMirror.run` that is data (the `rows` selection and
 * scan options, `checkpointEvery`, `table`, `history`, `view`, `deletes`, `maxDeletes`; not
 * `definition`, a Microapp's Schemas, nor `timeout` and `retry`, which the runner's
 * `MicroappClient` has), and `slot`, which names the run (the scheduled time as ISO-8601 text,
 * say). Executions with the same Microapp, table and slot are one.
 *
 * @since 0.2.0
 * @category models
 */
export interface Payload extends Omit<SqlMirror.Options, "definition" | "timeout" | "retry"> {
  readonly slot: string
}

/**
 * The payload's Schema, with the bounds of every option (`pageSize` from 1 to 10,000, ...).
 *
 * @since 0.2.0
 * @category schemas
 */
export const Payload = checking<Payload>()(Schema.Struct({ ...DataOptions.fields, slot: Schema.String }))

/**
 * The payload checked, each option against its bounds and the table's and view's names as
 * `SqlMirror.run` checks them: `InvalidInput` naming the option at fault otherwise.
 *
 * @since 0.2.0
 * @category constructors
 */
export const checkPayload = (payload: Payload): Effect.Effect<typeof Payload.Type, InvalidInput> =>
  Effect.gen(function*() {
    const checked = yield* validatePayload(payload)
    const table = yield* SqlMirror.tableOf(checked)
    if (checked.view !== undefined) yield* SqlMirror.viewOf({ view: checked.view, table })
    return checked
  })

const validatePayload = validate(Payload, undefined, "payload")

/**
 * The workflow: `MicroappMirror.execute(payload)` runs (or joins) the execution of `payload` and
 * returns its pass's summary.
 *
 * @since 0.2.0
 * @category workflows
 */
export const MicroappMirror = Workflow.make({
  name: "MicroappMirror",
  payload: Payload,
  success: Summary,
  error: MirrorError,
  idempotencyKey: ({ microAppID, slot, table = SqlMirror.defaultTable }) => `${table}/${microAppID}/${slot}`
})

/**
 * Runs (or joins) the execution of `payload`, checked first (`checkPayload`): an option out of its
 * bounds fails with `InvalidInput` before anything is sent to the cluster.
 *
 * @since 0.2.0
 * @category workflows
 */
export const execute = (payload: Payload): Effect.Effect<Changes.Summary, MirrorError, WorkflowEngine.WorkflowEngine> =>
  Effect.flatMap(checkPayload(payload), (checked) => MicroappMirror.execute(checked))

const isSqlError = (error: unknown): error is SqlError.SqlError => error instanceof SqlError.SqlError

/** The pass a run must see complete: the one in progress, or the one after the last complete. */
const Target = Schema.Struct({ pass: Schema.Number })

/**
 * The workflow's implementation, for a runner: each execution in the cluster runs on one runner at
 * a time and goes on on another when its runner dies.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = MicroappMirror.toLayer(Effect.fnUntraced(function*(payload, executionId) {
  const { slot: _slot, ...options } = payload
  const database = yield* MirrorDatabase
  const onMirrorDatabase = <A, E, R>(effect: Effect.Effect<A, E | SqlError.SqlError, R>) =>
    effect.pipe(
      Effect.provideService(SqlClient.SqlClient, database),
      Effect.mapError((error) => isSqlError(error) ? MirrorDatabaseError.fromSqlError(error) : error)
    )
  const state = onMirrorDatabase(SqlMirror.passState(options))
  const target = yield* Activity.make({
    name: "start",
    success: Target,
    error: MirrorError,
    execute: Effect.gen(function*() {
      // a Microapp that does not exist fails here (NotFound), before the pass opens its row
      yield* Effect.flatMap(MicroappClient, (client) => client.query({ microAppID: options.microAppID, limit: 1 }))
      return {
        pass: Option.match(yield* state, {
          onNone: () => 1,
          onSome: ({ complete, pass }) => complete ? pass + 1 : pass
        })
      }
    })
  })
  return yield* Activity.make({
    name: "pass",
    success: Summary,
    error: MirrorError,
    execute: Effect.gen(function*() {
      yield* Effect.logInfo("MicroappMirror pass started")
      // an attempt that died after the pass completed, before its result was stored, left it whole
      const done = Option.flatMap(
        Option.filter(yield* state, ({ complete, pass }) => complete && pass >= target.pass),
        ({ summary }) => summary
      )
      return Option.isSome(done) ? done.value : yield* onMirrorDatabase(SqlMirror.run(options))
    }).pipe(
      Effect.onExit((exit) => Effect.logInfo(`MicroappMirror pass ended: ${exit._tag}`)),
      Effect.annotateLogs({
        microAppID: options.microAppID,
        table: options.table ?? SqlMirror.defaultTable,
        executionId
      })
    )
  })
}))

/** The advisory lock runners take in turn while they start: "microapp" in ASCII, a key no other user picks by chance. */
const startupLock = "7883941965834842224"

/**
 * Builds `layer` (a runner's cluster, `NodeClusterSocket.layer({ storage: "sql" })`, say) holding
 * a PostgreSQL advisory lock on the `SqlClient` it is given: runners started at the same moment on
 * an empty database create the cluster's tables one after another, instead of failing on each
 * other's `CREATE TABLE`. On another database, `layer` as it is.
 *
 * @since 0.2.0
 * @category layers
 */
export const startingOneAtATime = <A, E, R>(
  layer: Layer.Layer<A, E, R>
): Layer.Layer<A, E | SqlError.SqlError, R | SqlClient.SqlClient> =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (!sql.onDialectOrElse({ pg: () => true, orElse: () => false })) return layer
    const runner = yield* Effect.scope
    // a connection of its own, back in the pool once the layer is built: the lock is the session's
    const lockScope = yield* Scope.make()
    const built = Effect.gen(function*() {
      const connection = yield* Scope.extend(sql.reserve, lockScope)
      yield* connection.executeRaw(`SELECT pg_advisory_lock(${startupLock})`, [])
      return yield* Layer.buildWithScope(layer, runner).pipe(
        Effect.ensuring(Effect.ignore(connection.executeRaw(`SELECT pg_advisory_unlock(${startupLock})`, [])))
      )
    })
    return Layer.succeedContext(yield* Effect.ensuring(built, Scope.close(lockScope, Exit.void)))
  }))
