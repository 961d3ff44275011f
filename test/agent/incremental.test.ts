// watch's incremental parts, without a kernel or BIRD: the route store kept from notifications, what a notification
// touches, which networks of `show route all` changed, and a state updated prefix by prefix (as the whole would be).
import {describe, expect, it} from 'vitest'

import {birdBlockHashes, changedBlocks, touchedBy, touchedByKeys, touchedByLinks, type NodeBase, type Touched} from '../../src/agent/incremental.js'
import {changesBetween, emptyState, updatePrefixes, verdictIn, type NodeState, type SeenPrefix} from '../../src/agent/state.js'
import {networkKey, prefixKey} from '../../src/model/prefix-key.js'
import {ipv4Pools} from '../../src/model/snapshot-index.js'
import {ipv4Value} from '../../src/model/prefix.js'
import {encodeRoute, type RouteSpec} from '../../src/netlink/codec.js'
import {ProtocolRoutes, type KernelEvent} from '../../src/netlink/events.js'
import {KernelRouteStore} from '../../src/netlink/route-store.js'

const route = (dst: string, over: Partial<RouteSpec> = {}): RouteSpec => ({
  family: 'inet', dst, tableId: 254, protocol: 12, metric: 32, type: 1, scope: 0,
  nexthops: [{gateway: '172.31.20.5', ifindex: 5, onlink: true, weight: 1}], ...over,
})

const event = (op: 'new' | 'del', spec: RouteSpec): KernelEvent => ({
  kind: 'route', op, family: 'inet', dst: spec.dst, table: spec.tableId, metric: spec.metric, protocol: spec.protocol,
  message: encodeRoute(spec, op),
})

const base: NodeBase = {
  files: [], origin: {kind: 'live'}, v6Pools: false,
  v4Pools: ipv4Pools([{cidr: '192.168.0.0/16', mode: 'ipip', origin: 'flag'} as never]),
  nextHops: [ipv4Value('172.31.20.5'), ipv4Value('172.31.30.6')], tunnelDev: 'tunl0', uplinks: ['eth0'],
}

describe('KernelRouteStore', () => {
  it('keeps the routes at each prefix from notifications: added, replaced by identity, deleted', () => {
    const store = new KernelRouteStore()
    store.apply([{kind: 'link', op: 'new', ifindex: 5, name: 'tunl0'}])
    store.apply([
      event('new', route('192.168.110.128/26')),
      event('new', route('192.168.110.128/26', {tableId: 1158, protocol: 158})),
      event('new', route('192.168.110.128/26', {metric: 10, nexthops: [{gateway: '172.31.11.1', ifindex: 5, weight: 1}]})),
      event('new', route('172.31.20.0/23', {protocol: 4, metric: 0, nexthops: [{gateway: '172.31.11.1', ifindex: 5, weight: 1}]})),
      event('new', route('172.31.10.4/32', {tableId: 255, type: 2, scope: 254, protocol: 2, metric: 0, nexthops: [{ifindex: 5, weight: 1}]})),
    ])
    expect(store.size).toBe(5)
    // replaced: same table and metric
    store.apply([event('new', route('192.168.110.128/26', {nexthops: [{gateway: '172.31.30.6', ifindex: 5, onlink: true, weight: 1}]}))])
    expect(store.size).toBe(5)
    const at = store.routesFor({prefixes: ['192.168.110.128/26'], addresses: []})
    expect(at.map((r) => [r.dst, r.tableId, r.metric]).sort()).toEqual([
      ['172.31.10.4/32', 255, 0], ['192.168.110.128/26', 1158, 32], ['192.168.110.128/26', 254, 10], ['192.168.110.128/26', 254, 32],
    ])
    expect(at.find((r) => r.tableId === 254 && r.metric === 32)?.nexthops[0]).toMatchObject({dev: 'tunl0', gateway: {address: '172.31.30.6'}})
    // what a lookup of a next hop can find
    expect(store.routesFor({prefixes: [], addresses: ['172.31.20.5']}).map((r) => r.dst)).toEqual(['172.31.10.4/32', '172.31.20.0/23'])
    store.apply([event('del', route('192.168.110.128/26', {metric: 10}))])
    expect(store.routesFor({prefixes: ['192.168.110.128/26'], addresses: []}).filter((r) => r.tableId === 254).map((r) => r.metric)).toEqual([32])
  })
})

