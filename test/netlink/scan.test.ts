// The in-place dump reading of scan.ts gives exactly what decoding gives: the key index
// finds the messages whose decoded key is wanted, and wireMatches says yes only for a message that
// decodes to the planned route (specMatchesPlanned). Also the encoder's IPv4 fast path.
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {canonicalPrefix} from '../../src/model/prefix.js'
import type {PlannedRoute} from '../../src/model/types.js'
import {plannedSpec, specMatchesPlanned} from '../../src/netlink/apply.js'
import {
  type RouteSpec, encodeRoute, encodeRouteBatch, parseRouteMessage, routeKeyText, routeMessageKey,
} from '../../src/netlink/codec.js'
import {WireKeyIndex, ipv4PrefixKey, wireCheckable, wireDecodesLookedUp, wireMatches} from '../../src/netlink/scan.js'

const octet = fc.integer({min: 0, max: 255})
const quad = fc.tuple(octet, octet, octet, octet).map((o) => o.join('.'))
const links = new Map([[2, 'tunl0'], [3, 'eth0']])
const byName = (dev: string): number | undefined => [...links].find(([, n]) => n === dev)?.[0]

/** The decoding path: the message's key text, if any, and whether it decodes. */
function decoded(buf: Buffer): {key: string | undefined; spec: RouteSpec | undefined} {
  let key: string | undefined
  try {
    key = routeMessageKey(buf)
  } catch {
    key = undefined
  }
  let spec: RouteSpec | undefined
  try {
    spec = parseRouteMessage(buf)
    for (const nh of spec.nexthops) if (nh.ifindex) nh.dev = links.get(nh.ifindex)
  } catch {
    spec = undefined
  }
  return {key, spec}
}

// routes as a dump may hold them: IPv4 and IPv6, tables beyond 255, TOS, host bits, several metrics
const gw4 = fc.constantFrom('172.20.0.10', '172.20.1.11', '10.1.2.3')
const gw6 = fc.constantFrom('fe80::1', '2001:db8::7')
const nexthop = fc.record({
  gateway: fc.option(fc.oneof(gw4, gw6), {nil: undefined}),
  ifindex: fc.constantFrom(2, 3, 9),
  onlink: fc.boolean(),
  weight: fc.integer({min: 1, max: 3}),
})
const v4dst = fc.tuple(quad, fc.integer({min: 0, max: 32})).map(([a, l]) => `${a}/${l}`)
const v6dst = fc.tuple(fc.constantFrom('2001:db8::', '2001:db8:0:1::', 'fd00::5', '::'), fc.constantFrom(0, 48, 64, 128)).map(([a, l]) => `${a}/${l}`)
const spec = fc.record({
  family: fc.constantFrom('inet' as const, 'inet' as const, 'inet6' as const),
  v4: v4dst,
  v6: v6dst,
  tableId: fc.constantFrom(254, 255, 1000, 2 ** 32 - 1),
  metric: fc.constantFrom(0, 31, 32, 2 ** 31 + 5),
  protocol: fc.constantFrom(158, 12, 2),
  type: fc.constantFrom(1, 1, 1, 6, 0),
  tos: fc.constantFrom(0, 0, 0, 0x10),
  nexthops: fc.array(nexthop, {minLength: 0, maxLength: 3}),
}).map(({v4, v6, ...r}): RouteSpec => ({...r, dst: r.family === 'inet' ? v4 : v6, scope: 0}))

describe('WireKeyIndex', () => {
  it('finds a message exactly when its decoded key text is a wanted one', () => {
    fc.assert(
      fc.property(fc.array(spec, {minLength: 1, maxLength: 8}), fc.array(fc.nat(), {maxLength: 6}), (routes, picks) => {
        // wanted: some routes' keys, as canonical text (what a plan has), and one that is not canonical
        const index = new WireKeyIndex<string>()
        const wanted = new Set<string>()
        for (const i of picks) {
          const r = routes[i % routes.length]
          const dst = canonicalPrefix(r.dst, r.family)!
          const k = routeKeyText(r.family, r.tableId, dst, r.metric)
          wanted.add(k)
          index.obtain(r.family, r.tableId, dst, r.metric, () => k)
        }
        index.obtain('inet', 254, '10.0.0.65/26', 31, () => 'host bits') // no dump shows it
        for (const r of routes) {
          const buf = encodeRoute(r)
          const {key} = decoded(buf)
          const found = index.lookup(buf, 0, buf.length)
          expect(found).toBe(key !== undefined && wanted.has(key) ? key : undefined)
        }
      }),
      {numRuns: 400},
    )
  })

  it('agrees with the decoding path on damaged messages', () => {
    fc.assert(fc.property(spec, fc.array(fc.tuple(fc.nat(), octet), {minLength: 1, maxLength: 4}), (r, damage) => {
      const buf = encodeRoute(r)
      for (const [at, v] of damage) buf[at % buf.length] = v
      const {key, spec: s} = decoded(buf)
      const index = new WireKeyIndex<number>()
      const dst = canonicalPrefix(r.dst, r.family)!
      index.obtain(r.family, r.tableId, dst, r.metric, () => 1)
      const want = key === routeKeyText(r.family, r.tableId, dst, r.metric) && s !== undefined
      // the index may find a message that does not decode (the caller decodes it, and drops it)
      const found = index.lookup(buf, 0, buf.length) !== undefined && s !== undefined
      expect(found).toBe(want)
    }), {numRuns: 3000})
  })

  it('ipv4PrefixKey takes canonical IPv4 prefixes only, as canonicalPrefix gives them back', () => {
    const text = fc.oneof(
      v4dst,
      fc.tuple(quad, fc.constantFrom('/08', '/33', '/', '', '/1x', '/032')).map(([a, s]) => `${a}${s}`),
      fc.constantFrom('010.0.0.0/8', 'default', '::/0', '10.0.0.0/8 '),
    )
    fc.assert(fc.property(text, (t) => {
      expect(ipv4PrefixKey(t) >= 0).toBe(canonicalPrefix(t, 'inet') === t && t.includes('/') && !t.includes(':'))
    }), {numRuns: 2000})
    const index = new WireKeyIndex<string>()
    index.obtainIPv4(254, 31, ipv4PrefixKey('192.168.0.0/16'), () => 'a')
    expect(index.get('inet', 254, '192.168.0.0/16', 31)).toBe('a')
    expect(index.obtain('inet', 254, '192.168.0.0/16', 31, () => 'b')).toBe('a')
  })
})

