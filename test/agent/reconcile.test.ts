// The reconcile loop's rules (settle, write interval, back-off, never replacing another writer's route) with the
// fix service's plan and apply given as functions; the real path runs in test/integration/watch-reconcile.test.ts.
import {describe, expect, it} from 'vitest'

import {fixPath, Reconciler} from '../../src/agent/reconcile.js'
import type {WatchChange} from '../../src/agent/state.js'
import {plannedOverlay} from '../../src/agent/planned.js'
import type {PlanItem} from '../../src/plan/plan.js'

const item = (dst: string, gateway: string): PlanItem => ({
  action: 'replace', mode: 'overlay',
  planned: {action: 'replace', dst, table: '1158', tableId: 1158, metric: 0, protocol: '158', nexthops: [{gateway, dev: 'tunl0', onlink: true, weight: 1}]},
})
const overlay = (items: PlanItem[]) => ({settings: {table: 1158, rulePriority: 32000, protocol: '158'}, items, rules: [], kept: 0})

// war: the prefixes another writer undoes, at every apply or at the apply numbered (from 1) by the function
function setup(plans: PlanItem[][], war: string[] | ((apply: number) => string[]) = [], cleanupOnExit = true) {
  const pruned: Array<{dir: string; keep: number; protect: string[]}> = []
  const changes: WatchChange[] = []
  const again: number[] = []
  const applied: PlanItem[][] = []
  let n = 0
  const path: typeof fixPath = {
    plan: async (_source, _fix, skip, ask) =>
      plannedOverlay(overlay(plans[Math.min(n++, plans.length - 1)]), skip, ask),
    apply: async (plan) => {
      const items = plan.items
      applied.push(items)
      return {applied: items.map((i) => i.planned), verified: true, journal: `/j/${applied.length}`, errors: [],
        routeWar: (typeof war === 'function' ? war(applied.length) : war).map((dst) => ({dst, table: 'main', metric: 31, kind: 'removed' as const, detail: 'gone', advice: ''}))}
    },
    revert: async (journal) => ({journal, restored: [], deleted: [], verified: true, errors: []}),
    prune: async (dir, keep, protect) => {
      pruned.push({dir, keep, protect: [...protect]})
      return {removed: []}
    },
  }
  const r = new Reconciler({source: {}, fixProtocol: '158', settleSeconds: 10, writeIntervalSeconds: 30, journalDir: '/j',
    journalKeep: 3, cleanupOnExit}, (c) => changes.push(c), (ms) => again.push(ms), path)
  return {r, changes, again, applied, pruned}
}

