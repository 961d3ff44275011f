// A BGP session that is not Established: the routes of the node behind it are gone.
import {finding, type HostRule} from '../rule.js'

export const rule: HostRule = {
  id: 'peer-down',
  scope: 'host',
  run(ctx) {
    return ctx.sessionsDown.map((p) =>
      finding('peer-down', {
        title: `BGP session ${p.name} to ${p.neighborAddress ?? '?'} is ${p.bgpState ?? p.state}`,
        detail:
          `The session is ${p.state}/${p.bgpState ?? '?'}${p.lastError ? `; BIRD's last error: ${p.lastError}` : ''}. ` +
          `Every block that node owns is missing here until it is Established again.`,
        evidence: ctx.cite(p.pos),
        fix: p.lastError?.includes('Connection refused')
          ? `BIRD on ${p.neighborAddress} is not listening: check calico-node / BIRD there.`
          : `Check reachability of ${p.neighborAddress} on TCP 179 and BIRD on that node.`,
      }),
    )
  },
}
