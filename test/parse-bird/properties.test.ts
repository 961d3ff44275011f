// Property tests: on any input the BIRD parsers throw nothing but ParseError, and a reply framed
// as the control socket sends it parses exactly like the birdc text it came from.
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {ParseError} from '../../src/model/errors.js'
import {canonicalAddress, canonicalPrefix} from '../../src/model/prefix.js'
import {parseBirdProtocols} from '../../src/parse/bird-protocols.js'
import {parseBirdRoutes} from '../../src/parse/bird-routes.js'
import {createBirdRouteStream} from './stream.js'
import {parseBirdStatus} from '../../src/parse/bird-status.js'
import {allCaptureSections, capture, fixture, SCENARIOS, toRawSocket} from './captures.js'

const parsers = [parseBirdRoutes, parseBirdProtocols, parseBirdStatus] as const

function onlyParseErrors(text: string): void {
  for (const parse of parsers) {
    try {
      parse(text)
    } catch (error) {
      if (!(error instanceof ParseError)) throw error
    }
  }
}

// real lines of every kind, to build inputs that get deep into the state machines
const realLines = [...new Set(allCaptureSections().flatMap(([, , text]) => text.split('\n')))].slice(0, 4000)

describe('no parser throws anything but ParseError', () => {
  it('arbitrary strings', () => {
    fc.assert(fc.property(fc.string({unit: 'binary', maxLength: 300}), (s) => onlyParseErrors(s)), {numRuns: 500})
  })

  it('arbitrary mixes of real BIRD lines, raw-socket markers and noise', () => {
    const line = fc.oneof(
      fc.constantFrom(...realLines),
      fc.constantFrom('', ' ', '\t', '\t\t', '0000 ', '1007-', '8001 Network not found', '+async', '>>> x', 'Table t:', '\r'),
      fc.string({maxLength: 40}),
      fc.tuple(fc.constantFrom('\t', ' ', '1007-', ' \t', '                     '), fc.constantFrom(...realLines)).map(([a, b]) => a + b),
    )
    fc.assert(fc.property(fc.array(line, {maxLength: 40}), (lines) => onlyParseErrors(lines.join('\n'))), {numRuns: 1000})
  })

  it('every section of every capture, whatever command it answers', () => {
    for (const [, , text] of allCaptureSections()) onlyParseErrors(text)
  })
})

describe('raw socket framing parses the same as birdc text', () => {
  const routeTexts = [
    ...SCENARIOS.map((d) => fixture(`${d}/birdc-show-route-all.txt`)),
    capture('bird1.6.8-B16-established.txt', 'show route all'),
    capture('bird2.0.12-A2-established.txt', 'show route all'),
    capture('bird3.2.3-B3-established.txt', 'show route all'),
    capture('bird3.0.5-B30-established.txt', 'show route'),
  ]
  const protocolTexts = [
    ...SCENARIOS.map((d) => fixture(`${d}/birdc-show-protocols-all.txt`)),
    capture('bird1.6.8-B16-established.txt', 'show protocols all'),
    capture('bird3.2.3-B3-established.txt', 'show protocols all'),
  ]
  const statusTexts = SCENARIOS.map((d) => fixture(`${d}/birdc-show-status.txt`))

  it('routes, with any choice of fresh codes and continuation lines', () => {
    fc.assert(
      fc.property(fc.constantFrom(...routeTexts), fc.array(fc.boolean(), {minLength: 1, maxLength: 64}), fc.constantFrom('1007', '1008', '1012'), (text, bits, code) => {
        const raw = toRawSocket(text, (i) => bits[i % bits.length]!, code)
        const [a, b] = [parseBirdRoutes(raw), parseBirdRoutes(text)]
        expect(a).toEqual(b)
        // built on access: not compared by toEqual
        expect(a.map((r) => r.attributes)).toEqual(b.map((r) => r.attributes))
      }),
      {numRuns: 60},
    )
  })

  it('protocols and status', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), {minLength: 1, maxLength: 16}), (bits) => {
        for (const text of protocolTexts) expect(parseBirdProtocols(toRawSocket(text, (i) => bits[i % bits.length]!, '1006'))).toEqual(parseBirdProtocols(text))
        for (const text of statusTexts) expect(parseBirdStatus(toRawSocket(text, (i) => bits[i % bits.length]!, '1011'))).toEqual(parseBirdStatus(text))
      }),
      {numRuns: 20},
    )
  })

  it('route blocks in any order and any subset parse the same either way, and keep their count', () => {
    // cut a 2.x show route all into route blocks (a header with its TAB lines), shuffle and re-join
    const lines = capture('bird2.0.12-A2-established.txt', 'show route all').split('\n').slice(2).filter((l) => l !== '' && !l.startsWith('Table '))
    const blocks: string[][] = []
    for (const l of lines) {
      if (l.startsWith('\t') && blocks.length > 0) blocks[blocks.length - 1]!.push(l)
      else blocks.push([l])
    }
    const primaries = blocks.filter((b) => !b[0]!.startsWith(' '))
    fc.assert(
      fc.property(fc.shuffledSubarray(primaries, {minLength: 1}), fc.boolean(), (picked, crlf) => {
        let text = `BIRD 2.0.12 ready.\nTable master4:\n${picked.map((b) => b.join('\n')).join('\n')}`
        if (crlf) text = text.replace(/\n/g, '\r\n')
        const birdc = parseBirdRoutes(text)
        expect(birdc).toHaveLength(picked.length)
        expect(parseBirdRoutes(toRawSocket(text.replace(/\r/g, ''), (i) => i % 2 === 0))).toEqual(parseBirdRoutes(text.replace(/\r/g, '')))
      }),
      {numRuns: 100},
    )
  })
})

