import {finding, NONE, type HostRule} from '../rule.js'

export const rule: HostRule = {
  id: 'tunnel-device-missing',
  scope: 'host',
  run(ctx) {
    const dev = ctx.snapshot.tunnelDev
    if (!ctx.haveLinks || ctx.links.has(dev) || !ctx.snapshot.pools.some((p) => p.mode === 'ipip')) return NONE
    return [
      finding('tunnel-device-missing', {
        title: `There is no ${dev} device`,
        detail: `The pools are IP-in-IP but the node has no link named ${dev}: no pod traffic to other nodes can be encapsulated.`,
        evidence: [],
        fix:
          dev === 'tunl0'
            ? 'Check calico-node\'s startup (it creates tunl0); on a real node the ipip module must be loadable.'
            : `Check that --tunnel-dev names the node's tunnel device (Calico's is tunl0, which calico-node creates).`,
      }),
    ]
  },
}
