/**
 * Figure 4, decode cost per row: the demo Projects row through the client's row decoder, beside
 * what Schema itself costs for the same `Row` (decode, `is`, `validate`) and what `JSON.parse` costs;
 * a change pass's step (the row walk feeding the fingerprint, the id, the decode) beside the
 * fingerprint alone; and the exact-number check of a page's text beside `JSON.parse` of it.
 */
import { Either, Schema } from "effect"
import { isDeepStrictEqual } from "node:util"
import { fingerprint } from "../../src/internal/fingerprint.js"
import { makeRowDecoder, schemaStep } from "../../src/internal/http/decode.js"
import { identified } from "../../src/internal/http/identify.js"
import { readExact } from "../../src/internal/http/plainData.js"
import { Row } from "../../src/Row.js"
import { makeProjectRows } from "../../src/testing/index.js"
import { failed, finish, formatRatio, median, options, type Report, rotate } from "./common.js"

interface Method {
  readonly label: string
  /** Runs over every sample row once; returns how many it accepted. */
  readonly run: () => number
}

const info = { endpoint: { path: "/api/microappdata", write: false }, attempt: 1, status: 200 }

const main = (): Report => {
  const opts = options()
  const size = opts.number("rows", 2_000, 200)
  const rounds = opts.number("rounds", 15, 2)
  const repeat = opts.number("repeat", 10, 1)

  const texts = makeProjectRows(size).map((row) => JSON.stringify(row))
  const parsed: ReadonlyArray<unknown> = texts.map((text) => JSON.parse(text))
  const indexes = parsed.map((_, i) => i)

  const clientDecoder = makeRowDecoder(Row, "fail")
  const changeStep = identified(schemaStep(Row, false), { policy: "fail" })
  // a page as the service sends it, whose numbers all pass: the exact-number check's common case
  const pageText = `{"status":"success","body":{"microAppRows":[${texts.join(",")}]}}`
  const decodeFirst = Schema.decodeUnknownEither(Row, { errors: "first" })
  const decodeAll = Schema.decodeUnknownEither(Row)
  const is = Schema.is(Row)
  const validate = Schema.validateEither(Row, { errors: "first" })

  // the client's decoder must give exactly Schema's rows, key order included
  const ours = clientDecoder(parsed, indexes, info)
  const schemas = parsed.map((row) => Either.getOrThrow(decodeFirst(row)))
  if (
    Either.isLeft(ours) || !isDeepStrictEqual(ours.right.rows, schemas) ||
    JSON.stringify(ours.right.rows) !== JSON.stringify(schemas)
  ) {
    throw new Error("the client's row decoder and Schema.decodeUnknownEither(Row) disagree")
  }

  const count = (accept: (row: unknown) => boolean) => () => {
    let accepted = 0
    for (const row of parsed) if (accept(row)) accepted++
    return accepted
  }
  const methods: ReadonlyArray<Method> = [
    {
      label: "client row decoder (the `Row` Schema, a page at a time)",
      run: () => Either.match(clientDecoder(parsed, indexes, info), { onLeft: () => 0, onRight: (d) => d.rows.length })
    },
    {
      label: "`Schema.decodeUnknownEither(Row, { errors: \"first\" })` (the row decoder before)",
      run: count((row) => Either.isRight(decodeFirst(row)))
    },
    { label: "`Schema.decodeUnknownEither(Row)` (all errors)", run: count((row) => Either.isRight(decodeAll(row))) },
    { label: "`Schema.is(Row)` (validate only)", run: count(is) },
    {
      label: "`Schema.validateEither(Row, { errors: \"first\" })`",
      run: count((row) => Either.isRight(validate(row)))
    },
    {
      label: "`JSON.parse` of the row (for scale)",
      run: () => texts.filter((text) => JSON.parse(text) !== null).length
    },
    {
      label: "change pass step (the row walk with the fingerprint, the id, the `Row` Schema), a page at a time",
      run: () => Either.match(changeStep(parsed, indexes, info), { onLeft: () => 0, onRight: (d) => d.rows.length })
    },
    { label: "`fingerprint` of the row alone", run: count((row) => fingerprint(row).length === 16) },
    {
      label: "`readExact` of the page's text (the exact-number check and `JSON.parse`), a row's share",
      run: () => "value" in readExact(pageText) ? size : 0
    },
    { label: "`JSON.parse` of the page's text, a row's share", run: () => JSON.parse(pageText) === null ? 0 : size }
  ]

  const micros = new Map<string, Array<number>>(methods.map((m) => [m.label, []]))
  for (let round = 0; round < rounds; round++) {
    for (const method of rotate(methods, round)) {
      const start = performance.now()
      for (let r = 0; r < repeat; r++) {
        if (method.run() !== size) throw new Error(`${method.label} rejected a demo row`)
      }
      // the first round warms the JIT up
      const perRowMicros = (performance.now() - start) * 1000 / (size * repeat)
      if (round > 0 || rounds === 1) micros.get(method.label)?.push(perRowMicros)
    }
  }
  const perRow = (label: string) => median(micros.get(label) ?? [])
  const client = methods[0]?.label ?? ""
  const schema = methods[1]?.label ?? ""
  const parse = methods[5]?.label ?? ""
  const change = methods[6]?.label ?? ""
  const exact = methods[8]?.label ?? ""
  const pageParse = methods[9]?.label ?? ""
  const bytes = Math.round(texts.reduce((n, text) => n + text.length, 0) / size)
  const details = [
    `### Decode cost per row: demo Projects row (${bytes} bytes of JSON), median of ${Math.max(1, rounds - 1)} rounds`,
    "",
    "| Method | µs per row | vs client decoder |",
    "|---|---:|---:|",
    ...methods.map((m) =>
      `| ${m.label} | ${perRow(m.label).toFixed(2)} | ${formatRatio(perRow(m.label) / perRow(client), 1)}x |`
    )
  ].join("\n")
  return {
    title: "decode",
    findings: [{
      figure: "Decode cost per demo Projects row",
      measured: `${perRow(client).toFixed(2)} µs (Schema decode ${perRow(schema).toFixed(2)} µs, JSON.parse ${
        perRow(parse).toFixed(2)
      } µs)`,
      goal: "",
      met: undefined
    }, {
      figure: "A change pass's step per demo Projects row",
      measured: `${perRow(change).toFixed(2)} µs (the reader's ${perRow(client).toFixed(2)} µs)`,
      goal: "",
      met: undefined
    }, {
      figure: "The exact-number check of a page with no long number",
      measured: `${formatRatio(perRow(exact) / perRow(pageParse), 2)}x JSON.parse of the page`,
      goal: "",
      met: undefined
    }],
    details
  }
}

try {
  finish(main())
} catch (error) {
  failed(error)
}
