// The IPv4 integer fast paths of the prefix math give exactly what ipaddr.js gives.
import fc from 'fast-check'
import ipaddr from 'ipaddr.js'
import {describe, expect, it} from 'vitest'

import {canonicalAddress, canonicalPrefix, ipv4Value, prefixContains, prefixSortKey} from '../../src/model/prefix.js'

/** canonicalPrefix the slow way: ipaddr.js only. */
function reference(text: string): string | undefined {
  try {
    if (!text.includes('/')) {
      const a = ipaddr.parse(text)
      return `${a.toString()}/${a.kind() === 'ipv4' ? 32 : 128}`
    }
    const [a, len] = ipaddr.parseCIDR(text)
    const bytes = a
      .toByteArray()
      .map((b, i) => (i * 8 >= len ? 0 : i * 8 + 8 > len ? b & (0xff << (8 - (len - i * 8))) & 0xff : b))
    return `${ipaddr.fromByteArray(bytes).toString()}/${len}`
  } catch {
    return undefined
  }
}

const octet = fc.integer({min: 0, max: 255})
const quad = fc.tuple(octet, octet, octet, octet).map((o) => o.join('.'))

describe('IPv4 fast paths', () => {
  it('canonicalPrefix agrees with ipaddr.js on dotted quads with any length', () => {
    fc.assert(fc.property(quad, fc.integer({min: 0, max: 32}), fc.boolean(), (addr, len, slash) => {
      const text = slash ? `${addr}/${len}` : addr
      expect(canonicalPrefix(text)).toBe(reference(text))
    }))
  })

  it('odd forms are refused or left to ipaddr.js', () => {
    expect(canonicalPrefix('1.2.3.4/33')).toBeUndefined()
    expect(canonicalPrefix('1.2.3.4/')).toBeUndefined()
    expect(canonicalPrefix('1.2.3.4/08')).toBeUndefined()
    expect(canonicalPrefix('256.1.1.1/8')).toBeUndefined()
    expect(canonicalPrefix('10.0.0.65/26')).toBe('10.0.0.64/26')
    expect(canonicalPrefix('default')).toBe('0.0.0.0/0')
    expect(canonicalPrefix('fd00::1/64')).toBe('fd00::/64')
    expect(ipv4Value('10.00.0.1')).toBe(-1)
    expect(ipv4Value('10.0.0.1')).toBe(0x0a000001)
    expect(canonicalAddress('172.31.20.5')).toBe('172.31.20.5')
    expect(canonicalAddress('fe80:0::1')).toBe('fe80::1')
  })

  it('IPv4 is a dotted quad only: inet_aton\'s short and octal forms (which ipaddr.js takes) are no address', () => {
    // a typo'd `192.168.110/26` was 192.168.0.110/26 ("host bits set; give 192.168.0.64/26")
    for (const text of ['192.168.110', '10', '0x0a.1.1.1', '010.1.1.1', '3232235520']) {
      expect(canonicalAddress(text), text).toBeUndefined()
      expect(canonicalPrefix(text), text).toBeUndefined()
      expect(canonicalPrefix(`${text}/26`), text).toBeUndefined()
    }
    expect(canonicalPrefix('::ffff:192.168.110.130')).toBe('::ffff:c0a8:6e82/128')
  })

  it('prefixContains agrees with ipaddr.js match', () => {
    fc.assert(fc.property(quad, fc.integer({min: 0, max: 32}), quad, (net, len, addr) => {
      const outer = canonicalPrefix(`${net}/${len}`)!
      expect(prefixContains(outer, addr)).toBe(ipaddr.parse(addr).match(ipaddr.parseCIDR(outer)))
    }))
  })

  it('sort keys order by family, address, then length', () => {
    const sorted = ['10.0.0.0/8', '9.0.0.0/8', '10.0.0.0/16', '::/0', '192.168.0.0/16'].sort((a, b) => (prefixSortKey(a) < prefixSortKey(b) ? -1 : 1))
    expect(sorted).toEqual(['9.0.0.0/8', '10.0.0.0/8', '10.0.0.0/16', '192.168.0.0/16', '::/0'])
  })
})
