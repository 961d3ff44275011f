// parseBirdRoutes on real output. BIRD 3 samples come from test/fixtures/bird-captures (real
// BIRD 3.0.5 and 3.2.3 runs in this project's lab) and from test/fixtures/bird-extra (a public
// BIRD 3.0.1 sample from alice-lg/birdwatcher; see bird-extra/SOURCES.md).
import {describe, expect, it} from 'vitest'

import {ParseError} from '../../src/model/errors.js'
import type {BirdRoute} from '../../src/model/types.js'
import {BirdRouteParser, parseBirdRoutes} from '../../src/parse/bird-routes.js'
import {createBirdRouteStream} from './stream.js'
import {capture, fixture, rawCapture, toRawSocket} from './captures.js'

const paths = (routes: BirdRoute[], prefix: string): BirdRoute[] => routes.filter((r) => r.prefix === prefix)
const hops = (r: BirdRoute) => r.nexthops.map((n) => [n.gateway, n.iface, n.weight])
const attr = (r: BirdRoute, name: string) => r.attributes.find((a) => a.name === name)?.value

function parseError(fn: () => unknown): ParseError {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(ParseError)
    return error as ParseError
  }
  throw new Error('expected a ParseError')
}

describe('scenario snapshots', () => {
  it('bird16-ecmp-not-tunneled: 1.6 multipath, header next hops, secondary path, blackhole, dev', () => {
    const routes = parseBirdRoutes(fixture('bird16-ecmp-not-tunneled/birdc-show-route-all.txt'))
    expect(routes.map((r) => r.prefix)).toEqual([
      '192.168.110.128/26', '192.168.82.0/26', '192.168.200.10/32', '192.168.200.10/32',
      '192.168.162.128/26', '172.31.20.0/23', '192.168.162.129/32', '172.31.30.0/24',
    ])
    const [block] = paths(routes, '192.168.110.128/26')
    expect(block).toMatchObject({
      dest: 'unicast', protocol: 'Mesh_172_31_20_5', since: '16:50:25', from: '172.31.20.5', primary: true,
      kernelSyncFailed: false, preference: 100, info: '(100/?) [i]', source: 'BGP', bgpNextHop: '172.31.20.5',
      pos: {file: 'birdc-show-route-all.txt', line: 2, endLine: 9},
    })
    expect(block!.table).toBeUndefined()
    expect(hops(block!)).toEqual([['172.31.11.1', 'eth0', 1], ['172.31.12.1', 'eth1', 1]])
    expect(block!.attributes[0]).toEqual({name: 'Type', value: 'BGP unicast univ', line: 5, endLine: 5})
    expect(attr(block!, 'BGP.as_path')).toBe('')
    expect(attr(block!, 'Type')).toBe('BGP unicast univ')

    const lb = paths(routes, '192.168.200.10/32')
    expect(lb.map((r) => [r.primary, r.bgpNextHop, r.protocol])).toEqual([
      [true, '172.31.20.5', 'Mesh_172_31_20_5'],
      [false, '172.31.30.6', 'Mesh_172_31_30_6'],
    ])
    expect(hops(lb[1]!)).toEqual([['172.31.11.1', 'eth0', undefined]])
    expect(lb[1]!.pos).toMatchObject({line: 24, endLine: 29})

    const [own] = paths(routes, '192.168.162.128/26')
    expect(own).toMatchObject({dest: 'blackhole', protocol: 'blocks', source: 'static', nexthops: [], preference: 200})
    const [workload] = paths(routes, '192.168.162.129/32')
    expect(hops(workload!)).toEqual([[undefined, 'calif2ae67c76cf', undefined]])
    expect(workload!.source).toBe('inherit')
    expect(attr(workload!, 'Kernel.source')).toBe('3')
  })

  it('bird16-ipv6-ll-underlay-unreachable: unreachable BGP paths keep their BGP next hop', () => {
    const routes = parseBirdRoutes(fixture('bird16-ipv6-ll-underlay-unreachable/birdc-show-route-all.txt'))
    const [block] = paths(routes, '192.168.110.128/26')
    expect(block).toMatchObject({dest: 'unreachable', nexthops: [], bgpNextHop: '172.31.20.5', info: '(100/-) [i]', primary: true})
    const lb = paths(routes, '192.168.200.10/32')
    expect(lb.map((r) => [r.dest, r.primary, r.bgpNextHop])).toEqual([
      ['unicast', true, '172.31.30.6'],
      ['unreachable', false, '172.31.20.5'],
    ])
    expect(paths(routes, '172.31.20.0/23')).toHaveLength(0) // BIRD 1.6 could not import the via-inet6 ECMP underlay
  })

  it('bird2-ecmp-not-tunneled: 2.x table header, via lines with weights, dev line', () => {
    const routes = parseBirdRoutes(fixture('bird2-ecmp-not-tunneled/birdc-show-route-all.txt'))
    expect(routes).toHaveLength(8)
    expect(new Set(routes.map((r) => r.table))).toEqual(new Set(['master4']))
    const [block] = paths(routes, '192.168.110.128/26')
    expect(block).toMatchObject({dest: 'unicast', since: '16:50:09.431', from: '172.31.20.5', bgpNextHop: '172.31.20.5', source: 'BGP'})
    expect(hops(block!)).toEqual([['172.31.11.1', 'eth0', 1], ['172.31.12.1', 'eth1', 1]])
    const [n3] = paths(routes, '192.168.82.0/26')
    expect(hops(n3!)).toEqual([['172.31.11.1', 'eth0', undefined]])
    expect(n3!.bgpNextHop).toBe('172.31.30.6')
    const [workload] = paths(routes, '192.168.162.129/32')
    expect(hops(workload!)).toEqual([[undefined, 'calif2ae67c76cf', undefined]])
    expect(attr(workload!, 'Kernel.scope')).toBe('253')
    expect(paths(routes, '192.168.200.10/32').map((r) => r.primary)).toEqual([true, false])
  })

  it('bird2-peer-down: the block of the down peer is absent, the shared address keeps one path', () => {
    const routes = parseBirdRoutes(fixture('bird2-peer-down/birdc-show-route-all.txt'))
    expect(paths(routes, '192.168.82.0/26')).toHaveLength(0)
    const lb = paths(routes, '192.168.200.10/32')
    expect(lb).toHaveLength(1)
    expect(lb[0]!.bgpNextHop).toBe('172.31.20.5')
    expect(lb[0]!.nexthops).toHaveLength(2)
  })
})

