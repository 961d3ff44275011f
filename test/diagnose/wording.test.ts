// The sentences a reader acts on, pinned whole where a review found them wrong: next hops in the shape `ip route`
// takes, what the node's BIRD version can and cannot do, plural agreement, multipath routes quoted with their next
// hops, and the tunnel device named as --tunnel-dev names it.
import {describe, expect, it} from 'vitest'

import {
  BIRD16,
  BIRD16_LL,
  BIRD2,
  PEER_DOWN,
  ctxOfFixture,
  editFile,
  editJsonRoutes,
  fixtureExists,
  healthyFiles,
  loadFiles,
  prefixFindings,
  snapshotIndexOf,
  theFinding,
  theHostFinding,
  tunnelRoute,
} from './helpers.js'
import {formatKernelRouteLine} from '../../src/model/format.js'
import type {SourceFile} from '../../src/model/types.js'
import {explainReport} from '../../src/report/report.js'

const withStatus = (files: SourceFile[], version: string): SourceFile[] =>
  editFile(files, 'birdc-show-status.txt', (t) => t.replaceAll('1.6.8', version))

describe('what to do about a tunnel prefix off the tunnel', () => {
  it('names a multipath route as `nexthop via A … nexthop via B …`, not "via A, B dev tunl0"', () => {
    const f = theFinding(ctxOfFixture(BIRD2), '192.168.200.10/32', 'tunnel-bypassed-by-ecmp')
    expect(f.fix).toBe(
      'Program 192.168.200.10/32 nexthop via 172.31.20.5 dev tunl0 onlink nexthop via 172.31.30.6 dev tunl0 onlink ' +
        '(routedoctor fix), and durably the BIRD kernel filter (routedoctor fix --bird-config).',
    )
  })

  it('lists the next hops in the order of the corrected route (BIRD\'s best path first is no reason)', () => {
    const f = theFinding(ctxOfFixture(BIRD16_LL), '192.168.200.10/32', 'tunnel-not-programmed')
    expect(f.fix).toMatch(/^Program 192\.168\.200\.10\/32 nexthop via 172\.31\.20\.5 dev tunl0 onlink nexthop via 172\.31\.30\.6 dev tunl0 onlink \(routedoctor fix\)/)
  })

  it('says routedoctor fix programs a next hop BIRD cannot resolve, as the other findings it covers do', () => {
    const f = theFinding(ctxOfFixture(BIRD16_LL), '192.168.110.128/26', 'nexthop-unresolvable-by-bird')
    expect(f.fix).toMatch(/^Program 192\.168\.110\.128\/26 via \S+ dev tunl0 onlink \(routedoctor fix; /)
  })

  it('does not send BIRD 1.6 to a kernel filter it cannot have', () => {
    const f = theFinding(ctxOfFixture(BIRD16), '192.168.82.0/26', 'tunnel-not-programmed')
    expect(f.fix).toBe(
      'Program 192.168.82.0/26 via 172.31.30.6 dev tunl0 onlink (routedoctor fix), but no kernel filter of BIRD 1.6.8 ' +
        'can do it durably (it has no onlink): upgrade BIRD to 2.0.12+ or 3.2+, or let Felix program the routes ' +
        '(programClusterRoutes).',
    )
  })

  it('nor Calico\'s fork, whose durable fix is Felix', () => {
    const ctx = snapshotIndexOf(withStatus(loadFiles(BIRD16), 'v0.3.3+birdv1.6.8'))
    expect(theFinding(ctx, '192.168.82.0/26', 'tunnel-not-programmed').fix).toBe(
      'Program 192.168.82.0/26 via 172.31.30.6 dev tunl0 onlink (routedoctor fix), but no kernel filter of Calico\'s ' +
        'BIRD (v0.3.3+birdv1.6.8) can do it durably (it has no onlink): let Felix program the routes ' +
        '(programClusterRoutes).',
    )
  })

  it('nor BIRD 3.1', () => {
    const ctx = snapshotIndexOf(editFile(loadFiles(BIRD2), 'birdc-show-status.txt', (t) => t.replaceAll('2.0.12', '3.1.1')))
    expect(theFinding(ctx, '192.168.82.0/26', 'tunnel-not-programmed').fix).toContain(
      'but no kernel filter of BIRD 3.1.1 can do it durably (it has no onlink)',
    )
  })

  it.runIf(fixtureExists('lab-bird16-plain-show-route'))(
    'says BIRD\'s paths do not name their next hop (a plain `show route`), not that BIRD holds no path',
    () => {
      const f = theFinding(ctxOfFixture('lab-bird16-plain-show-route'), '192.168.82.0/26', 'tunnel-not-programmed')
      expect(f.fix).toBe(
        'BIRD\'s paths for 192.168.82.0/26 do not name their BGP next hop (a `show route` without `all`): ' +
          'nothing can be planned until `birdc show route all` is collected.',
      )
    },
  )

  it('says "not even a single-path one", where BIRD 2\'s filter rewrites nothing', () => {
    const f = theFinding(ctxOfFixture(BIRD2), '192.168.110.128/26', 'tunnel-bypassed-by-ecmp')
    expect(f.detail).toBe(
      'The kernel sends 192.168.110.128/26 via 172.31.11.1 dev eth0, via 172.31.12.1 dev eth1: unencapsulated. ' +
        'Its BGP next hop 172.31.20.5 resolves through the ECMP route 172.31.20.0/23, so BIRD made the route ' +
        'multipath; BIRD 2.0.12\'s kernel export filter rewrites nothing (no ifname/onlink/gw for the pools): BIRD ' +
        'writes every BGP route as it resolved it, over the underlay, so no block is tunnelled, not even a ' +
        'single-path one.',
    )
  })
})

describe('nexthop-unresolvable-by-bird over a `via inet6` underlay', () => {
  const underlay = 'The kernel route 172.31.20.0/23 has IPv6 link-local next hops (via inet6) and is multipath; '

  it('BIRD 1.6 cannot import it', () => {
    const f = theFinding(ctxOfFixture(BIRD16_LL), '192.168.110.128/26', 'nexthop-unresolvable-by-bird')
    expect(f.detail).toBe(
      'BIRD marks the path from 172.31.20.5 unreachable, yet `ip route get 172.31.20.5` works in the kernel. ' +
        underlay + 'BIRD 1.6.8 cannot import such a route (it logs "strange multipath route" and drops it), so it ' +
        'has nothing to resolve 172.31.20.5 against. BIRD installed `unreachable 192.168.110.128/26`.',
    )
  })

  it('BIRD 2.0.12 can (since 2.0.8): the cause is elsewhere, and it is not said to be the version', () => {
    const ctx = snapshotIndexOf(withStatus(loadFiles(BIRD16_LL), '2.0.12'))
    const f = theFinding(ctx, '192.168.110.128/26', 'nexthop-unresolvable-by-bird')
    expect(f.detail).toContain(
      underlay + 'BIRD 2.0.12 imports such routes (since 2.0.8), so the version is not the cause: check that its ' +
        'kernel protocol learns this one (`learn`, its import filter); `birdc show route for 172.31.20.5 all` shows ' +
        'what BIRD resolves it against.',
    )
    expect(f.detail).not.toContain('cannot import')
  })

  it('without `show status`: "BIRD before 2.0.8", no empty version', () => {
    const ctx = snapshotIndexOf(loadFiles(BIRD16_LL).filter((f) => f.name !== 'birdc-show-status.txt'))
    const f = theFinding(ctx, '192.168.110.128/26', 'nexthop-unresolvable-by-bird')
    expect(f.detail).toContain(underlay + 'BIRD before 2.0.8 cannot import such a route (it logs')
    expect(f.detail).not.toMatch(/ {2}/)
  })
})

describe('plural agreement', () => {
  it('hash-policy-l3: one ECMP route is "the ECMP route", not "route(s)"', () => {
    const f = theHostFinding(ctxOfFixture(BIRD2), 'hash-policy-l3')
    expect(f.detail).toBe(
      'Tunnelled traffic to 172.31.20.5 crosses the ECMP route 172.31.20.0/23; policy 0 hashes the outer header, so ' +
        'all traffic between two nodes takes one link. Policy 2 hashes the inner headers (kernel ≥ 5.3).',
    )
  })

  it('prefix-missing: "The one BGP session is Established", not "All 1 BGP session is"', () => {
    // bird2-peer-down without its down session: one session left, Established, and 192.168.82.0/26 gone
    const files = editFile(loadFiles(PEER_DOWN), 'birdc-show-protocols-all.txt', (t) => {
      const at = t.indexOf('Mesh_172_31_30_6 BGP')
      const end = t.indexOf('\n\n', at)
      return t.slice(0, at) + (end < 0 ? '' : t.slice(end + 2))
    })
    // nothing holds the prefix and no session is down: there is no line to cite
    const [f] = prefixFindings(snapshotIndexOf(files), '192.168.82.0/26', 'prefix-missing')
    expect(f.detail).toBe(
      'No kernel route and no BGP path for 192.168.82.0/26: the node that owns it is not announcing it to this node. ' +
        'The one BGP session is Established: the owner may not have the block, or it is not exported.',
    )
  })

  it('onlink-missing: two next hops without onlink "lack" it', () => {
    const files = editJsonRoutes(healthyFiles(), {
      '192.168.200.10': {
        type: 'unicast', dst: '192.168.200.10', table: 'main', protocol: 'bird', scope: 'global', metric: 32, flags: [],
        nexthops: [
          {gateway: '172.31.20.5', dev: 'tunl0', weight: 1, flags: []},
          {gateway: '172.31.30.6', dev: 'tunl0', weight: 1, flags: []},
        ],
      },
    })
    const f = theFinding(snapshotIndexOf(files), '192.168.200.10/32', 'onlink-missing')
    expect(f.title).toBe('192.168.200.10/32: next hops 172.31.20.5, 172.31.30.6 on tunl0 lack onlink')
  })
})

describe('routes quoted in a sentence', () => {
  it('a multipath route keeps its next hops, on one line', () => {
    const ctx = ctxOfFixture(BIRD2)
    const r = ctx.snapshot.kernelRoutes.find((k) => k.dst === '192.168.110.128/26')!
    expect(formatKernelRouteLine(r)).toBe(
      '192.168.110.128/26 proto bird metric 32 nexthop via 172.31.11.1 dev eth0 weight 1 nexthop via 172.31.12.1 dev eth1 weight 1',
    )
  })

  it.runIf(fixtureExists('lab-bird2-overlay-moved'))('overlay-active quotes both multipath routes whole', () => {
    const f = theFinding(ctxOfFixture('lab-bird2-overlay-moved'), '192.168.200.10/32', 'overlay-active')
    expect(f.detail).toBe(
      '`192.168.200.10 table 1158 proto 158 nexthop via 172.31.20.5 dev tunl0 weight 1 onlink nexthop via ' +
        '172.31.30.6 dev tunl0 weight 1 onlink` in the overlay table 1158 (rule `32000: from all to 192.168.0.0/16 ' +
        'lookup 1158 proto 158`) takes precedence over `192.168.200.10 proto bird metric 32 nexthop via 172.31.11.1 ' +
        'dev eth0 weight 1 nexthop via 172.31.12.1 dev eth1 weight 1`. Once BIRD programs the right route itself (the ' +
        'durable fix), routedoctor fix --apply withdraws it.',
    )
  })

  it('bird-kernel-mismatch: a proto bird route that drops the packets is not "no proto bird route"', () => {
    const files = editJsonRoutes(loadFiles(BIRD2), {
      '192.168.82.0/26': {type: 'unreachable', dst: '192.168.82.0/26', table: 'main', protocol: 'bird', scope: 'global', metric: 32, flags: []},
    })
    const f = theFinding(snapshotIndexOf(files), '192.168.82.0/26', 'bird-kernel-mismatch')
    expect(f.detail).toBe(
      'BIRD\'s best path is unicast [Mesh_172_31_30_6 from 172.31.30.6] * via 172.31.11.1 on eth0 (BGP.next_hop ' +
        '172.31.30.6), yet no usable proto bird route for it is in the kernel. The kernel protocol\'s export filter may ' +
        'reject it, or the write failed.',
    )
  })
})

describe('what to do, as the cause is', () => {
  it('tunnel-endpoint-mismatch of BIRD\'s own route does not ask who owns proto bird', () => {
    const files = editJsonRoutes(healthyFiles(), {'192.168.82.0/26': tunnelRoute('192.168.82.0/26', '172.31.20.5')})
    const f = theFinding(snapshotIndexOf(files), '192.168.82.0/26', 'tunnel-endpoint-mismatch')
    expect(f.fix).toBe(
      'BIRD\'s own route no longer matches its best paths (left in the kernel by persist or a restart, or a kernel ' +
        'write that failed: see BIRD\'s log); routedoctor fix programs the right route meanwhile.',
    )
  })

  it('tunnel-device-missing with --tunnel-dev: calico-node does not create that name', () => {
    const f = theHostFinding(ctxOfFixture(BIRD2, {tunnelDev: 'tunl9'}), 'tunnel-device-missing', {allowEmptyEvidence: true})
    expect(f.fix).toBe('Check that --tunnel-dev names the node\'s tunnel device (Calico\'s is tunl0, which calico-node creates).')
  })
})

describe('explain\'s chain', () => {
  it('a `via inet6` underlay: "which BIRD before 2.0.8 cannot import", not "BIRD 1.6/2.0.<8"', () => {
    const r = explainReport(ctxOfFixture(BIRD16_LL), '192.168.110.128/26')
    expect(r.chain.find((s) => s.step === 'resolution')?.summary).toMatch(
      /^172\.31\.20\.5 → 172\.31\.20\.0\/23 proto static \(ECMP: via inet6 fe80::\S+ dev eth0, via inet6 fe80::\S+ dev eth1\); IPv6 link-local next hops, which BIRD before 2\.0\.8 cannot import$/,
    )
  })

  it('a prefix nobody announces over the one session: "the one Established session"', () => {
    const files = editFile(loadFiles(BIRD2), 'birdc-show-protocols-all.txt', (t) => {
      const at = t.indexOf('Mesh_172_31_30_6 BGP')
      const end = t.indexOf('\n\n', at)
      return t.slice(0, at) + (end < 0 ? '' : t.slice(end + 2))
    })
    const r = explainReport(snapshotIndexOf(files), '192.168.5.0/26')
    expect(r.chain.find((s) => s.step === 'session')?.summary).toBe('no path received over the one Established session')
  })
})

describe('a plain `show route` (no attributes)', () => {
  it.runIf(fixtureExists('lab-bird16-plain-show-route'))('why nothing is planned: the next hop is not shown, not absent', () => {
    const r = explainReport(ctxOfFixture('lab-bird16-plain-show-route'), '192.168.82.0/26')
    expect(r.planNote).toBe('BIRD\'s paths do not show their BGP next hop: the snapshot has `show route` without `all`')
  })

  it.runIf(fixtureExists('lab-bird16-plain-show-route'))('nexthop-unresolvable-by-bird: "via that next hop", not "via it"', () => {
    const f = theFinding(ctxOfFixture('lab-bird16-plain-show-route'), '192.168.110.128/26', 'nexthop-unresolvable-by-bird')
    expect(f.fix).toBe(
      'Find the BGP next hop (birdc show route all for 192.168.110.128/26), then make it resolvable for BIRD (an ' +
        'underlay route with IPv4 next hops), or program 192.168.110.128/26 via that next hop dev tunl0 onlink.',
    )
  })
})

describe("explain's kernel step on a CrossSubnet pool", () => {
  it('says why a block on this node\'s subnet is not through the tunnel, and only there', () => {
    const ctx = ctxOfFixture('lab-bird2-crosssubnet')
    const kernel = (prefix: string) => explainReport(ctx, prefix).chain.find((s) => s.step === 'kernel')!
    const direct = kernel('192.168.50.0/26')
    expect(direct.status).toBe('ok')
    expect(direct.summary.split('\n').at(-1)).toBe("→ not through tunl0: the next hop is on this node's subnet, which CrossSubnet reaches directly")
    const across = kernel('192.168.82.0/26')
    expect(across.status).toBe('error')
    expect(across.summary.split('\n').at(-1)).toBe('→ not through tunl0')
  })
})
