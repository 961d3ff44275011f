// Flags every command shares, as a user runs the binary: routedoctor's own routes (--table, --protocol), watch's
// flags, and what an internal error (a bug, not bad input) looks like.
import {createHash} from 'node:crypto'
import {cpSync, existsSync, readFileSync, writeFileSync} from 'node:fs'
import path from 'node:path'

import {Config, Errors} from '@oclif/core'
import {execa} from 'execa'
import {afterEach, describe, expect, it, vi} from 'vitest'

import {BIN, FIXTURES, ROOT, tempDir} from '../helpers.js'
import Bundle from '../../src/commands/bundle.js'
import Check from '../../src/commands/check.js'

const run = (args: string[]) => execa('node', [BIN, ...args], {reject: false, cwd: ROOT, env: {NO_COLOR: '1'}})
const MOVED = '192.168.110.128/26'

/** lab-bird2-overlay-moved, as applied with `fix --apply --table 2000 --protocol 200`. */
function movedInTable2000(): string {
  const dir = tempDir('rd-own-')
  cpSync(path.join(FIXTURES, 'lab-bird2-overlay-moved'), dir, {recursive: true})
  const edit = (file: string, pairs: Array<[RegExp, string]>) => {
    const before = readFileSync(path.join(dir, file), 'utf8')
    const after = pairs.reduce((text, [from, to]) => text.replace(from, to), before)
    expect(after, file).not.toBe(before)
    writeFileSync(path.join(dir, file), after)
  }
  edit('ip-d-route.txt', [[/table 1158/g, 'table 2000'], [/proto 158/g, 'proto 200']])
  edit('ip-rule.txt', [[/lookup 1158/g, 'lookup 2000'], [/proto 158/g, 'proto 200']])
  edit('ip-j-d-route.json', [[/"table":"1158"/g, '"table":"2000"'], [/"protocol":"158"/g, '"protocol":"200"']])
  return dir
}

const findingsOf = (report: {prefixes: Array<{prefix: string; findings: Array<{id: string}>}>}, prefix: string) =>
  report.prefixes.find((p) => p.prefix === prefix)?.findings.map((f) => f.id)

describe('--table and --protocol: every command that diagnoses knows routedoctor\'s overlay', () => {
  const OURS = ['--table', '2000', '--protocol', '200']

  it('check: a stale correction in table 2000 is overlay-stale with them, another owner\'s route without', async () => {
    const dir = movedInTable2000()
    const told = await run(['check', '--from', dir, ...OURS, '--json'])
    expect(told.exitCode).toBe(1)
    expect(findingsOf(JSON.parse(told.stdout), MOVED)).toEqual(['overlay-stale'])
    // not told: proto 200 in table 2000 is somebody else's route
    const untold = await run(['check', '--from', dir, '--json'])
    expect(findingsOf(JSON.parse(untold.stdout), MOVED)).toEqual(['tunnel-endpoint-mismatch'])
  })

  it('explain, ui (without a terminal) and bundle\'s report read the same', async () => {
    const dir = movedInTable2000()
    const explained = JSON.parse((await run(['explain', MOVED, '--from', dir, ...OURS, '--json'])).stdout)
    expect(explained.findings.map((f: {id: string}) => f.id)).toEqual(['overlay-stale'])
    const ui = await run(['ui', '--from', dir, ...OURS, '--json'])
    expect(findingsOf(JSON.parse(ui.stdout), MOVED)).toEqual(['overlay-stale'])
    const out = path.join(tempDir('rd-own-b-'), 'b.tar.gz')
    expect((await run(['bundle', '--from', dir, ...OURS, '-o', out])).exitCode).toBe(0)
    const report = JSON.parse((await execa('tar', ['-xzOf', out, 'report.json'])).stdout)
    expect(findingsOf(report, MOVED)).toEqual(['overlay-stale'])
  })

  it('fix still plans the overlay in the table it is given', async () => {
    const plan = JSON.parse((await run(['fix', '--from', movedInTable2000(), ...OURS, '--json'])).stdout)
    expect(plan.routes.length).toBeGreaterThan(0)
    for (const r of plan.routes) expect([r.table, r.protocol], r.dst).toEqual([2000, '200'])
  })
})

