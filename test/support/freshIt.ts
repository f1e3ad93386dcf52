/**
 * A vitest setup file: @effect/vitest's `layer` writes its runtime's `effect`, `scoped`, `prop`,
 * `flakyTest` and `layer` onto vitest's own `it`, which a worker that keeps its modules between
 * files (the unit project's) hands to the next file; each file starts from the package's own again.
 */
import { effect, flakyTest, it, layer, prop, scoped } from "@effect/vitest"

Object.assign(it, { effect, flakyTest, layer, prop, scoped })
