// `routedoctor fix --apply` as a user runs it, end to end, on a node whose BIRD holds COUNT pod blocks
// that are not tunnelled, against `ip -batch` of the routes it plans (shown by run.mjs, not judged: the
// issue's goal is the apply itself, which run.mjs's engine rows measure; this row adds what the command
// does around it — start-up, live collection over BIRD's socket and `ip`, diagnosis, planning, the
// journal, the read-back — so that the whole command's cost is on record too).
//
// Two throwaway namespaces rdfa-PID-n1 and -n2 joined by a veth pair (torn down at the end): n2's BIRD 2
// announces COUNT /26 blocks of 10.0.0.0/8 over iBGP between loopbacks (multihop, gateway recursive);
// n1's BIRD installs them `via 10.9.0.2 dev eth0 proto bird metric 32` (tunnel-not-programmed), and
// `fix --apply --watch 0` plans and writes COUNT routes `via 172.31.20.5 dev tunl0 onlink metric 31
// proto 158` beside them. Prints one JSON line: {count, fix: {wall, user, sys}, ipBatch: {...}, runs}.
// Needs root, ip(8) and BIRD 2 (/usr/sbin/bird, or BIRD2_BIN and BIRDC2_BIN).
// Usage: node bench/fix-apply-lab.mjs [COUNT] [RUNS]
import {spawn, spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {performance} from 'node:perf_hooks'
import {fileURLToPath} from 'node:url'

import {blockOf} from './apply-routes.mjs'
import {timed, timeOf} from './time.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.join(HERE, '..', 'bin', 'run.js')
const BIRD = process.env.BIRD2_BIN ?? '/usr/sbin/bird'
const BIRDC = process.env.BIRDC2_BIN ?? '/usr/sbin/birdc'
const count = Number(process.argv[2] ?? 10000)
const runs = Number(process.argv[3] ?? 3)
const N1 = {lo: '172.31.10.4', eth: '10.9.0.1'}
const N2 = {lo: '172.31.20.5', eth: '10.9.0.2'}

const sh = (cmd, args, opts = {}) => spawnSync(cmd, args, {encoding: 'utf8', ...opts})
const must = (cmd, args, opts, ok = [0]) => {
  const r = sh(cmd, args, {maxBuffer: 512 * 2 ** 20, ...opts})
  if (!ok.includes(r.status)) throw new Error(`${cmd} ${args.join(' ')}: ${(r.stderr || '').trim().slice(-300) || `exit ${r.status}`}`)
  return r.stdout
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

if (process.getuid?.() !== 0) {
  console.log(JSON.stringify({skipped: 'not root'}))
  process.exit(0)
}
if (!existsSync(BIRD) || !existsSync(BIRDC)) {
  console.log(JSON.stringify({skipped: `no BIRD 2 (${BIRD})`}))
  process.exit(0)
}

const prefix = `rdfa-${process.pid}`
const ns = {n1: `${prefix}-n1`, n2: `${prefix}-n2`}
const dir = mkdtempSync(path.join(os.tmpdir(), 'rdfa-'))
const birds = []
let tornDown = false
function teardown() {
  if (tornDown) return
  tornDown = true
  for (const p of birds) {
    try {
      process.kill(p.pid, 'SIGTERM')
    } catch {
      // gone
    }
  }
  for (const n of Object.values(ns)) sh('ip', ['netns', 'del', n])
  rmSync(dir, {recursive: true, force: true})
}
process.once('exit', teardown)
for (const s of ['SIGINT', 'SIGTERM']) process.once(s, () => process.exit(130))

function birdConfig(me, peer, extra) {
  return [
    `router id ${me.lo};`,
    'protocol device { scan time 2; }',
    ...extra,
    'template bgp mesh {',
    `  local ${me.lo} as 64512;`,
    '  multihop;',
    '  ipv4 { import all; export where source = RTS_STATIC; gateway recursive; next hop self; };',
    '  connect delay time 1; connect retry time 2;',
    '}',
    `protocol bgp peer from mesh { neighbor ${peer.lo} as 64512; }`,
    '',
  ].join('\n')
}

async function main() {
  for (const n of Object.values(ns)) {
    must('ip', ['netns', 'add', n])
    must('ip', ['-n', n, 'link', 'set', 'lo', 'up'])
  }
  must('ip', ['-n', ns.n1, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns.n2])
  for (const [n, me, peer] of [[ns.n1, N1, N2], [ns.n2, N2, N1]]) {
    must('ip', ['-n', n, 'addr', 'add', `${me.lo}/32`, 'dev', 'lo'])
    must('ip', ['-n', n, 'addr', 'add', `${me.eth}/30`, 'dev', 'eth0'])
    must('ip', ['-n', n, 'link', 'set', 'eth0', 'up'])
    must('ip', ['-n', n, 'route', 'add', `${peer.lo}/32`, 'via', peer.eth, 'dev', 'eth0'])
  }
  // n1's tunnel: a TUN device by the name (no ipip module here); the routes through it show linkdown, which
  // changes nothing for writing them
  must('ip', ['-n', ns.n1, 'tuntap', 'add', 'tunl0', 'mode', 'tun'])
  must('ip', ['-n', ns.n1, 'addr', 'add', '10.255.255.1/32', 'dev', 'tunl0'])
  must('ip', ['-n', ns.n1, 'link', 'set', 'tunl0', 'up'])

  const n1Conf = path.join(dir, 'n1.conf')
  const n2Conf = path.join(dir, 'n2.conf')
  writeFileSync(n1Conf, birdConfig(N1, N2, [
    'protocol kernel { ipv4 { import none; export all; }; scan time 2; merge paths on; }',
  ]))
  const routes = Array.from({length: count}, (_, i) => `  route ${blockOf(i + 1)} blackhole;`)
  writeFileSync(n2Conf, birdConfig(N2, N1, ['protocol static blocks {', '  ipv4;', ...routes, '}']))
  const sock = {n1: path.join(dir, 'n1.ctl'), n2: path.join(dir, 'n2.ctl')}
  for (const n of ['n1', 'n2']) {
    const p = spawn('ip', ['netns', 'exec', ns[n], BIRD, '-f', '-c', n === 'n1' ? n1Conf : n2Conf, '-s', sock[n]], {stdio: 'ignore'})
    p.unref() // the daemons do not keep this script alive: teardown ends them
    birds.push(p)
  }
  // until n1's kernel holds every block from BIRD
  const birdRoutes = () => sh('ip', ['-n', ns.n1, 'route', 'show', 'proto', 'bird']).stdout.split('\n').filter(Boolean).length
  const deadline = Date.now() + 120_000
  while (birdRoutes() < count) {
    if (Date.now() > deadline) throw new Error(`n1's kernel has ${birdRoutes()} of ${count} BIRD routes after 120 s`)
    await sleep(500)
  }

  const journalDir = path.join(dir, 'journals')
  const fixArgs = ['fix', '--bird-socket', sock.n1, '--pool', '10.0.0.0/8=ipip']
  // the plan, as `ip -batch` lines: what fix --apply writes
  const plan = JSON.parse(must('ip', ['netns', 'exec', ns.n1, process.execPath, BIN, ...fixArgs, '--json'], {}, [0, 1]))
  if (plan.routes.length !== count) throw new Error(`fix plans ${plan.routes.length} routes, expected ${count}`)
  const batch = path.join(dir, 'routes.batch')
  writeFileSync(batch, plan.routes.map((r) => {
    if (r.nexthops.length !== 1) throw new Error(`${r.dst}: ${r.nexthops.length} next hops`)
    const nh = r.nexthops[0]
    return `route replace ${r.dst} via ${nh.gateway} dev ${nh.dev}${nh.onlink ? ' onlink' : ''} metric ${r.metric} proto ${r.protocol}${r.table === 'main' ? '' : ` table ${r.table}`}\n`
  }).join(''))
  const ours = () => sh('ip', ['-n', ns.n1, 'route', 'show', 'proto', String(plan.routes[0].protocol)]).stdout.split('\n').filter(Boolean).length
  const flush = () => sh('ip', ['-n', ns.n1, 'route', 'flush', 'proto', String(plan.routes[0].protocol)])

  const measure = (argv) => {
    const {cmd, timeFile} = timed(argv)
    const t0 = performance.now()
    const r = sh(cmd[0], cmd.slice(1), {stdio: ['ignore', 'ignore', 'pipe']})
    const wall = (performance.now() - t0) / 1000
    const {rss, user, sys} = timeOf(timeFile)
    return {wall, rss, user, sys, code: r.status, stderr: (r.stderr || '').trim().slice(-500)}
  }
  let fix
  let ipBatch
  for (let i = 0; i < runs; i++) {
    flush()
    const b = measure(['ip', '-n', ns.n1, '-batch', batch])
    if (b.code !== 0 || ours() !== count) throw new Error(`ip -batch: exit ${b.code} ${b.stderr}; ${ours()}/${count} routes`)
    if (!ipBatch || b.wall < ipBatch.wall) ipBatch = b
    flush()
    const f = measure(['ip', 'netns', 'exec', ns.n1, process.execPath, BIN, ...fixArgs, '--apply', '--yes', '--watch', '0', '--journal-dir', journalDir])
    if (f.code !== 0 || ours() !== count) throw new Error(`fix --apply: exit ${f.code} ${f.stderr}; ${ours()}/${count} routes`)
    if (!fix || f.wall < fix.wall) fix = f
  }
  flush()
  console.log(JSON.stringify({count, runs, fix, ipBatch}))
}

try {
  await main()
} catch (error) {
  console.log(JSON.stringify({error: error.message})) // a report, not a test: exit 0
} finally {
  teardown()
}
