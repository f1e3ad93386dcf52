/**
 * A lock beside a file a command writes, so that two runs never write it at once: `FILE.lock`,
 * holding the pid and host of the run that holds it. It appears whole or not at all (written
 * under another name, then linked to its own, which fails if it exists). A lock whose run has
 * died on this host is taken over, so a run killed by SIGKILL leaves nothing stuck; one held on
 * another host is refused, as its run cannot be checked from here.
 *
 * @since 0.2.0
 */
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import { Effect, Either, Option, Random, type Scope } from "effect"
import * as os from "node:os"
import { type CommandFailed, UsageError } from "./exitCodes.js"
import { failedOn, readSmallFile } from "./fileSafety.js"

/** `PID HOST TOKEN`: the token tells this run's lock from an earlier one of the same pid. */
const holderLine = /^([1-9]\d*) (\S+) \S+\n$/

const isSystemError = (reason: string) => (error: PlatformError) =>
  error._tag === "SystemError" && error.reason === reason

/** Whether a process of this host is running: signal 0 checks without sending anything. */
const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it runs, as another user
    return !(error instanceof Error && "code" in error && error.code === "ESRCH")
  }
}

/**
 * The locks this process holds, by their text: a lock of this pid that is not among them was left
 * by an earlier process that had the same pid (a container restarted keeps its pids and host).
 */
const heldHere = new Set<string>()

/** Whether the run that wrote a lock of this host still runs. */
const holderRuns = (pid: number, text: string): boolean => pid === process.pid ? heldHere.has(text) : isRunning(pid)

/** Runs that keep taking the lock as it is freed win after this many tries. */
const maxTakeovers = 3

/**
 * Holds `TARGET.lock` until the scope closes; refused (a usage error naming the lock and the pid
 * holding it) while another live run holds it. Creating the lock is also the check that the
 * directory can be written: a failure is `cannot` with its reason, before anything else is done.
 *
 * @since 0.2.0
 * @category locks
 */
export const holdLock = (
  target: string,
  cannot: string
): Effect.Effect<void, UsageError | CommandFailed, FileSystem.FileSystem | Scope.Scope> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const lock = `${target}.lock`
    const token = (yield* Random.nextIntBetween(0, 0x7fffffff)).toString(36)
    const mine = `${process.pid} ${os.hostname()} ${token}\n`
    const held = readSmallFile(lock, 1024, "a lock of microapp")

    /** Moves a dead run's lock aside, then removes it only if it is the one judged dead. */
    const takeOver = (judged: string) =>
      Effect.gen(function*() {
        const aside = `${lock}.${process.pid}-${token}.stale`
        const moved = yield* Effect.either(fs.rename(lock, aside))
        if (Either.isLeft(moved)) {
          return yield* isSystemError("NotFound")(moved.left) ? Effect.void : failedOn(cannot)(moved.left)
        }
        const text = yield* Effect.mapError(fs.readFileString(aside), failedOn(cannot))
        // another run took it in the meantime: its lock goes back
        if (text !== judged) yield* Effect.ignore(fs.link(aside, lock))
        yield* Effect.ignore(fs.remove(aside))
      })

    const take = Effect.scoped(Effect.gen(function*() {
      const staging = `${lock}.${process.pid}-${token}`
      yield* Effect.acquireRelease(
        Effect.mapError(fs.writeFileString(staging, mine, { flag: "wx" }), failedOn(cannot)),
        () => Effect.ignore(fs.remove(staging))
      )
      for (let tries = 0; tries <= maxTakeovers; tries++) {
        const linked = yield* Effect.either(fs.link(staging, lock))
        if (Either.isRight(linked)) return
        if (!isSystemError("AlreadyExists")(linked.left)) return yield* failedOn(cannot)(linked.left)
        const text = yield* held
        if (Option.isNone(text)) continue // released in the meantime
        const holder = holderLine.exec(text.value)
        if (holder === null) {
          return yield* new UsageError({
            message: `${lock} is not a lock of microapp: remove it if no run uses ${target}`
          })
        }
        const [, pid = "", host = ""] = holder
        const here = host === os.hostname()
        if (!here || holderRuns(Number(pid), text.value)) {
          return yield* new UsageError({
            message: `${target} is in use by another run (pid ${pid} on ${host}, lock ${lock}): ` +
              (here ? "wait for it to end" : `wait for it to end; if it has, remove ${lock}`)
          })
        }
        yield* takeOver(text.value)
      }
      return yield* new UsageError({ message: `${lock} is taken by other runs as fast as it is freed: try again` })
    }))

    yield* Effect.acquireRelease(
      Effect.tap(take, () => heldHere.add(mine)),
      () =>
        Effect.ignore(
          Effect.flatMap(held, (text) => Option.contains(text, mine) ? fs.remove(lock) : Effect.void)
        ).pipe(Effect.ensuring(Effect.sync(() => heldHere.delete(mine))))
    )
  })
