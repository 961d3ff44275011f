// parseBirdRoutes handles the common lines of a whole text in place (bird-routes.ts: lineSpan and the
// helpers below), with caches keyed by text; the line-by-line stream never does. These tests hold each
// fast check to the general code it stands in for, and the whole-text parse to the stream — every
// field, the sharing of next-hop objects and lists, and the ParseError message.
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {prefixKey} from '../../src/model/prefix-key.js'
import {ParseError} from '../../src/model/errors.js'
import {canonicalAddress, canonicalPrefix} from '../../src/model/prefix.js'
import type {BirdRoute} from '../../src/model/types.js'
import {frameBirdText} from '../../src/parse/bird-framing.js'
import {parseBirdProtocols} from '../../src/parse/bird-protocols.js'
import {attributeKind, canonicalIpv4Key, parseBirdRoutes, SubstringMemo} from '../../src/parse/bird-routes.js'
import {createBirdRouteStream} from './stream.js'

const isCanonicalIpv4Prefix = (s: string, start: number, end: number): boolean => canonicalIpv4Key(s, start, end) >= 0
import {allCaptureSections, toRawSocket} from './captures.js'

/** Every own field (undefined and NaN spelled out, so they count), the attributes, frozen next hops. */
function fields(r: BirdRoute): string {
  const own: Record<string, unknown> = {
    ...r,
    attributes: r.attributes,
    frozen: Object.isFrozen(r.nexthops) && r.nexthops.every((h) => Object.isFrozen(h)),
  }
  return JSON.stringify(own, (_k, v: unknown) =>
    v === undefined ? '<undefined>' : typeof v === 'number' && Number.isNaN(v) ? '<NaN>' : v,
  )
}

/** Which routes share a next-hop list, and which next hops share an object: ids by first appearance. */
function sharing(routes: BirdRoute[]): number[] {
  const lists = new Map<unknown, number>()
  const hops = new Map<unknown, number>()
  const id = (m: Map<unknown, number>, o: unknown) => {
    if (!m.has(o)) m.set(o, m.size)
    return m.get(o)!
  }
  return routes.flatMap((r) => [id(lists, r.nexthops), ...r.nexthops.map((h) => id(hops, h)), -1])
}

type Outcome = {routes: string[]; sharing: number[]} | {error: string}

function outcome(parse: () => BirdRoute[]): Outcome {
  try {
    const routes = parse()
    return {routes: routes.map(fields), sharing: sharing(routes)}
  } catch (error) {
    if (!(error instanceof ParseError)) throw error
    return {error: error.message}
  }
}

const whole = (text: string): Outcome => outcome(() => parseBirdRoutes(text))

function streamed(text: string): Outcome {
  return outcome(() => {
    const out: BirdRoute[] = []
    const stream = createBirdRouteStream('birdc-show-route-all.txt', (r) => out.push(r))
    text.split('\n').forEach((l, i) => stream.push(l, i + 1))
    stream.end()
    return out
  })
}

