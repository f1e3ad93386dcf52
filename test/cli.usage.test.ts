/**
 * What the command line says to a mistyped flag (the flag meant, from the command's own) and what
 * its help shows: each value's placeholder as its text names it, and no line repeated under every
 * option.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { cli, expectFailure } from "./cliSupport.js"

describe("usage", () => {
  it.effect("an unknown flag a letter or a hyphen away from one of the command's: exit 2 naming the flag meant", () =>
    Effect.gen(function*() {
      const cases = [
        [
          ["rows", "x", "--pagesize", "5"],
          "error: Received unknown argument: '--pagesize'; --pagesize is not an option: did you mean --page-size?\n"
        ],
        [
          ["mirror", "x", "--db", "file:x.db", "--viw", "v"],
          "error: Received unknown argument: '--viw'; --viw is not an option: did you mean --view?\n"
        ],
        // a required option missing is what @effect/cli reports first
        [
          ["changes", "x", "--stat", "s", "--output", "o"],
          "error: Expected to find option: '--state'; --stat is not an option: did you mean --state?\n"
        ],
        [["rows", "x", "--zzz"], "error: Received unknown argument: '--zzz'\n"]
      ] as const
      for (const [args, line] of cases) {
        const run = yield* cli(args)
        expectFailure(run, 2, [])
        expect(run.stderr).toBe(line)
      }
    }))

  it.effect("--help names each value as its text does, and says 'optional' by the usage line's brackets alone", () =>
    Effect.gen(function*() {
      for (const [command, flag] of [["mirror", "--table TABLE"], ["describe", "--name NAME"]] as const) {
        const help = yield* cli([command, "--help"])
        expect(help.code).toBe(0)
        expect(help.stdout).toContain(`\n${flag}\n`)
        expect(help.stdout).toContain(`[${flag}]`)
        expect(help.stdout).not.toContain("This setting is optional")
        expect(help.stdout).not.toMatch(/^--[a-z-]+ text$/m)
      }
    }))
})
