import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/globalSetup.ts"],
    // one file per core: no test depends on how fast it runs (time is the test clock's), and each
    // file has emulators of its own on ephemeral ports
    maxWorkers: Math.max(2, availableParallelism()),
    minWorkers: 1,
    testTimeout: 30_000,
    hookTimeout: 30_000
  }
})
