// `check` and `explain` LIVE inside n1's namespace on every lab scenario: the verdicts a
// user gets on the running node are the ones its captured fixture (test/fixtures/lab-*/expected.json)
// says. Also: pools from nowhere / from --ippools / from BIRD's config, and a missing BIRD socket.
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {FIXTURES} from '../helpers.js'
import {cleanupStaleLabs, SCENARIOS, startLab, type Lab, type ScenarioName} from '../lab/lab.js'
import {
  type CheckJson,
  type RunResult,
  expectedFor,
  liveFlags,
  liveUnavailableReason,
  parseJson,
  POOL,
  rd,
  sortHops,
  verdicts,
} from './live.js'

const reasons = Object.fromEntries(SCENARIOS.map((s) => [s, liveUnavailableReason(s)])) as Record<
  ScenarioName,
  string | null
>
for (const s of SCENARIOS) if (reasons[s]) console.warn(`live check (${s}) skipped: ${reasons[s]}`)

/** The assertions every scenario gets: check and explain against expected.json. */
interface Live {
  lab: Lab
  check: CheckJson
  checkExit: number
  explained: {exitCode: number; json: any}
}

function scenarioSuite(scenario: ScenarioName, extra?: (live: () => Live) => void) {
  describe.skipIf(reasons[scenario] !== null)(`live ${scenario}`, () => {
    let lab: Lab
    let check: CheckJson
    let checkExit: number
    let explained: {exitCode: number; json: any}
    const expected = expectedFor(scenario)
    // the prefix explain is asked about: the scenario's defining one (by an address inside it)
    const [explainPrefix, explainQuery] = scenario === 'bird2-peer-down' ? ['192.168.82.0/26', '192.168.82.0/26'] : ['192.168.110.128/26', '192.168.110.130']

    beforeAll(async () => {
      await cleanupStaleLabs()
      lab = await startLab(scenario)
      const [c, e] = await Promise.all([
        rd(lab, ['check', ...liveFlags(lab), ...POOL, '--json']),
        rd(lab, ['explain', explainQuery, ...liveFlags(lab), ...POOL, '--json']),
      ])
      checkExit = c.exitCode
      check = parseJson<CheckJson>(c, `check (${scenario})`)
      explained = {exitCode: e.exitCode, json: parseJson(e, `explain ${explainQuery} (${scenario})`)}
    })
    afterAll(async () => {
      await lab?.teardown()
    })

    it('check --json: the exit status and every prefix\'s verdict are those of the fixture', () => {
      expect(checkExit).toBe(expected.check_exit)
      expect(check.schema).toBe(1)
      expect(check.node.pools).toEqual([expect.objectContaining({cidr: '192.168.0.0/16', mode: 'ipip'})])
      expect(check.node.failed).toEqual([])
      const got = verdicts(check)
      expect(Object.fromEntries(Object.entries(got).map(([p, v]) => [p, v.verdict]))).toEqual(
        Object.fromEntries(Object.entries(expected.prefixes).map(([p, v]) => [p, v.verdict])),
      )
      for (const [prefix, want] of Object.entries(expected.prefixes)) {
        for (const id of want.findings ?? []) expect(got[prefix].findings, `${prefix} findings`).toContain(id)
      }
      const hostIds = check.host.findings.map((f) => f.id)
      for (const id of expected.host_findings ?? []) expect(hostIds).toContain(id)
      expect(check.summary.exitCode).toBe(expected.check_exit)
    })

    it('check --json: the planned next hops are the fixture\'s', () => {
      for (const [prefix, want] of Object.entries(expected.prefixes)) {
        if (want.plan === undefined) continue
        const got = check.prefixes.find((p) => p.prefix === prefix)!
        if (want.plan === null) expect(got.plan, prefix).toBeNull()
        else expect(sortHops(got.plan?.nexthops ?? []), prefix).toEqual(sortHops(want.plan.nexthops))
      }
    })

    it(`explain ${explainQuery} --json: the covering prefix, its verdict, findings with evidence and plan are the fixture's`, () => {
      const want = expected.prefixes[explainPrefix] ?? expected.explain?.[explainPrefix]
      const json = explained.json
      expect(json.schema).toBe(1)
      expect(json.prefix).toBe(explainPrefix)
      expect(json.verdict).toBe(want.verdict)
      const ids = (json.findings as Array<{id: string}>).map((f) => f.id)
      for (const id of want.findings ?? []) expect(ids).toContain(id)
      if (want.plan === null) expect(json.plan).toBeNull()
      else if (want.plan) expect(sortHops(json.plan.nexthops)).toEqual(sortHops(want.plan.nexthops))
      // every finding cites evidence from the live sources; the chain is there
      for (const f of json.findings as Array<{id: string; evidence: unknown[]}>) expect(f.evidence.length, `${f.id} evidence`).toBeGreaterThan(0)
      expect(json.chain.length).toBeGreaterThan(0)
      // explain agrees with check about the same prefix
      const inCheck = check.prefixes.find((p) => p.prefix === explainPrefix)
      if (inCheck) expect(inCheck.verdict).toBe(json.verdict)
    })

    extra?.(() => ({lab, check, checkExit, explained}))
  })
}

