// DESIGN §4: the verdict is the first of missing, unreachable, not-tunneled, multipath-lost, ok
// (local and not-in-pool stand alone), through diagnosePrefix on real captures and variants; the
// false-alarm guard on healthy nodes; and the catalogue of rules against the finding-id table.
import {readdirSync} from 'node:fs'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {diagnosePrefix} from '../../src/diagnose/engine.js'
import {SEVERITY} from '../../src/diagnose/rule.js'
import {hostRules, prefixRules} from '../../src/diagnose/rules/index.js'
import type {SnapshotIndex} from '../../src/model/snapshot-index.js'
import type {FindingId, SourceFile} from '../../src/model/types.js'
import {ROOT} from '../helpers.js'
import {
  BIRD16_LL,
  BIRD2,
  DESIGN_SEVERITY,
  HEALTHY_TEXT,
  LAB_HEALTHY,
  PEER_DOWN,
  allFindings,
  snapshotIndexOf,
  dropBirdRoute,
  dropFile,
  editFile,
  editJsonRoutes,
  expectRealEvidence,
  fileText,
  fixtureExists,
  healthyFiles,
  loadFiles,
  replaceOnce,
  tunnelRoute,
} from './helpers.js'

interface Case {
  title: string
  files: () => SourceFile[]
  opts?: Parameters<typeof snapshotIndexOf>[1]
  prefix: string
  verdict: string
  present: FindingId[] // must be among the findings: they show several verdicts applied
  absent?: FindingId[]
}

const felix82 = {type: 'unicast', dst: '192.168.82.0/26', gateway: '172.31.30.6', dev: 'tunl0', table: 'main', protocol: '80', scope: 'global', metric: 1024, flags: ['onlink']}
const felixBlackhole = {type: 'blackhole', dst: '192.168.162.128/26', table: 'main', protocol: '80', scope: 'global', metric: 1024, flags: []}

const CASES: Case[] = [
  {
    title: 'missing before unreachable: bird2 with 192.168.82.0/26 and the underlay 172.31.30.0/24 deleted from the kernel',
    files: () => editJsonRoutes(loadFiles(BIRD2), {'192.168.82.0/26': null, '172.31.30.0/24': null}),
    prefix: '192.168.82.0/26', verdict: 'missing', present: ['bird-kernel-mismatch', 'nexthop-unreachable'],
  },
  {
    title: 'missing: bird2-peer-down 192.168.82.0/26 (its owner\'s session is down), as captured',
    files: () => loadFiles(PEER_DOWN),
    prefix: '192.168.82.0/26', verdict: 'missing', present: ['prefix-missing'],
  },
  {
    title: 'missing: bird2 with 192.168.82.0/26 deleted from the kernel while BIRD still has it',
    files: () => editJsonRoutes(loadFiles(BIRD2), {'192.168.82.0/26': null}),
    prefix: '192.168.82.0/26', verdict: 'missing', present: ['bird-kernel-mismatch'], absent: ['prefix-missing'],
  },
  {
    title: 'unreachable before not-tunneled: bird2 with the underlay 172.31.30.0/24 deleted from the kernel',
    files: () => editJsonRoutes(loadFiles(BIRD2), {'172.31.30.0/24': null}),
    prefix: '192.168.82.0/26', verdict: 'unreachable', present: ['nexthop-unreachable', 'tunnel-not-programmed'],
  },
  {
    title: 'unreachable: bird16-ipv6-ll 192.168.110.128/26 (kernel route of type unreachable), as captured',
    files: () => loadFiles(BIRD16_LL),
    prefix: '192.168.110.128/26', verdict: 'unreachable', present: ['nexthop-unresolvable-by-bird'],
  },
  {
    title: 'not-tunneled before multipath-lost: bird2 192.168.200.10/32, as captured',
    files: () => loadFiles(BIRD2),
    prefix: '192.168.200.10/32', verdict: 'not-tunneled', present: ['tunnel-bypassed-by-ecmp', 'multipath-lost'],
  },
  {
    title: 'not-tunneled before multipath-lost: bird16-ipv6-ll 192.168.200.10/32, as captured',
    files: () => loadFiles(BIRD16_LL),
    prefix: '192.168.200.10/32', verdict: 'not-tunneled', present: ['tunnel-not-programmed', 'multipath-lost', 'nexthop-unresolvable-by-bird'],
  },
  {
    title: 'multipath-lost: healthy variant with 192.168.200.10 reduced to via 172.31.20.5 dev tunl0 onlink',
    files: () => editJsonRoutes(healthyFiles(), {'192.168.200.10': tunnelRoute('192.168.200.10', '172.31.20.5')}),
    prefix: '192.168.200.10/32', verdict: 'multipath-lost', present: ['multipath-lost'], absent: ['tunnel-not-programmed', 'tunnel-bypassed-by-ecmp'],
  },
  {
    title: 'ok with a warning: healthy variant plus a Felix proto 80 route for 192.168.82.0/26',
    files: () => editJsonRoutes(healthyFiles(), {}, [felix82]),
    prefix: '192.168.82.0/26', verdict: 'ok', present: ['conflicting-route-owners'],
  },
  {
    title: 'misrouted: healthy variant with BIRD\'s entry for 192.168.82.0/26 gone (a stale proto bird route, no BGP path)',
    files: () => dropBirdRoute(healthyFiles(), '192.168.82.0/26'),
    prefix: '192.168.82.0/26', verdict: 'misrouted', present: ['stale-kernel-route'],
  },
  {
    title: 'local stands alone: the own block with a Felix proto 80 blackhole beside BIRD\'s (bird2 + a proto 80 route object)',
    files: () => editJsonRoutes(loadFiles(BIRD2), {}, [felixBlackhole]),
    prefix: '192.168.162.128/26', verdict: 'local', present: ['local-block', 'conflicting-route-owners'],
  },
  {
    title: 'local stands alone: the local workload route dev calif… (single path off the tunnel, yet not not-tunneled), as captured',
    files: () => loadFiles(BIRD2),
    prefix: '192.168.162.129/32', verdict: 'local', present: ['local-block'], absent: ['tunnel-not-programmed'],
  },
  {
    title: 'not-in-pool stands alone: the underlay 172.31.30.0/24',
    files: () => loadFiles(BIRD2),
    prefix: '172.31.30.0/24', verdict: 'not-in-pool', present: [],
  },
  {
    title: 'not-in-pool stands alone: a broken block outside --pool 192.168.110.0/24',
    files: () => loadFiles(BIRD2), opts: {pools: ['192.168.110.0/24']},
    prefix: '192.168.82.0/26', verdict: 'not-in-pool', present: [],
  },
]

