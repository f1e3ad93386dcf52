/**
 * The README's install lines, as a newcomer with a clone runs them: the package packed in the clone
 * as npm publishes it, installed into an empty project beside the clone with exactly the README's
 * client-only line, then the README's first example run there against an emulator; then the
 * README's Node line, and the quick start of docs/ run there too; then the command line's line, into
 * a prefix of the test's own. The registry serves the Effect 3 packages each line names.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { transformSync } from "esbuild"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { MicroappServer, projectsMicroAppID } from "../src/testing/index.js"

const root = path.resolve(import.meta.dirname, "..")
const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")

/** The line of the README's install block that ends with this comment. */
const installLine = (comment: string): string => {
  const block = /## Install[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? ""
  const line = block.split("\n").find((text) => text.endsWith(`# ${comment}`))
  if (line === undefined) throw new Error(`no install line for ${comment} in the README`)
  return line.replace(/#.*$/, "").trim()
}

/** The TypeScript block quoting a scratchpad file, in a page, as JavaScript a consumer runs. */
const example = (page: string, file: string): string => {
  const text = fs.readFileSync(path.join(root, page), "utf8")
  const code = new RegExp(`<!-- scratchpad/${file} -->\\n\`\`\`ts\\n([\\s\\S]*?)\`\`\``).exec(text)?.[1]
  if (code === undefined) throw new Error(`${page} quotes no scratchpad/${file}`)
  return transformSync(code, { loader: "ts", format: "esm", target: "node20" }).code
}

/** A command's exit code and output; the test's own event loop keeps serving the emulator meanwhile. */
const exec = (command: string, args: ReadonlyArray<string>, options: { cwd: string; env?: NodeJS.ProcessEnv }) =>
  Effect.promise(() =>
    promisify(execFile)(command, args, { ...options, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 }).then(
      ({ stderr, stdout }) => ({ status: 0, stdout, stderr }),
      (error: { code?: number; stdout?: string; stderr?: string }) => ({
        status: error.code ?? 1,
        stdout: error.stdout ?? "",
        stderr: error.stderr ?? ""
      })
    )
  )

/**
 * The clone after the README's `npm install && npm pack`, in a folder named `effect-microapp`: the
 * package as `npm pack` makes it, from the dist/ the suite's setup built (modules and bin): what
 * runs here is JavaScript; tsc's declarations are package.test.ts's, and a second tsc build was
 * nearly half of this file's CPU.
 */
const pack = (parent: string) =>
  Effect.gen(function*() {
    const clone = path.join(parent, "effect-microapp")
    fs.mkdirSync(clone)
    for (const file of ["package.json", "README.md", "LICENSE"]) {
      fs.copyFileSync(path.join(root, file), path.join(clone, file))
    }
    fs.cpSync(path.join(root, "dist"), path.join(clone, "dist"), { recursive: true })
    const packed = yield* exec("npm", ["pack", "--ignore-scripts", "--json"], { cwd: clone })
    return JSON.parse(packed.stdout)[0].filename as string
  })

/** Runs an install line as the README writes it, in the project beside the clone. */
const install = (project: string, line: string, ...extra: ReadonlyArray<string>) =>
  Effect.map(
    exec("npm", [...line.split(/\s+/).slice(1), ...extra, "--no-audit", "--no-fund"], { cwd: project }),
    (result) => ({ status: result.status, output: `${result.stdout}${result.stderr}` })
  )

const run = (project: string, code: string, env: Record<string, string>) => {
  fs.writeFileSync(path.join(project, "example.mjs"), code)
  return exec(process.execPath, ["example.mjs"], { cwd: project, env: { ...process.env, ...env } })
}

describe("installed from the README's lines into an empty project", () => {
  it.live(
    "the client-only line, then the first example against the service; the Node line, then the quick start",
    () =>
      Effect.gen(function*() {
        const server = yield* MicroappServer
        const parent = fs.mkdtempSync(path.join(os.tmpdir(), "effect-microapp-newcomer-"))
        const project = path.join(parent, "app")
        fs.mkdirSync(project)
        fs.writeFileSync(
          path.join(project, "package.json"),
          JSON.stringify({ name: "consumer", version: "1.0.0", private: true, type: "module" })
        )
        const tarball = yield* pack(parent)
        expect(installLine("in the clone: writes " + tarball)).toBe("npm install && npm pack")

        const client = yield* install(project, installLine("the client"))
        expect(client.output).not.toMatch(/ERESOLVE|overriding peer|Could not resolve/i)
        expect(client.status).toBe(0)
        const installed = JSON.parse(fs.readFileSync(path.join(project, "node_modules/effect/package.json"), "utf8"))
        expect(installed.version).toMatch(/^3\./)
        expect(fs.existsSync(path.join(project, "node_modules/@effect/platform-node"))).toBe(false)
        const first = yield* run(project, example("README.md", "realService.ts"), {
          MICROAPP_BASE_URL: server.baseUrl,
          MICROAPP_AUTH_TOKEN: server.credentials.authToken,
          MICROAPP_USER_ID: server.credentials.userId,
          MICROAPP_ID: projectsMicroAppID
        })
        expect(first.stderr).toBe("")
        expect(first.stdout).toMatch(/^open rows: [1-9]\d*\n$/)

        const node = yield* install(project, installLine("the emulator and Node's transport"))
        expect(node.output).not.toMatch(/ERESOLVE|overriding peer|Could not resolve/i)
        expect(node.status).toBe(0)
        const quickstart = yield* run(project, example("docs/quickstart.md", "quickstart.ts"), {})
        expect(quickstart.stderr).toBe("")
        expect(quickstart.stdout).toContain("rows in the table: 2500")

        const prefix = path.join(parent, "global")
        const cli = yield* install(project, installLine("the microapp command line"), "--prefix", prefix)
        expect(cli.status, cli.output).toBe(0)
        const version = yield* exec(path.join(prefix, "bin", "microapp"), ["--version"], { cwd: project })
        expect(version.stdout.trim()).toBe(JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).version)
        fs.rmSync(parent, { recursive: true, force: true })
      }).pipe(Effect.provide(MicroappServer.layer({ demoRows: 1200 }).pipe(Layer.provide(NodeHttpClient.layerUndici)))),
    { timeout: 600_000 }
  )
})
