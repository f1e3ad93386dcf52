/**
 * The mirror fleet as users run it: three runner processes (scratchpad/fleetRunner.ts) on one
 * PostgreSQL, the client (scratchpad/fleetClient.ts) submitting mirrors of four Microapps of the
 * emulator, under faults and drift; the runner holding a pass is killed with SIGKILL in its
 * middle. Every run completes on a surviving runner, each mirror equals its Microapp after a
 * still pass, and no two attempts of one Microapp's pass overlap.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Duration, Effect, Fiber, Option, Schema } from "effect"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { SqlMirror } from "../src/sql/index.js"
import { MicroappServer } from "../src/testing/index.js"
import { bundled, cleanEnv, drift, drifted, endOf, outputOf, runToEnd } from "./processSupport.js"
import { freshPostgresUrl, postgresClient, registeredRunners, storedData } from "./sqlDatabases.js"
import { numbersTable } from "./support.js"
import { eventually, whileProgressing } from "./support/eventually.js"
import { freePort } from "./support/ports.js"

const rowsEach = 600
const pageSize = 10

/** Four Microapps of `rowsEach` rows, their ids apart (ids are unique across Microapps). */
const tables = [1, 2, 3, 4].map((k) => {
  const table = numbersTable(`00000000000000000000f00${k}`, rowsEach)
  return { ...table, rows: table.rows.map((row) => ({ ...row, _id: `${k}${row._id.slice(1)}` })) }
})
const microApps = tables.map((table) => table.microAppID)

/** Failover in seconds, not the default 35: see docs/fleet.md. */
const sharding = {
  SHARD_LOCK_EXPIRATION: "6 seconds",
  SHARD_LOCK_REFRESH_INTERVAL: "2 seconds",
  ENTITY_MESSAGE_POLL_INTERVAL: "1 second"
}

interface Attempt {
  readonly microAppID: string
  readonly runner: number
  readonly start: number
  /** When its runner logged its end, or was killed. */
  readonly end: number | undefined
}

/** A line of a runner's log (`Logger.json`). */
const LogLine = Schema.parseJson(Schema.Struct({
  message: Schema.String,
  timestamp: Schema.String,
  annotations: Schema.Struct({ microAppID: Schema.optional(Schema.String) })
}))

/** The pass attempts a runner's log shows, in order: each started, and ended unless it still runs. */
const attemptsOf = (runner: number, log: string): ReadonlyArray<Attempt> => {
  const attempts: Array<Attempt> = []
  for (const text of log.split("\n")) {
    const line = Option.getOrUndefined(Schema.decodeUnknownOption(LogLine)(text))
    const microAppID = line?.annotations.microAppID
    if (line === undefined || microAppID === undefined) continue
    const at = Date.parse(line.timestamp)
    if (line.message === "MicroappMirror pass started") attempts.push({ microAppID, runner, start: at, end: undefined })
    if (line.message.startsWith("MicroappMirror pass ended")) {
      const open = attempts.findIndex((attempt) => attempt.microAppID === microAppID && attempt.end === undefined)
      const attempt = attempts[open]
      if (attempt !== undefined) attempts[open] = { ...attempt, end: at }
    }
  }
  return attempts
}

const emulator = MicroappServer.layer({ tables, latency: "10 millis" })

