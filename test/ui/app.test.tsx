import {mkdtempSync, existsSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {Chalk} from 'chalk'
import {render, cleanup} from 'ink-testing-library'
import {afterEach, beforeAll, describe, expect, it, vi} from 'vitest'

import {createActions, capabilities, type UiActions} from '../../src/ui/actions.js'
import {App} from '../../src/ui/components/App.js'
import {initialState, NOT_AVAILABLE} from '../../src/ui/state.js'
import type {CheckReport} from '../../src/report/report.js'
import {stripAnsi} from '../../src/ui/ansi.js'
import {FIXTURES} from '../helpers.js'
import {ECMP, EXAMPLE, NO_SOCKET, TARGET, expected, fixtureReport, name, withVerdict, withoutBird} from './fixture.js'

let report: CheckReport
beforeAll(async () => {
  report = await fixtureReport()
})
afterEach(() => cleanup())

const ESC = '\x1b'
const DOWN = '\x1b[B'

function mount(
  actions: UiActions,
  opts: {
    live?: boolean
    refreshMs?: number
    size?: {columns: number; rows: number}
    colorLevel?: 0 | 1
    followSize?: boolean
    report?: CheckReport
    source?: string
  } = {},
) {
  const onExit = vi.fn()
  const initial = initialState({
    report: opts.report ?? report,
    live: opts.live ?? false,
    source: opts.source ?? ECMP,
    capabilities: capabilities(actions),
    size: opts.size ?? {columns: 80, rows: 24},
  })
  const app = render(
    <App
      initial={initial}
      actions={actions}
      colorLevel={opts.colorLevel ?? 0}
      refreshMs={opts.refreshMs}
      followSize={opts.followSize ?? false}
      onExit={onExit}
    />,
  )
  const screen = () => stripAnsi(app.lastFrame() ?? '')
  const waitFor = async (pred: (s: string) => boolean, what: string, ms = 5000) => {
    const end = Date.now() + ms
    while (Date.now() < end) {
      if (pred(screen())) return screen()
      await new Promise((r) => setTimeout(r, 20))
    }
    throw new Error(`timed out waiting for ${what}; screen:\n${screen()}`)
  }
  // one key at a time, each after the previous one has been handled
  const press = async (...keys: string[]) => {
    for (const k of keys) {
      app.stdin.write(k)
      await new Promise((r) => setTimeout(r, 30))
    }
  }
  return {app, screen, waitFor, press, onExit}
}

const fixtureActions = () => createActions({from: ECMP}, {palette: new Chalk({level: 0})})
/** The fixture's actions without some of the optional ones. */
function without(...names: Array<'previewFix' | 'applyFix' | 'writeBundle'>): UiActions {
  const a: UiActions = {...fixtureActions()}
  for (const n of names) delete a[n]
  return a
}

describe('ui app (ink-testing-library)', () => {
  it('lists every pool prefix with its verdict, problems first, under a header with node, BIRD and sessions', async () => {
    const {screen, waitFor} = mount(fixtureActions())
    await waitFor((s) => s.includes('PREFIX'), 'the list')
    const lines = screen().split('\n')
    expect(lines).toHaveLength(24)
    expect(lines[0]).toContain(`node ${report.node.host}`)
    expect(lines[0]).toContain(`BIRD ${report.node.birdVersion}`)
    expect(lines[0]).toContain(`sessions ${report.node.sessions.up}/${report.node.sessions.total} up`)
    const want = expected().prefixes
    const at = (p: string) => lines.findIndex((l) => l.includes(p))
    for (const [prefix, e] of Object.entries(want)) expect(lines[at(prefix)]).toMatch(new RegExp(`${prefix.replace(/\./g, '\\.')}\\s+${e.verdict}`))
    const broken = Object.keys(want).filter((p) => want[p].verdict !== 'ok' && want[p].verdict !== 'local')
    const healthy = Object.keys(want).filter((p) => !broken.includes(p))
    expect(Math.max(...broken.map(at))).toBeLessThan(Math.min(...healthy.map(at)))
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(80)
  })

  it('filters with /, then Enter opens the explanation with the BGP next hop and tunl0', async () => {
    const {screen, waitFor, press} = mount(fixtureActions())
    await waitFor((s) => s.includes('PREFIX'), 'the list')
    await press('/', '1', '1', '0')
    await waitFor((s) => s.includes('/110'), 'the filter being typed')
    const filtered = screen()
    expect(filtered).toContain(TARGET)
    for (const p of report.prefixes.filter((x) => !x.prefix.includes('110'))) expect(filtered).not.toContain(p.prefix)
    await press('\r', '\r')
    const shown = await waitFor((s) => s.includes(`Explanation ${TARGET}`) && s.includes('NOT-TUNNELED'), 'the explanation')
    expect(shown).toContain('172.31.20.5')
    expect(shown).toMatch(/BGP session/)
    await press('G')
    await waitFor((s) => s.includes('ip route replace 192.168.110.128/26 table 1158'), 'the corrected route at the end of the explanation')
  })

  it('scrolls the explanation with j and closes it with Esc', async () => {
    const {screen, waitFor, press} = mount(fixtureActions())
    await waitFor((s) => s.includes('PREFIX'), 'the list')
    await press('\r')
    await waitFor((s) => / 1-\d+ of \d+ /.test(s), 'a scrollable explanation')
    await press('j', 'j', 'j')
    await waitFor((s) => / 4-\d+ of \d+ /.test(s), 'the pane scrolled by 3')
    await press(ESC)
    await waitFor((s) => !s.includes('Explanation'), 'the pane closed')
    expect(screen()).toContain('PREFIX')
  })

  it('moves the selection with the arrow keys', async () => {
    const {screen, waitFor, press} = mount(fixtureActions())
    await waitFor((s) => s.includes('PREFIX'), 'the list')
    const selected = () => screen().split('\n').find((l) => l.startsWith('›'))!
    const first = selected()
    await press(DOWN)
    await waitFor(() => selected() !== first, 'the selection to move')
    expect(selected()).not.toBe(first)
  })

  it('? shows help, q quits', async () => {
    const {waitFor, press, onExit} = mount(fixtureActions())
    await waitFor((s) => s.includes('PREFIX'), 'the list')
    await press('?')
    const help = await waitFor((s) => s.includes('Help'), 'help')
    expect(help).toMatch(/q\s+quit/)
    expect(help).toMatch(/\/\s+filter/)
    expect(onExit).not.toHaveBeenCalled()
    await press('q')
    await vi.waitFor(() => expect(onExit).toHaveBeenCalledTimes(1))
  })

  it('f says "not available" without a fix action', async () => {
    const {waitFor, press} = mount(without('previewFix'))
    await waitFor((s) => s.includes('PREFIX'), 'the list')
    await press('f')
    const s = await waitFor((x) => x.includes('Fix preview'), 'the fix pane')
    expect(s.replace(/\s+/g, ' ')).toContain(NOT_AVAILABLE.previewFix.slice(0, 40))
  })

  it('f shows what an injected previewFix returns, for the selected prefix', async () => {
    const previewFix = vi.fn(async (prefix: string) => `PLAN ${prefix}: ip route replace ${prefix} via 172.31.20.5 dev tunl0 onlink`)
    const {waitFor, press} = mount({...fixtureActions(), previewFix})
    await waitFor((s) => s.includes('PREFIX'), 'the list')
    await press('/', '1', '1', '0', '\r', 'f')
    const s = await waitFor((x) => x.includes(`PLAN ${TARGET}`), 'the fake preview')
    expect(previewFix).toHaveBeenCalledWith(TARGET)
    expect(s).not.toContain('not available')
  })

  it('a asks y/n, applies with y through the injected action, then refreshes', async () => {
    const base = fixtureActions()
    const loadReport = vi.fn(() => base.loadReport())
    const applyFix = vi.fn(async (prefix: string) => `applied ${prefix}; verified`)
    const {waitFor, press} = mount({...base, loadReport, applyFix})
    await waitFor((s) => s.includes('PREFIX'), 'the list')
    await press('/', '1', '1', '0', '\r', 'a')
    await waitFor((s) => s.includes('[y/N]'), 'the confirmation')
    expect(applyFix).not.toHaveBeenCalled()
    await press('y')
    await waitFor((s) => s.includes(`applied ${TARGET}; verified`), 'the apply result')
    expect(applyFix).toHaveBeenCalledWith(TARGET)
    await vi.waitFor(() => expect(loadReport).toHaveBeenCalled())
  })

  it('b writes a bundle through the injected action, or says it is not available', async () => {
    const a = mount(without('writeBundle'))
    await a.waitFor((s) => s.includes('PREFIX'), 'the list')
    await a.press('b')
    await a.waitFor((s) => s.includes('Support bundle') && s.includes('not available'), 'not available')
    cleanup()
    const writeBundle = vi.fn(async () => 'wrote /tmp/routedoctor-vm-x.tar.gz')
    const b = mount({...fixtureActions(), writeBundle})
    await b.waitFor((s) => s.includes('PREFIX'), 'the list')
    await b.press('b')
    await b.waitFor((s) => s.includes('wrote /tmp/routedoctor-vm-x.tar.gz'), 'the bundle path')
    expect(writeBundle).toHaveBeenCalledTimes(1)
  })

  it('f with the real fix service shows the planned tunnel route; a is not offered for --from', async () => {
    const actions = fixtureActions()
    expect(capabilities(actions)).toMatchObject({previewFix: true, writeBundle: true, applyFix: false})
    const {waitFor, press} = mount(actions)
    await waitFor((s) => s.includes('PREFIX'), 'the list')
    await press('/', '1', '1', '0', '\r', 'f')
    const s = await waitFor((x) => x.includes('Fix preview') && x.includes('ip route replace'), 'the fix preview')
    // the pane wraps long lines
    expect(s.replace(/\s+/g, ' ')).toMatch(/table 1158 proto 158 metric 0 via 172\.31\.20\.5 dev tunl0 onlink/)
    await press('a')
    await waitFor((x) => x.includes('Apply fix') && x.replace(/\s+/g, ' ').includes('offline snapshot'), 'apply not available')
  })

  it('b with the real bundle service writes a bundle and names it', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rd-ui-bundle-'))
    try {
      const {waitFor, press} = mount(createActions({from: ECMP}, {palette: new Chalk({level: 0}), bundleDir: dir, toolVersion: '0.0.0-test'}), {size: {columns: 160, rows: 24}})
      await waitFor((s) => s.includes('PREFIX'), 'the list')
      await press('b')
      const s = await waitFor((x) => /Wrote \S+\.tar\.gz/.test(x), 'the bundle path', 30_000)
      const file = s.match(/Wrote (\S+\.tar\.gz)/)![1]
      expect(file.startsWith(dir)).toBe(true)
      expect(existsSync(file)).toBe(true)
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })

  it('live: refreshes on its own and marks a verdict that changed', async () => {
    const changed = report.prefixes.find((p) => p.verdict === 'not-tunneled')!.prefix
    // the UI starts from `report`; every refresh after that sees the changed verdict
    const loadReport = vi.fn(async () => withVerdict(report, changed, 'ok'))
    const {waitFor} = mount({...fixtureActions(), loadReport}, {live: true, refreshMs: 50})
    const s = await waitFor((x) => x.includes('was not-tunneled'), 'the change mark')
    const row = s.split('\n').find((l) => l.includes(changed))!
    expect(row).toMatch(/^.\*/)
    expect(row).toMatch(/\bok\b/)
    expect(loadReport).toHaveBeenCalled()
  })

  it('follows a resize of the terminal', async () => {
    const {app, screen, waitFor} = mount(fixtureActions(), {followSize: true})
    await waitFor((s) => s.includes('PREFIX'), 'the list')
    // ink-testing-library's stdout is 100 columns wide with no rows: the UI falls back to 24 rows
    expect(screen().split('\n')).toHaveLength(24)
    Object.defineProperty(app.stdout, 'columns', {value: 50, configurable: true})
    Object.defineProperty(app.stdout, 'rows', {value: 12, configurable: true})
    app.stdout.emit('resize')
    await waitFor((s) => s.split('\n').length === 12, '12 rows')
    for (const l of screen().split('\n')) expect(l.length).toBeLessThanOrEqual(50)
  })

  it('colours verdicts unless told not to (NO_COLOR gives level 0)', async () => {
    const coloured = mount(fixtureActions(), {colorLevel: 1})
    await coloured.waitFor((s) => s.includes('PREFIX'), 'the list')
    expect(coloured.app.lastFrame()).toContain('\x1b[31m')
    cleanup()
    const bare = mount(fixtureActions(), {colorLevel: 0})
    await bare.waitFor((s) => s.includes('PREFIX'), 'the list')
    expect(bare.app.lastFrame()).not.toContain('\x1b[')
  })
})

// Keys written to the terminal in one chunk (fast typing over SSH, a paste), keys with no listed
// prefix, failed sources and `r`, through Ink's real input handling, on the example and a fixture.
describe.each([EXAMPLE, path.join(FIXTURES, 'bird16-ecmp-not-tunneled')].map((d) => [name(d), d]))(
  'ui app on %s',
  (_, dir) => {
    const actionsFor = (from: string) => createActions({from}, {palette: new Chalk({level: 0})})
    let own: CheckReport
    beforeAll(async () => {
      own = await fixtureReport(dir)
    })

    it('"/local" and Enter in one write keep the filter; "jj" and Enter in one write explain the third row', async () => {
      const {app, screen, waitFor} = mount(actionsFor(dir), {report: own, source: dir})
      await waitFor((s) => s.includes('PREFIX'), 'the list')
      app.stdin.write('/local\r')
      const kept = await waitFor((s) => s.includes('filter "local"'), 'the filter kept')
      const locals = own.prefixes.filter((p) => p.verdict === 'local').map((p) => p.prefix)
      for (const p of locals) expect(kept).toContain(p)
      for (const p of own.prefixes.filter((x) => x.verdict !== 'local')) expect(kept).not.toContain(p.prefix)
      app.stdin.write('\x1b')
      await waitFor((s) => !s.includes('filter "local"'), 'the filter cleared')
      const rows = screen()
        .split('\n')
        .filter((l) => /^.\s?\s?\d+\.\d+\.\d+\.\d+\/\d+/.test(l))
        .map((l) => l.match(/\d+\.\d+\.\d+\.\d+\/\d+/)![0])
      app.stdin.write('gjj\r')
      await waitFor((s) => s.includes(`Explanation ${rows[2]}`), `the explanation of ${rows[2]}`)
    })

    it('with a filter matching nothing, Enter, f and a (one write or one at a time) neither explain, plan nor apply', async () => {
      const previewFix = vi.fn(async (prefix: string) => `PLAN ${prefix}`)
      const applyFix = vi.fn(async (prefix: string) => `applied ${prefix}`)
      const explain = vi.fn((prefix: string) => actionsFor(dir).explain(prefix))
      const {waitFor, press, screen} = mount(
        {...actionsFor(dir), explain, previewFix, applyFix},
        {report: own, source: dir},
      )
      await waitFor((s) => s.includes('PREFIX'), 'the list')
      await press('/nomatch\r')
      await waitFor((s) => s.includes('no prefix matches "nomatch"'), 'the empty list')
      await press('\r', 'f', 'a', 'y')
      await press('y\rfa')
      await waitFor((s) => s.includes('no prefix is listed'), 'the notice')
      expect(screen()).not.toMatch(/Explanation|Fix preview|Apply|\[y\/N\]/)
      expect(explain).not.toHaveBeenCalled()
      expect(previewFix).not.toHaveBeenCalled()
      expect(applyFix).not.toHaveBeenCalled()
    })

    it('shows the sources that could not be collected, with the reason, in the header and under h', async () => {
      const copy = withoutBird(dir)
      try {
        const report2 = await fixtureReport(copy.dir)
        const {waitFor, press} = mount(actionsFor(copy.dir), {
          report: report2,
          source: copy.dir,
          size: {columns: 100, rows: 30},
        })
        const s = await waitFor((x) => x.includes('PREFIX'), 'the list')
        expect(s).toContain('BIRD not read')
        expect(s).not.toContain('sessions 0/0')
        expect(s).toContain('not collected (h lists them): BIRD control socket')
        await press('h')
        const host = await waitFor(
          (x) => x.includes('Host findings') && x.includes('could not collect'),
          'the host pane',
        )
        expect(host.replace(/\s+/g, ' ')).toContain(`could not collect birdc-show-status.txt: ${NO_SOCKET}`)
      } finally {
        copy.remove()
      }
    })

    it('r says when it refreshed', async () => {
      const {waitFor, press} = mount(actionsFor(dir), {report: own, source: dir})
      await waitFor((s) => s.includes('PREFIX'), 'the list')
      await press('r')
      await waitFor((s) => /refreshed at \d\d:\d\d:\d\d: no verdict changed/.test(s), 'the refresh notice')
    })
  },
)