describe('isCanonicalIpv4Prefix agrees with canonicalPrefix', () => {
  // zeros often, so that networks with a LEN of any form line up (a LEN with host bits is rejected anyway)
  const octet = fc.oneof(fc.constant('0'), fc.integer({min: 0, max: 255}).map(String), fc.constantFrom('256', '01', '00', '', 'x', '999', '1a', '-1'))
  const len = fc.oneof(fc.integer({min: 0, max: 33}).map(String), fc.constantFrom('08', '008', '00', '', '-1', '100', '032', '3a', '/8', '24-24'))
  const ipv4ish = fc.tuple(octet, octet, octet, octet, fc.constantFrom('/', '/', '', '//', ':')).chain(([a, b, c, d, slash]) => len.map((l) => `${a}.${b}.${c}.${d}${slash}${l}`))
  const anything = fc.oneof(ipv4ish, fc.string({unit: fc.constantFrom(...'0123456789./:-ax '), maxLength: 24}))

  it('a prefix it accepts is one canonicalPrefix returns unchanged, at any offset', () => {
    fc.assert(
      fc.property(anything, fc.string({maxLength: 4}), fc.string({maxLength: 4}), (s, before, after) => {
        const accepted = isCanonicalIpv4Prefix(s, 0, s.length)
        expect(isCanonicalIpv4Prefix(before + s + after, before.length, before.length + s.length)).toBe(accepted)
        // and its key is prefixKey's, read in place
        expect(canonicalIpv4Key(before + s + after, before.length, before.length + s.length)).toBe(
          accepted ? prefixKey(s) : -1,
        )
        if (accepted) {
          expect(s.includes('/') && !s.includes(':')).toBe(true) // what prefixOf asks before canonicalPrefix
          expect(canonicalPrefix(s, 'inet')).toBe(s)
        }
      }),
      {numRuns: 1000},
    )
  })

  it('rejects the forms canonicalPrefix rewrites or refuses', () => {
    for (const s of ['10.0.0.0/08', '0.0.0.0/00', '10.0.0.0/008', '010.0.0.0/8', '10.0.0.0/33', '10.0.0.1/8', '10.0.0.0/', '10.0.0.0', '10.0.0/8', '10.0.0.0.0/8', '1.2.3.256/32', '/8', '10.0.0.0/8/8']) {
      expect(isCanonicalIpv4Prefix(s, 0, s.length)).toBe(false)
      expect(canonicalPrefix(s, 'inet')).not.toBe(s)
    }
  })

  it('accepts every canonical network, rejects one with host bits', () => {
    fc.assert(
      fc.property(fc.integer({min: 0, max: 2 ** 32 - 1}), fc.integer({min: 0, max: 32}), (v, l) => {
        const network = l === 0 ? 0 : Math.floor(v / 2 ** (32 - l)) * 2 ** (32 - l)
        const text = (n: number) => `${[24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.')}/${l}`
        expect(isCanonicalIpv4Prefix(text(network), 0, text(network).length)).toBe(true)
        expect(canonicalIpv4Key(text(network), 0, text(network).length)).toBe(network * 64 + l)
        if (network !== v) expect(isCanonicalIpv4Prefix(text(v), 0, text(v).length)).toBe(false)
      }),
      {numRuns: 500},
    )
  })
})

describe('attributeKind tells apart exactly the attributes the parser reads', () => {
  // the names `attribute` switched on before kinds; a name in one group is the same attribute
  const groups = [['Type', 'source'], ['BGP.next_hop', 'bgp_next_hop'], ['from'], ['BGP.local_pref', 'bgp_local_pref'], ['BGP.med', 'bgp_med'], ['BGP.origin', 'bgp_origin'], ['BGP.as_path', 'bgp_path']]
  const known = new Set(groups.flat())
  const kind = (name: string) => attributeKind(`\t${name}: x`, 1, 1 + name.length)

  it('one kind per group, none shared, none zero', () => {
    const kinds = groups.map((g) => new Set(g.map(kind)))
    for (const k of kinds) expect(k.size).toBe(1)
    const all = kinds.map((k) => [...k][0])
    expect(new Set(all).size).toBe(groups.length)
    expect(all).not.toContain(0)
  })

  it('zero for every other name: near misses and arbitrary text', () => {
    const nearMiss = fc.tuple(fc.constantFrom(...known), fc.nat(), fc.constantFrom('', 'x', 'e', '.', 'P', ' '), fc.constantFrom('swap', 'drop', 'add', 'case')).map(([n, i, c, how]) => {
      const at = i % (n.length + 1)
      if (how === 'swap') return n.slice(0, at) + c + n.slice(at + 1)
      if (how === 'drop') return n.slice(0, at) + n.slice(at + 1)
      if (how === 'add') return n.slice(0, at) + c + n.slice(at)
      return n.toUpperCase()
    })
    fc.assert(
      fc.property(fc.oneof(nearMiss, fc.string({maxLength: 20}), fc.constantFrom('Kernel.scope', 'BGP.community', 'BGP.local_prex', 'BGP.local_pr')), (name) => {
        if (!known.has(name)) expect(kind(name)).toBe(0)
      }),
      {numRuns: 1000},
    )
  })
})

describe('SubstringMemo gives derive(text) for every span', () => {
  it('repeated, new and long (13+ character) texts, in any order', () => {
    fc.assert(
      fc.property(
        fc.string({unit: fc.constantFrom('a', 'b', ' '), minLength: 40, maxLength: 80}),
        fc.array(fc.tuple(fc.nat(), fc.nat({max: 20})), {maxLength: 60}),
        (src, spans) => {
          const derived: string[] = []
          const values = new SubstringMemo((t) => {
            derived.push(t)
            return {text: t, upper: t.toUpperCase()}
          })
          for (const [at, n] of spans) {
            const start = at % src.length
            const end = Math.min(src.length, start + n)
            expect(values.get(src, start, end)).toEqual({
              text: src.slice(start, end),
              upper: src.slice(start, end).toUpperCase(),
            })
          }
          expect(new Set(derived).size).toBe(derived.length) // each text derived once
        },
      ),
      {numRuns: 500},
    )
  })
})