describe('verdict order (DESIGN §4)', () => {
  it.each(CASES.map((c) => [c.title, c] as const))('%s', (_title, c) => {
    const ctx = snapshotIndexOf(c.files(), c.opts)
    const d = diagnosePrefix(ctx, c.prefix)
    const got = d.findings.map((f) => f.id)
    for (const id of c.present) expect(got, `${id} among the findings`).toContain(id)
    for (const id of c.absent ?? []) expect(got, `${id} not among the findings`).not.toContain(id)
    expect(d.verdict).toBe(c.verdict)
    if (c.verdict === 'not-in-pool') expect(d.findings).toEqual([])
    if (c.verdict === 'local') expect(got.every((id) => DESIGN_SEVERITY[id] !== 'error'), got.join(', ')).toBe(true)
    for (const f of d.findings) expectRealEvidence(ctx, f, {allowEmpty: f.id === 'prefix-missing'})
  })
})

// ---------------------------------------------------------------- false-alarm guard

/** On a healthy node every pool prefix is ok or local and no finding is an error. */
function expectHealthy(ctx: SnapshotIndex): void {
  const {prefixes, host} = allFindings(ctx)
  expect(prefixes.length, 'pool prefixes found').toBeGreaterThan(0)
  expect(prefixes.filter((p) => p.verdict === 'ok').length, 'some remote prefix is ok').toBeGreaterThan(0)
  for (const p of prefixes) {
    expect(['ok', 'local'], `${p.prefix}: ${p.verdict}`).toContain(p.verdict)
    const errors = p.findings.filter((f) => f.severity === 'error' || DESIGN_SEVERITY[f.id] === 'error')
    expect(errors.map((f) => `${f.id}: ${f.title}`), `${p.prefix}: false alarms`).toEqual([])
    for (const f of p.findings) expectRealEvidence(ctx, f)
  }
  const hostErrors = host.filter((f) => f.severity === 'error' || DESIGN_SEVERITY[f.id] === 'error')
  expect(hostErrors.map((f) => `${f.id}: ${f.title}`), 'host false alarms').toEqual([])
}

