// A full table's one-line `ip -j route` array is parsed in ~1 MiB pieces (forEachJsonElement): the
// result must be exactly what one JSON.parse gives, whatever the cuts hit (multipath next-hop lists
// are the `},{"` that is not a boundary), and bad JSON must still be a ParseError naming the file.
import {describe, expect, it} from 'vitest'

import {ParseError} from '../../src/model/errors.js'
import {forEachJsonElement, jsonArrayElements} from '../../src/parse/ip-common.js'
import {parseIpRouteJson} from '../../src/parse/ip-route-json.js'

function route(i: number): Record<string, unknown> {
  const dst = `10.${(i >> 10) & 255}.${(i >> 2) & 255}.${(i & 3) * 64}/26`
  if (i % 3 === 0) {
    // multipath: its next hops hold the `},{"` a piece must not end at
    return {dst, protocol: 'bird', metric: 32, flags: [], nexthops: [
      {gateway: '172.31.11.1', dev: 'eth0', weight: 1, flags: []},
      {gateway: '172.31.12.1', dev: 'eth1', weight: 1, flags: []},
    ]}
  }
  return {dst, gateway: `172.20.${i % 10}.${10 + (i % 25)}`, dev: 'tunl0', protocol: 'bird', metric: 32, flags: ['onlink']}
}

const N = 40_000 // ~4 MiB: several pieces
const routes = Array.from({length: N}, (_, i) => route(i))
const text = `${JSON.stringify(routes)}\n`

describe('one-line JSON arrays in pieces', () => {
  it('hands over every element, in order, equal to one JSON.parse', () => {
    expect(text.length).toBeGreaterThan(3 * (1 << 20))
    const seen: unknown[] = []
    forEachJsonElement(text, 'ip-j-d-route.json', 'routes', (v, pos) => {
      expect(pos.line).toBe(1)
      seen.push(v)
    })
    expect(seen).toEqual(routes)
  })

  it('parseIpRouteJson gives the same routes as the whole-text path', () => {
    const pieces = parseIpRouteJson(text)
    const {values} = jsonArrayElements(text, 'ip-j-d-route.json', 'routes')
    expect(pieces).toHaveLength(values.length)
    expect(pieces.filter((r) => r.nexthops.length === 2)).toHaveLength(Math.ceil(N / 3))
    expect(pieces[N - 1].dst).toBe(routes[N - 1].dst)
  })

  it('bad JSON in the middle of a large dump is a ParseError naming the file and the offending text', () => {
    const at = text.indexOf('"dst"', text.length >> 1)
    const bad = `${text.slice(0, at)}"dst" "broken"${text.slice(at + 5)}`
    let error: unknown
    try {
      parseIpRouteJson(bad)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(ParseError)
    expect(String((error as Error).message)).toContain('ip-j-d-route.json:1')
    expect(String((error as Error).message)).toContain('broken')
  })

  it('two large arrays back to back (ip -4 -j …; ip -6 -j …) still give every element', () => {
    const half = routes.slice(0, N / 2)
    const twice = `${JSON.stringify(half)}${JSON.stringify(half)}\n`
    let n = 0
    forEachJsonElement(twice, 'ip-j-d-route.json', 'routes', () => n++)
    expect(n).toBe(N)
  })
})
