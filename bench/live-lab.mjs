// `routedoctor check` on a live node, against what the node's own tools take to print what it reads (shown by
// run.mjs, which judges it). bird-lab.mjs's lab with COUNT blocks: n1's BIRD 2 learnt them over iBGP and exported
// them to its kernel. Measured in turn, RUNS times each, best kept (and each one's median of the runs):
//   floor    `ip -j -d route show table all` and `birdc show route all` in n1, side by side, into /dev/null
//            (routedoctor runs them, or their socket request, side by side too); the wall of both
//   receive  the Node receive floor (receive-floor.mjs): a Node process in n1 receiving the same bytes, doing nothing
//            with them (shown: what no parse can remove, Node's start-up and the reads)
//   check    `routedoctor check --bird-socket … --pool 10.0.0.0/8=ipip` in n1 (live: ip, /proc/sys, BIRD's socket)
// Prints one JSON line: {count, runs, check: {wall, rss, user, sys, code, median}, floor: {wall, ip, birdc, median},
// receive: {wall, rss, user, sys, median}, load (the load averages before and after), summary, installed}.
// Needs root, ip(8) and BIRD 2 (bird-lab.mjs).
// Usage: node bench/live-lab.mjs [COUNT] [RUNS] [PREFIX]   (PREFIX: the lab's namespaces' prefix, default rdlive-PID)
//        LIVE_LAB='{"ns":{"n1":…},"sock":{"n1":…}}' node bench/live-lab.mjs COUNT RUNS   measures a lab already up
//        (startLab's ns and sock, as a script holding it prints them) instead of starting one
import {spawn} from 'node:child_process'
import {closeSync, openSync, readFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {performance} from 'node:perf_hooks'
import {fileURLToPath} from 'node:url'

import {BIRDC, labScript, sh, startLab} from './bird-lab.mjs'
import {timed, timeOf} from './time.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.join(HERE, '..', 'bin', 'run.js')
const RECEIVE = path.join(HERE, 'receive-floor.mjs')
const count = Number(process.argv[2] ?? 100000)
const runs = Math.max(1, Number(process.argv[3] ?? 2))
const prefix = process.argv[4] ?? `rdlive-${process.pid}`

const dir = labScript('rdlive')

/** Run argv with stdout to `out` (a path); its wall time in seconds, and how it ended. */
function run(argv, out) {
  return new Promise((resolve) => {
    const fd = openSync(out, 'w')
    const t0 = performance.now()
    const p = spawn(argv[0], argv.slice(1), {stdio: ['ignore', fd, 'pipe']})
    let stderr = ''
    p.stderr.on('data', (d) => (stderr += d))
    p.on('close', (code, signal) => {
      closeSync(fd)
      resolve({wall: (performance.now() - t0) / 1000, code, signal, stderr: stderr.trim().slice(-300)})
    })
  })
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

async function main() {
  const held = process.env.LIVE_LAB ? JSON.parse(process.env.LIVE_LAB) : undefined
  const lab = held ? {...held, teardown() {}} : await startLab(count, {prefix})
  const {ns, sock} = lab
  const checkArgs = ['check', '--bird-socket', sock.n1, '--pool', '10.0.0.0/8=ipip']
  const report = path.join(dir, 'report.txt')
  let check
  let floor
  let receive
  const walls = {check: [], floor: [], receive: []}
  const load = [os.loadavg()[0]]
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now()
    const [ip, birdc] = await Promise.all([
      run(['ip', '-n', ns.n1, '-j', '-d', 'route', 'show', 'table', 'all'], '/dev/null'),
      run([BIRDC, '-s', sock.n1, 'show', 'route', 'all'], '/dev/null'),
    ])
    const both = (performance.now() - t0) / 1000
    if (ip.code !== 0 || birdc.code !== 0) throw new Error(`floor: ip ${ip.code} ${ip.stderr}; birdc ${birdc.code} ${birdc.stderr}`)
    if (!floor || both < floor.wall) floor = {wall: both, ip: ip.wall, birdc: birdc.wall}
    walls.floor.push(both)

    const rcv = timed(['ip', 'netns', 'exec', ns.n1, process.execPath, RECEIVE, sock.n1])
    const r = await run(rcv.cmd, '/dev/null')
    const rt = timeOf(rcv.timeFile)
    if (r.code !== 0) throw new Error(`receive floor: exit ${r.code ?? r.signal} ${r.stderr}`)
    if (!receive || r.wall < receive.wall) receive = {wall: r.wall, rss: rt.rss, user: rt.user, sys: rt.sys}
    walls.receive.push(r.wall)

    const {cmd, timeFile} = timed(['ip', 'netns', 'exec', ns.n1, process.execPath, BIN, ...checkArgs])
    const c = await run(cmd, report)
    const {rss, user, sys} = timeOf(timeFile)
    if (c.code !== 0 && c.code !== 1) throw new Error(`check: exit ${c.code ?? c.signal} ${c.stderr}`)
    if (!check || c.wall < check.wall) check = {wall: c.wall, rss, user, sys, code: c.code}
    walls.check.push(c.wall)
  }
  load.push(os.loadavg()[0])
  for (const [k, v] of [['check', check], ['floor', floor], ['receive', receive]]) v.median = median(walls[k])
  // the report's summary line: what the check found ("N prefixes (…); N errors, …")
  const summary = readFileSync(report, 'utf8').split('\n').find((l) => /^\d+ prefixes/.test(l))
  const installed = sh('ip', ['-n', ns.n1, 'route', 'show', 'proto', 'bird']).stdout.split('\n').find(Boolean)
  lab.teardown()
  console.log(JSON.stringify({count, runs, check, floor, receive, load, summary, installed}))
}

try {
  await main()
} catch (error) {
  console.log(JSON.stringify({error: error.message})) // a report, not a test: exit 0
}
