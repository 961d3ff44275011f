// Strict reverse-path filtering drops packets that arrive on a link other than the one the reply
// would use: with an asymmetric ECMP underlay, or on tunl0, that drops legitimate traffic.
import {finding, NONE, type HostRule} from '../rule.js'

export const rule: HostRule = {
  id: 'rp-filter-strict',
  scope: 'host',
  run(ctx) {
    const devs = new Set<string>()
    for (const res of ctx.poolResolutions()) {
      if (res.multipath) for (const n of res.lookup.route!.nexthops) if (n.dev) devs.add(n.dev)
    }
    if (devs.size === 0) return NONE
    devs.add(ctx.snapshot.tunnelDev)
    const strict = [...devs].map((d) => ({dev: d, rp: ctx.rpFilter(d)})).filter((x) => x.rp?.value === 1)
    if (strict.length === 0) return NONE
    return [
      finding('rp-filter-strict', {
        title: `Strict rp_filter on ${strict.map((x) => x.dev).join(', ')} with an ECMP underlay`,
        detail: `rp_filter 1 (strict) drops a packet that arrives on a link other than the one the kernel would use to reply; over an ECMP underlay, return traffic is often asymmetric.`,
        evidence: strict.flatMap((x) => x.rp!.cites.flatMap((p) => ctx.cite(p))),
        // sysctl writes a dot in an interface name (eth0.100) as a slash
        fix: 'Loose mode (2) on the device is enough (the kernel applies the higher of its value and ' +
          `net.ipv4.conf.all's): sysctl -w ${strict.map((x) => `net.ipv4.conf.${x.dev.replaceAll('.', '/')}.rp_filter=2`).join(' ')}`,
      }),
    ]
  },
}
