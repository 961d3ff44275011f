// Properties of the redaction address map: prefix-preserving, canonical prefixes stay canonical,
// containment exact, injective, special ranges kept.
import fc from 'fast-check'
import ipaddr from 'ipaddr.js'
import {describe, expect, it} from 'vitest'

import {createRedactor} from '../../src/bundle/redact.js'
import {canonicalPrefix, prefixContains} from '../../src/model/prefix.js'

type Fam = 4 | 6
const W = (f: Fam) => (f === 4 ? 32 : 128)
const ALL = (f: Fam) => (1n << BigInt(W(f))) - 1n

function str(v: bigint, f: Fam): string {
  const n = f === 4 ? 4 : 16
  const bytes = Array.from({length: n}, (_, i) => Number((v >> BigInt(8 * (n - 1 - i))) & 0xffn))
  return ipaddr.fromByteArray(bytes).toString()
}
function big(s: string): bigint {
  return ipaddr.parse(s).toByteArray().reduce((a, b) => (a << 8n) | BigInt(b), 0n)
}
const hostMask = (len: number, f: Fam) => (1n << BigInt(W(f) - len)) - 1n
function cpl(a: bigint, b: bigint, f: Fam): number {
  for (let d = 0; d < W(f); d++) if (((a ^ b) >> BigInt(W(f) - 1 - d)) & 1n) return d
  return W(f)
}

const key = fc.uint8Array({minLength: 16, maxLength: 16}).map((u) => Buffer.from(u))
const addr = (f: Fam) => fc.bigInt({min: 0n, max: ALL(f)})
const prefix = (f: Fam) =>
  fc
    .record({v: addr(f), len: fc.integer({min: 0, max: W(f)})})
    .map(({v, len}) => ({net: v & ~hostMask(len, f) & ALL(f), len}))
// an address inside the prefix half the time, anywhere otherwise
const addrNear = (f: Fam, p: {net: bigint; len: number}) =>
  fc.oneof(addr(f), addr(f).map((h) => p.net | (h & hostMask(p.len, f))))

const isSpecial4 = (s: string) => ['loopback', 'multicast', 'unspecified', 'broadcast'].includes(ipaddr.parse(s).range())

for (const f of [4, 6] as Fam[]) {
  describe(`IPv${f} address map`, () => {
    it('keeps anchored prefixes canonical, same length, and containment exact (A ∈ P ⇔ red(A) ∈ red(P))', () => {
      fc.assert(
        fc.property(
          key,
          fc
            .array(prefix(f), {minLength: 1, maxLength: 4})
            .chain((ps) => fc.tuple(fc.constant(ps), fc.array(addrNear(f, ps[0]), {minLength: 1, maxLength: 6}))),
          (k, [ps, as]) => {
            const cidrs = ps.map((p) => `${str(p.net, f)}/${p.len}`)
            const r = createRedactor(k, {anchors: cidrs})
            for (const c of cidrs) {
              const rc = r.prefix(c)
              expect(canonicalPrefix(rc, f === 4 ? 'inet' : 'inet6')).toBe(rc)
              expect(rc.slice(rc.indexOf('/'))).toBe(c.slice(c.indexOf('/')))
              for (const a of as.map((v) => str(v, f)))
                expect(prefixContains(rc, r.address(a))).toBe(prefixContains(c, a))
              for (const c2 of cidrs) expect(prefixContains(r.prefix(c2), rc)).toBe(prefixContains(c2, c))
            }
          },
        ),
        {numRuns: 150},
      )
    })

    it('keeps the broadcast (all-ones host part) of an anchored prefix the broadcast of its image', () => {
      fc.assert(
        fc.property(key, prefix(f), (k, p) => {
          const r = createRedactor(k, {anchors: [`${str(p.net, f)}/${p.len}`]})
          const redNet = big(r.address(str(p.net, f)))
          expect(big(r.address(str(p.net | hostMask(p.len, f), f)))).toBe(redNet | hostMask(p.len, f))
        }),
        {numRuns: 300},
      )
    })

    it('preserves the exact common-prefix length of any two addresses, hence is injective', () => {
      fc.assert(
        fc.property(
          key,
          fc.array(prefix(f), {maxLength: 3}),
          addr(f),
          addr(f),
          fc.integer({min: 0, max: W(f)}),
          (k, ps, a, b0, keep) => {
            // b shares at least `keep` leading bits with a, so long common prefixes are exercised too
            const b = (a & ~hostMask(keep, f) & ALL(f)) | (b0 & hostMask(keep, f))
            const r = createRedactor(k, {anchors: ps.map((p) => `${str(p.net, f)}/${p.len}`)})
            const ra = big(r.address(str(a, f)))
            const rb = big(r.address(str(b, f)))
            expect(cpl(ra, rb, f)).toBe(cpl(a, b, f))
            if (a !== b) expect(ra).not.toBe(rb)
          },
        ),
        {numRuns: 200},
      )
    })
  })
}

