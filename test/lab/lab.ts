// The real-BIRD network-namespace lab (DESIGN §8): five namespaces (three nodes, two ToRs) joined by
// veth pairs, a TUN `tunl0` held open on every node, real BIRD daemons (BIRD 2 from the system,
// BIRD 1.6.8 unpacked by get-bird16.sh) peering over loopbacks. n1 is the node under test; each
// scenario reproduces one of the captured fixtures (test/fixtures/README.md).
//
// Nothing here touches the host's own routes, links or sysctls: every link is created inside a lab
// namespace (`ip -n NS link add … peer … netns OTHER`), every sysctl is written inside one.

import {spawn, type ChildProcess} from 'node:child_process'
import {existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeFileSync, unlinkSync, readdirSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {execa} from 'execa'

export const SCENARIOS = ['bird2-ecmp', 'bird16-ecmp', 'bird16-ipv6-ll', 'bird2-peer-down', 'bird2-healthy'] as const
export type ScenarioName = (typeof SCENARIOS)[number]
export const NODES = ['n1', 'n2', 'n3', 'tor1', 'tor2'] as const
export type NodeName = (typeof NODES)[number]
export type BirdNode = 'n1' | 'n2' | 'n3'
export type BirdFlavour = '2' | '1.6'

export interface ScenarioSpec {
  /** which BIRD runs on n1 */
  n1Bird: BirdFlavour
  /** n1's underlay route to n2's rack: IPv4 ECMP gateways, or IPv6 link-local ECMP gateways */
  underlay: 'ecmp-v4' | 'ecmp-v6ll'
  /** n1's kernel export filter rewrites pool routes learned over BGP onto tunl0 onlink (DESIGN §1) */
  tunnelFilter: boolean
  /** BIRDs stopped once the sessions are up */
  stopped: BirdNode[]
  /** the captured fixture this scenario reproduces, if any */
  fixture?: string
}

export const SCENARIO_SPECS: Record<ScenarioName, ScenarioSpec> = {
  'bird2-ecmp': {n1Bird: '2', underlay: 'ecmp-v4', tunnelFilter: false, stopped: [], fixture: 'bird2-ecmp-not-tunneled'},
  'bird16-ecmp': {n1Bird: '1.6', underlay: 'ecmp-v4', tunnelFilter: false, stopped: [], fixture: 'bird16-ecmp-not-tunneled'},
  'bird16-ipv6-ll': {
    n1Bird: '1.6',
    underlay: 'ecmp-v6ll',
    tunnelFilter: false,
    stopped: [],
    fixture: 'bird16-ipv6-ll-underlay-unreachable',
  },
  'bird2-peer-down': {n1Bird: '2', underlay: 'ecmp-v4', tunnelFilter: false, stopped: ['n3'], fixture: 'bird2-peer-down'},
  'bird2-healthy': {n1Bird: '2', underlay: 'ecmp-v4', tunnelFilter: true, stopped: []},
}

/** Addressing of the fixtures' topology. */
export const TOPOLOGY = {
  as: 64512,
  pool: '192.168.0.0/16',
  nodes: {
    n1: {loopback: '172.31.10.4', block: '192.168.162.128/26', tunl0: '192.168.162.128'},
    n2: {loopback: '172.31.20.5', block: '192.168.110.128/26', tunl0: '192.168.110.128'},
    n3: {loopback: '172.31.30.6', block: '192.168.82.0/26', tunl0: '192.168.82.0'},
  },
  /** announced by both n2 and n3 */
  anycast: '192.168.200.10/32',
  workload: {address: '192.168.162.129', dev: 'calif2ae67c76cf'},
} as const

/** veth pairs: [nsA, ifA, addrA, nsB, ifB, addrB] (n1's links first, in the fixtures' ifindex order) */
const LINKS: Array<[NodeName, string, string | null, NodeName, string, string | null]> = [
  ['n1', 'eth0', '172.31.11.3/24', 'tor1', 'n1', '172.31.11.1/24'],
  ['n1', 'eth1', '172.31.12.3/24', 'tor2', 'n1', '172.31.12.1/24'],
  ['n2', 'eth0', '172.31.21.2/28', 'tor1', 'n2', '172.31.21.1/28'],
  ['n2', 'eth1', '172.31.21.18/28', 'tor2', 'n2', '172.31.21.17/28'],
  ['n3', 'eth0', '172.31.31.6/24', 'tor1', 'n3', '172.31.31.1/24'],
]

export const BIRD16_DIR = process.env.BIRD16_DIR ?? '/tmp/bird16'
export const BIRD_BINARIES: Record<BirdFlavour, {bird: string; birdc: string}> = {
  '2': {bird: process.env.BIRD2_BIN ?? '/usr/sbin/bird', birdc: process.env.BIRDC2_BIN ?? '/usr/sbin/birdc'},
  '1.6': {bird: path.join(BIRD16_DIR, 'usr/sbin/bird'), birdc: path.join(BIRD16_DIR, 'usr/sbin/birdc')},
}

const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'
const STATE_DIR = path.join(os.tmpdir(), 'routedoctor-lab')
const NS_RE = /^(rdl\d+[a-z]?)-(n1|n2|n3|tor1|tor2)$/

/** Holds a TUN device open (TUNSETIFF, IFF_TUN|IFF_NO_PI) so it has carrier; drains its packets. */
const TUN_HOLDER = `
import fcntl, os, struct, sys
fd = os.open('/dev/net/tun', os.O_RDWR)
fcntl.ioctl(fd, 0x400454ca, struct.pack('16sH', sys.argv[1].encode(), 0x0001 | 0x1000))
sys.stdout.write('ready\\n')
sys.stdout.flush()
while True:
    os.read(fd, 65536)
`

export interface ExecResult {
  stdout: string
  stderr: string
  exitCode: number
}

/** One route of `ip -j -d route show`, as much as the lab looks at. */
export interface KernelRoute {
  type?: string
  dst: string
  gateway?: string
  via?: {family: string; host: string}
  dev?: string
  table?: string
  protocol?: string
  metric?: number
  flags?: string[]
  nexthops?: Array<{
    gateway?: string
    via?: {family: string; host: string}
    dev?: string
    weight?: number
    flags?: string[]
  }>
  [key: string]: unknown
}

export interface BgpProtocolState {
  name: string
  state: string
  info: string
  established: boolean
}

export interface Lab {
  scenario: ScenarioName
  spec: ScenarioSpec
  prefix: string
  dir: string
  ns(node: NodeName): string
  exec(node: NodeName, argv: string[]): Promise<ExecResult>
  birdFlavour(node: BirdNode): BirdFlavour
  birdSocket(node: BirdNode): string
  birdConfigPath(node: BirdNode): string
  birdc(node: BirdNode, cmd: string): Promise<string>
  birdVersion(node: BirdNode): Promise<string>
  bgpProtocols(node: BirdNode): Promise<BgpProtocolState[]>
  waitEstablished(node: BirdNode, timeoutMs?: number, only?: string[]): Promise<void>
  routes(node: NodeName): Promise<KernelRoute[]>
  waitRoute(
    node: NodeName,
    prefix: string,
    predicate: (routes: KernelRoute[]) => boolean,
    timeoutMs?: number,
  ): Promise<KernelRoute[]>
  stopBird(node: BirdNode): Promise<void>
  /** Write a node's BIRD config and `birdc configure` it (a block moved or released). */
  reconfigure(node: BirdNode, config: string): Promise<void>
  teardown(): Promise<void>
}

export interface StartOptions {
  /** wait until n1's BIRD routes in the kernel are stable (default true) */
  settle?: boolean
  /** keep the temp dir (configs, logs) after teardown */
  keepDir?: boolean
  /** overall time allowed for start (default 40 s) */
  timeoutMs?: number
  /** n2 and n3 also program their BGP routes into the kernel through tunl0 onlink (fullPeerBirdConfig) */
  fullNodes?: boolean
}

export class LabUnavailableError extends Error {}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Why the lab cannot run here, or null when it can. */
export function labUnavailableReason(scenario?: ScenarioName): string | null {
  if (process.platform !== 'linux') return 'the lab needs Linux network namespaces'
  if (typeof process.getuid === 'function' && process.getuid() !== 0)
    return 'the lab needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN to create network namespaces)'
  if (!existsSync('/dev/net/tun')) return '/dev/net/tun is missing (needed for the tunl0 TUN device)'
  const flavours: BirdFlavour[] = scenario ? ['2', SCENARIO_SPECS[scenario].n1Bird] : ['2', '1.6']
  for (const f of new Set(flavours)) {
    const b = BIRD_BINARIES[f]
    if (!existsSync(b.bird) || !existsSync(b.birdc))
      return f === '2'
        ? `BIRD 2 is missing (${b.bird}, ${b.birdc}): install Debian's bird2 package`
        : `BIRD 1.6.8 is missing (${b.bird}): run test/lab/get-bird16.sh ${BIRD16_DIR}`
  }
  return null
}

async function run(cmd: string, args: string[]): Promise<string> {
  const r = await execa(cmd, args, {reject: false, stdin: 'ignore'})
  if (r.exitCode !== 0) {
    throw new Error(`lab: \`${cmd} ${args.join(' ')}\` failed (exit ${r.exitCode}): ${String(r.stderr).trim()}`)
  }
  return String(r.stdout)
}

async function listNetns(): Promise<string[]> {
  const r = await execa('ip', ['-j', 'netns', 'list'], {reject: false})
  if (r.exitCode !== 0 || !String(r.stdout).trim()) return []
  try {
    return (JSON.parse(String(r.stdout)) as Array<{name: string}>).map((n) => n.name)
  } catch {
    return String(r.stdout)
      .split('\n')
      .map((l) => l.split(/\s+/)[0])
      .filter(Boolean)
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Kills every process inside the namespace (all of them were started by the lab) and deletes it. */
async function destroyNetns(name: string): Promise<void> {
  const pids = await execa('ip', ['netns', 'pids', name], {reject: false})
  const list = String(pids.stdout)
    .split(/\s+/)
    .map(Number)
    .filter((p) => Number.isInteger(p) && p > 1)
  for (const pid of list) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      /* already gone */
    }
  }
  for (let i = 0; i < 20 && list.some(pidAlive); i++) await sleep(50)
  await execa('ip', ['netns', 'del', name], {reject: false})
}

/**
 * Removes the leftovers of lab runs whose owning process is gone (a killed test run): their
 * namespaces (and the processes inside them) and temp dirs. Labs of live processes are left alone.
 * Returns the prefixes cleaned.
 */
export async function cleanupStaleLabs(): Promise<string[]> {
  const byPrefix = new Map<string, string[]>()
  for (const name of await listNetns()) {
    const m = NS_RE.exec(name)
    if (m) byPrefix.set(m[1], [...(byPrefix.get(m[1]) ?? []), name])
  }
  if (existsSync(STATE_DIR)) {
    for (const f of readdirSync(STATE_DIR)) {
      const m = /^(rdl\d+[a-z]?)\.owner$/.exec(f)
      if (m && !byPrefix.has(m[1])) byPrefix.set(m[1], [])
    }
  }
  const cleaned: string[] = []
  for (const [prefix, names] of byPrefix) {
    if (activePrefixes.has(prefix)) continue
    const owner = readOwner(prefix)
    if (owner && owner.pid !== process.pid && pidAlive(owner.pid)) continue
    for (const name of names) await destroyNetns(name)
    if (owner?.dir && owner.dir.startsWith(os.tmpdir())) rmSync(owner.dir, {recursive: true, force: true})
    rmSync(ownerFile(prefix), {force: true})
    cleaned.push(prefix)
  }
  return cleaned
}

const activePrefixes = new Set<string>()
const ownerFile = (prefix: string) => path.join(STATE_DIR, `${prefix}.owner`)

function readOwner(prefix: string): {pid: number; dir?: string} | null {
  try {
    return JSON.parse(readFileSync(ownerFile(prefix), 'utf8')) as {pid: number; dir?: string}
  } catch {
    return null
  }
}

async function choosePrefix(): Promise<string> {
  const existing = new Set((await listNetns()).map((n) => NS_RE.exec(n)?.[1]).filter(Boolean))
  const base = `rdl${process.pid % 10000}`
  for (const suffix of ['', ...'abcdefghijklmnopqrstuvwxyz']) {
    const p = base + suffix
    if (!existing.has(p) && !activePrefixes.has(p) && !existsSync(ownerFile(p))) return p
  }
  throw new Error(`lab: no free namespace prefix for ${base}`)
}

// ---------------------------------------------------------------------------------------------
// BIRD configurations

/** n1's configuration, in the shapes of the fixtures' bird.conf (BIRD 2 / 1.6). */
export function n1BirdConfig(spec: ScenarioSpec): string {
  const me = TOPOLOGY.nodes.n1
  const peers = (['n2', 'n3'] as const).map((n) => TOPOLOGY.nodes[n].loopback)
  const kernelFilter = spec.tunnelFilter
    ? [
        'filter calico_kernel_programming {',
        `  if net ~ [ ${TOPOLOGY.pool}{26,32} ] && source = RTS_BGP then {`,
        '    ifname = "tunl0"; onlink = true; gw = bgp_next_hop; onlink = true;',
        '  }',
        '  accept;',
        '}',
      ]
    : ['filter calico_kernel_programming { accept; }']
  const exportFilter = calicoExportFilter([me.block])
  const sessions = peers.map(
    (p) => `protocol bgp Mesh_${p.replaceAll('.', '_')} from mesh { neighbor ${p} as ${TOPOLOGY.as}; }`,
  )
  if (spec.n1Bird === '1.6') {
    return [
      `router id ${me.loopback};`,
      'protocol device { scan time 2; }',
      ...kernelFilter,
      'protocol kernel {',
      '  learn; persist; scan time 2; import all; export filter calico_kernel_programming;',
      '  graceful restart; merge paths on;',
      '}',
      `protocol static blocks { route ${me.block} blackhole; }`,
      ...exportFilter,
      'template bgp mesh {',
      `  local as ${TOPOLOGY.as}; source address ${me.loopback};`,
      '  multihop; gateway recursive; import all; export filter calico_export_to_bgp_peers;',
      '  next hop self; add paths on; graceful restart;',
      '  connect delay time 2; connect retry time 5; error wait time 5,30;',
      '}',
      ...sessions,
      '',
    ].join('\n')
  }
  return [
    `router id ${me.loopback};`,
    'protocol device { scan time 2; }',
    ...kernelFilter,
    'protocol kernel {',
    '  ipv4 { import all; export filter calico_kernel_programming; };',
    '  learn; persist; scan time 2; merge paths on; graceful restart;',
    '}',
    'protocol static blocks {',
    '  ipv4 { import all; export none; };',
    `  route ${me.block} blackhole;`,
    '}',
    ...exportFilter,
    'template bgp mesh {',
    `  local ${me.loopback} as ${TOPOLOGY.as};`,
    '  multihop;',
    '  ipv4 { import all; export filter calico_export_to_bgp_peers; gateway recursive; next hop self; add paths on; };',
    '  graceful restart; connect delay time 2; connect retry time 5; error wait time 5,30;',
    '}',
    ...sessions,
    '',
  ].join('\n')
}

/**
 * Calico's BGP export (bird.cfg.template): `calico_aggr` accepts the node's own blocks and rejects what lies inside
 * them (its workloads' routes), then every pool prefix is accepted, whatever its source, a route BIRD learnt from
 * the kernel included (DESIGN §1 item 4, §8).
 */
export function calicoExportFilter(ownBlocks: readonly string[]): string[] {
  return [
    'function calico_aggr() {',
    ...ownBlocks.flatMap((b) => [`  if ( net = ${b} ) then { accept; }`, `  if ( net ~ ${b} ) then { reject; }`]),
    '}',
    'filter calico_export_to_bgp_peers {',
    '  calico_aggr();',
    `  if ( net ~ ${TOPOLOGY.pool} ) then { accept; }`,
    '  reject;',
    '}',
  ]
}

/**
 * n2 / n3: BIRD 2 announcing their blocks (default: the node's own and the shared anycast /32), with Calico's kernel
 * protocol shape (`learn; persist; scan time 2; import all; merge paths on;`) and export filter. No graceful restart,
 * so a stopped peer's routes go at once.
 */
export function peerBirdConfig(node: 'n2' | 'n3', announce: readonly string[] = [TOPOLOGY.nodes[node].block, TOPOLOGY.anycast]): string {
  const me = TOPOLOGY.nodes[node]
  const peers = (['n1', 'n2', 'n3'] as const).filter((n) => n !== node).map((n) => TOPOLOGY.nodes[n].loopback)
  const blocks = announce.filter((b) => b.endsWith('/26'))
  return [
    `router id ${me.loopback};`,
    'protocol device { scan time 2; }',
    'protocol kernel { ipv4 { import all; export none; }; learn; persist; scan time 2; merge paths on; }',
    'protocol static blocks {',
    '  ipv4 { import all; export none; };',
    ...announce.map((b) => `  route ${b} blackhole;`),
    '}',
    ...calicoExportFilter(blocks),
    'template bgp mesh {',
    `  local ${me.loopback} as ${TOPOLOGY.as};`,
    '  multihop;',
    '  ipv4 { import all; export filter calico_export_to_bgp_peers; gateway recursive; next hop self; add paths on; };',
    '  connect delay time 2; connect retry time 5; error wait time 5,30;',
    '}',
    ...peers.map((p) => `protocol bgp Mesh_${p.replaceAll('.', '_')} from mesh { neighbor ${p} as ${TOPOLOGY.as}; }`),
    '',
  ].join('\n')
}

/**
 * n2 / n3 as full nodes: peerBirdConfig with a kernel protocol of Calico's shape that also exports their BGP pool
 * routes onto tunl0 onlink (DESIGN §1's filter), so that their kernels route the other blocks as n1's does.
 * `override`: extra kernel-filter lines placed first (a test's fault: a block routed to the wrong node).
 */
export function fullPeerBirdConfig(node: 'n2' | 'n3', override: string[] = []): string {
  const lines = peerBirdConfig(node).split('\n')
  const at = lines.findIndex((l) => l.startsWith('protocol kernel'))
  if (at < 0 || !lines[at].trimEnd().endsWith('}')) throw new Error('fullPeerBirdConfig: peerBirdConfig has no one-line kernel protocol to replace')
  lines.splice(at, 1,
    'filter calico_kernel_programming {',
    ...override.map((l) => `  ${l}`),
    `  if net ~ [ ${TOPOLOGY.pool}{26,32} ] && source = RTS_BGP then {`,
    '    ifname = "tunl0"; onlink = true; gw = bgp_next_hop; onlink = true;',
    '  }',
    '  accept;',
    '}',
    'protocol kernel {',
    '  ipv4 { import all; export filter calico_kernel_programming; };',
    '  learn; persist; scan time 2; merge paths on;',
    '}')
  return lines.join('\n')
}

/** Parses `show protocols` (BIRD 1.6 and 2 column layouts) for its BGP sessions. */
export function parseBgpProtocols(text: string): BgpProtocolState[] {
  const out: BgpProtocolState[] = []
  for (const line of text.split('\n')) {
    const cols = line.trim().split(/\s+/)
    if (cols.length < 5 || cols[1] !== 'BGP') continue
    // name proto table state since… info…; `since` is one column (BIRD 2: time; 1.6: time) — the
    // info starts at the first column that is a BGP state word.
    const states = ['Idle', 'Connect', 'Active', 'OpenSent', 'OpenConfirm', 'Established', 'Close', 'Down']
    const idx = cols.findIndex((c, i) => i >= 4 && states.includes(c))
    const info = idx >= 0 ? cols.slice(idx).join(' ') : ''
    out.push({name: cols[0], state: cols[3], info, established: idx >= 0 && cols[idx] === 'Established'})
  }
  return out
}

const normPrefix = (p: string) => (p.includes('/') ? p : p.includes(':') ? `${p}/128` : `${p}/32`)

// ---------------------------------------------------------------------------------------------

interface BirdProc {
  child: ChildProcess
  exited: Promise<void>
}

export async function startLab(scenario: ScenarioName, opts: StartOptions = {}): Promise<Lab> {
  const reason = labUnavailableReason(scenario)
  if (reason) throw new LabUnavailableError(reason)
  const spec = SCENARIO_SPECS[scenario]
  const deadline = Date.now() + (opts.timeoutMs ?? 40_000)

  mkdirSync(STATE_DIR, {recursive: true})
  const prefix = await choosePrefix()
  activePrefixes.add(prefix)
  const dir = mkdtempSync(path.join(os.tmpdir(), `routedoctor-lab-${prefix}-`))
  writeFileSync(ownerFile(prefix), JSON.stringify({pid: process.pid, dir, scenario}))

  const ns = (node: NodeName) => `${prefix}-${node}`
  const children: ChildProcess[] = []
  const birds = new Map<BirdNode, BirdProc>()
  const created: string[] = []
  let tornDown = false

  const flavour = (node: BirdNode): BirdFlavour => (node === 'n1' ? spec.n1Bird : '2')
  const birdSocket = (node: BirdNode) => path.join(dir, `${node}.ctl`)
  const birdConfigPath = (node: BirdNode) => path.join(dir, `${node}.conf`)

  const exec = async (node: NodeName, argv: string[]): Promise<ExecResult> => {
    const r = await execa('ip', ['netns', 'exec', ns(node), ...argv], {reject: false, stdin: 'ignore', stripFinalNewline: false})
    return {stdout: String(r.stdout), stderr: String(r.stderr), exitCode: r.exitCode ?? -1}
  }
  const ipn = (node: NodeName, args: string[]) => run('ip', ['-n', ns(node), ...args])
  const sysctl = (node: NodeName, settings: Record<string, string | number>) =>
    run('ip', ['netns', 'exec', ns(node), 'sysctl', '-q', '-w', ...Object.entries(settings).map(([k, v]) => `${k}=${v}`)])

  const birdc = async (node: BirdNode, cmd: string): Promise<string> => {
    const r = await execa(BIRD_BINARIES[flavour(node)].birdc, ['-s', birdSocket(node), ...cmd.trim().split(/\s+/)], {
      reject: false,
      stdin: 'ignore',
      stripFinalNewline: false,
      timeout: 10_000,
    })
    if (r.exitCode !== 0) throw new Error(`lab: birdc ${node} '${cmd}' failed: ${String(r.stderr || r.stdout).trim()}`)
    return String(r.stdout)
  }

  const routes = async (node: NodeName): Promise<KernelRoute[]> => {
    const out = await ipn(node, ['-j', '-d', 'route', 'show', 'table', 'all'])
    return out.trim() ? (JSON.parse(out) as KernelRoute[]) : []
  }

  const bgpProtocols = async (node: BirdNode) => parseBgpProtocols(await birdc(node, 'show protocols'))

  const waitEstablished = async (node: BirdNode, timeoutMs = 20_000, only?: string[]) => {
    const until = Date.now() + timeoutMs
    let last = ''
    for (;;) {
      try {
        const protos = (await bgpProtocols(node)).filter((p) => !only || only.includes(p.name))
        last = protos.map((p) => `${p.name}: ${p.info || p.state}`).join('; ')
        if (protos.length > 0 && protos.every((p) => p.established)) return
      } catch (error) {
        last = (error as Error).message
      }
      if (Date.now() > until) throw new Error(`lab: ${node}'s BGP sessions not Established after ${timeoutMs} ms: ${last}`)
      await sleep(250)
    }
  }

  const waitRoute = async (
    node: NodeName,
    prefixWanted: string,
    predicate: (routes: KernelRoute[]) => boolean,
    timeoutMs = 15_000,
  ): Promise<KernelRoute[]> => {
    const until = Date.now() + timeoutMs
    const want = normPrefix(prefixWanted)
    let matching: KernelRoute[] = []
    for (;;) {
      matching = (await routes(node)).filter((r) => normPrefix(r.dst) === want && r.table !== 'local')
      if (predicate(matching)) return matching
      if (Date.now() > until)
        throw new Error(`lab: ${node}: route ${prefixWanted} not as expected after ${timeoutMs} ms: ${JSON.stringify(matching)}`)
      await sleep(250)
    }
  }

  const startBird = async (node: BirdNode) => {
    const conf = birdConfigPath(node)
    writeFileSync(conf, node === 'n1' ? n1BirdConfig(spec) : opts.fullNodes ? fullPeerBirdConfig(node) : peerBirdConfig(node))
    const log = openSync(path.join(dir, `${node}.log`), 'a')
    const bin = BIRD_BINARIES[flavour(node)].bird
    const child = spawn(
      'ip',
      ['netns', 'exec', ns(node), bin, '-f', '-c', conf, '-s', birdSocket(node), '-P', path.join(dir, `${node}.pid`)],
      {stdio: ['ignore', log, log]},
    )
    closeSync(log)
    children.push(child)
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    birds.set(node, {child, exited})
    const until = Date.now() + 10_000
    for (;;) {
      if (child.exitCode !== null) {
        const text = readFileSync(path.join(dir, `${node}.log`), 'utf8')
        throw new Error(`lab: BIRD on ${node} exited (${child.exitCode}): ${text.trim()}`)
      }
      if (existsSync(birdSocket(node))) {
        try {
          await birdc(node, 'show status')
          return
        } catch {
          /* not ready yet */
        }
      }
      if (Date.now() > until) throw new Error(`lab: BIRD on ${node} did not open ${birdSocket(node)}`)
      await sleep(100)
    }
  }

  const stopBird = async (node: BirdNode) => {
    const b = birds.get(node)
    if (!b) return
    birds.delete(node)
    if (b.child.exitCode === null && b.child.signalCode === null) {
      b.child.kill('SIGTERM')
      const done = await Promise.race([b.exited.then(() => true), sleep(3000).then(() => false)])
      if (!done) {
        b.child.kill('SIGKILL')
        await b.exited
      }
    }
  }

  const teardown = async () => {
    if (tornDown) return
    tornDown = true
    for (const node of [...birds.keys()]) {
      try {
        await stopBird(node)
      } catch {
        /* keep going */
      }
    }
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    }
    for (const node of NODES) {
      try {
        await destroyNetns(ns(node))
      } catch {
        /* keep going */
      }
    }
    // anything of ours still listed (e.g. a half-created namespace)
    for (const name of await listNetns()) if (name.startsWith(`${prefix}-`)) await destroyNetns(name)
    if (!opts.keepDir) rmSync(dir, {recursive: true, force: true})
    try {
      unlinkSync(ownerFile(prefix))
    } catch {
      /* gone */
    }
    activePrefixes.delete(prefix)
  }

  const lab: Lab = {
    scenario,
    spec,
    prefix,
    dir,
    ns,
    exec,
    birdFlavour: flavour,
    birdSocket,
    birdConfigPath,
    birdc,
    birdVersion: async (node) => {
      const m = /^BIRD\s+(\S+)$/m.exec(await birdc(node, 'show status'))
      if (!m) throw new Error(`lab: no version in ${node}'s show status`)
      return m[1]
    },
    bgpProtocols,
    waitEstablished,
    routes,
    waitRoute,
    stopBird,
    reconfigure: async (node, config) => {
      writeFileSync(birdConfigPath(node), config)
      const out = await birdc(node, 'configure')
      if (!/Reconfigur|Reconfigured|reconfiguration/i.test(out)) throw new Error(`lab: birdc ${node} configure: ${out.trim()}`)
    },
    teardown,
  }

  try {
    // --- namespaces and per-namespace sysctls
    for (const node of NODES) {
      await run('ip', ['netns', 'add', ns(node)])
      created.push(ns(node))
      await ipn(node, ['link', 'set', 'lo', 'up'])
      await sysctl(node, {
        'net.ipv4.conf.all.rp_filter': 0,
        'net.ipv4.conf.default.rp_filter': 0,
        'net.ipv6.conf.all.accept_dad': 0,
        'net.ipv6.conf.default.accept_dad': 0,
      })
    }
    for (const node of ['n1', 'tor1', 'tor2'] as const) await sysctl(node, {'net.ipv4.ip_forward': 1})
    if (opts.fullNodes) for (const node of ['n2', 'n3'] as const) await sysctl(node, {'net.ipv4.ip_forward': 1})
    await sysctl('n1', {'net.ipv4.fib_multipath_hash_policy': 0, 'net.ipv4.fib_multipath_use_neigh': 0})

    // --- links (n1: eth0, eth1, then tunl0, then the workload veth, as on the fixtures' node)
    const addLink = async ([a, ifA, addrA, b, ifB, addrB]: (typeof LINKS)[number]) => {
      await ipn(a, ['link', 'add', ifA, 'type', 'veth', 'peer', 'name', ifB, 'netns', ns(b)])
      if (addrA) await ipn(a, ['addr', 'add', addrA, 'dev', ifA])
      if (addrB) await ipn(b, ['addr', 'add', addrB, 'dev', ifB])
      await ipn(a, ['link', 'set', ifA, 'up'])
      await ipn(b, ['link', 'set', ifB, 'up'])
    }
    for (const link of LINKS.slice(0, 2)) await addLink(link)
    for (const node of ['n1', 'n2', 'n3'] as const) {
      if (node !== 'n1') for (const link of LINKS.filter((l) => l[0] === node)) await addLink(link)
      const me = TOPOLOGY.nodes[node]
      await ipn(node, ['addr', 'add', `${me.loopback}/32`, 'dev', 'lo'])
      await ipn(node, ['tuntap', 'add', 'dev', 'tunl0', 'mode', 'tun'])
      await ipn(node, ['link', 'set', 'tunl0', 'mtu', '1480'])
      await ipn(node, ['addr', 'add', `${me.tunl0}/32`, 'dev', 'tunl0'])
      await ipn(node, ['link', 'set', 'tunl0', 'up'])
      await holdTun(node)
    }
    await addLink(['n1', TOPOLOGY.workload.dev, null, 'tor1', 'wl0', null])

    // --- static routes (proto boot, as `ip route add` makes them)
    const n1Underlay =
      spec.underlay === 'ecmp-v4'
        ? ['nexthop', 'via', '172.31.11.1', 'dev', 'eth0', 'nexthop', 'via', '172.31.12.1', 'dev', 'eth1']
        : [
            'proto',
            'static',
            'nexthop',
            'via',
            'inet6',
            await linkLocal('tor1', 'n1'),
            'dev',
            'eth0',
            'nexthop',
            'via',
            'inet6',
            await linkLocal('tor2', 'n1'),
            'dev',
            'eth1',
          ]
    await ipn('n1', ['route', 'add', '172.31.20.0/23', ...n1Underlay])
    await ipn('n1', ['route', 'add', '172.31.30.0/24', 'via', '172.31.11.1', 'dev', 'eth0'])
    await ipn('n1', ['route', 'add', `${TOPOLOGY.workload.address}`, 'dev', TOPOLOGY.workload.dev, 'scope', 'link'])
    await ipn('n2', ['route', 'add', 'default', 'via', '172.31.21.1', 'dev', 'eth0'])
    await ipn('n3', ['route', 'add', 'default', 'via', '172.31.31.1', 'dev', 'eth0'])
    await ipn('tor1', ['route', 'add', '172.31.10.4', 'via', '172.31.11.3', 'dev', 'n1'])
    await ipn('tor1', ['route', 'add', '172.31.20.5', 'via', '172.31.21.2', 'dev', 'n2'])
    await ipn('tor1', ['route', 'add', '172.31.30.6', 'via', '172.31.31.6', 'dev', 'n3'])
    await ipn('tor2', ['route', 'add', '172.31.10.4', 'via', '172.31.12.3', 'dev', 'n1'])
    await ipn('tor2', ['route', 'add', '172.31.20.5', 'via', '172.31.21.18', 'dev', 'n2'])

    // --- BIRD
    for (const node of ['n2', 'n3', 'n1'] as const) await startBird(node)
    const remaining = () => Math.max(1000, deadline - Date.now())
    await waitEstablished('n1', remaining())
    for (const node of spec.stopped) {
      await stopBird(node)
      const name = `Mesh_${TOPOLOGY.nodes[node].loopback.replaceAll('.', '_')}`
      const until = Date.now() + remaining()
      while (((await bgpProtocols('n1')).find((p) => p.name === name)?.established ?? false) && Date.now() < until) await sleep(250)
    }
    if (opts.settle ?? true) await settle(remaining())
    return lab
  } catch (error) {
    await teardown()
    throw error
  }

  // -------------------------------------------------------------------------------------------

  async function holdTun(node: NodeName) {
    const child = spawn('ip', ['netns', 'exec', ns(node), PYTHON, '-c', TUN_HOLDER, 'tunl0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.push(child)
    let err = ''
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()))
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`lab: tunl0 holder on ${node} not ready: ${err}`)), 5000)
      child.stdout?.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) {
          clearTimeout(timer)
          resolve()
        }
      })
      child.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`lab: tunl0 holder on ${node} exited (${code}): ${err}`))
      })
    })
    child.stdout?.resume()
  }

  async function linkLocal(node: NodeName, dev: string): Promise<string> {
    const until = Date.now() + 5000
    for (;;) {
      const out = await ipn(node, ['-j', '-6', 'addr', 'show', 'dev', dev, 'scope', 'link'])
      const addrs = (JSON.parse(out || '[]') as Array<{addr_info?: Array<{local: string; tentative?: boolean}>}>).flatMap(
        (l) => l.addr_info ?? [],
      )
      const ready = addrs.find((a) => !a.tentative)
      if (ready) return ready.local
      if (Date.now() > until) throw new Error(`lab: no link-local address on ${node} ${dev}`)
      await sleep(100)
    }
  }

  /** Waits until n1's kernel holds a BIRD route for every prefix a running peer announces and
   *  n1's BIRD routes stayed the same over more than one kernel scan (2 s). */
  async function settle(timeoutMs: number) {
    const until = Date.now() + timeoutMs
    const running = (['n2', 'n3'] as const).filter((n) => !spec.stopped.includes(n))
    const wanted = new Set<string>([TOPOLOGY.nodes.n1.block])
    for (const n of running) {
      wanted.add(TOPOLOGY.nodes[n].block)
      wanted.add(TOPOLOGY.anycast)
    }
    let last = ''
    let since = Date.now()
    for (;;) {
      const birdRoutes = (await routes('n1')).filter((r) => r.protocol === 'bird')
      const key = JSON.stringify(birdRoutes)
      const have = new Set(birdRoutes.map((r) => normPrefix(r.dst)))
      if (key !== last) {
        last = key
        since = Date.now()
      } else if ([...wanted].every((w) => have.has(w)) && Date.now() - since >= 3000) {
        return
      }
      if (Date.now() > until)
        throw new Error(`lab: n1's kernel did not settle (want ${[...wanted].join(', ')}; have ${[...have].join(', ')})`)
      await sleep(300)
    }
  }
}
