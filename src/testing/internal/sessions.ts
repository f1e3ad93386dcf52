/**
 * The emulator's users and tokens: which token-and-user pairs are current, who may write, logins
 * that issue fresh tokens, and expiry of them all.
 */
import { Effect, Option } from "effect"
import type { Credentials } from "../DemoData.js"

export interface Sessions {
  /** The userId owning this token, if the pair is current. */
  readonly authenticate: (authToken: string, userId: string) => Effect.Effect<Option.Option<string>>
  /** Whether this user may change rows. */
  readonly canWrite: (userId: string) => Effect.Effect<boolean>
  /** Issues a fresh token for matching credentials. */
  readonly login: (
    email: string,
    password: string
  ) => Effect.Effect<Option.Option<{ readonly authToken: string; readonly userId: string }>>
  /** Invalidates every issued token, the initial ones included; a new login issues a fresh one. */
  readonly expireTokens: Effect.Effect<void>
}

/**
 * Sessions of `users`, each user's `authToken` current from the start.
 */
export const make = (users: ReadonlyArray<Credentials>): Effect.Effect<Sessions> =>
  Effect.sync(() => {
    const tokens = new Map<string, string>(users.map((user) => [user.authToken, user.userId]))
    let issued = 0
    return {
      authenticate: (authToken, userId) =>
        Effect.sync(() => (tokens.get(authToken) === userId ? Option.some(userId) : Option.none())),
      canWrite: (userId) => Effect.sync(() => users.find((user) => user.userId === userId)?.readOnly !== true),
      login: (email, password) =>
        Effect.sync(() => {
          const user = users.find((candidate) => candidate.email === email && candidate.password === password)
          if (user === undefined) return Option.none()
          const authToken = `${user.userId}-token-${String(++issued).padStart(4, "0")}`
          tokens.set(authToken, user.userId)
          return Option.some({ authToken, userId: user.userId })
        }),
      expireTokens: Effect.sync(() => tokens.clear())
    }
  })
