// `bundle` of a LIVE node (n1 of bird2-ecmp) replayed offline with `--from`: the same
// verdicts; and a `--redact`ed bundle diagnoses the same per pseudonymised prefix while holding none
// of n1's addresses or MACs.
import {mkdtempSync, readdirSync, readFileSync, rmSync, statSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {execa} from 'execa'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {tempDir} from '../helpers.js'
import {cleanupStaleLabs, startLab, type Lab} from '../lab/lab.js'
import {type CheckJson, liveFlags, liveUnavailableReason, parseJson, POOL, rd, rdOffline, type RunResult, verdicts} from './live.js'

const SCENARIO = 'bird2-ecmp' as const
const reason = liveUnavailableReason(SCENARIO)
if (reason) console.warn(`live bundle tests skipped: ${reason}`)

function filesUnder(dir: string): string[] {
  return readdirSync(dir, {recursive: true, encoding: 'utf8'})
    .map((f) => path.join(dir, f))
    .filter((f) => statSync(f).isFile())
}

async function extract(tarball: string): Promise<string> {
  const dir = tempDir('rd-bundle-x-')
  await execa('tar', ['xzf', tarball, '-C', dir])
  return dir
}

/** a prefix with its address part pseudonymised through the mapping */
const mapPrefix = (mapping: Record<string, string>, prefix: string) => {
  const [addr, len] = prefix.split('/')
  return `${mapping[addr] ?? `UNMAPPED(${addr})`}/${len}`
}

describe.skipIf(reason !== null)(`live bundle (${SCENARIO})`, () => {
  let lab: Lab
  let tmp: string
  let live: CheckJson
  let plain: RunResult
  let redacted: RunResult
  let plainPath: string
  let redactedPath: string
  let mappingFile: string

  beforeAll(async () => {
    await cleanupStaleLabs()
    lab = await startLab(SCENARIO)
    tmp = mkdtempSync(path.join(os.tmpdir(), 'rd-bundle-live-'))
    plainPath = path.join(tmp, 'plain.tar.gz')
    redactedPath = path.join(tmp, 'redacted.tar.gz')
    mappingFile = path.join(tmp, 'mapping.json') // outside any extracted dir
    let c: RunResult
    ;[c, plain, redacted] = await Promise.all([
      rd(lab, ['check', ...liveFlags(lab), ...POOL, '--json']),
      rd(lab, ['bundle', ...liveFlags(lab), ...POOL, '-o', plainPath, '--json']),
      rd(lab, ['bundle', '--redact', '--mapping-file', mappingFile, ...liveFlags(lab), ...POOL, '-o', redactedPath, '--json']),
    ])
    live = parseJson<CheckJson>(c, 'live check')
  })
  afterAll(async () => {
    await lab?.teardown()
    if (tmp) rmSync(tmp, {recursive: true, force: true})
  })

  it('bundle writes the tarball with every live source collected (none failed)', async () => {
    expect(plain.exitCode, plain.stderr).toBe(0)
    const res = parseJson(plain, 'bundle')
    expect(res.path).toBe(plainPath)
    expect(res.sources.filter((s: {error?: string}) => s.error)).toEqual([])
    const list = String((await execa('tar', ['tzf', plainPath])).stdout).split('\n')
    for (const f of ['manifest.json', 'model.json', 'report.md', 'report.json', 'snapshot/ip-j-d-route.json', 'snapshot/birdc-show-route-all.txt', 'snapshot/birdc-show-protocols-all.txt', 'snapshot/birdc-show-status.txt', 'snapshot/sysctl.txt', 'snapshot/bird.conf'])
      expect(list).toContain(f)
  })

  it('check --from BUNDLE (with the same --pool) gives the live verdicts and host findings', async () => {
    const r = await rdOffline(['check', '--from', plainPath, ...POOL, '--json'])
    const c = parseJson<CheckJson>(r, 'replay')
    expect(verdicts(c)).toEqual(verdicts(live))
    expect(c.host.findings.map((f) => f.id).sort()).toEqual(live.host.findings.map((f) => f.id).sort())
    expect(r.exitCode).toBe(live.summary.exitCode)
  })

  // DESIGN §6: "--from replays a bundle exactly: the same report offline". The pools of this bundle
  // came from --pool; the replay must not need the flag again.
  it('check --from BUNDLE alone replays the bundle\'s own report (pools given at collection are kept)', async () => {
    const x = await extract(plainPath)
    const own = JSON.parse(readFileSync(path.join(x, 'report.json'), 'utf8')) as CheckJson
    rmSync(x, {recursive: true, force: true})
    expect(verdicts(own)).toEqual(verdicts(live))
    const r = await rdOffline(['check', '--from', plainPath, '--json'])
    const c = parseJson<CheckJson>(r, 'replay without --pool')
    expect(verdicts(c)).toEqual(verdicts(own))
  })

  it('a --redact bundle holds none of n1\'s addresses or MACs (nor its neighbours\'), and no mapping', async () => {
    expect(redacted.exitCode, redacted.stderr).toBe(0)
    const x = await extract(redactedPath)
    const files = filesUnder(x)
    const cleanup = () => rmSync(x, {recursive: true, force: true})
    expect(files.map((f) => path.relative(x, f))).not.toContain('mapping.json')
    // everything n1 knows about itself: addresses and MACs from the live node, plus the lab's
    const addrs = JSON.parse(String((await execa('ip', ['-n', lab.ns('n1'), '-j', 'addr', 'show'])).stdout)) as Array<{
      address?: string
      addr_info: Array<{local: string}>
    }>
    const secrets = new Set<string>(['172.31.10.4', '172.31.11.3', '172.31.12.3', '172.31.11.1', '172.31.12.1', '172.31.20.5', '172.31.30.6', '192.168.110.128', '192.168.82.0', '192.168.162.128', '192.168.162.129', '192.168.200.10'])
    for (const l of addrs) {
      if (l.address && l.address !== '00:00:00:00:00:00') secrets.add(l.address.toLowerCase())
      for (const a of l.addr_info) if (a.local !== '127.0.0.1' && a.local !== '::1') secrets.add(a.local.toLowerCase())
    }
    const leaks: string[] = []
    for (const f of files) {
      const text = readFileSync(f, 'utf8').toLowerCase()
      for (const s of secrets) {
        // whole tokens only (192.168.110.128 must not match inside 192.168.110.1280)
        const re = new RegExp(`(^|[^0-9a-f:.])${s.replaceAll('.', '\\.')}($|[^0-9a-f:])`)
        if (re.test(text)) leaks.push(`${path.relative(x, f)}: ${s}`)
      }
    }
    cleanup()
    expect(leaks).toEqual([])
    const mapping = JSON.parse(readFileSync(mappingFile, 'utf8')) as Record<string, string>
    expect(mapping['172.31.10.4']).toBeDefined()
    expect((statSync(mappingFile).mode & 0o077).toString(8)).toBe('0')
  })

  it('the redacted bundle replays to the live verdicts per pseudonymised prefix', async () => {
    const mapping = JSON.parse(readFileSync(mappingFile, 'utf8')) as Record<string, string>
    const pool = mapPrefix(mapping, '192.168.0.0/16')
    const r = await rdOffline(['check', '--from', redactedPath, '--pool', `${pool}=ipip`, '--json'])
    const c = parseJson<CheckJson>(r, 'redacted replay')
    const want = Object.fromEntries(Object.entries(verdicts(live)).map(([p, v]) => [mapPrefix(mapping, p), v]))
    expect(verdicts(c)).toEqual(want)
    expect(c.host.findings.map((f) => f.id).sort()).toEqual(live.host.findings.map((f) => f.id).sort())
    expect(r.exitCode).toBe(live.summary.exitCode)
  })

  // The report inside a redacted bundle is computed from the redacted inputs; the --pool given at
  // collection must be pseudonymised with them, or the report sees no tunnel prefix at all (and the
  // original pool CIDR leaks into report.json, report.md, model.json and the manifest's command).
  it('the redacted bundle\'s own report has the live verdicts (pseudonymised) and does not hold the real pool', async () => {
    const mapping = JSON.parse(readFileSync(mappingFile, 'utf8')) as Record<string, string>
    const x = await extract(redactedPath)
    const own = JSON.parse(readFileSync(path.join(x, 'report.json'), 'utf8')) as CheckJson
    const want = Object.fromEntries(Object.entries(verdicts(live)).map(([p, v]) => [mapPrefix(mapping, p), v]))
    const leaks = filesUnder(x).filter((f) => readFileSync(f, 'utf8').includes('192.168.0.0')).map((f) => path.relative(x, f))
    rmSync(x, {recursive: true, force: true})
    expect(verdicts(own)).toEqual(want)
    expect(leaks).toEqual([])
  })
})
