// The user documentation shows what the built CLI does: its output samples are the real output, its flags exist
// with the documented defaults, and findings.md's id/severity table is rule.ts's SEVERITY.
import {readFileSync} from 'node:fs'
import path from 'node:path'

import {execa} from 'execa'
import {describe, expect, it} from 'vitest'

import {SEVERITY} from '../../src/diagnose/rule.js'
import {BIN, ROOT} from '../helpers.js'

const doc = (name: string) => readFileSync(path.join(ROOT, name), 'utf8')
const cli = (args: string[]) => execa('node', [BIN, ...args], {reject: false, cwd: ROOT, env: {NO_COLOR: '1'}})

/** The lines of the fenced block that starts with `$ COMMAND`, the command line left out. */
function sample(text: string, command: string): string[] {
  const start = text.indexOf(`$ ${command}\n`)
  expect(start, `a sample of \`${command}\``).toBeGreaterThanOrEqual(0)
  const body = text.slice(start + command.length + 3)
  return body.slice(0, body.indexOf('```')).trimEnd().split('\n')
}

describe('documentation samples are real output', () => {
  it("README's check of the example, and its exit status 1", async () => {
    const r = await cli(['check', '--from', 'examples/bird2-ecmp-not-tunneled'])
    expect(r.exitCode).toBe(1)
    expect(r.stdout.split('\n')).toEqual(sample(doc('README.md'), 'routedoctor check --from examples/bird2-ecmp-not-tunneled'))
  })

  it("overlay.md's fix of a moved block", async () => {
    const r = await cli(['fix', '--from', 'test/fixtures/lab-bird2-overlay-moved'])
    const shown = sample(doc('docs/overlay.md'), 'routedoctor fix --from test/fixtures/lab-bird2-overlay-moved')
    expect(r.stdout.split('\n').slice(0, shown.length)).toEqual(shown)
  })
})

describe('documented flags and ids', () => {
  it("README's shared flags are in check --help, with the documented defaults", async () => {
    const help = (await cli(['check', '--help'])).stdout
    const readme = doc('README.md')
    const table = readme.slice(readme.indexOf('### Shared flags'), readme.indexOf('Which prefixes are tunnel prefixes'))
    const flags = [...table.matchAll(/^\| `(--[a-z-]+)/gm)].map((m) => m[1])
    expect(flags.length).toBeGreaterThan(8)
    for (const f of flags) expect(help).toContain(`${f}`)
    expect(help).toMatch(/--tunnel-dev=NAME[\s\S]*default: tunl0/)
    const fix = (await cli(['fix', '--help'])).stdout.replace(/\s+/g, ' ')
    for (const d of ['[default: 32000]', '[default: 1158', '[default: 158', '[default: 5]', '[default: /var/lib/routedoctor]']) {
      expect(fix).toContain(d)
    }
  })

  it("findings.md's tables give every finding id the severity rule.ts gives it", () => {
    const rows = [...doc('docs/findings.md').matchAll(/^\| `([a-z0-9-]+)`(?: \/ `([a-z0-9-]+)`)? \| (error|warning|info) \|/gm)]
    const documented = new Map<string, string>()
    for (const [, a, b, severity] of rows) for (const id of [a, b]) if (id) documented.set(id, severity)
    for (const [id, severity] of Object.entries(SEVERITY)) expect([id, documented.get(id)]).toEqual([id, severity])
    expect(documented.get('route-flapping')).toBe('warning')
    expect(documented.get('peer-flapping')).toBe('warning')
  })
})
