import {describe, expect, it} from 'vitest'

import {changesBetween, emptyState, FlapTracker, verdictIn, type NodeState} from '../../src/agent/state.js'
import {prefixKey} from '../../src/model/prefix-key.js'

function state(over: Partial<NodeState>): NodeState {
  return {...emptyState(), ...over}
}

const keys = (...prefixes: string[]) => Float64Array.from(prefixes.map((p) => prefixKey(p)).sort((a, b) => a - b))

describe('changesBetween', () => {
  it('reports a verdict that moves from ok in bulk to broken, with the finding that appears, and back', () => {
    const ok = state({healthyKeys: keys('192.168.110.128/26', '192.168.82.0/26')})
    const broken = state({
      healthyKeys: keys('192.168.82.0/26'),
      prefixes: new Map([['192.168.110.128/26', {verdict: 'not-tunneled', findings: [{id: 'tunnel-not-programmed', severity: 'error', title: 't'}]}]]),
    })
    expect(changesBetween(ok, broken)).toEqual([
      {kind: 'verdict', prefix: '192.168.110.128/26', from: 'ok', to: 'not-tunneled'},
      {kind: 'finding', op: 'appeared', id: 'tunnel-not-programmed', severity: 'error', prefix: '192.168.110.128/26', title: 't'},
    ])
    expect(changesBetween(broken, ok).map((c) => c.kind === 'finding' ? `${c.kind} ${c.op}` : `${c.kind}`)).toEqual(['verdict', 'finding cleared'])
    expect(changesBetween(ok, ok)).toEqual([])
  })

  it('says absent for a prefix nobody holds any more', () => {
    const before = state({prefixes: new Map([['192.168.1.0/26', {verdict: 'missing', findings: []}]])})
    expect(changesBetween(before, state({}))).toEqual([{kind: 'verdict', prefix: '192.168.1.0/26', from: 'missing', to: 'absent'}])
    expect(verdictIn(before, '10.0.0.0/8')).toBe('absent')
  })

  it('compares a prefix whose findings only changed order, and lists changed prefixes in order; without prefixes, none', () => {
    const f = (id: string) => ({id, severity: 'error' as const, title: id})
    const before = state({prefixes: new Map([
      ['192.168.2.0/26', {verdict: 'misrouted', findings: [f('a'), f('b')]}],
      ['192.168.1.0/26', {verdict: 'missing', findings: [f('c')]}],
    ])})
    const after = state({prefixes: new Map([
      ['192.168.2.0/26', {verdict: 'misrouted', findings: [f('b'), f('a')]}],
      ['192.168.1.0/26', {verdict: 'missing', findings: [f('d')]}],
      ['192.168.0.0/26', {verdict: 'missing', findings: []}],
    ])})
    expect(changesBetween(before, after).map((c) => (c.kind === 'finding' ? `${c.prefix} ${c.op} ${c.id}` : `${c.kind === 'verdict' ? c.prefix : ''}`)))
      .toEqual(['192.168.0.0/26', '192.168.1.0/26 appeared d', '192.168.1.0/26 cleared c'])
    expect(changesBetween(before, after, false)).toEqual([])
  })

  it('reports session state changes, sources failing and recovering, and host findings by id', () => {
    const up = state({
      sessions: new Map([['Mesh_172_31_30_6', {state: 'Established', neighbor: '172.31.30.6'}]]),
      sources: new Map([['birdc-show-route-all.txt', undefined]]),
    })
    const down = state({
      sessions: new Map([['Mesh_172_31_30_6', {state: 'Active', neighbor: '172.31.30.6', lastError: 'Socket: Connection refused'}]]),
      sources: new Map([['birdc-show-route-all.txt', 'connect ECONNREFUSED']]),
      host: [{id: 'peer-down', severity: 'error', title: 'a'}, {id: 'peer-down', severity: 'error', title: 'b'}],
    })
    expect(changesBetween(up, down)).toEqual([
      {kind: 'source', source: 'birdc-show-route-all.txt', op: 'failed', error: 'connect ECONNREFUSED'},
      {kind: 'session', name: 'Mesh_172_31_30_6', neighbor: '172.31.30.6', from: 'Established', to: 'Active', lastError: 'Socket: Connection refused'},
      {kind: 'finding', op: 'appeared', id: 'peer-down', severity: 'error', title: 'a'},
    ])
    expect(changesBetween(down, up).map((c) => c.kind)).toEqual(['source', 'session', 'finding'])
  })
})

describe('FlapTracker', () => {
  it('flaps after more than N changes within the window, and stops once they leave it', () => {
    const t = new FlapTracker(3, 60_000)
    expect([0, 1000, 2000].map((at) => t.record('p', at))).toEqual([false, false, false])
    expect(t.record('p', 3000)).toBe(true) // the fourth within a minute
    expect(t.record('p', 4000)).toBe(false) // already flapping
    expect(t.current.has('p')).toBe(true)
    expect(t.expire(60_500)).toEqual([]) // 1000-4000 still inside: four changes
    expect(t.expire(61_500)).toEqual(['p']) // 2000-4000: three, not more than three
  })

  it('clears a key whose changes fell back to N or fewer, and forgets quiet keys', () => {
    const t = new FlapTracker(2, 10_000)
    for (const at of [0, 1, 2]) t.record('s', at)
    expect(t.current.has('s')).toBe(true)
    expect(t.expire(5_000)).toEqual([])
    expect(t.expire(10_001)).toEqual(['s']) // all three are older than the window
    expect(t.current.size).toBe(0)
    expect(t.record('s', 20_000)).toBe(false)
    expect(t.record('q', 20_000)).toBe(false)
  })
})