describe('KernelRouteStore links', () => {
  const UP = 0x1 | 0x10000 // IFF_UP, IFF_LOWER_UP
  const link = (ifindex: number, name: string, flags = UP, mtu = 1500, op: 'new' | 'del' = 'new'): KernelEvent =>
    ({kind: 'link', op, ifindex, name, flags, mtu})

  it('reports a device only when its name, up, carrier or MTU changed, with how many routes use it', () => {
    const store = new KernelRouteStore()
    expect(store.apply([link(5, 'tunl0'), link(7, 'cali1')])).toHaveLength(2) // first seen
    store.apply([event('new', route('192.168.1.5/32', {nexthops: [{ifindex: 7, weight: 1}], scope: 253})),
      event('new', route('192.168.110.128/26'))])
    // the same state again (a notification for another attribute): nothing
    expect(store.apply([link(7, 'cali1', UP | 0x100)])).toEqual([])
    expect(store.apply([link(7, 'cali1', 0x1)])).toEqual([{ifindex: 7, names: ['cali1'], routes: 1, routesChanged: true}])
    expect(store.apply([link(7, 'cali1', 0x1, 1400)])).toEqual([{ifindex: 7, names: ['cali1'], routes: 1, routesChanged: false}])
    expect(store.apply([link(7, 'cali2', 0x1, 1400)])).toEqual([{ifindex: 7, names: ['cali1', 'cali2'], routes: 1, routesChanged: false}])
    expect(store.apply([link(7, 'cali2', 0, 0, 'del')])).toEqual([{ifindex: 7, names: ['cali2'], routes: 1, routesChanged: true}])
    // a new device carries no route yet
    expect(store.apply([link(9, 'cali9')])).toEqual([{ifindex: 9, names: ['cali9'], routes: 0, routesChanged: true}])
    expect([...store.keysOnDevices(new Set([5]))].map((k) => k)).toEqual([prefixKey('192.168.110.128/26')])
    store.apply([event('del', route('192.168.110.128/26'))])
    expect(store.keysOnDevices(new Set([5])).size).toBe(0)
  })
})

describe('touchedByLinks and touchedByKeys', () => {
  const store = new KernelRouteStore()
  store.apply([{kind: 'link', op: 'new', ifindex: 7, name: 'cali1', flags: 1}])
  store.apply([event('new', route('192.168.1.5/32', {nexthops: [{ifindex: 7, weight: 1}], scope: 253})),
    event('new', route('10.1.0.0/16', {nexthops: [{ifindex: 7, weight: 1}], scope: 253}))])
  const touched = (links: Parameters<typeof touchedByLinks>[0]): Touched => {
    const t: Touched = {prefixes: new Set()}
    touchedByLinks(links, base, store, t)
    return t
  }

  it('the tunnel device and an uplink touch everything; a device without routes nothing', () => {
    expect(touched([{ifindex: 5, names: ['tunl0'], routes: 0, routesChanged: true}]).full).toMatch(/tunl0/)
    expect(touched([{ifindex: 2, names: ['eth0'], routes: 3, routesChanged: false}]).full).toMatch(/eth0/)
    expect(touched([{ifindex: 9, names: ['cali9'], routes: 0, routesChanged: true}])).toEqual({prefixes: new Set()})
    // renamed to the tunnel's name
    expect(touched([{ifindex: 9, names: ['cali9', 'tunl0'], routes: 0, routesChanged: false}]).full).toMatch(/tunl0/)
  })

  it('a renamed device with routes touches the pool prefixes of its routes', () => {
    expect(touched([{ifindex: 7, names: ['cali1', 'cali2'], routes: 2, routesChanged: false}])).toEqual({prefixes: new Set(['192.168.1.5/32'])})
  })

  it('changed keys touch their pool prefixes, and everything when a next hop resolves through them', () => {
    const t: Touched = {prefixes: new Set()}
    touchedByKeys([prefixKey('192.168.110.128/26'), prefixKey('10.1.0.0/16')], base, t)
    expect(t).toEqual({prefixes: new Set(['192.168.110.128/26'])})
    touchedByKeys([networkKey(ipv4Value('172.31.20.0'), 24)], base, t)
    expect(t.full).toMatch(/172\.31\.20\.0\/24/)
  })
})

describe('touchedBy', () => {
  const touched = (events: KernelEvent[]): Touched => {
    const t: Touched = {prefixes: new Set()}
    touchedBy(events, base, t)
    return t
  }

  it('a pool route touches its prefix; an underlay route a next hop resolves through touches everything', () => {
    expect(touched([event('new', route('192.168.110.128/26'))])).toEqual({prefixes: new Set(['192.168.110.128/26'])})
    expect(touched([event('del', route('172.31.20.0/23'))]).full).toMatch(/172\.31\.20\.0\/23/)
    // a route no next hop is looked up through, or the local table's: nothing
    expect(touched([event('new', route('10.1.0.0/16')), event('new', route('172.31.10.4/32', {tableId: 255}))])).toEqual({prefixes: new Set()})
  })

  it('addresses and rules touch everything', () => {
    expect(touched([{kind: 'address', op: 'del', ifindex: 5, address: '172.31.10.4/32'}]).full).toMatch(/address/)
    expect(touched([{kind: 'rule', op: 'new', table: 1158}]).full).toMatch(/rule/)
    // a new device's IPv6 link-local address: nothing
    expect(touched([{kind: 'address', op: 'new', ifindex: 9, address: 'fe80:0:0:0:a8c1:abff:fe00:1/64'}])).toEqual({prefixes: new Set()})
  })
})

