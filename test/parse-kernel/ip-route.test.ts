import {describe, expect, it} from 'vitest'

import {ParseError} from '../../src/model/errors.js'
import {parseIpRouteJson} from '../../src/parse/ip-route-json.js'
import {IpRouteTextParser, parseIpRouteText} from '../../src/parse/ip-route-text.js'
import {fixture, foldersWith, withoutPos} from './helpers.js'

const routeFolders = foldersWith('ip-d-route.txt', 'ip-j-d-route.json')

describe('ip route: text and JSON give the same model on every fixture', () => {
  it('finds the lab snapshots and kernel-extra', () => {
    expect(routeFolders).toContain('kernel-extra')
    expect(routeFolders.length).toBeGreaterThanOrEqual(5)
  })

  for (const folder of routeFolders) {
    it(folder, () => {
      const json = parseIpRouteJson(fixture(folder, 'ip-j-d-route.json'))
      const text = parseIpRouteText(fixture(folder, 'ip-d-route.txt'))
      expect(json.length).toBeGreaterThan(0)
      expect(withoutPos(text)).toEqual(withoutPos(json))
      // every text route cites its own header line, and continuation lines extend the range
      const lines = fixture(folder, 'ip-d-route.txt').split('\n')
      for (const r of text) {
        expect(r.pos.file).toBe('ip-d-route.txt')
        expect(lines[r.pos.line - 1]).toContain(r.dst.endsWith('/0') ? 'default' : r.dst.replace(/\/(32|128)$/, ''))
        expect(r.pos.endLine - r.pos.line).toBe(r.nexthops.length > 1 ? r.nexthops.length : 0)
      }
      for (const r of json) expect(r.pos).toEqual({file: 'ip-j-d-route.json', line: 1, endLine: 1})
    })
  }

  for (const folder of foldersWith('ip-6-d-route.txt', 'ip-j-d-route.json')) {
    it(`${folder}: ip -6 -d route text is the IPv6 part of the JSON`, () => {
      const six = parseIpRouteText(fixture(folder, 'ip-6-d-route.txt'), 'ip-6-d-route.txt', {family: 'inet6'})
      const json = parseIpRouteJson(fixture(folder, 'ip-j-d-route.json')).filter((r) => r.family === 'inet6')
      expect(six.every((r) => r.family === 'inet6')).toBe(true)
      expect(withoutPos(six)).toEqual(withoutPos(json))
    })
  }
})

describe('ip route: lab snapshot shapes', () => {
  it('reads the via inet6 ECMP underlay and the unreachable block (bird16-ipv6-ll-underlay-unreachable)', () => {
    const routes = parseIpRouteText(fixture('bird16-ipv6-ll-underlay-unreachable', 'ip-d-route.txt'))
    const underlay = routes.find((r) => r.dst === '172.31.20.0/23')!
    expect(underlay.family).toBe('inet')
    expect(underlay.protocol).toBe('static')
    expect(underlay.nexthops).toEqual([
      {gateway: {family: 'inet6', address: 'fe80::cc8:e4ff:fe4d:75ac'}, dev: 'eth0', weight: 1, flags: []},
      {gateway: {family: 'inet6', address: 'fe80::9c34:4cff:fe36:3413'}, dev: 'eth1', weight: 1, flags: []},
    ])
    const block = routes.find((r) => r.dst === '192.168.110.128/26')!
    expect(block).toMatchObject({type: 'unreachable', protocol: 'bird', table: 'main', tableId: 254, nexthops: []})
    const local = routes.filter((r) => r.table === 'local')
    expect(local.every((r) => r.tableId === 255)).toBe(true)
    expect(routes.find((r) => r.dst === '192.168.162.129/32')!.nexthops).toEqual([{dev: 'calif2ae67c76cf', weight: 1, flags: []}])
  })

  it('reads BIRD 2 ECMP blocks with metric 32 (bird2-ecmp-not-tunneled)', () => {
    const routes = parseIpRouteJson(fixture('bird2-ecmp-not-tunneled', 'ip-j-d-route.json'))
    const lb = routes.find((r) => r.dst === '192.168.200.10/32')!
    expect(lb.metric).toBe(32)
    expect(lb.nexthops.map((n) => n.gateway?.address)).toEqual(['172.31.11.1', '172.31.12.1'])
    expect(routes.find((r) => r.dst === '192.168.162.128/26')!.type).toBe('blackhole')
  })
})

