/**
 * A fleet as docs/fleet.md starts it: the page's commands run as written (but for the database,
 * the addresses and the ports); runner processes (scratchpad/fleetRunner.ts) started at the same
 * moment on an empty PostgreSQL all come up; a run for a Microapp that does not exist fails
 * NotFound with no pass left open, beside a run of one that does; a schedule given to one of them
 * runs its ticks, wherever the cluster places the runs.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { SqlMirror } from "../src/sql/index.js"
import { MicroappServer, peopleMicroAppID, projectsMicroAppID } from "../src/testing/index.js"
import { root } from "./cliSupport.js"
import { bin, bundled, cleanEnv, outputOf, runToEnd } from "./processSupport.js"
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
    // a runner that ended, how (a signal leaves no exit code) and what it said
    const dead = () =>
      runners.flatMap((child, i) =>
        child.exitCode === null && child.signalCode === null
          ? []
          : [`exit ${child.exitCode}, signal ${child.signalCode}: ${outputs[i]?.stderr ?? ""}`]
      )
    const up = yield* eventually(
      Effect.map(registeredRunners(clusterUrl), (n) => ({ n, dead: dead() })),
      ({ dead, n }) => n === extras.length || dead.length > 0
    )
    expect(up.dead).toEqual([])
    expect(up.n).toBe(extras.length)
    return { env, mirrorUrl, outputs, dead }
  })

/** `poll` again until `check` holds: no deadline but the test's own, as processes start slowly on a busy machine. */
const until = <A, E, R>(poll: Effect.Effect<A, E, R>, check: (value: A) => boolean): Effect.Effect<A, E, R> =>
  Effect.flatMap(
    poll,
    (value) => check(value) ? Effect.succeed(value) : Effect.zipRight(Effect.sleep("50 millis"), until(poll, check))
  )

/** The shell blocks of docs/fleet.md's walk-through: the emulator's command, then the fleet's. */
const fleetPage = () => {
  const page = fs.readFileSync(path.join(root, "docs", "fleet.md"), "utf8")
  const blocks = [...page.matchAll(/```sh\n([\s\S]*?)```/g)].map((found) => found[1] ?? "")
  const serve = blocks.find((block) => block.startsWith("microapp serve "))?.trim()
  const fleet = blocks.find((block) => block.startsWith("export CLUSTER_DATABASE_URL="))
  if (serve === undefined || fleet === undefined) return expect.fail("docs/fleet.md's walk-through is missing")
  return { serve, fleet }
}

describe("docs/fleet.md", () => {
  it.scoped(
    "the walk-through's commands, as written but for the database, addresses and ports: the runs' summaries as the page shows them, four runners up",
    () =>
      Effect.gen(function*() {
        const { fleet, serve } = fleetPage()
        const emulatorPort = yield* Effect.promise(freePort)
        const emulator = spawn(
          process.execPath,
          [bin, ...serve.replace(/^microapp /, "").replace("8787", String(emulatorPort)).split(" ")],
          { env: cleanEnv }
        )
        yield* Effect.addFinalizer(() => Effect.sync(() => emulator.kill("SIGKILL")))
        const served = outputOf(emulator)
        yield* until(Effect.sync(() => served.stdout), (out) => out.includes(`:${emulatorPort}`))
        const clusterUrl = yield* freshPostgresUrl
        let script = fleet
          .replace("postgres://fleet:secret@127.0.0.1:5432/fleet", clusterUrl)
          .replace("http://127.0.0.1:8787", `http://127.0.0.1:${emulatorPort}`)
        for (const port of ["34431", "34432", "34433", "34434"]) {
          script = script.replace(port, String(yield* Effect.promise(freePort)))
        }
        // a group of its own: the runners the script leaves in the background go with it
        const shell = spawn("bash", ["-c", script], { cwd: root, env: cleanEnv, detached: true })
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => shell.pid !== undefined && process.kill(-shell.pid, "SIGKILL"))
        )
        const output = outputOf(shell)
        const [people, projects] = ["64b7c0f1a2d3e4f5a6b7c8d9", "64b7c0f1a2d3e4f5a6b7c8da"]
        const summaries = () => output.stdout.split("\n").filter((line) => /^[0-9a-f]{24}: /.test(line))
        yield* until(
          Effect.sync(() => ({ summaries: summaries(), exited: shell.exitCode })),
          ({ exited, summaries }) => summaries.length === 2 || exited !== null
        )
        const shown = /^# (\S+: inserted \d+, updated 0, deleted 0, unchanged 0, resumed 0) \(/m.exec(fleet)?.[1]
        expect(summaries()).toContain(shown)
        expect(shown?.startsWith(`${projects}: `)).toBe(true)
        expect(summaries().find((line) => line.startsWith(`${people}: `))).toMatch(
          /: inserted [1-9]\d*, updated 0, deleted 0, unchanged 0, resumed 0$/
        )
        const runners = yield* until(registeredRunners(clusterUrl), (n) => n === 4 || shell.exitCode !== null)
        expect(runners, output.stderr).toBe(4)
        expect(shell.exitCode, output.stderr).toBeNull()
      }).pipe(Effect.orDie),
    240_000
  )
})

layer(MicroappServer.layer({ demoRows: 50 }), { excludeTestServices: true })((it) => {
  describe("a fleet started at once", () => {
    it.scoped(
      "four runners started at the same moment on an empty database all come up; a missing Microapp fails NotFound, no pass open; a schedule given to one of them runs its ticks, every two seconds, three in a row",
      () =>
        Effect.gen(function*() {
          // the schedule mirrors another Microapp than the client's runs, into the same database
          const schedule = { MIRROR_CRON: "*/2 * * * * *", MIRROR_MICROAPPS: peopleMicroAppID }
          const { dead, env, mirrorUrl, outputs } = yield* fleet([{}, {}, {}, schedule])
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
              } WHERE microapp_id IN (${projectsMicroAppID}, ${missing})`),
            postgresClient(mirrorUrl)
          )
          expect(passes.map((row) => [row.microapp_id, Number(row.complete)])).toEqual([[projectsMicroAppID, 1]])

          const completed = () =>
            outputs.flatMap((output) =>
              output.stdout.split("\n")
            ).filter((line) =>
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
