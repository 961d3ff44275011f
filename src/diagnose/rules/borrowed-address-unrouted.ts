// With Calico's truth: an address of a block allocated to a pod on another node than the block's (a borrowed
// address) and no /32 route to that node here: its traffic follows the block route to the block's owner.
import {finding, NONE, overlayRouteByHand, type HostRule} from '../rule.js'
import type {Finding} from '../../model/types.js'

export const rule: HostRule = {
  id: 'borrowed-address-unrouted',
  scope: 'host',
  run(ctx) {
    const cluster = ctx.cluster
    const me = ctx.clusterNode
    if (!cluster || !me || !ctx.haveKernel) return NONE
    const out: Finding[] = []
    for (const b of cluster.truth.blocks) {
      if (b.deleted || ctx.poolOf(b.cidr) === undefined) continue
      for (const a of b.borrowed) {
        if (a.node === me.name || a.node === undefined) continue
        const want = cluster.nodesByName.get(a.node)?.ipv4Address
        if (want === undefined) continue
        const prefix = `${a.address}/32`
        const routes = ctx.kernelRoutesFor(prefix)
        if (routes.some((r) => r.nexthops.some((n) => n.gateway?.address === want))) continue
        out.push(
          finding('borrowed-address-unrouted', {
            prefix,
            title: `${a.address} (${a.pod ?? a.handle ?? 'a workload'}) runs on ${a.node}, but no /32 route here leads to ${want}`,
            detail:
              `${a.address} is in block ${b.cidr} (affine to ${b.affinityNode}) but allocated to a workload on ${a.node}: a borrowed address. ` +
              `Without a /32 route via ${want}, this node sends its traffic to ${b.affinityNode}.`,
            evidence: [
              ...ctx.cite(b.pos, () => `IPAMBlock ${b.name}: ${a.address} allocated on ${a.node}${a.handle ? ` (${a.handle})` : ''}`),
              ...routes.flatMap((r) => ctx.citeKernelRoute(r)),
            ],
            fix: `Check that ${a.node}'s BIRD announces ${prefix}; meanwhile, ${overlayRouteByHand(ctx, prefix, want)}`,
          }),
        )
      }
    }
    return out
  },
}
