// formatKernelRoute renders a parsed route the way `ip route` prints it: evidence a network engineer
// compares with their own `ip route` output. Each case is a line iproute2 printed, parsed and rendered back.
import {describe, expect, it} from 'vitest'

import {formatKernelRoute, formatNexthops} from '../../src/model/format.js'
import type {Nexthop} from '../../src/model/types.js'
import {parseIpRouteText} from '../../src/parse/ip-route-text.js'

const render = (line: string) => formatKernelRoute(parseIpRouteText(`${line}\n`, 'ip-d-route.txt')[0])

describe('formatKernelRoute', () => {
  it.each([
    '192.168.110.128/26 via 172.31.20.5 dev tunl0 proto bird metric 32 onlink',
    'blackhole 192.168.162.128/26 proto bird metric 32',
    '172.31.20.5 via 172.31.11.1 dev eth0 proto static metric 100',
    'default via 172.31.11.1 dev eth0 proto dhcp src 172.31.11.3 metric 100',
    '10.0.0.0/8 via inet6 fe80::1 dev eth0 table 1000 proto bird metric 32',
    'unreachable 192.168.200.0/24 proto bird metric 32',
  ])('%s', (line) => {
    expect(render(line)).toBe(line)
  })

  it('renders routes that share one frozen next-hop list by their own fields (the text after the dst is memoised per list)', () => {
    const lines = [
      '192.168.110.128/26 proto bird metric 32\n\tnexthop via 172.31.11.1 dev eth0 weight 1\n\tnexthop via 172.31.12.1 dev eth1 weight 1',
      '192.168.110.192/26 proto bird metric 31\n\tnexthop via 172.31.11.1 dev eth0 weight 1\n\tnexthop via 172.31.12.1 dev eth1 weight 1',
      '192.168.111.0/26 table 1000 proto bird metric 32\n\tnexthop via 172.31.11.1 dev eth0 weight 1\n\tnexthop via 172.31.12.1 dev eth1 weight 1',
      '192.168.111.64/26 proto static metric 32\n\tnexthop via 172.31.11.1 dev eth0 weight 1\n\tnexthop via 172.31.12.1 dev eth1 weight 1',
      '192.168.111.128/26 proto bird scope link src 10.0.0.1 metric 32\n\tnexthop via 172.31.11.1 dev eth0 weight 1\n\tnexthop via 172.31.12.1 dev eth1 weight 1',
      'unreachable 192.168.111.192/26 proto bird metric 32 linkdown\n\tnexthop via 172.31.11.1 dev eth0 weight 1\n\tnexthop via 172.31.12.1 dev eth1 weight 1',
    ]
    const routes = lines.map((l) => parseIpRouteText(`${l}\n`, 'ip-d-route.txt')[0])
    // frozen, as the parsers share one list among routes (the type says a route's list is its own)
    const shared = Object.freeze(routes[0].nexthops.slice()) as Nexthop[]
    // an unfrozen copy of the list is rendered without the memo
    const own = routes.map((r) => formatKernelRoute({...r, nexthops: shared.slice()}))
    expect(own.slice(0, 5)).toEqual(lines.slice(0, 5))
    for (let round = 0; round < 2; round++) {
      for (const [i, r] of routes.entries()) expect(formatKernelRoute({...r, nexthops: shared})).toBe(own[i])
    }
    expect(formatNexthops({...routes[0], nexthops: shared})).toBe(formatNexthops(routes[0]))
  })

  it('keeps the length of an IPv6 /32 and drops it only from a host route', () => {
    expect(formatKernelRoute(parseIpRouteText('2001:db8::/32 dev eth0 proto kernel metric 256\n', 'ip-6-d-route.txt', {family: 'inet6'})[0])).toBe('2001:db8::/32 dev eth0 proto kernel metric 256')
    expect(formatKernelRoute(parseIpRouteText('2001:db8::1 dev eth0 proto kernel metric 256\n', 'ip-6-d-route.txt', {family: 'inet6'})[0])).toBe('2001:db8::1 dev eth0 proto kernel metric 256')
  })

  it('prints a multipath route with one nexthop line each, weights and flags included', () => {
    const text = '192.168.110.128/26 proto bird metric 32\n\tnexthop via 172.31.11.1 dev eth0 weight 1\n\tnexthop via 172.31.12.1 dev eth1 weight 1 onlink\n'
    const r = parseIpRouteText(text, 'ip-d-route.txt')[0]
    expect(formatKernelRoute(r)).toBe(text.trimEnd())
    expect(formatNexthops(r)).toBe('via 172.31.11.1 dev eth0, via 172.31.12.1 dev eth1 onlink')
  })
})
