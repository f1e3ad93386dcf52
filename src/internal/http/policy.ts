/**
 * Each call's own timeout and retry policy, checked against their bounds before anything is sent,
 * over the client's; and the retry schedule of each endpoint and policy, built once.
 */
import { type Duration, Either, type Schedule, Schema } from "effect"
import type { RetryOptions } from "../../MicroappClient.js"
import { InvalidInput, type RequestError } from "../../MicroappError.js"
import * as Bounds from "../bounds.js"
import { bounds } from "../limits.js"
import type { Endpoint } from "./endpoints.js"
import { retrySchedule } from "./retry.js"

/** What a call may override of the client's settings. */
export interface CallSettings {
  readonly timeout?: Duration.DurationInput | undefined
  /** Replaces the client's policy (`false`), or the fields it gives. */
  readonly retry?: RetryOptions | false | undefined
}

/** How one call is retried: its policy, and its schedule for each endpoint (none when it is not retried). */
export interface RetryPolicy {
  readonly retry: RetryOptions | false
  readonly schedules: Map<string, Schedule.Schedule<unknown, RequestError> | undefined>
}

const decodeTimeout = Schema.decodeUnknownEither(Bounds.RequestTimeout)
const checkRetry = Bounds.validateEither(Schema.Struct({ retry: Bounds.Retry }), undefined)

/** A call with `retry: false`: one attempt, whatever the client's policy. */
const noRetry: RetryPolicy = { retry: false, schedules: new Map() }

/** The policies of one client, over its own `timeout`, `retry` and `maxPause`. */
export const makePolicies = (client: {
  readonly timeout: Duration.Duration
  readonly retry: RetryOptions | false
  readonly maxPause: Duration.Duration
}) => {
  const clientPolicy: RetryPolicy = { retry: client.retry, schedules: new Map() }
  // a scan hands every page the same options: its override is checked, and its schedules built, once
  const overrides = new WeakMap<RetryOptions, Either.Either<RetryPolicy, InvalidInput>>()

  const policyOf = (call: CallSettings, endpoint: Endpoint): Either.Either<RetryPolicy, InvalidInput> => {
    const retry = call.retry
    if (retry === undefined) return Either.right(clientPolicy)
    if (retry === false) return Either.right(noRetry)
    const known = overrides.get(retry)
    if (known !== undefined) return known
    const policy = Either.map(checkRetry({ retry }), (): RetryPolicy => ({
      retry: client.retry === false ? retry : { ...client.retry, ...retry },
      schedules: new Map()
    }))
    // an InvalidInput names the call it was refused for, so only a policy is kept
    if (Either.isRight(policy)) overrides.set(retry, policy)
    return Either.mapLeft(
      policy,
      ({ input, reason }) => new InvalidInput({ method: "POST", path: endpoint.path, input, reason })
    )
  }

  const timeoutOf = (call: CallSettings, endpoint: Endpoint): Either.Either<Duration.Duration, InvalidInput> =>
    call.timeout === undefined ? Either.right(client.timeout) : Either.mapLeft(
      decodeTimeout(call.timeout),
      () =>
        new InvalidInput({
          method: "POST",
          path: endpoint.path,
          input: "timeout",
          reason: Bounds.durationReason(Bounds.minTimeout, bounds.timeout)
        })
    )

  // one schedule per endpoint and policy for the client's life, not one per call (a scan makes many)
  const scheduleOf = (
    policy: RetryPolicy,
    endpoint: Endpoint
  ): Schedule.Schedule<unknown, RequestError> | undefined => {
    if (policy.retry === false) return undefined
    if (policy.schedules.has(endpoint.path)) return policy.schedules.get(endpoint.path)
    const schedule = retrySchedule(policy.retry, endpoint, client.maxPause)
    policy.schedules.set(endpoint.path, schedule)
    return schedule
  }

  return { policyOf, timeoutOf, scheduleOf } as const
}
