/**
 * The summary of a scan, from its counters: for a run as it goes, and for a checkpoint, which
 * carries them over to the run that resumes from it.
 */
import type * as RowStream from "../../RowStream.js"
import * as Engine from "./engine.js"
import type * as ScanState from "./state.js"

// every counter is a figure of the summary, but `emitted`, the rows the engine took
export const summarise = (
  counters: ScanState.Counters,
  dedupe: Engine.EngineConfig["dedupe"]
): RowStream.ScanSummary => {
  const { emitted, serverCap, ...figures } = counters
  return {
    ...figures,
    serverCap: serverCap ?? undefined,
    // every row the engine took was handed on: none was skipped as invalid
    exhaustive: Engine.proven(counters, dedupe) && counters.rows === emitted
  }
}
