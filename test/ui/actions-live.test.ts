// ui on a live node: opening (and, on each refresh, re-reading) an explanation collects what that block's chain needs
// (services/targeted.ts), as `explain` does, never the whole node. The targeted collection is stood in for by a
// fixture's files; a whole-node collection fails the test.
import {Chalk} from 'chalk'
import {describe, expect, it, vi} from 'vitest'

import {loadExplainReport} from '../../src/services/explain.js'
import {createActions} from '../../src/ui/actions.js'
import {runEffect} from '../../src/ui/effects.js'
import type {Effect, UiState} from '../../src/ui/state.js'
import {ALL, ECMP, TARGET, fixtureReport, key, run, stateFor} from './fixture.js'

const plain = new Chalk({level: 0})

const seen = vi.hoisted(() => ({targeted: [] as string[], whole: 0}))

vi.mock('../../src/services/targeted.js', async (original) => {
  const {loadSourceFiles} = await import('../../src/services/load.js')
  return {
    ...(await original<typeof import('../../src/services/targeted.js')>()),
    collectTargeted: async (query: string) => {
      seen.targeted.push(query)
      const {files} = await loadSourceFiles({from: ECMP})
      return {files, origin: {kind: 'live', collectedAt: '2026-01-01T00:00:00Z', host: 'n1'}, otherNextHops: []}
    },
  }
})
vi.mock('../../src/collect/live.js', async (original) => ({
  ...(await original<typeof import('../../src/collect/live.js')>()),
  collectLive: async () => {
    seen.whole++
    throw new Error('a whole-node collection')
  },
}))

describe('ui on a live node: an explanation is collected for its block alone', () => {
  it('opening one, and its re-reading after a refresh, go the targeted way; the answer is the full collection\'s', async () => {
    const actions = createActions({}) // live: no --from
    const live = await actions.explain(TARGET)
    expect(seen.targeted).toEqual([TARGET])
    expect(seen.whole).toBe(0)
    const full = await loadExplainReport({from: ECMP, requireKernelRoutes: true}, TARGET)
    const of = (r: typeof full) => JSON.parse(JSON.stringify({v: r.verdict, f: r.findings, p: r.plan, c: r.chain}))
    expect(of(live)).toEqual(of(full))
    expect(live.verdict).toBe('not-tunneled')
  })

  it('a refresh of the list re-reads the open explanation the same way, the list itself read whole', async () => {
    const actions = createActions({}, {palette: plain})
    const report = await fixtureReport(ECMP)
    let state: UiState = {...stateFor(report, {live: true, capabilities: ALL}), selected: TARGET}
    const explained: string[] = []
    const perform = async (effects: Effect[]) => {
      for (const effect of effects) {
        if (effect.type !== 'explain') continue
        explained.push(effect.prefix)
        await runEffect(effect, actions, plain, (e) => (state = run(state, e).state), () => {})
      }
    }
    const before = seen.targeted.length
    const opened = run(state, key('', {return: true}))
    state = opened.state
    await perform(opened.effects)
    expect(state.pane).toMatchObject({kind: 'explain', prefix: TARGET, status: 'ready'})
    // the timer's refresh: the list is loaded (a whole collection, stood in for here), then the pane re-read
    const refreshed = run(state, {type: 'loaded', report, at: '2026-01-01T00:00:10Z', tookMs: 10})
    state = refreshed.state
    await perform(refreshed.effects)
    expect(explained).toEqual([TARGET, TARGET])
    expect(seen.targeted.slice(before)).toEqual([TARGET, TARGET])
    expect(seen.whole).toBe(0)
    expect(state.pane).toMatchObject({kind: 'explain', prefix: TARGET, status: 'ready'})
  })
})
