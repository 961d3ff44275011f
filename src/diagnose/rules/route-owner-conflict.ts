// With Calico's truth: Felix's and BIRD's programClusterRoutes do not complement each other (both program IP-in-IP
// routes, or neither does), or the kernel holds IP-in-IP block routes of both owners (proto bird and proto 80).
import {FELIX_PROTOCOL} from '../../model/snapshot-index.js'
import {programsIpip} from '../../model/calico.js'
import {finding, NONE, type HostRule} from '../rule.js'
import type {Finding, KernelRoute} from '../../model/types.js'

export const rule: HostRule = {
  id: 'route-owner-conflict',
  scope: 'host',
  run(ctx) {
    const truth = ctx.cluster?.truth
    if (!truth || !ctx.snapshot.pools.some((p) => p.mode === 'ipip')) return NONE
    const out: Finding[] = []
    const pick = <T extends {name: string}>(list: T[]): T | undefined =>
      list.find((s) => s.name === `node.${ctx.snapshot.nodeName}`) ?? list.find((s) => s.name === 'default') ?? list[0]
    const felix = pick(truth.felixClusterRoutes)
    const bird = pick(truth.birdClusterRoutes)
    if (felix && bird && programsIpip(felix.value) === programsIpip(bird.value)) {
      const both = programsIpip(felix.value)
      out.push(
        finding('route-owner-conflict', {
          title: `programClusterRoutes: Felix ${felix.value}, BIRD ${bird.value}: ${both ? 'both program' : 'neither programs'} IP-in-IP routes`,
          detail: both
            ? 'Felix (proto 80) and BIRD (proto bird) both write the IP-in-IP block routes: each replaces the other\'s, and routes flap.'
            : 'Neither Felix nor BIRD writes the IP-in-IP block routes: remote blocks get no tunnel route.',
          evidence: [
            ...ctx.cite(felix.pos, () => `FelixConfiguration ${felix.name}: programClusterRoutes ${felix.value}`),
            ...ctx.cite(bird.pos, () => `BGPConfiguration ${bird.name}: programClusterRoutes ${bird.value}`),
          ],
          fix: 'Use a complementary pair: FelixConfiguration EnabledIPIPOnly with BGPConfiguration EnabledNoEncapOnly (v3.33 defaults), or Felix Disabled with BIRD Enabled.',
        }),
      )
    }
    // both owners writing IP-in-IP block routes on this node (bulk-found healthy routes are proto bird)
    const dev = ctx.snapshot.tunnelDev
    let birdRoute: KernelRoute | undefined
    let felixRoute: KernelRoute | undefined
    for (const r of ctx.snapshot.kernelRoutes) {
      if (r.type !== 'unicast' || r.nexthops.length === 0 || r.nexthops.some((n) => n.dev !== dev)) continue
      if (ctx.poolOf(r.dst)?.mode !== 'ipip') continue
      if (r.protocol === 'bird') birdRoute ??= r
      else if (r.protocol === FELIX_PROTOCOL) felixRoute ??= r
      if (birdRoute && felixRoute) break
    }
    const bulkHealthyBird = (ctx.snapshot.healthy?.keys.length ?? 0) > 0
    if (felixRoute && (birdRoute || bulkHealthyBird)) {
      out.push(
        finding('route-owner-conflict', {
          title: `Both BIRD (proto bird) and Felix (proto 80) program IP-in-IP block routes on ${dev}`,
          detail:
            'Some blocks are routed by BIRD\'s kernel protocol and others by Felix: the two programClusterRoutes settings overlap, or one owner\'s routes were left behind.',
          evidence: [...(birdRoute ? ctx.citeKernelRoute(birdRoute) : []), ...ctx.citeKernelRoute(felixRoute)],
          fix: 'Let one owner program IP-in-IP routes (FelixConfiguration/BGPConfiguration programClusterRoutes) and remove the other\'s stale routes.',
        }),
      )
    }
    return out
  },
}
