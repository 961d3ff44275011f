// What the screen shows: the key bar and pane title fitted to the width, failed sources in the
// header, and an explanation pane that wraps under its text and does not repeat itself.
// On every capture: the shipped example and the fixtures.
import {Chalk} from 'chalk'
import {beforeAll, describe, expect, it} from 'vitest'

import {renderExplain} from '../../src/render/text.js'
import type {CheckReport} from '../../src/report/report.js'
import {createActions} from '../../src/ui/actions.js'
import {stripAnsi, wrap} from '../../src/ui/ansi.js'
import {runEffect} from '../../src/ui/effects.js'
import {defaultHostText, paneRows, type UiEvent, type UiState} from '../../src/ui/state.js'
import {footerLine, frame, headerLines, paneTitle} from '../../src/ui/view.js'
import {BIRD_FILES, CAPTURES, NO_SOCKET, fixtureReport, key, name, run, stateFor, withoutBird} from './fixture.js'

const plain = new Chalk({level: 0})
const SIZES = [{columns: 100, rows: 30}, {columns: 80, rows: 24}, {columns: 60, rows: 20}]
const after = (s: UiState, ...events: UiEvent[]) => run(s, ...events).state

/** The explanation pane's text as the TUI gets it (effects.ts with the real services). */
async function paneText(dir: string, prefix: string): Promise<string> {
  let text = ''
  await runEffect({type: 'explain', prefix, seq: 1}, createActions({from: dir}, {palette: plain}), plain, (e) => {
    if (e.type === 'pane-result') text = e.text
  }, () => {})
  return text
}

const reports = new Map<string, CheckReport>()
beforeAll(async () => {
  for (const dir of CAPTURES) reports.set(dir, await fixtureReport(dir))
})

describe.each(CAPTURES.map((d) => [name(d), d]))('ui screen on %s', (_, dir) => {
  it('the key bar shows ? help and q quit first, whole, at every width and in every mode', () => {
    for (const size of SIZES) {
      const list = stateFor(reports.get(dir)!, {size, source: dir})
      const pane = after(list, key('', {return: true}))
      const filter = after(list, key('/'))
      for (const s of [list, pane]) {
        const bar = stripAnsi(footerLine(s, plain)).trimEnd()
        expect(bar.startsWith('? help · q quit'), `${size.columns}: ${bar}`).toBe(true)
        expect(bar).not.toContain('…')
        expect(bar.length).toBeLessThanOrEqual(size.columns)
      }
      const f = stripAnsi(footerLine(filter, plain)).trimEnd()
      expect(f).toMatch(/^Enter keep · Esc clear/)
      expect(f).not.toContain('…')
    }
  })

  it('the pane title keeps its name and range and drops hints that do not fit, never cutting one', () => {
    for (const size of SIZES) {
      const s = after(stateFor(reports.get(dir)!, {size, source: dir}), key('', {return: true}))
      const title = stripAnsi(paneTitle(s, plain))
      expect(title).toHaveLength(size.columns)
      expect(title).toContain(`Explanation ${s.pane!.prefix}`)
      expect(title).not.toContain('…')
      if (size.columns >= 80) expect(title).toContain('Esc close')
    }
  })

  it('a failed source shows in the header with its reason, never as "BIRD ?" and "sessions 0/0"', async () => {
    const copy = withoutBird(dir)
    try {
      const report = await fixtureReport(copy.dir)
      expect(report.node.failed.map((f) => f.file).sort()).toEqual([...BIRD_FILES].sort())
      const wide = stateFor(report, {size: {columns: 400, rows: 24}, source: copy.dir})
      const header = headerLines(wide, plain).map(stripAnsi)
      expect(header).toHaveLength(3)
      expect(header[0]).toContain('BIRD not read')
      expect(header[0]).toContain('sessions not read')
      expect(header[0]).not.toContain('0/0')
      expect(header[2]).toContain(NO_SOCKET)
      for (const f of BIRD_FILES) expect(header[2]).toContain(f)
      // at 80 columns the reason comes first, and the screen still has exactly its rows
      const narrow = stateFor(report, {size: {columns: 80, rows: 24}, source: copy.dir})
      expect(stripAnsi(headerLines(narrow, plain)[2])).toContain('BIRD control socket')
      expect(frame(narrow, plain)).toHaveLength(24)
      expect(frame(after(narrow, key('', {return: true})), plain)).toHaveLength(24)
      // an empty list does not claim that BIRD holds nothing
      const empty = stateFor({...report, prefixes: []}, {size: {columns: 120, rows: 24}, source: copy.dir})
      expect(frame(empty, plain).map(stripAnsi).join('\n')).toContain('BIRD\'s routes could not be read')
            // h lists every failed source with its reason
      const host = defaultHostText(narrow)
      for (const f of BIRD_FILES) expect(host).toContain(`could not collect ${f}: ${NO_SOCKET}`)
    } finally {
      copy.remove()
    }
  })

  it('the explanation pane: no node header, evidence shown once, wrapped rows under their text', async () => {
    const report = reports.get(dir)!
    for (const line of report.prefixes.filter((p) => p.verdict !== 'local')) {
      const text = await paneText(dir, line.prefix)
      const cli = renderExplain((await createActions({from: dir}).explain(line.prefix)), plain)
      // the TUI's header already names the node and BIRD
      expect(text).not.toMatch(/^node .* BIRD /m)
      expect(cli).toMatch(/^node .* BIRD /m)
      // every multi-line piece of evidence is printed once
      const blocks = text.split('\n').filter((l) => /^ +\S+:\d+(-\d+)? {2}/.test(l))
      expect(new Set(blocks).size).toBe(blocks.length)
      expect(text.split('\n').length).toBeLessThan(cli.split('\n').length)
      // wrapped at 80 columns, a chain step's continuation rows start under its text, evidence under its cited text
      for (const l of text.split('\n')) {
        const wrapped = wrap(l, 79)
        if (wrapped.length < 2) continue
        const lead = /^\d+\. /.test(l) ? 20 : /^ +\S+:\d+(-\d+)? {2}\S/.test(l) ? l.indexOf('  ', l.search(/\S/)) + 2 : l.match(/^ */)![0].length
        for (const r of wrapped.slice(1)) expect(r.match(/^ */)![0].length, `${l}\n→ ${r}`).toBeGreaterThanOrEqual(lead <= 79 * 0.6 ? lead : 7)
      }
    }
  })
})