describe('fast IPv4 paths agree with model/prefix.ts', () => {
  const octet = fc.oneof(fc.integer({min: 0, max: 255}).map(String), fc.constantFrom('256', '01', '00', '', 'x', '999'))
  const ipv4 = fc.tuple(octet, octet, octet, octet).map((o) => o.join('.'))
  const len = fc.oneof(fc.integer({min: 0, max: 32}).map(String), fc.constantFrom('33', '08', '008', '', '-1'))

  it('prefixes, gateways and BGP next hops', () => {
    fc.assert(
      fc.property(ipv4, len, ipv4, ipv4, (addr, l, gw, nh) => {
        const net = `${addr}/${l}`
        const text = `${net} unicast [p 12:00] * (100)\n\tvia ${gw} on eth0\n\tBGP.next_hop: ${nh}\n`
        const wantPrefix = canonicalPrefix(net)
        const wantGw = canonicalAddress(gw)
        let got
        try {
          got = parseBirdRoutes(text)
        } catch (error) {
          expect(error).toBeInstanceOf(ParseError)
          expect(wantPrefix === undefined || wantGw === undefined).toBe(true)
          return
        }
        expect(got[0]!.prefix).toBe(wantPrefix)
        expect(got[0]!.nexthops[0]!.gateway).toBe(wantGw)
        expect(got[0]!.bgpNextHop).toBe(canonicalAddress(nh))
      }),
      {numRuns: 2000},
    )
  })
})

// parseBirdRoutes handles most attribute lines in place (offsets into the whole text, no slice per
// line); the line-by-line stream never does. Both must give the same routes, whatever the input.
describe('whole-text parsing equals the line-by-line stream', () => {
  function streamed(text: string): unknown {
    const out: unknown[] = []
    const stream = createBirdRouteStream('birdc-show-route-all.txt', (r) => out.push(r))
    text.split('\n').forEach((l, i) => stream.push(l, i + 1))
    stream.end()
    return JSON.parse(JSON.stringify(out))
  }
  function whole(text: string): unknown {
    return JSON.parse(JSON.stringify(parseBirdRoutes(text)))
  }
  const outcome = (f: () => unknown) => {
    try {
      return f()
    } catch (error) {
      if (!(error instanceof ParseError)) throw error
      return `ParseError ${error.message}`
    }
  }

  it('on every real capture', () => {
    for (const [, , text] of allCaptureSections())
      expect(outcome(() => whole(text))).toEqual(outcome(() => streamed(text)))
  })

  it('on mixes of real route lines, attribute runs broken by noise, CRLF and continuations', () => {
    const routeLines = realLines.filter((l) => l.startsWith('\t') || /^\S+\/\d+\s/.test(l) || l.startsWith(' '))
    const line = fc.oneof(
      {weight: 6, arbitrary: fc.constantFrom(...routeLines)},
      fc.constantFrom('', '\t', '\t\tcontinued (1,2)', '\tBGP.as_path: 65000 65001', '\tBGP.next_hop: 10.0.0.1', '\tvia 10.1.1.1 on eth0', '\tName:', '\t Odd: x', 'Table master4:'),
      fc.constantFrom(...routeLines).map((l) => `${l}\r`),
    )
    fc.assert(fc.property(fc.array(line, {maxLength: 60}), (lines) => {
      const text = lines.join('\n')
      expect(outcome(() => whole(text))).toEqual(outcome(() => streamed(text)))
    }), {numRuns: 1000})
  })
})
