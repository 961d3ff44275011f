// The contract of the shared fixtures (test/fixtures/*/expected.json): verdicts, finding ids,
// plans and exit codes, through the same services the commands call, and through the real binary.
import {readFileSync} from 'node:fs'
import path from 'node:path'

import {execa} from 'execa'
import {describe, expect, it} from 'vitest'

import {readSnapshotDir} from '../../src/collect/snapshot-dir.js'
import {buildSnapshot} from '../../src/snapshot/build.js'
import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import {checkReport, explainReport} from '../../src/report/report.js'
import {BIN, scenarioDirs, type Expected} from '../helpers.js'

async function snapshotIndexOf(dir: string): Promise<SnapshotIndex> {
  return new SnapshotIndex(buildSnapshot(await readSnapshotDir(dir)))
}

const gateways = (plan: {nexthops: Array<{gateway: string; dev: string; onlink: boolean}>} | null) =>
  plan ? plan.nexthops.map((n) => `${n.gateway} dev ${n.dev}${n.onlink ? ' onlink' : ''}`).sort() : null

describe.each(scenarioDirs().map((d) => [path.basename(d), d]))('fixture %s', (_name, dir) => {
  const expected = JSON.parse(readFileSync(path.join(dir, 'expected.json'), 'utf8')) as Expected

  it('check gives the expected verdict, findings and plan for every prefix', async () => {
    const report = checkReport(await snapshotIndexOf(dir))
    const byPrefix = new Map(report.prefixes.map((p) => [p.prefix, p]))
    for (const [prefix, want] of Object.entries(expected.prefixes)) {
      const got = byPrefix.get(prefix)
      expect(got, `${prefix} listed by check`).toBeDefined()
      expect(got!.verdict, prefix).toBe(want.verdict)
      for (const id of want.findings ?? []) expect(got!.findings.map((f) => f.id), prefix).toContain(id)
      expect(gateways(got!.plan), prefix).toEqual(gateways(want.plan))
    }
    // nothing outside the expectation is listed, and healthy prefixes carry no error finding
    expect([...byPrefix.keys()].sort()).toEqual(Object.keys(expected.prefixes).sort())
    for (const id of expected.host_findings ?? []) expect(report.host.findings.map((f) => f.id)).toContain(id)
    expect(report.summary.exitCode).toBe(expected.check_exit)
  })

  it('explain --json agrees with check and plans the same routes', async () => {
    const ctx = await snapshotIndexOf(dir)
    for (const [prefix, want] of Object.entries({...expected.prefixes, ...expected.explain})) {
      const r = explainReport(ctx, prefix)
      expect(r.verdict, prefix).toBe(want.verdict)
      for (const id of want.findings ?? []) expect(r.findings.map((f) => f.id), prefix).toContain(id)
      expect(gateways(r.plan), prefix).toEqual(gateways(want.plan))
      // every finding cites evidence lines that exist in the snapshot, except device-absence findings
      for (const f of r.findings) for (const e of f.evidence) expect(e.text.length, `${f.id} evidence`).toBeGreaterThan(0)
    }
  })

  it('the binary exits with the expected status and prints valid JSON', async () => {
    const res = await execa('node', [BIN, 'check', '--from', dir, '--json'], {reject: false})
    expect(res.exitCode).toBe(expected.check_exit)
    const json = JSON.parse(res.stdout)
    expect(json.schema).toBe(1)
    expect(json.prefixes.map((p: {prefix: string}) => p.prefix).sort()).toEqual(Object.keys(expected.prefixes).sort())
  })
})

describe('explain on an address', () => {
  it('finds the pool prefix that covers it', async () => {
    const ctx = await snapshotIndexOf(scenarioDirs().find((d) => d.includes('bird2-ecmp'))!)
    const r = explainReport(ctx, '192.168.110.130')
    expect(r.prefix).toBe('192.168.110.128/26')
    expect(r.verdict).toBe('not-tunneled')
    const resolution = r.chain.find((s) => s.step === 'resolution')!
    expect(resolution.summary).toContain('172.31.20.0/23')
    expect(resolution.summary).toContain('ECMP')
  })

  it('says not-in-pool outside the pools', async () => {
    const ctx = await snapshotIndexOf(scenarioDirs().find((d) => d.includes('bird2-ecmp'))!)
    expect(explainReport(ctx, '172.31.30.7').verdict).toBe('not-in-pool')
  })
})
