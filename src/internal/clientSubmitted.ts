/**
 * The text of `clientSubmitted`, `YYYY-MM-DD (HH:mm:ss) +hhmm`, from the local time's parts.
 *
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 * @category models
 */
export interface LocalParts {
  readonly year: number
  readonly month: number
  readonly day: number
  readonly hours: number
  readonly minutes: number
  readonly seconds: number
}

const pad = (n: number, width = 2): string => String(Math.abs(n)).padStart(width, "0")

/**
 * @since 0.1.0
 * @category formatting
 */
export const formatLocal = (parts: LocalParts, offsetMillis: number): string => {
  const sign = offsetMillis < 0 ? "-" : "+"
  const minutes = Math.abs(Math.round(offsetMillis / 60_000))
  // joined, not concatenated: one flat string, where `+` would keep a tree of a dozen pieces per row
  return [
    parts.year,
    "-",
    pad(parts.month),
    "-",
    pad(parts.day),
    " (",
    pad(parts.hours),
    ":",
    pad(parts.minutes),
    ":",
    pad(parts.seconds),
    ") ",
    sign,
    pad(Math.floor(minutes / 60)),
    pad(minutes % 60)
  ].join("")
}
