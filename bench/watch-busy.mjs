// `routedoctor watch --reconcile --listen` on bird-lab.mjs's lab with COUNT blocks (n1's kernel routes them off the
// tunnel: every block has a correction planned): the worst /healthz answer, polled every 20 ms from inside n1 for
// SECONDS, while (1) one block's route is corrected, two seconds in (a diagnosis of the prefix, then a plan of the
// whole node), and (2) a /report is made. --settle 3600: nothing is written. Prints one JSON line a phase.
// Needs root, ip(8) and BIRD 2. Usage: node bench/watch-busy.mjs [COUNT] [SECONDS]
import {spawn} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {blockOf} from './apply-routes.mjs'
import {sh, startLab} from './bird-lab.mjs'

const BIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'run.js')
const count = Number(process.argv[2] ?? 100000)
const seconds = Number(process.argv[3] ?? 30)
const PORT = 21199
const PROBE = `import {execFileSync} from 'node:child_process'
const [url, secs, report, write] = process.argv.slice(1)
if (write) setTimeout(() => execFileSync('ip', JSON.parse(write)), 2000)
const t0 = performance.now()
let worst = 0, probes = 0, failed = 0, reportSeconds
if (report) fetch(report).then((r) => r.text()).then(() => (reportSeconds = (performance.now() - t0) / 1000))
while (performance.now() - t0 < secs * 1000) {
  const t = performance.now()
  try { await (await fetch(url, {signal: AbortSignal.timeout(60000)})).text() } catch { failed++ }
  worst = Math.max(worst, performance.now() - t)
  probes++
  await new Promise((r) => setTimeout(r, 20))
}
console.log(JSON.stringify({worstMs: Math.round(worst), probes, failed, reportSeconds}))`

const lab = await startLab(count, {prefix: `rdbusy-${process.pid}`})
const journals = mkdtempSync(path.join(os.tmpdir(), 'rdbusy-'))
let agent
try {
  const {ns, sock} = lab
  agent = spawn('ip', ['netns', 'exec', ns.n1, process.execPath, BIN, 'watch', '--bird-socket', sock.n1, '--pool',
    '10.0.0.0/8=ipip', '--listen', `127.0.0.1:${PORT}`, '--json', '--reconcile', '--settle', '3600', '--journal-dir',
    journals], {stdio: ['ignore', 'pipe', 'inherit']})
  await new Promise((resolve) => agent.stdout.on('data', (d) => d.toString().includes('"started"') && resolve()))
  const probe = (...args) => JSON.parse(sh('ip', ['netns', 'exec', ns.n1, process.execPath, '--input-type=module',
    '-e', PROBE, `http://127.0.0.1:${PORT}/healthz`, String(seconds), ...args]).stdout)
  const write = ['route', 'add', blockOf(0), 'via', lab.nexthop, 'dev', 'tunl0', 'onlink', 'metric', '10', 'proto', 'static']
  console.log(JSON.stringify({count, phase: 'route change, plan', ...probe('', JSON.stringify(write))}))
  console.log(JSON.stringify({count, phase: '/report', ...probe(`http://127.0.0.1:${PORT}/report`)}))
} finally {
  agent?.kill('SIGKILL')
  lab.teardown()
  rmSync(journals, {recursive: true, force: true})
}