scenarioSuite('bird2-ecmp', (live) => {
  it('shared-fixture semantics: 110.128/26 bypassed by ECMP, 82.0/26 not programmed, 200.10/32 not tunneled', () => {
    const v = verdicts(live().check)
    expect(v['192.168.110.128/26'].verdict).toBe('not-tunneled')
    expect(v['192.168.110.128/26'].findings).toContain('tunnel-bypassed-by-ecmp')
    expect(v['192.168.82.0/26'].verdict).toBe('not-tunneled')
    expect(v['192.168.82.0/26'].findings).toContain('tunnel-not-programmed')
    expect(v['192.168.200.10/32'].verdict).toBe('not-tunneled')
  })

  describe('pools and a missing BIRD socket', () => {
    let noPool: RunResult
    let ippools: RunResult
    let noSock: RunResult
    let noSockFix: RunResult
    let sock: string
    beforeAll(async () => {
      const {lab} = live()
      sock = path.join(lab.dir, 'no-such-bird.ctl')
      const noSockFlags = ['--bird-socket', sock, '--bird-conf', lab.birdConfigPath('n1'), ...POOL]
      ;[noPool, ippools, noSock, noSockFix] = await Promise.all([
        rd(lab, ['check', ...liveFlags(lab)]),
        rd(lab, ['check', ...liveFlags(lab), '--ippools', path.join(FIXTURES, 'lab-bird2-ecmp/ippools.yaml'), '--json']),
        rd(lab, ['check', ...noSockFlags, '--json']),
        rd(lab, ['fix', ...noSockFlags]),
      ])
    })

    it('without --pool or --ippools (and a BIRD config with no tunnel filter) the report says there are no pools', () => {
      expect(noPool.exitCode).toBe(0)
      expect(noPool.stdout).toMatch(/pools\s+none found/)
      expect(noPool.stdout).toMatch(/No pools/)
      expect(noPool.stdout).not.toMatch(/192\.168\.110\.128/)
    })

    it('--ippools with the fixture\'s ippools.yaml gives the fixture\'s verdicts', () => {
      const c = parseJson<CheckJson>(ippools, 'check --ippools')
      expect(ippools.exitCode).toBe(1)
      expect(c.node.pools).toEqual([expect.objectContaining({cidr: '192.168.0.0/16', mode: 'ipip'})])
      expect(Object.fromEntries(c.prefixes.map((p) => [p.prefix, p.verdict]))).toEqual(
        Object.fromEntries(Object.entries(expectedFor('bird2-ecmp').prefixes).map(([p, v]) => [p, v.verdict])),
      )
    })

    // Observed behaviour (pinned): a missing socket is not fatal; the three BIRD sources are recorded
    // as failed with the path named, and the kernel side is still diagnosed.
    it('with the BIRD socket missing: the BIRD sources are recorded as failed naming the path, the kernel is still diagnosed', () => {
      if (noSock.exitCode === 2) {
        // the other acceptable design: a clear usage error naming the path
        expect(parseJson(noSock, 'check').error.message).toContain(sock)
        expect(noSock.stderr).toContain(sock)
        return
      }
      const c = parseJson<CheckJson>(noSock, 'check with a missing socket')
      expect(c.node.failed.map((f) => f.file).sort()).toEqual(['birdc-show-protocols-all.txt', 'birdc-show-route-all.txt', 'birdc-show-status.txt'])
      for (const f of c.node.failed) expect(f.error).toContain(`BIRD control socket ${sock} does not exist`)
      // the kernel's ECMP and off-tunnel routes are still found
      const v = verdicts(c)
      expect(v['192.168.110.128/26']?.verdict).toBe('not-tunneled')
      expect(v['192.168.82.0/26']?.verdict).toBe('not-tunneled')
      expect(v['192.168.162.129/32']?.verdict).toBe('local')
      expect(noSock.exitCode).toBe(1)
      expect(noSock.stderr).not.toMatch(/\n\s+at /)
    })

    // `fix` (dry run) must not call a node "healthy" when it could not read BIRD at all.
    it('with the BIRD socket missing, `fix` does not claim every prefix is healthy and names the socket', () => {
      expect(noSockFix.stdout).not.toMatch(/every tunnel prefix is healthy/)
      expect(noSockFix.stdout + noSockFix.stderr).toContain(sock)
    })
  })
})

