/**
 * Schema decoding with a compiled fast path. Effect's Schema parser costs as much per row as
 * `JSON.parse`; for the nodes whose parser only checks and copies, a parser compiled once from the
 * Schema's AST builds the same output far faster, and hands everything else (every invalid input
 * among it) to Schema, so the shape and the errors still come from the Schema alone.
 */
import { Either, Option, type ParseResult, Schema, SchemaAST as AST } from "effect"

/** What a compiled parser returns for an input it does not vouch for: Schema's own parser decides. */
export const undecided: unique symbol = Symbol("effect-microapp/undecided")

/** A parser compiled from a Schema AST: Schema's output for the inputs it accepts, `undecided` for the rest. */
type Compiled = (input: unknown) => unknown

const identity: Compiled = (input) => input

const typeOf = (type: "string" | "number" | "boolean"): Compiled => (input) => typeof input === type ? input : undecided

const kind = { string: 1, number: 2, boolean: 4, undefined: 8, null: 16, object: 32, array: 64, other: 128 } as const
const anyKind = 255

/** The kinds of value a node can accept (a bit mask of `kind`), for telling union members apart. */
const kinds = (ast: AST.AST): number => {
  switch (ast._tag) {
    case "StringKeyword":
      return kind.string
    case "NumberKeyword":
      return kind.number
    case "BooleanKeyword":
      return kind.boolean
    case "UndefinedKeyword":
      return kind.undefined
    case "Literal":
      return ast.literal === null
        ? kind.null
        : typeof ast.literal === "string"
        ? kind.string
        : typeof ast.literal === "number"
        ? kind.number
        : typeof ast.literal === "boolean"
        ? kind.boolean
        : kind.other
    case "Refinement":
      return kinds(ast.from)
    case "TupleType":
      return kind.array
    case "TypeLiteral":
      return ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0
        ? anyKind & ~(kind.null | kind.undefined)
        : kind.object
    case "Union":
      return ast.types.reduce((mask, type) => mask | kinds(type), 0)
    default:
      return anyKind
  }
}

/**
 * Compiles `ast` for decoding with `options` when every node is one whose Schema parser only checks
 * and copies (keywords, literals, refinements, structs, arrays, unions): the result builds the same
 * output as `Schema.decodeUnknown` (keys in the same order, arrays copied alike) for the inputs it
 * accepts, so the shape still comes from the Schema alone. An object whose keys and values come out
 * as they went in is handed on, not copied: every input here is JSON the client has just parsed and
 * holds nowhere else, and a copy of each row would only feed the garbage collector; an array alike.
 * `checked`: every input is one `faultOf` found nothing in (no `__proto__` key) and has no symbol
 * keys, as `JSON.parse` makes none. Any other node (transformations, declarations, recursion,
 * per-node parse options) gives `undefined`: Schema's parser is used as is.
 */
