// Proves the lab itself: each scenario, started for real, shows on n1 the kernel and BIRD state that
// defines it (the state the matching fixture in test/fixtures/ was captured from).

import {existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {execa} from 'execa'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'
import {captureSnapshot} from './capture.js'
import {
  cleanupStaleLabs,
  labUnavailableReason,
  calicoExportFilter,
  n1BirdConfig,
  parseBgpProtocols,
  SCENARIO_SPECS,
  startLab,
  type KernelRoute,
  type Lab,
  type ScenarioName,
} from './lab.js'

const N2_BLOCK = '192.168.110.128/26'
const N3_BLOCK = '192.168.82.0/26'
const ANYCAST = '192.168.200.10'

const hops = (r: KernelRoute) =>
  (r.nexthops ?? [r]).map((h) => ({gateway: h.gateway ?? h.via?.host, dev: h.dev, onlink: (h.flags ?? []).includes('onlink')}))
const sortHops = (r: KernelRoute) => hops(r).sort((a, b) => `${a.gateway}${a.dev}`.localeCompare(`${b.gateway}${b.dev}`))

const ECMP_HOPS = [
  {gateway: '172.31.11.1', dev: 'eth0', onlink: false},
  {gateway: '172.31.12.1', dev: 'eth1', onlink: false},
]

/** predicate: exactly one route, proto bird, with these next hops (any order) */
const birdRouteWith = (expected: Array<{gateway: string; dev: string; onlink: boolean}>, type = 'unicast') => (rs: KernelRoute[]) =>
  rs.length === 1 &&
  rs[0].protocol === 'bird' &&
  (rs[0].type ?? 'unicast') === type &&
  JSON.stringify(sortHops(rs[0])) === JSON.stringify([...expected].sort((a, b) => `${a.gateway}${a.dev}`.localeCompare(`${b.gateway}${b.dev}`)))

const absent = (rs: KernelRoute[]) => rs.length === 0

describe('lab helpers (no root needed)', () => {
  it('parses BGP session states from BIRD 2 and 1.6 `show protocols`', () => {
    const b2 = readFileSync('test/fixtures/bird2-peer-down/birdc-show-protocols-all.txt', 'utf8')
    expect(parseBgpProtocols(b2)).toEqual([
      {name: 'Mesh_172_31_20_5', state: 'up', info: 'Established', established: true},
      {name: 'Mesh_172_31_30_6', state: 'start', info: 'Active Socket: Connection refused', established: false},
    ])
    const b16 = readFileSync('test/fixtures/bird16-ecmp-not-tunneled/birdc-show-protocols-all.txt', 'utf8')
    const s16 = parseBgpProtocols(b16)
    expect(s16.map((s) => s.name)).toEqual(['Mesh_172_31_20_5', 'Mesh_172_31_30_6'])
    expect(s16.every((s) => s.established)).toBe(true)
  })

  it('writes n1 configurations in the fixtures\' shapes, with Calico\'s BGP export filter', () => {
    // the fixtures were captured with a stricter export (static routes only); the lab now exports as Calico does
    const calico = (conf: string) => conf.replace(
      /filter calico_export_to_bgp_peers \{\n {2}if net ~ \[ 192\.168\.0\.0\/16\{26,32\} \] && source = RTS_STATIC then accept;\n {2}reject;\n\}/,
      calicoExportFilter(['192.168.162.128/26']).join('\n'))
    expect(n1BirdConfig(SCENARIO_SPECS['bird2-ecmp']).trim()).toBe(
      calico(readFileSync('test/fixtures/bird2-ecmp-not-tunneled/bird.conf', 'utf8').replace(/\n\s*\n/g, '\n').trim()),
    )
    expect(n1BirdConfig(SCENARIO_SPECS['bird16-ecmp']).trim()).toBe(
      calico(readFileSync('test/fixtures/bird16-ecmp-not-tunneled/bird.conf', 'utf8').trim()),
    )
    expect(n1BirdConfig(SCENARIO_SPECS['bird2-ecmp'])).toContain('calico_aggr();\n  if ( net ~ 192.168.0.0/16 ) then { accept; }\n  reject;')
    expect(n1BirdConfig(SCENARIO_SPECS['bird2-ecmp'])).toMatch(/learn; persist; scan time 2; merge paths on;/)
    expect(n1BirdConfig(SCENARIO_SPECS['bird2-healthy'])).toContain('ifname = "tunl0"; onlink = true; gw = bgp_next_hop; onlink = true;')
  })
})

// the lab as a whole needs root and BIRD 2; the BIRD 1.6.8 scenarios also need get-bird16.sh's unpack
const allReason = labUnavailableReason('bird2-ecmp')
const bird16Reason = labUnavailableReason('bird16-ecmp')
if (allReason) console.warn(`lab tests skipped: ${allReason}`)
else if (bird16Reason) console.warn(`BIRD 1.6 lab tests skipped: ${bird16Reason}`)

describe.skipIf(allReason !== null)('real-BIRD lab', () => {
  let lab: Lab | undefined

  beforeAll(async () => {
    await cleanupStaleLabs()
  })
  afterEach(async () => {
    await lab?.teardown()
    lab = undefined
  })
  afterAll(async () => {
    // nothing of this process may be left behind
    const {stdout} = await execa('ip', ['netns', 'list'])
    expect(stdout.split('\n').filter((l) => l.startsWith(`rdl${process.pid % 10000}`))).toEqual([])
  })

  const start = async (scenario: ScenarioName) => {
    lab = await startLab(scenario)
    return lab
  }

  const assertTopology = async (l: Lab) => {
    // tunl0 is a carrier-up TUN device holding the block's first address
    const link = JSON.parse((await l.exec('n1', ['ip', '-j', '-d', 'link', 'show', 'tunl0'])).stdout)[0]
    expect(link.flags).toContain('LOWER_UP')
    expect(link.linkinfo?.info_kind).toBe('tun')
    const addr = JSON.parse((await l.exec('n1', ['ip', '-j', 'addr', 'show', 'dev', 'tunl0'])).stdout)[0]
    expect(addr.addr_info.map((a: {local: string}) => a.local)).toContain('192.168.162.128')
    // the underlay carries the loopback-to-loopback sessions: both are Established
    const sessions = await l.bgpProtocols('n1')
    expect(sessions.map((s) => [s.name, s.established])).toEqual([
      ['Mesh_172_31_20_5', true],
      ['Mesh_172_31_30_6', true],
    ])
    const own = await l.waitRoute('n1', '192.168.162.128/26', (rs) => rs.length === 1, 1000)
    expect(own[0]).toMatchObject({type: 'blackhole', protocol: 'bird'})
    const wl = await l.waitRoute('n1', '192.168.162.129', (rs) => rs.length === 1, 1000)
    expect(wl[0]).toMatchObject({dev: 'calif2ae67c76cf', protocol: 'boot', scope: 'link'})
    // no route through tunl0 is linkdown
    for (const r of await l.routes('n1')) for (const h of r.nexthops ?? [r]) expect(h.flags ?? []).not.toContain('linkdown')
  }

  it('bird2-ecmp: BIRD 2 resolves the BGP next hop through the ECMP underlay, nothing goes through tunl0', async () => {
    const l = await start('bird2-ecmp')
    expect(await l.birdVersion('n1')).toBe('2.0.12')
    await assertTopology(l)
    const n2 = await l.waitRoute('n1', N2_BLOCK, birdRouteWith(ECMP_HOPS), 5000)
    expect(n2[0].metric).toBe(32)
    await l.waitRoute('n1', ANYCAST, birdRouteWith(ECMP_HOPS), 5000)
    await l.waitRoute('n1', N3_BLOCK, birdRouteWith([{gateway: '172.31.11.1', dev: 'eth0', onlink: false}]), 5000)
    expect((await l.bgpProtocols('n1')).every((p) => p.established)).toBe(true)
  })

  it.skipIf(labUnavailableReason('bird16-ecmp') !== null)('bird16-ecmp: BIRD 1.6.8 installs the same multipath routes (metric 0)', async () => {
    const l = await start('bird16-ecmp')
    expect(await l.birdVersion('n1')).toBe('1.6.8')
    await assertTopology(l)
    const n2 = await l.waitRoute('n1', N2_BLOCK, birdRouteWith(ECMP_HOPS), 5000)
    expect(n2[0].metric ?? 0).toBe(0)
    await l.waitRoute('n1', ANYCAST, birdRouteWith(ECMP_HOPS), 5000)
    await l.waitRoute('n1', N3_BLOCK, birdRouteWith([{gateway: '172.31.11.1', dev: 'eth0', onlink: false}]), 5000)
    // BIRD's own table calls it multipath (1.6 output format)
    expect(await l.birdc('n1', `show route ${N2_BLOCK}`)).toMatch(/192\.168\.110\.128\/26\s+multipath/)
  })

  it.skipIf(labUnavailableReason('bird16-ipv6-ll') !== null)(
    'bird16-ipv6-ll: BIRD 1.6 cannot import a via-inet6 ECMP underlay, so n2\'s block is unreachable',
    async () => {
      const l = await start('bird16-ipv6-ll')
      expect(await l.birdVersion('n1')).toBe('1.6.8')
      await assertTopology(l)
      const underlay = await l.waitRoute('n1', '172.31.20.0/23', (rs) => rs.length === 1, 1000)
      expect(underlay[0].nexthops?.map((h) => h.via?.family)).toEqual(['inet6', 'inet6'])
      expect(underlay[0].nexthops?.every((h) => (h.via?.host ?? '').startsWith('fe80:'))).toBe(true)
      await l.waitRoute('n1', N2_BLOCK, (rs) => rs.length === 1 && rs[0].type === 'unreachable' && rs[0].protocol === 'bird', 5000)
      // the anycast address keeps only n3's path (via tor1), the n2 path is unresolvable
      await l.waitRoute('n1', ANYCAST, birdRouteWith([{gateway: '172.31.11.1', dev: 'eth0', onlink: false}]), 5000)
      // yet the kernel itself reaches n2 fine
      const get = await l.exec('n1', ['ip', 'route', 'get', '172.31.20.5'])
      expect(get.exitCode).toBe(0)
      expect(get.stdout).toMatch(/via inet6 fe80:/)
      // BIRD never learned the underlay route
      expect(await l.birdc('n1', 'show route 172.31.20.0/23')).not.toMatch(/172\.31\.20\.0\/23\s+(via|multipath)/)
    },
  )

  it('bird2-peer-down: n3\'s session is not Established and its block is gone', async () => {
    const l = await start('bird2-peer-down')
    const sessions = await l.bgpProtocols('n1')
    expect(sessions.find((s) => s.name === 'Mesh_172_31_20_5')?.established).toBe(true)
    const n3 = sessions.find((s) => s.name === 'Mesh_172_31_30_6')
    expect(n3?.established).toBe(false)
    expect(n3?.info).toMatch(/Active|Connect|Idle/)
    await l.waitRoute('n1', N3_BLOCK, absent, 5000)
    await l.waitRoute('n1', N2_BLOCK, birdRouteWith(ECMP_HOPS), 5000)
    expect(await l.birdc('n1', 'show route all')).not.toContain(N3_BLOCK)
  })

  it('bird2-healthy: the onlink kernel filter puts every pool route on tunl0, the anycast one as two-hop multipath', async () => {
    const l = await start('bird2-healthy')
    await assertTopology(l)
    await l.waitRoute('n1', N2_BLOCK, birdRouteWith([{gateway: '172.31.20.5', dev: 'tunl0', onlink: true}]), 5000)
    await l.waitRoute('n1', N3_BLOCK, birdRouteWith([{gateway: '172.31.30.6', dev: 'tunl0', onlink: true}]), 5000)
    const any = await l.waitRoute(
      'n1',
      ANYCAST,
      birdRouteWith([
        {gateway: '172.31.20.5', dev: 'tunl0', onlink: true},
        {gateway: '172.31.30.6', dev: 'tunl0', onlink: true},
      ]),
      5000,
    )
    expect(any[0].nexthops).toHaveLength(2)
    // and it stays that way across kernel scans (BIRD does not fight its own rewrite)
    await new Promise((r) => setTimeout(r, 2500))
    await l.waitRoute('n1', N2_BLOCK, birdRouteWith([{gateway: '172.31.20.5', dev: 'tunl0', onlink: true}]), 100)
  })

  it('cleanupStaleLabs removes a dead run\'s namespaces and processes, and leaves a live owner\'s alone', async () => {
    const stateDir = path.join(os.tmpdir(), 'routedoctor-lab')
    mkdirSync(stateDir, {recursive: true})
    const base = (process.pid + 5000) % 10000
    const dead = `rdl${base}y`
    const live = `rdl${base}z`
    // a pid that certainly belonged to a process that has exited
    const gone = execa('true')
    await gone
    const deadPid = gone.pid!
    try {
      for (const [prefix, pid] of [[dead, deadPid], [live, 1]] as const) {
        await execa('ip', ['netns', 'add', `${prefix}-n1`])
        writeFileSync(path.join(stateDir, `${prefix}.owner`), JSON.stringify({pid}))
      }
      const sleeper = execa('ip', ['netns', 'exec', `${dead}-n1`, 'sleep', '300'], {reject: false})
      await new Promise((r) => setTimeout(r, 200))
      const cleaned = await cleanupStaleLabs()
      expect(cleaned).toContain(dead)
      expect(cleaned).not.toContain(live)
      const result = await sleeper
      expect(result.signal).toBe('SIGKILL')
      const {stdout} = await execa('ip', ['netns', 'list'])
      const names = stdout.split('\n').map((l) => l.split(' ')[0])
      expect(names).not.toContain(`${dead}-n1`)
      expect(names).toContain(`${live}-n1`)
      expect(existsSync(path.join(stateDir, `${dead}.owner`))).toBe(false)
    } finally {
      for (const prefix of [dead, live]) {
        await execa('ip', ['netns', 'del', `${prefix}-n1`], {reject: false})
        rmSync(path.join(stateDir, `${prefix}.owner`), {force: true})
      }
    }
  })

  it('capture writes a complete snapshot directory and teardown removes the namespaces', async () => {
    const l = await start('bird2-ecmp')
    const out = mkdtempSync(path.join(os.tmpdir(), 'rdl-capture-'))
    try {
      const files = await captureSnapshot(l, out)
      for (const f of [
        'ip-j-d-route.json', 'ip-d-route.txt', 'ip-j-d-link.json', 'ip-d-link.txt', 'ip-j-addr.json', 'ip-j-neigh.json',
        'ip-6-d-route.txt', 'ip-rule.txt', 'sysctl.txt', 'birdc-show-status.txt', 'birdc-show-route-all.txt',
        'birdc-show-protocols-all.txt', 'bird.conf', 'ippools.yaml',
      ]) {
        expect(files).toContain(f)
        expect(existsSync(path.join(out, f))).toBe(true)
      }
      const routes = JSON.parse(readFileSync(path.join(out, 'ip-j-d-route.json'), 'utf8')) as KernelRoute[]
      expect(routes.some((r) => r.dst === N2_BLOCK && r.protocol === 'bird')).toBe(true)
      expect(readFileSync(path.join(out, 'birdc-show-status.txt'), 'utf8')).toMatch(/^BIRD 2\.0\.12 ready\.\n/)
      const sysctl = readFileSync(path.join(out, 'sysctl.txt'), 'utf8')
      expect(sysctl).toContain('net.ipv4.ip_forward = 1\n')
      expect(sysctl).toContain('net.ipv4.fib_multipath_hash_policy = 0\n')
      expect(sysctl).toContain('net.ipv4.conf.tunl0.rp_filter = 0\n')
      expect(readFileSync(path.join(out, 'ip-d-route.txt'), 'utf8')).toContain('\tnexthop via 172.31.11.1 dev eth0 weight 1')
    } finally {
      rmSync(out, {recursive: true, force: true})
    }
    const prefix = l.prefix
    await l.teardown()
    lab = undefined
    const {stdout} = await execa('ip', ['netns', 'list'])
    expect(stdout.split('\n').filter((n) => n.startsWith(`${prefix}-`))).toEqual([])
    expect(existsSync(l.dir)).toBe(false)
  })
})
