// The durable fix: a BIRD kernel export filter that points pool routes at the tunnel, one onlink
// next hop per BGP route, before `merge paths` merges them (DESIGN §1). Only BIRD 2.0.12+ and
// 3.2+ have a settable `onlink`; BIRD 3.2 needs exactly this order (its `ifname =` and `gw =`
// rebuild the next hop and clear onlink, and `gw =` rejects a non-local gateway unless onlink is set).
import {birdMajor, versionAtLeast} from '../model/bird-version.js'
import type {Pool} from '../model/types.js'

export interface BirdConfigAdvice {
  version?: string
  supported: boolean
  reason: string
  snippet?: string
}

export function birdConfigAdvice(
  version: string | undefined,
  calicoFork: boolean,
  pools: Pool[],
  tunnelDev: string,
): BirdConfigAdvice {
  const ipip = pools.filter((p) => p.mode === 'ipip')
  const snippet =
    ipip.length === 0
      ? undefined
      : [
          `# Kernel export filter (Calico: calico_kernel_programming): for pool routes learned over BGP,`,
          `# one onlink next hop through ${tunnelDev} per route; \`merge paths on\` then merges them into a`,
          `# multipath ${tunnelDev} route. Keep this order: BIRD 3.2 needs it.`,
          `filter calico_kernel_programming {`,
          `  if ( net ~ [ ${ipip.map((p) => `${p.cidr}+`).join(', ')} ] && source = RTS_BGP ) then {`,
          `    ifname = "${tunnelDev}";`,
          `    onlink = true;`,
          `    gw = bgp_next_hop;`,
          `    onlink = true;`,
          `    accept;`,
          `  }`,
          `  accept;`,
          `}`,
        ].join('\n')
  if (!version)
    return {
      supported: false,
      reason: 'BIRD\'s version is unknown (no `show status`): the filter below needs BIRD 2.0.12+ or 3.2+.',
      snippet,
    }
  const major = birdMajor(version)
  if (calicoFork || major === 1) {
    return {
      version,
      supported: false,
      reason: `BIRD ${version}${calicoFork ? ' (Calico\'s fork of 1.6)' : ''} has no \`onlink\` attribute: no filter can program onlink tunnel routes there. Upgrade to BIRD 2.0.12+ / 3.2+, let Felix program the routes (programClusterRoutes), or keep routedoctor's routes.`,
    }
  }
  if (major === 2 && !versionAtLeast(version, [2, 0, 12]))
    return {
      version,
      supported: false,
      reason: `BIRD ${version} predates the \`onlink\` attribute (added in 2.0.12): upgrade to 2.0.12 or later.`,
      snippet,
    }
  if (major === 3 && !versionAtLeast(version, [3, 2]))
    return {
      version,
      supported: false,
      reason: `BIRD ${version} (3.0/3.1) has no \`onlink\` attribute: upgrade to 3.2 or later.`,
      snippet,
    }
  if (!snippet) return {version, supported: true, reason: 'No IP-in-IP pool found: nothing to point at the tunnel.'}
  return {
    version,
    supported: true,
    reason: `BIRD ${version} can program the tunnel routes itself with this kernel export filter:`,
    snippet,
  }
}
