/**
 * Deterministic demo Microapps: "People" and "Projects" (with cross-application and location
 * fields). The same arguments always give the same rows.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import * as Microapp from "../Microapp.js"
import * as Prng from "./internal/prng.js"
import type { FieldDefinition, Row, TableDefinition } from "./internal/table.js"
import { clientSubmittedAt, makeRowId } from "./internal/table.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Credentials {
  readonly email: string
  readonly password: string
  readonly userId: string
  readonly authToken: string
  /** A user who may read but not change rows: writes are answered 403. */
  readonly readOnly?: boolean | undefined
}

/**
 * The demo user; its token is valid from the start, so no login is needed.
 *
 * @since 0.1.0
 * @category constants
 */
export const demoCredentials: Credentials = {
  email: "demo@example.com",
  password: "demo-password",
  userId: "demo-user",
  authToken: "demo-token-0001"
}

/**
 * @since 0.1.0
 * @category constants
 */
export const peopleMicroAppID = "64b7c0f1a2d3e4f5a6b7c8d9"

/**
 * @since 0.1.0
 * @category constants
 */
export const projectsMicroAppID = "64b7c0f1a2d3e4f5a6b7c8da"

/**
 * The demo People Microapp.
 *
 * @since 0.1.0
 * @category definitions
 */
export const People = Microapp.make({
  microAppID: peopleMicroAppID,
  name: "People",
  fields: {
    Name: Microapp.required(Microapp.text("p_name")),
    Email: Microapp.text("p_email"),
    Team: Microapp.text("p_team")
  },
  sortFields: ["Name", "Team"]
})

/**
 * The demo Projects Microapp: sort field 1 is Name, 2 Budget, 3 Due, 4 Priority.
 *
 * @since 0.1.0
 * @category definitions
 */
export const Projects = Microapp.make({
  microAppID: projectsMicroAppID,
  name: "Projects",
  fields: {
    Name: Microapp.required(Microapp.text("f_name")),
    Status: Microapp.choice("f_status", ["Open", "In progress", "Done"]),
    Budget: Microapp.number("f_budget"),
    Priority: Microapp.integer("f_priority"),
    Approved: Microapp.boolean("f_approved"),
    Due: Microapp.date("f_due"),
    Owner: Microapp.crossApp("f_owner", People),
    Site: Microapp.location("f_site"),
    Tags: Microapp.list("f_tags", Schema.String)
  },
  sortFields: ["Name", "Budget", "Due", "Priority"]
})

/**
 * @since 0.1.0
 * @category constants
 */
export const peopleFields: ReadonlyArray<FieldDefinition> = Microapp.fieldList(People)

/**
 * @since 0.1.0
 * @category constants
 */
export const peopleSortFields: ReadonlyArray<string> = People.sortFields

/**
 * @since 0.1.0
 * @category constants
 */
export const projectFields: ReadonlyArray<FieldDefinition> = Microapp.fieldList(Projects)

/**
 * @since 0.1.0
 * @category constants
 */
export const projectSortFields: ReadonlyArray<string> = Projects.sortFields

/**
 * Number of rows in the demo People Microapp.
 *
 * @since 0.1.0
 * @category constants
 */
export const peopleCount = 40