describe('the anycast explanation', () => {
  let text = ''
  let cli = ''
  beforeAll(async () => {
    text = await paneText(CAPTURES[0], '192.168.200.10/32')
    cli = renderExplain((await createActions({from: CAPTURES[0]}).explain('192.168.200.10/32')), plain, {evidenceOnce: false})
  })

  it('is concise: the BIRD paths it rests on appear once, the pane is far shorter than before', () => {
    // the BIRD block of the best path (its BGP.next_hop line) is printed once in the pane, three times when every
    // citation is printed in full
    const count = (s: string) => s.split('\n').filter((l) => l.includes('BGP.next_hop: 172.31.20.5')).length
    expect(count(cli)).toBe(3)
    expect(count(text)).toBe(1)
    const s = {...stateFor(reports.get(CAPTURES[0])!, {size: {columns: 100, rows: 30}}), pane: {kind: 'explain' as const, prefix: '192.168.200.10/32', seq: 1, status: 'ready' as const, text, scroll: 0}}
    const cliRows = paneRows({...s, pane: {...s.pane, text: cli}}).length
    expect(paneRows(s).length).toBeLessThan(cliRows * 0.7)
  })
})

describe('ui header of a BIRD 1.6 snapshot (no host name anywhere)', () => {
  it('says the node is unknown with its router id, as the CLI does, never "node ?"', async () => {
    const dir = CAPTURES.find((d) => d.endsWith('bird16-ecmp-not-tunneled'))!
    const s = stateFor(await fixtureReport(dir), {size: {columns: 200, rows: 24}, source: dir})
    const first = stripAnsi(headerLines(s, plain)[0])
    expect(first).toContain('node unknown (router id 172.31.10.4)')
    expect(first).toContain('BIRD 1.6.8')
    expect(first).not.toContain('node ?')
  })
})
