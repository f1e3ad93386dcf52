/**
 * Checkpointed exports: `microapp rows --output FILE --checkpoint CKPT`, a checkpoint after every
 * page, against the same export without `--checkpoint`, in turns, each run a `microapp` process of
 * its own against the stand-in server. CKPT holds the sink-held checkpoint (O(page)), so the cost
 * of checkpointing no longer grows with the rows already written.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  failed,
  finish,
  formatInt,
  formatRatio,
  median,
  microapp,
  options,
  type Report,
  rotate,
  startServer
} from "./common.js"

/** One `microapp rows` process exporting the table to a fresh FILE: its time, and FILE's and CKPT's sizes. */
const exportOnce = async (baseUrl: string, dir: string, checkpoint: boolean) => {
  const file = path.join(dir, `out-${checkpoint}.ndjson`)
  const ckpt = path.join(dir, "out.ckpt")
  fs.rmSync(file, { force: true })
  fs.rmSync(ckpt, { force: true })
  const { millis } = await microapp(baseUrl, dir, [
    "rows",
    "64d000000000000000000001",
    "--output",
    file,
    ...(checkpoint ? ["--checkpoint", ckpt] : [])
  ])
  return { millis, bytes: fs.statSync(file).size, ckptBytes: checkpoint ? fs.statSync(ckpt).size : 0 }
}

const main = async (): Promise<Report> => {
  const opts = options()
  const rows = opts.number("rows", 300_000, 3_000)
  const rounds = opts.number("rounds", 3, 1)
  const server = await startServer({ rows, delayMillis: 0 })
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "microapp-export-"))
  const times = new Map<boolean, Array<number>>([[false, []], [true, []]])
  let ckptBytes = 0
  try {
    for (let round = 0; round < rounds; round++) {
      const sizes: Array<number> = []
      for (const checkpoint of rotate([false, true], round)) {
        const run = await exportOnce(server.baseUrl, dir, checkpoint)
        times.get(checkpoint)?.push(run.millis)
        sizes.push(run.bytes)
        if (checkpoint) ckptBytes = run.ckptBytes
      }
      if (sizes[0] !== sizes[1]) throw new Error(`the two exports differ: ${sizes.join(" and ")} bytes`)
    }
  } finally {
    server.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  }
  const plain = median(times.get(false) ?? [])
  const checkpointed = median(times.get(true) ?? [])
  const ratio = checkpointed / plain
  const details = [
    `### A ${formatInt(rows)}-row export with \`microapp rows --output FILE\`, median of ${rounds} rounds in turns`,
    "",
    "| Run | Time | CKPT |",
    "|---|---:|---:|",
    `| no \`--checkpoint\` | ${(plain / 1000).toFixed(1)} s | |`,
    `| \`--checkpoint CKPT\`, a checkpoint after every page (sink-held) | ${(checkpointed / 1000).toFixed(1)} s | ${
      formatInt(ckptBytes)
    } bytes |`
  ].join("\n")
  return {
    title: "export",
    findings: [{
      figure: `Checkpointed export of ${formatInt(rows)} rows, a checkpoint every page`,
      measured: `${formatRatio(ratio)}x the time without (${(checkpointed / 1000).toFixed(1)} s against ${
        (plain / 1000).toFixed(1)
      } s); CKPT ${formatInt(ckptBytes)} bytes`,
      goal: "at most 1.2x",
      met: ratio <= 1.2
    }],
    details
  }
}

main().then(finish, failed)
