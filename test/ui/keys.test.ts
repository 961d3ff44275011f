// Keys that arrive together (one input chunk: fast typing over SSH, a paste), and keys that must
// not act on a prefix the list does not show. On every capture: the shipped example and the fixtures.
import {beforeAll, describe, expect, it} from 'vitest'

import type {CheckReport} from '../../src/report/report.js'
import {splitKeys} from '../../src/ui/keys.js'
import {shownSelection, update, visibleRows} from '../../src/ui/state.js'
import {ALL, CAPTURES, fixtureReport, key, name, run, stateFor, withVerdict} from './fixture.js'

const ENTER = key('', {return: true})

const reports = new Map<string, CheckReport>()
beforeAll(async () => {
  for (const dir of CAPTURES) reports.set(dir, await fixtureReport(dir))
})
const start = (dir: string) => stateFor(reports.get(dir)!, {capabilities: ALL, source: dir})

describe('splitKeys', () => {
  it('cuts a chunk into text runs and the control keys between them', () => {
    expect(splitKeys('/local\r', {})).toEqual([{input: '/local', key: {}}, {input: '', key: {return: true}}])
    expect(splitKeys('jj\r', {})).toEqual([{input: 'jj', key: {}}, {input: '', key: {return: true}}])
    expect(splitKeys('ab\x7fc\tq', {})).toEqual([{input: 'ab', key: {}}, {input: '', key: {backspace: true}}, {input: 'c', key: {}}, {input: '', key: {tab: true}}, {input: 'q', key: {}}])
    expect(splitKeys('x\r\ny', {})).toEqual([{input: 'x', key: {}}, {input: '', key: {return: true}}, {input: 'y', key: {}}])
    expect(splitKeys('j\x03', {})).toEqual([{input: 'j', key: {}}, {input: 'c', key: {ctrl: true}}])
    // one key, or a key with a modifier, is as Ink reported it
    expect(splitKeys('j', {})).toEqual([{input: 'j', key: {}}])
    expect(splitKeys('', {return: true})).toEqual([{input: '', key: {return: true}}])
  })
})

