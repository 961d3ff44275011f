// fix --apply's advice on a route war names the tunnel device of the planned routes (--tunnel-dev), not tunl0 always.
import {describe, expect, it} from 'vitest'

import {durableAdvice} from '../../src/netlink/apply.js'

describe('route-war advice', () => {
  it('puts the planned routes\' device in the kernel filter it quotes', () => {
    expect(durableAdvice('ipip0')).toContain('`ifname = "ipip0"; onlink = true; gw = bgp_next_hop; onlink = true;`')
    expect(durableAdvice('ipip0')).not.toContain('tunl0')
  })
})
