// The one-line scanner (scanIpRouteJson, taken first by parseIpRouteJson) must give exactly what the generic
// JSON.parse path gives: the same values in the same key order, the very same shared next-hop lists, a
// fresh flags list per route, the same positions; and whatever it cannot read, or anything wrong, must end
// up with the generic path so a bad file fails with the same ParseError.
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {ParseError} from '../../src/model/errors.js'
import type {KernelRoute} from '../../src/model/types.js'
import {parseIpRouteJson, parseIpRouteJsonGeneric, scanIpRouteJson} from '../../src/parse/ip-route-json.js'
import {fixture, foldersWith} from './helpers.js'

const FILE = 'ip-j-d-route.json'

type Outcome = {routes: KernelRoute[]} | {error: string}

function outcome(parse: () => KernelRoute[]): Outcome {
  try {
    return {routes: parse()}
  } catch (error) {
    if (!(error instanceof ParseError)) throw error
    return {error: error.message}
  }
}

/** `fast` is what the generic path gave: values, key order, shared lists, fresh flags, positions. */
function expectSame(fast: KernelRoute[], generic: KernelRoute[]): void {
  expect(fast).toHaveLength(generic.length)
  expect(JSON.stringify(fast)).toBe(JSON.stringify(generic)) // values and key order
  for (let i = 0; i < fast.length; i++) {
    // both paths go through the same next-hop cache (far below its 100,000 cap here): the same objects
    expect(fast[i].nexthops).toBe(generic[i].nexthops)
    expect(Object.isFrozen(fast[i].flags)).toBe(Object.isFrozen(generic[i].flags))
    expect(fast[i].pos).toEqual(generic[i].pos)
  }
  // a non-empty flags list is each route's own, as buildRoute makes it
  const withFlags = fast.filter((r) => r.flags.length > 0)
  expect(new Set(withFlags.map((r) => r.flags)).size).toBe(withFlags.length)
  expect(new Set(fast.map((r) => r.pos)).size).toBe(new Set(generic.map((r) => r.pos)).size)
}

function expectSameOutcome(fast: Outcome, generic: Outcome): void {
  if ('error' in generic) expect(fast).toEqual(generic)
  else {
    expect(fast).not.toHaveProperty('error')
    expectSame((fast as {routes: KernelRoute[]}).routes, generic.routes)
  }
}

/**
 * parseIpRouteJson agrees with the generic path on `text`; and when that is one JSON array on one line that
 * the generic path reads, the scanner reads it (rather than handing it over), and so do pieces of `piece`.
 */
function checkText(text: string, piece?: number): void {
  const generic = outcome(() => parseIpRouteJsonGeneric(text, FILE))
  expectSameOutcome(outcome(() => parseIpRouteJson(text, FILE)), generic)
  if ('routes' in generic && /^[ \t\r]*\[[^\n]*\][ \t\r\n]*$/.test(text) && isOneArray(text)) {
    const fast = scanIpRouteJson(text, FILE)
    expect(fast).toBeDefined()
    expectSame(fast!, generic.routes)
    if (piece !== undefined) expectSame(parseIpRouteJsonGeneric(text, FILE, {jsonPiece: piece}), generic.routes)
  }
}

function isOneArray(text: string): boolean {
  try {
    return Array.isArray(JSON.parse(text))
  } catch {
    return false // several arrays back to back: the generic path's to read
  }
}

// ---------------------------------------------------------------- routes in iproute2's shapes

const octet = fc.integer({min: 0, max: 255})
const ipv4 = fc.tuple(octet, octet, octet, octet).map((o) => o.join('.'))
const ipv6 = fc.oneof(fc.constantFrom('fe80::', 'fe80::1', '2001:db8::5', 'FE80::0:1', '::1', '::', 'fd00:10:244::', '2001:db8:0:0:0:0:0:7'), fc.ipV6())
const withLength = (address: fc.Arbitrary<string>, max: number) =>
  fc.tuple(address, fc.option(fc.integer({min: 0, max}), {nil: undefined})).map(([a, len]) => (len === undefined ? a : `${a}/${len}`))