describe.each(CAPTURES.map((d) => [name(d), d]))('ui keys on %s', (_, dir) => {
  it('handles "/local" and Enter in one chunk: the filter is kept and the list shows the local prefixes', () => {
    const s = run(start(dir), key('/local\r')).state
    expect(s.mode).toBe('list')
    expect(s.filter).toBe('local')
    const rows = visibleRows(s)
    expect(rows.length).toBeGreaterThan(0)
    expect(rows.every((r) => r.verdict === 'local')).toBe(true)
    // the same keys one at a time give the same state
    const slow = run(start(dir), ...[...'/local'].map((ch) => key(ch)), ENTER).state
    expect({mode: slow.mode, filter: slow.filter, selected: slow.selected}).toEqual({
      mode: s.mode,
      filter: s.filter,
      selected: s.selected,
    })
  })

  it('handles "j j Enter" in one chunk: moves twice and opens the explanation of that row', () => {
    const s0 = start(dir)
    const rows = visibleRows(s0)
    const u = run(s0, key('jj\r'))
    expect(u.state.selected).toBe(rows[2].prefix)
    expect(u.state.pane).toMatchObject({kind: 'explain', prefix: rows[2].prefix})
    expect(u.effects).toEqual([{type: 'explain', prefix: rows[2].prefix, seq: u.state.pane!.seq}])
  })

  it('takes a whole paste into the filter, Backspace and Enter included', () => {
    const s = run(start(dir), key('/'), key('loca\x7fal\r')).state
    expect(s.filter).toBe('local')
    expect(s.mode).toBe('list')
    expect(run(start(dir), key('/nomatch\x1b')).state).toMatchObject({filter: '', mode: 'list'})
  })

  it('never takes a key typed in the same chunk as `a` for the answer to "apply?"', () => {
    const s0 = start(dir)
    const broken = visibleRows(s0).find((r) => r.plan)
    if (!broken) return // a healthy capture has nothing to apply
    const u = run({...s0, selected: broken.prefix}, key('ay'))
    expect(u.state.mode).toBe('confirm')
    expect(u.effects).toEqual([])
    // the answer typed after the question applies
    const yes = run(u.state, key('y'))
    expect(yes.effects).toEqual([{type: 'apply-fix', prefix: broken.prefix, seq: yes.state.pane!.seq}])
  })

  it('with a filter matching nothing, Enter, f and a act on nothing and say why', () => {
    const s = run(start(dir), key('/'), key('nomatch'), ENTER).state
    expect(visibleRows(s)).toHaveLength(0)
    expect(shownSelection(s)).toBeUndefined()
    for (const k of [ENTER, key('f'), key('a')]) {
      const u = run(s, k)
      expect(u.effects).toEqual([])
      expect(u.state.pane).toBeUndefined()
      expect(u.state.mode).toBe('list')
      expect(u.state.confirm).toBeUndefined()
      expect(u.state.notice).toMatch(/no prefix is listed.*"nomatch"/)
    }
    // in one chunk too
    expect(run(s, key('\rfa')).effects).toEqual([])
  })

  it('the open explanation follows the filter: a new selection is explained, no match closes it', () => {
    const s0 = start(dir)
    const first = visibleRows(s0)[0].prefix
    const open = run(s0, ENTER).state
    expect(open.pane).toMatchObject({kind: 'explain', prefix: first})
    // a filter that hides the explained prefix but lists others
    const local = run(open, key('/local')).state
    const shown = visibleRows(local).map((r) => r.prefix)
    expect(shown).not.toContain(first)
    expect(local.pane?.prefix).toBe(local.selected)
    expect(shown).toContain(local.pane?.prefix)
    // moved twice in one chunk, only the explanation of the last selection is asked for
    const moved = run(run(open, key('', {tab: true})).state, key('jj'))
    expect(moved.state.selected).toBe(visibleRows(open)[2].prefix)
    expect(moved.effects).toEqual([{type: 'explain', prefix: moved.state.selected, seq: moved.state.pane!.seq}])
    // a filter that lists nothing closes it
    const none = run(open, key('/nomatch'))
    expect(none.state.pane).toBeUndefined()
    expect(none.effects.filter((e) => e.type !== 'explain')).toEqual([])
  })

  it('a fix preview follows the filter too', () => {
    const s0 = start(dir)
    const fix = run(s0, key('f'), key('', {tab: true})).state
    expect(fix.pane?.kind).toBe('fix')
    const u = run(fix, key('/local'))
    expect(u.state.pane?.prefix).toBe(u.state.selected)
    expect(u.effects.at(-1)).toMatchObject({type: 'preview-fix', prefix: u.state.selected})
    expect(run(fix, key('/nomatch')).state.pane).toBeUndefined()
  })

  it('after a refresh in which the explained prefix is gone, the pane does not keep showing it', () => {
    const s0 = start(dir)
    const first = visibleRows(s0)[0].prefix
    const open = run(s0, ENTER).state
    const report = reports.get(dir)!
    const without = {...report, prefixes: report.prefixes.filter((p) => p.prefix !== first)}
    const u = update(open, {type: 'loaded', report: without, at: '2026-01-01T00:00:05Z'})
    expect(u.state.pane?.prefix).not.toBe(first)
    expect(u.state.pane?.prefix).toBe(u.state.selected)
  })

  it('r says that it refreshed, and what changed', () => {
    const s0 = start(dir)
    const asked = run(s0, key('r'))
    expect(asked.effects).toEqual([{type: 'load', freshTruth: true}])
    const done = update(asked.state, {type: 'loaded', report: reports.get(dir)!, at: '2026-01-01T00:00:05Z'}).state
    expect(done.notice).toMatch(/^refreshed at \d\d:\d\d:\d\d: no verdict changed/)
    const changed = withVerdict(reports.get(dir)!, visibleRows(s0)[0].prefix, 'missing')
    expect(update(asked.state, {type: 'loaded', report: changed, at: '2026-01-01T00:00:05Z'}).state.notice).toMatch(/^refreshed at .*: 1 verdict changed/)
    // a refresh of the timer says nothing
    const ticked = update({...s0, live: true}, {type: 'tick'})
    expect(ticked.effects).toEqual([{type: 'load'}])
    const timer = update(ticked.state, {type: 'loaded', report: reports.get(dir)!, at: '2026-01-01T00:00:05Z'}).state
    expect(timer.notice).toBeUndefined()
  })
})
