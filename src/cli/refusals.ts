/**
 * Refusals of the files a resumable run trusts (a checkpoint, a state), as usage errors that name
 * the file, say what is wrong with it and what to do then.
 *
 * @since 0.2.0
 */
import type { InvalidCheckpoint } from "../MicroappError.js"
import { UsageError } from "./exitCodes.js"

/**
 * A refusal's `message`, and then what to do about it when there is a `remedy`.
 *
 * @since 0.2.0
 * @category refusals
 */
export const withRemedy = (message: string, remedy: string | undefined) =>
  remedy === undefined ? message : `${message}; ${remedy}`

const unparsed = new Set<InvalidCheckpoint["problem"]>(["not JSON", "too large", "too deep"])

/**
 * A checkpoint file the codec refused, as a usage error: changed since it was written (its
 * checksum), or not `what` it should be, and where not; then `remedy`, how to start again.
 *
 * @since 0.2.0
 * @category refusals
 */
export const refusedFile = (file: string, what: string, remedy: string) => (error: InvalidCheckpoint) =>
  new UsageError({
    message: error.problem === "checksum"
      ? `${file}: changed or damaged since it was written (its checksum does not match its content): ${remedy}`
      : withRemedy(
        `${file} is not ${what}: ${
          error.input !== "" ? `${error.input}: ` : unparsed.has(error.problem) ? "it " : ""
        }${error.reason}`,
        remedy
      )
  })