describe('Reconciler', () => {
  it('writes a plan only once it has held for --settle seconds; a plan that changes starts the wait again', async () => {
    const a = [item('192.168.110.128/26', '172.31.20.5')]
    const b = [item('192.168.110.128/26', '172.31.30.6')]
    const {r, again, applied} = setup([a, b, b, b])
    await r.reconcile(0)
    expect(again).toEqual([10_000])
    await r.reconcile(5_000) // the plan moved: wait again
    expect(applied).toEqual([])
    await r.reconcile(12_000) // b held 7 s only
    expect(applied).toEqual([])
    expect(again.at(-1)).toBe(3_000)
    await r.reconcile(15_000)
    expect(applied).toEqual([b])
  })

  it('keeps writes --write-interval apart', async () => {
    const a = [item('192.168.82.0/26', '172.31.30.6')]
    const b = [item('192.168.82.0/26', '172.31.20.5')]
    const {r, again, applied} = setup([a, a, b, b, b])
    await r.reconcile(0)
    await r.reconcile(10_000)
    expect(applied).toHaveLength(1)
    await r.reconcile(11_000)
    await r.reconcile(21_000) // settled, but only 11 s after the last write
    expect(applied).toHaveLength(1)
    expect(again.at(-1)).toBe(19_000)
    await r.reconcile(40_000)
    expect(applied).toHaveLength(2)
  })

  it('backs off from a route war, doubling, and writes the prefix again only after it', async () => {
    const a = [item('192.168.82.0/26', '172.31.30.6')]
    const {r, changes, applied} = setup([a], ['192.168.82.0/26'])
    await r.reconcile(0)
    await r.reconcile(10_000)
    expect(applied).toHaveLength(1)
    expect(changes.at(-1)).toMatchObject({kind: 'reconcile', op: 'route-war', prefix: '192.168.82.0/26', detail: 'gone; backing off for 60 s'})
    await r.reconcile(50_000)
    await r.reconcile(69_000) // still inside the back-off: nothing planned for it
    expect(applied).toHaveLength(1)
    await r.reconcile(71_000)
    await r.reconcile(81_000)
    expect(applied).toHaveLength(2)
    expect(changes.at(-1)).toMatchObject({op: 'route-war', detail: 'gone; backing off for 120 s'})
  })

  it('forgets a route war once the prefix, written again after its back-off, holds', async () => {
    const a = [item('192.168.82.0/26', '172.31.30.6'), item('192.168.83.0/26', '172.31.30.6')]
    const {r, applied} = setup([a], (n) => (n === 1 ? ['192.168.82.0/26', '192.168.83.0/26'] : []))
    await r.reconcile(0)
    await r.reconcile(10_000)
    expect([...r.backoff.keys()]).toEqual(['192.168.82.0/26', '192.168.83.0/26'])
    await r.reconcile(40_000) // inside the back-off: kept
    expect(r.backoff.size).toBe(2)
    await r.reconcile(71_000)
    await r.reconcile(81_000)
    expect(applied).toHaveLength(2)
    expect(r.backoff.size).toBe(0)
  })

  it('forgets a route war whose prefix the plan no longer writes once the back-off is over', async () => {
    const a = [item('192.168.82.0/26', '172.31.30.6')]
    const {r} = setup([a, a, []], ['192.168.82.0/26'])
    await r.reconcile(0)
    await r.reconcile(10_000)
    expect(r.backoff.size).toBe(1)
    await r.reconcile(30_000) // the plan is empty now (the other writer's route is right), the back-off not over
    expect(r.backoff.size).toBe(1)
    await r.reconcile(71_000)
    expect(r.backoff.size).toBe(0)
  })

  it('after each write, the journal directory is pruned to --journal-keep, never a journal --cleanup-on-exit reverts', async () => {
    const a = [item('192.168.82.0/26', '172.31.30.6')]
    const b = [item('192.168.82.0/26', '172.31.20.5')]
    const kept = setup([a, a, b, b])
    for (const t of [0, 10_000, 20_000, 50_000]) await kept.r.reconcile(t)
    expect(kept.pruned).toEqual([{dir: '/j', keep: 3, protect: ['/j/1']}, {dir: '/j', keep: 3, protect: ['/j/1', '/j/2']}])
    // without --cleanup-on-exit the run holds no list of its journals: nothing of the run protected, nothing grows
    const plain = setup([a, a, b, b], [], false)
    for (const t of [0, 10_000, 20_000, 50_000]) await plain.r.reconcile(t)
    expect(plain.pruned.map((p) => p.protect)).toEqual([[], []])
    expect(plain.r.journals).toEqual([])
  })

  it('--cleanup-on-exit reverts every journal of the run, newest first', async () => {
    const a = [item('192.168.82.0/26', '172.31.30.6')]
    const b = [item('192.168.82.0/26', '172.31.20.5')]
    const {r, changes} = setup([a, a, b, b])
    await r.reconcile(0)
    await r.reconcile(10_000)
    await r.reconcile(20_000)
    await r.reconcile(50_000)
    expect(r.journals).toEqual(['/j/1', '/j/2'])
    await r.cleanup()
    expect(changes.filter((c) => c.kind === 'reconcile' && c.op === 'withdrawn').map((c) => (c as {journal?: string}).journal)).toEqual(['/j/2', '/j/1'])
  })
})
