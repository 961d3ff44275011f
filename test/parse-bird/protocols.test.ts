// parseBirdProtocols on real `show protocols [all]` output of BIRD 1.6.8, 2.0.12, 3.0.5 and 3.2.3
// (test/fixtures/bird-captures, real runs) and on the scenario snapshots.
import {describe, expect, it} from 'vitest'

import {ParseError} from '../../src/model/errors.js'
import type {BirdProtocol} from '../../src/model/types.js'
import {parseBirdProtocols, parseRoutesCounts} from '../../src/parse/bird-protocols.js'
import {capture, fixture, rawCapture, toRawSocket} from './captures.js'

const byName = (ps: BirdProtocol[], name: string): BirdProtocol => {
  const p = ps.find((x) => x.name === name)
  if (p === undefined) throw new Error(`no protocol ${name}`)
  return p
}

describe('scenario snapshots', () => {
  it('bird2-peer-down: one session Established, the other Active with Connection refused', () => {
    const ps = parseBirdProtocols(fixture('bird2-peer-down/birdc-show-protocols-all.txt'))
    expect(ps.map((p) => [p.name, p.proto, p.table, p.state])).toEqual([
      ['device1', 'Device', '---', 'up'],
      ['kernel1', 'Kernel', 'master4', 'up'],
      ['blocks', 'Static', 'master4', 'up'],
      ['Mesh_172_31_20_5', 'BGP', '---', 'up'],
      ['Mesh_172_31_30_6', 'BGP', '---', 'start'],
    ])
    const up = byName(ps, 'Mesh_172_31_20_5')
    expect(up).toMatchObject({
      bgpState: 'Established', neighborAddress: '172.31.20.5', neighborAs: 64512, localAs: 64512,
      routes: {imported: 2, exported: 1, preferred: 2}, since: '16:50:52.875', info: 'Established',
    })
    expect(up.lastError).toBeUndefined()
    expect(up.routes!.filtered).toBeUndefined()
    expect(up.details['BGP state/Session']).toBe('internal multihop AS4')
    expect(up.details['BGP state/Local capabilities/ADD-PATH/RX']).toBe('ipv4')
    expect(up.details['Channel ipv4/Output filter']).toBe('calico_export_to_bgp_peers')
    expect(up.details['Channel ipv4/Route change stats/Export updates']).toBe('8          4          3        ---          1')
    const down = byName(ps, 'Mesh_172_31_30_6')
    expect(down).toMatchObject({
      bgpState: 'Active', lastError: 'Socket: Connection refused', info: 'Active        Socket: Connection refused',
      neighborAddress: '172.31.30.6', pos: {file: 'birdc-show-protocols-all.txt', line: 86, endLine: 99},
    })
    expect(down.routes).toBeUndefined() // a down channel prints no Routes line
    expect(byName(ps, 'kernel1').routes).toEqual({imported: 3, exported: 3, preferred: 3})
    expect(byName(ps, 'kernel1').bgpState).toBeUndefined()
  })

  it('bird16 scenarios: 1.6 layout with protocol-level Routes', () => {
    for (const dir of ['bird16-ecmp-not-tunneled', 'bird16-ipv6-ll-underlay-unreachable']) {
      const ps = parseBirdProtocols(fixture(`${dir}/birdc-show-protocols-all.txt`))
      expect(ps.map((p) => p.name)).toEqual(['device1', 'kernel1', 'blocks', 'Mesh_172_31_20_5', 'Mesh_172_31_30_6'])
      for (const name of ['Mesh_172_31_20_5', 'Mesh_172_31_30_6']) {
        const p = byName(ps, name)
        expect(p).toMatchObject({proto: 'BGP', table: 'master', state: 'up', bgpState: 'Established', neighborAs: 64512})
        expect(p.localAs).toBeUndefined() // 1.6 prints no Local AS line
        expect(p.routes!.imported).toBe(2)
      }
      expect(byName(ps, 'kernel1').details['Output filter']).toBe('calico_kernel_programming')
    }
    const ll = parseBirdProtocols(fixture('bird16-ipv6-ll-underlay-unreachable/birdc-show-protocols-all.txt'))
    expect(byName(ll, 'Mesh_172_31_20_5').routes).toEqual({imported: 2, exported: 1, preferred: 1})
  })

  it('bird2-ecmp-not-tunneled', () => {
    const ps = parseBirdProtocols(fixture('bird2-ecmp-not-tunneled/birdc-show-protocols-all.txt'))
    expect(ps.filter((p) => p.bgpState === 'Established').map((p) => p.neighborAddress)).toEqual(['172.31.20.5', '172.31.30.6'])
  })
})

