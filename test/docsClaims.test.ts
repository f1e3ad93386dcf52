/**
 * What the written pages claim that a test can check, against the code and the tree as they are:
 * docs/cli.md lists the commands that take the connection flags, and every flag of every command
 * with its default, as the commands' definitions have them; the README's docs table links every
 * page of docs/; and the layout drawn in docs/development.md names every file of the folders it
 * draws, and no file that is not there.
 */
import { Command } from "@effect/cli"
import { describe, expect, it } from "@effect/vitest"
import { Option, Predicate } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "..")
const read = (file: string) => fs.readFileSync(path.join(root, file), "utf8")

// --- the command line ----------------------------------------------------------------------------

interface Flag {
  readonly name: string
  /** The default the definition gives, or its description states (`default 30`, `$MICROAPP_USER_ID`). */
  readonly default: string | undefined
}

/** The text of a help document (a paragraph, a sequence of them, a text). */
const textOf = (doc: unknown): string => {
  if (!Predicate.hasProperty(doc, "_tag")) return ""
  if (doc._tag === "Text" && Predicate.hasProperty(doc, "value")) return String(doc.value)
  if (Predicate.hasProperty(doc, "left") && Predicate.hasProperty(doc, "right")) {
    return `${textOf(doc.left)} ${textOf(doc.right)}`
  }
  return Predicate.hasProperty(doc, "value") ? textOf(doc.value) : ""
}

/** A default a flag's description states: a number, or the environment variable it falls back to. */
const statedDefault = (description: string): string | undefined =>
  /\bdefault:? (\d+(?:\.\d+)?|\$[A-Z_]+)\b/i.exec(description)?.[1]

/** The flags of an @effect/cli options tree, each with its default. */
const flagsOf = (options: unknown, fallback: unknown = undefined): ReadonlyArray<Flag> => {
  if (!Predicate.hasProperty(options, "_tag")) return []
  switch (options._tag) {
    case "Single": {
      const name = Predicate.hasProperty(options, "name") ? String(options.name) : ""
      const description = Predicate.hasProperty(options, "description") ? textOf(options.description) : ""
      const given = typeof fallback === "string" || typeof fallback === "number" ? String(fallback) : undefined
      return [{ name, default: given ?? statedDefault(description) }]
    }
    case "WithDefault":
      return Predicate.hasProperty(options, "options") && Predicate.hasProperty(options, "fallback")
        ? flagsOf(options.options, Option.isOption(options.fallback) ? undefined : options.fallback)
        : []
    case "Both":
    case "OrElse":
      return Predicate.hasProperty(options, "left") && Predicate.hasProperty(options, "right")
        ? [...flagsOf(options.left, fallback), ...flagsOf(options.right, fallback)]
        : []
    default:
      // a flag wrapped: mapped, optional, repeated, with a Schema
      return [
        ...(Predicate.hasProperty(options, "options") ? flagsOf(options.options, fallback) : []),
        ...(Predicate.hasProperty(options, "argumentOption") ? flagsOf(options.argumentOption, fallback) : [])
      ]
  }
}

interface Definition {
  readonly name: string
  readonly flags: ReadonlyArray<Flag>
}

/** The command a descriptor defines (under the handler's `Map`). */
const definitionOf = (descriptor: unknown): Definition | undefined => {
  if (!Predicate.hasProperty(descriptor, "_tag")) return undefined
  if (descriptor._tag === "Map" && Predicate.hasProperty(descriptor, "command")) {
    return definitionOf(descriptor.command)
  }
  return descriptor._tag === "Standard" && Predicate.hasProperty(descriptor, "name") &&
      Predicate.hasProperty(descriptor, "options")
    ? { name: String(descriptor.name), flags: flagsOf(descriptor.options) }
    : undefined
}

