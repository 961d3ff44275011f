import fc from 'fast-check'
import ipaddr from 'ipaddr.js'
import {expect, it} from 'vitest'
import {createRedactor} from '/work/main/src/bundle/redact.js'
for (const f of [4, 6] as const) it('bc'+f, () => {
  const W = f === 4 ? 32 : 128
  const ALL = (1n << BigInt(W)) - 1n
  const str = (v: bigint) => { const n = W/8; return ipaddr.fromByteArray(Array.from({length:n},(_,i)=>Number((v>>BigInt(8*(n-1-i)))&0xffn))).toString() }
  const big = (s: string) => ipaddr.parse(s).toByteArray().reduce((a, b) => (a << 8n) | BigInt(b), 0n)
  const hm = (len: number) => (1n << BigInt(W - len)) - 1n
  fc.assert(fc.property(fc.uint8Array({minLength:16,maxLength:16}), fc.bigInt({min:0n,max:ALL}), fc.integer({min:0,max:W}), (k, v, len) => {
    const net = v & ~hm(len) & ALL
    const r = createRedactor(Buffer.from(k), {anchors: [`${str(net)}/${len}`]})
    const rn = big(r.address(str(net)))
    expect(big(r.address(str(net | hm(len))))).toBe(rn | hm(len))
  }), {numRuns: 3000})
})