describe('BIRD 1.6.8', () => {
  it('show protocols: Info with error classes, long names push columns', () => {
    const ps = parseBirdProtocols(capture('bird1.6.8-B16-established.txt', 'show protocols'))
    expect(ps).toHaveLength(8)
    expect(byName(ps, 'refused')).toMatchObject({state: 'start', bgpState: 'Active', lastError: 'Socket: Connection refused'})
    expect(byName(ps, 'holdtest2')).toMatchObject({proto: 'BGP', table: 'master', since: '15:45:57', bgpState: 'Established'})
    expect(byName(ps, 'device1')).toMatchObject({proto: 'Device', info: '', details: {}})
  })

  it('show protocols all: routes by label with filtered, neighbor, stats', () => {
    const ps = parseBirdProtocols(capture('bird1.6.8-B16-established.txt', 'show protocols all'))
    const a2 = byName(ps, 'a2_v4')
    expect(a2).toMatchObject({neighborAddress: '10.0.0.1', neighborAs: 65001, routes: {imported: 8, filtered: 1, exported: 10, preferred: 7}})
    expect(a2.details['BGP state/Neighbor caps']).toBe('refresh enhanced-refresh restart-aware llgr-aware AS4')
    expect(a2.details['Route change stats/Import updates']).toBe('9          0          1          0          8')
    expect(byName(ps, 'refused').lastError).toBe('Socket: Connection refused')
  })

  it('hold timer expired, received shutdown, disabled (down)', () => {
    const hold = parseBirdProtocols(capture('bird1.6.8-B16-holdexpired.txt', 'show protocols all holdtest'))
    expect(hold[0]).toMatchObject({bgpState: 'Idle', lastError: 'BGP Error: Hold timer expired', neighborAddress: '10.0.3.1'})
    const shut = parseBirdProtocols(capture('bird1.6.8-B16-received-shutdown.txt', 'show protocols all holdtest2'))
    expect(shut[0]).toMatchObject({bgpState: 'Active', lastError: 'Received: Administrative shutdown'})
    const down = parseBirdProtocols(capture('bird1.6.8-B16v6-disabled.txt', 'show protocols all a2_v6'))
    expect(down[0]).toMatchObject({state: 'down', info: '', bgpState: 'Down', neighborAddress: 'fd00::1'})
    expect(down[0]!.lastError).toBeUndefined()
    const plainDown = byName(parseBirdProtocols(capture('bird1.6.8-B16v6-disabled.txt', 'show protocols')), 'a2_v6')
    expect(plainDown.bgpState).toBeUndefined()
  })

  it('iso long since holds two words', () => {
    const ps = parseBirdProtocols(capture('bird1.6.8-B16-isolong.txt', 'show protocols'))
    expect(byName(ps, 'noarp')).toMatchObject({since: '2026-11-29 15:48:36', bgpState: 'Connect', lastError: 'Socket: No route to host'})
    expect(byName(ps, 'holdtest2').since).toBe('2026-11-29 15:48:41')
  })

  it('raw socket replies parse like birdc output', () => {
    const raw = parseBirdProtocols(rawCapture('bird1.6.8-B16-rawsocket.txt', 'show protocols all a2_v4'))
    const birdc = byName(parseBirdProtocols(capture('bird1.6.8-B16-established.txt', 'show protocols all')), 'a2_v4')
    expect(raw).toHaveLength(1)
    expect(raw[0]!.routes).toEqual(birdc.routes)
    expect(Object.keys(raw[0]!.details)).toEqual(Object.keys(birdc.details))
  })
})