/** Every command defined under src/cli/commands/, but `microapp` itself, whose flags are the connection flags. */
const definitions = async (): Promise<ReadonlyArray<Definition>> => {
  const dir = path.join(root, "src", "cli", "commands")
  const modules = await Promise.all(
    fs.readdirSync(dir).filter((file) => file.endsWith(".ts")).map((file): Promise<Record<string, unknown>> =>
      import(path.join(dir, file))
    )
  )
  const found = modules.flatMap((module) =>
    Object.values(module).flatMap((value) =>
      Predicate.hasProperty(value, Command.TypeId) && Predicate.hasProperty(value, "descriptor")
        ? Option.toArray(Option.fromNullable(definitionOf(value.descriptor)))
        : []
    )
  )
  return found.filter((definition) => definition.name !== "microapp")
}

const commands = await definitions()
const connectionFlags = ["base-url", "token", "user-id", "timeout", "retries"]
const cliPage = read("docs/cli.md")

/** The page's paragraphs and list items, less its code blocks. */
const blocks = cliPage.replace(/```[\s\S]*?```/g, "").split(/\n\s*\n|\n(?=\s*- )/)

const flagPattern = (flag: string) => new RegExp(`--${flag}(?![\\w-])`, "g")
const mentions = (block: string, flag: string) => flagPattern(flag).test(block)
const hasWord = (text: string, word: string) =>
  new RegExp(`(?<![\\w$.-])${word.replace(/[$.]/g, "\\$&")}(?![\\w-]|\\.\\d)`).test(text)

/**
 * What the page says of a flag where it names it: from each mention to the next flag named, in
 * the same paragraph, and at most a sentence or two.
 */
const saidOf = (flag: string): ReadonlyArray<string> =>
  blocks.flatMap((block) =>
    Array.from(block.matchAll(flagPattern(flag)), (match) => {
      const after = block.slice(match.index + match[0].length)
      const next = after.search(/--[a-z]/)
      return after.slice(0, Math.min(next < 0 ? after.length : next, 240))
    })
  )

/** Whether the page gives `value` as the flag's default where it names the flag. */
const documentsDefault = (flag: string, value: string) =>
  saidOf(flag).some((text) => /\bdefault\b/i.test(text) && hasWord(text, value))

describe("docs/cli.md", () => {
  it("finds the commands, and the connection flags on those that talk to a service", () => {
    expect(commands.map((command) => command.name)).toEqual(
      expect.arrayContaining(["rows", "changes", "mirror", "describe", "row", "update", "login", "serve", "demo"])
    )
    const rows = commands.find((command) => command.name === "rows")
    expect(rows?.flags).toEqual(expect.arrayContaining([
      { name: "timeout", default: "30" },
      { name: "format", default: "ndjson" },
      { name: "user-id", default: "$MICROAPP_USER_ID" }
    ]))
  })

  it("lists every command that takes the connection flags, and no other", () => {
    const sentence = /The commands that talk to a service \(([^)]*)\)/.exec(cliPage)?.[1] ?? ""
    const listed = Array.from(sentence.matchAll(/`([\w-]+)`/g), (match) => match[1])
    const taking = commands.filter((command) => command.flags.some((flag) => flag.name === "base-url"))
    expect(taking.every((command) => connectionFlags.every((flag) => command.flags.some((f) => f.name === flag))))
      .toBe(true)
    expect([...listed].sort()).toEqual(taking.map((command) => command.name).sort())
  })

  it.each(commands.map((command) => [command.name, command] as const))(
    "names every flag of %s, with the default its definition has",
    (_, command) => {
      const flags = command.flags.filter((flag) => !connectionFlags.includes(flag.name))
      expect(flags.filter((flag) => !blocks.some((block) => mentions(block, flag.name))).map((flag) => flag.name))
        .toEqual([])
      const withDefault = flags.flatMap((flag) => flag.default === undefined ? [] : [flag])
      const undocumented = withDefault.filter((flag) => !documentsDefault(flag.name, flag.default ?? ""))
      expect(undocumented.map((flag) => `--${flag.name} ${flag.default}`)).toEqual([])
    }
  )

  it("names the connection flags with their defaults and environment variables", () => {
    const flags = commands.find((command) => command.name === "rows")?.flags ?? []
    const connection = flags.filter((flag) => connectionFlags.includes(flag.name))
    expect(connection.map((flag) => flag.name).sort()).toEqual([...connectionFlags].sort())
    const undocumented = connection.filter((flag) =>
      flag.default === undefined ?
        !blocks.some((block) => mentions(block, flag.name)) :
        flag.default.startsWith("$")
        ? !cliPage.includes(flag.default.slice(1))
        : !documentsDefault(flag.name, flag.default)
    )
    expect(undocumented.map((flag) => `--${flag.name} ${flag.default}`)).toEqual([])
  })

  it("the check catches a flag or a default the page does not give", () => {
    expect(blocks.some((block) => mentions(block, "page"))).toBe(false)
    expect(mentions("`--page-size N`", "page")).toBe(false)
    expect(hasWord("`--timeout SECONDS` (default 30)", "30")).toBe(true)
    expect(hasWord("`--timeout SECONDS` (default 300 or 30.5)", "30")).toBe(false)
    expect(documentsDefault("seed", "1")).toBe(true)
    expect(documentsDefault("seed", "2")).toBe(false)
  })
})

