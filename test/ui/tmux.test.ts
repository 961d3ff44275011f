// End to end: the real binary in a real terminal (tmux, 80×24 and 100×30). dist/ must be built
// (`npm test` builds first). Uses its own tmux server socket, killed in afterAll.
import {spawnSync} from 'node:child_process'
import {cpSync, existsSync, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'

import {hugePageEnv, probeMachine} from '../../src/runtime/hugepages.js'
import {BIN, FIXTURES, ROOT} from '../helpers.js'
import {ECMP, EXAMPLE, TARGET, expected} from './fixture.js'

const haveTmux = spawnSync('tmux', ['-V'], {encoding: 'utf8'}).status === 0
const haveDist = existsSync(path.join(ROOT, 'dist/app/cli.js'))
const socket = `rd-ui-e2e-${process.pid}`
const dir = mkdtempSync(path.join(os.tmpdir(), 'rd-ui-e2e-'))
// each test's own session and exit file
let session = 'ui'
let exitFile = path.join(dir, 'exit')
// can bin/run.js run the UI again with huge pages here (THP madvise, glibc 2.35+)?
const hugePages = Boolean(hugePageEnv({...probeMachine(['ui']), env: {ROUTEDOCTOR_HUGEPAGES: '1'}}))

const tmux = (...args: string[]) => spawnSync('tmux', ['-L', socket, ...args], {encoding: 'utf8'})
const screen = () => tmux('capture-pane', '-p', '-t', session).stdout ?? ''

// how often the screen and the exit file are looked at (a look is one `tmux capture-pane`)
const POLL_MS = 50

async function waitFor(pred: (s: string) => boolean, what: string, ms = 60_000): Promise<string> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    const s = screen()
    if (pred(s)) return s
    await new Promise((r) => setTimeout(r, POLL_MS))
  }
  const exited = existsSync(exitFile) ? readFileSync(exitFile, 'utf8').trim() : 'still running'
  throw new Error(`timed out waiting for ${what} (${exited}); screen:\n${screen()}`)
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`

afterAll(() => {
  if (haveTmux) {
    tmux('kill-server')
    // the server leaves its socket file behind
    rmSync(path.join(process.env.TMUX_TMPDIR ?? '/tmp', `tmux-${process.getuid?.() ?? 0}`, socket), {force: true})
  }
  rmSync(dir, {recursive: true, force: true})
})

describe.skipIf(!haveTmux || !haveDist)(`routedoctor ui in tmux 80x24${!haveTmux ? ' (skipped: tmux is not installed)' : !haveDist ? ' (skipped: dist/ not built; run npm test, which builds first)' : ''}`, () => {
  // CI=true: CI runners export it, and Ink then draws only its last frame; the UI must not go blank.
  // DEV=true: Ink then loads React's devtools client (not installed) and its own package.json (not in the bundle)
  // ROUTEDOCTOR_HUGEPAGES=1: bin/run.js runs the UI again as its child (src/runtime/hugepages.ts), which must get the
  // terminal
  for (const knob of ['0', '1']) {
    const why = knob === '1' && !hugePages ? ' (skipped: no huge pages here: THP not in madvise mode, or glibc before 2.35)' : ''
    it.skipIf(why !== '')(`lists the broken prefixes, filters, explains with Enter and quits with status 0${knob === '1' ? ', run again with huge pages' : ''}${why}`, async () => {
      await uiSession(knob)
    }, 180_000)
  }

  // keys written in one chunk (send-keys of a whole string: what fast typing over SSH or a paste delivers)
  for (const from of [EXAMPLE, path.join(FIXTURES, 'bird16-ecmp-not-tunneled')]) {
    it(`takes chunks of keys whole and acts on no hidden prefix, at 100x30 (${path.relative(ROOT, from)})`, async () => {
      session = `chunk${path.basename(from)}`
      exitFile = path.join(dir, `exit-${session}`)
      const cmd = `cd ${quote(ROOT)} && ${quote(process.execPath)} ${quote(BIN)} ui --from ${quote(from)}; echo EXIT=$? > ${quote(exitFile)}`
      const started = tmux('new-session', '-d', '-s', session, '-x', '100', '-y', '30', '-e', 'NO_COLOR=1', 'sh', '-c', cmd)
      expect(started.status, started.stderr).toBe(0)
      const list = await waitFor((s) => s.includes('PREFIX') && s.includes('q quit'), 'the list and its key bar')
      const rows = list.split('\n').filter((l) => /^[ ›][ *]\d+\.\d+\.\d+\.\d+\//.test(l)).map((l) => l.match(/\d+\.\d+\.\d+\.\d+\/\d+/)![0])
      expect(rows.length).toBeGreaterThan(2)
      const chunk = (text: string) => expect(tmux('send-keys', '-t', session, '-l', text).status).toBe(0)

      // "/local" and Enter in one chunk: the filter is kept, not left in edit mode
      chunk('/local\r')
      const kept = await waitFor((s) => s.includes('filter "local"'), 'the filter kept')
      expect(kept).not.toContain('Enter keeps')
      for (const l of kept.split('\n').filter((x) => /^[ ›][ *]\d/.test(x))) expect(l).toMatch(/\slocal\s*$/)

      // Esc clears it; "g j j Enter" in one chunk explains the third row
      tmux('send-keys', '-t', session, 'Escape')
      await waitFor((s) => !s.includes('filter "local"'), 'the filter cleared')
      chunk('gjj\r')
      await waitFor((s) => s.includes(`Explanation ${rows[2]}`), `the explanation of ${rows[2]}`)

      // a filter that matches nothing closes the pane; Enter, f and a then act on nothing
      chunk('/nomatch\r')
      const empty = await waitFor((s) => s.includes('no prefix matches "nomatch"'), 'the empty list')
      expect(empty).not.toContain('Explanation')
      chunk('\rfa')
      const after = await waitFor((s) => s.includes('no prefix is listed'), 'the notice that nothing is listed')
      expect(after).not.toMatch(/Explanation|Fix preview|Apply fix|\[y\/N\]/)

      tmux('send-keys', '-t', session, 'q')
      const end = Date.now() + 30_000
      while (!existsSync(exitFile) && Date.now() < end) await new Promise((r) => setTimeout(r, POLL_MS))
      expect(readFileSync(exitFile, 'utf8').trim()).toBe('EXIT=0')
    }, 120_000)
  }

  it('a snapshot without kernel routes: the view says the refusal check makes, whole, and lists no verdict', async () => {
    session = 'nokernel'
    exitFile = path.join(dir, `exit-${session}`)
    const from = path.join(dir, 'no-kernel-routes')
    cpSync(ECMP, from, {recursive: true})
    rmSync(path.join(from, 'ip-j-d-route.json'))
    rmSync(path.join(from, 'ip-d-route.txt'), {force: true})
    const cmd = `cd ${quote(ROOT)} && ${quote(process.execPath)} ${quote(BIN)} ui --from ${quote(from)}; echo EXIT=$? > ${quote(exitFile)}`
    const started = tmux('new-session', '-d', '-s', session, '-x', '80', '-y', '24', '-e', 'NO_COLOR=1', 'sh', '-c', cmd)
    expect(started.status, started.stderr).toBe(0)
    const shown = await waitFor((s) => s.includes('q quit') && s.includes('show table all`)'), 'the refusal')
    // wrapped over several rows, the whole of check's message: what is missing and what was expected
    const said = shown.split('\n').map((l) => l.trim()).join(' ').replace(/\s+/g, ' ')
    expect(said).toContain(`could not load: snapshot ${from} has no kernel routes (expected ip-j-d-route.json or ip-d-route.txt from \`ip -j -d route show table all\`)`)
    expect(shown).toContain('nothing judged: the source could not be loaded (why: below)')
    expect(shown).not.toMatch(/\bmissing\b/)
    tmux('send-keys', '-t', session, 'q')
    const end = Date.now() + 30_000
    while (!existsSync(exitFile) && Date.now() < end) await new Promise((r) => setTimeout(r, POLL_MS))
    expect(readFileSync(exitFile, 'utf8').trim()).toBe('EXIT=0')
  }, 120_000)

  async function uiSession(knob: string): Promise<void> {
    session = `ui${knob}`
    exitFile = path.join(dir, `exit${knob}`)
    const cmd = `cd ${quote(ROOT)} && ${quote(process.execPath)} ${quote(BIN)} ui --from ${quote(ECMP)}; echo EXIT=$? > ${quote(exitFile)}`
    const started = tmux('new-session', '-d', '-s', session, '-x', '80', '-y', '24', '-e', 'NO_COLOR=1', '-e', 'CI=true', '-e', 'DEV=true', '-e', `ROUTEDOCTOR_HUGEPAGES=${knob}`, '-e', 'GLIBC_TUNABLES=', 'sh', '-c', cmd)
    expect(started.status, started.stderr).toBe(0)

    const want = expected().prefixes
    const broken = Object.entries(want).filter(([, e]) => e.verdict !== 'ok' && e.verdict !== 'local')
    expect(broken.length).toBeGreaterThan(0)
    const list = await waitFor((s) => s.includes('PREFIX') && broken.every(([p]) => s.includes(p)), 'the prefix list')
    for (const [prefix, e] of broken) {
      const row = list.split('\n').find((l) => l.includes(prefix))!
      expect(row).toMatch(new RegExp(`${prefix.replace(/\./g, '\\.')}\\s+${e.verdict}`))
    }
    for (const l of list.split('\n')) expect(l.length).toBeLessThanOrEqual(80)

    tmux('send-keys', '-t', session, '/')
    tmux('send-keys', '-t', session, '-l', '110')
    await waitFor((s) => s.includes('/110'), 'the filter being typed')
    tmux('send-keys', '-t', session, 'Enter')
    const filtered = await waitFor((s) => s.includes('filter "110"'), 'the filter kept')
    expect(filtered).toContain(TARGET)
    for (const [p] of broken.filter(([p]) => !p.includes('110'))) expect(filtered).not.toContain(p)

    tmux('send-keys', '-t', session, 'Enter')
    const explained = await waitFor((s) => s.includes(`Explanation ${TARGET}`) && s.includes('NOT-TUNNELED'), 'the explanation')
    expect(explained).toContain('172.31.20.5')
    tmux('send-keys', '-t', session, 'G')
    await waitFor((s) => s.includes('ip route replace 192.168.110.128/26 table 1158'), 'the corrected route at the end of the explanation')

    tmux('send-keys', '-t', session, 'q')
    const end = Date.now() + 30_000
    while (!existsSync(exitFile) && Date.now() < end) await new Promise((r) => setTimeout(r, POLL_MS))
    expect(readFileSync(exitFile, 'utf8').trim()).toBe('EXIT=0')
  }
})
