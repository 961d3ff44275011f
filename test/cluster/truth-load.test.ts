// Calico's truth loaded once, for a caller that diagnoses again and again (watch): every later load is given the
// truth as read and parsed, diagnoses as --calico does, and neither reads nor parses it again.
import {mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {RouteDoctorError} from '../../src/model/errors.js'
import {loadCheckIndex, loadClusterTruth} from '../../src/services/load.js'
import {loadSnapshot} from '../load-snapshot.js'
import {checkReport} from '../../src/report/report.js'
import {fixtureDir, LAB_HEALTHY} from '../diagnose/helpers.js'
import {FIXTURE_CLUSTER, writeTruth} from './truth.js'

let tmp: string
beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'rd-truth-load-'))
})
afterAll(() => rmSync(tmp, {recursive: true, force: true}))

// n2's block affine to n3: the lab's healthy n1 routes it to n2, so the truth makes it misrouted
const WRONG_OWNER = FIXTURE_CLUSTER.map((n) => ({...n, blocks: n.name === 'n3' ? [...n.blocks, '192.168.110.128/26'] : n.name === 'n2' ? [] : n.blocks}))

describe('loadClusterTruth', () => {
  it('gives later loads the truth without reading it again, diagnosing as --calico does', async () => {
    const dir = writeTruth(path.join(tmp, 'wrong-owner'), {nodes: WRONG_OWNER})
    const from = fixtureDir(LAB_HEALTHY)
    const viaFlag = checkReport(await loadCheckIndex({from, calico: dir}, {evidence: true, texts: true}))
    const loaded = await loadClusterTruth({calico: dir})
    expect(loaded?.files.map((f) => f.name)).toContain('calico/ipamblocks.json')
    rmSync(dir, {recursive: true}) // nothing below reads it
    const ctx = await loadCheckIndex({from, clusterTruth: loaded}, {evidence: true, texts: true})
    expect(ctx.snapshot.calico).toBe(loaded!.truth) // the parsed truth itself, not parsed again
    const viaLoaded = checkReport(ctx)
    expect(viaLoaded).toEqual(viaFlag)
    const p = viaLoaded.prefixes.find((x) => x.prefix === '192.168.110.128/26')!
    expect(p.verdict).toBe('misrouted')
    expect(p.findings.map((f) => f.id)).toContain('block-owner-mismatch')
    // explain's and fix's load takes it too
    expect((await loadSnapshot({from, clusterTruth: loaded})).nodeName).toBe('n1')
  })
  it('a source\'s own calico/ is not read when the truth is given', async () => {
    const dir = path.join(tmp, 'with-own')
    writeTruth(path.join(dir, 'calico'), {nodes: WRONG_OWNER})
    for (const f of ['ip-j-d-route.json', 'birdc-show-route-all.txt']) writeFileSync(path.join(dir, f), '')
    const loaded = await loadClusterTruth({calico: writeTruth(path.join(tmp, 'consistent'), {nodes: FIXTURE_CLUSTER})})
    const snapshot = await loadSnapshot({from: dir, clusterTruth: loaded})
    expect(snapshot.calico).toBe(loaded!.truth)
    // the files cited and bundled are the given truth's, none of the source's own
    const texts = (files: Array<{name: string; text?: string}>) => files.filter((f) => f.name.startsWith('calico/')).map((f) => [f.name, f.text])
    expect(texts(snapshot.files)).toEqual(texts(loaded!.files))
  })
  it('is undefined without --calico or --kube', async () => {
    expect(await loadClusterTruth({})).toBeUndefined()
  })
  it('a file that is not what it should be: exit 2 naming the file and the item', async () => {
    const bad = writeTruth(path.join(tmp, 'bad'), {nodes: FIXTURE_CLUSTER})
    writeFileSync(path.join(bad, 'blockaffinities.json'), JSON.stringify({kind: 'List', items: [{apiVersion: 'example.com/v1', kind: 'BlockAffinity', metadata: {name: 'a1'}, spec: {}}]}))
    const error = await loadClusterTruth({calico: bad}).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RouteDoctorError)
    expect((error as RouteDoctorError).exit).toBe(2)
    expect((error as Error).message.startsWith(`${bad}/blockaffinities.json:1: `)).toBe(true)
    expect((error as Error).message).toMatch(/example\.com\/v1/)
  })

  it('an IPPool whose blockSize Calico would refuse: exit 2 naming the file and the pool', async () => {
    const bad = writeTruth(path.join(tmp, 'bad-block-size'), {nodes: FIXTURE_CLUSTER})
    const file = path.join(bad, 'ippools.json')
    writeFileSync(file, readFileSync(file, 'utf8').replace('"blockSize": 26', '"blockSize": 33'))
    const error = await loadClusterTruth({calico: bad}).catch((e: unknown) => e)
    expect((error as RouteDoctorError).exit).toBe(2)
    expect((error as Error).message).toMatch(/ippools\.json:\d+: expected spec\.blockSize to be a block prefix length 20-32 .*found "pool-0: 33"/)
  })

  it('a --calico directory with none of the files (a wrong path): exit 2 naming it, not diagnosed without the truth', async () => {
    const empty = path.join(tmp, 'empty')
    mkdirSync(empty)
    writeFileSync(path.join(empty, 'notes.txt'), 'not a kubectl list\n')
    const from = fixtureDir(LAB_HEALTHY)
    const loads = [() => loadClusterTruth({calico: empty}), () => loadCheckIndex({from, calico: empty})]
    for (const load of loads) {
      const error = await load().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(RouteDoctorError)
      expect((error as RouteDoctorError).exit).toBe(2)
      expect((error as Error).message).toBe(
        `--calico ${empty}: none of ippools.json, ipamblocks.json, blockaffinities.json, nodes.json, ` +
          'bgpconfigurations.json, bgppeers.json, felixconfigurations.json there (expected `kubectl get RESOURCE -o json` ' +
          'files; a snapshot or bundle carries its own under calico/)',
      )
    }
  })
})