scenarioSuite('bird16-ecmp')

scenarioSuite('bird16-ipv6-ll', (live) => {
  it('192.168.110.128/26 is unreachable because BIRD cannot resolve the next hop, though the kernel can', () => {
    const json = live().explained.json
    expect(json.verdict).toBe('unreachable')
    const ids = json.findings.map((f: {id: string}) => f.id)
    expect(ids).toContain('nexthop-unresolvable-by-bird')
    expect(ids).not.toContain('nexthop-unreachable')
    expect(sortHops(json.plan.nexthops)).toEqual([{gateway: '172.31.20.5', dev: 'tunl0', onlink: true}])
  })
})

scenarioSuite('bird2-peer-down', (live) => {
  it('peer-down is a host finding naming n3\'s session; 192.168.82.0/26 is not in check; explain says missing with prefix-missing and peer-down', () => {
    const {check, explained} = live()
    const peerDown = check.host.findings.filter((f) => f.id === 'peer-down')
    expect(peerDown).toHaveLength(1)
    expect(JSON.stringify(peerDown[0])).toContain('Mesh_172_31_30_6')
    expect(check.prefixes.map((p) => p.prefix)).not.toContain('192.168.82.0/26')
    expect(explained.json.verdict).toBe('missing')
    const ids = explained.json.findings.map((f: {id: string}) => f.id)
    expect(ids).toEqual(expect.arrayContaining(['prefix-missing', 'peer-down']))
    expect(JSON.stringify(explained.json.findings.find((f: {id: string}) => f.id === 'prefix-missing'))).toContain('Mesh_172_31_30_6')
    expect(explained.json.plan).toBeNull()
  })
})

scenarioSuite('bird2-healthy', (live) => {
  it('healthy: exit 0, every pool prefix ok or local, no error finding anywhere', () => {
    const {check: c, checkExit} = live()
    expect(checkExit).toBe(0)
    expect(c.prefixes.length).toBeGreaterThanOrEqual(5)
    const errors: string[] = []
    for (const p of c.prefixes) {
      expect(['ok', 'local'], p.prefix).toContain(p.verdict)
      for (const f of p.findings) if (f.severity === 'error') errors.push(`${p.prefix}: ${f.id}`)
    }
    for (const f of c.host.findings) if (f.severity === 'error') errors.push(`host: ${f.id}`)
    expect(errors).toEqual([])
    expect(c.summary.errors).toBe(0)
  })

  it('healthy without --pool: the pools come from n1\'s BIRD config (its `ifname = "tunl0"` kernel filter); `fix` plans nothing', async () => {
    const {lab} = live()
    const [r, f] = await Promise.all([rd(lab, ['check', ...liveFlags(lab), '--json']), rd(lab, ['fix', ...liveFlags(lab), '--json'])])
    const c = parseJson<CheckJson>(r, 'check')
    expect(c.node.pools.map((p) => p.cidr)).toEqual(['192.168.0.0/16'])
    expect(r.exitCode).toBe(0)
    expect(c.prefixes.map((p) => p.prefix).sort()).toEqual(Object.keys(expectedFor('bird2-healthy').prefixes).sort())
    expect(f.exitCode).toBe(0)
    expect(parseJson(f, 'fix').routes).toEqual([])
  })
})
