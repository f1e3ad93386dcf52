/**
 * The hand-written contenders, B and C, and what every contender shares; no Effect here, so that a
 * process running only C loads nothing of this client.
 */

/** The Microapp every benchmark reads. */
export const microAppID = "64b7c0f1a2d3e4f5a6b7c8da"

export const authToken = "bench-token"
export const userId = "bench-user"

/** What a scan saw: enough to check it read the whole table, in order. */
export interface Tally {
  rows: number
  lastId: string | undefined
  /** Windows in flight: the most at once, and where an adaptive scan settled. */
  concurrency?: { readonly reached: number; readonly settled: number }
}

export const tally = (): Tally => ({ rows: 0, lastId: undefined })

/** Counts `rows` into `seen`, the last one's id kept. */
export const tallyRows = (seen: Tally, rows: ReadonlyArray<{ readonly _id: string }>): Tally => {
  for (const row of rows) {
    seen.rows++
    seen.lastId = row._id
  }
  return seen
}

/** Fails unless `seen` is `count` rows ending with the row `lastId`. */
export const expectRows = (name: string, seen: Tally, count: number, lastId: string | undefined): void => {
  if (seen.rows !== count || seen.lastId !== lastId) {
    throw new Error(`${name} read ${seen.rows} rows ending at ${seen.lastId}, expected ${count} ending at ${lastId}`)
  }
}

/** The wire page as the hand-written loops assume it is, unchecked. */
interface WirePage {
  readonly body: { readonly microAppRows: ReadonlyArray<{ readonly _id: string }> }
}

/** The request of one page, as every hand-written reader sends it. */
export const pageRequest = (skip: number, limit: number) => ({
  headers: { "content-type": "application/json", "x-auth-token": authToken, "x-user-id": userId },
  body: JSON.stringify({ microAppID, searchFilter: [{ resourceID: microAppID, skip: String(skip), limit }] })
})

const post = async (baseUrl: string, skip: number, limit: number): Promise<WirePage> => {
  const response = await fetch(`${baseUrl}/api/microappdata`, { method: "POST", ...pageRequest(skip, limit) })
  if (!response.ok) throw new Error(`HTTP ${response.status}`)
  // no validation: the practical upper bound of reading pages
  return JSON.parse(await response.text()) as WirePage
}

/** B: the loop a user writes by hand; a short page ends it. */
export const scanB = async (baseUrl: string, pageSize: number): Promise<Tally> => {
  const seen = tally()
  for (let skip = 0;;) {
    const rows = (await post(baseUrl, skip, pageSize)).body.microAppRows
    tallyRows(seen, rows)
    if (rows.length < pageSize) return seen
    skip += rows.length
  }
}

/** The "sufficiently large" limit a caller of the official client picks to get every row. */
const hugeLimit = 1_000_000_000

/** C: the whole table in one answer, held in memory, then walked. */
export const scanC = async (baseUrl: string): Promise<Tally> => {
  const rows = (await post(baseUrl, 0, hugeLimit)).body.microAppRows
  return tallyRows(tally(), rows)
}

/** The writes' hand-written contender: `concurrency` `fetch` workers sending `updates`, each checked. */
export const updatePool = async (
  baseUrl: string,
  updates: ReadonlyArray<unknown>,
  concurrency: number
): Promise<void> => {
  let next = 0
  const worker = async () => {
    for (let i = next++; i < updates.length; i = next++) {
      const response = await fetch(`${baseUrl}/api/updatemicroapprow`, {
        method: "POST",
        headers: { "content-type": "application/json", "X-Auth-Token": authToken, "X-User-Id": userId },
        body: JSON.stringify(updates[i])
      })
      const answer = (await response.json()) as { readonly status?: unknown }
      if (answer.status !== "success") throw new Error(`update ${i}: ${String(answer.status)}`)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}
