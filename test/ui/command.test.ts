// The real binary (dist/ is built by `npm test` first): without a terminal, `ui` prints what
// `check` prints, with check's exit status, says why on stderr, and honours NO_COLOR.
import {spawnSync} from 'node:child_process'
import {readFileSync} from 'node:fs'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {BIN, ROOT} from '../helpers.js'
import {ECMP} from './fixture.js'

function run(args: string[], env: Record<string, string | undefined> = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], {cwd: ROOT, encoding: 'utf8', env: {...process.env, NO_COLOR: undefined, FORCE_COLOR: undefined, ...env}, timeout: 60_000})
  return {stdout: r.stdout, stderr: r.stderr, status: r.status}
}

describe('routedoctor ui without a terminal', () => {
  it('prints the check report and exits like check, explaining why on stderr', () => {
    const check = run(['check', '--from', ECMP])
    const ui = run(['ui', '--from', ECMP])
    expect(ui.stdout).toBe(check.stdout)
    expect(ui.status).toBe(check.status)
    expect(ui.stderr).toMatch(/routedoctor ui: stdout is not a terminal/)
    expect(ui.stdout).not.toContain('\x1b[?1049h') // never switched to the full-screen UI
  })

  it('--json prints check\'s JSON', () => {
    const ui = run(['ui', '--from', ECMP, '--json'])
    const check = run(['check', '--from', ECMP, '--json'])
    expect(JSON.parse(ui.stdout)).toEqual(JSON.parse(check.stdout))
  })

  it('honours NO_COLOR even when colour is forced', () => {
    expect(run(['ui', '--from', ECMP], {FORCE_COLOR: '1'}).stdout).toContain('\x1b[')
    expect(run(['ui', '--from', ECMP], {FORCE_COLOR: '1', NO_COLOR: '1'}).stdout).not.toContain('\x1b[')
  })

  it('loads Ink and React only through a dynamic import in the ui command', () => {
    // follow the static imports of the built commands: ink/react must not be among them
    const reached = (entry: string): Set<string> => {
      const seen = new Set<string>()
      const visit = (file: string) => {
        if (seen.has(file)) return
        seen.add(file)
        const text = readFileSync(file, 'utf8')
        for (const m of text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]/gm)) {
          const spec = m[1]
          if (spec.startsWith('.')) visit(path.resolve(path.dirname(file), spec))
          else seen.add(spec)
        }
      }
      visit(entry)
      return seen
    }
    for (const cmd of ['ui', 'check', 'explain']) {
      const mods = [...reached(path.join(ROOT, 'dist/commands', `${cmd}.js`))]
      expect(mods.length).toBeGreaterThan(3)
      expect(mods.filter((m) => m === 'ink' || m === 'react' || m.startsWith('react/') || m.includes('/ui/run.js') || m.includes('/ui/components/'))).toEqual([])
    }
    // and the ui command does reach them dynamically
    expect(readFileSync(path.join(ROOT, 'dist/ui/import-ink.js'), 'utf8')).toMatch(/await import\(['"]\.\/run\.js['"]\)/)
    expect(reached(path.join(ROOT, 'dist/commands/ui.js')).has(path.join(ROOT, 'dist/ui/import-ink.js'))).toBe(true)
    expect(reached(path.join(ROOT, 'dist/ui/run.js')).has('ink')).toBe(true)
  })
})
