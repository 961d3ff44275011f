// BIRD 3 prints the same routes with renamed attributes (bgp_next_hop, source:, from:, preference:,
// hostentry:, krt_*, "Internal route handling values"; shapes as in test/fixtures/bird-captures/
// bird3.2.3-*.txt, real BIRD 3.2.3 output). The diagnosis must not depend on the 2.x names: the
// bird2-ecmp-not-tunneled capture, rewritten attribute by attribute into the 3.2 format, must give
// the same verdicts and plans, and the durable-fix advice must follow the version.
import {readFileSync} from 'node:fs'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {readSnapshotDir} from '../../src/collect/snapshot-dir.js'
import {buildSnapshot} from '../../src/snapshot/build.js'
import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import type {SourceFile} from '../../src/model/types.js'
import {planFix} from '../../src/services/fix.js'
import {checkReport} from '../../src/report/report.js'
import {FIXTURES, type Expected} from '../helpers.js'

const DIR = path.join(FIXTURES, 'bird2-ecmp-not-tunneled')
const RENAME: Record<string, string> = {
  'BGP.origin': 'bgp_origin', 'BGP.as_path': 'bgp_path', 'BGP.next_hop': 'bgp_next_hop', 'BGP.local_pref': 'bgp_local_pref',
  'Kernel.source': 'krt_source', 'Kernel.metric': 'krt_metric', 'Kernel.scope': 'krt_scope',
}

/** `show route all` of BIRD 2.0.12 → the same routes as BIRD 3.2 prints them. */
function toBird3(text: string, version: string): string {
  const out: string[] = []
  let id = 1
  let from: string | undefined
  let pref = ''
  const close = () => {
    if (out.length > 1 && out.at(-1)!.startsWith('\t')) out.push(`\tInternal route handling values: 0L 5G 0S id ${id++}`)
  }
  for (const line of text.split('\n')) {
    if (line.startsWith('BIRD ')) {
      out.push(`BIRD ${version} ready.`)
      continue
    }
    if (line.length > 0 && !line.startsWith('\t')) {
      if (!line.startsWith('Table')) close()
      from = / from (\S+)\]/.exec(line)?.[1]
      pref = /\((\d+)/.exec(line)?.[1] ?? ''
      out.push(line)
      continue
    }
    const type = /^\tType: (\S+)/.exec(line)
    if (type) {
      if (from) out.push(`\thostentry: via ${from} table master4`)
      out.push(`\tpreference: ${pref}`)
      if (from) out.push(`\tfrom: ${from}`)
      out.push(`\tsource: ${type[1] === 'inherit' ? 'kernel' : type[1]}`)
      continue
    }
    const attr = /^\t([A-Za-z._]+): ?(.*)$/.exec(line)
    out.push(attr && RENAME[attr[1]] ? `\t${RENAME[attr[1]]}: ${attr[2]}` : line)
  }
  close()
  return out.join('\n')
}

async function bird3Files(version: string): Promise<SourceFile[]> {
  return (await readSnapshotDir(DIR)).map((f) => {
    if (f.name === 'birdc-show-route-all.txt') return {...f, text: toBird3(f.text!, version)}
    if (f.name === 'birdc-show-status.txt') return {...f, text: f.text!.replaceAll('2.0.12', version)}
    return f
  })
}

describe('BIRD 3 output', () => {
  it('the rewrite really is BIRD 3 shaped (no 2.x attribute names left)', async () => {
    const text = (await bird3Files('3.2.3')).find((f) => f.name === 'birdc-show-route-all.txt')!.text!
    expect(text).toContain('bgp_next_hop: 172.31.20.5')
    expect(text).toContain('source: BGP')
    expect(text).toContain('Internal route handling values')
    expect(text).not.toMatch(/BGP\.|Type:/)
  })

  it('gives the verdicts and plans of the BIRD 2 capture', async () => {
    const expected = JSON.parse(readFileSync(path.join(DIR, 'expected.json'), 'utf8')) as Expected
    const ctx = new SnapshotIndex(buildSnapshot(await bird3Files('3.2.3')))
    const report = checkReport(ctx)
    expect(ctx.snapshot.bird.status?.major).toBe(3)
    for (const [prefix, want] of Object.entries(expected.prefixes)) {
      const got = report.prefixes.find((p) => p.prefix === prefix)
      expect(got?.verdict, prefix).toBe(want.verdict)
      for (const id of want.findings ?? [])
        expect(
          got!.findings.map((f) => f.id),
          prefix,
        ).toContain(id)
      expect(got!.plan?.nexthops.map((n) => n.gateway).sort() ?? null, prefix).toEqual(
        want.plan?.nexthops.map((n) => n.gateway).sort() ?? null,
      )
    }
    expect(report.summary.exitCode).toBe(expected.check_exit)
  })

  it('advises the onlink filter on 3.2 and says 3.0 cannot', async () => {
    const on32 = planFix(new SnapshotIndex(buildSnapshot(await bird3Files('3.2.3')))).report.birdConfig
    expect(on32.supported).toBe(true)
    expect(on32.snippet).toMatch(/ifname = "tunl0";\s+onlink = true;\s+gw = bgp_next_hop;\s+onlink = true;/)
    const on30 = planFix(new SnapshotIndex(buildSnapshot(await bird3Files('3.0.5')))).report.birdConfig
    expect(on30.supported).toBe(false)
    expect(on30.reason).toContain('3.0/3.1')
  })
})
