// The bench's BGP lab, shared by fix-apply-lab.mjs and live-lab.mjs: two throwaway namespaces PREFIX-n1 and
// PREFIX-n2 joined by a veth pair (torn down by teardown(), also on exit). n2's BIRD 2 announces COUNT /26 blocks
// (apply-routes.mjs's blockOf) over iBGP between loopbacks (multihop, gateway recursive); n1's BIRD exports what it
// learns to its kernel, through the underlay: `via 10.9.0.2 dev eth0 proto bird metric 32`, not the tunnel
// (tunnel-not-programmed). n1 has a TUN device named tunl0 (no ipip module here).
// Needs root, ip(8) and BIRD 2 (/usr/sbin/bird, or BIRD2_BIN and BIRDC2_BIN).
import {spawn, spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {blockOf} from './apply-routes.mjs'

export const BIRD = process.env.BIRD2_BIN ?? '/usr/sbin/bird'
export const BIRDC = process.env.BIRDC2_BIN ?? '/usr/sbin/birdc'
const N1 = {lo: '172.31.10.4', eth: '10.9.0.1'}
const N2 = {lo: '172.31.20.5', eth: '10.9.0.2'}

// a million routes' table is read whole at every scan: at 2 s (Calico's), n1's BIRD would never stop scanning
const kernelScanSeconds = (count) => (count > 50_000 ? 120 : 2)

// spawnSync keeps 1 MiB of output unless told: a full table's `ip route` is hundreds of MB
export const sh = (cmd, args, opts = {}) => spawnSync(cmd, args, {encoding: 'utf8', maxBuffer: 2 ** 30, ...opts})
export const must = (cmd, args, opts, ok = [0]) => {
  const r = sh(cmd, args, opts)
  if (!ok.includes(r.status)) throw new Error(`${cmd} ${args.join(' ')}: ${(r.stderr || '').trim().slice(-300) || `exit ${r.status}`}`)
  return r.stdout
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Why the lab cannot run here, or undefined. */
function labUnavailable() {
  if (process.getuid?.() !== 0) return 'not root'
  if (!existsSync(BIRD) || !existsSync(BIRDC)) return `no BIRD 2 (${BIRD})`
  return undefined
}

/**
 * A lab script's start: where the lab cannot run, its one JSON line says why ({skipped}) and it exits 0 (a
 * report, not a test); a signal exits, which tears the lab down. A scratch directory, removed at exit.
 */
export function labScript(name) {
  const unavailable = labUnavailable()
  if (unavailable) {
    console.log(JSON.stringify({skipped: unavailable}))
    process.exit(0)
  }
  for (const s of ['SIGINT', 'SIGTERM']) process.once(s, () => process.exit(130))
  const dir = mkdtempSync(path.join(os.tmpdir(), `${name}-`))
  process.once('exit', () => rmSync(dir, {recursive: true, force: true}))
  return dir
}

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

/**
 * The lab with `count` blocks, once n1's kernel holds every one of them from BIRD (at most `timeoutMs`):
 * {ns: {n1, n2}, sock: {n1, n2} (BIRD's control sockets), conf: {n1, n2} (their configs), dir, nexthop (n2's loopback),
 * teardown}.
 */
export async function startLab(count, {prefix = `rdlab-${process.pid}`, timeoutMs = 300_000} = {}) {
  const ns = {n1: `${prefix}-n1`, n2: `${prefix}-n2`}
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rdlab-'))
  const birds = []
  let tornDown = false
  const teardown = () => {
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
  try {
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
    // n1's tunnel: a TUN device by the name; the routes through it show linkdown, which changes nothing for writing
    // them
    must('ip', ['-n', ns.n1, 'tuntap', 'add', 'tunl0', 'mode', 'tun'])
    must('ip', ['-n', ns.n1, 'addr', 'add', '10.255.255.1/32', 'dev', 'tunl0'])
    must('ip', ['-n', ns.n1, 'link', 'set', 'tunl0', 'up'])

    const n1Conf = path.join(dir, 'n1.conf')
    const n2Conf = path.join(dir, 'n2.conf')
    writeFileSync(n1Conf, birdConfig(N1, N2, [
      // BIRD resolves n2's next hop (its loopback) through the kernel's route to it, learnt (`via 10.9.0.2 dev eth0`)
      `protocol kernel { learn; ipv4 { import where net = ${N2.lo}/32; export all; }; scan time ${kernelScanSeconds(count)}; merge paths on; }`,
    ]))
    const routes = Array.from({length: count}, (_, i) => `  route ${blockOf(i + 1)} blackhole;`)
    writeFileSync(n2Conf, birdConfig(N2, N1, ['protocol static blocks {', '  ipv4;', ...routes, '}']))
    const sock = {n1: path.join(dir, 'n1.ctl'), n2: path.join(dir, 'n2.ctl')}
    for (const n of ['n1', 'n2']) {
      const p = spawn('ip', ['netns', 'exec', ns[n], BIRD, '-f', '-c', n === 'n1' ? n1Conf : n2Conf, '-s', sock[n]], {stdio: 'ignore'})
      p.unref() // the daemons do not keep the script alive: teardown ends them
      birds.push(p)
    }
    // until n1's kernel holds every block from BIRD
    const birdRoutes = () => sh('ip', ['-n', ns.n1, 'route', 'show', 'proto', 'bird']).stdout.split('\n').filter(Boolean).length
    const deadline = Date.now() + timeoutMs
    let have = 0
    while ((have = birdRoutes()) < count) {
      if (Date.now() > deadline) throw new Error(`n1's kernel has ${have} of ${count} BIRD routes after ${timeoutMs / 1000} s`)
      await sleep(count > 50_000 ? 3000 : 500)
    }
    return {ns, sock, conf: {n1: n1Conf, n2: n2Conf}, dir, nexthop: N2.lo, teardown}
  } catch (error) {
    teardown()
    throw error
  }
}
