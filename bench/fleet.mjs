// fleet at cluster scale (a report, not a test: it always exits 0). One synthetic node snapshot of BLOCKS
// blocks (bench/gen-snapshot.mjs, the real formats) is given as NODES snapshot directories, each named a node of a
// synthetic Calico truth (the generator's 250 block owners, then nodes without blocks), and
//   fleet  `node bin/run.js fleet DIR… --calico TRUTH --json > /dev/null`: wall time, peak RSS
//   floor  reading every directory's files and splitting them into lines (in this process)
// are measured in the same run, with their ratio.
//
// node bench/fleet.mjs [--nodes 500] [--blocks 5k] [--jobs N] [--keep]   (--jobs: passed to fleet; default fleet's own)
import {spawnSync} from 'node:child_process'
import {existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {performance} from 'node:perf_hooks'
import {fileURLToPath} from 'node:url'

import {generateSnapshot, GEN_VERSION, parseCount} from './gen-snapshot.mjs'
import {timed, timeOf} from './time.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(HERE, '..')
const BIN = path.join(ROOT, 'bin', 'run.js')

const arg = (name, def) => {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : def
}
const NODE_COUNT = Number(arg('--nodes', '500'))
const BLOCKS = parseCount(arg('--blocks', '5k'))
const base = path.join(os.tmpdir(), 'routedoctor-bench', `fleet-g${GEN_VERSION}-${BLOCKS}`)
const one = path.join(base, 'node')

if (!existsSync(path.join(one, 'ip-j-d-route.json'))) await generateSnapshot(BLOCKS, one)

// the truth: each block's owner is the node its BIRD path names as BGP next hop (the first path of the prefix)
const owners = new Map() // address -> blocks
let prefix
for (const line of readFileSync(path.join(one, 'birdc-show-route-all.txt'), 'utf8').split('\n')) {
  const head = /^(\d+\.\d+\.\d+\.\d+\/26)\s/.exec(line)
  if (head) prefix = head[1]
  const hop = /^\tBGP\.next_hop: (\S+)/.exec(line)
  if (hop && prefix) {
    if (!owners.has(hop[1])) owners.set(hop[1], [])
    owners.get(hop[1]).push(prefix)
    prefix = undefined
  }
}
const names = [...owners.keys()].map((a) => `node-${a.replaceAll('.', '-')}`)
for (let i = names.length; i < NODE_COUNT; i++) names.push(`spare-${i}`)
const addresses = [...owners.keys()]
const g = 'crd.projectcalico.org/v1'
const list = (items) => JSON.stringify({apiVersion: 'v1', kind: 'List', items}, null, 4) + '\n'
const item = (kind, name, spec) => ({apiVersion: g, kind, metadata: {name}, spec})
const truth = path.join(base, `truth-${NODE_COUNT}`)
mkdirSync(truth, {recursive: true})
const blocks = []
const affinities = []
names.forEach((n, i) => {
  for (const cidr of owners.get(addresses[i]) ?? []) {
    const allocations = new Array(64).fill(null)
    allocations[0] = 0
    blocks.push(item('IPAMBlock', cidr.replace(/[./]/g, '-'), {cidr, affinity: `host:${n}`, deleted: false, allocations, unallocated: [], attributes: [{handle_id: `ipip-tunnel-addr-${n}`, secondary: {node: n, type: 'ipipTunnelAddress'}}]}))
    affinities.push(item('BlockAffinity', `${n}-${cidr.replace(/[./]/g, '-')}`, {cidr, node: n, state: 'confirmed', deleted: 'false'}))
  }
})
writeFileSync(path.join(truth, 'ipamblocks.json'), list(blocks))
writeFileSync(path.join(truth, 'blockaffinities.json'), list(affinities))
writeFileSync(path.join(truth, 'nodes.json'), list(names.map((n, i) => ({apiVersion: 'v1', kind: 'Node', metadata: {name: n, annotations: {'projectcalico.org/IPv4Address': `${addresses[i] ?? `10.255.${i >> 8}.${i & 255}`}/24`}}}))))

// NODES directories: the snapshot's files hard-linked (no copies), each with its node's name
const dirs = names.slice(0, NODE_COUNT).map((n) => {
  const dir = path.join(base, 'nodes', n)
  if (!existsSync(dir)) {
    mkdirSync(dir, {recursive: true})
    for (const f of ['birdc-show-route-all.txt', 'ip-j-d-route.json', 'birdc-show-protocols-all.txt', 'birdc-show-status.txt', 'ip-j-d-link.json', 'ip-j-addr.json', 'sysctl.txt', 'ippools.yaml']) {
      if (existsSync(path.join(one, f))) linkSync(path.join(one, f), path.join(dir, f))
    }
  }
  writeFileSync(path.join(dir, 'node-name.txt'), `${n}\n`)
  return dir
})

function run(argv) {
  const {cmd, timeFile} = timed(argv)
  const t0 = performance.now()
  const r = spawnSync(cmd[0], cmd.slice(1), {cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26})
  return {
    wall: (performance.now() - t0) / 1000,
    code: r.status,
    stderr: String(r.stderr).slice(-500),
    ...timeOf(timeFile),
  }
}

const JOBS = arg('--jobs', undefined)
const fleet = run(['node', BIN, 'fleet', ...dirs, '--calico', truth, '--json', ...(JOBS ? ['--jobs', JOBS] : [])])
// the floor: reading every directory's files and splitting them into lines, here, one directory at a time
const f0 = performance.now()
let lines = 0
for (const dir of dirs) for (const f of readdirSync(dir)) lines += readFileSync(path.join(dir, f), 'latin1').split('\n').length
const floor = (performance.now() - f0) / 1000
const mib = (b) => (b === undefined ? '?' : `${Math.round(b / 2 ** 20)} MiB`)
console.log(`fleet ${NODE_COUNT} nodes × ${BLOCKS} blocks${JOBS ? ` --jobs ${JOBS}` : ''}: ${fleet.wall.toFixed(1)} s (CPU ${((fleet.user ?? 0) + (fleet.sys ?? 0)).toFixed(1)} s), ${mib(fleet.rss)} (exit ${fleet.code}${fleet.code > 1 ? `: ${fleet.stderr}` : ''}); floor (read + split into ${lines} lines) ${floor.toFixed(1)} s; ratio ${(fleet.wall / floor).toFixed(2)}×; goal < 60 s`)
if (!process.argv.includes('--keep')) rmSync(path.join(base, 'nodes'), {recursive: true, force: true})