describe('BIRD 2.0.12', () => {
  const ps = parseBirdProtocols(capture('bird2.0.12-A2-established.txt', 'show protocols all'))

  it('every protocol, BGP sessions with per-channel routes', () => {
    expect(ps).toHaveLength(16)
    expect(byName(ps, 'b16_v4')).toMatchObject({localAs: 65001, neighborAs: 65002, routes: {imported: 7, filtered: 1, exported: 11, preferred: 6}})
    expect(byName(ps, 'b16_v4').details['Channel ipv4/BGP Next hop']).toBe('10.0.0.1')
    expect(byName(ps, 'noarp')).toMatchObject({bgpState: 'Active', lastError: 'Socket: No route to host', neighborAddress: '10.1.0.77'})
  })

  it('two channels: the ipv4 channel counts', () => {
    const enh = byName(ps, 'b2_enh')
    expect(enh.routes).toEqual({imported: 1, exported: 11, preferred: 1})
    expect(enh.details['Channel ipv6/Routes']).toBe('0 imported, 4 exported, 0 preferred')
    expect(enh.details['BGP state/Local capabilities/Extended next hop/IPv6 nexthop']).toBe('ipv4')
  })

  it('an IPv6-only session takes its first channel', () => {
    const b2 = parseBirdProtocols(capture('bird2.0.12-B2-established.txt', 'show protocols all a2_enh'))
    expect(b2[0]).toMatchObject({neighborAddress: 'fd02::1', routes: {imported: 11, exported: 3, preferred: 10}})
  })

  it('hold timer, received shutdown, down', () => {
    expect(parseBirdProtocols(capture('bird2.0.12-A2-holdexpired.txt', 'show protocols all holdtest'))[0]).toMatchObject({
      state: 'start', bgpState: 'Idle', lastError: 'BGP Error: Hold timer expired', details: {'BGP state/Error wait': '22.067/60'},
    })
    expect(parseBirdProtocols(capture('bird2.0.12-A2-received-shutdown.txt', 'show protocols all b16_v6'))[0]).toMatchObject({
      bgpState: 'Active', lastError: 'Received: Administrative shutdown', neighborAddress: 'fd00::2',
    })
    expect(parseBirdProtocols(capture('bird2.0.12-A2-received-shutdown.txt', 'show protocols all holdtest2'))[0]).toMatchObject({
      state: 'down', bgpState: 'Down',
    })
  })

  it('iso long protocols', () => {
    const iso = parseBirdProtocols(capture('bird2.0.12-A2-isolong.txt', 'show protocols'))
    expect(byName(iso, 'noarp')).toMatchObject({since: '2026-11-29 15:48:37', info: 'Connect       Socket: No route to host'})
  })
})

describe('BIRD 3.x', () => {
  it('3.2.3: Created, TX pending, 7-column stats, Pending line', () => {
    const ps = parseBirdProtocols(capture('bird3.2.3-B3-established.txt', 'show protocols all'))
    expect(ps).toHaveLength(11)
    expect(ps[0]!.name).toBe('kernel4') // 3.x lists kernel/static first
    const a2 = byName(ps, 'a2_v4')
    expect(a2).toMatchObject({localAs: 65004, neighborAs: 65001, neighborAddress: '10.0.4.1', routes: {imported: 16, filtered: 1, exported: 11, preferred: 6}})
    expect(a2.details.Created).toBe('15:49:53.197')
    expect(a2.details['Channel ipv4/Route change stats']).toBe('received   rejected   filtered    ignored   RX limit      limit   accepted')
    expect(a2.details['Channel ipv4/Pending 0 attribute sets with total 0 prefixes to send']).toBe('')
    expect(byName(ps, 'a2_v6enh').neighborAddress).toBe('fd04::1')
  })

  it('3.2.3 error states', () => {
    const ps = parseBirdProtocols(capture('bird3.2.3-B3-errors.txt', 'show protocols'))
    expect(byName(ps, 'a2_v4')).toMatchObject({bgpState: 'Active', lastError: 'Socket: Connection reset by peer'})
    expect(byName(ps, 'b30')).toMatchObject({bgpState: 'Idle', lastError: 'BGP Error: Hold timer expired'})
    const b30 = parseBirdProtocols(capture('bird3.2.3-B3-errors.txt', 'show protocols all b30'))[0]!
    expect(b30).toMatchObject({neighborAddress: '10.0.5.1', neighborAs: 65005, localAs: 65004, lastError: 'BGP Error: Hold timer expired'})
  })

  it('3.0.5: misaligned stats rows are kept verbatim, Neighbor port', () => {
    const ps = parseBirdProtocols(capture('bird3.0.5-B30-established.txt', 'show protocols all'))
    const b3 = byName(ps, 'b3')
    expect(b3).toMatchObject({routes: {imported: 20, filtered: 1, exported: 7, preferred: 20}, details: {'BGP state/Neighbor port': '1791'}})
    expect(b3.details['Channel ipv4/Route change stats/Import withdraws']).toBe('0          0        ---          0        ---          1')
    const errs = parseBirdProtocols(capture('bird3.0.5-B30-errors.txt', 'show protocols all b3'))[0]!
    expect(errs).toMatchObject({bgpState: 'Idle', lastError: 'Received: Hold timer expired'})
  })

  it('3.2.3 raw socket (1006 details, continuation lines)', () => {
    const raw = parseBirdProtocols(rawCapture('bird3.2.3-B3-rawsocket.txt', 'show protocols all a2_v4'))[0]!
    expect(raw).toMatchObject({name: 'a2_v4', bgpState: 'Established', neighborAddress: '10.0.4.1', routes: {imported: 16, exported: 11}})
    const refused = parseBirdProtocols(rawCapture('bird3.2.3-B3-rawsocket.txt', 'show protocols all refused'))[0]!
    expect(refused.lastError).toBe('Socket: Connection refused')
  })
})