describe('frameBirdText offers the span handler exactly the payload lines the sink would get as they are', () => {
  const line = fc.oneof(
    fc.constantFrom('', ' ', '\t', ' \t ', '\r', '>>> show route', '>>x', 'BIRD 2.0.12 ready.', 'BIRD x', 'Table master4:', '10.0.0.0/8 unicast [p 1] * (1)', '\tType: x', '\t\tcont', '  unicast [p 1] (1)', '0000 ', '1007-x'),
    fc.string({maxLength: 12}),
  )
  /** The sink's calls, and the ParseError that ended them (raw-socket input can be malformed). */
  function frame(
    text: string,
    span?: (src: string, start: number, end: number, line: number) => boolean,
  ): {calls: string[]; error?: string} {
    const calls: string[] = []
    try {
      frameBirdText(text, 'f.txt', (t, l, c) => calls.push(JSON.stringify([t, l, c])), span)
    } catch (error) {
      if (!(error instanceof ParseError)) throw error
      return {calls, error: error.message}
    }
    return {calls}
  }

  it('with the handler declining or taking every line', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(line, fc.constantFrom('', '\r')), {maxLength: 20}), (lines) => {
        const text = lines.map(([l, cr]) => l + cr).join('\n')
        const plain = frame(text)
        const offered: string[] = []
        expect(frame(text, (src, start, end, l) => {
          offered.push(JSON.stringify([src.slice(start, end), l, undefined]))
          return false
        })).toEqual(plain)
        for (const o of offered) expect(plain.calls).toContain(o)
        expect(frame(text, () => true)).toEqual({...plain, calls: plain.calls.filter((c) => !offered.includes(c))})
      }),
      {numRuns: 500},
    )
  })
})

