/**
 * A vitest setup file: the Effect logger's lines (logfmt on the console: retries, pauses, rows that
 * failed their Schema) are dropped in the test worker, unless MICROAPP_TEST_LOGS is set. Each line is
 * a message from the worker to vitest's main process, and a thousand of them slowed a loaded machine's
 * run into vitest's RPC timeout; no test reads the console (those that check logs install a Logger).
 */
const logLine = /^timestamp=\S+ level=/

// a worker that keeps its modules between files (the unit project's) runs this file for each one
const quieted = Symbol.for("effect-microapp/test/quietLogs")

if (process.env["MICROAPP_TEST_LOGS"] === undefined && !(quieted in console)) {
  Object.defineProperty(console, quieted, { value: true })
  for (const method of ["log", "info", "warn", "error", "debug", "trace"] as const) {
    const write = console[method].bind(console)
    console[method] = (...args: Array<unknown>) => {
      if (typeof args[0] === "string" && logLine.test(args[0])) return
      write(...args)
    }
  }
}