layer(emulator, { excludeTestServices: true })((it) => {
  describe("mirrors as durable workflows", () => {
    it.scoped(
      "a runner killed in the middle of a pass: every run completes elsewhere, every mirror equals its Microapp, no pass overlaps another",
      () =>
        Effect.gen(function*() {
          const server = yield* MicroappServer
          yield* server.configure({ faults: { seed: 11, rate: 0.03, kinds: ["http500", "http503", "drop"] } })
          const clusterUrl = yield* freshPostgresUrl
          const mirrorUrl = yield* freshPostgresUrl
          const mirrorDatabase = postgresClient(mirrorUrl)
          const onMirror = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
            Effect.provide(effect, mirrorDatabase)
          const runnerFile = bundled("fleetRunner.ts", "workflow")
          const clientFile = bundled("fleetClient.ts", "workflow")
          const env = {
            ...cleanEnv,
            ...sharding,
            CLUSTER_DATABASE_URL: clusterUrl,
            MIRROR_DATABASE_URL: mirrorUrl,
            MICROAPP_BASE_URL: server.baseUrl,
            MICROAPP_AUTH_TOKEN: server.credentials.authToken,
            MICROAPP_USER_ID: server.credentials.userId
          }

          const runners = yield* Effect.forEach([0, 1, 2], () =>
            Effect.gen(function*() {
              const port = yield* Effect.promise(freePort)
              const child = spawn(process.execPath, [runnerFile], {
                env: { ...env, HOST: "127.0.0.1", PORT: String(port) },
                stdio: "pipe"
              })
              yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
              return { child, output: outputOf(child) }
            }))
          const attempts = () => runners.flatMap((runner, i) => attemptsOf(i, runner.output.stdout))
          // what moves while the fleet works: the emulator's requests and the runners' logs
          const progress = Effect.map(server.log.requests, (log) =>
            [
              log.at(-1)?.seq,
              ...runners.map(({ output }) => output.stdout.length + output.stderr.length)
            ].join(","))
          const lastLines = () =>
            runners.map(({ output }, i) =>
              `runner ${i}: ${`${output.stdout}${output.stderr}`.trim().split("\n").slice(-3).join("\n  ")}`
            ).join("\n")
          /** A wait bounded by the fleet standing still, not by the time a busy machine takes. */
          const waitFor = <A, E, R>(what: string, wait: Effect.Effect<A, E, R>) =>
            whileProgressing(wait, { what, progress, detail: lastLines })

          // every runner registered before the mirrors are submitted, so that shards are spread
          yield* waitFor(
            "three runners registered",
            eventually(registeredRunners(clusterUrl), (n) => n === 3, "three runners registered", Duration.infinity)
          )

          const touched = drifted()
          const drifting = yield* Effect.fork(Effect.all(microApps.map((id) => drift(server, id, touched)), {
            concurrency: "unbounded"
          }))

          const submit = (slot: string) =>
            runToEnd(() =>
              spawn(process.execPath, [clientFile, ...microApps], {
                env: { ...env, MIRROR_SLOT: slot, MIRROR_PAGE_SIZE: String(pageSize) },
                stdio: "pipe"
              })
            )
          const submitted = yield* Effect.fork(submit("failover"))
          const midway = "a pass 4 commits in, not complete, on a runner"

          // a pass some commits in, not done: its runner dies
          const commitsOf = (microAppID: string) =>
            onMirror(Effect.flatMap(SqlClient.SqlClient, (sql) =>
              sql<{ commits: number; complete: number }>`SELECT commits, complete FROM ${
                sql(SqlMirror.passesTable)
              } WHERE microapp_id = ${microAppID}`)).pipe(
                Effect.map(([row]) =>
                  row !== undefined && row.complete === 0 && row.commits >= 4
                ),
                Effect.orElseSucceed(() => false)
              )
          const victim = yield* waitFor(
            midway,
            eventually(
              Effect.flatMap(
                Effect.sync(() => attempts().filter((attempt) => attempt.end === undefined)),
                (running) =>
                  Effect.map(
                    Effect.filter(running, (attempt) => commitsOf(attempt.microAppID)),
                    (midway) => midway[0]
                  )
              ),
              (attempt) => attempt !== undefined,
              midway,
              Duration.infinity
            )
          )
          if (victim === undefined) return expect.unreachable()
          const killed = runners[victim.runner]
          if (killed === undefined) return expect.unreachable()
          killed.child.kill("SIGKILL")
          const killedAt = Date.now()
          expect(yield* endOf(killed.child as ChildProcessWithoutNullStreams)).toEqual({
            code: null,
            signal: "SIGKILL"
          })

          const run = yield* waitFor("the client's four runs to end, one on a surviving runner", Fiber.join(submitted))
          expect(run.code).toBe(0)
          const summaries = run.stdout.trim().split("\n").sort()
          expect(summaries.map((line) => line.split(":")[0])).toEqual([...microApps].sort())
          for (const line of summaries) {
            expect(line).toMatch(/: inserted \d+, updated \d+, deleted \d+, unchanged \d+, resumed \d+$/)
          }
          // the killed pass went on from its commits on a surviving runner
          const victimLine = summaries.find((line) => line.startsWith(victim.microAppID)) ?? ""
          expect(victimLine).toMatch(/resumed [1-9]/)

          const all = attempts()
          const endOfAttempt = (attempt: Attempt) =>
            attempt.end ?? (attempt.runner === victim.runner ? killedAt : Infinity)
          for (const microAppID of microApps) {
            const ofMicroapp = all.filter((attempt) => attempt.microAppID === microAppID).sort((a, b) =>
              a.start - b.start
            )
            const last = ofMicroapp.at(-1)
            expect(last?.end, microAppID).toBeDefined()
            // a run the killed runner finished before it died counts; any other ended elsewhere
            expect(last?.runner !== victim.runner || (last.end ?? Infinity) <= killedAt, microAppID).toBe(true)
            for (let i = 1; i < ofMicroapp.length; i++) {
              const before = ofMicroapp[i - 1]
              const after = ofMicroapp[i]
              if (before === undefined || after === undefined) continue
              expect(after.start, `${microAppID}: an attempt began before the one before ended`)
                .toBeGreaterThanOrEqual(endOfAttempt(before))
            }
          }
          expect(all.filter((attempt) => attempt.microAppID === victim.microAppID).length).toBeGreaterThanOrEqual(2)

          // the table stands still: one more run of each, then each mirror is its Microapp exactly
          yield* Fiber.interrupt(drifting)
          yield* server.configure({ faults: undefined })
          const still = yield* waitFor("the client's four runs on a still table to end", submit("still"))
          expect(still.code).toBe(0)
          expect(still.stdout.trim().split("\n")).toHaveLength(microApps.length)
          for (const microAppID of microApps) {
            const expected = new Map((yield* server.rows.table(microAppID)).map((row) => [String(row["_id"]), row]))
            const stored = yield* onMirror(Effect.flatMap(SqlClient.SqlClient, (sql) =>
              sql<
                { row_id: string; data: unknown }
              >`SELECT row_id, data FROM microapp_rows WHERE microapp_id = ${microAppID}`))
            expect(stored.map((row) => row.row_id).sort(), microAppID).toEqual([...expected.keys()].sort())
            for (const row of stored) expect(storedData(row.data), row.row_id).toEqual(expected.get(row.row_id))
          }
          expect(touched.removed.size).toBeGreaterThan(0)
        }).pipe(Effect.orDie),
      // a ceiling only: each wait above fails once the fleet has stood still for 60 s, naming what it waited for
      600_000
    )
  })
})
