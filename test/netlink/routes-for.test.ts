// The kernel's routes a targeted explanation collects are handed to the parsers in `ip -j -d route`'s form
// (netlink/routes-for.ts ipRouteJsonText): read back, they are the routes they were made of, for every route shape
// of the captured fixtures (multipath, via inet6, onlink, local/broadcast, blackhole and unreachable, other tables).
import {readFileSync} from 'node:fs'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {ipRouteJsonText} from '../../src/netlink/routes-for.js'
import {parseIpRouteJson, parseIpRouteJsonGeneric} from '../../src/parse/ip-route-json.js'
import {FIXTURES} from '../helpers.js'

const dirs = ['bird2-ecmp-not-tunneled', 'kernel-extra', 'bird16-ipv6-ll-underlay-unreachable', 'lab-bird2-healthy', 'lab-bird16-ipv6-ll', 'lab-bird2-peer-down']

describe('ipRouteJsonText', () => {
  it.each(dirs)('reads back as the routes it was made of (%s)', (dir) => {
    const routes = parseIpRouteJson(readFileSync(path.join(FIXTURES, dir, 'ip-j-d-route.json'), 'utf8'))
    expect(routes.length).toBeGreaterThan(5)
    const text = ipRouteJsonText(routes)
    expect(parseIpRouteJson(text)).toEqual(routes)
    expect(parseIpRouteJsonGeneric(text)).toEqual(routes)
  })

  it('gives a route with an IPv6 gateway its `via`, as iproute2 prints it', () => {
    const routes = parseIpRouteJson(readFileSync(path.join(FIXTURES, 'lab-bird16-ipv6-ll', 'ip-j-d-route.json'), 'utf8'))
    const v6 = routes.filter((r) => r.nexthops.some((n) => n.gateway?.family === 'inet6'))
    expect(v6.length).toBeGreaterThan(0)
    expect(ipRouteJsonText(v6)).toContain('"via":{"family":"inet6","host":"fe80:')
  })
})
