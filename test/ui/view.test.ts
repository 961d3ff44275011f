import {Chalk} from 'chalk'
import {beforeAll, describe, expect, it} from 'vitest'

import {renderExplain} from '../../src/render/text.js'
import type {CheckReport} from '../../src/report/report.js'
import {explainReport} from '../../src/report/report.js'
import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import {loadSnapshot} from '../load-snapshot.js'
import {expandTabs, stripAnsi, truncate, visibleWidth, wrap} from '../../src/ui/ansi.js'
import {update, type UiState} from '../../src/ui/state.js'
import {frame} from '../../src/ui/view.js'
import {ECMP, TARGET, fixtureReport, stateFor, withVerdict} from './fixture.js'

const plain = new Chalk({level: 0})
const colour = new Chalk({level: 1})

describe('ansi fitting', () => {
  it('truncates to the width with an ellipsis and closes colours', () => {
    const s = colour.red('abcdefghij')
    const t = truncate(s, 5)
    expect(stripAnsi(t)).toBe('abcd…')
    expect(t.endsWith('\x1b[0m')).toBe(true)
    expect(truncate('short', 10)).toBe('short')
  })

  it('wraps hard at the width, indents continuations and reopens the colour on each row', () => {
    const rows = wrap(colour.green('x'.repeat(25)), 10, 2)
    expect(rows.map(stripAnsi)).toEqual(['x'.repeat(10), '  ' + 'x'.repeat(8), '  ' + 'x'.repeat(7)])
    for (const r of rows) expect(r).toContain('\x1b[32m')
    expect(rows.every((r) => visibleWidth(r) <= 10)).toBe(true)
  })

  it('breaks at the last space that fits, keeping each row within the width', () => {
    const text = 'node vm  BIRD 2.0.12  sessions 2/2 Established  tunnel tunl0'
    const rows = wrap(text, 50, 4)
    expect(rows).toEqual(['node vm  BIRD 2.0.12  sessions 2/2 Established', '    tunnel tunl0'])
    const coloured = wrap(`aaa ${colour.red('bbbbbb cccccc')} ddd`, 12, 2)
    expect(coloured.map(stripAnsi)).toEqual(['aaa bbbbbb', '  cccccc ddd'])
    expect(coloured[1].startsWith('  \x1b[31m')).toBe(true) // red reopened after the break
    for (const w of [5, 9, 17, 33]) for (const r of wrap(text, w, 2)) expect(visibleWidth(r)).toBeLessThanOrEqual(w)
  })

  it('expands tabs to stops of 8', () => {
    expect(expandTabs('ab\tc')).toBe('ab      c')
    expect(visibleWidth('\tnexthop')).toBe(15)
  })
})

describe('screen frame', () => {
  let report: CheckReport
  let explanation: string
  let plainExplanation: string
  beforeAll(async () => {
    report = await fixtureReport()
    const why = explainReport(new SnapshotIndex(await loadSnapshot({from: ECMP})), TARGET)
    explanation = renderExplain(why, colour)
    plainExplanation = renderExplain(why, plain)
  })

  function withPane(s: UiState, text: string): UiState {
    const open = update(s, {type: 'key', input: '', key: {return: true}}).state
    return update(open, {type: 'pane-result', seq: open.pane!.seq, ok: true, text}).state
  }

  it.each([[80, 24], [40, 10], [132, 50], [60, 15]])('fills exactly %ix%i, never wider, with and without a pane', (columns, rows) => {
    const s = stateFor(report, {size: {columns, rows}})
    for (const st of [s, withPane(s, explanation)]) {
      const lines = frame(st, colour)
      expect(lines).toHaveLength(rows)
      for (const l of lines) expect(visibleWidth(l)).toBe(columns)
    }
  })

  it('shows node, BIRD version and sessions in the header, and every prefix with its verdict', () => {
    const lines = frame(stateFor(report), plain)
    const n = report.node
    expect(lines[0]).toContain(`node ${n.host}`)
    expect(lines[0]).toContain(`BIRD ${n.birdVersion}`)
    expect(lines[0]).toContain(`sessions ${n.sessions.up}/${n.sessions.total}`)
    for (const p of report.prefixes) expect(lines.find((l) => l.includes(p.prefix))).toMatch(new RegExp(`${p.prefix.replace(/\./g, '\\.')}\\s+${p.verdict}`))
  })

  it('marks a changed verdict with * and what it was, highlighted when colour is on', () => {
    const s0 = stateFor(report, {live: true})
    const prefix = report.prefixes.find((p) => p.verdict !== 'ok')!.prefix
    const s1 = update(s0, {type: 'loaded', report: withVerdict(report, prefix, 'ok'), at: '2026-01-01T00:00:05Z'}).state
    const row = frame(s1, plain).find((l) => l.includes(prefix))!
    expect(row).toMatch(/^.\*/)
    expect(row).toContain(`was ${report.prefixes.find((p) => p.prefix === prefix)!.verdict}`)
    expect(frame(s1, colour).find((l) => l.includes(prefix))).toContain('\x1b[43m')
    const other = frame(s1, plain).find((l) => l.includes(report.prefixes.find((p) => p.prefix !== prefix)!.prefix))!
    expect(other).not.toMatch(/^.\*/)
  })

  it('without colour there is no escape sequence at all', () => {
    const s = withPane(stateFor(report), plainExplanation)
    expect(frame(s, plain).join('\n')).not.toContain('\x1b[')
  })
})

describe('a full table in the list', () => {
  it('draws 300k prefixes (no spread of every prefix), problems first, and filters them', async () => {
    const base = await fixtureReport()
    const prefixes = Array.from({length: 300_000}, (_, i) => ({
      prefix: `10.${(i >> 10) & 255}.${(i >> 2) & 255}.${(i & 3) * 64}/26`, verdict: (i % 5 === 0 ? 'not-tunneled' : 'ok') as 'ok' | 'not-tunneled', findings: [], plan: null,
    }))
    const big: CheckReport = {...base, prefixes}
    const s = stateFor(big)
    const screen = frame(s, plain).join('\n')
    expect(screen).toContain('10.0.0.0/26')
    expect(screen).toMatch(/10\.0\.0\.0\/26\s+not-tunneled/)
    const filtered = update(s, {type: 'key', input: '/', key: {}}).state
    expect(frame(filtered, plain).length).toBeGreaterThan(0)
  })
})