describe('BIRD 1.6.8 captures', () => {
  const routes = parseBirdRoutes(capture('bird1.6.8-B16-established.txt', 'show route all'))

  it('reads every route of show route all', () => {
    expect(routes).toHaveLength(24)
    expect(routes.filter((r) => r.primary)).toHaveLength(23)
  })

  it('multipath members with weights, in BIRD order', () => {
    expect(hops(paths(routes, '10.30.2.0/24')[0]!)).toEqual([['10.2.0.4', 'dB', 5], ['10.2.0.3', 'dB', 2], ['10.2.0.2', 'dB', 1]])
    expect(hops(paths(routes, '10.30.1.0/24')[0]!)).toEqual([['10.0.2.1', 'vB2', 3], ['10.0.0.1', 'vB', 1]])
  })

  it('destination words and static-device', () => {
    const dest = (p: string) => paths(routes, p)[0]!.dest
    expect([dest('10.30.3.0/24'), dest('10.30.4.0/24'), dest('10.30.5.0/24'), dest('10.30.0.0/24')]).toEqual(['unreachable', 'blackhole', 'prohibited', 'unicast'])
    expect(paths(routes, '10.30.6.0/24')[0]).toMatchObject({source: 'static-device', nexthops: [expect.objectContaining({iface: 'dB'})]})
  })

  it('BGP.next_hop differs from the via gateway and is taken from the attribute', () => {
    const [r] = paths(routes, '10.10.8.0/24')
    expect(r!.bgpNextHop).toBe('192.0.2.1')
    expect(hops(r!)).toEqual([['10.0.0.1', 'vB', undefined]])
    expect(attr(r!, 'BGP.community')).toBe('(65001,100) (65001,200)')
  })

  it('secondary path of 10.20.0.0/24 belongs to it', () => {
    const p = paths(routes, '10.20.0.0/24')
    expect(p.map((r) => [r.protocol, r.primary, r.source])).toEqual([['static1', true, 'static'], ['a2_v4', false, 'BGP']])
  })

  it('plain show route gives the same routes without attributes', () => {
    const plain = parseBirdRoutes(capture('bird1.6.8-B16-established.txt', 'show route'))
    expect(plain.map((r) => [r.prefix, r.primary, hops(r)])).toEqual(routes.map((r) => [r.prefix, r.primary, hops(r)]))
    expect(plain.every((r) => r.attributes.length === 0)).toBe(true)
  })

  it('IPv6: two-address BGP.next_hop, link-local gateway', () => {
    const v6 = parseBirdRoutes(capture('bird1.6.8-B16v6-established.txt', 'show route all'))
    expect(paths(v6, 'fd10:1::/48')[0]!.bgpNextHop).toBe('fd00::1')
    expect(hops(paths(v6, 'fd30:3::/48')[0]!)).toEqual([['fe80::1', 'vB', undefined]])
    expect(hops(paths(v6, 'fd30:1::/48')[0]!)).toEqual([['fd02::1', 'vB2', 2], ['fd00::1', 'vB', 1]])
  })

  it('iso long times hold a space', () => {
    const r = parseBirdRoutes(capture('bird1.6.8-B16-isolong.txt', 'show route for 10.20.0.0/24'))
    expect(r.map((x) => x.since)).toEqual(['2026-11-29 15:45:52', '2026-11-29 15:45:57'])
    expect(r.map((x) => x.protocol)).toEqual(['static1', 'a2_v4'])
  })

  it('wrapped community sets are joined onto one attribute spanning several lines', () => {
    const [r] = parseBirdRoutes(capture('bird1.6.8-B16-longattrs.txt', 'show route for 10.10.1.0/24 all'))
    const community = r!.attributes.find((a) => a.name === 'BGP.community')!
    expect(community.endLine).toBeGreaterThan(community.line)
    expect(community.value).not.toContain('\t')
    expect(community.value.split(') (').length).toBeGreaterThan(60)
    expect(r!.attributes.find((a) => a.name === 'BGP.as_path')!.value.endsWith('...')).toBe(true)
  })

  it('not-found replies are an empty answer', () => {
    expect(parseBirdRoutes(capture('bird1.6.8-B16-established.txt', 'show route for 10.99.99.99'))).toEqual([])
  })
})

