/**
 * The README's typed Microapps: two definitions, a read by label, and updates checked by label and
 * value at compile time.
 */
import { Console, DateTime, Effect, Schema, Stream } from "effect"
import { Microapp } from "../src/index.js"

export const People = Microapp.make({
  microAppID: "64b7c0f1a2d3e4f5a6b7c8d9",
  name: "People",
  fields: { Name: Microapp.required(Microapp.text("p_name")), Email: Microapp.text("p_email") },
  sortFields: ["Name"] // the Results Tab: sort field 1 is Name
})

export const Projects = Microapp.make({
  microAppID: "64b7c0f1a2d3e4f5a6b7c8da",
  name: "Projects",
  fields: { // label: kind(fieldID)
    Name: Microapp.required(Microapp.text("f_name")),
    Status: Microapp.choice("f_status", ["Open", "In progress", "Done"]),
    Budget: Microapp.number("f_budget"),
    Priority: Microapp.integer("f_priority"),
    Approved: Microapp.boolean("f_approved"),
    Due: Microapp.date("f_due"), // "YYYY-MM-DD" on the wire, DateTime.Utc in rows
    Owner: Microapp.crossApp("f_owner", People),
    Site: Microapp.location("f_site"),
    Tags: Microapp.list("f_tags", Schema.String)
  },
  sortFields: ["Name", "Budget", "Due", "Priority"]
})

export const closeOne = (rowID: string) =>
  Effect.gen(function*() {
    const projects = yield* Microapp.bind(Projects) // needs MicroappClient
    const open = projects.rows({ filters: { Status: "Open" }, sort: { field: "Budget", order: "desc" } })
    yield* open.pipe(Stream.runForEach((row) => Console.log(row.Name, row.Budget, row.Owner?.crossAppRowID)))

    yield* projects.updateRow({ rowID, rowData: { Due: DateTime.unsafeMake("2031-07-14"), Status: "Done" } })
    // @ts-expect-error: "Nmae" is no label of Projects; from untyped input, InvalidInput before
    // anything is sent: `"Nmae" is not a field of Projects (labels are case sensitive; did you mean "Name"?)`
    yield* projects.updateRow({ rowID, rowData: { Nmae: "x" } })
  })
