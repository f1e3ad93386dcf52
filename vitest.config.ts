import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/globalSetup.ts", "test/postgres.ts"],
    // one file per core: no test depends on how fast it runs (time is the test clock's), and each
    // file has emulators of its own on ephemeral ports
    maxWorkers: Math.max(2, availableParallelism()),
    minWorkers: 1,
    // a hang detector, not a measure: the property tests take 10-20 s on a busy two-core machine
    testTimeout: 120_000,
    hookTimeout: 60_000
  }
})
