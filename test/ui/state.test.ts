import path from 'node:path'

import {beforeAll, describe, expect, it} from 'vitest'

import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import {diagnosePrefix} from '../../src/diagnose/engine.js'
import {palette} from '../../src/render/style.js'
import {FIX_INDEX_OPTIONS, planFix} from '../../src/services/fix.js'
import {loadBulkHealthySnapshot} from '../../src/services/load.js'
import {footerLine} from '../../src/ui/view.js'
import {FIXTURES} from '../helpers.js'
import {stripAnsi} from '../../src/ui/ansi.js'

import type {CheckReport} from '../../src/report/report.js'
import {CHANGE_MEMORY, HELP, NOT_AVAILABLE, layout, paneRows, sortedRows, visibleRows} from '../../src/ui/state.js'
import {ALL, ECMP, TARGET, expected, fixtureReport, key, run, stateFor, withVerdict} from './fixture.js'

let report: CheckReport
beforeAll(async () => {
  report = await fixtureReport()
})

const typed = (text: string) => [...text].map((ch) => key(ch))

describe('ui state: list and selection', () => {
  it('lists every prefix of the report, problems first', () => {
    const rows = sortedRows(report)
    expect(rows.map((r) => r.prefix).sort()).toEqual(Object.keys(expected().prefixes).sort())
    const firstHealthy = rows.findIndex((r) => ['ok', 'local', 'not-in-pool'].includes(r.verdict))
    expect(firstHealthy).toBeGreaterThan(0)
    expect(rows.slice(firstHealthy).every((r) => ['ok', 'local', 'not-in-pool'].includes(r.verdict))).toBe(true)
  })

  it('selects the first row and moves with arrows and j/k, clamped at both ends', () => {
    const s0 = stateFor(report)
    const rows = visibleRows(s0)
    expect(s0.selected).toBe(rows[0].prefix)
    expect(run(s0, key('j')).state.selected).toBe(rows[1].prefix)
    expect(run(s0, key('', {downArrow: true}), key('', {downArrow: true})).state.selected).toBe(rows[2].prefix)
    expect(run(s0, key('k')).state.selected).toBe(rows[0].prefix)
    expect(run(s0, ...rows.map(() => key('j')), key('j')).state.selected).toBe(rows.at(-1)!.prefix)
    expect(run(s0, key('G'), key('', {upArrow: true})).state.selected).toBe(rows.at(-2)!.prefix)
  })

  it('takes a burst of keys ("jj") as one key each', () => {
    const s0 = stateFor(report)
    expect(run(s0, key('jj')).state.selected).toBe(visibleRows(s0)[2].prefix)
  })
})

describe('ui state: filter', () => {
  it('/ then text narrows the list and moves the selection into it; Enter keeps the filter', () => {
    const s = run(stateFor(report), key('/'), ...typed('110'))
    expect(s.state.mode).toBe('filter')
    expect(visibleRows(s.state).map((r) => r.prefix)).toEqual([TARGET])
    expect(s.state.selected).toBe(TARGET)
    const kept = run(s.state, key('', {return: true})).state
    expect(kept.mode).toBe('list')
    expect(kept.filter).toBe('110')
    expect(visibleRows(kept)).toHaveLength(1)
  })

  it('matches verdicts and finding ids too, and q is text while filtering', () => {
    const s = run(stateFor(report), key('/'), ...typed('local'))
    expect(visibleRows(s.state).every((r) => r.verdict === 'local')).toBe(true)
    expect(visibleRows(s.state).length).toBe(Object.values(expected().prefixes).filter((p) => p.verdict === 'local').length)
    const q = run(s.state, key('q'))
    expect(q.state.quit).toBe(false)
    expect(q.state.filter).toBe('localq')
  })

  it('Esc clears the filter (while typing, and afterwards in the list); backspace deletes', () => {
    const typing = run(stateFor(report), key('/'), ...typed('1100'), key('', {backspace: true}))
    expect(typing.state.filter).toBe('110')
    expect(run(typing.state, key('', {escape: true})).state).toMatchObject({filter: '', mode: 'list'})
    const kept = run(typing.state, key('', {return: true})).state
    const cleared = run(kept, key('', {escape: true})).state
    expect(cleared.filter).toBe('')
    expect(visibleRows(cleared)).toHaveLength(report.prefixes.length)
  })
})

