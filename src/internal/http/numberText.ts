/**
 * Whether a JSON number token says what the double JSON.parse makes of it: the token compared, as
 * a decimal, with the double's shortest text (what JavaScript writes for it) and with the double's
 * exact value, in time linear in the token and without a regex.
 */

/** Which way a number goes: read from an answer, or sent in an update (sent as JavaScript writes it). */
export type Direction = "read" | "sent"

/** A positive decimal as `0.digits × 10^power`, `digits` without leading or trailing zeros. */
interface Decimal {
  readonly digits: string
  readonly power: number
  /** How many significant digits the text holds; `digits` keeps at most `keptDigits` of them. */
  readonly count: number
  readonly negative: boolean
}

/** The most significant digits of a double's exact value. */
const exactDigits = 767

/** Digits of a token kept to find its double: more than any double or midpoint between two has. */
const keptDigits = 800

/** Fifteen significant digits: a double holds every such decimal within its normal range as written. */
const heldDigits = 15

export const isDigit = (code: number): boolean => code >= 48 && code <= 57

/** The end of the run of digits of `text` from `from` (before `end`). */
const digitsEnd = (text: string, from: number, end: number): number => {
  let i = from
  while (i < end && isDigit(text.charCodeAt(i))) i++
  return i
}

/**
 * The decimal the JSON number `text.slice(start, end)` says, `"zero"` for zero, `undefined` for a
 * text that is no JSON number (JSON.parse refuses it). Each character is looked at a bounded number
 * of times; only `keptDigits` of the digits are copied.
 */
const decimalOf = (text: string, start: number, end: number): Decimal | "zero" | undefined => {
  let i = start
  const negative = text.charCodeAt(i) === 45
  if (negative) i++
  const wholeStart = i
  const wholeEnd = digitsEnd(text, i, end)
  if (wholeEnd === wholeStart || (wholeEnd - wholeStart > 1 && text.charCodeAt(wholeStart) === 48)) return undefined
  i = wholeEnd
  let fractionStart = i
  let fractionEnd = i
  if (i < end && text.charCodeAt(i) === 46) {
    fractionStart = i + 1
    fractionEnd = digitsEnd(text, fractionStart, end)
    if (fractionEnd === fractionStart) return undefined
    i = fractionEnd
  }
  let exponent = 0
  if (i < end && (text.charCodeAt(i) === 101 || text.charCodeAt(i) === 69)) {
    i++
    const sign = text.charCodeAt(i)
    if (sign === 43 || sign === 45) i++
    const exponentEnd = digitsEnd(text, i, end)
    if (exponentEnd === i) return undefined
    while (i < exponentEnd - 1 && text.charCodeAt(i) === 48) i++
    // past nine digits the power is beyond any double's, whatever shift the token's length adds
    const magnitude = exponentEnd - i > 9 ? 1e9 : Number(text.slice(i, exponentEnd))
    exponent = sign === 45 ? -magnitude : magnitude
    i = exponentEnd
  }
  if (i !== end) return undefined
  // the first significant digit, in the whole part or else the fraction
  let first = wholeStart
  while (first < wholeEnd && text.charCodeAt(first) === 48) first++
  const firstInFraction = first === wholeEnd
  if (firstInFraction) {
    first = fractionStart
    while (first < fractionEnd && text.charCodeAt(first) === 48) first++
    if (first === fractionEnd) return "zero"
  }
  // the last significant digit, in the fraction or else the whole part
  let last = fractionEnd - 1
  while (last >= fractionStart && text.charCodeAt(last) === 48) last--
  const lastInFraction = last >= fractionStart
  if (!lastInFraction) {
    last = wholeEnd - 1
    while (text.charCodeAt(last) === 48) last--
  }
  const split = !firstInFraction && lastInFraction
  const count = split ? wholeEnd - first + last + 1 - fractionStart : last + 1 - first
  const head = text.slice(first, Math.min(split ? wholeEnd : last + 1, first + keptDigits))
  const digits = split && head.length < keptDigits
    ? head + text.slice(fractionStart, Math.min(last + 1, fractionStart + keptDigits - head.length))
    : head
  return {
    // a digit past those kept stands for the rest, so that they round as the whole token does
    digits: count > keptDigits ? `${digits}1` : digits,
    power: firstInFraction ? exponent - (first - fractionStart) : exponent + (wholeEnd - first),
    count,
    negative
  }
}

const sameValue = (a: Decimal, b: Decimal): boolean => a.power === b.power && a.digits === b.digits

const decimalOfText = (text: string): Decimal => decimalOf(text, 0, text.length) as Decimal

/** The exact value of the positive finite double `x`, as a decimal: every double is m × 2^e. */
const exactValue = (x: number): Decimal => {
  const view = new DataView(new ArrayBuffer(8))
  view.setFloat64(0, x)
  const bits = view.getBigUint64(0)
  const biased = Number(bits >> 52n)
  const fraction = bits & 0xfffffffffffffn
  const mantissa = biased === 0 ? fraction : fraction | (1n << 52n)
  const power2 = biased === 0 ? -1074 : biased - 1075
  // m × 2^-k is m × 5^k × 10^-k
  return power2 >= 0
    ? decimalOfText((mantissa << BigInt(power2)).toString())
    : decimalOfText(`${mantissa * 5n ** BigInt(-power2)}e${power2}`)
}

/** A token as an error may quote it: whole when short, else its start and its length. */
const quoted = (text: string, start: number, end: number): string =>
  end - start <= 40
    ? text.slice(start, end)
    : `${text.slice(start, start + 24)}... (a number of ${(end - start).toLocaleString("en-US")} characters)`

/**
 * Why the JSON number `text.slice(start, end)` cannot pass as written, if it cannot. Read, it
 * passes when the double JSON.parse makes of it is exactly what it says, or when it is the
 * shortest text of that double (`62007044045103450`, which JavaScript writes for
 * 62007044045103448, passes; `9007199254740993` does not). Sent, it passes when JavaScript writes
 * its double with the same value (it is sent so). A text that is no JSON number, and one that
 * reads as Infinity, are left to JSON.parse and to the rule on finite numbers.
 */
export const numberFault = (text: string, start: number, end: number, direction: Direction): string | undefined => {
  const said = decimalOf(text, start, end)
  if (said === undefined || said === "zero") return undefined
  if (said.count <= heldDigits && said.power >= -306 && said.power <= 308) return undefined
  // what JavaScript writes (nearly every number of an answer) is its double's shortest text as it is
  if (end - start <= 25) {
    const token = text.slice(start, end)
    if (String(Number(token)) === token) return undefined
  }
  // 10^309 and past is Infinity
  if (said.power > 309) return undefined
  const read = said.power < -324 ? 0 : Number(`${said.negative ? "-" : ""}0.${said.digits}e${said.power}`)
  if (!Number.isFinite(read)) return undefined
  const verb = direction === "read" ? "read" : "sent"
  const refused = `is ${
    quoted(text, start, end)
  }, which a double cannot hold as written: it would be ${verb} as ${read}`
  if (read === 0 || said.count > exactDigits) return refused
  if (sameValue(said, decimalOfText(String(Math.abs(read))))) return undefined
  const exact = sameValue(said, exactValue(Math.abs(read)))
  if (direction === "read") return exact ? undefined : refused
  return exact
    ? `is ${quoted(text, start, end)}, which would be sent as ${read}: a double holds it exactly, ` +
      `but JavaScript writes that double's shortest digits; write ${read} to send it`
    : refused
}