describe('BIRD 2.0.12 captures', () => {
  const routes = parseBirdRoutes(capture('bird2.0.12-A2-established.txt', 'show route all'))

  it('reads both tables', () => {
    expect(routes).toHaveLength(70)
    expect(routes.filter((r) => r.table === 'master4')).toHaveLength(59)
    expect(routes.filter((r) => r.table === 'master6')).toHaveLength(11)
  })

  it('mpls, onlink and ECMP next hops', () => {
    expect(paths(routes, '10.10.7.0/24')[0]!.nexthops[0]).toMatchObject({gateway: '10.0.0.2', iface: 'vA', mpls: '100/200/300'})
    expect(paths(routes, '10.10.8.0/24')[0]!.nexthops[0]).toMatchObject({gateway: '192.0.2.1', iface: 'vA', onlink: true})
    expect(hops(paths(routes, '10.10.2.0/24')[0]!)).toEqual([['10.1.0.4', 'dA', 5], ['10.1.0.3', 'dA', 2], ['10.1.0.2', 'dA', 1]])
  })

  it('five paths for 10.20.0.0/24: static best, eBGP, iBGP recursive, IPv4 via IPv6', () => {
    const p = paths(routes, '10.20.0.0/24')
    expect(p.map((r) => r.protocol)).toEqual(['static4', 'b16_v4', 'b3_v4', 'b3_ibgp', 'b3_v6enh'])
    expect(p.map((r) => r.primary)).toEqual([true, false, false, false, false])
    expect(p[3]).toMatchObject({from: '10.255.0.2', info: '(100/?) [i]', bgpNextHop: '10.255.0.2'})
    expect(hops(p[4]!)).toEqual([['fd04::2', 'vA3', undefined]])
    expect(p[4]!.bgpNextHop).toBe('fd04::2')
    expect(p[1]!.from).toBeUndefined()
  })

  it('IPv6 table routes', () => {
    expect(paths(routes, 'fd10:3::/48')[0]).toMatchObject({table: 'master6', nexthops: [expect.objectContaining({gateway: 'fe80::1', iface: 'vA'})]})
    expect(paths(routes, 'fd10:2::/48')[0]!.dest).toBe('unreachable')
  })

  it('show route for covering: longest match only', () => {
    const r = parseBirdRoutes(capture('bird2.0.12-A2-showroutefor-covering.txt', 'show route for 10.10.1.1'))
    expect(r.map((x) => x.prefix)).toEqual(['10.10.1.0/24'])
  })

  it('raw socket reply of show route all (an earlier moment of the same daemon)', () => {
    const raw = parseBirdRoutes(rawCapture('bird2.0.12-A2-rawsocket.txt', 'show route all'))
    // the same reply's `show route count`: 26 routes in master4, 11 in master6, 36 networks
    expect(raw.filter((r) => r.table === 'master4')).toHaveLength(26)
    expect(raw.filter((r) => r.table === 'master6')).toHaveLength(11)
    expect(new Set(raw.map((r) => `${r.table} ${r.prefix}`)).size).toBe(36)
    const [v6] = paths(raw, 'fd30:1::/48')
    expect(v6).toMatchObject({protocol: 'b16_v6', source: 'BGP', nexthops: [expect.objectContaining({gateway: 'fd00::2', iface: 'vA'})]})
    for (const r of raw) {
      const twin = paths(routes, r.prefix).find((x) => x.protocol === r.protocol)
      if (twin === undefined) continue
      expect(hops(r)).toEqual(hops(twin))
      expect(r.bgpNextHop).toBe(twin.bgpNextHop)
    }
  })
})

