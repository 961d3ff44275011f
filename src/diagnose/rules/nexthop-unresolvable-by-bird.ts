// Failure 2: the kernel can reach N, but BIRD could not resolve it (typically an ECMP underlay with
// IPv6 link-local next hops that BIRD before 2.0.8 drops as a "strange multipath route"), so BIRD
// holds the path as unreachable.
import {importsViaInet6} from '../../model/bird-version.js'
import {inInput, NONE, prefixFinding, type PrefixRule} from '../rule.js'
import type {SnapshotIndex, PrefixFacts} from '../../model/snapshot-index.js'
import type {BirdRoute, Finding} from '../../model/types.js'

const DROPS = new Set(['unreachable', 'blackhole', 'prohibit'])

function anyUnreachable(paths: readonly BirdRoute[]): boolean {
  for (const p of paths) if (p.dest === 'unreachable') return true
  return false
}

export const rule: PrefixRule = {
  id: 'nexthop-unresolvable-by-bird',
  scope: 'prefix',
  run(ctx, facts) {
    if (facts.local) return NONE
    const drops = facts.effective !== undefined && DROPS.has(facts.effective.type)
    if (!anyUnreachable(facts.bestSet)) return drops ? unnamedNexthop(ctx, facts) : NONE
    // the kernel already sends the prefix through the tunnel to N (routedoctor's route): nothing is broken now
    const tunnelled = new Set((facts.effective?.type === 'unicast' ? facts.effective.nexthops : [])
      .filter((n) => n.dev === ctx.snapshot.tunnelDev && n.gateway).map((n) => n.gateway!.address))
    const out = []
    for (const res of facts.resolutions) {
      if (!res.lookup.reachable || res.own || tunnelled.has(res.bgpNextHop)) continue
      const paths = facts.bestSet.filter((p) => p.bgpNextHop === res.bgpNextHop && p.dest === 'unreachable')
      if (paths.length === 0) continue
      const underlay = res.lookup.route!
      const why = res.viaInet6
        ? ` The kernel route ${underlay.dst} has IPv6 link-local next hops (via inet6)${res.multipath ? ' and is multipath' : ''}; ` +
          viaInet6Import(ctx, res.bgpNextHop, res.multipath)
        : ` BIRD has no usable route to ${res.bgpNextHop} in its table although the kernel has ${underlay.dst}.`
      out.push(
        prefixFinding(ctx, 'nexthop-unresolvable-by-bird', facts.prefix, () => ({
          title: `BIRD cannot resolve BGP next hop ${res.bgpNextHop} for ${facts.prefix}`,
          detail:
            `BIRD marks the path from ${res.bgpNextHop} unreachable, yet \`ip route get ${res.bgpNextHop}\` works in the kernel.${why}` +
            (facts.effective?.type === 'unreachable' ? ` BIRD installed \`unreachable ${facts.prefix}\`.` : ''),
          evidence: [
            ...paths.flatMap((p) => ctx.cite(p.pos)),
            ...ctx.resolutionEvidence(res),
            ...(facts.effective ? ctx.citeKernelRoute(facts.effective) : []),
          ],
          fix: `Program ${facts.prefix} via ${res.bgpNextHop} dev ${ctx.snapshot.tunnelDev} onlink (routedoctor fix; the outer packet follows the kernel's underlay route); durably, an underlay BIRD can import (IPv4 next hops) or BIRD 2.0.12+ with the onlink kernel filter.`,
        })),
      )
    }
    if (out.length > 0 || !drops) return out
    return unnamedNexthop(ctx, facts)
  },
}

/**
 * Why BIRD has no route to resolve `nexthop` against when the kernel's has IPv6 next hops: upstream BIRD imports one
 * since 2.0.8; older ones, and Calico's fork, drop it.
 */
function viaInet6Import(ctx: SnapshotIndex, nexthop: string, multipath: boolean): string {
  const status = ctx.snapshot.bird.status
  if (status !== undefined && importsViaInet6(status.version, status.calicoFork)) {
    return `BIRD ${status.version} imports such routes (since 2.0.8), so the version is not the cause: check that its ` +
      `kernel protocol learns this one (\`learn\`, its import filter); \`birdc show route for ${nexthop} all\` shows ` +
      'what BIRD resolves it against.'
  }
  const bird = status === undefined ? 'BIRD before 2.0.8' : `BIRD ${status.version}`
  const drops = multipath ? ' (it logs "strange multipath route" and drops it)' : ''
  return `${bird} cannot import such a route${drops}, so it has nothing to resolve ${nexthop} against.`
}

/**
 * BIRD installed `unreachable PREFIX` and the input does not name the BGP next hop: a plain `show route`
 * (no attributes; the path's `from` is the peer), or no BIRD routes at all beside BIRD's kernel route.
 */
function unnamedNexthop(ctx: SnapshotIndex, facts: PrefixFacts): Finding[] {
  const e = facts.effective!
  const paths = facts.bestSet.filter((p) => p.dest === 'unreachable' && p.bgpNextHop === undefined)
  // no BIRD data at all, and BIRD's own unreachable route in the kernel
  const kernelOnly = paths.length === 0 && facts.bird.length === 0 && !ctx.haveBird && e.protocol === 'bird' &&
    e.type === 'unreachable'
  if (paths.length === 0 && !kernelOnly) return NONE
  const peers = [...new Set(paths.map((p) => p.from).filter((a) => a !== undefined))]
  const reach = peers.map((peer) => {
    const res = ctx.resolve(peer)
    const v6 = res.viaInet6 ? ' (IPv6 link-local next hops: BIRD before 2.0.8 cannot import such a route)' : ''
    const text = res.lookup.reachable
      ? `the kernel reaches ${peer} through ${res.lookup.route!.dst}${v6}`
      : `the kernel cannot reach ${peer} either`
    return {res, text}
  })
  return [
    prefixFinding(ctx, 'nexthop-unresolvable-by-bird', facts.prefix, () => ({
      title: kernelOnly
        ? `BIRD installed unreachable ${facts.prefix}: it could not resolve the path's BGP next hop`
        : `BIRD holds ${facts.prefix} as unreachable: it cannot resolve the BGP next hop of the path` +
          (peers.length > 0 ? ` from ${peers.join(', ')}` : ''),
      detail: kernelOnly
        ? `The kernel route \`unreachable ${facts.prefix} proto bird\` is how BIRD installs a path whose next hop it ` +
          'cannot resolve. ' +
          `No BIRD routes ${inInput(ctx)} (birdc-show-route-all.txt), so the next hop cannot be named; ` +
          '`birdc show route all` would.'
        : `BIRD marks the path unreachable${reach.length > 0 ? `; ${reach.map((r) => r.text).join('; ')}` : ''}. ` +
          'This `show route` has no attributes, so it does not name the BGP next hop; `birdc show route all` does.',
      evidence: [
        ...paths.flatMap((p) => ctx.cite(p.pos)),
        ...reach.flatMap((r) => ctx.resolutionEvidence(r.res)),
        ...ctx.citeKernelRoute(e),
      ],
      fix:
        `Find the BGP next hop (birdc show route all for ${facts.prefix}), then make it resolvable for BIRD (an underlay ` +
        `route with IPv4 next hops), or program ${facts.prefix} via that next hop dev ${ctx.snapshot.tunnelDev} onlink.`,
    })),
  ]
}