describe('ui state: panes and effects', () => {
  it('Enter asks for the explanation of the selection; only the matching result lands', () => {
    const s = run(stateFor(report), key('/'), ...typed('110'), key('', {return: true}), key('', {return: true}))
    expect(s.state.mode).toBe('pane')
    expect(s.state.pane).toMatchObject({kind: 'explain', prefix: TARGET, status: 'loading'})
    expect(s.effects).toEqual([{type: 'explain', prefix: TARGET, seq: s.state.pane!.seq}])
    const stale = run(s.state, {type: 'pane-result', seq: s.state.pane!.seq - 1, ok: true, text: 'old'})
    expect(stale.state.pane!.status).toBe('loading')
    const done = run(s.state, {type: 'pane-result', seq: s.state.pane!.seq, ok: true, text: 'via 172.31.20.5 dev tunl0'})
    expect(done.state.pane).toMatchObject({status: 'ready', text: 'via 172.31.20.5 dev tunl0'})
    expect(run(done.state, key('', {escape: true})).state).toMatchObject({pane: undefined, mode: 'list'})
  })

  it('an open explanation follows the selection when the list has focus', () => {
    const open = run(stateFor(report), key('', {return: true}), key('', {tab: true}))
    expect(open.state.mode).toBe('list')
    const moved = run(open.state, key('j'))
    expect(moved.effects).toEqual([{type: 'explain', prefix: moved.state.selected, seq: moved.state.pane!.seq}])
    expect(moved.state.selected).not.toBe(open.state.selected)
  })

  it('scrolls a long pane within bounds, by line and by page, and re-clamps on resize', () => {
    const long = Array.from({length: 100}, (_, i) => `line ${i}`).join('\n')
    const s = run(stateFor(report), key('', {return: true}))
    const ready = run(s.state, {type: 'pane-result', seq: s.state.pane!.seq, ok: true, text: long}).state
    const height = layout(ready).pane
    expect(height).toBeGreaterThan(0)
    expect(layout(ready).list + height + 5).toBe(24)
    expect(run(ready, key('j'), key('j')).state.pane!.scroll).toBe(2)
    expect(run(ready, key('k')).state.pane!.scroll).toBe(0)
    expect(run(ready, key('', {pageDown: true})).state.pane!.scroll).toBe(height - 1)
    const bottom = run(ready, key('G')).state
    expect(bottom.pane!.scroll).toBe(100 - height)
    expect(run(bottom, key('j')).state.pane!.scroll).toBe(100 - height)
    const taller = run(bottom, {type: 'resize', columns: 80, rows: 60}).state
    expect(taller.pane!.scroll).toBe(paneRows(taller).length - layout(taller).pane)
  })

  it('wraps pane text to the width, so a narrower terminal has more pane rows', () => {
    const text = 'x'.repeat(150)
    const s = run(stateFor(report), key('', {return: true}))
    const ready = run(s.state, {type: 'pane-result', seq: s.state.pane!.seq, ok: true, text}).state
    const narrow = run(ready, {type: 'resize', columns: 40, rows: 24}).state
    expect(paneRows(narrow).length).toBeGreaterThan(paneRows(ready).length)
  })

  it('f / a / b say "not available" when the action is absent, with no effect', () => {
    for (const [k, text] of [['f', NOT_AVAILABLE.previewFix], ['a', NOT_AVAILABLE.applyFix], ['b', NOT_AVAILABLE.writeBundle]] as const) {
      const s = run(stateFor(report), key(k))
      expect(s.effects).toEqual([])
      expect(s.state.pane).toMatchObject({status: 'unavailable', text})
    }
  })

  it('f and b run the actions when present', () => {
    const s0 = stateFor(report, {capabilities: ALL})
    const f = run(s0, key('f'))
    expect(f.effects).toEqual([{type: 'preview-fix', prefix: s0.selected, seq: f.state.pane!.seq}])
    const b = run(s0, key('b'))
    expect(b.effects).toEqual([{type: 'write-bundle', seq: b.state.pane!.seq}])
  })

  it('a asks y/n first: n leaves it, y applies and then refreshes', () => {
    const s0 = stateFor(report, {capabilities: ALL})
    expect(report.prefixes.find((p) => p.prefix === s0.selected)!.plan).not.toBeNull()
    const asked = run(s0, key('a'))
    expect(asked.state.mode).toBe('confirm')
    expect(asked.effects).toEqual([])
    const no = run(asked.state, key('n'))
    expect(no.effects).toEqual([])
    expect(no.state.mode).toBe('list')
    expect(no.state.notice).toMatch(/not applied/)
    const yes = run(asked.state, key('y'))
    expect(yes.effects).toEqual([{type: 'apply-fix', prefix: s0.selected, seq: yes.state.pane!.seq}])
    const applied = run(yes.state, {type: 'pane-result', seq: yes.state.pane!.seq, ok: true, text: 'applied'})
    expect(applied.effects).toEqual([{type: 'load'}])
    const failed = run(yes.state, {type: 'pane-result', seq: yes.state.pane!.seq, ok: false, text: 'failed: EPERM'})
    expect(failed.effects).toEqual([])
    expect(failed.state.pane!.status).toBe('error')
  })

  it('a on a multipath plan asks with its next hops as `ip route` and the findings take them', async () => {
    const anycast = '192.168.200.10/32'
    const s0 = stateFor(report, {capabilities: ALL, size: {columns: 240, rows: 30}})
    const at = run(s0, key('/'), ...typed('200.10'), key('', {return: true}))
    expect(at.state.selected).toBe(anycast)
    const question = stripAnsi(footerLine(run(at.state, key('a')).state, palette(false)))
    const hops = 'nexthop via 172.31.20.5 dev tunl0 onlink nexthop via 172.31.30.6 dev tunl0 onlink'
    expect(question).toContain(`Apply ${anycast} ${hops}? [y/N]`)
    // the same words the finding's advice uses for the route
    const ctx = new SnapshotIndex(await loadBulkHealthySnapshot({from: ECMP}, anycast))
    const advice = diagnosePrefix(ctx, anycast).findings.map((f) => f.fix ?? '').join(' ')
    expect(advice).toContain(`Program ${anycast} ${hops} (routedoctor fix)`)
  })

  it('a on a prefix with nothing planned of its own asks about the whole plan (withdrawals and rules show on no line)', () => {
    const s0 = stateFor(report, {capabilities: ALL})
    const local = run(s0, key('/'), ...typed('local'), key('', {return: true}))
    expect(report.prefixes.find((p) => p.prefix === local.state.selected)!.plan).toBeNull()
    const a = run(local.state, key('a'))
    expect(a.state.mode).toBe('confirm')
    expect(a.state.confirm).toEqual({})
    expect(stripAnsi(footerLine(a.state, palette(false)))).toContain('Apply the whole plan (every correction, withdrawal and rule change)? [y/N]')
    const no = run(a.state, key('n'))
    expect(no.effects).toEqual([])
    expect(no.state.notice).toBe('not applied: the node left as it is')
    const yes = run(a.state, key('y'))
    expect(yes.effects).toEqual([{type: 'apply-fix', seq: yes.state.pane!.seq}])
    expect(yes.state.pane!.text).toBe('applying the whole plan…')
  })

  it('a on a prefix whose plan only withdraws a stale correction (the overlay leak capture) applies that plan', async () => {
    const leak = path.join(FIXTURES, 'lab-bird2-overlay-leak')
    const block = '192.168.110.128/26'
    const r = await fixtureReport(leak)
    const line = r.prefixes.find((p) => p.prefix === block)!
    expect(line.plan).toBeNull()
    expect(line.findings.map((f) => f.id)).toContain('overlay-learnable')
    // what the UI's apply plans for it (as `fix PREFIX`): the withdrawal alone
    const {plan} = planFix(
      new SnapshotIndex(await loadBulkHealthySnapshot({from: leak}, block), FIX_INDEX_OPTIONS),
      block,
    )
    expect(plan.items.map((i) => [i.action, i.planned.dst, i.planned.tableId])).toEqual([['delete', block, 254]])
    const s0 = stateFor(r, {capabilities: ALL})
    const at = run(s0, key('/'), ...typed(block), key('', {return: true}))
    expect(at.state.selected).toBe(block)
    const a = run(at.state, key('a'))
    expect(a.state.mode).toBe('confirm')
    expect(a.state.confirm).toEqual({prefix: block})
    expect(stripAnsi(footerLine(a.state, palette(false)))).toContain(`Apply ${block} withdrawing routedoctor's stale routes? [y/N]`)
    const yes = run(a.state, key('y'))
    expect(yes.effects).toEqual([{type: 'apply-fix', prefix: block, seq: yes.state.pane!.seq}])
  })

  it('the help names every verdict the list puts first, as problems (DESIGN §4)', () => {
    const problems = HELP.slice(HELP.indexOf('Problems first')).replace(/\s+/g, ' ')
    for (const v of ['missing', 'unreachable', 'misrouted', 'not-tunneled', 'multipath-lost']) {
      expect(problems).toContain(v)
      const healthy = structuredClone(report)
      for (const p of healthy.prefixes) p.verdict = 'ok'
      expect(sortedRows(withVerdict(healthy, TARGET, v as never))[0]).toMatchObject({prefix: TARGET, verdict: v})
    }
  })

  it('? toggles help; q quits from the list and from a pane', () => {
    const help = run(stateFor(report), key('?'))
    expect(help.state.pane).toMatchObject({kind: 'help', text: HELP})
    expect(run(help.state, key('?')).state.pane).toBeUndefined()
    for (const s of [stateFor(report), help.state]) {
      const q = run(s, key('q'))
      expect(q.state.quit).toBe(true)
      expect(q.effects).toEqual([{type: 'exit'}])
    }
    expect(run(stateFor(report), key('c', {ctrl: true})).effects).toEqual([{type: 'exit'}])
  })
})

