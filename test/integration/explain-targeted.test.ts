// `explain` on a live node collects only what the block's chain needs (services/targeted.ts). Its answer
// must be a full collection's: on every lab scenario, and on n1 holding thousands of extra routes (in the pool and
// beside it, in other tables, a second owner at a block, a policy rule), each query's live explanation is compared
// with the explanation of a bundle taken of n1 in the same minute (`bundle` collects everything), field by field.
// Evidence lines of BIRD's routes are positions in what was collected: BIRD's reply to `show route PREFIX all`
// is not its whole dump, so those line numbers alone may differ (file and text may not). BIRD's times are
// masked (a route re-resolved, a session retrying, between the two collections is stamped anew), and the pools come
// from --pool on both sides (a bundle records them as its ippools.json).
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {cleanupStaleLabs, SCENARIOS, startLab, TOPOLOGY, type Lab, type ScenarioName} from '../lab/lab.js'

const OVERLAY_TABLE = 1158
import {liveFlags, liveUnavailableReason, parseJson, POOL, rd, rdOffline} from './live.js'

const BIRD_ROUTES = 'birdc-show-route-all.txt'

interface Evidence {
  file: string
  line: number
  endLine: number
  text: string
}

const TIME = /\b\d\d:\d\d:\d\d(\.\d+)?\b/g
const TIMER = /\b\d+\.\d+\/\d+\b/g // a session's timers: `Connect delay: 0.802/2`

/** An explanation without what depends on where it was collected: the node's host and BIRD routes' line numbers. */
function comparable(json: any): unknown {
  // a kernel route is cited by its line in the text route dump where one was collected (a bundle), else by its
  // element in the JSON one: the route itself is compared in `kernel`
  const evidence = (e: Evidence) => (e.file === BIRD_ROUTES ? {file: e.file, text: e.text}
    : e.file === 'ip-d-route.txt' || e.file === 'ip-j-d-route.json' ? {file: 'kernel route'} : e)
  return masked({
    prefix: json.prefix,
    query: json.query,
    verdict: json.verdict,
    findings: json.findings.map((f: any) => ({...f, evidence: f.evidence.map(evidence)})),
    kernel: json.kernel,
    bird: JSON.parse(JSON.stringify(json.bird, (k, v) => (k === 'line' || k === 'endLine' ? undefined : v))),
    plan: json.plan,
    planMode: json.planMode,
    chain: json.chain.map((s: any) => ({...s, evidence: s.evidence.map(evidence)})),
    node: {...json.node, host: undefined, missing: json.node.missing.filter((m: string) => m !== 'ippools.yaml' && m !== 'hostname')},
  })
}

/** BIRD's times (routes, sessions: a session retrying its connection is stamped anew) and timers as T. */
function masked(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v).replace(TIME, 'T').replace(TIMER, 'T/T'))
}

const QUERIES = [
  '192.168.110.128/26', '192.168.110.130', '192.168.82.0/26', '192.168.82.7', '192.168.200.10/32', '192.168.200.10',
  '192.168.162.128/26', '192.168.162.129', '192.168.99.0/26', '172.31.30.7', '10.77.0.0/24',
]

async function compareAll(lab: Lab, queries: string[], tmp: string, name: string): Promise<Map<string, any>> {
  const seen = new Map<string, any>()
  const bundle = path.join(tmp, `${name}.tar.gz`)
  const b = await rd(lab, ['bundle', ...liveFlags(lab), ...POOL, '-o', bundle, '--json'])
  expect(b.exitCode, b.stderr).toBe(0)
  for (const q of queries) {
    const [live, full] = await Promise.all([
      rd(lab, ['explain', q, ...liveFlags(lab), ...POOL, '--json']),
      rdOffline(['explain', q, '--from', bundle, ...POOL, '--json']),
    ])
    const got = parseJson(live, `explain ${q} (live)`)
    const want = parseJson(full, `explain ${q} --from bundle`)
    expect(live.exitCode, `${q}: ${live.stderr}`).toBe(full.exitCode)
    expect(comparable(got), `${name}: explain ${q}`).toEqual(comparable(want))
    seen.set(got.prefix, got)
  }
  return seen
}

const reasons = Object.fromEntries(SCENARIOS.map((s) => [s, liveUnavailableReason(s)])) as Record<
  ScenarioName,
  string | null
>
for (const s of SCENARIOS) if (reasons[s]) console.warn(`targeted explain (${s}) skipped: ${reasons[s]}`)

let tmp: string
beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'rd-targeted-'))
})
afterAll(() => {
  rmSync(tmp, {recursive: true, force: true})
})

