/**
 * First runs of `SqlMirror` at the same moment on an empty PostgreSQL: each creates the tables it
 * needs, and none fails on another's `CREATE TABLE` (PostgreSQL's `IF NOT EXISTS` does not guard
 * two sessions creating one table at once).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlMirror } from "../src/sql/index.js"
import { freshPostgresUrl, postgresClient } from "./sqlDatabases.js"

describe("SqlMirror on an empty PostgreSQL", () => {
  it.scoped("eight first runs at once, on three new databases: all create their tables, none fails", () =>
    Effect.gen(function*() {
      for (let round = 0; round < 3; round++) {
        const url = yield* freshPostgresUrl
        // a pool of its own per run, as separate processes have
        const states = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) =>
            Effect.either(
              Effect.provide(
                SqlMirror.passState({ microAppID: `64b7c0f1a2d3e4f5a6b7c0${i}0`, table: "together" }),
                Layer.orDie(postgresClient(url))
              )
            )),
          { concurrency: "unbounded" }
        )
        expect(states.filter((state) => state._tag === "Left").map((state) => String(state)), `round ${round}`)
          .toEqual([])
      }
    }))
})
