// With Calico's truth: a node's projectcalico.org/IPv4Address is not the address its BGP sessions use: this
// node's is none of its own addresses, or another node's is no neighbor of this node's sessions while a session
// goes to an address the truth does not know (an autodetected address on the wrong interface: calico#5094, #10041).
import {finding, NONE, type HostRule} from '../rule.js'
import type {Finding} from '../../model/types.js'

export const rule: HostRule = {
  id: 'node-address-mismatch',
  scope: 'host',
  run(ctx) {
    const cluster = ctx.cluster
    const me = ctx.clusterNode
    if (!cluster || !me) return NONE
    const out: Finding[] = []
    const cite = (n: typeof me) =>
      ctx.cite(n.pos, () => `Node ${n.name}: projectcalico.org/IPv4Address ${n.ipv4Cidr ?? 'not set'}`)
    if (me.ipv4Address !== undefined && ctx.snapshot.addresses.length > 0 && !ctx.ownAddresses.has(me.ipv4Address)) {
      out.push(
        finding('node-address-mismatch', {
          title: `This node's IPv4Address ${me.ipv4Address} (${me.name}) is none of its own addresses`,
          detail:
            `Every other node's BGP session and route to ${me.name} use ${me.ipv4Address}, which this host does not have: ` +
            'calico-node autodetected or was given the wrong address (IP_AUTODETECTION_METHOD).',
          evidence: [
            ...cite(me),
            ...ctx.snapshot.addresses
              .filter((a) => a.family === 'inet' && a.scope === 'global')
              .flatMap((a) => ctx.cite(a.pos, () => `${a.ifname}: ${a.local}/${a.prefixlen}`)),
          ],
          fix: `Set IP_AUTODETECTION_METHOD (e.g. cidr=… or interface=…) so that calico-node picks the address its peers reach, then restart calico-node on ${me.name}.`,
        }),
      )
    }
    if (cluster.truth.nodeToNodeMesh === false || ctx.bgpProtocols.length === 0) return out
    const known = new Set([
      ...cluster.nodesByAddress.keys(),
      ...cluster.truth.peers.map((p) => p.peerIP).filter((a): a is string => a !== undefined),
    ])
    const strangers = ctx.bgpProtocols.filter((p) => p.neighborAddress !== undefined && !known.has(p.neighborAddress))
    if (strangers.length === 0) return out
    const neighbors = new Set(ctx.bgpProtocols.map((p) => p.neighborAddress))
    for (const n of cluster.truth.nodes) {
      if (n.name === me.name || n.ipv4Address === undefined || neighbors.has(n.ipv4Address)) continue
      out.push(
        finding('node-address-mismatch', {
          title: `${n.name}'s IPv4Address ${n.ipv4Address} is not the address of any BGP session here`,
          detail:
            `The node-to-node mesh should peer with ${n.name} at ${n.ipv4Address}, but this node's sessions go to ${strangers.map((p) => p.neighborAddress).join(', ')}, ` +
            'which no Node or BGPPeer names: one of them is likely the address the node really uses.',
          evidence: [...cite(n), ...strangers.flatMap((p) => ctx.cite({...p.pos, endLine: p.pos.line}))],
          fix: `Check ${n.name}'s address autodetection (IP_AUTODETECTION_METHOD) and its projectcalico.org/IPv4Address annotation.`,
        }),
      )
    }
    return out
  },
}
