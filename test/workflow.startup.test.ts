/**
 * A fleet as docs/fleet.md starts it: runner processes (scratchpad/fleetRunner.ts) started at the
 * same moment on an empty PostgreSQL all come up; a run for a Microapp that does not exist fails
 * NotFound with no pass left open, beside a run of one that does; a schedule given to one runner
 * of four runs its ticks, wherever the cluster places the runs.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { SqlMirror } from "../src/sql/index.js"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"
import { bundled, cleanEnv, outputOf, runToEnd } from "./processSupport.js"
import { freshPostgresUrl, postgresClient, registeredRunners } from "./sqlDatabases.js"
import { eventually } from "./support/eventually.js"
import { freePort } from "./support/ports.js"

const missing = "64b7c0f1a2d3e4f5a6b7c000"

/**
 * Runners started in one synchronous step on new, empty databases (each with the extra environment
 * of its entry in `extras`), once all registered: the environment they share, the mirrors' URL,
 * and each runner's output so far.
 */
const fleet = (extras: ReadonlyArray<Readonly<Record<string, string>>>) =>
  Effect.gen(function*() {
    const server = yield* MicroappServer
    const clusterUrl = yield* freshPostgresUrl
    const mirrorUrl = yield* freshPostgresUrl
    const runnerFile = bundled("fleetRunner.ts", "workflow")
    const env = {
      ...cleanEnv,
      ENTITY_MESSAGE_POLL_INTERVAL: "1 second",
      CLUSTER_DATABASE_URL: clusterUrl,
      MIRROR_DATABASE_URL: mirrorUrl,
      MICROAPP_BASE_URL: server.baseUrl,
      MICROAPP_AUTH_TOKEN: server.credentials.authToken,
      MICROAPP_USER_ID: server.credentials.userId
    }
    const ports = yield* Effect.all(extras.map(() => Effect.promise(freePort)))
    // in one synchronous step: they create the cluster's tables at the same moment
    const runners = extras.map((extra, i) =>
      spawn(process.execPath, [runnerFile], {
        env: { ...env, ...extra, HOST: "127.0.0.1", PORT: String(ports[i]) }
      })
    )
    yield* Effect.addFinalizer(() => Effect.sync(() => runners.forEach((child) => child.kill("SIGKILL"))))
    const outputs = runners.map(outputOf)
    const dead = () => runners.flatMap((child, i) => child.exitCode === null ? [] : [outputs[i]?.stderr])
    const up = yield* eventually(
      Effect.map(registeredRunners(clusterUrl), (n) => ({ n, dead: dead() })),
      ({ dead, n }) => n === extras.length || dead.length > 0
    )
    expect(up.dead).toEqual([])
    expect(up.n).toBe(extras.length)
    return { env, mirrorUrl, outputs, dead }
  })

layer(MicroappServer.layer({ demoRows: 50 }), { excludeTestServices: true })((it) => {
  describe("a fleet started at once", () => {
    it.scoped(
      "three runners started at the same moment on an empty database all come up; a missing Microapp fails NotFound, no pass open",
      () =>
        Effect.gen(function*() {
          const { dead, env, mirrorUrl } = yield* fleet([{}, {}, {}])
          const clientFile = bundled("fleetClient.ts", "workflow")
          const run = yield* runToEnd(() =>
            spawn(process.execPath, [clientFile, projectsMicroAppID, missing], {
              env: { ...env, MIRROR_SLOT: "startup" },
              stdio: "pipe"
            })
          )
          expect(run.code).toBe(0)
          expect(run.stdout).toMatch(
            new RegExp(`^${projectsMicroAppID}: inserted 50, updated 0, deleted 0, unchanged 0, resumed 0\\n$`)
          )
          expect(run.stderr).toMatch(new RegExp(`^${missing}: NotFound: `))
          const passes = yield* Effect.provide(
            Effect.flatMap(SqlClient.SqlClient, (sql) =>
              sql<{ microapp_id: string; complete: number }>`SELECT microapp_id, complete FROM ${
                sql(SqlMirror.passesTable)
              }`),
            postgresClient(mirrorUrl)
          )
          expect(passes.map((row) => [row.microapp_id, Number(row.complete)])).toEqual([[projectsMicroAppID, 1]])
          expect(dead()).toEqual([])
        }).pipe(Effect.orDie),
      120_000
    )

    it.scoped(
      "a schedule given to one runner of four: its ticks run, every two seconds, three in a row",
      () =>
        Effect.gen(function*() {
          const schedule = { MIRROR_CRON: "*/2 * * * * *", MIRROR_MICROAPPS: projectsMicroAppID }
          const { dead, outputs } = yield* fleet([{}, {}, {}, schedule])
          const completed = () =>
            outputs.flatMap((output) => output.stdout.split("\n")).filter((line) =>
              line.includes("MicroappMirror run complete")
            )
          const runs = yield* eventually(Effect.sync(completed), (lines) => lines.length >= 3)
          expect(runs.length).toBeGreaterThanOrEqual(3)
          expect(dead()).toEqual([])
        }).pipe(Effect.orDie),
      120_000
    )
  })
})
