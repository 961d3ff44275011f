// `fix --apply` LIVE in n1's namespace on every broken scenario: the effective route of each pool prefix
// becomes what BIRD 2.0.12 with the onlink filter programs on a healthy node, written into the overlay
// table and reached by one `ip rule` per pool, nothing outside the plan changes (BIRD's routes in main are
// untouched), `check` is then clean, and `fix --revert` puts the routes and the rules back exactly.
// Safety (no --yes without a TTY; no CAP_NET_ADMIN) runs first on bird2-ecmp.
import {existsSync, mkdtempSync, readdirSync, readFileSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {execa} from 'execa'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {tempDir} from '../helpers.js'
import {cleanupStaleLabs, startLab, type KernelRoute, type Lab, type ScenarioName} from '../lab/lab.js'
import {
  type CheckJson,
  type Hop,
  expectedFor,
  healthyHops,
  kernelHops,
  liveFlags,
  liveUnavailableReason,
  mainRoutesFor,
  normDst,
  parseJson,
  POOL,
  rd,
  routeDiff,
  sortHops,
  stableJson,
} from './live.js'

const BROKEN: ScenarioName[] = ['bird2-ecmp', 'bird16-ecmp', 'bird16-ipv6-ll', 'bird2-peer-down']
for (const s of BROKEN) {
  const why = liveUnavailableReason(s)
  if (why) console.warn(`fix --apply (${s}) skipped: ${why}`)
}

/** An address inside each prefix for `ip route get`, and the gateway the tunnel must use. */
const TABLE = '1158'
const RULE_PRIORITY = 32000

/** n1's rules as `ip -j rule` lists them, as stable text. */
async function ipRules(lab: Lab): Promise<string[]> {
  const r = await execa('ip', ['-n', lab.ns('n1'), '-j', 'rule', 'show'], {reject: false})
  return (JSON.parse(String(r.stdout) || '[]') as unknown[]).map(stableJson).sort()
}

const overlayRoutesFor = (routes: KernelRoute[], prefix: string): KernelRoute[] =>
  routes.filter((r) => r.table === TABLE && normDst(r.dst) === prefix)

const PROBES: Record<string, string> = {'192.168.110.128/26': '192.168.110.130', '192.168.82.0/26': '192.168.82.5', '192.168.200.10/32': '192.168.200.10'}

async function ipRouteGet(lab: Lab, addr: string): Promise<{gateway?: string; dev?: string} | null> {
  const r = await execa('ip', ['-n', lab.ns('n1'), '-j', 'route', 'get', addr], {reject: false})
  if (r.exitCode !== 0) return null
  return (JSON.parse(String(r.stdout)) as Array<{gateway?: string; dev?: string}>)[0] ?? null
}

function safetySuite(getLab: () => Lab) {
  describe('safety', () => {
    it('fix --apply without --yes and no TTY refuses (exit 2) and changes nothing', async () => {
      const lab = getLab()
      const jdir = path.join(tempDir('rd-safety-'), 'journals')
      const before = await lab.routes('n1')
      const [j, t] = await Promise.all([
        rd(lab, ['fix', '--apply', '--journal-dir', jdir, ...liveFlags(lab), ...POOL, '--json']),
        rd(lab, ['fix', '--apply', '--journal-dir', jdir, ...liveFlags(lab), ...POOL]),
      ])
      for (const r of [j, t]) {
        expect(r.exitCode).toBe(2)
        expect(r.stderr).toMatch(/without --yes/)
        expect(r.stderr).not.toMatch(/\n\s+at /)
      }
      expect(parseJson(j, 'fix --apply').error.code).toBe('E_USAGE')
      expect(routeDiff(await lab.routes('n1'), before)).toEqual([])
      expect(routeDiff(before, await lab.routes('n1'))).toEqual([])
      expect(existsSync(jdir) ? readdirSync(jdir).filter((f) => f.endsWith('.json')) : []).toEqual([])
    })

    it('fix --apply --yes without CAP_NET_ADMIN says so clearly and changes nothing', async () => {
      const lab = getLab()
      // two journal dirs: the two runs must not meet at the apply lock
      const jdir = tempDir('rd-nocap-')
      const jdir2 = tempDir('rd-nocap-')
      const before = await lab.routes('n1')
      // still root (so BIRD's socket and the lab dir are readable), but CAP_NET_ADMIN is gone from the
      // bounding set, hence from the exec'd node's permitted and effective sets
      const wrap = ['setpriv', '--bounding-set=-net_admin', '--inh-caps=-net_admin']
      const [j, t] = await Promise.all([
        rd(lab, ['fix', '--apply', '--yes', '--journal-dir', jdir, '--watch', '0', ...liveFlags(lab), ...POOL, '--json'], {wrap}),
        rd(lab, ['fix', '--apply', '--yes', '--journal-dir', jdir2, '--watch', '0', ...liveFlags(lab), ...POOL], {wrap}),
      ])
      for (const r of [j, t]) {
        expect(r.exitCode).not.toBe(0)
        expect(r.stdout + r.stderr).toContain('CAP_NET_ADMIN')
        expect(r.stderr).not.toMatch(/\n\s+at /)
      }
      const res = parseJson(j, 'fix --apply without CAP_NET_ADMIN')
      const err = res.error ?? res.errors?.[0]
      expect(JSON.stringify(err)).toContain('CAP_NET_ADMIN')
      if (res.errors) {
        expect(res.verified).toBe(false)
        expect(res.applied).toEqual([])
      }
      expect(routeDiff(await lab.routes('n1'), before)).toEqual([])
      expect(routeDiff(before, await lab.routes('n1'))).toEqual([])
      rmSync(jdir, {recursive: true, force: true})
      rmSync(jdir2, {recursive: true, force: true})
    })
  })
}

function applySuite(scenario: ScenarioName) {
  describe.skipIf(liveUnavailableReason(scenario) !== null)(`fix --apply on ${scenario}`, () => {
    let lab: Lab
    let before: KernelRoute[]
    let rulesBefore: string[]
    let dry: any
    let applyExit: number
    let applied: any
    let afterApply: KernelRoute[]
    let jdir: string
    const expected = expectedFor(scenario)
    // the prefixes the fixture says get a corrected route
    const planned = Object.entries(expected.prefixes)
      .filter(([, v]) => v.plan && v.verdict !== 'ok' && v.verdict !== 'local')
      .map(([p]) => p)
      .sort()

    beforeAll(async () => {
      await cleanupStaleLabs()
      lab = await startLab(scenario)
      jdir = mkdtempSync(path.join(os.tmpdir(), `rd-journal-${scenario}-`))
      const d = await rd(lab, ['fix', ...liveFlags(lab), ...POOL, '--json'])
      dry = parseJson(d, 'fix (dry run)')
    })
    afterAll(async () => {
      await lab?.teardown()
      if (jdir) rmSync(jdir, {recursive: true, force: true})
    })

    if (scenario === 'bird2-ecmp') safetySuite(() => lab)

    it('the dry run plans exactly the fixture\'s routes and changes nothing', async () => {
      expect(dry.routes.map((r: {dst: string}) => r.dst).sort()).toEqual(planned)
      for (const r of dry.routes)
        expect(sortHops(r.nexthops), r.dst).toEqual(sortHops(expected.prefixes[r.dst].plan!.nexthops))
      for (const r of dry.routes)
        expect([r.action, r.table, r.metric, r.protocol], r.dst).toEqual(['replace', Number(TABLE), 0, '158'])
      // every route of the document names its table by number, the entries' planned routes too
      expect(dry.entries.map((e: {prefix: string}) => e.prefix).sort()).toEqual(planned)
      for (const e of dry.entries) expect([e.planned.action, e.planned.table, e.planned.tableId], e.prefix).toEqual(['replace', Number(TABLE), undefined])
      expect(dry.rules).toEqual([{action: 'add', priority: RULE_PRIORITY, to: '192.168.0.0/16', table: Number(TABLE)}])
      before = await lab.routes('n1')
      rulesBefore = await ipRules(lab)
      expect(rulesBefore.join('\n')).not.toContain(TABLE)
    })

    it('fix --apply --yes --watch 3 --json: verified, journal listed, no route war', async () => {
      const r = await rd(lab, ['fix', '--apply', '--yes', '--journal-dir', jdir, '--watch', '3', ...liveFlags(lab), ...POOL, '--json'])
      applyExit = r.exitCode
      applied = parseJson(r, 'fix --apply')
      afterApply = await lab.routes('n1')
      expect(applied.errors ?? [], JSON.stringify(applied.errors)).toEqual([])
      expect(applied.routeWar ?? []).toEqual([])
      expect(applied.verified).toBe(true)
      expect(applyExit).toBe(0)
      expect(applied.journal).toMatch(new RegExp(`^${jdir}/`))
      expect(existsSync(applied.journal)).toBe(true)
      expect(applied.applied.map((a: {dst: string}) => a.dst).sort()).toEqual(planned)
      expect(applied.appliedRules).toEqual([`added ${RULE_PRIORITY}: from all to 192.168.0.0/16 lookup ${TABLE}`])
      // the journal saved every planned key's "before"
      const journal = JSON.parse(readFileSync(applied.journal, 'utf8'))
      expect(JSON.stringify(journal)).toContain(planned[0])
    })

    it('the effective route of each planned prefix is what BIRD 2.0.12 with the onlink filter programs (via N dev tunl0 onlink)', async () => {
      for (const prefix of planned) {
        const eff = overlayRoutesFor(afterApply, prefix)[0]
        expect(eff, prefix).toBeDefined()
        expect(eff.protocol, prefix).toBe('158')
        expect(eff.type ?? 'unicast').toBe('unicast')
        const want: Hop[] = sortHops(expected.prefixes[prefix].plan!.nexthops)
        expect(kernelHops(eff), prefix).toEqual(want)
        // the same gateway set, dev and onlink as the healthy node's BIRD-programmed route (all peers up)
        if (scenario !== 'bird2-peer-down') expect(kernelHops(eff), `${prefix} vs healthy`).toEqual(healthyHops(prefix))
      }
      for (const [prefix, addr] of Object.entries(PROBES)) {
        if (!planned.includes(prefix)) continue
        const got = await ipRouteGet(lab, addr)
        const gws = expected.prefixes[prefix].plan!.nexthops.map((h) => h.gateway)
        expect(got?.dev, `ip route get ${addr}`).toBe('tunl0')
        expect(gws, `ip route get ${addr}`).toContain(got?.gateway)
      }
      expect(await ipRouteGet(lab, '192.168.110.130')).toMatchObject({gateway: '172.31.20.5', dev: 'tunl0'})
    })

    it('our routes are in the overlay table, reached by one rule per pool; BIRD\'s routes in main are untouched', async () => {
      for (const prefix of planned) {
        const ours = afterApply.filter((r) => r.protocol === '158' && normDst(r.dst) === prefix)
        expect(
          ours.map((r) => [r.table, r.metric ?? 0]),
          prefix,
        ).toEqual([[TABLE, 0]])
        expect(mainRoutesFor(afterApply, prefix).map(stableJson), prefix).toEqual(
          mainRoutesFor(before, prefix).map(stableJson),
        )
      }
      const rules = (await ipRules(lab))
        .filter((r) => !rulesBefore.includes(r))
        .map((r) => JSON.parse(r) as Record<string, unknown>)
      expect(rules.map((r) => [r.priority, r.dst, r.dstlen, r.table])).toEqual([
        [RULE_PRIORITY, '192.168.0.0', 16, TABLE],
      ])
    })

    it('a full-table diff shows nothing changed but the planned routes, in the overlay table', () => {
      const added = routeDiff(afterApply, before).map((s) => JSON.parse(s) as KernelRoute)
      const removed = routeDiff(before, afterApply).map((s) => JSON.parse(s) as KernelRoute)
      expect(added.map((r) => normDst(r.dst)).sort()).toEqual(planned)
      for (const r of added) expect([r.protocol, r.table]).toEqual(['158', TABLE])
      expect(removed).toEqual([])
    })

    it('check afterwards: the planned prefixes are ok without error findings; BIRD did not put its route back', async () => {
      const r = await rd(lab, ['check', ...liveFlags(lab), ...POOL, '--json'])
      const c = parseJson<CheckJson>(r, 'check after apply')
      // On bird16-ipv6-ll BIRD itself still cannot resolve 172.31.20.5 after the fix (its underlay is
      // still link-local ECMP), so that finding stays, true about BIRD, on a prefix whose route is now ok.
      const residual: Record<string, string[]> = scenario === 'bird16-ipv6-ll' ? {'192.168.110.128/26': ['nexthop-unresolvable-by-bird'], '192.168.200.10/32': ['nexthop-unresolvable-by-bird']} : {}
      for (const prefix of planned) {
        const p = c.prefixes.find((x) => x.prefix === prefix)
        expect(p?.verdict, prefix).toBe('ok')
        expect(p?.findings.map((f) => f.id), prefix).toContain('overlay-active')
        const errs = p?.findings.filter((f) => f.severity === 'error').map((f) => f.id) ?? []
        expect(errs.filter((id) => !(residual[prefix] ?? []).includes(id)), prefix).toEqual([])
      }
      if (scenario === 'bird16-ipv6-ll') expect(r.exitCode).toBe(c.summary.errors > 0 ? 1 : 0)
      else if (scenario === 'bird2-peer-down') {
        expect(r.exitCode).toBe(1) // the session is still down
        expect(c.host.findings.map((f) => f.id)).toContain('peer-down')
      } else expect(r.exitCode).toBe(0)
      // several BIRD kernel scans (2 s) after the write, the table is still as the apply left it
      expect(routeDiff(await lab.routes('n1'), afterApply)).toEqual([])
      expect(routeDiff(afterApply, await lab.routes('n1'))).toEqual([])
    })

    if (scenario === 'bird2-peer-down') {
      it('192.168.82.0/26 (its owner\'s session is down) gets nothing', () => {
        expect(applied.applied.map((a: {dst: string}) => a.dst)).not.toContain('192.168.82.0/26')
        expect(afterApply.filter((r) => normDst(r.dst) === '192.168.82.0/26')).toEqual([])
        expect(before.filter((r) => normDst(r.dst) === '192.168.82.0/26')).toEqual([])
      })
    }

    it('fix --revert JOURNAL --yes puts the full table back exactly', async () => {
      const r = await rd(lab, ['fix', '--revert', applied.journal, '--yes', '--json'])
      const res = parseJson(r, 'fix --revert')
      expect(res.errors).toEqual([])
      expect(res.verified).toBe(true)
      expect(r.exitCode).toBe(0)
      expect(res.deleted.map((d: {dst: string}) => d.dst).sort()).toEqual(planned)
      for (const d of res.deleted) expect([d.action, d.table, d.tableId], d.dst).toEqual(['delete', Number(TABLE), undefined])
      expect(res.rules).toEqual([`removed ${RULE_PRIORITY}: from all to 192.168.0.0/16 lookup ${TABLE}`])
      const after = await lab.routes('n1')
      expect(routeDiff(after, before)).toEqual([])
      expect(routeDiff(before, after)).toEqual([])
      expect(await ipRules(lab)).toEqual(rulesBefore)
    })

    if (scenario === 'bird2-ecmp') {
      it('a route war while it watches (another writer flushing the overlay): routeWar[] names the table by number, the kernel is restored', async () => {
        const flush = execa('ip', ['netns', 'exec', lab.ns('n1'), 'sh', '-c', `while :; do ip route flush table ${TABLE} proto 158 2>/dev/null; sleep 0.3; done`],
          {detached: true, reject: false, stdio: 'ignore'})
        let res: any
        try {
          res = parseJson(await rd(lab, ['fix', '--apply', '--yes', '--journal-dir', jdir, '--watch', '3', ...liveFlags(lab), ...POOL, '--json']), 'fix --apply (route war)')
        } finally {
          if (flush.pid) process.kill(-flush.pid, 'SIGTERM')
          await flush
        }
        expect(res.routeWar?.length, JSON.stringify(res.errors)).toBeGreaterThan(0)
        for (const w of res.routeWar) expect([w.table, w.kind], w.dst).toEqual([Number(TABLE), 'removed'])
        expect(res).toMatchObject({verified: false, restored: true})
        const after = await lab.routes('n1')
        expect(routeDiff(after, before)).toEqual([])
        expect(routeDiff(before, after)).toEqual([])
        expect(await ipRules(lab)).toEqual(rulesBefore)
      })
    }
  })
}

for (const s of BROKEN) applySuite(s)