describe('ip route: kernel-extra (captured in a scratch namespace)', () => {
  const json = parseIpRouteJson(fixture('kernel-extra', 'ip-j-d-route.json'))
  const byDst = (dst: string, table = 'main') => json.find((r) => r.dst === dst && r.table === table)!

  it('ip -j route (defaults omitted) and ip route text equal the -d forms', () => {
    expect(withoutPos(parseIpRouteJson(fixture('kernel-extra', 'ip-j-route.json')))).toEqual(withoutPos(json))
    expect(withoutPos(parseIpRouteText(fixture('kernel-extra', 'ip-route.txt')))).toEqual(withoutPos(json))
  })

  it('ip -6 JSON and text agree', () => {
    const j6 = parseIpRouteJson(fixture('kernel-extra', 'ip-6-j-d-route.json'), 'ip-6-j-d-route.json', {family: 'inet6'})
    const t6 = parseIpRouteText(fixture('kernel-extra', 'ip-6-d-route.txt'), 'ip-6-d-route.txt', {family: 'inet6'})
    expect(withoutPos(t6)).toEqual(withoutPos(j6))
    expect(j6.find((r) => r.table === '201')).toMatchObject({dst: '::/0', family: 'inet6', nexthops: [{dev: 'v0'}]})
  })

  it('tables above 255, and by name', () => {
    expect(byDst('10.98.0.0/16', '4000000000')).toMatchObject({tableId: 4000000000, metric: 100})
    expect(byDst('0.0.0.0/0', '300').tableId).toBe(300)
    expect(byDst('0.0.0.0/0', '202')).toMatchObject({family: 'inet', nexthops: [{dev: 'v0', weight: 1, flags: []}]})
  })

  it('route types without next hops', () => {
    expect(byDst('10.99.0.0/16', '1000')).toMatchObject({type: 'throw', nexthops: []})
    expect(byDst('192.168.86.0/26', '1000')).toMatchObject({type: 'blackhole', nexthops: []})
    expect(byDst('192.168.84.0/26')).toMatchObject({type: 'unreachable', protocol: 'bird', nexthops: []})
    expect(byDst('192.168.85.0/26')).toMatchObject({type: 'prohibit', nexthops: []})
    // IPv6 unreachable is printed with `dev lo`, which is not a next hop
    expect(byDst('2001:db8:a::/64')).toMatchObject({type: 'unreachable', family: 'inet6', metric: 1024, nexthops: []})
  })

  it('protocols by number and by name, tos', () => {
    expect(byDst('192.168.83.0/26').protocol).toBe('80')
    expect(byDst('10.94.0.0/16')).toMatchObject({protocol: 'bgp', metric: 4294967295})
    expect(byDst('10.91.0.0/16', '1000')).toMatchObject({tos: '0x10', protocol: 'static', metric: 5})
  })

  it('onlink via tunl0, via inet6 onlink, dead/linkdown per next hop, weights', () => {
    expect(byDst('192.168.82.0/26')).toMatchObject({
      flags: ['onlink'],
      nexthops: [{gateway: {family: 'inet6', address: 'fe80::5'}, dev: 'tunl0', weight: 1, flags: ['onlink']}],
    })
    const single = byDst('192.168.110.128/26')
    expect(single.flags).toEqual(['onlink', 'linkdown'])
    expect(single.nexthops[0].flags).toEqual(['onlink', 'linkdown'])
    const multi = byDst('192.168.200.10/32')
    expect(multi.flags).toEqual(['linkdown'])
    expect(multi.nexthops.map((n) => [n.gateway?.address, n.dev, n.flags])).toEqual([
      ['10.250.20.5', 'tunl0', ['onlink', 'linkdown']],
      ['10.250.30.6', 'tunl0', ['onlink', 'linkdown']],
    ])
    expect(byDst('10.250.20.0/23').nexthops.map((n) => [n.weight, n.flags])).toEqual([[3, []], [1, ['dead', 'linkdown']]])
    expect(byDst('10.95.0.0/16').nexthops).toEqual([
      {dev: 'v0', weight: 1, flags: []},
      {dev: 'w0', weight: 1, flags: ['dead', 'linkdown']},
    ])
  })

  it('pretty-printed JSON: each route cites the lines of its object', () => {
    const text = fixture('kernel-extra', 'ip-j-p-d-route.json')
    const pretty = parseIpRouteJson(text)
    expect(withoutPos(pretty)).toEqual(withoutPos(json))
    const lines = text.split('\n')
    for (const r of pretty) {
      expect(r.pos.endLine).toBeGreaterThan(r.pos.line)
      const object = lines.slice(r.pos.line - 1, r.pos.endLine).join('\n')
      expect(object).toMatch(/"dst": "[^"]+"/)
    }
    expect(new Set(pretty.map((r) => r.pos.line)).size).toBe(pretty.length)
  })
})

