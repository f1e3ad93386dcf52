/**
 * Each call's error channel names only the errors it can raise: checked at compile time (the
 * `typeChecks` below fail `npm run check` if a channel grows or shrinks), and at run time for the
 * errors the emulator gives.
 */
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import {
  Changes,
  Checkpoint,
  type CollectError,
  type GetRowError,
  type InvalidCheckpoint,
  type InvalidInput,
  isMicroappError,
  Microapp,
  MicroappClient,
  type QueryError,
  type RequestError,
  type ScanError,
  type ScanInconsistent,
  TypeId,
  type UpdateRowError
} from "../src/index.js"
import { SqlMirror } from "../src/sql/index.js"
import { Projects, projectsMicroAppID } from "../src/testing/index.js"
import { MicroappMirror } from "../src/workflow/index.js"
import { withEmulator } from "./support.js"

type ErrorOf<T> = T extends Effect.Effect<infer _A, infer E, infer _R> ? E
  : T extends Stream.Stream<infer _A, infer E, infer _R> ? E
  : never

/** Handles every member of a request's errors: nothing is left. */
const handled = <A>(call: Effect.Effect<A, RequestError>) =>
  call.pipe(Effect.catchTags({
    InvalidInput: () => Effect.void,
    Unauthorized: () => Effect.void,
    Forbidden: () => Effect.void,
    NotFound: () => Effect.void,
    RateLimited: () => Effect.void,
    ServerError: () => Effect.void,
    Transport: () => Effect.void,
    Timeout: () => Effect.void,
    RequestRejected: () => Effect.void,
    Redirected: () => Effect.void,
    UnexpectedResponse: () => Effect.void
  }))

/** Compile-time checks: `npm run check` fails if any of these does not hold. */
export const typeChecks = Effect.gen(function*() {
  const client = yield* MicroappClient
  const options = { microAppID: projectsMicroAppID }
  expectTypeOf<ErrorOf<ReturnType<typeof client.getRow>>>().toEqualTypeOf<GetRowError>()
  expectTypeOf<ErrorOf<ReturnType<typeof client.query>>>().toEqualTypeOf<QueryError>()
  expectTypeOf<ErrorOf<ReturnType<typeof client.queryRaw>>>().toEqualTypeOf<QueryError>()
  expectTypeOf<ErrorOf<ReturnType<typeof client.updateRow>>>().toEqualTypeOf<UpdateRowError>()
  expectTypeOf<ErrorOf<ReturnType<typeof client.rows>>>().toEqualTypeOf<ScanError>()
  expectTypeOf<ErrorOf<ReturnType<typeof client.collect>>>().toEqualTypeOf<CollectError>()
  expectTypeOf<GetRowError>().toEqualTypeOf<RequestError>()
  expectTypeOf<ScanError>().toEqualTypeOf<RequestError | ScanInconsistent>()
  // a catchTags over every member leaves never
  expectTypeOf<ErrorOf<ReturnType<typeof handled>>>().toEqualTypeOf<never>()
  // @ts-expect-error getRow never fails with ScanInconsistent
  yield* client.getRow("x").pipe(Effect.catchTag("ScanInconsistent", () => Effect.void))
  // @ts-expect-error query never fails with TooManyRows
  yield* client.query(options).pipe(Effect.catchTag("TooManyRows", () => Effect.void))
  // @ts-expect-error updateRow never fails with ScanInconsistent
  yield* client.updateRow({ rowID: "x", rowData: {} }).pipe(Effect.catchTag("ScanInconsistent", () => Effect.void))
  // @ts-expect-error a scan never fails with TooManyRows: only collect does
  yield* Stream.runDrain(client.rows(options)).pipe(Effect.catchTag("TooManyRows", () => Effect.void))
  yield* client.collect({ ...options, max: 1 }).pipe(Effect.catchTag("TooManyRows", () => Effect.void))
  const projects = yield* Microapp.bind(Projects)
  expectTypeOf(projects.getRow).returns.toEqualTypeOf<
    Effect.Effect<Effect.Effect.Success<ReturnType<typeof projects.getRow>>, GetRowError>
  >()
  expectTypeOf<ErrorOf<ReturnType<typeof projects.rows>>>().toEqualTypeOf<ScanError>()
  expectTypeOf<ErrorOf<ReturnType<typeof projects.collect>>>().toEqualTypeOf<CollectError>()
  // a refused checkpoint is an InvalidCheckpoint, which the fixed signature's InvalidInput still names
  expectTypeOf<ErrorOf<ReturnType<typeof Checkpoint.fromJson>>>().toEqualTypeOf<InvalidCheckpoint>()
  expectTypeOf<ErrorOf<ReturnType<typeof Changes.fromJson>>>().toEqualTypeOf<InvalidCheckpoint>()
  expectTypeOf(Checkpoint.fromJson).toExtend<(text: string) => Effect.Effect<Checkpoint.Checkpoint, InvalidInput>>()
  expectTypeOf<ErrorOf<ReturnType<typeof Checkpoint.withIds<never, never>>>>().toEqualTypeOf<InvalidCheckpoint>()
  expectTypeOf<ErrorOf<ReturnType<typeof Changes.withIds<never, never>>>>().toEqualTypeOf<InvalidCheckpoint>()
  // toJson takes checkpoints only
  // @ts-expect-error a value that is not a checkpoint
  Changes.toJson({ phase: "scan" })
  // @ts-expect-error a scan checkpoint is not a pass's
  Changes.toJson(null as unknown as Checkpoint.Checkpoint)
  const mirrorRun: Effect.Effect<void, MicroappMirror.MirrorError> = Effect.void
  // @ts-expect-error a mirror's execution never fails with TooManyRows: it collects nothing
  yield* mirrorRun.pipe(Effect.catchTag("TooManyRows", () => Effect.void))
})

describe("error types per call", () => {
  it.layer(withEmulator({ demoRows: 30 }))((it) => {
    it.effect("the errors the emulator gives fall in each call's union, handled by their tags", () =>
      Effect.gen(function*() {
        const client = yield* MicroappClient
        const notFound = yield* Effect.flip(client.getRow("ffffffffffffffffffffffff"))
        expect(notFound._tag).toBe("NotFound")
        const handledTag = yield* handled(client.getRow("ffffffffffffffffffffffff")).pipe(Effect.as("handled"))
        expect(handledTag).toBe("handled")
        const tooMany = yield* Effect.flip(client.collect({ microAppID: projectsMicroAppID, max: 5 }))
        expect(tooMany._tag).toBe("TooManyRows")
      }))
  })

  it("the SQL mirror's and the workflow's errors carry the library's TypeId; neither is a call's error", () => {
    const concurrent = new SqlMirror.ConcurrentRun({ table: "t", microAppID: "m" })
    const database = new MicroappMirror.MirrorDatabaseError({ message: "disk full" })
    for (const error of [concurrent, database]) {
      expect(error[TypeId]).toBe(TypeId)
      expect(isMicroappError(error)).toBe(false)
    }
  })
})
