/**
 * A database failure in the driver's own words: `@effect/sql`'s message ("PgClient: Failed to
 * connect") says where it failed, its cause (pg's or libsql's error) says why.
 */

/** `scheme://user:password@` anywhere in a text, the password hidden: a driver may quote its URL. */
const withoutPasswords = (text: string): string =>
  text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]+@/gi, "$1***@")

const codeOf = (error: Error): string | undefined => {
  const code: unknown = (error as { readonly code?: unknown }).code
  return typeof code === "string" || typeof code === "number" ? String(code) : undefined
}

/**
 * An error's message with its code (28P01, SQLITE_NOTADB, ECONNREFUSED) when the message does not
 * say it; Node's AggregateError of a host tried at each of its addresses has only its errors' words.
 */
const wordsOf = (cause: unknown): string => {
  if (!(cause instanceof Error)) return cause === undefined || cause === null ? "" : String(cause)
  const message = cause.message !== "" || !(cause instanceof AggregateError)
    ? cause.message
    : [...new Set(cause.errors.map(wordsOf))].join("; ")
  const code = codeOf(cause)
  return code === undefined || message.includes(code) ? message : `${message} (${code})`
}

/** @internal */
export const databaseWords = (error: { readonly message: string; readonly cause?: unknown }): string => {
  const cause = wordsOf(error.cause)
  return withoutPasswords(cause === "" || error.message.includes(cause) ? error.message : `${error.message}: ${cause}`)
}