describe('state series (1 s polling through Established -> Idle -> Active -> Connect)', () => {
  // states-series2/3 tag every line with `[2.0 TIME] ` or `[1.6 TIME] `; a run of one tag is one birdc reply
  // (states-series2 is grep-filtered: no greeting, no `BGP state:` parent line)
  function replies(file: string): {tag: string; text: string}[] {
    const out: {tag: string; key: string; text: string}[] = []
    for (const line of fixture(`bird-captures/${file}`).split('\n')) {
      const m = /^\[((\S+) [^\]]*)\] ?(.*)$/.exec(line)
      if (m === null) continue
      if (out[out.length - 1]?.key !== m[1]) out.push({tag: m[2]!, key: m[1]!, text: ''})
      out[out.length - 1]!.text += `${m[3]}\n`
    }
    return out
  }

  it('noarp goes Active -> Connect with "No route to host" on both versions', () => {
    const seen = new Map<string, string[]>()
    for (const {tag, text} of replies('states-series3.txt')) {
      for (const p of parseBirdProtocols(text)) {
        if (p.name !== 'noarp') continue
        const states = seen.get(tag) ?? []
        const s = `${p.bgpState}|${p.lastError ?? ''}`
        if (states[states.length - 1] !== s) states.push(s)
        seen.set(tag, states)
      }
    }
    expect(seen.get('2.0')![0]).toBe('Active|')
    expect(seen.get('2.0')).toContain('Connect|Socket: No route to host')
    expect(seen.get('1.6')).toContain('Connect|Socket: No route to host')
  })

  it('holdtest reaches Idle with Hold timer expired (states-series2)', () => {
    const states = new Set<string>()
    for (const {text} of replies('states-series2.txt')) {
      for (const p of parseBirdProtocols(text)) if (p.name === 'holdtest') states.add(`${p.bgpState}|${p.lastError ?? ''}`)
    }
    expect(states).toContain('Idle|BGP Error: Hold timer expired')
  })

  it('plain rows of states-series.txt', () => {
    const blocks = fixture('bird-captures/states-series.txt').split(/^=== .*$/m).slice(1)
    const v2 = blocks.map((b) => parseBirdProtocols(b.split('\n').filter((l) => !l.startsWith('[1.6] ')).join('\n')))
    const v16 = blocks.map((b) => parseBirdProtocols(b.split('\n').filter((l) => l.startsWith('[1.6] ')).map((l) => l.slice(6)).join('\n')))
    expect(v2[0]!.map((p) => p.bgpState)).toEqual(['Established', 'Established'])
    expect(v2.some((ps) => ps.some((p) => p.lastError === 'BGP Error: Hold timer expired'))).toBe(true)
    expect(v16.every((ps) => ps.length === 2)).toBe(true)
  })
})

