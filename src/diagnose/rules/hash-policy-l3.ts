// IP-in-IP between two nodes has one outer 5-tuple-less flow: with hash policy 0 (L3) or 1 (L4 of
// the outer header, which has no ports) all of it lands on one ECMP link. Policy 2 hashes inner headers.
import {finding, NONE, type HostRule} from '../rule.js'

export const rule: HostRule = {
  id: 'hash-policy-l3',
  scope: 'host',
  run(ctx) {
    const s = ctx.sysctlValue('net.ipv4.fib_multipath_hash_policy')
    if (!s || !['0', '1'].includes(s.value.trim())) return NONE
    if (!ctx.snapshot.pools.some((p) => p.mode === 'ipip')) return NONE
    // the ECMP underlay routes, and the BGP next hops (nodes) whose tunnelled traffic crosses them
    const ecmp = new Map<string, Set<string>>()
    for (const res of ctx.poolResolutions()) {
      if (!res.multipath || !res.lookup.route) continue
      const hops = ecmp.get(res.lookup.route.dst)
      if (hops) hops.add(res.bgpNextHop)
      else ecmp.set(res.lookup.route.dst, new Set([res.bgpNextHop]))
    }
    if (ecmp.size === 0) return NONE
    const routes = [...ecmp.keys()]
    const nodes = [...new Set([...ecmp.values()].flatMap((h) => [...h]))]
    const to = nodes.length <= 4 ? nodes.join(', ') : `${nodes.slice(0, 3).join(', ')} and ${nodes.length - 3} other nodes`
    const over = routes.length === 1 ? `the ECMP route ${routes[0]}` : `the ECMP routes ${routes.join(', ')}`
    return [
      finding('hash-policy-l3', {
        title: `fib_multipath_hash_policy is ${s.value.trim()} while IP-in-IP rides an ECMP underlay`,
        detail: `Tunnelled traffic to ${to} crosses ${over}; policy ${s.value.trim()} hashes the outer header, so all traffic between two nodes takes one link. Policy 2 hashes the inner headers (kernel ≥ 5.3).`,
        evidence: ctx.cite(s.pos),
        fix: 'sysctl -w net.ipv4.fib_multipath_hash_policy=2',
      }),
    ]
  },
}
