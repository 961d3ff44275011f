// PrefixMap (the per-length integer-keyed index of a full table) must behave like a Map keyed by the
// canonical prefix text, for IPv4 and IPv6 alike, and list its IPv4 entries with their network and length.
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {canonicalPrefix, ipv4Text, ipv4Value} from '../../src/model/prefix.js'
import {PrefixMap} from '../../src/model/prefix-map.js'

const v4Prefix = fc
  .tuple(fc.integer({min: 0, max: 2 ** 32 - 1}), fc.integer({min: 0, max: 32}))
  .map(([v, len]) => canonicalPrefix(`${ipv4Text(v)}/${len}`)!)
const v6Prefix = fc
  .tuple(fc.array(fc.integer({min: 0, max: 0xffff}), {minLength: 8, maxLength: 8}), fc.integer({min: 0, max: 128}))
  .map(([groups, len]) => canonicalPrefix(`${groups.map((g) => g.toString(16)).join(':')}/${len}`, 'inet6')!)

describe('PrefixMap', () => {
  it('gets and sets like a Map of canonical prefix texts; forEachV4 lists exactly the IPv4 entries', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.oneof(v4Prefix, v6Prefix), fc.integer()), {maxLength: 200}),
        fc.array(fc.oneof(v4Prefix, v6Prefix), {maxLength: 50}),
        (entries, probes) => {
          const m = new PrefixMap<number>()
          const ref = new Map<string, number>()
          for (const [p, v] of entries) {
            m.set(p, v)
            ref.set(p, v)
          }
          for (const p of [...ref.keys(), ...probes]) expect(m.get(p)).toBe(ref.get(p))
          const v4: string[] = []
          m.forEachV4((network, len, value) => {
            const text = `${ipv4Text(network)}/${len}`
            expect(ref.get(text)).toBe(value)
            expect(m.getV4(network, len)).toBe(value)
            v4.push(text)
          })
          expect(v4.sort()).toEqual([...ref.keys()].filter((p) => !p.includes(':')).sort())
          expect([...m.otherEntries()].map(([p]) => p).sort()).toEqual(
            [...ref.keys()].filter((p) => p.includes(':')).sort(),
          )
          expect([...m.values()].length).toBe(ref.size)
        },
      ),
      {numRuns: 300},
    )
  })

  it('finds an IPv4 prefix written with host bits, and 0.0.0.0/0 and /32 at the edges', () => {
    const m = new PrefixMap<string>()
    m.set('192.168.110.128/26', 'block')
    m.set('0.0.0.0/0', 'default')
    m.set('255.255.255.255/32', 'edge')
    expect(m.get('192.168.110.130/26')).toBe('block')
    expect(m.getV4(ipv4Value('192.168.110.191'), 26)).toBe('block')
    expect(m.get('0.0.0.0/0')).toBe('default')
    expect(m.get('255.255.255.255/32')).toBe('edge')
    expect(m.get('192.168.110.128/25')).toBeUndefined()
  })

  it('add holds one value alone and several in a list, in the order added, per prefix', () => {
    fc.assert(fc.property(fc.array(fc.tuple(fc.oneof(v4Prefix, v6Prefix, fc.constantFrom('10.0.0.0/26', '10.0.0.64/26', 'fd00::/64')), fc.string()), {maxLength: 200}), (entries) => {
      const m = new PrefixMap<string | string[]>()
      const ref = new Map<string, string[]>()
      for (const [p, v] of entries) {
        m.add(p, v)
        ref.set(p, [...(ref.get(p) ?? []), v])
      }
      for (const [p, values] of ref) expect(m.get(p)).toEqual(values.length === 1 ? values[0] : values)
      // the list is returned once, by the call that made it
      const made = new PrefixMap<string | string[]>()
      const lists = entries.flatMap(([p, v]) => {
        const list = made.add(p, v)
        return list === undefined ? [] : [{p, list}]
      })
      expect(lists.length).toBe([...ref.values()].filter((v) => v.length > 1).length)
      for (const {p, list} of lists) expect(made.get(p)).toBe(list)
    }), {numRuns: 300})
  })
})