describe('ip route text: hand-written edge cases', () => {
  it('CRLF and a missing trailing newline', () => {
    const text = 'default via 10.0.0.1 dev eth0 proto dhcp src 10.0.0.5 metric 100\r\n10.0.0.0/24 dev eth0 proto kernel scope link src 10.0.0.5 metric 100'
    const routes = parseIpRouteText(text)
    expect(routes).toHaveLength(2)
    expect(routes[0]).toMatchObject({dst: '0.0.0.0/0', protocol: 'dhcp', prefsrc: '10.0.0.5', metric: 100, table: 'main', type: 'unicast', scope: 'global'})
    expect(routes[1]).toMatchObject({dst: '10.0.0.0/24', scope: 'link', pos: {line: 2, endLine: 2}})
  })

  it('multipath with via inet6 ... onlink, blank lines and unknown words', () => {
    const text = [
      '192.168.1.0/26 proto bird metric 32 ',
      '\tnexthop via inet6 fe80::1 dev eth0 weight 2 onlink ',
      '\tnexthop via 172.31.20.5 dev tunl0 weight 1 onlink pervasive',
      '',
      'unicast 10.1.0.0/16 via 10.0.0.1 dev eth0 table 300 proto 80 scope global mtu lock 1400 advmss 1360 rt_offload somethingnew',
      'anycast 10.2.0.0 dev eth0 table local proto kernel scope link',
      'multicast ff00::/8 dev eth0 table local proto kernel metric 256 pref medium',
      'nat 10.3.0.0/16 table main',
    ].join('\n')
    const routes = parseIpRouteText(text)
    expect(routes.map((r) => r.type)).toEqual(['unicast', 'unicast', 'anycast', 'multicast', 'nat'])
    expect(routes[0].nexthops).toEqual([
      {gateway: {family: 'inet6', address: 'fe80::1'}, dev: 'eth0', weight: 2, flags: ['onlink']},
      {gateway: {family: 'inet', address: '172.31.20.5'}, dev: 'tunl0', weight: 1, flags: ['onlink', 'pervasive']},
    ])
    expect(routes[0].pos).toEqual({file: 'ip-d-route.txt', line: 1, endLine: 3})
    expect(routes[1]).toMatchObject({table: '300', tableId: 300, protocol: '80', flags: ['rt_offload'], pos: {line: 5, endLine: 5}})
    expect(routes[3].family).toBe('inet6')
  })

  it('default routes: family from the gateway, via inet6, pref, or the option', () => {
    expect(parseIpRouteText('default via fe80::1 dev eth0 metric 1024')[0].dst).toBe('::/0')
    const v4overv6 = parseIpRouteText('default via inet6 fe80::1 dev eth0 onlink')[0]
    expect(v4overv6).toMatchObject({family: 'inet', dst: '0.0.0.0/0', nexthops: [{gateway: {family: 'inet6', address: 'fe80::1'}, flags: ['onlink']}]})
    expect(parseIpRouteText('default dev wg0 table 51820 metric 1024 pref medium')[0].dst).toBe('::/0')
    expect(parseIpRouteText('default dev wg0 table 51820')[0].dst).toBe('0.0.0.0/0')
    expect(parseIpRouteText('default dev wg0 table 51820', 'x', {family: 'inet6'})[0].dst).toBe('::/0')
    expect(parseIpRouteText('unreachable default dev lo proto kernel metric 4294967295 error -101 pref medium')[0]).toMatchObject({
      family: 'inet6', type: 'unreachable', nexthops: [], metric: 4294967295,
    })
  })

  it('unknown table names get tableId -1; default table is 253', () => {
    const [a, b] = parseIpRouteText('10.0.0.0/8 dev eth0 table calico\n10.1.0.0/16 dev eth0 table default\n')
    expect([a.table, a.tableId, b.tableId]).toEqual(['calico', -1, 253])
  })

  it('empty input gives no routes', () => {
    expect(parseIpRouteText('')).toEqual([])
    expect(parseIpRouteText('\n\n')).toEqual([])
  })

  it('bad input is a ParseError naming file, line and what was expected', () => {
    const cases: Array<[string, number, RegExp]> = [
      ['10.0.0.0/8 dev eth0\n\tnexthop via bogus dev eth0', 1, /gateway address/],
      ['\tnexthop via 10.0.0.1 dev eth0', 1, /route line before/],
      ['10.0.0.0/8 dev eth0\nhello world', 2, /route destination/],
      ['10.0.0.0/8 dev eth0 metric x', 1, /number after "metric"/],
      ['10.0.0.0/8 dev', 1, /value after "dev"/],
      ['10.0.0.0/99 dev eth0', 1, /route destination/],
      ['blackhole', 1, /destination/],
    ]
    for (const [text, line, expected] of cases) {
      let error: unknown
      try {
        parseIpRouteText(text, 'r.txt')
      } catch (e) {
        error = e
      }
      expect(error, text).toBeInstanceOf(ParseError)
      expect((error as ParseError).file).toBe('r.txt')
      expect((error as ParseError).line, text).toBe(line)
      expect((error as ParseError).message, text).toMatch(expected)
    }
  })

  it('a nexthop line with neither dev nor via, or with a word ip never prints there, is refused', () => {
    const expected = 'expected a next hop "nexthop via GW dev IF" or "nexthop dev IF"'
    const cases: Array<[string, string]> = [
      ['\tnexthop blah blah', 'nexthop blah blah'],
      ['\tnexthop weight 1', 'nexthop weight 1'],
      ['\tnexthop onlink', 'nexthop onlink'],
      ['\tnexthop via 10.1.0.1 dev eth0 weight 1 bogus', 'nexthop via 10.1.0.1 dev eth0 weight 1 bogus'],
      ['\tnexthop dev eth0 frobnicate 3', 'nexthop dev eth0 frobnicate 3'],
    ]
    for (const [line, found] of cases) {
      expect(() => parseIpRouteText(`10.0.0.0/24 proto bird\n\tnexthop via 10.1.0.2 dev eth1 weight 1\n${line}`, 'r.txt'), line)
        .toThrow(new ParseError('r.txt', 3, expected.slice('expected '.length), found))
    }
  })

  it('accepts every word iproute2 prints on a nexthop line', () => {
    const text = [
      '10.0.0.0/24 proto bird',
      '\tnexthop via 10.1.0.1 dev eth0 weight 1 dead linkdown',
      '\tnexthop via inet6 fe80::1 dev eth1 weight 2 onlink pervasive offload rt_offload trap',
      '\tnexthop dev eth2 weight 1 realms 1/2',
      '\tnexthop via 10.1.0.3 weight 1',
      '\tnexthop encap mpls 200/300 via 10.1.0.4 dev eth3 weight 1 unresolved',
      '\tnexthop as to 100 via 10.1.0.5 dev eth3 weight 1 src 10.0.0.9 realm 3',
    ].join('\n')
    const [route] = parseIpRouteText(text, 'r.txt')
    expect(route.nexthops.map((n) => [n.gateway?.address, n.dev, n.weight, n.flags])).toEqual([
      ['10.1.0.1', 'eth0', 1, ['dead', 'linkdown']],
      ['fe80::1', 'eth1', 2, ['onlink', 'pervasive', 'offload', 'rt_offload', 'trap']],
      [undefined, 'eth2', 1, []],
      ['10.1.0.3', undefined, 1, []],
      ['10.1.0.4', 'eth3', 1, ['unresolved']],
      ['10.1.0.5', 'eth3', 1, []],
    ])
  })

  it('the line-fed core emits a route when the next header or the end arrives', () => {
    const parser = new IpRouteTextParser('stream.txt')
    expect(parser.feed('10.0.0.0/24 proto bird', 1)).toBeUndefined()
    expect(parser.feed('\tnexthop via 10.1.0.1 dev eth0 weight 1', 2)).toBeUndefined()
    expect(parser.feed('\tnexthop via 10.1.0.2 dev eth1 weight 1', 3)).toBeUndefined()
    const first = parser.feed('blackhole 10.9.0.0/16 proto bird', 4)
    expect(first).toMatchObject({dst: '10.0.0.0/24', pos: {file: 'stream.txt', line: 1, endLine: 3}})
    expect(first!.nexthops).toHaveLength(2)
    expect(parser.end()).toMatchObject({dst: '10.9.0.0/16', type: 'blackhole', pos: {line: 4, endLine: 4}})
    expect(parser.end()).toBeUndefined()
    expect(parser.result().map((r) => r.dst)).toEqual(['10.0.0.0/24', '10.9.0.0/16'])
  })
})

