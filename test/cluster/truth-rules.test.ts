// Per-node findings with Calico's truth (DESIGN §4), on the shared fixtures with truth files written to match them:
// a consistent truth adds nothing; each fault in the truth shows its finding on the right prefix or node.
import {describe, expect, it} from 'vitest'

import {CALICO_FILES} from '../../src/model/calico.js'
import {buildSnapshot} from '../../src/snapshot/build.js'
import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import {checkReport} from '../../src/report/report.js'
import {buildBulkSnapshot} from '../../src/bulk/build.js'
import type {SourceFile} from '../../src/model/types.js'
import {BIRD2, BIRD16, BIRD16_LL, LAB_HEALTHY, PEER_DOWN, fixtureExists, loadFiles} from '../diagnose/helpers.js'
import {FIXTURE_CLUSTER, truthTexts, type TruthSpec} from './truth.js'

function withTruth(files: SourceFile[], spec: TruthSpec): SourceFile[] {
  const texts = truthTexts(spec)
  return [...files.filter((f) => f.name !== 'ippools.yaml'), ...CALICO_FILES.map((n) => ({name: `calico/${n}`, text: texts[n]}))]
}

const strip = (r: ReturnType<typeof checkReport>) => ({
  prefixes: r.prefixes.map((p) => [p.prefix, p.verdict, p.findings.map((f) => f.id)]),
  host: r.host.findings.map((f) => f.id),
})

function report(files: SourceFile[], node?: string) {
  return checkReport(new SnapshotIndex(buildSnapshot(files, {node})))
}

describe('a consistent truth adds no finding', () => {
  for (const name of [BIRD2, BIRD16, BIRD16_LL, LAB_HEALTHY]) {
    it.skipIf(!fixtureExists(name))(name, () => {
      const plain = loadFiles(name)
      const truth = withTruth(plain, {nodes: FIXTURE_CLUSTER})
      const snapshot = buildSnapshot(truth)
      expect(snapshot.nodeName).toBe('n1') // found by its address
      expect(snapshot.poolOrigin).toBe('calico')
      expect(strip(report(truth))).toEqual(strip(report(plain)))
      // check's bulk path settles the same
      expect(strip(checkReport(new SnapshotIndex(buildBulkSnapshot(withTruth(loadFiles(name), {nodes: FIXTURE_CLUSTER}), {}, 'check'))))).toEqual(strip(report(plain)))
    })
  }
  it.skipIf(!fixtureExists(PEER_DOWN))('with a peer down, only the block that is gone is added, as block-unrouted', () => {
    const plain = report(loadFiles(PEER_DOWN))
    const truth = report(withTruth(loadFiles(PEER_DOWN), {nodes: FIXTURE_CLUSTER}))
    expect(strip(truth).prefixes.filter((p) => p[0] !== '192.168.82.0/26')).toEqual(strip(plain).prefixes)
    expect(strip(truth).host).toEqual(strip(plain).host)
    expect(idsAt(truth, '192.168.82.0/26')).toMatchObject({verdict: 'missing'})
    expect(idsAt(truth, '192.168.82.0/26')!.findings.map((f) => f.id)).toEqual(['prefix-missing', 'block-unrouted'])
  })
  it('both API groups give the same truth', () => {
    const plain = loadFiles(LAB_HEALTHY)
    const v1 = buildSnapshot(withTruth(plain, {nodes: FIXTURE_CLUSTER})).calico!
    const v3 = buildSnapshot(withTruth(plain, {nodes: FIXTURE_CLUSTER, group: 'projectcalico.org/v3'})).calico!
    expect(v1.apiGroup).toBe('crd.projectcalico.org/v1')
    expect(v3.apiGroup).toBe('projectcalico.org/v3')
    const shape = (t: typeof v1) => ({
      blocks: t.blocks.map((b) => [b.cidr, b.affinityNode]),
      affinities: t.affinities.map((a) => [a.cidr, a.node, a.state, a.deleted]),
      nodes: t.nodes.map((n) => [n.name, n.ipv4Address]),
    })
    expect(shape(v3)).toEqual(shape(v1))
    expect(v1.affinities.every((a) => a.deleted === false)).toBe(true)
  })
})

const idsAt = (r: ReturnType<typeof checkReport>, prefix: string) => r.prefixes.find((p) => p.prefix === prefix)
const hostIds = (r: ReturnType<typeof checkReport>) => r.host.findings.map((f) => f.id)