const dst = fc.oneof({weight: 6, arbitrary: withLength(ipv4, 32)}, {weight: 2, arbitrary: withLength(ipv6, 128)}, {weight: 1, arbitrary: fc.constant('default')})
// a small pool of gateways: the shared caches stay far below their caps over all runs
const host = fc.oneof(
  {weight: 5, arbitrary: fc.tuple(fc.integer({min: 0, max: 9}), fc.integer({min: 1, max: 20})).map(([a, b]) => `172.20.${a}.${b}`)},
  {weight: 1, arbitrary: fc.constantFrom('fe80::1', 'fe80::2', '2001:db8::1', 'FE80::0:1', '::ffff:10.0.0.1')},
)
const prefsrc = fc.oneof({weight: 3, arbitrary: ipv4}, {weight: 1, arbitrary: ipv6})
const dev = fc.constantFrom('tunl0', 'eth0', 'eth1', 'lo', 'calif2ae67c76cf', 'wg0', 'v0')
const flags = fc.shuffledSubarray(['onlink', 'pervasive', 'linkdown', 'dead', 'offload', 'notify', 'rt_trap', 'unresolved'], {maxLength: 3})
const via = fc.record({family: fc.constantFrom('inet', 'inet6', 'mpls'), host, extra: fc.constantFrom('x', 1)}, {requiredKeys: ['host']})
// keys the generic path ignores, with simple and nested values
const unknown = fc.dictionary(
  fc.constantFrom('expires', 'nhid', 'cache', 'metrics', 'encap', 'rt_offload', 'lastuse', 'x'),
  fc.constantFrom<unknown>(0, 42, 'medium', true, null, ['a', 'b'], [1, 2], [{mtu: 1400}], {type: 'ip', dst: '1.2.3.4'}, -3, 2.5, 'a\\"b', '\u2028'),
  {maxKeys: 2},
)

/** An object with some of these keys (and sometimes unknown ones), in any order. */
function object(
  fields: Record<string, fc.Arbitrary<unknown>>,
  required: string[] = [],
): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .tuple(fc.record(fields, {requiredKeys: required}), unknown, fc.boolean())
    .chain(([known, extra, withExtra]) => {
      const all: Record<string, unknown> = withExtra ? {...extra, ...known} : known
      const keys = Object.keys(all)
      return fc
        .shuffledSubarray(keys, {minLength: keys.length, maxLength: keys.length})
        .map((order) => Object.fromEntries(order.map((k) => [k, all[k]])))
    })
}

const metric = fc.oneof(
  {weight: 4, arbitrary: fc.constantFrom(0, 32, 256, 1024, 4294967295)},
  {weight: 4, arbitrary: fc.nat()},
  {weight: 1, arbitrary: fc.constantFrom(2 ** 53 + 2, 1e21, 0.5, 1e15, 999999999999999)},
)

const nexthop = object({gateway: host, via, dev, weight: fc.integer({min: 1, max: 256}), flags})

const route = object({
  type: fc.constantFrom('unicast', 'unicast', 'blackhole', 'unreachable', 'local', 'broadcast', 'multicast', 'prohibit', 'throw'),
  dst,
  gateway: host,
  via,
  // escapes (a quote, a backslash, a tab) and characters beyond ASCII in a few device names
  dev: fc.oneof({weight: 10, arbitrary: dev}, {weight: 1, arbitrary: fc.constantFrom('tunl"0', 'a\\b', 'tab\there', 'é0', 'x\u2028')}),
  table: fc.oneof(fc.constantFrom('main', 'local', 'default', '1000', '4000000000'), fc.integer({min: 0, max: 2 ** 32})),
  protocol: fc.oneof(fc.constantFrom('bird', 'kernel', 'boot', 'static', '80'), fc.integer({min: 0, max: 255})),
  scope: fc.oneof(fc.constantFrom('global', 'link', 'host'), fc.integer({min: 0, max: 255})),
  metric,
  prefsrc,
  tos: fc.constantFrom('0x10', 'lowdelay', 4),
  pref: fc.constantFrom('medium', 'high'),
  flags,
  nexthops: fc.array(nexthop, {maxLength: 3}),
}, ['dst'])

/**
 * A table as ip prints one: a few route shapes repeated with other addresses and metrics (what the
 * scanner's shapes are for), among one-off routes. Every route in it is one the model takes.
 */
