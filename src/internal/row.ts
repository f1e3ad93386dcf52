/**
 * What `Row` declares of `clientSubmitted`: its text read into a zoned time that keeps the
 * client's UTC offset, and written back as the service writes it.
 */
import { DateTime, Option } from "effect"
import { formatLocal } from "./clientSubmitted.js"

/** `2021-03-01 (15:34:49) +1100`: the date, the wall-clock time and the client's offset. */
export const clientSubmittedPattern = /^(\d{4})-(\d{2})-(\d{2}) \((\d{2}):(\d{2}):(\d{2})\) ([+-])(\d{2})(\d{2})$/

/** The zoned time a `clientSubmitted` text names; none when it is no real date and time. */
export const parseClientSubmitted = (text: string): Option.Option<DateTime.Zoned> => {
  const match = clientSubmittedPattern.exec(text)
  const part = (index: number): number => Number(match?.[index])
  const [year, month, day] = [part(1), part(2), part(3)]
  const offset = (match?.[7] === "-" ? -1 : 1) * (part(8) * 60 + part(9)) * 60_000
  const wallClock = new Date(Date.UTC(year, month - 1, day, part(4), part(5), part(6)))
  // Date.UTC rolls 2021-02-31 over into March: a date that does not round-trip is not a date
  const valid = wallClock.getUTCFullYear() === year && wallClock.getUTCMonth() === month - 1 &&
    wallClock.getUTCDate() === day && part(4) < 24 && part(5) < 60 && part(6) < 60
  return valid
    ? Option.some(DateTime.unsafeMakeZoned(wallClock.getTime() - offset, { timeZone: offset }))
    : Option.none()
}

export const formatClientSubmitted = (dateTime: DateTime.Zoned): string =>
  formatLocal(DateTime.toParts(dateTime), DateTime.zonedOffset(dateTime))
