// With Calico's truth: the route in force (its tunnel endpoints) or BIRD's best paths (their BGP next hops) lead to
// another address than the IPv4Address of the block's affine node; or another node's block is held here as local.
import {isBgp} from '../../model/snapshot-index.js'
import {formatKernelRouteLine} from '../../model/format.js'
import {NONE, prefixEvidence, prefixFinding, type PrefixRule, throughTunnel} from '../rule.js'
import {truthEvidence} from './block-affinity-conflict.js'

export const rule: PrefixRule = {
  id: 'block-owner-mismatch',
  scope: 'prefix',
  run(ctx, facts) {
    const owner = ctx.cluster?.ownerOf(facts.prefix)
    const me = ctx.clusterNode
    if (owner?.node === undefined || owner.block === undefined) return NONE
    const wrong: string[] = []
    const r = facts.effective
    const tunnelled = r !== undefined && throughTunnel(ctx, facts)
    if (me !== undefined && owner.node === me.name) {
      // this node's block: nothing should lead away from it
      if (tunnelled) for (const n of r!.nexthops) if (n.gateway) wrong.push(n.gateway.address)
      if (facts.birdPrimary && isBgp(facts.birdPrimary.source))
        for (const n of facts.bgpNextHops) if (!wrong.includes(n)) wrong.push(n)
    } else {
      const want = owner.address
      if (want === undefined) return NONE
      if (facts.local && me !== undefined) wrong.push(`this node (${me.name})`)
      if (tunnelled)
        for (const n of r!.nexthops)
          if (n.gateway && n.gateway.address !== want && !wrong.includes(n.gateway.address))
            wrong.push(n.gateway.address)
      for (const n of facts.bgpNextHops) if (n !== want && !wrong.includes(n)) wrong.push(n)
    }
    if (wrong.length === 0) return NONE
    const mine = me !== undefined && owner.node === me.name
    const names = wrong.map((a) => {
      const n = ctx.cluster!.nodesByAddress.get(a)
      return n ? `${a} (${n.name})` : a
    })
    return [prefixFinding(ctx, 'block-owner-mismatch', facts.prefix, () => ({
      title: `${facts.prefix} leads to ${names.join(', ')}, but Calico's IPAM gives it to ${mine ? 'this node' : `${owner.node} (${owner.address})`}`,
      detail: `Calico's IPAMBlock ${owner.block!.name} is affine to ${owner.node}` + (mine ? '' : `, whose projectcalico.org/IPv4Address is ${owner.address}`) + '. ' +
        (r ? `The route in force is ${formatKernelRouteLine(r)}` : 'The kernel has no route for it') +
        (facts.bgpNextHops.length === 1 ? `; BIRD's best path names BGP next hop ${facts.bgpNextHops[0]}` : '') +
        (facts.bgpNextHops.length > 1 ? `; BIRD's best paths name BGP next hops ${facts.bgpNextHops.join(', ')}` : '') +
        '. Traffic for its pods goes to a node that does not own the block.',
      evidence: [...truthEvidence(ctx, owner), ...prefixEvidence(ctx, facts)],
      fix: mine
        ? `Find which node announces ${facts.prefix} (a leftover affinity or a leaked route) and withdraw it there.`
        : facts.local && me !== undefined
          ? heldHere(facts.prefix, me.name, owner, r?.type === 'blackhole')
          : facts.bgpNextHops.some((n) => wrong.includes(n))
          ? `Route ${facts.prefix} via ${owner.address} dev ${ctx.snapshot.tunnelDev} onlink; find why ${wrong.join(', ')} announces it (a leftover affinity, a leaked route).`
          : `Route ${facts.prefix} via ${owner.address} dev ${ctx.snapshot.tunnelDev} onlink; BIRD's path is right, so find what wrote the route in force (a stale route, another route owner, a kernel filter).`,
    }))]
  },
}

/**
 * The fix for another node's block held here as this node's own: the blackhole goes once the block is released here
 * (Calico's confd writes a block's blackhole into BIRD's config from this node's affinities).
 */
function heldHere(prefix: string, me: string, ipam: {node?: string; address?: string}, blackhole: boolean): string {
  const owner = ipam.node ?? '?'
  const address = ipam.address ?? '?'
  const dashed = prefix.replace(/[./]/g, '-')
  const held = blackhole ? ` (a leftover \`blackhole ${prefix}\`)` : ''
  return `${me} still holds ${prefix} as its own block${held}, while Calico's IPAM gives it to ${owner}: ` +
    `remove the blackhole by releasing the block on ${me}: delete the stale BlockAffinity that still gives it to ${me} ` +
    `(\`kubectl get blockaffinities.crd.projectcalico.org | grep ${dashed}\`), so that confd drops it from BIRD's config and BIRD withdraws ` +
    'the blackhole' +
    `${blackhole ? ` (\`ip route del blackhole ${prefix}\` by hand lasts only until BIRD's next kernel scan)` : ''}; ` +
    `the route to ${owner} (${address}) then carries its traffic.`
}