describe('whole-text parsing equals the line-by-line stream: every field, sharing, errors', () => {
  // header parts that take each branch of the in-place header path, or make it decline
  const nets = ['10.0.0.0/8', '10.0.0.1/8', '192.168.1.0/24', '0.0.0.0/0', '1.2.3.4/32', '172.20.130.64/26', 'fd00::/64', 'fd00::1/128', '01.2.3.4/32', '1.2.3.4/08', '10.0.0.0/33', 'default', 'flow4', '10.0.0.0/24-24']
  const dests = ['unicast', 'unicast', 'blackhole', 'multipath', '', 'via 10.0.0.1 on eth0', 'dev eth0', 'mpls 1 unicast', 'uni cast', 'via']
  // two protocols whose names end in the same 12 characters share a cache slot
  const protocols = ['Mesh_172_20_9_34', 'Node_172_20_9_34', 'Mesh_172_20_8_34', 'kernel1', 'p']
  const times = ['16:50:09.431', '16:50:09.432', '2026-11-29 15:55:30', '']
  const froms = ['', '', ' from 172.20.9.34', ' from 172.20.9.35', ' from fe80::1%eth0', ' from x', ' from 1.2.3.4 from 5.6.7.8']
  const secondary = fc.constantFrom(' ', '                    ') // an indented route of the network above
  const header = fc
    .tuple(fc.oneof({weight: 4, arbitrary: fc.constantFrom(...nets)}, {weight: 1, arbitrary: secondary}), fc.constantFrom(' ', '        ', '\t', ' \t '), fc.constantFrom(...dests), fc.constantFrom(' [', '['), fc.constantFrom(...protocols), fc.constantFrom(...times), fc.constantFrom(...froms), fc.constantFrom(']', ''), fc.constantFrom(' *', ' !', '', ' ** '), fc.constantFrom(' (100/?) [i]', ' (10)', '', ' (100) ', ' \t(1)'))
    .map(([n, pad, d, open, p, t, f, close, m, i]) => `${n}${pad}${d}${open}${p} ${t}${f}${close}${m}${i}`)
  const hop = fc.constantFrom('\tvia 172.31.11.1 on eth0 weight 1', '\tvia 172.31.12.1 on eth1 weight 1', '\tvia 172.31.11.1 on eth0', '\tdev cali1', '\tvia 1.2.3.256 on eth0', '\tvia', '\tdevice: x')
  const names = ['Type', 'source', 'from', 'BGP.med', 'bgp_path', 'BGP.origin', 'BGP.as_path', 'BGP.next_hop', 'bgp_next_hop', 'BGP.local_pref', 'bgp_local_pref', 'BGP.local_prex', 'Kernel.scope', 'BGP.community']
  const values = ['BGP univ', ' BGP', '', '100', ' 100 ', 'x', '172.20.9.20', '172.20.9.20 fe80::1', 'IGP', '65000 65001', '(64512,102) (64512,1788)', 'a: b']
  const attribute = fc.tuple(fc.constantFrom(...names), fc.constantFrom(': ', ':'), fc.constantFrom(...values)).map(([n, sep, v]) => (sep === ':' ? `\t${n}:` : `\t${n}: ${v}`))
  const other = fc.constantFrom('\t\tcontinued (1,2)', 'Table master6:', '', '                     unicast [Mesh_172_20_9_34 12:00 from 1.2.3.4] (100)', '\tType: BGP univ\r', '>>> x', '\tBGP.origin', '\t: x')

  it('on generated routes', () => {
    const line = fc.oneof(
      {weight: 3, arbitrary: header},
      {weight: 2, arbitrary: hop},
      {weight: 6, arbitrary: attribute},
      {weight: 1, arbitrary: other},
    )
    const first = header.filter((h) => !h.startsWith(' '))
    fc.assert(
      fc.property(fc.constantFrom('', 'BIRD 2.0.12 ready.\n', 'BIRD 2.0.12 ready.\nTable master4:\n'), first, fc.array(line, {maxLength: 40}), (head, top, lines) => {
        const text = `${head}${top}\n${lines.join('\n')}`
        expect(whole(text)).toEqual(streamed(text))
      }),
      {numRuns: 600},
    )
  })

  it('when every route has its own time, and when peers take turns', () => {
    const routes = (n: number, time: (i: number) => string) =>
      Array.from({length: n}, (_, i) => {
        const peer = protocols[i % 3]!
        return `10.${i >> 8}.${i & 255}.0/24${' '.repeat(1 + (i % 3))}unicast [${peer} ${time(i)} from 172.20.9.${i % 3}] * (100/?) [i]\n\tvia 172.31.1${i % 2}.1 on eth${i % 2}\n\tType: BGP univ\n\tBGP.next_hop: 172.20.9.${i % 3}\n\tBGP.local_pref: 100`
      }).join('\n')
    for (const text of [routes(300, (i) => `16:50:${String(i % 60).padStart(2, '0')}.${i}`), routes(300, () => '16:50:09.431')]) {
      const got = whole(text)
      expect('routes' in got && got.routes).toHaveLength(300)
      expect(got).toEqual(streamed(text))
    }
  })

  it('on every real capture, fields and sharing included', () => {
    for (const [, , text] of allCaptureSections()) expect(whole(text)).toEqual(streamed(text))
  })
})

/**
 * Each route's next hops as the text says: the words of a 1.6 header's `via …`/`dev …`, then its TAB
 * next-hop lines. An oracle for the list the parser built, independent of it.
 */
function hopTexts(text: string, routes: BirdRoute[]): string[][] {
  const lines = text.split('\n').map((l) => l.replace(/\r$/, ''))
  return routes.map((r) => {
    const header = lines[r.pos.line - 1]!
    const dest = header.slice(header.startsWith(' ') ? 0 : header.search(/[ \t]/), header.indexOf('[')).trim().split(/[ \t]+/)
    const own = dest[0] === 'via' || dest[0] === 'dev' ? [dest.join(' ')] : []
    return [...own, ...lines.slice(r.pos.line, r.pos.endLine).filter((l) => /^\t(via|dev) /.test(l))]
  })
}

/**
 * Routes share a next-hop list exactly when their next-hop texts are the same, and a next hop exactly when its text is.
 */
