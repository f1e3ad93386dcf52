/**
 * Quoting for POSIX shells, for the `export` lines the command line prints.
 *
 * @since 0.1.0
 */

/**
 * A value as one shell word: single-quoted, with each `'` written as `'\''`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const shellQuote = (value: string): string => `'${value.replace(/'/g, "'\\''")}'`
