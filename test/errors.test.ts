import { describe, expect, it } from "@effect/vitest"
import { Data, Effect, Schema } from "effect"
import {
  describe as describeError,
  InvalidCheckpoint,
  InvalidInput,
  isInvalidCheckpoint,
  isMicroappError,
  MicroappError,
  NotFound,
  RateLimited,
  ScanInconsistent,
  Timeout,
  TooManyDeletes,
  TooManyRows,
  Transport,
  TypeId
} from "../src/index.js"

type Member = (typeof MicroappError.members)[number]

type Tagged = Exclude<Member, typeof InvalidCheckpoint>

/** A member's own name: a refused checkpoint shares its parent's `_tag`. */
const nameOf = (member: Member): string => member === InvalidCheckpoint ? "InvalidCheckpoint" : (member as Tagged)._tag

/** One error of a kind, with the fields a call would give it. */
const sampleOf = (member: Tagged): MicroappError => {
  const where = { method: "POST", path: "/api/microappdata" }
  switch (member._tag) {
    case "InvalidInput":
      return new InvalidInput({ ...where, input: "limit", reason: "must be positive" })
    case "Transport":
      return new Transport({ ...where, notSent: true, description: "connection refused" })
    case "UnexpectedResponse":
      return new member({ ...where, kind: "NotJson", reason: "the body is not valid JSON" })
    case "ScanInconsistent":
      return new ScanInconsistent({ ...where, microAppID: "m", position: 10, rowsEmitted: 9, pages: 2, reason: "r" })
    case "TooManyRows":
      return new TooManyRows({ microAppID: "m", max: 5 })
    case "TooManyDeletes":
      return new TooManyDeletes({
        microAppID: "m",
        deletes: 200,
        copy: 200,
        allowed: 100,
        given: false,
        atLeast: false
      })
    default:
      return new member({ ...where, status: 500 })
  }
}

/** One error of each kind; a checkpoint's refusal names no call. */
const samples: ReadonlyArray<MicroappError> = MicroappError.members.map((member) =>
  member === InvalidCheckpoint
    ? new InvalidCheckpoint({ input: "checkpoint.checksum", reason: "does not match", problem: "checksum" })
    : sampleOf(member as Tagged)
)

describe("error identity", () => {
  it("every error of the union is marked with the library's TypeId, one Symbol.for shared by every copy", () => {
    expect(samples.map((error) => error._tag)).toEqual([
      "InvalidInput",
      "InvalidInput",
      "Unauthorized",
      "Forbidden",
      "NotFound",
      "RateLimited",
      "ServerError",
      "Transport",
      "Timeout",
      "RequestRejected",
      "Redirected",
      "UnexpectedResponse",
      "ScanInconsistent",
      "TooManyRows",
      "TooManyDeletes"
    ])
    expect(TypeId).toBe(Symbol.for("effect-microapp/MicroappError"))
    for (const error of samples) {
      expect(isMicroappError(error), error._tag).toBe(true)
      expect(error[TypeId]).toBe(TypeId)
    }
  })

  it("an object of another library with the same _tag is not a MicroappError", () => {
    class Elsewhere extends Data.TaggedError("NotFound")<{ readonly message: string }> {}
    const strangers: ReadonlyArray<unknown> = [
      { _tag: "NotFound" },
      { _tag: "Timeout", message: "slow" },
      { _tag: "Transport", message: "reset", method: "POST", path: "/api/microappdata" },
      new Elsewhere({ message: "no such user" }),
      null,
      "NotFound"
    ]
    for (const stranger of strangers) expect(isMicroappError(stranger)).toBe(false)
  })

  it("each error's Schema has a namespaced identifier", () => {
    for (const member of MicroappError.members) {
      expect(String(member.ast)).toContain(`effect-microapp/MicroappError/${nameOf(member)}`)
      expect(member.identifier).toBe(`effect-microapp/MicroappError/${nameOf(member)}`)
    }
  })

  it("an error sent across a boundary as JSON comes back the same class, message and identity", () => {
    const encode = Schema.encodeSync(MicroappError)
    const decode = Schema.decodeUnknownSync(MicroappError)
    for (const error of samples.filter((error) => error._tag !== "Transport" || error.cause === undefined)) {
      const back = decode(JSON.parse(JSON.stringify(encode(error))))
      expect(back.constructor).toBe(error.constructor)
      expect(back.message).toBe(error.message)
      expect(describeError(back)).toBe(describeError(error))
      expect(isMicroappError(back)).toBe(true)
    }
  })

  it.effect("a refused checkpoint is an InvalidInput to catchTag and the types, told apart by its class and problem", () =>
    Effect.gen(function*() {
      const refused = new InvalidCheckpoint({ input: "checkpoint", reason: "is not JSON", problem: "not JSON" })
      const asInput: InvalidInput = refused
      const caught = yield* Effect.fail<MicroappError>(asInput).pipe(
        Effect.catchTag("InvalidInput", (error) => Effect.succeed(isInvalidCheckpoint(error) ? error.problem : "call"))
      )
      expect(caught).toBe("not JSON")
      expect(refused).toBeInstanceOf(InvalidInput)
      expect(refused.method).toBeUndefined()
      expect(describeError(refused)).toBe("invalid checkpoint: is not JSON (InvalidInput)")
      expect(isInvalidCheckpoint(new InvalidInput({ input: "limit", reason: "must be positive" }))).toBe(false)
      expect(isMicroappError(refused)).toBe(true)
    }))

  it.effect("catchTag still picks errors by _tag", () =>
    Effect.gen(function*() {
      const caught = yield* Effect.fail<MicroappError>(new RateLimited({ method: "POST", path: "/p", status: 429 }))
        .pipe(
          Effect.catchTag("RateLimited", (error) => Effect.succeed(`waited on ${error.status}`)),
          Effect.catchTag("Timeout", () => Effect.succeed("timed out"))
        )
      expect(caught).toBe("waited on 429")
      const other = yield* Effect.flip(Effect.fail(new Timeout({ method: "POST", path: "/p", timeoutMillis: 5 })))
      expect(other.message).toBe("no response within 5 ms")
      expect(other).toBeInstanceOf(Timeout)
      expect(new NotFound({ method: "POST", path: "/p", rowID: "r1" }).message).toBe("row r1 not found")
    }))
})
