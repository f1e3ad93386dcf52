/**
 * The emulator's Microapps and their rows: natural order, lookup by id, inserts, deletes, the
 * update semantics of `/api/updatemicroapprow`, queries, and a count of updates applied per row.
 */
import { Clock, Effect, Either, Option } from "effect"
import type { FieldDefinition, Row, TableDefinition, UpdateExtras } from "./table.js"
import { applyUpdate, buildRow, completeRow, makeRowId } from "./table.js"
import type { Limits, Query } from "./tableQuery.js"
import { pageOf, selectionKey, selectRows } from "./tableQuery.js"

export type UpdateOutcome = "updated" | "locked" | "notFound"

export interface QueryFailure {
  readonly status: 400 | 404
  readonly message: string
}

export interface RowStore {
  /** Current rows in natural order; dies on an unknown Microapp. */
  readonly table: (microAppID: string) => Effect.Effect<ReadonlyArray<Row>>
  /** Inserts a new row (metadata generated) at the end, or before position `index`; dies on an unknown Microapp. */
  readonly insertRow: (
    microAppID: string,
    rowData: Row,
    options?: { readonly index?: number | undefined; readonly userID?: string | undefined }
  ) => Effect.Effect<Row>
  /** Inserts at the end; none for an unknown Microapp. */
  readonly tryInsertRow: (microAppID: string, rowData: Row, userID: string) => Effect.Effect<Option.Option<Row>>
  readonly removeRow: (rowID: string) => Effect.Effect<boolean>
  readonly getRow: (rowID: string) => Effect.Effect<Option.Option<Row>>
  /** Rows of a Microapp; dies on an unknown Microapp. */
  readonly size: (microAppID: string) => Effect.Effect<number>
  /** The row at a position of the natural order, without copying the table; dies on an unknown Microapp. */
  readonly rowAt: (microAppID: string, index: number) => Effect.Effect<Option.Option<Row>>
  /** Update semantics of `/api/updatemicroapprow`, including the refusal of a locked row. */
  readonly updateRow: (rowID: string, rowData: Row, extras?: UpdateExtras) => Effect.Effect<UpdateOutcome>
  /** How many updates each row has had applied since start (rows never updated are absent). */
  readonly appliedUpdates: Effect.Effect<ReadonlyMap<string, number>>
  /** Replaces the rows of a Microapp (metadata filled in where missing); dies on an unknown Microapp. */
  readonly setRows: (microAppID: string, rows: ReadonlyArray<Row>) => Effect.Effect<void>
  readonly query: (query: Query, limits: Limits) => Effect.Effect<Either.Either<ReadonlyArray<Row>, QueryFailure>>
}

interface TableState {
  readonly microAppID: string
  readonly fields: ReadonlyArray<FieldDefinition>
  readonly sortFields: ReadonlyArray<string>
  rows: Array<Row>
  /**
   * The selections of the rows as they stand, by `selectionKey`: the pages of one scan filter and
   * sort the table once, not once a page. Emptied by every change to the rows.
   */
  readonly selections: Map<string, Either.Either<ReadonlyArray<Row>, string>>
}

// the few filters and orders read at once; past them the table starts over
const maxSelections = 8

const generatedIdPrefix = "64f0"
// Rows loaded without a submission time get one from a fixed epoch, so loading stays deterministic.
const loadedSubmittedBase = Date.UTC(2024, 0, 1)

/**
 * The store of `definitions`, rows owned by `owner` unless they say otherwise; dies on a
 * duplicate row id.
 */