describe('BIRD 3.x captures', () => {
  const routes = parseBirdRoutes(capture('bird3.2.3-B3-established.txt', 'show route all'))

  it('3.2.3: attributes by filter names, source and from from attributes', () => {
    expect(routes).toHaveLength(72)
    const [bgp] = paths(routes, '10.30.1.0/24')
    expect(bgp).toMatchObject({source: 'BGP', from: '10.0.4.1', bgpNextHop: '10.0.4.1', protocol: 'a2_v4', primary: true, table: 'master4'})
    expect(attr(bgp!, 'bgp_path')).toBe('65001 65001 65002')
    expect(attr(bgp!, 'Internal route handling values')).toMatch(/^\d+L \d+G \d+S id \d+$/)
    const [recursive] = paths(routes, '10.50.9.0/24')
    expect(attr(recursive!, 'hostentry')).toBe('via 10.255.0.1 table master4')
    expect(recursive!.source).toBe('static')
    expect(attr(recursive!, 'local_metric')).toBe('unknown')
    const [kernel] = paths(routes, '192.168.201.0/24')
    expect(hops(kernel!)).toEqual([['10.0.2.1', 'vB2', 2], ['10.0.0.1', 'vB', 1]])
    expect(attr(kernel!, 'krt_source')).toBe('4')
    expect(kernel!.source).toBe('inherit')
  })

  it('3.2.3: several paths for one network, iBGP from the header', () => {
    const p = paths(routes, '10.20.0.0/24')
    expect(p.map((r) => [r.protocol, r.primary, r.from, r.bgpNextHop])).toEqual([
      ['static4', true, undefined, undefined],
      ['a2_v4', false, '10.0.4.1', '10.0.4.1'],
      ['a2_ibgp', false, '10.255.0.1', '10.255.0.1'],
      ['a2_v6enh', false, 'fd04::1', 'fd04::1'],
    ])
    expect(hops(p[3]!)).toEqual([['fd04::1', 'vB3', undefined]])
  })

  it('3.2.3 v2-attributes socket gives the same paths as the native one', () => {
    const v2 = parseBirdRoutes(capture('bird3.2.3-B3-v2attributes.txt', 'show route all'))
    const key = (r: BirdRoute) => [r.prefix, r.protocol, r.primary, r.dest, r.source, r.bgpNextHop, hops(r)]
    expect(v2.map(key)).toEqual(routes.map(key))
    expect(v2.some((r) => r.attributes.some((a) => a.name === 'Type'))).toBe(true)
  })

  it('3.2.3 raw socket: reply codes per line type, same routes as birdc', () => {
    const raw = parseBirdRoutes(rawCapture('bird3.2.3-B3-rawsocket.txt', 'show route all'))
    const key = (r: BirdRoute) => [
      r.prefix,
      r.protocol,
      r.primary,
      r.bgpNextHop,
      hops(r),
      r.attributes.map((a) => a.name),
    ]
    expect(raw.map(key)).toEqual(routes.map(key))
  })

  it('3.0.5: igp_metric, ECMP static', () => {
    const r305 = parseBirdRoutes(capture('bird3.0.5-B30-established.txt', 'show route all'))
    expect(r305).toHaveLength(37)
    const [b] = paths(r305, '10.50.2.0/24')
    expect(b).toMatchObject({protocol: 'b3', bgpNextHop: '10.0.5.2', from: '10.0.5.2', source: 'BGP'})
    expect(attr(b!, 'igp_metric')).toBe('0')
    expect(hops(paths(r305, '10.60.1.0/24')[0]!)).toEqual([['10.0.5.2', 'vA2', 3], ['10.1.0.2', 'dA', 1]])
  })

  it('3.x show route for prints covering prefixes too', () => {
    const r = parseBirdRoutes(capture('bird3.2.3-B3-showroutefor-covering.txt', 'show route for 10.50.1.1'))
    expect(r.map((x) => [x.prefix, x.dest])).toEqual([['10.50.1.0/24', 'unicast'], ['10.50.0.0/16', 'blackhole']])
  })

  it('3.2.3 long attributes: wrapped sets joined, truncated path kept', () => {
    const [r] = parseBirdRoutes(capture('bird3.2.3-B3-longattrs.txt', 'show route for 10.30.1.0/24 all'))
    const c = r!.attributes.find((a) => a.name === 'bgp_community')!
    expect(c.endLine - c.line).toBe(2)
    expect(c.value.endsWith('(65002,1079) (65535,65281)')).toBe(true)
    expect(attr(r!, 'bgp_path')!.endsWith('...')).toBe(true)
  })

  it('public BIRD 3.0.1 sample (alice-lg/birdwatcher)', () => {
    const r = parseBirdRoutes(fixture('bird-extra/birdwatcher-bird3.0.1-show-route-all.txt'))
    expect(r.map((x) => [x.prefix, x.primary, x.bgpNextHop, x.protocol])).toEqual([
      ['16.0.0.0/24', true, '1.2.3.16', 'ID8503_AS1340'],
      ['200.0.0.0/24', true, '1.2.3.15', 'ID8497_AS1339'],
      ['200.0.0.0/24', false, '1.2.3.16', 'ID8503_AS1340'],
    ])
    expect(attr(r[0]!, 'bgp_community')!.endsWith('(50673,500) (65101,11077) (65102,11000) (65103,724) (65104,150)')).toBe(true)
    expect(hops(r[2]!)).toEqual([['1.2.3.16', 'eno8', undefined]])
    expect(r[2]!.info).toBe('(100/?) [AS1340i]')
  })
})