const table = fc
  .tuple(
    fc.array(route, {minLength: 1, maxLength: 4}),
    fc.array(
      fc.oneof(
        {weight: 6, arbitrary: fc.tuple(fc.nat(), dst, host, prefsrc, fc.option(metric))},
        {weight: 1, arbitrary: route},
      ),
      {maxLength: 50},
    ),
  )
  .map(([shapes, items]) =>
    items.map((item) => {
      if (!Array.isArray(item)) return item
      const [k, d, h, p, m] = item
      const r = {...shapes[k % shapes.length]} // same keys, same order
      r.dst = d
      if ('gateway' in r) r.gateway = h
      if ('prefsrc' in r) r.prefsrc = p
      if ('metric' in r && m !== null) r.metric = m
      if ('via' in r) r.via = {...(r.via as object), host: h}
      return r
    }),
  )

// Values the model or the scanner does not take where a route or next hop has them: wrong types, bad
// addresses, an unknown route type, missing keys
const odd = fc.constantFrom<unknown>(
  undefined, 5, 1.5, -1, true, null, 'x', '', [], {}, [1], ['a'], {host: 'x'}, '\u0001',
  '10.0.0.256/8', '10.0.0.0/33', '1.2.3', '300.1.1.1', '172.20.01.1', 'fe80::/129', 'bogus',
)
const ROUTE_KEYS = ['type', 'dst', 'gateway', 'via', 'dev', 'table', 'protocol', 'scope', 'metric', 'prefsrc', 'tos', 'pref', 'flags', 'nexthops', 'nexthops.0']
const NEXTHOP_KEYS = ['gateway', 'via', 'dev', 'weight', 'flags']
const spoil = fc.tuple(fc.nat(), fc.constantFrom(...ROUTE_KEYS), fc.constantFrom(...NEXTHOP_KEYS), odd)
/**
 * The table with `spoils` applied: route (index mod length), key (`nexthops.0`: a key of its first next hop), value.
 */
function spoiled(routes: Array<Record<string, unknown>>, spoils: Array<[number, string, string, unknown]>): unknown[] {
  const out = routes.map((r) => ({...r}))
  for (const [n, key, nhKey, value] of spoils) {
    if (out.length === 0) break
    const r = out[n % out.length]
    if (key !== 'nexthops.0')
      r[key] = value // undefined: the key is left out
    else if (Array.isArray(r.nexthops) && r.nexthops.length > 0)
      r.nexthops = [{...(r.nexthops[0] as object), [nhKey]: value}, ...r.nexthops.slice(1)]
  }
  return out
}

