// Synthetic full-table snapshot directories for the bench, in the REAL formats:
//   birdc-show-route-all.txt  BIRD 2.0.12 `show route all` (banner, `Table master4:`, headers padded
//                             like BIRD's, TAB next-hop and attribute lines, ~350 bytes per route like
//                             the 1M capture in reference/bird-captures/1M-dump-b2-show_route_all.txt.head)
//   ip-j-d-route.json         `ip -j -d route show table all`: one JSON array on one line
//   birdc-show-protocols-all.txt, birdc-show-status.txt, ip-j-d-link.json, ip-j-addr.json, sysctl.txt
//                             adapted from test/fixtures/bird2-ecmp-not-tunneled/
//   ippools.yaml              one IP-in-IP pool (blockSize 26) covering every generated block
//
// The node: loopback 172.31.10.4, uplinks eth0 172.31.11.3/24 (ToR 172.31.11.1) and eth1
// 172.31.12.3/24 (ToR 172.31.12.1), tunl0 holding the first address of its own block.
// 250 other nodes 172.20.R.H in 10 racks; the kernel reaches racks 0 and 1 over ECMP (both ToRs),
// the others over one ToR. Block i belongs to node hash(i):
//   - block 0 is this node's (static blackhole in BIRD, blackhole proto bird in the kernel)
//   - 1 % of blocks (i % 100 == 50) have two equal paths from two nodes: the kernel has a healthy
//     multipath route over tunl0 (a secondary `show route` header, as BIRD prints it)
//   - blocks of nodes in racks 0/1: BIRD resolves the next hop over the ECMP underlay (2 via lines)
//     and the kernel route is multipath over eth0/eth1: the tunnel-bypassed-by-ecmp failure (~20 %)
//   - every other block: BIRD `via TOR on ethX`, kernel `via NODE dev tunl0 onlink` (healthy)
// Broken-heavy (`--broken`): 40 % of the blocks broken in the seed's ways, each with what the report cites:
//   - i % 10 in {0, 1}: a node of an ECMP rack, multipath over eth0/eth1 (tunnel-bypassed-by-ecmp, 20 %)
//   - i % 10 == 2: a node of rack 9, whose underlay the kernel reaches over `via inet6` link-local next hops that
//     BIRD does not import: BIRD's path is unreachable, the kernel's route `unreachable` (nexthop-unresolvable-by-bird)
//   - i % 10 == 3: two equal paths from two nodes, the kernel's route through the tunnel to one (multipath-lost)
//   - the others: one path, through the tunnel (healthy); nodes of racks 2-8
//
// `--bird16`: the same routes as BIRD 1.6.8 (Calico's fork) prints them (the next hop on the header line, `multipath`,
// no table line; status and protocols adapted from test/fixtures/bird16-ecmp-not-tunneled/).
//
// Files are written in ~1 MiB chunks through write streams, never as one giant string.
// Usage: node bench/gen-snapshot.mjs COUNT DIR [--broken] [--bird16]     (COUNT: 10000, 10k, 100k, 1M)
import {createWriteStream, mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const HERE = path.dirname(fileURLToPath(import.meta.url))
export const FIXTURE = path.join(HERE, '..', 'test', 'fixtures', 'bird2-ecmp-not-tunneled')
const FIXTURE16 = path.join(HERE, '..', 'test', 'fixtures', 'bird16-ecmp-not-tunneled')
export const GEN_VERSION = 3 // bump when the output changes (cached snapshot dirs are keyed by it)

export const NODES = 250
const RACKS = 10
const ECMP_RACKS = new Set([0, 1])
const TORS = [
  {gw: '172.31.11.1', dev: 'eth0'},
  {gw: '172.31.12.1', dev: 'eth1'},
]
const UNRESOLVABLE_RACK = 9 // broken-heavy: its underlay has IPv6 link-local next hops
const LINK_LOCALS = ['fe80::1066:cdff:feb4:db0e', 'fe80::7c27:3aff:fe5d:6076']
const OLD_TUNL0 = '192.168.162.128' // the fixture's tunl0 address / local block
const OLD_WORKLOAD = '192.168.162.129'

export function parseCount(text) {
  const m = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(String(text).trim())
  if (!m) throw new Error(`bad size ${text}: expected e.g. 10000, 10k, 100k, 1M`)
  const mult = m[2] === '' ? 1 : m[2].toLowerCase() === 'k' ? 1000 : 1_000_000
  return Math.round(Number(m[1]) * mult)
}

function ipText(v) {
  return `${(v >>> 24) & 255}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`
}

/** The smallest pool (from 10.0.0.0/8 upwards, else aligned down) holding `count` /26 blocks. */
export function poolFor(count) {
  let len = 8
  while (len > 1 && 2 ** (26 - len) < count) len--
  const base = len === 8 ? 10 * 2 ** 24 : (10 * 2 ** 24) - ((10 * 2 ** 24) % 2 ** (32 - len))
  return {base, len, cidr: `${ipText(base)}/${len}`}
}

function node(i) {
  const rack = i % RACKS
  const host = 10 + Math.floor(i / RACKS)
  const addr = `172.20.${rack}.${host}`
  return {i, rack, addr, proto: `Mesh_172_20_${rack}_${host}`, ecmp: ECMP_RACKS.has(rack)}
}

/** A chunked writer: strings are joined into ~1 MiB pieces and written with back-pressure. */
class Out {
  constructor(file, convert = (s) => s) {
    this.convert = convert // of whole routes: each write is
    this.stream = createWriteStream(file)
    this.parts = []
    this.size = 0
    this.bytes = 0
  }
  async write(s) {
    s = this.convert(s)
    this.parts.push(s)
    this.size += s.length
    if (this.size >= 1 << 20) await this.flush()
  }
  async flush() {
    if (this.parts.length === 0) return
    const chunk = this.parts.join('')
    this.parts = []
    this.size = 0
    this.bytes += Buffer.byteLength(chunk)
    if (!this.stream.write(chunk)) await new Promise((resolve) => this.stream.once('drain', resolve))
  }
  async close() {
    await this.flush()
    await new Promise((resolve, reject) => this.stream.end((err) => (err ? reject(err) : resolve())))
    return this.bytes
  }
}

const pad20 = (s) => (s.length >= 20 ? `${s} ` : s + ' '.repeat(21 - s.length))

function birdVia(n) {
  if (n.ecmp) return `\tvia ${TORS[0].gw} on ${TORS[0].dev} weight 1\n\tvia ${TORS[1].gw} on ${TORS[1].dev} weight 1\n`
  const t = TORS[n.rack % 2]
  return `\tvia ${t.gw} on ${t.dev}\n`
}

function birdBgpAttrs(n, block) {
  // ~350 bytes per route in all, like the real 2.0.12 capture (9-10 attribute lines there)
  return (
    '\tType: BGP univ\n' +
    '\tBGP.origin: IGP\n' +
    '\tBGP.as_path: \n' +
    `\tBGP.next_hop: ${n.addr}\n` +
    '\tBGP.local_pref: 100\n' +
    `\tBGP.community: (64512,${100 + n.rack}) (64512,${1000 + (block % 997)}) (64512,${20000 + n.rack}) (64512,30001) (65000,${n.i})\n` +
    `\tBGP.large_community: (64512, 1, ${n.i}) (64512, 2, ${n.rack})\n`
  )
}

function birdHeader(prefix, n, primary) {
  return `[${n.proto} 16:50:09.431 from ${n.addr}]${primary ? ' *' : ''} (100/?) [i]\n`
}

function kernelJson(prefix, kind, owners) {
  const head = `{"type":"unicast","dst":"${prefix}"`
  const tail = `"table":"main","protocol":"bird","scope":"global","metric":32,"flags":[]`
  if (kind === 'multi-tunnel') {
    const nhs = owners.map((n) => `{"gateway":"${n.addr}","dev":"tunl0","weight":1,"flags":["onlink"]}`).join(',')
    return `${head},${tail},"nexthops":[${nhs}]}`
  }
  if (kind === 'ecmp-bypass') {
    const nhs = TORS.map((t) => `{"gateway":"${t.gw}","dev":"${t.dev}","weight":1,"flags":[]}`).join(',')
    return `${head},${tail},"nexthops":[${nhs}]}`
  }
  if (kind === 'unreachable') return `{"type":"unreachable","dst":"${prefix}","table":"main","protocol":"bird","scope":"global","metric":32,"flags":[]}`
  // healthy single path through the tunnel (flags onlink on the route, as ip -j prints it)
  return `${head},"gateway":"${owners[0].addr}","dev":"tunl0","table":"main","protocol":"bird","scope":"global","metric":32,"flags":["onlink"]}`
}

/** The node of block i among the given racks (RACKS nodes a rack, one of every RACKS in node order). */
function nodeIn(nodes, i, racks) {
  const rack = racks[i % racks.length]
  const host = ((i * 7919) >>> 0) % (NODES / RACKS)
  return nodes[host * RACKS + rack]
}

const TUNNEL_RACKS = [2, 3, 4, 5, 6, 7, 8]

/**
 * Whole routes of BIRD 2.0.12's `show route all` as BIRD 1.6.8 prints them (as in the bird16 captures): the first
 * path's next hop on its header (`multipath` when several), 18-column networks, times without milliseconds,
 * `Type: … unicast univ`, no `Kernel.scope`.
 */
export function asBird16(text) {
  const lines = text.split('\n')
  const out = []
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    const m = /^(\S*) +(unicast|blackhole|unreachable) (\[.*)$/.exec(line)
    if (line === 'BIRD 2.0.12 ready.') out.push('BIRD 1.6.8 ready.')
    else if (line.startsWith('Table ') || line.startsWith('\tKernel.scope:')) continue
    else if (line.startsWith('\tType: ')) out.push(line.replace(/ univ$/, ' unicast univ'))
    else if (!m) out.push(line)
    else {
      const net = m[1] === '' ? ' '.repeat(18) : m[1].padEnd(18)
      const rest = m[3].replace(/(\d\d:\d\d:\d\d)\.\d+/, '$1')
      const vias = []
      if (m[2] === 'unicast') while (/^\t(via|dev) /.test(lines[i + 1] ?? '')) vias.push(lines[++i])
      if (vias.length === 1) out.push(`${net} ${vias[0].slice(1)} ${rest}`)
      else if (vias.length > 1) out.push(`${net} multipath ${rest}`, ...vias)
      else out.push(`${net} ${m[2]} ${rest}`)
    }
  }
  return out.join('\n')
}

/**
 * Writes the snapshot (broken: broken-heavy, bird16: BIRD 1.6.8's format, see above); returns {dir, count, pool,
 * bytes: {file: size}, total}.
 */
export async function generateSnapshot(count, dir, {broken = false, bird16 = false} = {}) {
  mkdirSync(dir, {recursive: true})
  const pool = poolFor(count)
  const nodes = Array.from({length: NODES}, (_, i) => node(i))
  const tunl0Addr = ipText(pool.base)
  const workload = ipText(pool.base + 1)

  const bird = new Out(path.join(dir, 'birdc-show-route-all.txt'), bird16 ? asBird16 : undefined)
  const kern = new Out(path.join(dir, 'ip-j-d-route.json'))
  await bird.write('BIRD 2.0.12 ready.\nTable master4:\n')

  // kernel1-learned routes first: the workload, the underlay to every rack
  await bird.write(`${pad20(`${workload}/32`)}unicast [kernel1 16:50:07.754] * (10)\n\tdev calif2ae67c76cf\n\tType: inherit univ\n\tKernel.source: 3\n\tKernel.metric: 0\n\tKernel.scope: 253\n`)
  // the kernel's non-pool routes, from the fixture (connected subnets, local table), adapted
  const fixtureRoutes = JSON.parse(readFileSync(path.join(FIXTURE, 'ip-j-d-route.json'), 'utf8'))
  const keep = fixtureRoutes.filter((r) => !r.dst.startsWith('192.168.') && !r.dst.startsWith('172.31.20.') && !r.dst.startsWith('172.31.30.'))
  let first = true
  const kwrite = async (s) => {
    await kern.write(first ? `[${s}` : `,${s}`)
    first = false
  }
  for (const r of keep) await kwrite(JSON.stringify(r))
  await kwrite(JSON.stringify({type: 'local', dst: tunl0Addr, dev: 'tunl0', table: 'local', protocol: 'kernel', scope: 'host', prefsrc: tunl0Addr, flags: []}))
  await kwrite(JSON.stringify({type: 'unicast', dst: workload, dev: 'calif2ae67c76cf', table: 'main', protocol: 'boot', scope: 'link', flags: []}))
  for (let r = 0; r < RACKS; r++) {
    const dst = `172.20.${r}.0/24`
    if (broken && r === UNRESOLVABLE_RACK) {
      // the kernel reaches it; BIRD holds no route for it (it does not import one with IPv6 next hops)
      await kwrite(JSON.stringify({type: 'unicast', dst, table: 'main', protocol: 'static', scope: 'global', flags: [], nexthops: TORS.map((t, k) => ({via: {family: 'inet6', host: LINK_LOCALS[k]}, dev: t.dev, weight: 1, flags: []}))}))
    } else if (ECMP_RACKS.has(r)) {
      await bird.write(`${pad20(dst)}unicast [kernel1 16:50:07.754] * (10)\n\tvia ${TORS[0].gw} on ${TORS[0].dev} weight 1\n\tvia ${TORS[1].gw} on ${TORS[1].dev} weight 1\n\tType: inherit univ\n\tKernel.source: 3\n\tKernel.metric: 0\n`)
      await kwrite(JSON.stringify({type: 'unicast', dst, table: 'main', protocol: 'boot', scope: 'global', flags: [], nexthops: TORS.map((t) => ({gateway: t.gw, dev: t.dev, weight: 1, flags: []}))}))
    } else {
      const t = TORS[r % 2]
      await bird.write(`${pad20(dst)}unicast [kernel1 16:50:07.754] * (10)\n\tvia ${t.gw} on ${t.dev}\n\tType: inherit univ\n\tKernel.source: 3\n\tKernel.metric: 0\n`)
      await kwrite(JSON.stringify({type: 'unicast', dst, gateway: t.gw, dev: t.dev, table: 'main', protocol: 'boot', scope: 'global', flags: []}))
    }
  }

  // the pool's blocks
  const counts = {local: 0, healthy: 0, ecmpBypass: 0, multiTunnel: 0, unreachable: 0, multipathLost: 0}
  for (let i = 0; i < count; i++) {
    const prefix = `${ipText(pool.base + i * 64)}/26`
    if (i === 0) {
      await bird.write(`${pad20(prefix)}blackhole [blocks 16:50:07.751] * (200)\n\tType: static univ\n`)
      await kwrite(`{"type":"blackhole","dst":"${prefix}","table":"main","protocol":"bird","scope":"global","metric":32,"flags":[]}`)
      counts.local++
      continue
    }
    if (broken) {
      const kind = i % 10
      if (kind <= 1) {
        const n = nodeIn(nodes, i, [...ECMP_RACKS])
        await bird.write(`${pad20(prefix)}unicast ${birdHeader(prefix, n, true)}${birdVia(n)}${birdBgpAttrs(n, i)}`)
        await kwrite(kernelJson(prefix, 'ecmp-bypass', [n]))
        counts.ecmpBypass++
      } else if (kind === 2) {
        const n = nodeIn(nodes, i, [UNRESOLVABLE_RACK])
        await bird.write(`${pad20(prefix)}unreachable ${birdHeader(prefix, n, true).replace('(100/?)', '(100/-)')}${birdBgpAttrs(n, i)}`)
        await kwrite(kernelJson(prefix, 'unreachable', [n]))
        counts.unreachable++
      } else if (kind === 3) {
        const n = nodeIn(nodes, i, TUNNEL_RACKS)
        const n2 = nodeIn(nodes, i + 1, TUNNEL_RACKS)
        await bird.write(`${pad20(prefix)}unicast ${birdHeader(prefix, n, true)}${birdVia(n)}${birdBgpAttrs(n, i)}`)
        await bird.write(`${' '.repeat(21)}unicast ${birdHeader(prefix, n2, false)}${birdVia(n2)}${birdBgpAttrs(n2, i)}`)
        await kwrite(kernelJson(prefix, 'healthy', [n]))
        counts.multipathLost++
      } else {
        const n = nodeIn(nodes, i, TUNNEL_RACKS)
        await bird.write(`${pad20(prefix)}unicast ${birdHeader(prefix, n, true)}${birdVia(n)}${birdBgpAttrs(n, i)}`)
        await kwrite(kernelJson(prefix, 'healthy', [n]))
        counts.healthy++
      }
      continue
    }
    const n = nodes[(i * 7919) % NODES]
    if (i % 100 === 50) {
      const n2 = nodes[(n.i + 3) % NODES]
      await bird.write(`${pad20(prefix)}unicast ${birdHeader(prefix, n, true)}${birdVia(n)}${birdBgpAttrs(n, i)}`)
      await bird.write(`${' '.repeat(21)}unicast ${birdHeader(prefix, n2, false)}${birdVia(n2)}${birdBgpAttrs(n2, i)}`)
      await kwrite(kernelJson(prefix, 'multi-tunnel', [n, n2]))
      counts.multiTunnel++
      continue
    }
    await bird.write(`${pad20(prefix)}unicast ${birdHeader(prefix, n, true)}${birdVia(n)}${birdBgpAttrs(n, i)}`)
    if (n.ecmp) {
      await kwrite(kernelJson(prefix, 'ecmp-bypass', [n]))
      counts.ecmpBypass++
    } else {
      await kwrite(kernelJson(prefix, 'healthy', [n]))
      counts.healthy++
    }
  }
  await kern.write(']\n')
  const bytes = {}
  bytes['birdc-show-route-all.txt'] = await bird.close()
  bytes['ip-j-d-route.json'] = await kern.close()

  // small files, adapted from the fixture
  const fx = (name) => readFileSync(path.join(FIXTURE, name), 'utf8')
  const small = {}
  small['birdc-show-status.txt'] = readFileSync(path.join(bird16 ? FIXTURE16 : FIXTURE, 'birdc-show-status.txt'), 'utf8')
  small['sysctl.txt'] = fx('sysctl.txt')
  small['ip-j-d-link.json'] = fx('ip-j-d-link.json')
  small['ip-j-addr.json'] = fx('ip-j-addr.json').split(OLD_TUNL0).join(tunl0Addr).split(OLD_WORKLOAD).join(workload)
  small['ippools.yaml'] = [
    'apiVersion: projectcalico.org/v3',
    'kind: IPPoolList',
    'items:',
    '- apiVersion: projectcalico.org/v3',
    '  kind: IPPool',
    '  metadata:',
    '    name: bench-ipv4-ippool',
    '  spec:',
    '    allowedUses:',
    '    - Workload',
    '    - Tunnel',
    '    blockSize: 26',
    `    cidr: ${pool.cidr}`,
    '    ipipMode: Always',
    '    natOutgoing: true',
    '    nodeSelector: all()',
    '    vxlanMode: Never',
    '',
  ].join('\n')
  small['birdc-show-protocols-all.txt'] = protocolsText(count, nodes, bird16 ? FIXTURE16 : FIXTURE)
  for (const [name, text] of Object.entries(small)) {
    writeFileSync(path.join(dir, name), text)
    bytes[name] = Buffer.byteLength(text)
  }
  const total = Object.values(bytes).reduce((a, b) => a + b, 0)
  return {dir, count, pool: pool.cidr, counts, bytes, total}
}

function protocolsText(count, nodes, fixture) {
  const fx = readFileSync(path.join(fixture, 'birdc-show-protocols-all.txt'), 'utf8')
  const lines = fx.split('\n')
  const start = lines.findIndex((l) => l.startsWith('Mesh_172_31_20_5 '))
  let end = start + 1
  while (end < lines.length && lines[end] !== '' && !/^\S/.test(lines[end])) end++
  const head = lines.slice(0, start).join('\n') // banner, device1, kernel1, blocks
  const template = lines.slice(start, end).join('\n')
  const per = Math.round(count / NODES)
  const out = [head]
  for (const n of nodes) {
    out.push(
      template
        .replace(/^Mesh_172_31_20_5 /, `${n.proto} `)
        .split('172.31.20.5').join(n.addr)
        .replace(/Routes:\s+2 imported, 1 exported, 2 preferred/, `Routes:         ${per} imported, 1 exported, ${per} preferred`),
      '',
    )
  }
  return out.join('\n') + '\n'
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const [countText, dir, ...flags] = process.argv.slice(2)
  if (!countText || !dir || flags.some((f) => f !== '--broken' && f !== '--bird16')) {
    console.error('usage: node bench/gen-snapshot.mjs COUNT DIR [--broken] [--bird16]')
    process.exit(2)
  }
  const t0 = performance.now()
  const r = await generateSnapshot(parseCount(countText), dir, {broken: flags.includes('--broken'), bird16: flags.includes('--bird16')})
  console.log(JSON.stringify({...r, seconds: +((performance.now() - t0) / 1000).toFixed(2)}, null, 1))
}