for (const scenario of SCENARIOS) {
  describe.skipIf(reasons[scenario] !== null)(`targeted explain, ${scenario}`, () => {
    let lab: Lab
    beforeAll(async () => {
      await cleanupStaleLabs()
      lab = await startLab(scenario)
    })
    afterAll(async () => {
      await lab?.teardown()
    })

    it('every query\'s live explanation is the full collection\'s', async () => {
      await compareAll(lab, QUERIES, tmp, scenario)
    }, 120_000)

    if (scenario !== 'bird2-ecmp') return
    it('so it is with thousands of extra routes, a second owner, other tables and a policy rule', async () => {
      const lines: string[] = []
      // beside the pool (BIRD learns them too: its kernel protocol imports all)
      for (let i = 0; i < 2000; i++) lines.push(`route add 10.50.${i >> 8}.${i & 255}/32 via 172.31.11.1 dev eth0 proto static`)
      // in the pool: other blocks, some through the tunnel
      for (let i = 0; i < 1000; i++) {
        const block = `192.168.${1 + (i >> 2)}.${(i & 3) * 64}/26`
        lines.push(i % 2 ? `route add ${block} via 172.31.30.6 dev tunl0 onlink proto static` : `route add ${block} via 172.31.11.1 dev eth0 proto static`)
      }
      // a second owner at a block BIRD programs (Felix's proto 80), at a higher metric
      lines.push('route add 192.168.82.0/26 via 172.31.30.6 dev tunl0 onlink proto 80 metric 100')
      // a block's route in another table, and a next hop's more specific route in a table a rule looks up first
      lines.push('route add 192.168.110.128/26 via 172.31.20.5 dev tunl0 onlink table 200 proto static')
      lines.push('route add 172.31.30.6/32 via 172.31.11.1 dev eth0 table 100 proto static')
      lines.push('rule add from all lookup 100 pref 100')
      lines.push('route add 10.77.0.0/24 via 172.31.12.1 dev eth1 proto static metric 5')
      lines.push('route add 10.77.0.0/24 via 172.31.11.1 dev eth0 proto static metric 7')
      const batch = path.join(tmp, 'extra.batch')
      writeFileSync(batch, lines.join('\n') + '\n')
      const r = await lab.exec('n1', ['ip', '-batch', batch])
      expect(r.exitCode, r.stderr).toBe(0)
      // until BIRD has learnt them (its kernel scan: every 2 s)
      const deadline = Date.now() + 30_000
      while (!(await lab.birdc('n1', 'show route count')).match(/\b3\d{3} of \d+ routes|\b3\d{3} routes/)) {
        if (Date.now() > deadline) break
        await new Promise((res) => setTimeout(res, 1000))
      }
      await new Promise((res) => setTimeout(res, 3000))
      await compareAll(lab, [...QUERIES, '192.168.1.64/26', '192.168.1.0/26', '192.168.2.130', '10.50.1.1'], tmp, `${scenario}-extra`)
    }, 120_000)

    it('so it is with the overlay applied: its table and rule, a correction left in main, a stale one, a leak', async () => {
      const jdir = path.join(tmp, 'journals')
      const applied = await rd(lab, ['fix', '--apply', '--yes', '--watch', '0', '--journal-dir', jdir, ...liveFlags(lab), ...POOL, '--json'])
      expect(applied.exitCode, applied.stderr).toBe(0)
      const n1 = TOPOLOGY.nodes.n1.loopback
      const n2 = TOPOLOGY.nodes.n2.loopback
      const n3 = TOPOLOGY.nodes.n3.loopback
      const lines = [
        // overlay-learnable: a correction of an earlier version in main, beside BIRD's route
        `route add ${TOPOLOGY.nodes.n3.block} via ${n3} dev tunl0 onlink proto 158 metric 31`,
        // overlay-stale: the overlay's route for n2's block to another endpoint; one for a block nobody announces
        `route replace ${TOPOLOGY.nodes.n2.block} via ${n3} dev tunl0 onlink proto 158 table ${OVERLAY_TABLE}`,
        `route add 192.168.77.0/26 via ${n2} dev tunl0 onlink proto 158 table ${OVERLAY_TABLE}`,
        // route-leaked-to-bgp: a correction in main for a block nobody announces, learnt by BIRD and exported
        `route add 192.168.99.0/26 via ${n2} dev tunl0 onlink proto 158 metric 31`,
      ]
      const batch = path.join(tmp, 'overlay.batch')
      writeFileSync(batch, lines.join('\n') + '\n')
      const r = await lab.exec('n1', ['ip', '-batch', batch])
      expect(r.exitCode, r.stderr).toBe(0)
      const rules = await lab.exec('n1', ['ip', 'rule', 'show'])
      expect(rules.stdout).toContain(`to 192.168.0.0/16 lookup ${OVERLAY_TABLE}`)
      // until n1's BIRD has learnt the leak and n2 has it from n1
      const deadline = Date.now() + 30_000
      while (!(await lab.birdc('n2', 'show route 192.168.99.0/26 all').catch(() => '')).includes(`BGP.next_hop: ${n1}`)) {
        if (Date.now() > deadline) throw new Error('n2 did not learn 192.168.99.0/26 from n1')
        await new Promise((res) => setTimeout(res, 1000))
      }
      await new Promise((res) => setTimeout(res, 3000))
      const queries = [...QUERIES, '192.168.77.0/26', '192.168.77.5', '192.168.99.7']
      const seen = await compareAll(lab, queries, tmp, `${scenario}-overlay`)
      // the scenario holds what it is for: each finding of the overlay is seen, by both collections
      for (const [q, id] of [[TOPOLOGY.nodes.n3.block, 'overlay-learnable'], [TOPOLOGY.nodes.n2.block, 'overlay-stale'],
        ['192.168.77.0/26', 'overlay-stale'], ['192.168.99.0/26', 'route-leaked-to-bgp'], ['192.168.200.10/32', 'overlay-active']]) {
        expect(seen.get(q)?.findings.map((f: {id: string}) => f.id), `${q}: ${id}`).toContain(id)
      }
    }, 180_000)
  })
}
