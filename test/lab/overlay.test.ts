// The overlay's lab scenario, on real BIRD 2 with Calico's configuration shape (kernel protocol `learn … import all`,
// export filter calico_aggr then the pool): fix --apply writes the overlay; a block moves n2 → n3 and check sees the
// stale correction, fix --apply repairs it; the block is released everywhere and no other node's BIRD learns it from
// n1; the journals revert routes and rules exactly. Then the leak the overlay prevents, reproduced with a correction
// of an earlier version in `main`: BIRD learns it and advertises it, check says so, fix withdraws it.
// RD_CAPTURE_FIXTURES=1 also writes the captures after the move and after the leak into test/fixtures.
import {mkdtempSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {execa} from 'execa'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {FIXTURES} from '../helpers.js'
import {type CheckJson, liveFlags, liveUnavailableReason, parseJson, POOL, rd, rdOffline, sleep} from '../integration/live.js'
import {captureSnapshot} from './capture.js'
import {cleanupStaleLabs, peerBirdConfig, startLab, TOPOLOGY, type BirdNode, type Lab} from './lab.js'

const BLOCK = TOPOLOGY.nodes.n2.block
const N2 = TOPOLOGY.nodes.n2.loopback
const N3 = TOPOLOGY.nodes.n3.loopback
const N1 = TOPOLOGY.nodes.n1.loopback
const TABLE = '1158'
const why = liveUnavailableReason('bird2-ecmp')
if (why) console.warn(`overlay lab scenario skipped: ${why}`)

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const got = await probe()
    if (got !== undefined) return got
    if (Date.now() > end) throw new Error(`lab: ${what} not seen within ${timeoutMs} ms`)
    await sleep(300)
  }
}

/** BIRD's paths for the block on `node`, as `show route PREFIX all` prints them ('' when it has none). */
async function birdPaths(lab: Lab, node: BirdNode): Promise<string> {
  try {
    const out = await lab.birdc(node, `show route ${BLOCK} all`)
    return out.includes(BLOCK) ? out : ''
  } catch (error) {
    if (/Network not found/.test((error as Error).message)) return '' // birdc exits 1 when BIRD has no such network
    throw error
  }
}

async function ipRules(lab: Lab): Promise<string> {
  return String((await execa('ip', ['-n', lab.ns('n1'), 'rule', 'show'])).stdout)
}

const ours = async (lab: Lab) => (await lab.routes('n1')).filter((r) => r.protocol === '158')
const prefixOf = (c: CheckJson, p: string) => c.prefixes.find((x) => x.prefix === p)
const ids = (c: CheckJson, p: string) => prefixOf(c, p)?.findings.map((f) => f.id) ?? []