const oneLine = (routes: unknown[]) => JSON.stringify(routes)
const layouts: Record<string, (routes: unknown[]) => string> = {
  'one line': oneLine,
  'one line, newline after': (r) => `${oneLine(r)}\n`,
  'one line, blanks around and between elements': (r) => ` \t${oneLine(r).replace(/},\{"/g, '} , {"')} \r\n`,
  'one line, blanks inside elements': (r) => oneLine(r).replace(/,"/g, ', "'),
  'pretty-printed': (r) => JSON.stringify(r, null, 2),
  'two arrays back to back': (r) => `${oneLine(r.slice(0, r.length >> 1))}${oneLine(r.slice(r.length >> 1))}`,
}

// Damage: what a truncated or edited file looks like
const damage = fc.oneof(
  fc.tuple(fc.nat(), fc.constantFrom('', '"', '\\', ',', '{', '}', '[', ']', ':', ' ', '\n', '0', '-', 'x', '\u0001')).map(([at, ch]) => (t: string) => {
    const i = at % (t.length + 1)
    return t.slice(0, i) + ch + t.slice(i + 1) // one character replaced (or dropped)
  }),
  fc.tuple(fc.nat(), fc.constantFrom('"x"', ',', '}', '{}', '"dst":"10.1.0.0/16",', '"dst":5,', '"type":"bogus",')).map(([at, s]) => (t: string) => {
    const i = at % (t.length + 1)
    return t.slice(0, i) + s + t.slice(i) // something inserted
  }),
  fc.nat().map((at) => (t: string) => t.slice(0, at % (t.length + 1))), // truncated
  fc.constant((t: string) => t.replace('"dst":', '"dst":"10.9.0.0/16","dst":')), // a duplicate key
)

describe('scanIpRouteJson gives what the generic path gives', () => {
  it('on tables of iproute2-shaped routes, some spoiled, in every layout, pieces of any size', () => {
    fc.assert(
      fc.property(
        table,
        fc.array(spoil, {maxLength: 2}),
        fc.constantFrom(...Object.keys(layouts)),
        fc.integer({min: 32, max: 4096}),
        (routes, spoils, layout, piece) => {
          checkText(layouts[layout](spoiled(routes, spoils)), piece)
        },
      ),
      {numRuns: 150},
    )
  })

  it('on damaged text: the same routes, or the same ParseError', () => {
    fc.assert(
      fc.property(table, fc.array(damage, {minLength: 1, maxLength: 3}), (routes, damages) => {
        checkText(damages.reduce((t, d) => d(t), oneLine(routes)))
      }),
      {numRuns: 150},
    )
  })

  it('reads unspoiled tables itself, without handing them over', () => {
    fc.assert(
      fc.property(table, (routes) => {
        const text = oneLine(routes)
        const fast = scanIpRouteJson(text, FILE)
        expect(fast).toBeDefined()
        expectSame(fast!, parseIpRouteJsonGeneric(text, FILE))
      }),
      {numRuns: 100},
    )
  })
})

describe('scanIpRouteJson: cases by hand', () => {
  const r = (o: Record<string, unknown>) => JSON.stringify(o)
  const tunnel = (dst: string, gw: string) => r({type: 'unicast', dst, gateway: gw, dev: 'tunl0', table: 'main', protocol: 'bird', scope: 'global', metric: 32, flags: ['onlink']})
  const ecmp = (dst: string) => r({type: 'unicast', dst, table: 'main', protocol: 'bird', scope: 'global', metric: 32, flags: [], nexthops: [
    {gateway: '172.31.11.1', dev: 'eth0', weight: 1, flags: []}, {gateway: '172.31.12.1', dev: 'eth1', weight: 1, flags: []},
  ]})
  const many = Array.from({length: 6}, (_, i) => tunnel(`10.0.${i}.0/26`, `172.20.${i % 2}.1`)).join(',')
  const cases: Record<string, string> = {
    'empty array': '[]',
    'blank array': '[ \t]',
    'empty text': '',
    'routes of one shape then another': `[${many},${ecmp('10.1.0.0/26')},${many},${ecmp('10.1.1.0/26')},${ecmp('10.1.2.0/26')}]`,
    'an escaped address after its shape is known': `[${many},${tunnel('10.0.9.0/26', '172.20.0.1').replace('10.0.9.0', '10.0.\\u0039.0')}]`,
    'a shaped route with a bad dst': `[${many},${tunnel('10.0.9.0/33', '172.20.0.1')}]`,
    'a shaped route with a bad gateway': `[${many},${tunnel('10.0.9.0/26', '172.20.0.300')}]`,
    'a shaped route with dst default': `[${many},${tunnel('default', '172.20.0.1')},${many}]`,
    'a shaped route with an IPv6 dst': `[${many},${tunnel('2001:db8::/64', 'fe80::1')}]`,
    // the family of "default" comes from the gateway, not from the shape's other routes
    'a shaped IPv6 route with dst default': `[${['2001:db8::/64', '2001:db8:1::/64', '2001:db8:2::/64', 'default'].map((d) => tunnel(d, 'fe80::1')).join(',')}]`,
    // the next hops of a shape differ by gateway, also after a run of one gateway
    'shaped routes, a run of one gateway then another': `[${['1', '1', '1', '2', '2', '1', '3'].map((g, i) => tunnel(`10.0.${i}.0/26`, `172.20.0.${g}`)).join(',')}]`,
    'shaped routes with a bad prefsrc': `[${Array.from({length: 5}, (_, i) => r({dst: `10.0.${i}.1`, dev: 'lo', prefsrc: i === 4 ? '10.0.0.x' : '10.0.0.1'})).join(',')}]`,
    'a shaped route with a duplicate key': `[${many},${tunnel('10.0.9.0/26', '172.20.0.1').replace('"dst":', '"dst":"10.0.8.0/24","dst":')}]`,
    'gateway and a bad via': `[{"dst":"10.0.0.0/8","gateway":"10.1.1.1","via":5},{"dst":"10.0.0.0/8","via":{"family":"inet6","host":"fe80::1"},"gateway":"10.1.1.1"}]`,
    'via without host': '[{"dst":"10.0.0.0/8","via":{"family":"inet6"}}]',
    'numbers the scanner leaves to JSON.parse': '[{"dst":"10.0.0.0/8","metric":1e3},{"dst":"10.0.0.0/8","metric":12345678901234567890},{"dst":"10.0.0.0/8","table":4000000000}]',
    // past a run of routes that fit no shape the scanner stops keeping shapes for a while, then recovers
    'a long run of routes of shapes of their own, then one shape, then more of their own': `[${[
      ...Array.from({length: 150}, (_, i) => tunnel(`10.1.${i}.0/26`, `172.20.${i % 3}.1`).replace('tunl0', `cali${i}`)),
      ...Array.from({length: 100}, (_, i) => tunnel(`10.2.${i}.0/26`, `172.20.${i % 3}.1`)),
      ...Array.from({length: 70}, (_, i) => tunnel(`10.3.${i}.0/26`, '172.20.0.1').replace('bird', `proto${i}`)),
    ].join(',')}]`,
    'shaped routes with metrics of their own': `[${['32', '0', '1024', '4294967295', '999999999999999', '32'].map((m, i) => tunnel(`10.0.${i}.0/26`, '172.20.0.1').replace('"metric":32', `"metric":${m}`)).join(',')}]`,
    'a shaped route with a metric JSON.parse must read': `[${['32', '33', '34', '1000000000000000', '35', '3.5', '36', '1e2', '37', '-1', '38'].map((m, i) => tunnel(`10.0.${i}.0/26`, '172.20.0.1').replace('"metric":32', `"metric":${m}`)).join(',')}]`,
    'integers past 2^53': '[{"dst":"10.0.0.0/8","metric":8489033807282578010,"table":8489033807282578010},{"dst":"10.0.0.0/8","metric":9007199254740993}]',
    'a leading zero': '[{"dst":"10.0.0.0/8","metric":032}]',
    'bad JSON inside a value the model ignores': `[${many},{"dst":"10.0.0.0/8","metrics":[{"mtu":}]}]`,
    'bad JSON inside a list the model ignores': `[${many},{"dst":"10.0.0.0/8","cache":["a",]}]`,
    'a negative metric': '[{"dst":"10.0.0.0/8","metric":-1}]',
    'a raw control character in a string': '[{"dst":"10.0.0.0/8","dev":"a\u0001b"}]',
    'a raw tab between tokens': '[{"dst":"10.0.0.0/8",\t"dev":"eth0"}]',
    // a newline makes the file multi-line: later routes are on later lines
    'a newline between tokens of an element': `[{"dst":"10.0.0.0/8",\n"dev":"eth0"},${many}]`,
    'a newline between elements': `[${many},\n${many}]`,
    'a newline before the end': `[${many}\n]`,
    'a string value where a route belongs': `[${many},"x"]`,
    'trailing garbage': `[${many}]x`,
    'a comma before the end': `[${many},]`,
    'an unterminated array': `[${many}`,
    'two arrays on one line': `[${many}][${many}]`,
    'a control character before the array': `\u0001[${many}]`,
    'a byte order mark': `\uFEFF[${many}]`,
    'a newline before the array': `\n[${many}]`,
    'nested unknown values': `[${many},${tunnel('10.0.9.0/26', '172.20.0.1').replace('"flags"', '"metrics":[{"mtu":1400}],"encap":{"type":"ip"},"flags"')}]`,
    'missing dst': '[{"gateway":"10.1.1.1","dev":"eth0"}]',
    'empty object': '[{}]',
    'null flags': '[{"dst":"10.0.0.0/8","flags":null}]',
    'a next hop that is not an object': '[{"dst":"10.0.0.0/8","nexthops":[1]}]',
    'an empty next-hop list': '[{"dst":"10.0.0.0/8","dev":"eth0","nexthops":[]}]',
    'an unknown type': `[${many},${tunnel('10.0.9.0/26', '172.20.0.1').replace('unicast', 'bogus')}]`,
  }
  for (const [name, text] of Object.entries(cases)) {
    it(name, () => checkText(text, 64))
  }

  it('a scanned route whose next hops it knows reuses buildRoute\'s shared list', () => {
    const text = `[${many},${many}]`
    const routes = scanIpRouteJson(text)!
    expect(routes[0].nexthops).not.toBe(routes[1].nexthops) // another gateway
    expect(routes[0].nexthops).toBe(routes[2].nexthops)
    expect(routes[10].nexthops).toBe(routes[0].nexthops)
    expect(Object.isFrozen(routes[10].nexthops)).toBe(true)
    expect(routes[10].flags).toEqual(['onlink'])
    expect(routes[10].flags).not.toBe(routes[0].flags)
  })
})

describe('scanIpRouteJson on full tables and fixtures', () => {
  it('a ~5 MB table in the shapes of a BIRD node: scanned, and equal to the generic path in pieces', () => {
    const routes: Array<Record<string, unknown>> = []
    for (let i = 0; i < 30_000; i++) {
      const dst = `10.${(i >> 10) & 255}.${(i >> 2) & 255}.${(i & 3) * 64}/26`
      if (i % 5 === 0) routes.push(JSON.parse(ecmpRoute(dst)) as Record<string, unknown>)
      else if (i % 97 === 0) routes.push({type: 'blackhole', dst, table: 'main', protocol: 'bird', scope: 'global', metric: 32, flags: []})
      else if (i % 89 === 0) routes.push({type: 'unicast', dst: `fd00:${i.toString(16)}::/64`, via: {family: 'inet', host: '172.20.0.1'}, dev: 'eth0', table: 'main', protocol: 'bird', metric: 1024, flags: [], pref: 'medium'})
      else routes.push({type: 'unicast', dst, gateway: `172.20.${i % 10}.${10 + (i % 25)}`, dev: 'tunl0', table: 'main', protocol: 'bird', scope: 'global', metric: 32, flags: ['onlink']})
    }
    const text = `${JSON.stringify(routes)}\n`
    expect(text.length).toBeGreaterThan(2 * (1 << 20)) // the generic path reads it in pieces
    const fast = scanIpRouteJson(text)
    expect(fast).toBeDefined()
    expectSame(fast!, parseIpRouteJsonGeneric(text))
  })

  for (const folder of foldersWith(FILE)) {
    it(`fixture ${folder}`, () => checkText(fixture(folder, FILE), 256))
  }
  for (const [folder, file] of [['kernel-extra', 'ip-j-route.json'], ['kernel-extra', 'ip-6-j-d-route.json'], ['kernel-extra', 'ip-j-p-d-route.json']]) {
    it(`fixture ${folder}/${file}`, () => checkText(fixture(folder, file), 256))
  }
})

function ecmpRoute(dst: string): string {
  return JSON.stringify({type: 'unicast', dst, table: 'main', protocol: 'bird', scope: 'global', metric: 32, flags: [], nexthops: [
    {gateway: '172.31.11.1', dev: 'eth0', weight: 1, flags: []}, {gateway: '172.31.12.1', dev: 'eth1', weight: 1, flags: []},
  ]})
}

describe('scanIpRouteJson once buildRoute\'s caches are full', () => {
  // last in this file: it fills the module's caches for whatever runs after it
  it('shares next-hop lists exactly where the generic path does', () => {
    let probes = 0
    // full: the same new gateway twice gets two lists
    const full = () => {
      const text = JSON.stringify([{dst: '10.0.0.0/8', gateway: `198.18.${probes >> 8}.${probes++ & 255}`, dev: 'eth0'}])
      return parseIpRouteJsonGeneric(text)[0].nexthops !== parseIpRouteJsonGeneric(text)[0].nexthops
    }
    for (let chunk = 0; chunk < 50 && !full(); chunk++) {
      parseIpRouteJsonGeneric(JSON.stringify(Array.from({length: 10_000}, (_, i) => ({dst: '10.0.0.0/8', gateway: `100.${chunk}.${i >> 8}.${i & 255}`, dev: 'eth0'}))))
    }
    expect(full()).toBe(true)
    const text = `[${['1', '1', '1', '2', '1', '2', '2'].map((g, i) => JSON.stringify({dst: `10.0.${i}.0/26`, gateway: `198.19.0.${g}`, dev: 'tunl0', flags: ['onlink']})).join(',')}]`
    const fast = scanIpRouteJson(text)!
    const generic = parseIpRouteJsonGeneric(text)
    expect(JSON.stringify(fast)).toBe(JSON.stringify(generic))
    const sharing = (routes: KernelRoute[]) => routes.map((r) => routes.findIndex((o) => o.nexthops === r.nexthops))
    expect(sharing(fast)).toEqual(sharing(generic))
  })
})
