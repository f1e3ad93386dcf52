import * as fs from "node:fs"
import { availableParallelism } from "node:os"
import * as path from "node:path"
import { defineConfig } from "vitest/config"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/**
 * What makes a test file an integration test: it runs a child process (the built bin, a bundled
 * program, npm), reads dist/, or uses the run's PostgreSQL. Read from its source, so that a new file
 * lands in the right project without a list to keep; a unit file that needs one of them fails loudly
 * (no dist/, no `postgresUrl`), never silently.
 */
const needsServices =
  /\bprocessSupport\b|node:child_process|\bdist\/|\b(?:databases|freshPostgres\w*|postgresClient|startPostgres)\b/

const testFiles = fs.readdirSync(path.join(import.meta.dirname, "test"))
  .filter((file) => file.endsWith(".test.ts"))
  .map((file) => `test/${file}`)
const integration = testFiles.filter((file) =>
  needsServices.test(fs.readFileSync(path.join(import.meta.dirname, file), "utf8"))
)
const unit = testFiles.filter((file) => !integration.includes(file))

/** Each file's time in a whole run on a quiet two-core machine, in ms: the order of a fresh clone's first run. */
const measured: Readonly<Record<string, number>> = JSON.parse(
  fs.readFileSync(path.join(import.meta.dirname, "test", "support", "durations.json"), "utf8")
)

/**
 * The longest files first, by this machine's cache of the last run and else by `measured`: with a
 * worker a core, a long file started last is the run's tail (vitest alone orders files it has no
 * times for by their size, and a fresh clone's first run took 211 s against 176 s).
 */
class LongestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const timeOf = (file: TestSpecification) => {
      const key = `${file.project.name}:${path.relative(this.ctx.config.root, file.moduleId)}`
      return this.ctx.cache.getFileTestResults(key)?.duration ?? measured[key] ?? 0
    }
    return [...files].sort((a, b) => timeOf(b) - timeOf(a))
  }
}

export default defineConfig({
  test: {
    // one file per core: no test depends on how fast it runs (time is the test clock's), and each
    // file has emulators of its own on ephemeral ports
    maxWorkers: Math.max(2, availableParallelism()),
    minWorkers: 1,
    // a hang detector, not a measure: the property tests take 10-20 s on a busy two-core machine
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // a loaded machine delays a worker's last reports and its exit: that must not fail a run that passed
    teardownTimeout: 60_000,
    setupFiles: ["test/support/quietLogs.ts", "test/support/freshIt.ts"],
    sequence: { sequencer: LongestFirst },
    // read by each pool itself, not per project: unit files run in threads, integration files in
    // forks. Neither pool re-imports effect and the package for each file: the files share no global
    // state (stdio, signals, environment and clock are each test's own, children are its own)
    poolOptions: { threads: { isolate: false }, forks: { isolate: false } },
    projects: [
      {
        extends: true,
        // the two projects run at once: integration files wait on children and databases, unit
        // files keep the cores busy meanwhile
        test: { name: "unit", include: unit, pool: "threads", isolate: false }
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: integration,
          globalSetup: ["test/globalSetup.ts", "test/postgres.ts"]
        }
      }
    ]
  }
})