describe('routes counts and errors', () => {
  it('parses Routes by label', () => {
    expect(parseRoutesCounts('455 imported, 281241 exported')).toEqual({imported: 455, exported: 281241})
    expect(parseRoutesCounts('16 imported, 1 filtered, 11 exported, 6 preferred')).toEqual({imported: 16, filtered: 1, exported: 11, preferred: 6})
    expect(parseRoutesCounts('garbage')).toBeUndefined()
  })

  it('framing: raw socket of a birdc capture parses identically', () => {
    const text = fixture('bird2-peer-down/birdc-show-protocols-all.txt')
    expect(parseBirdProtocols(toRawSocket(text, (i) => i === 1, '1006'))).toEqual(parseBirdProtocols(text))
    expect(parseBirdProtocols(text.replace(/\n/g, '\r\n'))).toEqual(parseBirdProtocols(text))
  })

  it('BIRD error replies and stray lines are ParseErrors naming the line', () => {
    const err = (t: string): ParseError => {
      try {
        parseBirdProtocols(t, 'p.txt')
      } catch (error) {
        expect(error).toBeInstanceOf(ParseError)
        return error as ParseError
      }
      throw new Error('no error')
    }
    expect(err(capture('bird2.0.12-A2-established.txt', 'show protocols all nosuchproto')).line).toBe(2)
    expect(err(capture('bird1.6.8-B16-established.txt', 'show protocols all nosuchproto')).found).toBe('nosuchproto is not a protocol')
    expect(err('0001 BIRD 2.0.12 ready.\n9001 syntax error\n').found).toContain('9001')
    expect(err('BIRD 2.0.12 ready.\n  BGP state: Established\n').line).toBe(2)
    expect(parseBirdProtocols('0001 BIRD 2.0.12 ready.\n8003 No protocols match\n')).toEqual([])
  })
})

// what watch compares between two polls to tell that BIRD's routes changed (agent/watch.ts routeChanges)
describe('channels: route counts and imports accepted', () => {
  it('BIRD 1.6: the protocol-level lines, as channel ""', () => {
    const ps = parseBirdProtocols(fixture('bird16-ecmp-not-tunneled/birdc-show-protocols-all.txt'))
    expect(byName(ps, 'kernel1').channels).toEqual([{channel: '', routes: {imported: 3, exported: 5, preferred: 3},
      importUpdatesAccepted: 3, importWithdrawsAccepted: 0}])
    const a2 = byName(parseBirdProtocols(capture('bird1.6.8-B16-established.txt', 'show protocols all')), 'a2_v4')
    expect(a2.channels).toEqual([{channel: '', routes: {imported: 8, filtered: 1, exported: 10, preferred: 7},
      importUpdatesAccepted: 8, importWithdrawsAccepted: 0}])
  })

  it('BIRD 2.x: per channel, the accepted column of the import lines', () => {
    const ps = parseBirdProtocols(fixture('bird2-ecmp-not-tunneled/birdc-show-protocols-all.txt'))
    expect(byName(ps, 'kernel1').channels).toEqual([
      {channel: 'ipv4', routes: {imported: 3, exported: 4, preferred: 3}, importUpdatesAccepted: 3, importWithdrawsAccepted: 0},
    ])
    expect(byName(ps, 'device1').channels).toBeUndefined()
    const overlay = parseBirdProtocols(fixture('lab-bird2-overlay-leak/birdc-show-protocols-all.txt'))
    const channels = overlay.flatMap((p) => p.channels ?? [])
    expect(channels.some((c) => c.importUpdatesAccepted !== c.routes?.imported)).toBe(true)
  })

  it('BIRD 3: the limit columns before accepted; a BGP session with two channels', () => {
    const ps = parseBirdProtocols(capture('bird3.2.3-B3-established.txt', 'show protocols all'))
    expect(byName(ps, 'kernel4').channels).toEqual([{channel: 'ipv4', routes: {imported: 5, exported: 0, preferred: 5},
      importUpdatesAccepted: 5, importWithdrawsAccepted: 0}])
    expect(byName(ps, 'kernel6').channels).toMatchObject([{channel: 'ipv6', importUpdatesAccepted: 1}])
    const withTwo = ps.find((p) => (p.channels ?? []).length === 2)!
    expect(withTwo.channels!.map((c) => c.channel)).toEqual(['ipv4', 'ipv6'])
  })
})
