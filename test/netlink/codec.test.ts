import {endianness} from 'node:os'

import fc from 'fast-check'
import ipaddr from 'ipaddr.js'
import {describe, expect, it} from 'vitest'

import {
  type RouteSpec, decodeRoute, encodeRoute, parseAttrs, parseLinkMessage, parseRouteMessage, specFromKernelRoute,
} from '../../src/netlink/codec.js'

// Fixtures are written little-endian, as the kernel sends them on x86-64 / arm64.
const le = endianness() === 'LE'
const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex')
const pos = {file: 'rtnetlink', line: 1, endLine: 1}
const links = new Map([[1, 'lo'], [5, 'tunl0'], [7, 'eth0']])

const base: Omit<RouteSpec, 'nexthops'> = {
  family: 'inet', dst: '192.168.200.10/32', tableId: 254, protocol: 252, metric: 31, type: 1, scope: 0,
}

describe.runIf(le)('encodeRoute', () => {
  it('single next hop: RTA_GATEWAY + RTA_OIF, onlink in rtm_flags', () => {
    const got = encodeRoute({...base, nexthops: [{gateway: '172.31.20.5', ifindex: 5, onlink: true, weight: 1}]})
    expect(got.toString('hex')).toBe(hex(`
      02 20 00 00 fe fc 00 01  04 00 00 00
      08 00 0f 00 fe 00 00 00
      08 00 01 00 c0 a8 c8 0a
      08 00 06 00 1f 00 00 00
      08 00 05 00 ac 1f 14 05
      08 00 04 00 05 00 00 00`).toString('hex'))
  })

  it('several next hops: RTA_MULTIPATH of rtnexthop{len,flags,hops=weight-1,ifindex} + RTA_GATEWAY', () => {
    const got = encodeRoute({
      ...base,
      nexthops: [
        {gateway: '172.31.20.5', ifindex: 5, onlink: true, weight: 3},
        {gateway: '172.31.30.6', ifindex: 5, onlink: true, weight: 1},
      ],
    })
    expect(got.toString('hex')).toBe(hex(`
      02 20 00 00 fe fc 00 01  00 00 00 00
      08 00 0f 00 fe 00 00 00
      08 00 01 00 c0 a8 c8 0a
      08 00 06 00 1f 00 00 00
      24 00 09 00
        10 00 04 02 05 00 00 00  08 00 05 00 ac 1f 14 05
        10 00 04 00 05 00 00 00  08 00 05 00 ac 1f 1e 06`).toString('hex'))
  })

  it('an IPv6 gateway of an IPv4 route travels as RTA_VIA{u16 family, addr}, padded to 4', () => {
    const got = encodeRoute({...base, nexthops: [{gateway: 'fe80::1', ifindex: 7, onlink: false, weight: 1}]})
    expect(got.subarray(0, 12).toString('hex')).toBe(hex('02 20 00 00 fe fc 00 01 00 00 00 00').toString('hex'))
    expect(got.subarray(36).toString('hex')).toBe(hex(`
      16 00 12 00 0a 00 fe 80 00 00 00 00 00 00 00 00 00 00 00 00 00 01 00 00
      08 00 04 00 07 00 00 00`).toString('hex'))
  })

  it('RTA_VIA inside RTA_MULTIPATH makes rtnh_len 8 + 24', () => {
    const got = encodeRoute({
      ...base,
      nexthops: [
        {gateway: 'fe80::1', ifindex: 7, weight: 1},
        {gateway: 'fe80::2', ifindex: 7, weight: 2},
      ],
    })
    const mp = parseAttrs(got.subarray(12)).find((a) => a.type === 9)!
    expect(mp.data.length).toBe(2 * 32)
    expect(mp.data.readUInt16LE(0)).toBe(32)
    expect(mp.data[3]).toBe(0)
    expect(mp.data[32 + 3]).toBe(1)
  })

  it('a table id above 255 puts RT_TABLE_UNSPEC in rtm_table and the id in RTA_TABLE', () => {
    const got = encodeRoute({...base, tableId: 1000, nexthops: [{gateway: '172.31.20.5', ifindex: 5, onlink: true}]})
    expect(got[4]).toBe(0)
    expect(got.subarray(12, 20).toString('hex')).toBe(hex('08 00 0f 00 e8 03 00 00').toString('hex'))
  })

  it('a delete carries scope NOWHERE (any scope)', () => {
    const got = encodeRoute({...base, nexthops: [{gateway: '172.31.20.5', ifindex: 5, onlink: true}]}, 'del')
    expect(got[6]).toBe(255)
  })

  it('refuses a weight outside 1..256', () => {
    expect(() => encodeRoute({...base, nexthops: [{gateway: '10.0.0.1', ifindex: 5, weight: 300}, {gateway: '10.0.0.2', ifindex: 5}]})).toThrow(/weight/)
  })
})

