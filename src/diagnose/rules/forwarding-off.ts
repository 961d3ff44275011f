import {finding, NONE, type HostRule} from '../rule.js'

export const rule: HostRule = {
  id: 'forwarding-off',
  scope: 'host',
  run(ctx) {
    const s = ctx.sysctlValue('net.ipv4.ip_forward')
    if (!s || s.value.trim() !== '0') return NONE
    return [finding('forwarding-off', {
      title: 'IPv4 forwarding is off',
      detail: 'net.ipv4.ip_forward = 0: the node does not forward between pods and the tunnel.',
      evidence: ctx.cite(s.pos),
      fix: 'sysctl -w net.ipv4.ip_forward=1 (and persist it).',
    })]
  },
}
