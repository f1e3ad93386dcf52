/**
 * The client-wide limit of requests in flight, learned from the server's 429s and shared by every
 * call and scan of one client. A 429 halves it (multiplicative decrease); answers at the limit
 * raise it by one per limit's worth (additive increase), up to one below the level the server last
 * refused; after enough calm answers there, that level is tried again, waiting twice as long after
 * each refusal. `rateLimit.maxInFlight` caps it. After a pause, the held requests therefore go out
 * as permits allow, not all at once. A 429 without `Retry-After` cuts the same way, but only when
 * it came at a level the server has not answered at since its last cut: a server that refuses some
 * requests at any level (a rate limiter, a share refused at random) would otherwise bring the limit
 * down to one. The decisions are pure functions of recorded inputs.
 */
import { Effect, type Exit } from "effect"

/** The limit and what it learned. */
export interface Limit {
  /** Requests allowed in flight now. */
  readonly allowed: number
  /** The cap: `rateLimit.maxInFlight`. */
  readonly max: number
  /** The most in flight the server is taken to tolerate: one below the level of its last 429. */
  readonly tolerated: number
  /** Answers at the limit counted towards the next step up: one step per `allowed` of them. */
  readonly growth: number
  /** Answers at the tolerated level since it was set; `calmNeeded` of them raise it by one. */
  readonly calm: number
  readonly calmNeeded: number
  /** Cuts so far. A 429 to a request sent before the last cut belongs to the burst that cut answered. */
  readonly epoch: number
  /** The most in flight the server has answered at, below the level of its last 429 that cut. */
  readonly answered: number
}

/** A request as it was sent: the epoch then, and the client's requests in flight, itself included. */
export interface Ticket {
  readonly epoch: number
  readonly inFlight: number
}

/**
 * Calm answers before the tolerated level is first tried again; doubled by each cut, up to
 * `maxCalm`: a server that stays at its limit is probed ever more rarely, as each probe costs every
 * request of the client the pause of a 429.
 */
const firstCalm = 8
const maxCalm = 4096

export const initial = (max: number): Limit => ({
  allowed: max,
  max,
  tolerated: max,
  growth: 0,
  calm: 0,
  calmNeeded: firstCalm,
  epoch: 0,
  answered: 0
})

/** A 429 with `Retry-After`: the server refused the level the request was sent at. One cut per burst. */
export const afterRefusal = (limit: Limit, ticket: Ticket): Limit =>
  ticket.epoch !== limit.epoch ? limit : {
    ...limit,
    allowed: Math.max(1, Math.floor(Math.min(limit.allowed, ticket.inFlight) / 2)),
    tolerated: Math.max(1, ticket.inFlight - 1),
    growth: 0,
    calm: 0,
    calmNeeded: Math.min(maxCalm, limit.calmNeeded * 2),
    epoch: limit.epoch + 1,
    answered: Math.min(limit.answered, ticket.inFlight - 1)
  }

/**
 * A 429 without `Retry-After`: a cut, as `afterRefusal`, unless the server has answered at that
 * level since its last cut, which says the level is not what it refused. Such a refusal costs only
 * its own request's backoff, so the level is kept rather than given up on one refusal.
 */
export const afterSlowDown = (limit: Limit, ticket: Ticket): Limit => {
  if (ticket.inFlight <= limit.answered) return limit
  const cut = afterRefusal(limit, ticket)
  // the levels the server took since its last cut stay open, only the one above them is in doubt;
  // and probing it again costs one request's backoff, not a pause, so it is not put off longer
  return cut === limit ? limit : {
    ...cut,
    allowed: Math.max(cut.allowed, Math.min(limit.allowed, limit.answered)),
    calmNeeded: limit.calmNeeded
  }
}

/**
 * Any answer but a 429. Only one sent at the limit, since the last cut, says the server took that
 * much; any answer says the server took the level it was sent at.
 */
export const afterAnswer = (previous: Limit, ticket: Ticket): Limit => {
  const limit = ticket.inFlight <= previous.answered ? previous : { ...previous, answered: ticket.inFlight }
  if (ticket.epoch !== limit.epoch || ticket.inFlight < limit.allowed) return limit
  if (limit.allowed < limit.tolerated) {
    return limit.growth + 1 >= limit.allowed
      ? { ...limit, allowed: limit.allowed + 1, growth: 0 }
      : { ...limit, growth: limit.growth + 1 }
  }
  if (limit.tolerated >= limit.max) return limit
  return limit.calm + 1 >= limit.calmNeeded
    ? { ...limit, tolerated: limit.tolerated + 1, calm: 0 }
    : { ...limit, calm: limit.calm + 1 }
}

/** What the server did with a request: answered it, or refused it with a 429 without or with `Retry-After`. */
export type Outcome = "answered" | "slowDown" | "refused"

const decide: Record<Outcome, (limit: Limit, ticket: Ticket) => Limit> = {
  answered: afterAnswer,
  slowDown: afterSlowDown,
  refused: afterRefusal
}

/** The limit in force for one client. */
export interface InFlight {
  /**
   * Runs `send` once a permit is free, holding it until `send` ends; `send` gets its ticket. What
   * `outcomeOf` reads in how `send` ended (nothing, for an end that says nothing of the server) is
   * learned from, the permit still held.
   */
  readonly admit: <A, E, R>(
    send: (ticket: Ticket) => Effect.Effect<A, E, R>,
    outcomeOf: (exit: Exit.Exit<A, E>) => Outcome | undefined
  ) => Effect.Effect<A, E, R>
}

export const make = (max: number): Effect.Effect<InFlight> =>
  Effect.map(Effect.makeSemaphore(max), (semaphore) => {
    let limit = initial(max)
    let inFlight = 0
    const observe = (ticket: Ticket, outcome: Outcome): Effect.Effect<void> => {
      const previous = limit
      limit = decide[outcome](previous, ticket)
      if (limit.allowed === previous.allowed) return Effect.void
      const resize = semaphore.resize(limit.allowed)
      return limit.epoch === previous.epoch ? resize : Effect.zipRight(
        resize,
        Effect.logDebug("the server refused load: fewer requests in flight").pipe(
          Effect.annotateLogs({ allowed: limit.allowed, refusedAt: ticket.inFlight })
        )
      )
    }
    const release = semaphore.release(1)
    return {
      // the permit, the count in flight and what the answer says, in one step at the end of `send`:
      // a small call runs some 500 effects, and each wrapper around it adds a dozen
      admit: (send, outcomeOf) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(restore(semaphore.take(1)), () => {
            inFlight++
            const ticket: Ticket = { epoch: limit.epoch, inFlight }
            return Effect.onExit(restore(send(ticket)), (exit) => {
              inFlight--
              const outcome = outcomeOf(exit)
              return outcome === undefined ? release : Effect.zipRight(observe(ticket, outcome), release)
            })
          })
        )
    }
  })
