// `routedoctor fix --apply` as a user runs it, end to end, on a node whose BIRD holds COUNT pod blocks
// that are not tunnelled, against `ip -batch` of the routes it plans (shown by run.mjs, not judged: the
// issue's goal is the apply itself, which run.mjs's engine rows measure; this row adds what the command
// does around it — start-up, live collection over BIRD's socket and `ip`, diagnosis, planning, the
// journal, the read-back — so that the whole command's cost is on record too).
//
// bird-lab.mjs's lab, namespaces rdfa-PID-n1 and -n2 (torn down at the end): n2's BIRD 2
// announces COUNT /26 blocks of 10.0.0.0/8 over iBGP between loopbacks (multihop, gateway recursive);
// n1's BIRD installs them `via 10.9.0.2 dev eth0 proto bird metric 32` (tunnel-not-programmed), and
// `fix --apply --watch 0` plans and writes COUNT routes `via 172.31.20.5 dev tunl0 onlink metric 31
// proto 158` into its overlay table (1158). Prints one JSON line: {count, fix: {wall, user, sys}, ipBatch, runs}.
// Needs root, ip(8) and BIRD 2 (/usr/sbin/bird, or BIRD2_BIN and BIRDC2_BIN).
// Usage: node bench/fix-apply-lab.mjs [COUNT] [RUNS]
import {writeFileSync} from 'node:fs'
import path from 'node:path'
import {performance} from 'node:perf_hooks'
import {fileURLToPath} from 'node:url'

import {labScript, must, sh, startLab} from './bird-lab.mjs'
import {timed, timeOf} from './time.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.join(HERE, '..', 'bin', 'run.js')
const count = Number(process.argv[2] ?? 10000)
const runs = Number(process.argv[3] ?? 3)

const dir = labScript('rdfa')

async function main() {
  const lab = await startLab(count, {prefix: `rdfa-${process.pid}`})
  const {ns, sock} = lab
  const journalDir = path.join(dir, 'journals')
  const fixArgs = ['fix', '--bird-socket', sock.n1, '--pool', '10.0.0.0/8=ipip']
  // the plan, as `ip -batch` lines: what fix --apply writes
  const plan = JSON.parse(must('ip', ['netns', 'exec', ns.n1, process.execPath, BIN, ...fixArgs, '--json'], {maxBuffer: 512 * 2 ** 20}, [0, 1]))
  if (plan.routes.length !== count) throw new Error(`fix plans ${plan.routes.length} routes, expected ${count}`)
  const batch = path.join(dir, 'routes.batch')
  writeFileSync(batch, plan.routes.map((r) => {
    if (r.nexthops.length !== 1) throw new Error(`${r.dst}: ${r.nexthops.length} next hops`)
    const nh = r.nexthops[0]
    return `route replace ${r.dst} via ${nh.gateway} dev ${nh.dev}${nh.onlink ? ' onlink' : ''} metric ${r.metric} proto ${r.protocol} table ${r.table}\n`
  }).join(''))
  // the overlay table (a number: fix's JSON names main 254 too)
  const mine = ['table', String(plan.routes[0].table), 'proto', String(plan.routes[0].protocol)]
  const ours = () => sh('ip', ['-n', ns.n1, 'route', 'show', ...mine]).stdout.split('\n').filter(Boolean).length
  const flush = () => sh('ip', ['-n', ns.n1, 'route', 'flush', ...mine])

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
}
