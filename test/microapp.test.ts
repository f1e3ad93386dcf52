import { describe, expect, it } from "@effect/vitest"
import { Chunk, DateTime, Effect, Option, Stream } from "effect"
import { Microapp, Row } from "../src/index.js"
import { MicroappServer, People, Projects } from "../src/testing/index.js"
import { bodiesTo, withEmulator } from "./support.js"

const rowsPath = "/api/microappdata"
const updatePath = "/api/updatemicroapprow"

/** Compile-time checks: `npm run check` fails if any of these lines type-checks. */
export const typeChecks = Effect.gen(function*() {
  const projects = yield* Microapp.bind(Projects)
  const [row] = yield* projects.query({ limit: 1 })
  if (row === undefined) return
  const name: string = row.Name
  const budget: number | undefined = row.Budget
  const due: DateTime.Utc | undefined = row.Due
  const owner: string | undefined = row.Owner?.crossAppRowID
  // @ts-expect-error a misspelt label is not a field
  yield* projects.updateRow({ rowID: row._id, rowData: { Nmae: "x" } })
  // @ts-expect-error a value of the wrong type
  yield* projects.updateRow({ rowID: row._id, rowData: { Budget: "a lot" } })
  // @ts-expect-error a choice outside its values
  yield* projects.updateRow({ rowID: row._id, rowData: { Status: "Maybe" } })
  // @ts-expect-error filters name labels, not fieldIDs
  yield* projects.query({ filters: { f_status: "Open" } })
  // @ts-expect-error Status is not a configured sort field
  yield* projects.query({ sort: { field: "Status" } })
  return [name, budget, due, owner]
})

describe("a Microapp definition", () => {
  it.live("decodes every field kind from the service's rows", () =>
    Effect.gen(function*() {
      const projects = yield* Microapp.bind(Projects)
      const people = yield* Microapp.bind(People)
      const rows = yield* projects.query({ limit: 200 })
      const everyone = yield* people.query({ limit: 100 })
      expect(rows).toHaveLength(200)
      for (const row of rows) {
        expect(typeof row.Name).toBe("string")
        expect(["Open", "In progress", "Done", undefined]).toContain(row.Status)
        expect(row.Budget === undefined || typeof row.Budget === "number").toBe(true)
        expect(row.Priority === undefined || Number.isInteger(row.Priority)).toBe(true)
        expect(row.Due === undefined || DateTime.isDateTime(row.Due)).toBe(true)
        expect(row.Tags === undefined || Array.isArray(row.Tags)).toBe(true)
      }
      const owned = rows.find((row) => row.Owner !== undefined)
      const owner = owned?.Owner
      expect(owner).toBeDefined()
      if (owner === undefined) return
      const person = everyone.find((p) => p._id === Microapp.targetRowID(owner))
      expect(Microapp.displayValue(owner)).toBe(person?.Name)
      const sited = rows.find((row) => row.Site !== undefined)
      const site = sited?.Site
      if (site === undefined) return expect(site).toBeDefined()
      const point = Microapp.coordinates(site)
      expect(point.longitude).toBe(site.address.geometry.coordinates[0])
      expect(Math.abs(point.latitude)).toBeLessThanOrEqual(90)
      const submitted = Microapp.clientSubmittedAt(owned ?? {})
      expect(Option.map(submitted, DateTime.toEpochMillis)).toStrictEqual(
        Option.some(Math.floor(Number(owned?.submitted) / 1000) * 1000)
      )
      // unknown keys are kept, not lost
      expect(owned?.hasConflict).toBe(false)
    }).pipe(Effect.provide(withEmulator({ demoRows: 200 }))))

  it.live("filters by label reach the server as fieldIDs, sort by label as its number", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const projects = yield* Microapp.bind(Projects)
      const rows = yield* projects.query({
        filters: { Status: "Open", Approved: true },
        sort: { field: "Budget", order: "desc" },
        limit: 500
      })
      const expected = (yield* server.rows.table(Projects.microAppID))
        .filter((row) => row.Status === "Open" && row.Approved === true)
        .sort((a, b) => Number(b.Budget) - Number(a.Budget))
      expect(rows.map((row) => row._id)).toEqual(expected.map((row) => row._id))
      const [body] = yield* bodiesTo(rowsPath)
      expect(body).toMatchObject({
        optSearchFilters: [
          { fieldID: "f_status", value: "Open" },
          { fieldID: "f_approved", value: "true" }
        ],
        searchFilter: [{ field: "2", order: -1 }]
      })
    }).pipe(Effect.provide(withEmulator({ demoRows: 300 }))))

  it.live("streams the whole Microapp typed", () =>
    Effect.gen(function*() {
      const projects = yield* Microapp.bind(Projects)
      const rows = yield* Stream.runCollect(projects.rows({ pageSize: 100, sort: { field: "Name" } }))
      const names = Chunk.toReadonlyArray(rows).map((row) => row.Name)
      expect(names).toHaveLength(1200)
      expect(names).toEqual([...names].sort())
    }).pipe(Effect.provide(withEmulator({ demoRows: 1200 }))))
})

