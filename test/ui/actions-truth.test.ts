// ui with Calico's truth (--calico, --kube): the live refresh every few seconds re-collects the node, and reads the
// truth (the whole cluster's IPAM, from the API server with --kube) again only once it is --truth-interval old, as
// watch does. Reads of the truth are counted where --calico DIR is read.
import {mkdtempSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {afterAll, afterEach, describe, expect, it, vi} from 'vitest'

import {createActions} from '../../src/ui/actions.js'
import {FIXTURE_CLUSTER, writeTruth} from '../cluster/truth.js'
import {ECMP, TARGET} from './fixture.js'

const seen = vi.hoisted(() => ({truthReads: 0}))

vi.mock('../../src/collect/snapshot-dir.js', async (original) => {
  const real = await original<typeof import('../../src/collect/snapshot-dir.js')>()
  return {
    ...real,
    readCalicoDir: (dir: string) => {
      seen.truthReads++
      return real.readCalicoDir(dir)
    },
  }
})

describe('ui with Calico\'s truth', () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'rd-ui-truth-'))
  const calico = writeTruth(path.join(tmp, 'calico'), {nodes: FIXTURE_CLUSTER})
  afterAll(() => rmSync(tmp, {recursive: true, force: true}))
  afterEach(() => vi.useRealTimers())

  it('reads the truth again at a refresh only once it is --truth-interval old; an explanation takes the same', async () => {
    vi.useFakeTimers({toFake: ['Date']})
    const actions = createActions({from: ECMP, calico}, {truthIntervalSeconds: 300})
    const first = await actions.loadReport()
    expect(seen.truthReads).toBe(1)
    expect(first.node.kubeNode).toBe('n1')
    vi.advanceTimersByTime(5000)
    await actions.loadReport()
    await actions.explain(TARGET)
    expect(seen.truthReads).toBe(1)
    vi.advanceTimersByTime(295_000)
    const later = await actions.loadReport()
    expect(seen.truthReads).toBe(2)
    expect(later.prefixes).toEqual(first.prefixes)
    // `r` asks for it: read again, whatever its age
    await actions.loadReport(true)
    expect(seen.truthReads).toBe(3)
  })
})
