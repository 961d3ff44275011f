// Rows of bulk-healthy prefixes written from their keys (render/bulk-healthy.ts): what the text and JSON reports
// wrote for the same prefixes one by one, from keyPrefix, for any key, width and run.
import {Chalk} from 'chalk'
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {keyPrefix, networkKey} from '../../src/model/prefix-key.js'
import {ipv4Network} from '../../src/model/prefix.js'
import {checkLineJson, prefixLineJson} from '../../src/render/json.js'
import {bulkHealthyRows} from '../../src/render/bulk-healthy.js'
import {verdictColor} from '../../src/render/style.js'
import {NONE} from '../../src/diagnose/rule.js'

// the text report's column padding (render/text.ts pad)
const pad = (s: string, n: number) => (s.length >= n ? `${s} ` : s + ' '.repeat(n - s.length))

const key = fc
  .tuple(fc.integer({min: 0, max: 2 ** 32 - 1}), fc.integer({min: 0, max: 32}))
  .map(([v, len]) => networkKey(ipv4Network(v, len), len))
const run = fc
  .array(key, {minLength: 1, maxLength: 60})
  .chain((keys) =>
    fc
      .tuple(fc.constant(Float64Array.from(keys)), fc.integer({min: 0, max: keys.length - 1}))
      .chain(([k, from]) => fc.integer({min: from + 1, max: keys.length}).map((to) => ({keys: k, from, to}))),
  )

describe('bulk-healthy rows', () => {
  it('are the text report\'s rows of those prefixes, plain or coloured, at any width (one space past it)', () => {
    for (const level of [0, 1] as const) {
      const c = new Chalk({level})
      const after = verdictColor(c, 'ok')(pad('ok', 16))
      fc.assert(
        fc.property(run, fc.integer({min: 0, max: 24}), (r, width) => {
          const want: string[] = []
          for (let j = r.from; j < r.to; j++)
            want.push((width === 0 ? keyPrefix(r.keys[j]) : pad(keyPrefix(r.keys[j]), width)) + after)
          expect(bulkHealthyRows(r, {before: '', after, sep: '\n', width})).toBe(want.join('\n'))
        }),
      )
    }
  })

  it('are the JSON report\'s elements of those prefixes, joined as writeJson joins elements', () => {
    fc.assert(fc.property(run, (r) => {
      const want: string[] = []
      for (let j = r.from; j < r.to; j++) want.push(prefixLineJson({prefix: keyPrefix(r.keys[j]), verdict: 'ok', findings: NONE, plan: null}))
      expect(checkLineJson(r)).toBe(want.join(',\n    '))
    }))
  })

  it('write the extremes of every octet and length', () => {
    const keys = Float64Array.from([
      networkKey(0, 0),
      networkKey(2 ** 32 - 1, 32),
      networkKey(ipv4Network(0x0a09630a, 31), 31),
      networkKey(0x64000000, 8),
    ])
    expect(bulkHealthyRows({keys, from: 0, to: keys.length}, {before: '<', after: '>', sep: '|', width: 0})).toBe(
      '<0.0.0.0/0>|<255.255.255.255/32>|<10.9.99.10/31>|<100.0.0.0/8>',
    )
  })

  it('take the string path, with the same result, when a shape is not ASCII', () => {
    const keys = Float64Array.from([networkKey(0x0a000040, 26), networkKey(0xc0a86e80, 26)])
    expect(bulkHealthyRows({keys, from: 0, to: 2}, {before: '→ ', after: ' ✔', sep: '\n', width: 20})).toBe(`→ ${pad('10.0.0.64/26', 20)} ✔\n→ ${pad('192.168.110.128/26', 20)} ✔`)
  })

  it('write a run larger than the scratch buffer whole', () => {
    const n = 5000
    const keys = Float64Array.from({length: n}, (_, i) => networkKey(0x0a000000 + i * 64, 26))
    const rows = bulkHealthyRows({keys, from: 0, to: n}, {before: '{"prefix":"', after: '","verdict":"ok"}', sep: ',\n    ', width: 0}).split(',\n    ')
    expect(rows).toHaveLength(n)
    expect(rows[n - 1]).toBe(`{"prefix":"${keyPrefix(keys[n - 1])}","verdict":"ok"}`)
  })
})
