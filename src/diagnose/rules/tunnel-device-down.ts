// tunl0 present but administratively down or without carrier: every route through it is linkdown.
import {finding, NONE, type HostRule} from '../rule.js'
import {linkUsable} from '../../model/snapshot-index.js'
import {formatLink} from '../../model/format.js'

export const rule: HostRule = {
  id: 'tunnel-device-down',
  scope: 'host',
  run(ctx) {
    const link = ctx.links.get(ctx.snapshot.tunnelDev)
    if (!link) return NONE
    if (linkUsable(link)) return NONE
    const up = link.flags.includes('UP')
    return [
      finding('tunnel-device-down', {
        title: `${link.ifname} is ${up ? 'up but has no carrier' : 'down'}`,
        detail: `${link.ifname} (${link.kind ?? 'unknown kind'}) has flags <${link.flags.join(',')}> and state ${link.operstate}: routes through it are linkdown and unusable.`,
        evidence: ctx.cite(link.pos, () => formatLink(link)),
        fix: up ? `Find why ${link.ifname} has no carrier.` : `ip link set ${link.ifname} up`,
      }),
    ]
  },
}
