/**
 * The envelope of every checkpoint format (a scan's, a change pass's, the CLI's CKPT and STATE):
 * the text's size and nesting bounded before it is parsed, a version checked with one wording, a
 * text (keys in the order of the format's Schema) and a checksum written after it, last. The
 * checksum of every format written now is `checksum`; what older versions used is kept here only
 * to read them. Every refusal is an `InvalidCheckpoint` naming its problem.
 */
import { Either, Option, ParseResult, Predicate, Schema, SchemaAST } from "effect"
import { type CheckpointProblem, InvalidCheckpoint } from "../MicroappError.js"
import { fingerprint } from "./fingerprint.js"

export const invalidCheckpoint = (problem: CheckpointProblem, input: string, reason: string) =>
  new InvalidCheckpoint({ input, reason, problem })

/**
 * What a format reads: the version it writes (the newest), the oldest and why one before it is
 * not read, and who reads them ("this microapp") and what reads a newer one, as a refusal says.
 */
export interface Versions {
  readonly current: number
  readonly oldest?: { readonly version: number; readonly before: string }
  readonly reader: string
  readonly upgrade: string
}

/** A format's version: a whole number it reads, or refused saying whether it is newer, older or unknown. */
export const Version = ({ current, oldest, reader, upgrade }: Versions) =>
  Schema.Number.pipe(
    Schema.filter((n) =>
      Number.isSafeInteger(n) && n > current
        ? `version ${n} is newer than ${reader} reads (${current}): read it with ${upgrade}`
        : (Number.isSafeInteger(n) && n >= (oldest?.version ?? current)) ||
          (Number.isSafeInteger(n) && oldest !== undefined
            ? `version ${n} ${oldest.before}`
            : `unknown version ${n}: ${reader} reads version ${current}`)
    )
  )

/** The keys of the objects `ast` encodes, each object's in its Schema's order. */
const keysOf = (ast: SchemaAST.AST): Array<string> => {
  switch (ast._tag) {
    case "TypeLiteral":
      return ast.propertySignatures.flatMap((property) => [String(property.name), ...keysOf(property.type)])
    case "Union":
      return ast.types.flatMap(keysOf)
    case "TupleType":
      return [...ast.elements, ...ast.rest].flatMap((element) => keysOf(element.type))
    default:
      return []
  }
}

/**
 * Every key of a format, in its Schema's order: `JSON.stringify` with this list writes any value
 * the same way, whatever the order of its keys.
 */
export const keyOrder = (schema: Schema.Schema.Any): Array<string> => [
  ...new Set(keysOf(SchemaAST.encodedAST(schema.ast)))
]

type Encode = (value: unknown) => unknown

const same: Encode = (value) => value

const hasOwn = (object: object, key: PropertyKey) => Object.prototype.hasOwnProperty.call(object, key)

/** Whether `ast` is a value written as it is: a literal, a string, a number or a boolean, refined or not. */
const isPrimitive = (ast: SchemaAST.AST): boolean =>
  ast._tag === "Refinement"
    ? isPrimitive(ast.from)
    : ast._tag === "Literal" || ast._tag === "StringKeyword" || ast._tag === "NumberKeyword" ||
      ast._tag === "BooleanKeyword"

/** The encoder of `ast` (see `plainEncoder`), or a defect naming the part it does not take. */
const plainEncoderOf = (ast: SchemaAST.AST): Encode => {
  if (isPrimitive(ast)) return same
  switch (ast._tag) {
    case "TupleType": {
      const [item, ...more] = ast.rest
      if (ast.elements.length > 0 || item === undefined || more.length > 0) break
      const encode = plainEncoderOf(item.type)
      return encode === same ? same : (value) => (value as ReadonlyArray<unknown>).map(encode)
    }
    case "Union": {
      // primitives are written as they are, and objects (arrays too) go to the one member left
      const [object, ...more] = ast.types.filter((member) => !isPrimitive(member))
      if (more.length > 0) break
      if (object === undefined) return same
      const encode = plainEncoderOf(object)
      return (value) => (Predicate.isObject(value) ? encode(value) : value)
    }
    case "TypeLiteral": {
      if (ast.indexSignatures.length > 0) break
      const fields = ast.propertySignatures.map((property) => ({
        name: property.name,
        optional: property.isOptional,
        encode: plainEncoderOf(property.type)
      }))
      return (value) => {
        const input = value as Record<PropertyKey, unknown>
        const output: Record<PropertyKey, unknown> = {}
        for (const { encode, name, optional } of fields) {
          if (optional && !hasOwn(input, name)) continue
          output[name] = encode(input[name])
        }
        return output
      }
    }
    case "Transformation": {
      if (ast.transformation._tag !== "TypeLiteralTransformation") break
      const { propertySignatureTransformations } = ast.transformation
      const to = plainEncoderOf(ast.to)
      const from = plainEncoderOf(ast.from)
      return (value) => {
        const object = to(value) as Record<PropertyKey, unknown>
        for (const property of propertySignatureTransformations) {
          const encoded = property.encode(
            hasOwn(object, property.to) ? Option.some(object[property.to]) : Option.none()
          )
          delete object[property.to]
          if (Option.isSome(encoded)) object[property.from] = encoded.value
        }
        return from(object)
      }
    }
  }
  throw new Error(`plainEncoder: a ${ast._tag} is not plain data it encodes (${String(ast)})`)
}

/**
 * What `Schema.encodeSync(schema)` returns for a value this library made, without checking its
 * refinements again (most of what Schema's encoding costs): structs (each object's keys in its
 * Schema's order, others dropped), arrays, literals, unions of one kind of object, and fields
 * with a default left out (`optionalToRequired`). Any other part is refused as the module loads.
 */