describe('shapes from the reference not in the captures', () => {
  it('`!` marks a selected route whose kernel sync failed', () => {
    const [r] = parseBirdRoutes('10.1.0.0/24          unicast [bgp1 12:00:00.000] ! (100) [AS1i]\n\tvia 10.0.0.1 on eth0\n')
    expect(r).toMatchObject({primary: true, kernelSyncFailed: true, info: '(100) [AS1i]'})
  })

  it('an IPv4 route via an IPv6 link-local gateway keeps the gateway, canonical', () => {
    const v16 = parseBirdRoutes('172.31.20.0/23     via FE80::1 on eth0 [kernel1 16:50:22] * (10)\n')
    expect(v16[0]).toMatchObject({dest: 'unicast', nexthops: [expect.objectContaining({gateway: 'fe80::1', iface: 'eth0'})]})
    const v2 = parseBirdRoutes('172.31.20.0/23       unicast [kernel1 16:50:07.754] * (10)\n\tvia fe80::1 on eth0 weight 1\n\tvia fe80::2 on eth1 weight 1\n')
    expect(hops(v2[0]!)).toEqual([['fe80::1', 'eth0', 1], ['fe80::2', 'eth1', 1]])
  })

  it('3.x recursive destination with `via GW table T`', () => {
    const [r] = parseBirdRoutes('Table master4:\n10.9.0.0/24          recursive [static4 12:00:00.000] * (200)\n\tvia 10.255.0.1 table master4\n')
    expect(r).toMatchObject({dest: 'recursive', nexthops: [expect.objectContaining({gateway: '10.255.0.1', table: 'master4'})]})
    expect(r!.nexthops[0]!.iface).toBeUndefined()
  })

  it('OSPF info with a type letter before the preference', () => {
    const [r] = parseBirdRoutes('10.0.0.0/24          unicast [ospf1 12:00:00.000] * I (150/20) [10.0.0.1]\n\tvia 10.0.0.1 on eth0\n')
    expect(r).toMatchObject({preference: 150, info: 'I (150/20) [10.0.0.1]'})
  })

  it('empty destination word and route-server `from` with a date-time', () => {
    const [r] = parseBirdRoutes('185.43.156.0/22      unicast [RS2v4 2023-12-05 12:21:40 from 80.249.209.0] (100) [AS22071i]\n\tvia 80.249.212.55 on eth1\n10.8.0.0/24            [x 12:00] * (100)\n')
    expect(r).toMatchObject({since: '2023-12-05 12:21:40', from: '80.249.209.0', primary: false})
    expect(parseBirdRoutes('10.8.0.0/24            [x 12:00] * (100)\n')[0]!.dest).toBe('')
  })

  it('flowspec and ROA nets are skipped with their attributes, IP routes after them kept', () => {
    const text = [
      'Table flow6:',
      'flow6 { dst 2001:db8:2::/128; src 2001:db8:1::/128; next header 17; dport 123; } unknown [igp_rr 2025-01-13 from 2001:2::2] * (100) [i]',
      '\tbgp_originator_id: 188.245.118.170',
      '\tbgp_cluster_list: 162.55.169.45',
      'Table r4:',
      '172.23.37.192/27-29 AS51 [static1 12-20] * (200)',
      'Table master4:',
      '10.1.0.0/24          unicast [static4 12:00:00.000] * (200)',
      '\tdev eth0',
    ].join('\n')
    const r = parseBirdRoutes(text)
    expect(r.map((x) => [x.prefix, x.table, x.pos.line])).toEqual([['10.1.0.0/24', 'master4', 8]])
  })
})

