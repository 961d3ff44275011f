// Property tests: whatever the input, a parser returns a result or throws a ParseError, never anything else.
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {ParseError} from '../../src/model/errors.js'
import {parseBirdConf} from '../../src/parse/bird-conf.js'
import {removeBirdPasswords as stripBgpPasswords} from '../../src/bundle/redact.js'
import {parseIpAddrJson} from '../../src/parse/ip-addr.js'
import {parseIpLinkJson, parseIpLinkText} from '../../src/parse/ip-link.js'
import {parseIpNeighJson} from '../../src/parse/ip-neigh.js'
import {parseIpRouteJson} from '../../src/parse/ip-route-json.js'
import {parseIpRouteText} from '../../src/parse/ip-route-text.js'
import {parseIpRule} from '../../src/parse/ip-rule.js'
import {parseIpPools} from '../../src/parse/ippools.js'
import {parseSysctl} from '../../src/parse/sysctl.js'
import {fixture, foldersWith} from './helpers.js'

const RUNS = 300

/** Runs `parse`; true when it returned or threw a ParseError. Anything else fails the property. */
function onlyParseError(parse: (text: string) => unknown) {
  return (text: string): boolean => {
    try {
      parse(text)
      return true
    } catch (error) {
      if (error instanceof ParseError) return true
      throw error
    }
  }
}

const parsers: Record<string, (text: string) => unknown> = {
  parseIpRouteText: (t) => parseIpRouteText(t),
  parseIpRouteJson: (t) => parseIpRouteJson(t),
  parseIpLinkJson: (t) => parseIpLinkJson(t),
  parseIpLinkText: (t) => parseIpLinkText(t),
  parseIpAddrJson: (t) => parseIpAddrJson(t),
  parseIpNeighJson: (t) => parseIpNeighJson(t),
  parseIpRule: (t) => parseIpRule(t),
  parseSysctl: (t) => parseSysctl(t),
  parseIpPools: (t) => parseIpPools(t, 'ippools.yaml'),
  parseBirdConf: (t) => parseBirdConf(t),
}

// Real lines to mix with garbage: every line of every text fixture.
const TEXT_FILES = ['ip-d-route.txt', 'ip-route.txt', 'ip-6-d-route.txt', 'ip-d-link.txt', 'ip-rule.txt', 'sysctl.txt', 'bird.conf', 'ippools.yaml']
const realLines = [
  ...new Set(TEXT_FILES.flatMap((f) => foldersWith(f).flatMap((d) => fixture(d, f).split('\n')))),
  '\tnexthop via inet6 fe80::1 dev eth0 weight 1 onlink',
  'default via inet6 fe80::1 dev eth0',
  'unreachable 10.0.0.0/8 proto 80 metric 4294967295',
  '  krt_tunnel = "tunl0";',
  'if ( net ~ [ 10.0.0.0/8{26,32} ] ) then {',
]
const TOKENS = ['via', 'inet6', 'inet', 'dev', 'table', 'proto', 'metric', 'nexthop', 'weight', 'onlink', 'default', '10.0.0.0/8', 'fe80::1', '1000', 'x', '{', '}', ';', '"', '#', '/*', '=', ':', '-', '[', ']', '\t', '  ']

const mutatedLine = fc.oneof(
  fc.constantFrom(...realLines),
  fc.string(),
  fc.array(fc.constantFrom(...TOKENS), {maxLength: 12}).map((t) => t.join(' ')),
  fc
    .tuple(fc.constantFrom(...realLines), fc.nat(), fc.string({maxLength: 5}))
    .map(([l, at, s]) => l.slice(0, at % (l.length + 1)) + s),
)
const lineMix = fc
  .tuple(fc.array(mutatedLine, {maxLength: 25}), fc.constantFrom('\n', '\r\n'), fc.boolean())
  .map(([lines, eol, trailing]) => lines.join(eol) + (trailing ? eol : ''))

// JSON shaped like ip output, with wrong types and garbage sprinkled in
const KEYS = ['type', 'dst', 'gateway', 'via', 'dev', 'table', 'protocol', 'scope', 'metric', 'flags', 'nexthops', 'weight', 'family', 'host', 'ifindex', 'ifname', 'mtu', 'operstate', 'linkinfo', 'info_kind', 'addr_info', 'local', 'prefixlen', 'lladdr', 'state', 'prefsrc', 'tos']
const jsonLeaf = fc.oneof(fc.constantFrom('default', '10.0.0.0/8', 'fe80::1', '1.2.3.4', 'main', '1000', 'inet6', 'unreachable', 'onlink', 'eth0'), fc.string(), fc.integer(), fc.boolean(), fc.constant(null))
const ipJson = fc.letrec((tie) => ({
  value: fc.oneof({depthSize: 'small'}, jsonLeaf, tie('object'), fc.array(tie('value'), {maxLength: 3})),
  object: fc.dictionary(fc.constantFrom(...KEYS), tie('value'), {maxKeys: 8}),
}))
const ipJsonText = fc
  .tuple(fc.array(ipJson.object, {maxLength: 5}), fc.boolean())
  .map(([a, pretty]) => JSON.stringify(a, null, pretty ? 2 : undefined))

describe('no parser throws anything but ParseError', () => {
  for (const [name, parse] of Object.entries(parsers)) {
    it(`${name}: random strings`, () => {
      fc.assert(fc.property(fc.string({unit: 'binary', maxLength: 400}), onlyParseError(parse)), {numRuns: RUNS})
    })
    it(`${name}: random mixes of real and broken lines`, () => {
      fc.assert(fc.property(lineMix, onlyParseError(parse)), {numRuns: RUNS})
    })
    it(`${name}: random JSON`, () => {
      fc.assert(fc.property(fc.oneof(ipJsonText, fc.json()), onlyParseError(parse)), {numRuns: RUNS})
    })
  }
})

describe('bird.conf never throws at all', () => {
  it('on random text and line mixes', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({unit: 'binary', maxLength: 400}), lineMix), (text) => {
        const c = parseBirdConf(text)
        return Array.isArray(c.pools) && c.pools.every((p) => p.mode === 'ipip' && p.origin === 'bird.conf')
      }),
      {numRuns: RUNS},
    )
  })

  it('stripBgpPasswords leaves no password value behind', () => {
    fc.assert(
      fc.property(fc.string({maxLength: 60}), fc.string({maxLength: 20}).filter((s) => !/["\\\n]/.test(s)), (pre, secret) => {
        const out = stripBgpPasswords(`${pre}\nprotocol bgp p { password "${secret}"; }`)
        return out.endsWith('protocol bgp p { password "<removed>"; }')
      }),
      {numRuns: RUNS},
    )
  })
})

describe('route text feeding is line-order faithful', () => {
  it('splitting a valid file anywhere between routes gives the same routes', () => {
    const text = fixture('kernel-extra', 'ip-d-route.txt')
    const whole = parseIpRouteText(text)
    fc.assert(
      fc.property(fc.nat(whole.length), (k) => {
        const cut = k === whole.length ? text.split('\n').length - 1 : whole[k].pos.line - 1
        const lines = text.split('\n')
        const a = parseIpRouteText(lines.slice(0, cut).join('\n'))
        const b = parseIpRouteText(lines.slice(cut).join('\n'))
        expect([...a, ...b].map((r) => r.dst)).toEqual(whole.map((r) => r.dst))
      }),
      {numRuns: 50},
    )
  })
})