describe.skipIf(why !== null)(
  'the overlay on a Calico-shaped lab: moved, released, reverted, and the leak it prevents',
  () => {
    let lab: Lab
    let jdir: string
    let rulesBefore: string
    const journals: string[] = []
    const check = async () => {
      const r = await rd(lab, ['check', ...liveFlags(lab), ...POOL, '--json'])
      return {exit: r.exitCode, c: parseJson<CheckJson>(r, 'check')}
    }
    const apply = async () => {
      const r = await rd(lab, [
        'fix',
        '--apply',
        '--yes',
        '--watch',
        '2',
        '--journal-dir',
        jdir,
        ...liveFlags(lab),
        ...POOL,
        '--json',
      ])
      const res = parseJson(r, 'fix --apply')
      expect(res.errors ?? [], JSON.stringify(res.errors)).toEqual([])
      expect(res.verified).toBe(true)
      journals.push(res.journal)
      return res
    }
    const capture = async (name: string) => {
      const dir =
        process.env.RD_CAPTURE_FIXTURES === '1'
          ? path.join(FIXTURES, name)
          : mkdtempSync(path.join(os.tmpdir(), `rd-${name}-`))
      await captureSnapshot(lab, dir)
      return dir
    }

    beforeAll(async () => {
      await cleanupStaleLabs()
      lab = await startLab('bird2-ecmp')
      jdir = mkdtempSync(path.join(os.tmpdir(), 'rd-overlay-journal-'))
      rulesBefore = await ipRules(lab)
    }, 120_000)
    afterAll(async () => {
      await lab?.teardown()
      if (jdir) rmSync(jdir, {recursive: true, force: true})
    })

    it('1. fix --apply writes the corrections into the overlay table with one rule; BIRD never learns them', async () => {
      const res = await apply()
      expect(res.applied.map((a: {dst: string; table: number}) => [a.dst, a.table])).toContainEqual([
        BLOCK,
        Number(TABLE),
      ])
      expect(await ipRules(lab)).toContain(`from all to 192.168.0.0/16 lookup ${TABLE}`)
      expect((await ours(lab)).every((r) => r.table === TABLE)).toBe(true)
      await sleep(5000) // two kernel scans
      expect(await birdPaths(lab, 'n1')).not.toContain('kernel1')
      const {c} = await check()
      expect(prefixOf(c, BLOCK)?.verdict).toBe('ok')
      expect(ids(c, BLOCK)).toContain('overlay-active')
    }, 60_000)

    it('2. the block moves n2 → n3: check says misrouted and overlay-stale, explain plans n3; fix --apply repairs it', async () => {
      await lab.reconfigure('n2', peerBirdConfig('n2', [TOPOLOGY.anycast]))
      await lab.reconfigure('n3', peerBirdConfig('n3', [TOPOLOGY.nodes.n3.block, BLOCK, TOPOLOGY.anycast]))
      await until('n1 learning the block from n3', async () => {
        const paths = await birdPaths(lab, 'n1')
        return paths.includes(`BGP.next_hop: ${N3}`) && !paths.includes(`BGP.next_hop: ${N2}`) ? paths : undefined
      })
      await sleep(3000) // BIRD's kernel route follows within a scan
      const moved = await capture('lab-bird2-overlay-moved')
      const {exit, c} = await check()
      expect(exit).toBe(1)
      expect(prefixOf(c, BLOCK)?.verdict).toBe('misrouted')
      expect(ids(c, BLOCK)).toContain('overlay-stale')
      const e = parseJson(await rd(lab, ['explain', BLOCK, ...liveFlags(lab), ...POOL, '--json']), 'explain')
      expect(e.plan.nexthops.map((n: {gateway: string}) => n.gateway)).toEqual([N3])
      // the capture says the same offline
      const offline = parseJson<CheckJson>(await rdOffline(['check', '--from', moved, '--json']), 'check --from moved')
      expect(prefixOf(offline, BLOCK)?.verdict).toBe('misrouted')
      const res = await apply()
      expect(
        res.applied
          .filter((a: {dst: string}) => a.dst === BLOCK)
          .map((a: {nexthops: Array<{gateway: string}>}) => a.nexthops[0].gateway),
      ).toEqual([N3])
      const after = await check()
      expect(prefixOf(after.c, BLOCK)?.verdict).toBe('ok')
      expect(ids(after.c, BLOCK)).toContain('overlay-active')
    }, 90_000)

    it('3. the block is released everywhere: no other node\'s BIRD learns it from n1; the stale correction is withdrawn', async () => {
      await lab.reconfigure('n3', peerBirdConfig('n3', [TOPOLOGY.nodes.n3.block, TOPOLOGY.anycast]))
      await until('n1 losing the block', async () => ((await birdPaths(lab, 'n1')) === '' ? true : undefined))
      await sleep(6000) // three kernel scans of n1's BIRD, and BGP's propagation
      expect(await birdPaths(lab, 'n1')).toBe('') // BIRD learnt nothing from the overlay table
      for (const node of ['n2', 'n3'] as const) expect(await birdPaths(lab, node), node).toBe('')
      const {c} = await check()
      expect(prefixOf(c, BLOCK)?.verdict).toBe('misrouted')
      expect(ids(c, BLOCK)).toContain('overlay-stale')
      expect(ids(c, BLOCK)).not.toContain('route-leaked-to-bgp')
      const dry = parseJson(await rd(lab, ['fix', ...liveFlags(lab), ...POOL, '--json']), 'fix')
      expect(
        dry.routes
          .filter((r: {dst: string}) => r.dst === BLOCK)
          .map((r: {action: string; table: number}) => [r.action, r.table]),
      ).toEqual([['delete', Number(TABLE)]])
      await apply()
      expect((await ours(lab)).filter((r) => r.dst === BLOCK)).toEqual([])
    }, 90_000)

    it('4. the journals revert routes and rules exactly', async () => {
      for (const j of [...journals].reverse()) {
        const r = await rd(lab, ['fix', '--revert', j, '--yes', '--json'])
        const res = parseJson(r, 'fix --revert')
        expect(res.errors, j).toEqual([])
        expect(res.verified, j).toBe(true)
      }
      expect(await ours(lab)).toEqual([])
      expect(await ipRules(lab)).toBe(rulesBefore)
    }, 60_000)

    it('5. the leak the overlay prevents: a correction of an earlier version in main is learnt and advertised; check and fix see it', async () => {
      await execa('ip', [
        '-n',
        lab.ns('n1'),
        'route',
        'replace',
        BLOCK,
        'via',
        N2,
        'dev',
        'tunl0',
        'onlink',
        'proto',
        '158',
        'metric',
        '31',
      ])
      // n1's BIRD learns it (Kernel.source 158) and Calico's export filter sends it to every peer
      await until('n2 learning the block from n1', async () =>
        (await birdPaths(lab, 'n2')).includes(`BGP.next_hop: ${N1}`) ? true : undefined,
      )
      expect(await birdPaths(lab, 'n1')).toMatch(/Kernel\.source: 158/)
      const leak = await capture('lab-bird2-overlay-leak')
      const {exit, c} = await check()
      expect(exit).toBe(1)
      expect(ids(c, BLOCK)).toEqual(
        expect.arrayContaining(['overlay-stale', 'overlay-learnable', 'route-leaked-to-bgp']),
      )
      const offline = parseJson(await rdOffline(['fix', '--from', leak, '--json']), 'fix --from leak')
      expect(
        offline.routes
          .filter((r: {dst: string}) => r.dst === BLOCK)
          .map((r: {action: string; table: number}) => [r.action, r.table]),
      ).toEqual([['delete', 254]])
      await apply()
      await until('n2 forgetting the block', async () => ((await birdPaths(lab, 'n2')) === '' ? true : undefined))
      expect((await ours(lab)).filter((r) => r.dst === BLOCK)).toEqual([])
    }, 90_000)
  },
)