describe('framing tolerance', () => {
  const text = fixture('bird2-ecmp-not-tunneled/birdc-show-route-all.txt')
  const base = parseBirdRoutes(text)

  it('CRLF, no trailing newline, no banner give the same routes', () => {
    expect(parseBirdRoutes(text.replace(/\n/g, '\r\n'))).toEqual(base)
    expect(parseBirdRoutes(text.replace(/\n$/, ''))).toEqual(base)
    const noBanner = parseBirdRoutes(text.replace(/^BIRD [^\n]*\n/, ''))
    expect(noBanner.map((r) => r.pos.line)).toEqual(base.map((r) => r.pos.line - 1))
  })

  it('blank lines between tables keep original line numbers', () => {
    const two = `${text}\nTable master6:\nfd00::/64            unicast [direct1 16:50:07.751] * (240)\n\tdev eth0\n`
    const r = parseBirdRoutes(two)
    expect(r).toHaveLength(9)
    expect(r[8]).toMatchObject({prefix: 'fd00::/64', table: 'master6', pos: {line: 54, endLine: 55}})
  })

  it('raw socket framing gives identical routes and positions', () => {
    expect(parseBirdRoutes(toRawSocket(text))).toEqual(base)
    expect(parseBirdRoutes(toRawSocket(text, (i) => i % 3 === 0, '1008'))).toEqual(base)
  })

  it('streamed line by line (createBirdRouteStream) gives the same routes', () => {
    const got: BirdRoute[] = []
    const stream = createBirdRouteStream('birdc-show-route-all.txt', (r) => got.push(r))
    text.split('\n').forEach((l, i) => stream.push(l, i + 1))
    stream.end()
    expect(got).toEqual(base)
  })

  it('the parser class can be fed payload lines directly', () => {
    const p = new BirdRouteParser('x.txt')
    p.feed('10.1.0.0/24 via 10.0.0.1 on eth0 [static1 12:00] * (200)', 7)
    p.feed('\tType: static unicast univ', 8)
    expect(p.end()).toMatchObject([{prefix: '10.1.0.0/24', pos: {file: 'x.txt', line: 7, endLine: 8}, source: 'static'}])
  })
})