function expectSharingByText(text: string, routes: BirdRoute[]): void {
  const texts = hopTexts(text, routes)
  const listOf = new Map<string, unknown>()
  const hopOf = new Map<string, unknown>()
  routes.forEach((r, i) => {
    expect(r.nexthops).toHaveLength(texts[i]!.length)
    const key = JSON.stringify(texts[i])
    if (!listOf.has(key)) listOf.set(key, r.nexthops)
    expect(r.nexthops).toBe(listOf.get(key))
    r.nexthops.forEach((h, k) => {
      if (!hopOf.has(texts[i]![k]!)) hopOf.set(texts[i]![k]!, h)
      expect(h).toBe(hopOf.get(texts[i]![k]!))
    })
  })
  expect(new Set(routes.map((r) => r.nexthops)).size).toBe(listOf.size)
  expect(new Set(routes.flatMap((r) => r.nexthops)).size).toBe(hopOf.size)
}

describe('next-hop sharing in the whole-text parse', () => {
  it('routes with the same next-hop lines share one frozen list and its objects; others do not', () => {
    const text = [
      '10.0.0.0/24 unicast [a 1] * (1)', '\tvia 10.1.0.1 on eth0', '\tvia 10.1.0.2 on eth1',
      '10.0.1.0/24 unicast [b 1] * (1)', '\tvia 10.1.0.1 on eth0',
      '10.0.2.0/24 unicast [a 1] * (1)', '\tvia 10.1.0.1 on eth0', '\tvia 10.1.0.2 on eth1',
      '10.0.3.0/24 unicast [a 1] * (1)', '\tvia 10.1.0.2 on eth1', '\tvia 10.1.0.1 on eth0',
      '10.0.4.0/24 unicast [b 1] * (1)', '\tvia 10.1.0.2 on eth1', '\tvia 10.1.0.1 on eth0',
    ].join('\n')
    const [r0, r1, r2, r3, r4] = parseBirdRoutes(text)
    expect(r2!.nexthops).toBe(r0!.nexthops)
    expect(Object.isFrozen(r0!.nexthops)).toBe(true)
    expect(r1!.nexthops).toEqual([r0!.nexthops[0]]) // its first next hop, alone
    expect(r1!.nexthops[0]).toBe(r0!.nexthops[0])
    expect(r3!.nexthops).not.toBe(r0!.nexthops) // same next hops, other order: another list
    expect(r3!.nexthops).toEqual([r0!.nexthops[1], r0!.nexthops[0]])
    expect(r3!.nexthops[0]).toBe(r0!.nexthops[1])
    expect(r4!.nexthops).toBe(r3!.nexthops)
  })

  it('on generated routes and on every real capture', () => {
    const hop = fc.constantFrom('\tvia 10.1.0.1 on eth0', '\tvia 10.1.0.1 on eth0 weight 1', '\tvia 10.1.0.2 on eth1', '\tdev cali1', '\tdev cali1 onlink')
    const route = fc.tuple(fc.nat(255), fc.constantFrom('unicast', 'via 10.1.0.1 on eth0', 'dev cali1'), fc.constantFrom('a', 'b'), fc.array(hop, {maxLength: 3}), fc.boolean())
      .map(([n, dest, p, hops, attrs]) => [`10.0.${n}.0/24 ${dest} [${p} 1] * (1)`, ...hops, ...(attrs ? ['\tType: BGP univ'] : [])].join('\n'))
    fc.assert(
      fc.property(fc.array(route, {maxLength: 30}), (routes) => {
        const text = routes.join('\n')
        expectSharingByText(text, parseBirdRoutes(text))
      }),
      {numRuns: 250},
    )
    for (const [, cmd, text] of allCaptureSections()) {
      if (!cmd.startsWith('show route') || cmd.includes('export') || cmd.includes('count')) continue
      let routes: BirdRoute[]
      try {
        routes = parseBirdRoutes(text)
      } catch {
        continue // a section that is no route listing
      }
      expectSharingByText(text, routes)
    }
  })
})