describe.runIf(le)('decodeRoute', () => {
  it('decodes a kernel dump message: multipath with RTA_VIA and linkdown, table 1000, cacheinfo skipped', () => {
    // as the kernel dumps `10.99.0.0/24 table 1000 proto bird metric 32 nexthop via inet6 fe80::1 dev eth0 weight 3
    //   nexthop via 172.31.20.5 dev tunl0 onlink` with tunl0 down (linkdown)
    const msg = hex(`
      02 18 00 00 00 0c 00 01  00 00 00 00
      08 00 0f 00 e8 03 00 00
      08 00 06 00 20 00 00 00
      08 00 01 00 0a 63 00 00
      34 00 09 00
        20 00 00 02 07 00 00 00  16 00 12 00 0a 00 fe 80 00 00 00 00 00 00 00 00 00 00 00 00 00 01 00 00
        10 00 14 00 05 00 00 00  08 00 05 00 ac 1f 14 05
      0c 00 0c 00 00 00 00 00 00 00 00 00`)
    const r = decodeRoute(msg, links, pos)
    expect(r).toEqual({
      family: 'inet', type: 'unicast', dst: '10.99.0.0/24', table: '1000', tableId: 1000, protocol: 'bird', scope: 'global',
      metric: 32, flags: [], pos,
      nexthops: [
        {gateway: {family: 'inet6', address: 'fe80::1'}, dev: 'eth0', weight: 3, flags: []},
        {gateway: {family: 'inet', address: '172.31.20.5'}, dev: 'tunl0', weight: 1, flags: ['onlink', 'linkdown']},
      ],
    })
  })

  it('decodes a single top-level RTA_VIA (the message the netlink package rejects)', () => {
    const msg = hex(`
      02 18 00 00 fe 03 00 01  14 00 00 00
      08 00 0f 00 fe 00 00 00
      08 00 01 00 0a 60 00 00
      16 00 12 00 0a 00 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 05 00 00
      08 00 04 00 05 00 00 00`)
    const r = decodeRoute(msg, links, pos)
    expect(r.protocol).toBe('boot')
    expect(r.flags).toEqual(['onlink', 'linkdown'])
    expect(r.nexthops).toEqual([{gateway: {family: 'inet6', address: '2001:db8::5'}, dev: 'tunl0', weight: 1, flags: ['onlink', 'linkdown']}])
  })

  it('decodes blackhole / unreachable (no next hops), unknown protocol numbers as text, default route', () => {
    const bh = decodeRoute(hex('02 00 00 00 fe 50 00 06 00 00 00 00  08 00 0f 00 fe 00 00 00'), links, pos)
    expect(bh).toMatchObject({type: 'blackhole', dst: '0.0.0.0/0', protocol: '80', table: 'main', nexthops: []})
    const un = decodeRoute(hex('02 1a 00 00 fe 0c 00 07 00 00 00 00  08 00 01 00 c0 a8 6e 80'), links, pos)
    expect(un).toMatchObject({type: 'unreachable', dst: '192.168.110.128/26', protocol: 'bird', nexthops: []})
  })

  it('rejects a truncated attribute', () => {
    expect(() => parseRouteMessage(hex('02 20 00 00 fe 04 00 01 00 00 00 00  10 00 01 00 c0 a8'))).toThrow(/malformed rtattr/)
  })

  it('reads a link name', () => {
    expect(parseLinkMessage(hex('00 00 00 00 05 00 00 00 00 00 00 00 00 00 00 00  0a 00 03 00 74 75 6e 6c 30 00 00 00'))).toEqual({ifindex: 5, ifname: 'tunl0'})
  })
})

describe('encode ∘ parse', () => {
  const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((b) => b.join('.'))
  const v6 = fc.array(fc.nat(0xffff), {minLength: 8, maxLength: 8}).map((w) => w.map((x) => x.toString(16)).join(':'))
  const nh = fc.record({
    gateway: fc.oneof(v4, v6),
    ifindex: fc.integer({min: 1, max: 1 << 20}),
    onlink: fc.boolean(),
    weight: fc.integer({min: 1, max: 256}),
  })

  it('a spec survives the wire, single and multipath', () => {
    fc.assert(
      fc.property(
        v4,
        fc.integer({min: 0, max: 32}),
        fc.integer({min: 1, max: 0xffffffff}),
        fc.nat(255),
        fc.nat(0xffffffff),
        fc.array(nh, {minLength: 1, maxLength: 5}),
        (a, len, table, proto, metric, nhs) => {
          const spec: RouteSpec = {
            family: 'inet',
            dst: `${a}/${len}`,
            tableId: table,
            protocol: proto,
            metric,
            type: 1,
            scope: 0,
            nexthops: nhs,
          }
          const back = parseRouteMessage(encodeRoute(spec))
          // dst comes back with host bits cleared
          const r = decodeRoute(encodeRoute(spec), new Map(), pos)
          expect(back.tableId).toBe(table)
          expect(back.protocol).toBe(proto)
          expect(back.metric).toBe(metric)
          expect(r.dst.endsWith(`/${len}`)).toBe(true)
          expect(back.nexthops.map((n) => [n.ifindex, n.onlink ?? false, nhs.length === 1 ? 1 : n.weight])).toEqual(
            nhs.map((n) => [n.ifindex, n.onlink, nhs.length === 1 ? 1 : n.weight]),
          )
          expect(r.nexthops.map((n) => n.gateway)).toEqual(
            nhs.map((n) => ({
              family: n.gateway.includes(':') ? 'inet6' : 'inet',
              address: ipaddr.parse(n.gateway).toString(),
            })),
          )
        },
      ),
    )
  })

  it('specFromKernelRoute re-encodes a decoded route to the same bytes', () => {
    const spec: RouteSpec = {...base, tableId: 1000, protocol: 12, nexthops: [{gateway: '172.31.20.5', ifindex: 5, onlink: true, weight: 2}, {gateway: 'fe80::9', ifindex: 7, weight: 1}]}
    const wire = encodeRoute(spec)
    const kr = decodeRoute(wire, links, pos)
    const again = specFromKernelRoute(kr, (dev) => [...links].find(([, n]) => n === dev)?.[0])
    expect(encodeRoute(again).equals(wire)).toBe(true)
  })
})