/**
 * Default number of rows in the demo Projects Microapp.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultProjectCount = 2500

const peopleIdPrefix = "64c0"
const projectIdPrefix = "64d0"
const baseSubmitted = Date.UTC(2023, 0, 2, 9, 0, 0)
const offsets: readonly [number, ...Array<number>] = [660, 600, 0, -300, 330]
const firstNames = [
  "Ada",
  "Ben",
  "Chloe",
  "Dev",
  "Elena",
  "Farid",
  "Grace",
  "Hiro",
  "Ines",
  "Jonas",
  "Kiri",
  "Liam",
  "Maya",
  "Noah",
  "Olga",
  "Priya",
  "Quinn",
  "Rosa",
  "Sami",
  "Tess"
] as const
const lastNames = [
  "Nguyen",
  "Smith",
  "Okafor",
  "Rossi",
  "Kowalski",
  "Tanaka",
  "Silva",
  "Murphy",
  "Haddad",
  "Berg",
  "Walker",
  "Moreau",
  "Khan",
  "Jensen",
  "Costa",
  "Novak",
  "Park",
  "Reyes",
  "Schmidt",
  "Wu"
] as const
const teams: readonly [string, ...Array<string>] = ["Platform", "Data", "Field Ops", "Design", "Sales"]
const statuses: readonly [string, ...Array<string>] = ["Open", "In progress", "Done"]
const appVersions: readonly [string, ...Array<string>] = ["4.12.0", "4.13.2", "5.0.1"]
const tagNames = ["urgent", "internal", "client", "research", "maintenance", "compliance"] as const

interface Place {
  readonly country: string
  readonly city: string
  readonly region: string
  readonly postCode: string
  readonly street: string
  readonly lng: number
  readonly lat: number
}

const places: readonly [Place, ...Array<Place>] = [
  {
    country: "Australia",
    city: "Sydney",
    region: "NSW",
    postCode: "2000",
    street: "George Street",
    lng: 151.2070,
    lat: -33.8688
  },
  {
    country: "Australia",
    city: "Melbourne",
    region: "VIC",
    postCode: "3000",
    street: "Collins Street",
    lng: 144.9631,
    lat: -37.8136
  },
  {
    country: "Australia",
    city: "Brisbane",
    region: "QLD",
    postCode: "4000",
    street: "Queen Street",
    lng: 153.0251,
    lat: -27.4698
  },
  {
    country: "New Zealand",
    city: "Auckland",
    region: "Auckland",
    postCode: "1010",
    street: "Queen Street",
    lng: 174.7633,
    lat: -36.8485
  },
  {
    country: "United Kingdom",
    city: "London",
    region: "England",
    postCode: "EC1A 1BB",
    street: "King Street",
    lng: -0.1276,
    lat: 51.5072
  },
  {
    country: "United States",
    city: "Austin",
    region: "TX",
    postCode: "78701",
    street: "Congress Avenue",
    lng: -97.7431,
    lat: 30.2672
  }
]

// shared by the rows that have them: rows never change in place
const sharedViewers: ReadonlyArray<string> = [demoCredentials.userId, "user-0002"]
const noViewers: ReadonlyArray<string> = []

const pad = (value: number, width: number): string => String(value).padStart(width, "0")

const metadata = (prng: Prng.Prng, id: string, index: number): Record<string, unknown> => {
  const submitted = baseSubmitted + index * 3_600_000 + prng.int(3_600) * 1_000
  const withDevice = index % 3 !== 0
  return {
    _id: id,
    userID: index % 4 === 0 ? "user-0002" : demoCredentials.userId,
    viewers: index % 5 === 0 ? sharedViewers : noViewers,
    isLocked: index % 100 === 7,
    submitted,
    deviceID: withDevice ? `device-${pad(prng.int(10_000), 4)}` : null,
    appVersion: withDevice ? prng.pick(appVersions) : null,
    hasConflict: index % 211 === 3,
    clientCounter: withDevice ? prng.int(1_000) : null,
    clientSubmitted: clientSubmittedAt(submitted, prng.pick(offsets))
  }
}

/**
 * The rows of the demo People Microapp (`peopleCount` rows).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makePeopleRows = (seed = 7): ReadonlyArray<Row> => {
  const prng = Prng.make(seed)
  return Array.from({ length: peopleCount }, (_, index) => {
    const first = firstNames[index % firstNames.length] ?? "Ada"
    // A different stride for the last name keeps all full names distinct.
    const last = lastNames[(index * 3 + Math.floor(index / firstNames.length)) % lastNames.length] ?? "Nguyen"
    return {
      ...metadata(prng, makeRowId(peopleIdPrefix, index + 1), index),
      Name: `${first} ${last}`,
      Email: `${first}.${last}@example.com`.toLowerCase(),
      Team: prng.pick(teams)
    }
  })
}

const emailFieldID = "p_email"

const ownerOf = (person: Row): Row => ({
  crossAppRowID: String(person["_id"]),
  value: { label: "Name", value: String(person["Name"]) },
  additionalValues: { [emailFieldID]: { label: "Email", value: String(person["Email"]) } }
})

interface AddressLines {
  readonly mainAddressLine: string
  readonly addressLastLine: string
  readonly formattedAddress: string
  readonly addressNumber: string
}

/** The few distinct address lines of the demo sites, each made once and shared by its rows. */
const addressLinesCache = () => {
  const cache = new Map<Place, Map<number, AddressLines>>()
  return (place: Place, number: number): AddressLines => {
    const byNumber = cache.get(place) ?? new Map<number, AddressLines>()
    cache.set(place, byNumber)
    const found = byNumber.get(number)
    if (found !== undefined) return found
    const addressNumber = String(number)
    const mainAddressLine = `${addressNumber} ${place.street}`
    const addressLastLine = `${place.city} ${place.region} ${place.postCode}`
    const lines = {
      mainAddressLine,
      addressLastLine,
      formattedAddress: `${mainAddressLine}, ${addressLastLine}, ${place.country}`,
      addressNumber
    }
    byNumber.set(number, lines)
    return lines
  }
}

