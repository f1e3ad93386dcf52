/**
 * The benchmark table: demo Projects rows, each pre-serialised once, so the server only joins strings.
 */
import { makeProjectRows } from "../../src/testing/index.js"
import { makeRowId } from "../../src/testing/internal/table.js"

/** Distinct demo rows generated; bigger tables repeat them under fresh ids (generating 1M rows takes half a minute). */
const distinctRows = 10_000

/** The id of row `index` (0-based) of the benchmark table. */
export const rowId = (index: number): string => makeRowId("64d0", index + 1)

/**
 * `count` rows as JSON strings, each shaped like a demo Projects row with a unique `_id`. Rows past
 * the distinct ones share their body string, so a million rows cost little memory in the server.
 */
export const serialisedRows = (count: number): Array<string> => {
  const tails = makeProjectRows(Math.min(count, distinctRows)).map((row) => {
    // `_id` comes first in every demo row: what follows it is appended to a fresh id
    const rest = JSON.stringify({ ...row, _id: undefined })
    return rest === "{}" ? "}" : `,${rest.slice(1)}`
  })
  const rows = new Array<string>(count)
  for (let i = 0; i < count; i++) {
    rows[i] = `{"_id":${JSON.stringify(rowId(i))}${tails[i % tails.length] ?? "}"}`
  }
  return rows
}
