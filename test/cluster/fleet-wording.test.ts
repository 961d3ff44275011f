// The cluster findings' sentences, from folds made by hand: plural agreement, and the tunnel device named as the
// sources name it (--tunnel-dev, or what a bundle recorded), not tunl0 always.
import {describe, expect, it} from 'vitest'

import {FleetJoin, type FleetPair, type NodeFold} from '../../src/fleet/join.js'
import {fleetHtmlPieces} from '../../src/render/fleet-html.js'

const pair = (from: string, to: string, broken: number, checked: number): FleetPair => ({
  from, to, verdict: broken > 0 ? 'not-tunneled' : 'ok', checked, ok: checked - broken,
  blocks: Array.from({length: broken}, (_, i) => ({prefix: `192.168.${i}.0/26`, verdict: 'not-tunneled' as const, findings: []})),
})

const fold = (mtu: number, pairs: FleetPair[], endpoints: NodeFold['endpoints'] = []): NodeFold => ({
  facts: {tunnelMtu: mtu}, tunnelDev: 'ipip0', pairs, endpoints,
})

describe('fleet\'s cluster findings', () => {
  it('one broken block of one: "n2\'s one block is broken"; the MTU finding names the sources\' tunnel device', () => {
    const join = new FleetJoin(undefined)
    join.add('n1', 'n1/', fold(1480, [pair('n1', 'n2', 1, 1)]))
    join.add('n2', 'n2/', fold(1440, [pair('n2', 'n1', 0, 1)]))
    const r = join.finish()
    expect(r.findings.find((f) => f.id === 'asymmetric-pair')?.detail).toBe(
      'From n1, n2\'s one block is broken (192.168.0.0/26 not-tunneled); the way back works. Replies to connections ' +
        'n2 opens can be lost.',
    )
    expect(r.findings.find((f) => f.id === 'tunnel-mtu-differs')?.title).toBe(
      'ipip0 MTU differs between nodes: n1: 1480; n2: 1440',
    )
    expect([...fleetHtmlPieces(r)].join('\n')).toContain('<th>tunnel MTU</th>')
  })

  it('two of three blocks: "2 of n2\'s 3 blocks are broken"; one node routing a block elsewhere "sends"', () => {
    const join = new FleetJoin(undefined)
    join.add('n1', 'n1/', fold(1480, [pair('n1', 'n2', 2, 3)], [['192.168.9.0/26', '172.31.99.9']]))
    join.add('n2', 'n2/', fold(1480, [pair('n2', 'n1', 0, 1)]))
    const r = join.finish()
    expect(r.findings.find((f) => f.id === 'asymmetric-pair')?.detail).toMatch(/^From n1, 2 of n2's 3 blocks are broken \(/)
    expect(r.findings.find((f) => f.id === 'owner-disagreement')?.detail).toBe(
      '1 node sends 192.168.9.0/26\'s traffic elsewhere than the others; 1 routes it to its owner (node#1032, calico#6486).',
    )
  })
})