describe('faults in the truth', () => {
  const healthy = () => loadFiles(LAB_HEALTHY)
  it.skipIf(!fixtureExists(LAB_HEALTHY))('a block affine to the wrong node: block-owner-mismatch, misrouted', () => {
    const nodes = FIXTURE_CLUSTER.map((n) => ({...n, blocks: n.name === 'n3' ? [...n.blocks, '192.168.110.128/26'] : n.name === 'n2' ? [] : n.blocks}))
    const r = report(withTruth(healthy(), {nodes}))
    const p = idsAt(r, '192.168.110.128/26')!
    expect(p.verdict).toBe('misrouted')
    expect(p.findings.map((f) => f.id)).toContain('block-owner-mismatch')
    expect(p.findings.find((f) => f.id === 'block-owner-mismatch')!.title).toMatch(/172\.31\.20\.5.*n3 \(172\.31\.30\.6\)/)
    expect(idsAt(r, '192.168.82.0/26')!.verdict).toBe('ok')
  })
  it.skipIf(!fixtureExists(LAB_HEALTHY))('a pending duplicate announced by its node: block-affinity-conflict', () => {
    const r = report(withTruth(healthy(), {nodes: FIXTURE_CLUSTER, affinities: [{cidr: '192.168.82.0/26', node: 'n2', state: 'pending'}]}))
    expect(idsAt(r, '192.168.82.0/26')!.findings.map((f) => f.id)).not.toContain('block-affinity-conflict') // n2 does not announce it
    const own = report(withTruth(healthy(), {nodes: FIXTURE_CLUSTER, affinities: [{cidr: '192.168.110.128/26', node: 'n1', state: 'pending'}]}))
    // n1 does not blackhole n2's block: nothing acts on the leftover here
    expect(idsAt(own, '192.168.110.128/26')!.findings.map((f) => f.id)).not.toContain('block-affinity-conflict')
    const twice = report(withTruth(healthy(), {nodes: FIXTURE_CLUSTER, affinities: [{cidr: '192.168.110.128/26', node: 'n3'}]}))
    expect(idsAt(twice, '192.168.110.128/26')!.findings.map((f) => f.id)).toContain('block-affinity-conflict')
    // the affinity to delete is named: the one the IPAMBlock does not give the block to
    expect(idsAt(twice, '192.168.110.128/26')!.findings.find((f) => f.id === 'block-affinity-conflict')!.fix).toBe(
      'Delete the BlockAffinity that IPAMBlock 192-168-110-128-26 does not name (kubectl delete ' +
      'blockaffinities.crd.projectcalico.org n3-192-168-110-128-26), then restart calico-node on n3.')
    const leftover = report(withTruth(healthy(), {nodes: FIXTURE_CLUSTER, affinities: [{cidr: '192.168.162.128/26', node: 'n2', state: 'pendingDeletion'}, {cidr: '192.168.110.128/26', node: 'n3', state: 'pending'}]}))
    // a /32 block confirmed for n2 and pending for n3, which announces it too (the fixture's anycast address)
    const nodes = FIXTURE_CLUSTER.map((n) => (n.name === 'n2' ? {...n, blocks: [...n.blocks, '192.168.200.10/32']} : n))
    const pending = report(withTruth(healthy(), {nodes, affinities: [{cidr: '192.168.200.10/32', node: 'n3', state: 'pending'}]}))
    const p = idsAt(pending, '192.168.200.10/32')!
    expect(p.findings.map((f) => f.id)).toEqual(expect.arrayContaining(['block-affinity-conflict', 'block-owner-mismatch']))
    expect(p.findings.find((f) => f.id === 'block-affinity-conflict')!.title).toMatch(/n3's pending affinity still announces it/)
    expect(p.verdict).toBe('misrouted')
    // the plan: the owner's address only (without the truth, both announcers)
    expect(p.plan?.nexthops.map((h) => h.gateway)).toEqual(['172.31.20.5'])
    // n2's leftover for n1's block: n2 is not announcing it to n1 (n1 holds its own blackhole)
    expect(idsAt(leftover, '192.168.162.128/26')!.findings.map((f) => f.id)).not.toContain('block-affinity-conflict')
  })
  it.skipIf(!fixtureExists(LAB_HEALTHY))('an affinity without a block: block-without-ipamblock', () => {
    const nodes = FIXTURE_CLUSTER.map((n) => (n.name === 'n3' ? {...n, blocks: [...n.blocks, '192.168.82.64/26']} : n))
    const r = report(withTruth(healthy(), {nodes, skipBlocks: ['192.168.82.64/26']}))
    const p = idsAt(r, '192.168.82.64/26')!
    const f = p.findings.find((x) => x.id === 'block-without-ipamblock')!
    expect(f.evidence[0].file).toBe('calico/blockaffinities.json')
    expect(f.evidence[0].line).toBeGreaterThan(1)
    expect(p.findings.map((x) => x.id)).not.toContain('block-unrouted') // no IPAMBlock: nobody owns it
  })
  it.skipIf(!fixtureExists(LAB_HEALTHY))('two affinities without a block: said in the plural, both deleted', () => {
    const r = report(withTruth(healthy(), {nodes: FIXTURE_CLUSTER, affinities: [{cidr: '192.168.99.0/26', node: 'n2'}, {cidr: '192.168.99.0/26', node: 'n3'}]}))
    const f = idsAt(r, '192.168.99.0/26')!.findings.find((x) => x.id === 'block-without-ipamblock')!
    expect(f.title).toBe('192.168.99.0/26 has BlockAffinities (n2, n3) but no IPAMBlock')
    // no IPAMBlock to match against: not "IPAMBlock 192.168.99.0/26's affinity"
    expect(idsAt(r, '192.168.99.0/26')!.findings.find((x) => x.id === 'block-affinity-conflict')!.fix).toMatch(
      /^Calico's IPAM names no owner for 192\.168\.99\.0\/26 \(no IPAMBlock\): keep the BlockAffinity of the node whose pods/)
    expect(f.fix).toBe('Delete the stale BlockAffinities (kubectl delete blockaffinities.crd.projectcalico.org ' +
      'n2-192-168-99-0-26 n3-192-168-99-0-26) and restart calico-node on n2, n3.')
  })
  it.skipIf(!fixtureExists(BIRD2))('a block of another node that BIRD routes over the underlay: the route in force quoted whole', () => {
    // n1's capture given as n2 (the owner of 192.168.110.128/26): it routes its own block to 172.31.20.5
    const r = report(withTruth(loadFiles(BIRD2), {nodes: FIXTURE_CLUSTER}), 'n2')
    const f = idsAt(r, '192.168.110.128/26')!.findings.find((x) => x.id === 'block-owner-mismatch')!
    expect(f.detail).toBe('Calico\'s IPAMBlock 192-168-110-128-26 is affine to n2. The route in force is ' +
      '192.168.110.128/26 proto bird metric 32 nexthop via 172.31.11.1 dev eth0 weight 1 nexthop via 172.31.12.1 dev ' +
      'eth1 weight 1; BIRD\'s best path names BGP next hop 172.31.20.5. Traffic for its pods goes to a node that does ' +
      'not own the block.')
  })
  it.skipIf(!fixtureExists(LAB_HEALTHY))('a block nobody routes here: block-unrouted, listed by check', () => {
    const nodes = FIXTURE_CLUSTER.map((n) => (n.name === 'n2' ? {...n, blocks: [...n.blocks, '192.168.111.0/26']} : n))
    const r = report(withTruth(healthy(), {nodes}))
    const p = idsAt(r, '192.168.111.0/26')!
    expect(p.verdict).toBe('missing')
    expect(p.findings.map((f) => f.id)).toContain('block-unrouted')
    expect(r.summary.exitCode).toBe(1)
    // the route by hand goes where BIRD does not learn it (DESIGN §5), with the pool's rule this node lacks
    expect(p.findings.find((f) => f.id === 'block-unrouted')!.fix).toBe('Check n2\'s BIRD exports it, and the session ' +
      'to 172.31.20.5; meanwhile, in routedoctor\'s overlay table (BIRD would learn a route in main and advertise it): ' +
      'ip route replace 192.168.111.0/26 via 172.31.20.5 dev tunl0 onlink table 1158 proto 158; ' +
      'ip rule add priority 32000 to 192.168.0.0/16 lookup 1158')
  })
  it.skipIf(!fixtureExists(LAB_HEALTHY))('a wrong node address: node-address-mismatch on this node and about another', () => {
    const mine = report(withTruth(healthy(), {nodes: FIXTURE_CLUSTER.map((n) => (n.name === 'n1' ? {...n, address: '172.31.10.99'} : n))}), 'n1')
    expect(hostIds(mine)).toContain('node-address-mismatch')
    const other = report(withTruth(healthy(), {nodes: FIXTURE_CLUSTER.map((n) => (n.name === 'n3' ? {...n, address: '172.31.30.99'} : n))}))
    const f = other.host.findings.find((x) => x.id === 'node-address-mismatch')!
    expect(f.title).toMatch(/n3's IPv4Address 172\.31\.30\.99/)
    expect(f.detail).toMatch(/172\.31\.30\.6/)
  })
  it.skipIf(!fixtureExists(LAB_HEALTHY))('conflicting programClusterRoutes: route-owner-conflict', () => {
    expect(hostIds(report(withTruth(healthy(), {nodes: FIXTURE_CLUSTER, felix: 'EnabledIPIPOnly', bird: 'EnabledNoEncapOnly'})))).not.toContain('route-owner-conflict')
    const both = report(withTruth(healthy(), {nodes: FIXTURE_CLUSTER, felix: 'EnabledIPIPOnly', bird: 'Enabled'}))
    expect(hostIds(both)).toContain('route-owner-conflict')
    const neither = report(withTruth(healthy(), {nodes: FIXTURE_CLUSTER, felix: 'Disabled', bird: 'EnabledNoEncapOnly'}))
    expect(neither.host.findings.find((f) => f.id === 'route-owner-conflict')!.title).toMatch(/neither/)
  })
  it.skipIf(!fixtureExists(LAB_HEALTHY))('a borrowed address without a /32 route: borrowed-address-unrouted', () => {
    const r = report(withTruth(healthy(), {nodes: FIXTURE_CLUSTER, borrowed: [{block: '192.168.110.128/26', ordinal: 5, node: 'n3', pod: 'web-1'}]}))
    const f = r.host.findings.find((x) => x.id === 'borrowed-address-unrouted')!
    expect(f.prefix).toBe('192.168.110.133/32')
    expect(f.severity).toBe('warning')
    expect(f.fix).toMatch(/; meanwhile, in routedoctor's overlay table \(BIRD would learn a route in main and advertise it\): ip route replace 192\.168\.110\.133\/32 via 172\.31\.30\.6 dev tunl0 onlink table 1158 proto 158; ip rule add/)
    expect(f.evidence[0].text).toBe('IPAMBlock 192-168-110-128-26: 192.168.110.133 allocated on n3 (k8s-pod-network.web-1)')
  })
})

describe('bad truth exits 2 naming the file and the item', () => {
  const bad = (name: string, text: string) => () => buildSnapshot([...loadFiles(LAB_HEALTHY), {name: `calico/${name}`, text}])
  it('not a List of the expected kind', () => {
    expect(bad('ipamblocks.json', truthTexts({nodes: FIXTURE_CLUSTER})['blockaffinities.json'])).toThrow(/calico\/ipamblocks\.json:\d+: expected an IPAMBlock, found "n1-192-168-162-128-26: BlockAffinity"/)
    expect(bad('nodes.json', '{"kind": "Node", "metadata": {}}')).toThrow(/calico\/nodes\.json:1: expected a List of Node/)
  })
  it('a CIDR that does not parse', () => {
    const text = truthTexts({nodes: FIXTURE_CLUSTER})['blockaffinities.json'].replace('"192.168.110.128/26"', '"192.168.110.300/26"')
    expect(bad('blockaffinities.json', text)).toThrow(/calico\/blockaffinities\.json:\d+: expected spec\.cidr to be a CIDR, found "n2-192-168-110-128-26: 192\.168\.110\.300\/26"/)
  })
  it('an unknown API group', () => {
    const text = truthTexts({nodes: FIXTURE_CLUSTER})['ippools.json'].replace('crd.projectcalico.org/v1', 'projectcalico.org/v2')
    expect(bad('ippools.json', text)).toThrow(/calico\/ippools\.json:\d+: expected apiVersion crd\.projectcalico\.org\/v1 or projectcalico\.org\/v3, found "pool-0: projectcalico\.org\/v2"/)
  })
})
