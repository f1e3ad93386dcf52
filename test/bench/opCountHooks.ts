/**
 * Module hooks for opCount.ts: Effect's core, as it is loaded, made to report every operation its
 * fibers run (`FiberRuntime.runLoop`, one pass a step), every step of a stream's channel
 * (`ChannelExecutor.run`), and every effect made (`EffectPrimitive`'s constructors), to the
 * functions opCount.ts puts on `globalThis`. Only the text of Effect's own modules is changed.
 */
interface LoadResult {
  readonly format?: string
  readonly source?: string | ArrayBuffer | Uint8Array
}
type NextLoad = (url: string, context: object) => Promise<LoadResult>

/** In a module of `effect`, the text `from` replaced by `to`, each once or everywhere. */
const patches: ReadonlyArray<readonly [file: string, from: string, to: string]> = [
  [
    "/internal/core.js",
    "constructor(_op) {\n    this._op = _op;\n  }",
    "constructor(_op) {\n    this._op = _op;\n    globalThis.__effectMade?.(this);\n  }"
  ],
  [
    "/internal/fiberRuntime.js",
    "this.currentOpCount = 0;\n    while (true) {",
    "this.currentOpCount = 0;\n    while (true) {\n      globalThis.__effectRun?.(cur, this);"
  ],
  [
    "/internal/channel/channelExecutor.js",
    "while (result === undefined) {",
    "while (result === undefined) {\n      globalThis.__channelStep?.(this._currentChannel);"
  ]
]

export const load = async (url: string, context: object, nextLoad: NextLoad): Promise<LoadResult> => {
  const result = await nextLoad(url, context)
  const patch = url.includes("/node_modules/effect/dist/esm/")
    ? patches.filter(([file]) => url.endsWith(file))
    : []
  if (patch.length === 0 || result.source === undefined) return result
  let source = typeof result.source === "string" ? result.source : new TextDecoder().decode(result.source)
  for (const [file, from, to] of patch) {
    if (!source.includes(from)) throw new Error(`opCount: ${file} of this effect is not the one these hooks know`)
    source = source.replaceAll(from, to)
  }
  return { ...result, source }
}
