// IP-in-IP adds a 20-byte outer header: tunl0's MTU must not exceed the underlay's minus 20.
import {finding, NONE, type HostRule} from '../rule.js'
import {formatLink} from '../../model/format.js'

export const rule: HostRule = {
  id: 'tunnel-mtu',
  scope: 'host',
  run(ctx) {
    const tunnel = ctx.links.get(ctx.snapshot.tunnelDev)
    if (!tunnel) return NONE
    const devs = new Set<string>()
    for (const res of ctx.poolResolutions())
      for (const n of res.lookup.route?.nexthops ?? []) if (n.dev) devs.add(n.dev)
    devs.delete(tunnel.ifname)
    const underlay = [...devs].map((d) => ctx.links.get(d)).filter((l) => l !== undefined)
    if (underlay.length === 0) return NONE
    const smallest = underlay.reduce((a, b) => (b.mtu < a.mtu ? b : a))
    if (tunnel.mtu <= smallest.mtu - 20) return NONE
    return [
      finding('tunnel-mtu', {
        title: `${tunnel.ifname} MTU ${tunnel.mtu} is above ${smallest.ifname}'s ${smallest.mtu} minus 20`,
        detail: `Encapsulated packets of ${tunnel.mtu} bytes become ${tunnel.mtu + 20} on ${smallest.ifname} (MTU ${smallest.mtu}): large packets are fragmented or dropped.`,
        evidence: [
          ...ctx.cite(tunnel.pos, () => formatLink(tunnel)),
          ...ctx.cite(smallest.pos, () => formatLink(smallest)),
        ],
        fix: `ip link set ${tunnel.ifname} mtu ${smallest.mtu - 20} (Calico: set the IPIP MTU in its configuration).`,
      }),
    ]
  },
}