describe("typed updates", () => {
  it.live("encode each value by its field's Schema and read back the same", () =>
    Effect.gen(function*() {
      const projects = yield* Microapp.bind(Projects)
      const people = yield* Microapp.bind(People)
      const [row] = yield* projects.query({ limit: 1 })
      const [person] = yield* people.query({ skip: 3, limit: 1 })
      const rowID = row?._id ?? ""
      const due = DateTime.unsafeMake("2031-07-14T00:00:00Z")
      const site: Row.LocationValue = {
        address: {
          country: "AU",
          formattedAddress: "1 Test Street, Sydney NSW 2000",
          geometry: { type: "point", coordinates: [151.2093, -33.8688] },
          addressLastLine: "Sydney NSW 2000",
          addressNumber: "1",
          areaName1: "NSW",
          areaName2: "",
          areaName3: "Sydney",
          areaName4: "",
          mainAddressLine: "1 Test Street",
          placeName: "",
          postCode: "2000",
          postCodeExt: "",
          streetName: "Test Street",
          unitType: "",
          unitValue: ""
        }
      }
      yield* projects.updateRow({
        rowID,
        rowData: {
          Name: "Typed",
          Status: "Done",
          Due: due,
          Budget: 99.5,
          Tags: ["a", "b"],
          Site: site,
          Owner: Microapp.reference(person?._id ?? "", { label: "Name", value: person?.Name ?? "" })
        }
      })
      const [body] = yield* bodiesTo(updatePath)
      expect(body).toMatchObject({ rowData: { Due: "2031-07-14", Status: "Done" } })
      const back = yield* projects.getRow(rowID)
      expect(back.Name).toBe("Typed")
      expect(back.Due).toStrictEqual(due)
      expect(back.Tags).toEqual(["a", "b"])
      expect(back.Site).toEqual(site)
      expect(back.Owner?.crossAppRowID).toBe(person?._id)
      yield* projects.updateRow({ rowID, rowData: { Owner: null } })
      expect((yield* projects.getRow(rowID)).Owner).toBeUndefined()
    }).pipe(Effect.provide(withEmulator({ demoRows: 5 }))))

  const refused = [
    ["a misspelt label, with the near match", { Nmae: "x" }, "rowData.Nmae", "\"Name\"?"],
    ["a label of another case", { name: "x" }, "rowData.name", "case sensitive"],
    ["a value of the wrong type", { Budget: "a lot" }, "rowData.Budget", "number"],
    ["a choice outside its values", { Status: "Maybe" }, "rowData.Status", "Open"],
    ["a date that is not a DateTime", { Due: "2031-07-14" }, "rowData.Due", "DateTime"]
  ] as const
  for (const [name, rowData, input, reason] of refused) {
    it.live(`from untyped input, ${name} is InvalidInput and nothing is sent`, () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const projects = yield* Microapp.bind(Projects)
        const untyped: Microapp.UpdateOf<typeof Projects> = JSON.parse(JSON.stringify(rowData))
        const error = yield* Effect.flip(projects.updateRow({ rowID: "64d0000000000000000000000", rowData: untyped }))
        expect(error).toMatchObject({ _tag: "InvalidInput", input, path: updatePath })
        expect(error.message).toContain(reason)
        expect(yield* server.log.requests).toEqual([])
      }).pipe(Effect.provide(withEmulator({ demoRows: 1 }))))
  }

  it.live("an unknown filter label or a field that is not a sort field is InvalidInput", () =>
    Effect.gen(function*() {
      const server = yield* MicroappServer
      const projects = yield* Microapp.bind(Projects)
      const filters: Microapp.FiltersOf<typeof Projects> = JSON.parse("{\"Stat\":\"Open\"}")
      const sort: Microapp.SortOf<typeof Projects> = JSON.parse("{\"field\":\"Status\"}")
      expect(yield* Effect.flip(projects.query({ filters }))).toMatchObject({ input: "filters.Stat" })
      expect(yield* Effect.flip(projects.query({ sort }))).toMatchObject({ input: "sort.field" })
      expect(yield* server.log.requests).toEqual([])
    }).pipe(Effect.provide(withEmulator({ demoRows: 1 }))))
})