describe('wireDecodesLookedUp', () => {
  it('is true exactly when parseRouteMessage decodes the message, damaged or not', () => {
    fc.assert(fc.property(spec, fc.array(fc.tuple(fc.nat(), octet), {maxLength: 4}), (r, damage) => {
      const buf = encodeRoute(r)
      for (const [at, v] of damage) buf[at % buf.length] = v
      expect(wireDecodesLookedUp(buf, 0, buf.length)).toBe(decoded(buf).spec !== undefined)
    }), {numRuns: 5000})
  })
})

describe('wireMatches', () => {
  const planned = fc.record({
    protocol: fc.constantFrom('158', 'bird', '12', 'nonesuch'),
    nexthops: fc.array(fc.record({gateway: fc.oneof(gw4, gw6), dev: fc.constantFrom('tunl0', 'eth0'), onlink: fc.boolean(), weight: fc.integer({min: 1, max: 3})}), {minLength: 1, maxLength: 3}),
  }).map((r): PlannedRoute => ({dst: '10.0.0.64/26', table: 'main', tableId: 254, metric: 31, ...r}))
  const kernel = spec.map((s): RouteSpec => ({...s, family: 'inet', dst: '10.0.0.64/26', tableId: 254, metric: 31, tos: 0, flags: s.nexthops.length === 1 && s.nexthops[0].onlink ? 4 : 0}))

  const specOf = (p: PlannedRoute): RouteSpec | undefined => {
    try {
      return plannedSpec(p, byName)
    } catch {
      return undefined // an unknown protocol name: no spec, nothing written
    }
  }

  it('says yes only for a route that decodes to the planned one, and yes for the planned route itself', () => {
    fc.assert(fc.property(kernel, planned, fc.boolean(), (k, p, same) => {
      const write = specOf(p)
      if (!write) return
      const buf = encodeRoute(same ? write : k)
      const {spec: s} = decoded(buf)
      const yes = wireMatches(buf, 0, buf.length, write) && wireCheckable(write, links)
      if (yes) expect(s !== undefined && specMatchesPlanned(s, p)).toBe(true)
      if (same) expect(yes).toBe(true)
      // the encoder's own unicast bytes are always readable
      else if (k.type === 1 && s && specMatchesPlanned(s, p)) expect(yes).toBe(true)
    }), {numRuns: 3000})
  })

  it('never says yes for a damaged message that does not decode to the planned route', () => {
    fc.assert(
      fc.property(planned, fc.array(fc.tuple(fc.nat(), octet), {minLength: 1, maxLength: 3}), (p, damage) => {
        const write = specOf(p)
        if (!write) return
        const buf = encodeRoute(write)
        for (const [at, v] of damage) buf[at % buf.length] = v
        const {spec: s} = decoded(buf)
        if (wireMatches(buf, 0, buf.length, write) && wireCheckable(write, links))
          expect(s !== undefined && specMatchesPlanned(s, p)).toBe(true)
      }),
      {numRuns: 5000},
    )
  })

  it('a device renamed since the plan is not vouched for by the bytes', () => {
    const p: PlannedRoute = {dst: '10.0.0.64/26', table: 'main', tableId: 254, metric: 31, protocol: '158', nexthops: [{gateway: '172.20.0.10', dev: 'tunl0', onlink: true, weight: 1}]}
    const write = plannedSpec(p, byName)
    const buf = encodeRoute(write)
    expect(wireMatches(buf, 0, buf.length, write) && wireCheckable(write, links)).toBe(true)
    expect(wireCheckable(write, new Map([[2, 'tunl1']]))).toBe(false)
    expect(wireCheckable({...write, nexthops: [{...write.nexthops[0], gateway: '172.020.0.10'}]}, links)).toBe(false)
  })
})

describe('encodeRouteBatch', () => {
  it('holds each route as encodeRoute writes it, at its offset', () => {
    fc.assert(fc.property(fc.array(spec, {minLength: 1, maxLength: 5}), fc.constantFrom('new' as const, 'del' as const), (routes, op) => {
      let single: string[]
      try {
        single = routes.map((r) => encodeRoute(r, op).toString('hex'))
      } catch {
        return // a spec the encoder refuses (a gateway of neither family's form)
      }
      const {buf, offsets} = encodeRouteBatch(routes, op, 24, 0x501, 7, 99)
      routes.forEach((_, i) => expect(buf.subarray(offsets[i] + 16, offsets[i + 1]).toString('hex')).toBe(single[i]))
    }), {numRuns: 200})
  })
})
