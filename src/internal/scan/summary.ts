/**
 * The summary of a scan, from the engine's counters and what the driver counts itself: for a run
 * as it goes, and for a checkpoint, which carries both over to the run that resumes from it.
 */
import type * as RowStream from "../../RowStream.js"
import * as Engine from "./engine.js"

/** What the driver counts itself, beside the engine's counters. */
export interface Figures {
  /** Rows handed on: decoded, or raw under `invalidRows: "raw"`. */
  readonly rows: number
  readonly invalidRows: number
  readonly concurrencyReached: number
  readonly concurrency: number
  /** Summed over the runs of a resumed scan. */
  readonly elapsedMillis: number
  readonly resumed: number
}

export const noFigures: Figures = {
  rows: 0,
  invalidRows: 0,
  concurrencyReached: 0,
  concurrency: 0,
  elapsedMillis: 0,
  resumed: 0
}

export const summarise = (
  counters: Readonly<Engine.Counters>,
  figures: Figures,
  dedupe: Engine.EngineConfig["dedupe"]
): RowStream.ScanSummary => ({
  pages: counters.pages,
  rows: figures.rows,
  duplicatesDropped: counters.duplicatesDropped,
  realignments: counters.realignments,
  appearedBehind: counters.appearedBehind,
  caughtBehind: counters.caughtBehind,
  vanishedBehind: counters.vanishedBehind,
  pagesDiscarded: counters.pagesDiscarded,
  serverCap: counters.serverCap,
  retries: counters.retries,
  inconsistencies: counters.inconsistencies,
  invalidRows: figures.invalidRows,
  concurrencyReached: figures.concurrencyReached,
  concurrency: figures.concurrency,
  complete: counters.complete,
  // every row the engine took was handed on: none was skipped as invalid
  exhaustive: Engine.proven(counters, dedupe) && figures.rows === counters.emitted,
  resumed: figures.resumed,
  elapsedMillis: figures.elapsedMillis
})
