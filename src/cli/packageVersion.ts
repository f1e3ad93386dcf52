/**
 * The version of the installed effect-microapp, read from its package.json.
 *
 * @since 0.2.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { Effect, Schema } from "effect"

const PackageJson = Schema.parseJson(Schema.Struct({ version: Schema.String }))

/**
 * The package's version, from the package.json two levels above this module (src/cli or dist/cli);
 * `"unknown"` if it cannot be read.
 *
 * @since 0.2.0
 * @category constants
 */
export const packageVersion: Effect.Effect<string, never, FileSystem.FileSystem | Path.Path> = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const file = yield* path.fromFileUrl(new URL("../../package.json", import.meta.url))
  return (yield* Schema.decodeUnknown(PackageJson)(yield* fs.readFileString(file))).version
}).pipe(Effect.orElseSucceed(() => "unknown"))