describe('special ranges', () => {
  it('keeps loopback, multicast, 0.0.0.0, 255.255.255.255, ::, ::1 and ff00::/8 as they are', () => {
    fc.assert(
      fc.property(
        key,
        fc.bigInt({min: 0n, max: (1n << 24n) - 1n}),
        fc.bigInt({min: 0n, max: (1n << 28n) - 1n}),
        fc.bigInt({min: 0n, max: (1n << 120n) - 1n}),
        (k, lo, mc, m6) => {
          const r = createRedactor(k)
          for (const a of [
            str((127n << 24n) | lo, 4),
            str((0xen << 28n) | mc, 4),
            '0.0.0.0',
            '255.255.255.255',
            '::',
            '::1',
            str((0xffn << 120n) | m6, 6),
          ]) {
            expect(r.address(a)).toBe(a)
          }
        },
      ),
    )
  })

  it('keeps an IPv6 link-local address link-local (in fe80::/64) while changing it', () => {
    fc.assert(
      fc.property(key, fc.bigInt({min: 1n, max: (1n << 64n) - 1n}), (k, iid) => {
        const r = createRedactor(k, {anchors: ['fe80::/64']})
        const a = str((0xfe80n << 112n) | iid, 6)
        const red = r.address(a)
        expect(prefixContains('fe80::/64', red)).toBe(true)
        expect(ipaddr.parse(red).range()).toBe('linkLocal')
        expect(r.prefix('fe80::/64')).toBe('fe80::/64')
      }),
    )
    // changed: over many addresses at most a chance few map to themselves
    const r = createRedactor(Buffer.from('link-local'))
    const same = Array.from({length: 200}, (_, i) =>
      str((0xfe80n << 112n) | ((BigInt(i + 1) * 0x9e3779b97f4a7c15n) & ((1n << 64n) - 1n)), 6),
    ).filter((a) => r.address(a) === a)
    expect(same.length).toBeLessThan(3)
  })

  it('keeps a private address (RFC 1918, RFC 6598, ULA) in its own range, and maps no public address into one', () => {
    const PRIVATE = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7']
    const rangeOf = (a: string) => PRIVATE.find((r) => r.includes(':') === a.includes(':') && prefixContains(r, a))
    fc.assert(
      fc.property(
        key,
        fc.constantFrom(...PRIVATE),
        addr(4),
        addr(6),
        fc.array(prefix(4), {maxLength: 3}),
        (k, range, a4, a6, ps) => {
          const r = createRedactor(k, {anchors: [range, ...ps.map((p) => `${str(p.net, 4)}/${p.len}`)]})
          const [net, len] = range.split('/')
          const f: Fam = range.includes(':') ? 6 : 4
          const inside = str(big(net) | ((f === 4 ? a4 : a6) & hostMask(Number(len), f)), f)
          expect(rangeOf(r.address(inside)), inside).toBe(range)
          expect(r.prefix(range)).toBe(range)
          for (const a of [str(a4, 4), str(a6, 6)]) if (!rangeOf(a)) expect(rangeOf(r.address(a)), a).toBeUndefined()
        },
      ),
      {numRuns: 300},
    )
  })

  it('never maps an ordinary address into a special range', () => {
    fc.assert(
      fc.property(key, addr(4), addr(6), (k, a4, a6) => {
        const r = createRedactor(k)
        const s4 = str(a4, 4)
        if (!isSpecial4(s4) && !prefixContains('169.254.0.0/16', s4)) expect(isSpecial4(r.address(s4))).toBe(false)
        const s6 = str(a6, 6)
        const range6 = ipaddr.parse(s6).range()
        if (!['linkLocal', 'multicast', 'loopback', 'unspecified', 'ipv4Mapped'].includes(range6)) {
          expect(['linkLocal', 'multicast', 'loopback', 'unspecified', 'ipv4Mapped']).not.toContain(ipaddr.parse(r.address(s6)).range())
        }
      }),
      {numRuns: 200},
    )
  })
})

describe('IPv4 without anchors', () => {
  it('keeps /24 and longer networks canonical and their broadcast addresses broadcast', () => {
    fc.assert(
      fc.property(key, addr(4), fc.integer({min: 24, max: 32}), (k, v, len) => {
        const r = createRedactor(k)
        const net = v & ~hostMask(len, 4) & ALL(4)
        const rp = r.prefix(`${str(net, 4)}/${len}`)
        expect(canonicalPrefix(rp)).toBe(rp)
        expect(r.address(str(net | hostMask(len, 4), 4))).toBe(str(big(rp.split('/')[0]) | hostMask(len, 4), 4))
      }),
    )
  })

  it('gives ::ffff:a.b.c.d the pseudonym of a.b.c.d', () => {
    const r = createRedactor(Buffer.from('mapped'))
    expect(r.address('::ffff:172.31.20.5')).toBe(`::ffff:${r.address('172.31.20.5')}`)
  })
})