export const make = (definitions: ReadonlyArray<TableDefinition>, owner: string): Effect.Effect<RowStore> =>
  Effect.suspend(() => {
    const tables = new Map<string, TableState>()
    const rowTable = new Map<string, TableState>()
    const applied = new Map<string, number>()
    let rowCounter = 0

    const nextRowId = (): string => makeRowId(generatedIdPrefix, ++rowCounter)

    const completeLoaded = (row: Row, index: number): Row =>
      completeRow(row, {
        _id: typeof row["_id"] === "string" ? row["_id"] : nextRowId(),
        userID: owner,
        submitted: loadedSubmittedBase + index * 60_000
      })

    const load = (table: TableState, rows: ReadonlyArray<Row>): Effect.Effect<void> =>
      Effect.suspend(() => {
        table.selections.clear()
        for (const row of table.rows) rowTable.delete(String(row["_id"]))
        table.rows = rows.map(completeLoaded)
        for (const row of table.rows) {
          const id = String(row["_id"])
          if (rowTable.has(id)) {
            return Effect.dieMessage(`MicroappState: duplicate row _id ${id} in Microapp ${table.microAppID}`)
          }
          rowTable.set(id, table)
        }
        return Effect.void
      })

    const tableOrDie = (microAppID: string): Effect.Effect<TableState> =>
      Effect.suspend(() => {
        const table = tables.get(microAppID)
        return table === undefined
          ? Effect.dieMessage(`MicroappState: unknown microAppID ${microAppID}`)
          : Effect.succeed(table)
      })

    const locate = (rowID: string): { readonly table: TableState; readonly index: number } | undefined => {
      const table = rowTable.get(rowID)
      if (table === undefined) return undefined
      const index = table.rows.findIndex((row) => row["_id"] === rowID)
      return index < 0 ? undefined : { table, index }
    }

    const insertAt = (table: TableState, row: Row, index: number | undefined): void => {
      const position = index === undefined ? table.rows.length : Math.max(0, Math.min(index, table.rows.length))
      table.rows.splice(position, 0, row)
      table.selections.clear()
      rowTable.set(String(row["_id"]), table)
    }

    const newRow = (table: TableState, rowData: Row, userID: string): Effect.Effect<Row> =>
      Effect.map(
        Clock.currentTimeMillis,
        (now) => buildRow(table.fields, rowData, { _id: nextRowId(), userID, submitted: now })
      )

    const store: RowStore = {
      table: (microAppID) => Effect.map(tableOrDie(microAppID), (table) => [...table.rows]),
      insertRow: (microAppID, rowData, options = {}) =>
        Effect.flatMap(tableOrDie(microAppID), (table) =>
          Effect.tap(
            newRow(table, rowData, options.userID ?? owner),
            (row) => Effect.sync(() => insertAt(table, row, options.index))
          )),
      tryInsertRow: (microAppID, rowData, userID) =>
        Effect.suspend(() => {
          const table = tables.get(microAppID)
          return table === undefined
            ? Effect.succeedNone
            : Effect.map(newRow(table, rowData, userID), (row) => {
              insertAt(table, row, undefined)
              return Option.some(row)
            })
        }),
      removeRow: (rowID) =>
        Effect.sync(() => {
          const found = locate(rowID)
          if (found === undefined) return false
          found.table.rows.splice(found.index, 1)
          found.table.selections.clear()
          rowTable.delete(rowID)
          return true
        }),
      getRow: (rowID) =>
        Effect.sync(() => {
          const found = locate(rowID)
          return Option.fromNullable(found?.table.rows[found.index])
        }),
      size: (microAppID) => Effect.map(tableOrDie(microAppID), (table) => table.rows.length),
      rowAt: (microAppID, index) =>
        Effect.map(tableOrDie(microAppID), (table) => Option.fromNullable(table.rows[index])),
      updateRow: (rowID, rowData, extras = {}) =>
        Effect.sync((): UpdateOutcome => {
          const found = locate(rowID)
          const row = found?.table.rows[found.index]
          if (found === undefined || row === undefined) return "notFound"
          if (row["isLocked"] === true) return "locked"
          found.table.rows[found.index] = applyUpdate(found.table.fields, row, rowData, extras)
          found.table.selections.clear()
          applied.set(rowID, (applied.get(rowID) ?? 0) + 1)
          return "updated"
        }),
      appliedUpdates: Effect.sync(() => new Map(applied)),
      setRows: (microAppID, rows) => Effect.flatMap(tableOrDie(microAppID), (table) => load(table, rows)),
      query: (query, limits) =>
        Effect.sync(() => {
          const table = tables.get(query.microAppID)
          if (table === undefined) return Either.left<QueryFailure>({ status: 404, message: "Microapp not found" })
          const key = selectionKey(query)
          let selected = table.selections.get(key)
          if (selected === undefined) {
            selected = selectRows(table, table.rows, query)
            if (table.selections.size >= maxSelections) table.selections.clear()
            table.selections.set(key, selected)
          }
          return Either.match(selected, {
            onLeft: (message) => Either.left<QueryFailure>({ status: 400, message }),
            onRight: (rows) => Either.right(pageOf(rows, query, limits))
          })
        })
    }
    return Effect.as(
      Effect.forEach(definitions, (definition) => {
        const table: TableState = { ...definition, rows: [], selections: new Map() }
        tables.set(definition.microAppID, table)
        return load(table, definition.rows)
      }, { discard: true }),
      store
    )
  })