describe('compact routes: attributes on access, shared next hops, decision values', () => {
  const texts = [
    fixture('bird16-ecmp-not-tunneled/birdc-show-route-all.txt'),
    fixture('bird2-ecmp-not-tunneled/birdc-show-route-all.txt'),
    capture('bird1.6.8-B16-established.txt', 'show route all'),
    capture('bird1.6.8-B16-longattrs.txt', 'show route for 10.10.1.0/24 all'),
    capture('bird2.0.12-A2-established.txt', 'show route all'),
    capture('bird3.2.3-B3-established.txt', 'show route all'),
    capture('bird3.2.3-B3-longattrs.txt', 'show route for 10.30.1.0/24 all'),
    fixture('bird-extra/birdwatcher-bird3.0.1-show-route-all.txt'),
  ]

  /** Every `\tName: value` line after the route's header and next hops, continuations joined: what BIRD printed. */
  function expectedAttributes(text: string, r: BirdRoute) {
    const lines = text.split('\n').map((l) => l.replace(/\r$/, ''))
    const out: Array<{name: string; value: string; line: number; endLine: number}> = []
    for (let n = r.pos.line + 1; n <= r.pos.endLine; n++) {
      const l = lines[n - 1]!
      if (l.startsWith('\t\t')) {
        const a = out[out.length - 1]!
        a.value = a.value ? `${a.value} ${l.trim()}` : l.trim()
        a.endLine = n
      } else if (l.startsWith('\t') && !/^\t(via|dev) /.test(l)) {
        const at = l.indexOf(': ')
        out.push(at < 0 ? {name: l.slice(1, -1), value: '', line: n, endLine: n} : {name: l.slice(1, at), value: l.slice(at + 2), line: n, endLine: n})
      }
    }
    return out
  }

  it('attributes are every attribute line with its position, in any framing and line ending', () => {
    for (const text of texts) {
      const routes = parseBirdRoutes(text)
      for (const r of routes) expect(r.attributes).toEqual(expectedAttributes(text, r))
      const views = (rs: BirdRoute[]) => JSON.parse(JSON.stringify(rs))
      expect(views(parseBirdRoutes(text.replace(/\r?\n/g, '\r\n')))).toEqual(views(routes))
      expect(views(parseBirdRoutes(toRawSocket(text.replace(/\r/g, ''), (i) => i % 2 === 0)))).toEqual(views(routes))
    }
  })

  it('attribute lines that are not consecutive keep their own line numbers', () => {
    const text = '10.1.0.0/24 unicast [b 12:00] * (100)\n\tType: BGP univ\n\n\tBGP.origin: IGP\n\tBGP.community: (1,2)\n\t\t(3,4)\n'
    const [r] = parseBirdRoutes(text)
    expect(r!.attributes).toEqual([
      {name: 'Type', value: 'BGP univ', line: 2, endLine: 2},
      {name: 'BGP.origin', value: 'IGP', line: 4, endLine: 4},
      {name: 'BGP.community', value: '(1,2) (3,4)', line: 5, endLine: 6},
    ])
  })

  it('the JSON form prints attributes and no internal fields', () => {
    const r = parseBirdRoutes(fixture('bird2-ecmp-not-tunneled/birdc-show-route-all.txt')).find((x) => x.bgpNextHop !== undefined)
    const json = JSON.parse(JSON.stringify(r))
    expect(json.attributes).toEqual(r!.attributes)
    expect(Object.keys(json)).not.toContain('attrText')
    expect(Object.keys(json)).not.toContain('asPathLength')
    expect(json).toMatchObject({
      prefix: r!.prefix,
      protocol: r!.protocol,
      bgpNextHop: r!.bgpNextHop,
      nexthops: r!.nexthops,
      pos: r!.pos,
    })
  })

  it('routes with the same next hops share the next-hop objects', () => {
    const routes = parseBirdRoutes(capture('bird2.0.12-A2-established.txt', 'show route all'))
    const objects = new Set(routes.flatMap((r) => r.nexthops))
    const texts = new Set(routes.flatMap((r) => r.nexthops.map((n) => JSON.stringify(n))))
    expect(objects.size).toBe(texts.size)
    expect(routes.every((r) => Object.isFrozen(r.nexthops))).toBe(true)
  })

  it('decision values agree with the attributes', () => {
    for (const text of texts) {
      for (const r of parseBirdRoutes(text)) {
        const a = (...names: string[]) => r.attributes.find((x) => names.includes(x.name))?.value.trim()
        const num = (v: string | undefined) => (v === undefined ? undefined : Number(v))
        expect(r.localPref).toBe(num(a('BGP.local_pref', 'bgp_local_pref')))
        expect(r.med).toBe(num(a('BGP.med', 'bgp_med')))
        expect(r.origin).toBe(a('BGP.origin', 'bgp_origin'))
        expect(r.asPathLength).toBe((a('BGP.as_path', 'bgp_path') ?? '').split(/\s+/).filter(Boolean).length)
      }
    }
  })
})