export const plainEncoder = <A, I>(schema: Schema.Schema<A, I>): (value: A) => I =>
  plainEncoderOf(schema.ast) as (value: A) => I

/**
 * The checksum of every format written now: the fingerprint of the format's value but its
 * checksum (64 bits of its canonical JSON, every object's keys in code-unit order: fingerprint.ts),
 * so one value has one checksum whatever the order of the keys of the text it was read from.
 */
export const checksum = (body: object): string => fingerprint(body)

/**
 * `body`'s text as a format writes it: its keys in the order of the format's Schema (`keyOrder`).
 * Versions written before `checksum` hashed this text: it is how they are checked.
 */
export const textOf = (body: object, keys: Array<string>): string => JSON.stringify(body, keys)

/** An object's text with its checksum added as the last key: what every format writes. */
export const seal = (text: string, checksum: string): string => `${text.slice(0, -1)},"checksum":"${checksum}"}`

const sealed = /,"checksum":"([0-9a-f]+)"\}$/

/** The text `seal` was given and the checksum it added; undefined when `line` does not end with one. */
export const unseal = (line: string): { readonly text: string; readonly checksum: string } | undefined => {
  const found = sealed.exec(line)
  return found === null ? undefined : { text: `${line.slice(0, found.index)}}`, checksum: found[1] ?? "" }
}

/** FNV-1a (32 bits) of the UTF-16 code units of `text`, as 8 hex digits: a scan's checkpoint of version 1, read, no longer written. */
export const fnv1a = (text: string): string => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return (hash >>> 0).toString(16).padStart(8, "0")
}

/** A checksum that is not the content's, at `input`: the text was changed since it was written. */
export const checksumRefused = (input: string) =>
  invalidCheckpoint("checksum", input, "does not match the content: the checkpoint was changed or damaged")

const quote = 0x22
const backslash = 0x5c

/** Whether the quote at `at` is escaped: an odd run of backslashes before it. */
const isEscaped = (text: string, at: number): boolean => {
  let run = 0
  while (text.charCodeAt(at - 1 - run) === backslash) run++
  return run % 2 === 1
}

/**
 * Whether brackets outside strings nest deeper than `limit` in `text`: one pass, strings skipped
 * by `indexOf` (a checkpoint's bulk is one string), and no parser's stack to overflow.
 */
const nestsDeeperThan = (text: string, limit: number): boolean => {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === quote) {
      let end = text.indexOf("\"", i + 1)
      while (end !== -1 && isEscaped(text, end)) end = text.indexOf("\"", end + 1)
      // an unterminated string is JSON.parse's to report
      if (end === -1) return false
      i = end
    } else if (code === 0x5b || code === 0x7b) {
      if (++depth > limit) return true
    } else if (code === 0x5d || code === 0x7d) {
      depth--
    }
  }
  return false
}

/** How large and how deep a format's text may be. */
export interface Bounds {
  readonly chars: number
  readonly depth: number
}

/**
 * The JSON value of a checkpoint's text (`input` names it), its size and nesting bounded before
 * JSON.parse runs: what comes after it (Schema, its error messages) recurses.
 */
export const parse = (text: string, bounds: Bounds, input: string): Either.Either<unknown, InvalidCheckpoint> => {
  if (typeof text !== "string") return Either.left(invalidCheckpoint("not JSON", input, "must be a string"))
  if (text.length > bounds.chars) {
    return Either.left(invalidCheckpoint(
      "too large",
      input,
      `is ${text.length.toLocaleString("en-US")} characters, more than the ${
        bounds.chars.toLocaleString("en-US")
      } a checkpoint may have`
    ))
  }
  if (nestsDeeperThan(text, bounds.depth)) {
    return Either.left(
      invalidCheckpoint("too deep", input, `is nested deeper than ${bounds.depth} levels, as no checkpoint is`)
    )
  }
  try {
    return Either.right(JSON.parse(text))
  } catch (error) {
    const detail = error instanceof Error ? `: ${error.message}` : ""
    return Either.left(invalidCheckpoint("not JSON", input, `is not JSON (truncated, or not a checkpoint)${detail}`))
  }
}

/** `json` as an object with `key`, or refused as not `what` it should be at all. */
export const objectWith = (json: unknown, key: string, what: string) =>
  Predicate.isRecord(json) && key in json
    ? Either.right(json)
    : Either.left(
      invalidCheckpoint("not a checkpoint", "checkpoint", `is not ${what}: a JSON object with a ${key} is expected`)
    )

/** What a checkpoint's decoding refused at `path` (its keys from the top): the version, the checksum, or another field. */
const problemAt = (path: ReadonlyArray<PropertyKey>): CheckpointProblem => {
  const key = path.at(-1)
  return key === "version" || key === "checksum" ? key : "field"
}

/**
 * A decoder of a format's JSON value by `schema`, its first failure an `InvalidCheckpoint` at the
 * failing key's path under `root` (the path alone when `root` is empty).
 */
export const decoder = <A, I>(schema: Schema.Schema<A, I>, options?: SchemaAST.ParseOptions) => {
  const decode = Schema.decodeUnknownEither(schema, { ...options, errors: "first" })
  return (json: unknown, root: string): Either.Either<A, InvalidCheckpoint> =>
    Either.mapLeft(decode(json), (error) => {
      const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
      const path = issue?.path ?? []
      const input = [...(root === "" ? [] : [root]), ...path.map(String)].join(".")
      return invalidCheckpoint(problemAt(path), input, issue?.message ?? error.message)
    })
}