describe('a bundle records --table and --protocol (overlay-settings.json): --from replays it exactly', () => {
  const OURS = ['--table', '2000', '--protocol', '200']

  async function bundleOf(dir: string, flags: string[]): Promise<string> {
    const out = path.join(tempDir('rd-own-r-'), 'b.tar.gz')
    const made = await run(['bundle', '--from', dir, ...flags, '-o', out])
    expect(made.exitCode, made.stderr).toBe(0)
    return out
  }

  it('check, explain and fix of the bundle, without the flags, read the overlay as the bundle was made', async () => {
    const out = await bundleOf(movedInTable2000(), OURS)
    const settings = JSON.parse((await execa('tar', ['-xzOf', out, 'snapshot/overlay-settings.json'])).stdout)
    expect(settings).toEqual({protocol: 200, table: 2000, tunnelDev: 'tunl0'})
    const checked = await run(['check', '--from', out, '--json'])
    expect(checked.exitCode).toBe(1)
    expect(findingsOf(JSON.parse(checked.stdout), MOVED)).toEqual(['overlay-stale'])
    const explained = JSON.parse((await run(['explain', MOVED, '--from', out, '--json'])).stdout)
    expect(explained.findings.map((f: {id: string}) => f.id)).toEqual(['overlay-stale'])
    const plan = JSON.parse((await run(['fix', '--from', out, '--json'])).stdout)
    expect(plan.routes.length).toBeGreaterThan(0)
    for (const r of plan.routes) expect([r.table, r.protocol], r.dst).toEqual([2000, '200'])
    // a bundle made of the bundle keeps them
    const again = await bundleOf(out, [])
    const replayed = await run(['check', '--from', again, '--json'])
    expect(findingsOf(JSON.parse(replayed.stdout), MOVED)).toEqual(['overlay-stale'])
  })

  it('a bundle refuses to record a --table its replay would refuse: exit 2, as fix says it', async () => {
    const out = path.join(tempDir('rd-own-r-'), 'b.tar.gz')
    const res = await run(['bundle', '--from', movedInTable2000(), '--table', '254', '-o', out])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toMatch(/^routedoctor: --table 254: expected a table outside 1-255 \(Felix may claim 1-250/m)
    expect(existsSync(out)).toBe(false)
  })

  it('check, explain and fleet refuse a --table inside 1-255 as fix does: exit 2, one line', async () => {
    const dir = movedInTable2000()
    for (const args of [['check', '--from', dir], ['explain', '192.168.110.128/26', '--from', dir], ['fleet', dir]]) {
      const res = await run([...args, '--table', '254'])
      expect(res.exitCode, args.join(' ')).toBe(2)
      expect(res.stderr, args.join(' ')).toMatch(/^routedoctor: --table 254: expected a table outside 1-255 \(Felix/m)
      expect(res.stderr).not.toMatch(/\n\s+at /)
    }
  })

  it('flags given explicitly win over what the bundle recorded', async () => {
    const out = await bundleOf(movedInTable2000(), OURS)
    const other = await run(['check', '--from', out, '--table', '1158', '--protocol', '158', '--json'])
    expect(findingsOf(JSON.parse(other.stdout), MOVED)).toEqual(['tunnel-endpoint-mismatch'])
    // the overlay moves to table 3000: its routes are planned there, the recorded table's withdrawn
    const plan = JSON.parse((await run(['fix', '--from', out, '--table', '3000', '--json'])).stdout)
    const replaced = plan.routes.filter((r: {action: string}) => r.action === 'replace')
    expect(replaced.length).toBeGreaterThan(0)
    for (const r of replaced) expect([r.table, r.protocol], r.dst).toEqual([3000, '200'])
    for (const r of plan.routes.filter((x: {action: string}) => x.action === 'delete')) expect(r.table, r.dst).toBe(2000)
  })

  it('a bundle made with the defaults records them; a snapshot directory carrying the file is read the same', async () => {
    const out = await bundleOf(path.join(FIXTURES, 'lab-bird2-overlay-moved'), [])
    expect(JSON.parse((await execa('tar', ['-xzOf', out, 'snapshot/overlay-settings.json'])).stdout)).toEqual({
      protocol: 158, table: 1158, tunnelDev: 'tunl0',
    })
    const dir = movedInTable2000()
    writeFileSync(path.join(dir, 'overlay-settings.json'), '{"protocol": 200, "table": 2000}\n')
    const checked = await run(['check', '--from', dir, '--json'])
    expect(findingsOf(JSON.parse(checked.stdout), MOVED)).toEqual(['overlay-stale'])
  })

  it('a bundle of an earlier build that recorded a table inside 1-255 replays, saying in one line it is not used', async () => {
    // made the old way: a bundle of today's, its overlay-settings.json and manifest rewritten as the build of before
    // --table refused 1-255 wrote them, packed again with tar
    const made = await bundleOf(path.join(FIXTURES, 'lab-bird2-overlay-moved'), [])
    const work = tempDir('rd-old-')
    await execa('tar', ['-xzf', made, '-C', work])
    const settings = '{\n  "protocol": 158,\n  "table": 100,\n  "tunnelDev": "tunl0"\n}\n'
    writeFileSync(path.join(work, 'snapshot/overlay-settings.json'), settings)
    const manifest = JSON.parse(readFileSync(path.join(work, 'manifest.json'), 'utf8'))
    const entry = manifest.sources.find((f: {file: string}) => f.file === 'overlay-settings.json')
    Object.assign(entry, {size: settings.length, sha256: createHash('sha256').update(settings).digest('hex')})
    writeFileSync(path.join(work, 'manifest.json'), JSON.stringify(manifest, null, 2))
    const old = path.join(tempDir('rd-old-b-'), 'routedoctor-n1-20261204-120000.tar.gz')
    await execa('tar', ['-czf', old, '-C', work, 'snapshot', 'model.json', 'report.md', 'report.json', 'manifest.json'])

    const note = 'bundle: overlay-settings.json:3 records table 100, inside 1-255 (Felix may claim 1-250, 253-255 are ' +
      'the kernel\'s): --table refuses it today and fix never wrote there; routedoctor\'s routes are read and planned ' +
      'in table 1158 instead'
    const checked = await run(['check', '--from', old])
    expect(checked.exitCode, checked.stderr).toBe(1) // the diagnosis's status, not a refusal
    expect(checked.stderr).toBe('')
    expect(checked.stdout.split('\n').filter((l) => l.includes('table 100'))).toEqual([note])
    // the same diagnosis as the bundle as made
    const json = await run(['check', '--from', old, '--json'])
    const asMade = JSON.parse((await run(['check', '--from', made, '--json'])).stdout)
    expect(JSON.parse(json.stdout).node.bundleWarnings).toEqual([note.slice('bundle: '.length)])
    expect(JSON.parse(json.stdout).prefixes).toEqual(asMade.prefixes)
    expect(findingsOf(asMade, MOVED)).toEqual(['overlay-stale'])
    // the plan is in today's overlay table; a bundle made of it records that one, and replays without the note
    const plan = JSON.parse((await run(['fix', '--from', old, '--json'])).stdout)
    expect(plan.routes.length).toBeGreaterThan(0)
    for (const r of plan.routes.filter((x: {action: string}) => x.action === 'replace')) expect(r.table).toBe(1158)
    const again = await bundleOf(old, [])
    expect(JSON.parse((await execa('tar', ['-xzOf', again, 'snapshot/overlay-settings.json'])).stdout).table).toBe(1158)
    expect((await run(['check', '--from', again])).stdout).not.toContain('table 100')
    // as in a snapshot directory, for every table inside 1-255
    for (const table of [1, 100, 253, 254, 255]) {
      writeFileSync(path.join(work, 'snapshot/overlay-settings.json'), `{"protocol": 158,\n "table": ${table}}\n`)
      const dir = await run(['check', '--from', path.join(work, 'snapshot'), '--json'])
      expect(dir.exitCode, `table ${table}`).toBe(1)
      expect(JSON.parse(dir.stdout).node.bundleWarnings[0]).toMatch(new RegExp(`:2 records table ${table}, inside 1-255`))
    }
  })

  it('a settings file that is not what it should be: exit 2 naming the file, the line and what was expected', async () => {
    const dir = movedInTable2000()
    writeFileSync(path.join(dir, 'overlay-settings.json'), '{\n  "protocol": 200,\n  "table": "main"\n}\n')
    const res = await run(['check', '--from', dir])
    expect(res.exitCode).toBe(2)
    const expected = 'expected "table" to be a table outside 1-255 (Felix may claim 1-250, 253-255 are the kernel\'s), up to 4294967295'
    expect(res.stderr).toContain(`${dir}/overlay-settings.json:3: ${expected}, found "\\"main\\""`)
    expect(res.stderr).not.toMatch(/\n\s+at /)
    // no table number at all (no build replayed one): none, negative, not an integer, too large
    for (const table of ['0', '-1', '1.5', '4294967296']) {
      writeFileSync(path.join(dir, 'overlay-settings.json'), `{\n  "protocol": 200,\n  "table": ${table}\n}\n`)
      for (const argv of [['check', '--from', dir], ['fix', '--from', dir]]) {
        const refused = await run(argv)
        expect(refused.exitCode, `${argv[0]}, table ${table}`).toBe(2)
        expect(refused.stderr).toBe(`routedoctor: ${dir}/overlay-settings.json:3: ${expected}, found "${table}"`)
      }
    }
    writeFileSync(path.join(dir, 'overlay-settings.json'), '{"protocol": 200,\n "table": }')
    const broken = await run(['check', '--from', dir])
    expect(broken.exitCode).toBe(2)
    expect(broken.stderr).toContain(
      'overlay-settings.json:2: expected a JSON object such as {"protocol": 158, "table": 1158, "tunnelDev": "tunl0"} ' +
        '(invalid JSON), found "}"',
    )
  })
})

describe('a bundle records --tunnel-dev (overlay-settings.json): --from replays it exactly', () => {
  /** lab-bird2-overlay-moved on a node whose tunnel device is ipip9, not tunl0. */
  function onIpip9(): string {
    const dir = tempDir('rd-dev-')
    cpSync(path.join(FIXTURES, 'lab-bird2-overlay-moved'), dir, {recursive: true})
    for (const file of ['ip-d-link.txt', 'ip-j-d-link.json', 'ip-d-route.txt', 'ip-j-d-route.json']) {
      const before = readFileSync(path.join(dir, file), 'utf8')
      expect(before, file).toContain('tunl0')
      writeFileSync(path.join(dir, file), before.replaceAll('tunl0', 'ipip9'))
    }
    return dir
  }

  /** check's report of a source, but for where it was read from (a directory or a bundle). */
  async function reportOf(args: string[]): Promise<unknown> {
    const res = await run(['check', ...args, '--json'])
    expect(res.exitCode, res.stderr).toBeLessThan(2)
    const {prefixes, host, summary, node} = JSON.parse(res.stdout)
    return {prefixes, host, summary, tunnelDev: node.tunnelDev}
  }

  it('a bundle made with --tunnel-dev replays to the same report without it; the flag given still wins', async () => {
    const dir = onIpip9()
    const told = await reportOf(['--from', dir, '--tunnel-dev', 'ipip9'])
    const untold = await reportOf(['--from', dir])
    expect(untold).not.toEqual(told) // tunl0 is not there: the difference the bundle must carry
    const out = path.join(tempDir('rd-dev-b-'), 'b.tar.gz')
    const made = await run(['bundle', '--from', dir, '--tunnel-dev', 'ipip9', '-o', out])
    expect(made.exitCode, made.stderr).toBe(0)
    const settings = JSON.parse((await execa('tar', ['-xzOf', out, 'snapshot/overlay-settings.json'])).stdout)
    expect(settings).toEqual({protocol: 158, table: 1158, tunnelDev: 'ipip9'})
    expect(await reportOf(['--from', out])).toEqual(told)
    const explained = JSON.parse((await run(['explain', MOVED, '--from', out, '--json'])).stdout)
    const explainedTold = JSON.parse(
      (await run(['explain', MOVED, '--from', dir, '--tunnel-dev', 'ipip9', '--json'])).stdout,
    )
    expect(explained.findings).toEqual(explainedTold.findings)
    const plan = JSON.parse((await run(['fix', '--from', out, '--json'])).stdout)
    expect(plan.routes.length).toBeGreaterThan(0)
    for (const r of plan.routes) expect(r.nexthops.map((n: {dev: string}) => n.dev), r.dst).toEqual(['ipip9'])
    // given, the flag wins over the recorded device
    expect(await reportOf(['--from', out, '--tunnel-dev', 'tunl0'])).toEqual(untold)
    // a bundle made of the bundle keeps it
    const again = path.join(tempDir('rd-dev-b-'), 'again.tar.gz')
    expect((await run(['bundle', '--from', out, '-o', again])).exitCode).toBe(0)
    expect(await reportOf(['--from', again])).toEqual(told)
  })

  it('a snapshot directory carrying the file is read the same; one without it with tunl0', async () => {
    const dir = onIpip9()
    const told = await reportOf(['--from', dir, '--tunnel-dev', 'ipip9'])
    expect(await reportOf(['--from', dir])).toMatchObject({tunnelDev: 'tunl0'})
    writeFileSync(path.join(dir, 'overlay-settings.json'), '{"tunnelDev": "ipip9"}\n')
    expect(await reportOf(['--from', dir])).toEqual(told)
  })

  it('a tunnel device in the file that is no interface name: exit 2 naming file, line and what was expected', async () => {
    const dir = onIpip9()
    writeFileSync(path.join(dir, 'overlay-settings.json'), '{\n  "protocol": 158,\n  "tunnelDev": "ipip/9"\n}\n')
    const res = await run(['check', '--from', dir])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toContain(
      `${dir}/overlay-settings.json:3: expected "tunnelDev" to be an interface name such as "tunl0"`,
    )
    expect(res.stderr).toContain('found "\\"ipip/9\\""')
    expect(res.stderr).not.toMatch(/\n\s+at /)
    writeFileSync(path.join(dir, 'overlay-settings.json'), '{"tunnelDev": 9}\n')
    const numeric = await run(['check', '--from', dir])
    expect(numeric.exitCode).toBe(2)
    expect(numeric.stderr).toMatch(/overlay-settings\.json:1: expected "tunnelDev" to be an interface name .*found "9"/)
  })
})

describe('watch', () => {
  it('does not offer --from, which it refuses: a usage error, exit 2', async () => {
    const help = await run(['watch', '--help'])
    expect(help.exitCode).toBe(0)
    expect(help.stdout).toContain('--protocol')
    expect(help.stdout).toContain('--table')
    expect(help.stdout).not.toContain('--from')
    const res = await run(['watch', '--from', path.join(FIXTURES, 'lab-bird2-overlay-moved')])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toMatch(/watch reads the live node: --from cannot be used \(run check --from for a snapshot\)/)
    expect(res.stderr).not.toMatch(/\n\s+at /)
  })
})

describe('help and duration flags', () => {
  it('names every flag\'s value in --help: no `<value>`', async () => {
    for (const command of ['check', 'explain', 'fix', 'bundle', 'ui', 'watch', 'fleet']) {
      const help = await run([command, '--help'])
      expect(help.exitCode, command).toBe(0)
      expect(help.stdout, command).not.toContain('<value>')
    }
    const fix = (await run(['fix', '--help'])).stdout
    for (const flag of ['--rule-priority=PRIORITY', '--watch=SECONDS', '--table=TABLE', '--protocol=NUMBER']) expect(fix).toContain(flag)
    expect((await run(['ui', '--help'])).stdout).toContain('--interval=SECONDS')
  })

  it('bundle --help breaks its description between sentences, not inside one', () => {
    // oclif keeps a line break of the source text: one is a paragraph break, never a wrap of the source's width
    expect(Bundle.description?.split('\n').map((l) => [l.split(' ')[0], l.split(' ').at(-1)])).toEqual([
      ['`routedoctor', 'too).'],
      ['--redact', 'bundle.'],
    ])
  })

  it('ui --interval takes seconds as watch --interval does: a fraction, and the same refusal of anything else', async () => {
    const fine = await run(['ui', '--from', path.join(FIXTURES, 'lab-bird2-overlay-moved'), '--interval', '2.5', '--json'])
    expect(fine.exitCode, fine.stderr).toBe(1) // the check report (no terminal), with check's status
    expect(JSON.parse(fine.stdout).schema).toBe(1)
    for (const bad of ['0', 'soon', '-1', '3601']) {
      const ui = await run(['ui', '--interval', bad])
      const watch = await run(['watch', '--pool', '192.168.0.0/16', '--interval', bad])
      expect([ui.exitCode, watch.exitCode], bad).toEqual([2, 2])
      const message = `--interval ${bad}: expected a number of seconds greater than 0 and at most 3600`
      expect(ui.stderr.trim(), bad).toBe(`routedoctor: ${message}`)
      expect(watch.stderr.trim(), bad).toBe(`routedoctor: ${message}`)
    }
  })
})

describe('an internal error', () => {
  const written = {stdout: '', stderr: ''}
  const debug = process.env.DEBUG
  afterEach(() => {
    vi.restoreAllMocks()
    if (debug === undefined) delete process.env.DEBUG
    else process.env.DEBUG = debug
    written.stdout = written.stderr = ''
  })

  /** check's error handling given a bug (a TypeError from deep inside), with `argv`: the exit status it asks for. */
  async function bug(argv: string[]): Promise<number | undefined> {
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((written.stdout += String(chunk)), true))
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((written.stderr += String(chunk)), true))
    const command = new Check(argv, await Config.load(ROOT))
    const error = new TypeError('Cannot read properties of undefined (reading \'nexthops\')')
    try {
      await command.catch(error)
    } catch (exit) {
      if (exit instanceof Errors.ExitError) return exit.oclif.exit
      throw exit
    }
    return undefined
  }

  it('exits 70, not check\'s 1 for findings, in one line asking for a report, without a stack', async () => {
    delete process.env.DEBUG
    expect(await bug([])).toBe(70)
    expect(written.stderr.trim().split('\n')).toHaveLength(1)
    expect(written.stderr).toMatch(/internal error: Cannot read properties of undefined \(reading 'nexthops'\).*please report/)
    expect(written.stderr).not.toMatch(/\n\s+at /)
    expect(written.stdout).toBe('')
  })

  it('with --json writes the E_INTERNAL error document', async () => {
    delete process.env.DEBUG
    expect(await bug(['--json'])).toBe(70)
    expect(JSON.parse(written.stdout)).toEqual({schema: 1, error: {code: 'E_INTERNAL', message: 'Cannot read properties of undefined (reading \'nexthops\')'}})
  })

  it('DEBUG=routedoctor shows the stack', async () => {
    process.env.DEBUG = 'routedoctor'
    expect(await bug([])).toBe(70)
    expect(written.stderr).toMatch(/\n\s+at /)
  })
})