describe('ip route JSON: hand-written edge cases', () => {
  it('accepts [] and empty text', () => {
    expect(parseIpRouteJson('[]')).toEqual([])
    expect(parseIpRouteJson('')).toEqual([])
    expect(parseIpRouteJson('  \n')).toEqual([])
  })

  it('applies the defaults ip -j omits and reads via/gateway/nexthops', () => {
    const routes = parseIpRouteJson(
      JSON.stringify([
        {dst: 'default', gateway: '10.0.0.1', dev: 'eth0', protocol: 'dhcp', metric: 100, flags: []},
        {dst: '10.96.0.0/24', via: {family: 'inet6', host: '2001:db8::5'}, dev: 'tunl0', flags: ['onlink', 'linkdown']},
        {type: 'unreachable', dst: '192.168.1.0/26', protocol: 'bird', flags: []},
        {dst: '10.99.0.0/24', table: '1000', protocol: 'static', flags: ['linkdown'], nexthops: [
          {gateway: '192.0.2.1', dev: 'tunl0', weight: 3, flags: ['onlink', 'linkdown']},
          {via: {family: 'inet6', host: 'FE80::0:1'}, dev: 'tunl0', weight: 1, flags: ['onlink']},
        ]},
        {dst: '192.168.162.129', dev: 'cali1', scope: 'link', flags: []},
      ]),
    )
    expect(routes[0]).toMatchObject({dst: '0.0.0.0/0', type: 'unicast', table: 'main', tableId: 254, scope: 'global', protocol: 'dhcp', metric: 100})
    expect(routes[1]).toMatchObject({family: 'inet', protocol: 'boot', nexthops: [{gateway: {family: 'inet6', address: '2001:db8::5'}, flags: ['onlink', 'linkdown']}]})
    expect(routes[2].nexthops).toEqual([])
    expect(routes[3]).toMatchObject({tableId: 1000, flags: ['linkdown']})
    expect(routes[3].nexthops[1].gateway).toEqual({family: 'inet6', address: 'fe80::1'})
    expect(routes[4].dst).toBe('192.168.162.129/32')
  })

  it('accepts arrays printed back to back (ip -4 -j ...; ip -6 -j ...)', () => {
    const six = fixture('kernel-extra', 'ip-6-j-d-route.json').trim()
    const one = parseIpRouteJson(six, 'x.json', {family: 'inet6'})
    const both = parseIpRouteJson(`${six}\n${six}\n`, 'x.json', {family: 'inet6'})
    expect(withoutPos(both)).toEqual(withoutPos([...one, ...one]))
    expect(both[0].pos.line).toBe(1)
    expect(both.at(-1)!.pos.line).toBe(2)
    expect(() => parseIpRouteJson('[]\n[', 'x.json')).toThrow(ParseError)
    expect(() => parseIpRouteJson('[] {}', 'x.json')).toThrow(ParseError)
  })

  it('invalid JSON and wrong shapes are ParseErrors with the line', () => {
    const bad: Array<[string, number, RegExp]> = [
      ['[{"dst": "10.0.0.0/8"},\n{"dst": }]', 2, /JSON array of routes/],
      ['{"dst": "10.0.0.0/8"}', 1, /JSON array of routes/],
      ['[1]', 1, /route object/],
      ['[{"gateway": "10.0.0.1"}]', 1, /"dst"/],
      ['[{"dst": "10.0.0.0/8", "metric": "x"}]', 1, /"metric" to be a number/],
      ['[{"dst": "10.0.0.0/8", "nexthops": [{"gateway": 5}]}]', 1, /"gateway" to be a string/],
      ['[{"dst": "10.0.0.0/8", "type": "weird"}]', 1, /route type/],
      ['[\n{"dst": "10.0.0.0/8"},\n{"dst": "x"}\n]', 3, /route destination/],
      ['[\n{"dst": ]\n,\n{}\n]', 2, /invalid JSON.*found "]"/],
      ['[\n{"dst": "10.0.0.0/8"}', 2, /found "end of file"/],
      ['['.repeat(200000), 1, /invalid JSON/],
    ]
    for (const [text, line, expected] of bad) {
      let error: unknown
      try {
        parseIpRouteJson(text, 'r.json')
      } catch (e) {
        error = e
      }
      expect(error, text).toBeInstanceOf(ParseError)
      expect((error as ParseError).message, text).toMatch(/^r\.json:\d+: expected /)
      expect((error as ParseError).line, text).toBe(line)
      expect((error as ParseError).message, text).toMatch(expected)
    }
  })
})