// --- the README's table of pages -----------------------------------------------------------------

describe("the README's docs table", () => {
  it("links every page of docs/", () => {
    const table = read("README.md").split("\n").filter((line) => line.startsWith("|"))
    const linked = table.flatMap((line) => Array.from(line.matchAll(/\]\((docs\/[\w-]+\.md)\)/g), (match) => match[1]))
    const pages = fs.readdirSync(path.join(root, "docs")).filter((file) => file.endsWith(".md"))
      .map((file) => `docs/${file}`)
    expect(pages.filter((page) => !linked.includes(page))).toEqual([])
  })
})

// --- the layout in docs/development.md -----------------------------------------------------------

/**
 * The files a layout tree names, by path: one line a file or a folder (`name/`), two spaces of
 * indent a level, a description after two spaces or more.
 */
const treeFiles = (tree: string): ReadonlyArray<string> => {
  const folders: Array<string> = []
  return tree.split("\n").flatMap((line) => {
    const entry = /^( *)(\S+)/.exec(line)
    if (entry === null) return []
    const depth = (entry[1] ?? "").length / 2
    const name = entry[2] ?? ""
    folders.length = Math.floor(depth)
    if (name.endsWith("/")) {
      folders.push(name)
      return []
    }
    return [`${folders.join("")}${name}`]
  })
}

/** The tree of a section of docs/development.md: the first `text` block under its heading. */
const layoutOf = (heading: string): string => {
  const page = read("docs/development.md")
  const section = page.slice(page.indexOf(`\n## ${heading}\n`) + 1)
  return /```text\n([\s\S]*?)```/.exec(section)?.[1] ?? ""
}

/** The folders whose every file the layout must name: the implementation, which no reference documents. */
const drawn = ["src/internal", "src/sql/internal", "src/cli", "src/testing/internal"]

const filesUnder = (dir: string) =>
  fs.readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile())
    .map((entry) => path.posix.join(path.relative(root, entry.parentPath).split(path.sep).join("/"), entry.name))

describe("docs/development.md's layout", () => {
  const named = treeFiles(layoutOf("Layout"))

  it("names every file of src/internal/, src/sql/internal/, src/cli/ and src/testing/internal/", () => {
    const files = drawn.flatMap(filesUnder)
    expect(files.length).toBeGreaterThan(60)
    expect(files.filter((file) => !named.includes(file))).toEqual([])
  })

  it("names no file that is not there", () => {
    expect(named.filter((file) => !fs.existsSync(path.join(root, file)))).toEqual([])
  })

  it("the tree reads a file under each folder of its line", () => {
    expect(treeFiles("src/\n  index.ts   the root\n  internal/\n    http/\n      wire.ts\n    bounds.ts\n  Row.ts\n"))
      .toEqual(["src/index.ts", "src/internal/http/wire.ts", "src/internal/bounds.ts", "src/Row.ts"])
  })
})