describe('false-alarm guard: a healthy node has no error finding', () => {
  const EXPECTED_PREFIXES = ['192.168.82.0/26', '192.168.110.128/26', '192.168.162.128/26', '192.168.162.129/32', '192.168.200.10/32']

  it('bird2-ecmp-not-tunneled with its pool routes rewritten to via N dev tunl0 onlink (ip-j-d-route.json and ip-d-route.txt)', () => {
    const ctx = snapshotIndexOf(healthyFiles())
    expect(ctx.poolPrefixes()).toEqual(EXPECTED_PREFIXES)
    expectHealthy(ctx)
    const verdicts = Object.fromEntries(ctx.poolPrefixes().map((p) => [p, diagnosePrefix(ctx, p).verdict]))
    expect(verdicts).toEqual({
      '192.168.82.0/26': 'ok', '192.168.110.128/26': 'ok', '192.168.200.10/32': 'ok', '192.168.162.128/26': 'local', '192.168.162.129/32': 'local',
    })
    // the kernel really holds the rewritten shape (the edit did what it says)
    const mp = ctx.facts('192.168.200.10/32').effective!
    expect(mp.nexthops.map((n) => `${n.gateway?.address} ${n.dev} ${n.flags.includes('onlink')}`)).toEqual(['172.31.20.5 tunl0 true', '172.31.30.6 tunl0 true'])
  })

  it('the same, read from ip-d-route.txt alone (ip-j-d-route.json dropped)', () => {
    const ctx = snapshotIndexOf(dropFile(healthyFiles(), 'ip-j-d-route.json'))
    expect(ctx.poolPrefixes()).toEqual(EXPECTED_PREFIXES)
    expectHealthy(ctx)
  })

  it('the same with the BIRD 2 onlink kernel filter in bird.conf (pools then also readable from it)', () => {
    const files = editFile(healthyFiles(), 'bird.conf', (t) => replaceOnce(t, 'filter calico_kernel_programming { accept; }',
      'filter calico_kernel_programming {\n  if net ~ [ 192.168.0.0/16{26,32} ] && source = RTS_BGP then {\n    ifname = "tunl0"; onlink = true; gw = bgp_next_hop; onlink = true;\n  }\n  accept;\n}'))
    expectHealthy(snapshotIndexOf(files))
    expectHealthy(snapshotIndexOf(dropFile(files, 'ippools.yaml')))
  })

  describe.skipIf(!fixtureExists(LAB_HEALTHY))(`${LAB_HEALTHY} (skipped when test/fixtures/${LAB_HEALTHY} has not been captured)`, () => {
    it('every pool prefix is ok or local, with no error finding', () => {
      expectHealthy(snapshotIndexOf(loadFiles(LAB_HEALTHY)))
    })

    it('our hand-made healthy kernel lines are the ones BIRD 2.0.12 with the onlink filter really wrote', () => {
      const lab = fileText(loadFiles(LAB_HEALTHY), 'ip-d-route.txt').split('\n')
      for (const line of Object.values(HEALTHY_TEXT).flat()) expect(lab, line).toContain(line)
    })
  })
})

// ---------------------------------------------------------------- the catalogue

describe('rule catalogue', () => {
  const all = [...prefixRules, ...hostRules]

  it('one rule per DESIGN §4 finding id, with the DESIGN severity', () => {
    expect(all.map((r) => r.id).sort()).toEqual(Object.keys(DESIGN_SEVERITY).sort())
    expect(new Set(all.map((r) => r.id)).size).toBe(all.length)
    expect(SEVERITY).toEqual(DESIGN_SEVERITY)
  })

  it('one file per finding id in src/diagnose/rules/, each exporting the rule of its name', async () => {
    const dir = path.join(ROOT, 'src/diagnose/rules')
    const files = readdirSync(dir).filter((f) => f.endsWith('.ts') && f !== 'index.ts').map((f) => f.replace(/\.ts$/, ''))
    expect(files.sort()).toEqual(Object.keys(DESIGN_SEVERITY).sort())
    for (const name of files) {
      const mod = (await import(path.join(dir, `${name}.js`))) as {rule: {id: string; scope: string}}
      expect(mod.rule.id).toBe(name)
      expect(all).toContain(mod.rule)
    }
  })

  it('node-wide conditions are host rules, the rest prefix rules (DESIGN §4: sessions, sysctls, tunnel device are host findings)', () => {
    expect(hostRules.map((r) => r.id).sort()).toEqual(
      ['borrowed-address-unrouted', 'forwarding-off', 'hash-policy-l3', 'node-address-mismatch', 'peer-down', 'route-owner-conflict', 'rp-filter-strict',
        'tunnel-device-down', 'tunnel-device-missing', 'tunnel-mtu'])
    for (const r of hostRules) expect(r.scope).toBe('host')
    for (const r of prefixRules) expect(r.scope).toBe('prefix')
  })
})