describe('decision values read from the attributes, cached by text, follow the attribute rules', () => {
  // The rules, from the attribute lines as generated: `source` and the BGP next hop from the last line that
  // gives one, the peer (`from`, BIRD 3) and the BGP decision values from the first of either name.
  const firstWord = (v: string) => v.trim().split(' ')[0]!
  const integer = (v: string) => (/^[0-9]+$/.test(v.trim()) ? Number(v.trim()) : Number.NaN)
  function expected(attrs: Array<[string, string]>, headerFrom: string | undefined) {
    const of = (...names: string[]) => attrs.filter(([n]) => names.includes(n)).map(([, v]) => v)
    const last = <T>(xs: T[]) => xs[xs.length - 1]
    return {
      source: last(of('Type', 'source').map(firstWord).filter((w) => w.length > 0)),
      bgpNextHop: last(of('BGP.next_hop', 'bgp_next_hop').map((v) => canonicalAddress(firstWord(v))).filter((a) => a !== undefined)),
      from: headerFrom ?? of('from').map((v) => canonicalAddress(v.trim())).find((a) => a !== undefined),
      localPref: of('BGP.local_pref', 'bgp_local_pref').map(integer)[0],
      med: of('BGP.med', 'bgp_med').map(integer)[0],
      origin: of('BGP.origin', 'bgp_origin').map((v) => v.trim())[0],
      asPathLength: of('BGP.as_path', 'bgp_path').map((v) => v.split(/[ \t]+/).filter((w) => w.length > 0).length)[0] ?? 0,
    }
  }
  const name = fc.constantFrom('Type', 'source', 'from', 'BGP.next_hop', 'bgp_next_hop', 'BGP.local_pref', 'bgp_local_pref', 'BGP.med', 'bgp_med', 'BGP.origin', 'bgp_origin', 'BGP.as_path', 'bgp_path', 'BGP.community', 'Kernel.scope')
  const value = fc.constantFrom('BGP univ', 'inherit univ', ' BGP', '', ' ', '100', ' 200 ', '1e2', '-1', 'x', '172.20.9.20', '172.20.9.21', '172.20.9.20 fe80::1', 'fd00:0::1', 'fe80::1%eth0', 'IGP', ' IGP ', 'Incomplete', '65000 65001', '65000\t65001 ...')
  const route = fc.tuple(fc.nat(255), fc.constantFrom('', ' from 172.20.9.9', ' from fd00:0::9'), fc.array(fc.tuple(name, value), {maxLength: 8}))

  it('on generated routes, whole text and stream alike', () => {
    fc.assert(
      fc.property(fc.array(route, {minLength: 1, maxLength: 12}), (generated) => {
        const text = generated.map(([n, from, attrs]) => [`10.0.${n}.0/24 unicast [p 12:00${from}] * (100)`, ...attrs.map(([a, v]) => `\t${a}: ${v}`)].join('\n')).join('\n')
        const out: BirdRoute[] = []
        const stream = createBirdRouteStream('f.txt', (r) => out.push(r))
        text.split('\n').forEach((l, i) => stream.push(l, i + 1))
        stream.end()
        for (const routes of [parseBirdRoutes(text), out]) {
          routes.forEach((r, i) => {
            const [, from, attrs] = generated[i]!
            const {source, bgpNextHop, localPref, med, origin, asPathLength} = r
            expect({source, bgpNextHop, from: r.from, localPref, med, origin, asPathLength}).toEqual(expected(attrs, from === '' ? undefined : canonicalAddress(from.slice(6))))
          })
        }
      }),
      {numRuns: 250},
    )
  })
})

describe('show protocols all: detail lines read in place equal the sink reading them sliced', () => {
  // birdc text has its detail lines read in place (parseBirdProtocols' inPlace); raw-socket replies hand
  // every line to the sink. The same payload lines must give the same protocols, whatever their white space.
  const piece = fc.constantFrom('Key', 'BGP state', 'a', ':', ': ', ' : ', ' ', '\t', '\u00a0', '\v', '\f', 'é', 'x: y', '12', '/', '::')
  const detailLine = fc.tuple(fc.stringMatching(/^[ \t]{1,6}$/), fc.array(piece, {minLength: 1, maxLength: 6}), fc.constantFrom('', ' ', '\t', ' \t', '\r', '\u00a0'))
    .map(([indent, body, tail]) => indent + body.join('') + tail)

  it('on generated detail lines under generated rows', () => {
    fc.assert(
      fc.property(fc.array(fc.array(detailLine, {maxLength: 12}), {minLength: 1, maxLength: 4}), (protocols) => {
        const text = protocols.map((details, i) => [`p${i}       BGP        ---        up     16:50:09.388  Established`, ...details].join('\n')).join('\n') + '\n'
        const inPlace = parseBirdProtocols(text)
        expect(parseBirdProtocols(toRawSocket(text, () => false, '1006'))).toEqual(inPlace)
        expect(inPlace).toHaveLength(protocols.length)
      }),
      {numRuns: 250},
    )
  })
})