const compile = (ast: AST.AST, options: AST.ParseOptions, checked: boolean): Compiled | undefined => {
  if (Option.isSome(AST.getParseOptionsAnnotation(ast))) return undefined
  switch (ast._tag) {
    case "StringKeyword":
      return typeOf("string")
    case "NumberKeyword":
      return typeOf("number")
    case "BooleanKeyword":
      return typeOf("boolean")
    case "UndefinedKeyword":
      return (input) => input === undefined ? input : undecided
    case "UnknownKeyword":
    case "AnyKeyword":
      return identity
    case "Literal": {
      const literal = ast.literal
      return (input) => input === literal ? input : undecided
    }
    case "Refinement": {
      const from = compile(ast.from, options, checked)
      if (from === undefined) return undefined
      return (input) => {
        const output = from(input)
        return output !== undecided && Option.isNone(ast.filter(output, options, ast)) ? output : undecided
      }
    }
    case "TupleType": {
      const [rest, ...afterRest] = ast.rest
      if (afterRest.length > 0 || ast.elements.some((element) => element.isOptional)) return undefined
      const elements = ast.elements.map((element) => compile(element.type, options, checked))
      const restElement = rest === undefined ? undefined : compile(rest.type, options, checked)
      if (elements.some((element) => element === undefined) || (rest !== undefined && restElement === undefined)) {
        return undefined
      }
      const fixed = elements.filter((element): element is Compiled => element !== undefined)
      // an array of anything (`Schema.Array(Schema.Unknown)`): nothing to look at in its items
      if (fixed.length === 0 && restElement === identity) return (input) => Array.isArray(input) ? input : undecided
      return (input) => {
        if (!Array.isArray(input)) return undecided
        if (restElement === undefined ? input.length !== fixed.length : input.length < fixed.length) return undecided
        // a copy only from the first item that decodes to another value, as for objects below
        let output: Array<unknown> | undefined
        for (let i = 0; i < input.length; i++) {
          const value: unknown = input[i]
          const item = (fixed[i] ?? restElement ?? identity)(value)
          if (item === undecided) return undecided
          if (output !== undefined) output.push(item)
          else if (item !== value) (output = input.slice(0, i)).push(item)
        }
        return output ?? input
      }
    }
    case "TypeLiteral": {
      if (ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0) {
        return (input) => input === null || input === undefined ? undecided : input
      }
      const properties: Array<{ readonly name: string; readonly optional: boolean; readonly parse: Compiled }> = []
      for (const property of ast.propertySignatures) {
        const parse = compile(property.type, options, checked)
        if (typeof property.name !== "string" || parse === undefined) return undefined
        properties.push({ name: property.name, optional: property.isOptional, parse })
      }
      const [index, ...moreIndexes] = ast.indexSignatures
      if (moreIndexes.length > 0 || (index !== undefined && index.parameter._tag !== "StringKeyword")) return undefined
      const indexValue = index === undefined ? undefined : compile(index.type, options, checked)
      if (index !== undefined && indexValue === undefined) return undefined
      const named = new Set(properties.map((property) => property.name))
      const hasOwn = (record: object, key: string) => Object.prototype.hasOwnProperty.call(record, key)
      /** Schema's way: the named keys in the Schema's order, then the other keys in the input's order. */
      const build = (record: Record<string, unknown>, keys: ReadonlyArray<string>): unknown => {
        const output: Record<string, unknown> = {}
        for (const property of properties) {
          // a required key that is missing is decoded as `undefined` by Schema: left to it
          if (!hasOwn(record, property.name)) {
            if (property.optional) continue
            return undecided
          }
          const value = property.parse(record[property.name])
          if (value === undecided) return undecided
          output[property.name] = value
        }
        if (indexValue !== undefined) {
          // as Schema does: every key's value is checked, the named ones are not copied twice
          for (const key of keys) {
            const value = indexValue(record[key])
            if (value === undecided) return undecided
            if (!named.has(key)) output[key] = value
          }
        }
        return output
      }
      const count = properties.length
      /** Whether every named property from `from` on may be left out, and is. */
      const restAbsent = (record: object, from: number): boolean => {
        for (let p = from; p < count; p++) {
          const property = properties[p]
          if (property === undefined || !property.optional || hasOwn(record, property.name)) return false
        }
        return true
      }
      return (input) => {
        if (typeof input !== "object" || input === null || Array.isArray(input)) return undecided
        const record = input as Record<string, unknown>
        // a spread copies what `build` would, in its order, when the named keys come first in the
        // Schema's order and every other key is kept; not for keys a spread and `build` treat apart
        if (!checked && (hasOwn(record, "__proto__") || Object.getOwnPropertySymbols(record).length > 0)) {
          return build(record, Object.keys(record))
        }
        // for-in, in the order of Object.keys for JSON, allocates no array of keys or values; a key
        // it finds on a prototype is out of the named keys' order, or one more key to check
        let output: Record<string, unknown> | undefined
        let next = 0
        for (const key in record) {
          const value = record[key]
          if (next < count) {
            let property = properties[next]
            // the named properties before this key must be optional and absent
            while (property !== undefined && property.name !== key) {
              if (!property.optional || hasOwn(record, property.name)) return build(record, Object.keys(record))
              property = properties[++next]
            }
            if (property !== undefined) {
              next++
              const decoded = property.parse(value)
              if (decoded === undecided) return undecided
              if (decoded !== value) (output ??= { ...record })[key] = decoded
              // as Schema does: a named key's value is checked by the index signature too, not copied twice
              if (indexValue !== undefined && indexValue !== identity && indexValue(value) === undecided) {
                return undecided
              }
              continue
            }
          }
          if (indexValue === undefined) return build(record, Object.keys(record))
          // every named key is behind, and the rest are kept as they are: nothing left to look at
          if (indexValue === identity && next >= count) break
          const decoded = indexValue(value)
          if (decoded === undecided) return undecided
          if (decoded !== value) (output ??= { ...record })[key] = decoded
        }
        return restAbsent(record, next) ? output ?? record : build(record, Object.keys(record))
      }
    }
    case "Union": {
      const members: Array<Compiled> = []
      for (const type of ast.types) {
        const member = compile(type, options, checked)
        if (member === undefined) return undefined
        members.push(member)
      }
      const masks = ast.types.map(kinds)
      if (masks.every((mask, i) => masks.every((other, j) => i === j || (mask & other) === 0))) {
        // members that accept different kinds of value: the first to accept is the only one
        return (input) => {
          for (const member of members) {
            const output = member(input)
            if (output !== undecided) return output
          }
          return undecided
        }
      }
      // otherwise only an input exactly one member accepts is vouched for: which one Schema tries first is moot
      return (input) => {
        let output: unknown = undecided
        for (const member of members) {
          const result = member(input)
          if (result === undecided) continue
          if (output !== undecided) return undecided
          output = result
        }
        return output
      }
    }
    default:
      return undefined
  }
}

/**
 * `Schema.decodeUnknownEither(schema, options)` with a compiled fast path: the same result for
 * every input, the Schema parser running only for what the compiled one does not vouch for (among
 * them every invalid input, so errors are Schema's own). `checked`: the decoder is given only JSON
 * that `faultOf` found nothing in.
 */
export const makeDecoder = <A, I>(
  schema: Schema.Schema<A, I>,
  options: AST.ParseOptions = {},
  checked = false
): {
  readonly decode: (input: unknown) => Either.Either<A, ParseResult.ParseError>
  /** The decoded value, or `undecided` when only the Schema parser can tell. */
  readonly fast: (input: unknown) => A | typeof undecided
} => {
  const slow = Schema.decodeUnknownEither(schema, options)
  // the compiled parser follows the default handling of excess keys, missing keys and key order
  const defaults = options.onExcessProperty === undefined && options.exact === undefined &&
    options.propertyOrder === undefined
  const compiled = defaults ? compile(schema.ast, options, checked) : undefined
  type Fast = (input: unknown) => A | typeof undecided
  // the compiled parser builds what Schema's would for this AST, so its output has the Schema's type
  const fast: Fast = compiled === undefined ? () => undecided : compiled as Fast
  return {
    fast,
    decode: (input) => {
      const output = fast(input)
      return output === undecided ? slow(input) : Either.right(output)
    }
  }
}