describe("a row that does not fit the definition", () => {
  const breakRow = Effect.gen(function*() {
    const server = yield* MicroappServer
    const table = yield* server.rows.table(Projects.microAppID)
    yield* server.rows.setRows(
      Projects.microAppID,
      table.map((row, i) => i === 2 ? { ...row, Budget: "lots" } : row)
    )
    return String(table[2]?._id)
  })

  it.live("fails the read by default, naming the row's index, _id and field", () =>
    Effect.gen(function*() {
      const broken = yield* breakRow
      const projects = yield* Microapp.bind(Projects)
      const error = yield* Effect.flip(projects.query({ limit: 10 }))
      expect(error).toMatchObject({
        _tag: "UnexpectedResponse",
        kind: "Row",
        rowIndex: 2,
        rowID: broken,
        fieldPath: "Budget"
      })
      const streamed = yield* Effect.flip(Stream.runDrain(projects.rows({ pageSize: 4 })))
      expect(streamed).toMatchObject({ _tag: "UnexpectedResponse", rowID: broken, fieldPath: "Budget", rowIndex: 2 })
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }))))

  it.live("is skipped and counted under invalidRows: skip", () =>
    Effect.gen(function*() {
      const broken = yield* breakRow
      const projects = yield* Microapp.bind(Projects, { invalidRows: "skip" })
      const scan = yield* projects.scan({ pageSize: 4 })
      const rows = Chunk.toReadonlyArray(yield* Stream.runCollect(scan.rows))
      expect(rows).toHaveLength(9)
      expect(rows.some((row) => row._id === broken)).toBe(false)
      expect((yield* scan.summary).invalidRows).toBe(1)
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }))))

  it.live("is handed on undecoded, in its place, under invalidRows: raw", () =>
    Effect.gen(function*() {
      const broken = yield* breakRow
      const projects = yield* Microapp.bind(Projects, { invalidRows: "raw" })
      const rows = yield* projects.query({ limit: 10 })
      expect(rows).toHaveLength(10)
      const third = rows[2]
      expect(third).toBeInstanceOf(Row.InvalidRow)
      if (third instanceof Row.InvalidRow) {
        expect(third.error).toMatchObject({ rowID: broken, fieldPath: "Budget" })
        expect(third.row).toMatchObject({ _id: broken, Budget: "lots" })
      }
    }).pipe(Effect.provide(withEmulator({ demoRows: 10 }))))
})