describe('ui state: refresh', () => {
  it('r loads once at a time; ticks load only when live', () => {
    const r = run(stateFor(report), key('r'))
    expect(r.effects).toEqual([{type: 'load', freshTruth: true}]) // asked for: Calico's truth read again too
    expect(run(r.state, key('r')).effects).toEqual([])
    expect(run(stateFor(report), {type: 'tick'}).effects).toEqual([])
    expect(run(stateFor(report, {live: true}), {type: 'tick'}).effects).toEqual([{type: 'load'}])
  })

  it("a tick waits after a load at least as long as the load took (a full table's holds the keys meanwhile); r does not", () => {
    const live = stateFor(report, {live: true})
    const loaded = run(run(live, key('r')).state, {type: 'loaded', report, at: '2026-01-01T00:00:10Z', tookMs: 9000}).state
    expect(loaded.loading).toBe(false)
    const at = Date.parse('2026-01-01T00:00:10Z')
    expect(run(loaded, {type: 'tick', now: at + 5000}).effects).toEqual([]) // 5 s after a 9 s load: resting
    expect(run(loaded, {type: 'tick', now: at + 8999}).effects).toEqual([])
    expect(run(loaded, {type: 'tick', now: at + 9000}).effects).toEqual([{type: 'load'}])
    expect(run(loaded, key('r')).effects).toEqual([{type: 'load', freshTruth: true}]) // asked for: at once
    // a quick load rests as briefly
    const quick = run(run(live, key('r')).state, {type: 'loaded', report, at: '2026-01-01T00:00:10Z', tookMs: 40}).state
    expect(run(quick, {type: 'tick', now: at + 5000}).effects).toEqual([{type: 'load'}])
  })

  it('marks verdict changes, keeps the selection, and forgets the marks after a few quiet loads', () => {
    const s0 = run(stateFor(report, {live: true}), key('j')).state
    const changedPrefix = sortedRows(report)[0].prefix
    const next = withVerdict(report, changedPrefix, 'ok')
    const s1 = run(s0, {type: 'loaded', report: next, at: '2026-01-01T00:00:05Z'}).state
    expect(s1.changes[changedPrefix]).toMatchObject({from: report.prefixes.find((p) => p.prefix === changedPrefix)!.verdict, to: 'ok'})
    expect(Object.keys(s1.changes)).toEqual([changedPrefix])
    expect(s1.notice).toMatch(/1 verdict changed/)
    expect(s1.selected).toBe(s0.selected)
    let s = s1
    for (let i = 0; i < CHANGE_MEMORY - 1; i++) s = run(s, {type: 'loaded', report: next, at: 'x'}).state
    expect(s.changes[changedPrefix]).toBeDefined()
    s = run(s, {type: 'loaded', report: next, at: 'x'}).state
    expect(s.changes[changedPrefix]).toBeUndefined()
  })

  it('re-reads an open explanation after a refresh, and reports a failed refresh', () => {
    const open = run(stateFor(report, {live: true}), key('', {return: true})).state
    const after = run(open, {type: 'loaded', report, at: 'x'})
    expect(after.effects).toEqual([{type: 'explain', prefix: open.pane!.prefix, seq: after.state.pane!.seq}])
    const failed = run(open, {type: 'load-failed', error: 'BIRD socket gone'})
    expect(failed.state.notice).toContain('BIRD socket gone')
    expect(failed.state.report).toBe(open.report)
  })
})