describe('malformed input: ParseError naming file, line and expectation', () => {
  it('a next-hop line before any route header', () => {
    const e = parseError(() => parseBirdRoutes('BIRD 2.0.12 ready.\n\tvia 10.0.0.1 on eth0\n', 'f.txt'))
    expect([e.file, e.line]).toEqual(['f.txt', 2])
    expect(e.expected).toMatch(/route header/)
  })

  it('a header whose prefix is not a prefix', () => {
    const e = parseError(() => parseBirdRoutes('BIRD 1.6.8 ready.\n24 of 24 routes for 23 networks\n'))
    expect(e.line).toBe(2)
    expect(e.message).toContain('birdc-show-route-all.txt:2')
    parseError(() => parseBirdRoutes('10.0.0.300/24 unicast [x 1] * (1)\n'))
  })

  it('a secondary route before any primary one, a continuation before any attribute', () => {
    expect(parseError(() => parseBirdRoutes('                     unicast [b 12:00] (100)\n')).line).toBe(1)
    expect(parseError(() => parseBirdRoutes('10.0.0.0/8 unicast [b 12:00] (100)\n\t\t(1,2)\n')).line).toBe(2)
  })

  it('header without [PROTO TIME], bad gateway, unknown tab line, multi-word destination', () => {
    parseError(() => parseBirdRoutes('10.0.0.0/8 unicast (100)\n'))
    parseError(() => parseBirdRoutes('10.0.0.0/8 unicast [static1] (100)\n'))
    expect(parseError(() => parseBirdRoutes('10.0.0.0/8 unicast [s 1] (100)\n\tvia eth0 on eth0\n')).expected).toMatch(/gateway/)
    parseError(() => parseBirdRoutes('10.0.0.0/8 unicast [s 1] (100)\n\tgarbage without colon\n'))
    parseError(() => parseBirdRoutes('10.0.0.0/8 two words [s 1] (100)\n'))
  })

  it('BIRD error replies on the raw socket', () => {
    const e = parseError(() => parseBirdRoutes('0001 BIRD 2.0.12 ready.\n9001 syntax error, unexpected CF_SYM_UNDEFINED\n'))
    expect(e.found).toContain('9001')
    expect(parseBirdRoutes('0001 BIRD 2.0.12 ready.\n8001 Network not found\n')).toEqual([])
  })

  it('a raw reply with a line that is no reply line', () => {
    expect(parseError(() => parseBirdRoutes('1007-Table master4:\nxx garbage\n')).line).toBe(2)
  })
})
