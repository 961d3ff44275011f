// The cluster findings' sentences, from folds made by hand: plural agreement, and the tunnel device named as the
// sources name it (--tunnel-dev, or what a bundle recorded), not tunl0 always; a pair's count of blocks.
import {Chalk} from 'chalk'
import {describe, expect, it} from 'vitest'

import {FleetJoin, type FleetPair, type NodeFold} from '../../src/fleet/join.js'
import {fleetHtmlPieces} from '../../src/render/fleet-html.js'
import {renderFleet} from '../../src/render/fleet.js'

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
    const page = [...fleetHtmlPieces(r)].join('\n')
    expect(page).toContain('<th>tunnel MTU</th>')
    expect(page).toContain('<p>n1 → n2: 1 of 1 block broken</p>')
    expect(renderFleet(r, new Chalk({level: 0}))).toContain('\n  n1 → n2: not-tunneled (1 of 1 block)\n')
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

  it('one node: "1 node"; one pair with blocks: "1 pair with blocks"', () => {
    const one = new FleetJoin(undefined)
    one.add('n1', 'n1/', fold(1480, []))
    expect(renderFleet(one.finish(), new Chalk({level: 0})).split('\n')[0]).toBe(
      'fleet 1 node, 1 with a source; no Calico truth (give --calico DIR or --kube, or bundles with calico/): no block ' +
        'owners, no matrix',
    )
    expect([...fleetHtmlPieces(one.finish())].join('\n')).toContain('<h1>routedoctor fleet: 1 node, 0 broken pairs</h1>')
    const two = new FleetJoin(undefined)
    two.add('n1', 'n1/', fold(1480, [pair('n1', 'n2', 0, 1)]))
    two.add('n2', 'n2/', fold(1480, []))
    expect(renderFleet(two.finish(), new Chalk({level: 0}))).toContain('every pair ok (1 pair with blocks)')
  })

  it('without the truth: no matrix of "-" cells under a header that says "no matrix"; long names keep the columns', () => {
    const join = new FleetJoin(undefined)
    join.add('bird16-ecmp-not-tunneled', 'a/', fold(1480, [pair('bird16-ecmp-not-tunneled', 'vm', 0, 0)]))
    join.add('vm', 'b/', fold(1480, [pair('vm', 'bird16-ecmp-not-tunneled', 0, 0)]))
    const text = renderFleet(join.finish(), new Chalk({level: 0}))
    expect(text.split('\n')[0]).toMatch(/no block owners, no matrix$/)
    expect(text).not.toContain('from \\ to')
    const rows = text.split('\n').filter((l) => /^ {2}\d {2}/.test(l))
    expect(rows.map((l) => l.indexOf('?'))).toEqual([rows[0].indexOf('?'), rows[0].indexOf('?')])
    // the page's cells do not say a node owns no block when no owner is known
    const page = [...fleetHtmlPieces(join.finish())].join('\n')
    expect(page).not.toContain('owns no block')
    expect(page).toContain('title="no Calico truth: block owners unknown"')
  })
})
