// Calico's BIRD fork (v0.3.3+birdv1.6.8): 1.6 output, the pool only in bird.conf's krt_tunnel kernel
// filter (no IPPool file), and the fork's real behaviour: a single-path route is written through
// tunl0, a multipath one is not. Built from the bird16-ecmp-not-tunneled capture by the fork's edits.
import {describe, expect, it} from 'vitest'
import path from 'node:path'

import {readSnapshotDir} from '../../src/collect/snapshot-dir.js'
import {buildSnapshot} from '../../src/snapshot/build.js'
import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import type {SourceFile} from '../../src/model/types.js'
import {planFix} from '../../src/services/fix.js'
import {checkReport} from '../../src/report/report.js'
import {FIXTURES} from '../helpers.js'

const CALICO_FILTER = `filter calico_kernel_programming {
  if ( net ~ 192.168.0.0/16 ) then {
    krt_tunnel = "tunl0";
    accept;
  }
  accept;
}`

async function forkFiles(): Promise<SourceFile[]> {
  const files = await readSnapshotDir(path.join(FIXTURES, 'bird16-ecmp-not-tunneled'))
  return files.filter((f) => f.name !== 'ippools.yaml' && f.name !== 'ip-d-route.txt').map((f) => {
    if (f.name === 'birdc-show-status.txt') return {...f, text: f.text!.replaceAll('1.6.8', 'v0.3.3+birdv1.6.8')}
    if (f.name === 'bird.conf') return {...f, text: f.text!.replace('filter calico_kernel_programming { accept; }', CALICO_FILTER)}
    if (f.name === 'ip-j-d-route.json') {
      const routes = JSON.parse(f.text!) as Array<Record<string, unknown>>
      const i = routes.findIndex((r) => r.dst === '192.168.82.0/26')
      routes[i] = {type: 'unicast', dst: '192.168.82.0/26', gateway: '172.31.30.6', dev: 'tunl0', table: 'main', protocol: 'bird', scope: 'global', flags: ['onlink']}
      return {...f, text: JSON.stringify(routes)}
    }
    return f
  })
}

describe('Calico\'s BIRD fork', () => {
  it('takes the pool from krt_tunnel, passes the tunnelled single-path block, flags the ECMP ones', async () => {
    const ctx = new SnapshotIndex(buildSnapshot(await forkFiles()))
    expect(ctx.snapshot.bird.status).toMatchObject({version: 'v0.3.3+birdv1.6.8', major: 1, calicoFork: true})
    expect(ctx.snapshot.poolOrigin).toBe('bird.conf')
    expect(ctx.snapshot.pools.map((p) => p.cidr)).toEqual(['192.168.0.0/16'])
    const report = checkReport(ctx)
    const v = Object.fromEntries(report.prefixes.map((p) => [p.prefix, p]))
    expect(v['192.168.82.0/26'].verdict).toBe('ok')
    expect(v['192.168.82.0/26'].findings.filter((f) => f.severity === 'error')).toEqual([])
    expect(v['192.168.110.128/26'].verdict).toBe('not-tunneled')
    expect(v['192.168.110.128/26'].findings.map((f) => f.id)).toContain('tunnel-bypassed-by-ecmp')
    expect(v['192.168.200.10/32'].findings.map((f) => f.id)).toEqual(expect.arrayContaining(['tunnel-bypassed-by-ecmp', 'multipath-lost']))
    expect(v['192.168.162.128/26'].verdict).toBe('local')
  })

  it('replaces at BIRD 1.6\'s metric 0 and says no filter can fix the fork', async () => {
    const {report} = planFix(new SnapshotIndex(buildSnapshot(await forkFiles())))
    expect(report.routes.map((r) => [r.dst, r.metric])).toEqual([['192.168.110.128/26', 0], ['192.168.200.10/32', 0]])
    expect(report.birdConfig.supported).toBe(false)
    expect(report.birdConfig.reason).toContain('Calico\'s fork')
  })
})