const siteOf = (prng: Prng.Prng, linesOf: (place: Place, number: number) => AddressLines): Row => {
  const place = prng.pick(places)
  const lines = linesOf(place, 1 + prng.int(200))
  const jitter = () => Math.round((prng.next() - 0.5) * 2_000) / 100_000
  return {
    address: {
      country: place.country,
      formattedAddress: lines.formattedAddress,
      geometry: {
        type: "point",
        coordinates: [Math.round((place.lng + jitter()) * 1e6) / 1e6, Math.round((place.lat + jitter()) * 1e6) / 1e6]
      },
      addressLastLine: lines.addressLastLine,
      addressNumber: lines.addressNumber,
      areaName1: place.region,
      areaName2: "",
      areaName3: place.city,
      areaName4: "",
      mainAddressLine: lines.mainAddressLine,
      placeName: "",
      postCode: place.postCode,
      postCodeExt: "",
      streetName: place.street,
      unitType: "",
      unitValue: ""
    }
  }
}

/** A value made once per key and shared: the demo rows hold a few distinct ones many times over. */
const memo = <K, V>(make: (key: K) => V) => {
  const made = new Map<K, V>()
  return (key: K): V => {
    const found = made.get(key)
    if (found !== undefined) return found
    const value = make(key)
    made.set(key, value)
    return value
  }
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ProjectRowsOptions {
  readonly seed?: number | undefined
  /** People rows the Owner values point at; default the demo People rows. */
  readonly people?: ReadonlyArray<Row> | undefined
}

/**
 * `count` rows of the demo Projects Microapp ("Project 0001", ...). A few have no Owner, a few are
 * locked (every hundredth, starting at index 7).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeProjectRows = (count: number, options: ProjectRowsOptions = {}): ReadonlyArray<Row> => {
  const prng = Prng.make(options.seed ?? 42)
  const people = options.people ?? makePeopleRows()
  const width = Math.max(4, String(count).length)
  // Rows never change in place (an update makes a new one), so values equal across rows are shared.
  const ownerAt = memo((index: number) => {
    const person = people[index]
    return person === undefined ? undefined : ownerOf(person)
  })
  const dueOn = memo((day: number) => new Date(Date.UTC(2024, 0, 1) + day * 86_400_000).toISOString().slice(0, 10))
  const tagsOf = memo((mask: number) => tagNames.filter((_, bit) => (mask & (1 << bit)) !== 0))
  const linesOf = addressLinesCache()
  const rows = new Array<Row>(count)
  for (let index = 0; index < count; index++) {
    // one object built in place: spreading hundreds of thousands of rows dominates startup
    const row = metadata(prng, makeRowId(projectIdPrefix, index + 1), index)
    const owner = ownerAt(prng.int(people.length))
    const withoutOwner = index % 37 === 11 || owner === undefined
    const due = dueOn(prng.int(730))
    row["Name"] = ["Project ", pad(index + 1, width)].join("")
    row["Status"] = prng.pick(statuses)
    row["Budget"] = Math.round(prng.next() * 50_000_000) / 100
    row["Priority"] = 1 + prng.int(5)
    row["Approved"] = prng.next() < 0.5
    row["Due"] = due
    if (!withoutOwner) row["Owner"] = owner
    row["Site"] = siteOf(prng, linesOf)
    row["Tags"] = tagsOf(tagNames.reduce((mask, _, bit) => prng.next() < 0.25 ? mask | (1 << bit) : mask, 0))
    rows[index] = row
  }
  return rows
}

/**
 * @since 0.1.0
 * @category models
 */
export interface DemoTablesOptions {
  /** Rows in Projects; default `defaultProjectCount`. */
  readonly projectRows?: number | undefined
  readonly seed?: number | undefined
}

/**
 * The demo People and Projects Microapps.
 *
 * @since 0.1.0
 * @category constructors
 */
export const demoTables = (options: DemoTablesOptions = {}): ReadonlyArray<TableDefinition> => {
  const people = makePeopleRows()
  const projectRowsOptions: ProjectRowsOptions = options.seed === undefined
    ? { people }
    : { people, seed: options.seed }
  return [
    {
      microAppID: peopleMicroAppID,
      name: "People",
      fields: peopleFields,
      sortFields: peopleSortFields,
      rows: people
    },
    {
      microAppID: projectsMicroAppID,
      name: "Projects",
      fields: projectFields,
      sortFields: projectSortFields,
      rows: makeProjectRows(options.projectRows ?? defaultProjectCount, projectRowsOptions)
    }
  ]
}