describe('birdBlockHashes and changedBlocks', () => {
  const dump = (n3: string, extra = '') => `BIRD 2.0.12 ready.
Table master4:
192.168.110.128/26   unicast [Mesh_172_31_20_5 12:00:00.000] * (100/0) [i]
\tvia 172.31.11.1 on eth0
\tBGP.next_hop: 172.31.20.5
192.168.82.0/26      unicast [Mesh_172_31_30_6 12:00:00.000] * (100/0) [i]
\tvia 172.31.11.1 on eth0
\tBGP.next_hop: ${n3}
${extra}172.31.20.0/23       unicast [kernel1 12:00:00.000] * (10)
\tvia 172.31.11.1 on eth0
`

  it('names the pool networks whose lines changed, appeared or went; others are not pool prefixes', () => {
    const before = birdBlockHashes(dump('172.31.30.6'))
    expect(before.keys.length + before.other.size).toBe(3)
    expect(changedBlocks(before, birdBlockHashes(dump('172.31.30.6')), base)).toEqual([])
    expect(changedBlocks(before, birdBlockHashes(dump('172.31.30.7')), base)).toEqual(['192.168.82.0/26'])
    const added = `192.168.1.0/26       unicast [Mesh_172_31_20_5 12:00:01.000] * (100/0) [i]\n\tBGP.next_hop: 172.31.20.5\n`
    expect(changedBlocks(before, birdBlockHashes(dump('172.31.30.6', added)), base)).toEqual(['192.168.1.0/26'])
    expect(changedBlocks(birdBlockHashes(dump('172.31.30.6', added)), before, base)).toEqual(['192.168.1.0/26'])
  })
})

describe('updatePrefixes', () => {
  const seen = (verdict: string, ...ids: string[]): SeenPrefix => ({verdict, findings: ids.map((id) => ({id, severity: 'error', title: id}))})
  const keys = (...prefixes: string[]) => Float64Array.from(prefixes.map((p) => prefixKey(p)).sort((a, b) => a - b))

  it('changes a state prefix by prefix to what the whole state would be, with the same changes', () => {
    const before = (): NodeState => ({...emptyState(), healthyKeys: keys('192.168.110.128/26', '192.168.82.0/26'),
      prefixes: new Map([['192.168.1.0/26', seen('missing', 'prefix-missing')]]), verdicts: {ok: 2, missing: 1}})
    const after: NodeState = {...emptyState(), healthyKeys: keys('192.168.82.0/26'),
      prefixes: new Map([['192.168.110.128/26', seen('not-tunneled', 'tunnel-not-programmed')], ['192.168.2.0/26', seen('ok')]]),
      verdicts: {ok: 2, 'not-tunneled': 1}}
    const s = before()
    const touched = ['192.168.110.128/26', '192.168.1.0/26', '192.168.2.0/26']
    const changes = updatePrefixes(
      s,
      touched,
      new Map(touched.flatMap((p) => (after.prefixes.has(p) ? [[p, after.prefixes.get(p)!]] : []))),
    )
    expect(changes).toEqual(changesBetween(before(), after))
    expect(s.verdicts).toEqual(after.verdicts)
    for (const p of [...touched, '192.168.82.0/26', '10.0.0.0/26']) expect(verdictIn(s, p), p).toBe(verdictIn(after, p))
    expect([...s.healthyKeys]).toEqual([...after.healthyKeys])
  })
})

describe('ProtocolRoutes', () => {
  it('a dump replaces the keys held, with the notifications that came meanwhile applied on top; a failed one keeps them', () => {
    const own = new ProtocolRoutes(158)
    const ours = (dst: string) => route(dst, {protocol: 158, tableId: 1158, metric: 0})
    own.apply([event('new', ours('192.168.1.0/26'))])
    expect(own.keys.size).toBe(1)
    own.begin()
    const dumped = encodeRoute(ours('192.168.2.0/26'), 'new')
    own.visit(dumped, 0, dumped.length)
    const theirs = encodeRoute(route('192.168.3.0/26'), 'new')
    own.visit(theirs, 0, theirs.length) // another protocol's: not counted
    own.apply([event('new', ours('192.168.4.0/26')), event('del', ours('192.168.2.0/26'))])
    own.commit()
    expect([...own.keys]).toEqual(['inet|1158|192.168.4.0/26|0'])
    own.begin()
    own.visit(dumped, 0, dumped.length)
    own.abort()
    expect(own.keys.size).toBe(1)
  })
})
