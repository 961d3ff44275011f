// `routedoctor explain BLOCK` on a live node (it collects what one block's chain reads, not the table),
// against `explain` of the same kind of block on the shipped example (examples/bird2-ecmp-not-tunneled), in the same
// run. bird-lab.mjs's lab with COUNT blocks: n1's BIRD 2 learnt them over iBGP and exported them to its kernel.
// The two commands run in turn, RUNS times each, both inside n1's namespace (`ip netns exec` costs both the same);
// the medians are compared (on a shared host a best or a mean of a few runs says less). Also their CPU time
// (user + kernel, time(1)), which other processes on the machine disturb less than wall time.
// Prints one JSON line: {count, runs, block, live: {wall, cpu, rss, walls}, example: {...}, ratio, cpuRatio, verdict}.
// Needs root, ip(8) and BIRD 2 (bird-lab.mjs).
// Usage: node bench/live-explain.mjs [COUNT] [RUNS]
import {spawn} from 'node:child_process'
import path from 'node:path'
import {performance} from 'node:perf_hooks'
import {fileURLToPath} from 'node:url'

import {blockOf} from './apply-routes.mjs'
import {labScript, startLab} from './bird-lab.mjs'
import {timed, timeOf} from './time.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(HERE, '..')
const BIN = path.join(ROOT, 'bin', 'run.js')
const EXAMPLE = path.join(ROOT, 'examples', 'bird2-ecmp-not-tunneled')
const count = Number(process.argv[2] ?? 100000)
const runs = Math.max(1, Number(process.argv[3] ?? 7))

labScript('rdexplain')

function run(argv) {
  return new Promise((resolve) => {
    const {cmd, timeFile} = timed(argv)
    const t0 = performance.now()
    const p = spawn(cmd[0], cmd.slice(1), {stdio: ['ignore', 'pipe', 'pipe']})
    let stdout = ''
    let stderr = ''
    p.stdout.on('data', (d) => (stdout += d))
    p.stderr.on('data', (d) => (stderr += d))
    p.on('close', (code) => {
      const {rss, user, sys} = timeOf(timeFile)
      resolve({
        wall: (performance.now() - t0) / 1000,
        cpu: user + sys,
        rss,
        code,
        stdout,
        stderr: stderr.trim().slice(-300),
      })
    })
  })
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

function summary(rs) {
  return {
    wall: median(rs.map((r) => r.wall)),
    cpu: median(rs.map((r) => r.cpu)),
    rss: median(rs.map((r) => r.rss)),
    walls: rs.map((r) => Number(r.wall.toFixed(3))),
  }
}

async function main() {
  const lab = await startLab(count, {prefix: `rdexpl-${process.pid}`})
  // a block inside the pool 10.0.0.0/8, which holds 2^18 /26 blocks: beyond that the lab's blocks leave it
  const block = blockOf(Math.max(1, Math.floor(Math.min(count, 2 ** 18) / 2)))
  const inNs = (args) => ['ip', 'netns', 'exec', lab.ns.n1, process.execPath, BIN, ...args]
  const liveArgs = ['explain', block, '--bird-socket', lab.sock.n1, '--bird-conf', lab.conf.n1, '--pool', '10.0.0.0/8=ipip']
  const exampleArgs = ['explain', '192.168.110.128/26', '--from', EXAMPLE]
  const live = []
  const example = []
  let verdict
  for (let i = 0; i < runs; i++) {
    const e = await run(inNs(exampleArgs))
    const l = await run(inNs(liveArgs))
    for (const [what, r] of [['example', e], ['live', l]]) if (r.code !== 0 && r.code !== 1) throw new Error(`explain (${what}): exit ${r.code} ${r.stderr}`) // 1: it found errors
    verdict ??= l.stdout.split('\n')[0]
    example.push(e)
    live.push(l)
  }
  lab.teardown()
  const L = summary(live)
  const E = summary(example)
  console.log(
    JSON.stringify({count, runs, block, live: L, example: E, ratio: L.wall / E.wall, cpuRatio: L.cpu / E.cpu, verdict}),
  )
}

try {
  await main()
} catch (error) {
  console.log(JSON.stringify({error: error.message})) // a report, not a test: exit 0
}
