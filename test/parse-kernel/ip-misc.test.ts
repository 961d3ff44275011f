import {describe, expect, it} from 'vitest'

import {parseIpAddrJson} from '../../src/parse/ip-addr.js'
import {parseIpLinkJson, parseIpLinkText} from '../../src/parse/ip-link.js'
import {parseIpNeighJson} from '../../src/parse/ip-neigh.js'
import {parseIpRule} from '../../src/parse/ip-rule.js'
import {parseSysctl} from '../../src/parse/sysctl.js'
import {fixture, foldersWith, parseError, withoutPos} from './helpers.js'

describe('ip link', () => {
  for (const folder of foldersWith('ip-j-d-link.json', 'ip-d-link.txt')) {
    it(`${folder}: text and JSON agree`, () => {
      const json = parseIpLinkJson(fixture(folder, 'ip-j-d-link.json'))
      const text = parseIpLinkText(fixture(folder, 'ip-d-link.txt'))
      expect(json.length).toBeGreaterThan(0)
      expect(withoutPos(text)).toEqual(withoutPos(json))
      const tunl0 = text.find((l) => l.ifname === 'tunl0')!
      expect(tunl0.kind).toBe('tun')
      expect(tunl0.address).toBeUndefined()
      // a text link spans its header and detail lines
      const lines = fixture(folder, 'ip-d-link.txt').split('\n')
      for (const l of text) {
        expect(lines[l.pos.line - 1]).toMatch(new RegExp(`^${l.ifindex}: ${l.ifname}[@:]`))
        expect(l.pos.endLine).toBeGreaterThan(l.pos.line)
      }
    })
  }

  it('lab snapshot: veth peers lose their @ifN suffix, lo has no kind', () => {
    const links = parseIpLinkText(fixture('bird2-ecmp-not-tunneled', 'ip-d-link.txt'))
    expect(links.map((l) => l.ifname)).toEqual(['lo', 'eth0', 'eth1', 'tunl0', 'calif2ae67c76cf'])
    expect(links.find((l) => l.ifname === 'eth0')).toMatchObject({kind: 'veth', mtu: 1500, operstate: 'UP', flags: ['BROADCAST', 'MULTICAST', 'UP', 'LOWER_UP']})
    expect(links[0].kind).toBeUndefined()
    expect(links.find((l) => l.ifname === 'tunl0')!.mtu).toBe(1480)
  })

  it('kernel-extra: a TUN without a reader is NO-CARRIER and DOWN; a downed veth peer is LOWERLAYERDOWN', () => {
    const links = parseIpLinkJson(fixture('kernel-extra', 'ip-j-d-link.json'))
    expect(links.find((l) => l.ifname === 'tunl0')).toMatchObject({kind: 'tun', operstate: 'DOWN'})
    expect(links.find((l) => l.ifname === 'tunl0')!.flags).toContain('NO-CARRIER')
    expect(links.find((l) => l.ifname === 'w1')!.operstate).toBe('LOWERLAYERDOWN')
  })

  it('text: ipip tunl0@NONE, a bridge slave without kind, altname lines', () => {
    const text = [
      '7: tunl0@NONE: <NOARP,UP,LOWER_UP> mtu 1480 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000',
      '    link/ipip 0.0.0.0 brd 0.0.0.0 promiscuity 0 minmtu 0 maxmtu 0 ',
      '    ipip ipip remote any local any ttl inherit nopmtudisc addrgenmode eui64 numtxqueues 1',
      '2: ens3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9001 qdisc mq master br0 state UP mode DEFAULT group default qlen 1000\r',
      '    link/ether 02:11:22:33:44:55 brd ff:ff:ff:ff:ff:ff promiscuity 1 minmtu 68 maxmtu 9216 \r',
      '    bridge_slave state forwarding priority 32 cost 100 \r',
      '    altname enp0s3',
      '8: vxlan.calico: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UNKNOWN mode DEFAULT group default',
      '    link/ether 66:aa:bb:cc:dd:ee brd ff:ff:ff:ff:ff:ff promiscuity 0',
      '    vxlan id 4096 local 10.0.0.5 dev ens3 srcport 0 0 dstport 4789 nolearning',
    ].join('\n')
    const links = parseIpLinkText(text)
    expect(links.map((l) => [l.ifname, l.kind, l.address, l.mtu])).toEqual([
      ['tunl0', 'ipip', '0.0.0.0', 1480],
      ['ens3', undefined, '02:11:22:33:44:55', 9001],
      ['vxlan.calico', 'vxlan', '66:aa:bb:cc:dd:ee', 1450],
    ])
    expect(links[1].pos).toEqual({file: 'ip-d-link.txt', line: 4, endLine: 7})
  })

  it('bad input', () => {
    expect(parseError(() => parseIpLinkText('garbage line')).line).toBe(1)
    expect(parseError(() => parseIpLinkJson('[{"ifname": "x"}]')).message).toMatch(/ifindex/)
    expect(parseError(() => parseIpLinkJson('[{"ifindex": 1, "ifname": "x", "mtu": "big"}]')).message).toMatch(/"mtu" to be a number/)
    expect(parseIpLinkJson('[]')).toEqual([])
    expect(parseIpLinkText('')).toEqual([])
  })
})

describe('ip addr', () => {
  for (const folder of foldersWith('ip-j-addr.json')) {
    it(`${folder}: one address per addr_info`, () => {
      const text = fixture(folder, 'ip-j-addr.json')
      const addrs = parseIpAddrJson(text)
      const expected = (JSON.parse(text) as Array<{addr_info?: unknown[]}>).reduce(
        (n, l) => n + (l.addr_info?.length ?? 0),
        0,
      )
      expect(addrs).toHaveLength(expected)
      expect(addrs.find((a) => a.local === '127.0.0.1')).toMatchObject({
        ifname: 'lo',
        family: 'inet',
        prefixlen: 8,
        scope: 'host',
      })
    })
  }

  it('lab: loopback 172.31.10.4/32 and the tunl0 address', () => {
    const addrs = parseIpAddrJson(fixture('bird2-ecmp-not-tunneled', 'ip-j-addr.json'))
    expect(addrs.find((a) => a.local === '172.31.10.4')).toMatchObject({ifname: 'lo', prefixlen: 32, scope: 'global'})
    expect(addrs.filter((a) => a.ifname === 'tunl0').map((a) => a.family)).toContain('inet')
  })

  it('canonical IPv6, positions in pretty JSON, bad entries', () => {
    const addrs = parseIpAddrJson('[\n{"ifname":"eth0","addr_info":[]},\n{"ifname":"eth1","addr_info":[{"family":"inet6","local":"2001:DB8:0::1","prefixlen":64,"scope":"global"}]}\n]')
    expect(addrs).toEqual([{ifname: 'eth1', family: 'inet6', local: '2001:db8::1', prefixlen: 64, scope: 'global', pos: {file: 'ip-j-addr.json', line: 3, endLine: 3}}])
    expect(parseError(() => parseIpAddrJson('[{"ifname":"e","addr_info":[{"family":"inet","local":"nope","prefixlen":8}]}]')).message).toMatch(/address/)
    expect(parseError(() => parseIpAddrJson('[{"ifname":"e","addr_info":[{"family":"inet","local":"1.2.3.4"}]}]')).message).toMatch(/prefixlen/)
  })
})

describe('ip neigh', () => {
  it('kernel-extra: states, lladdr absent on INCOMPLETE', () => {
    const neigh = parseIpNeighJson(fixture('kernel-extra', 'ip-j-neigh.json'))
    expect(neigh.map((n) => [n.dst, n.lladdr, n.state])).toEqual([
      ['10.250.1.7', '02:00:00:00:00:07', ['STALE']],
      ['10.250.1.9', undefined, ['INCOMPLETE']],
      ['10.250.1.1', '02:00:00:00:00:01', ['PERMANENT']],
      ['fe80::1', '02:00:00:00:00:01', ['REACHABLE']],
    ])
  })

  for (const folder of foldersWith('ip-j-neigh.json')) {
    it(`${folder}: parses`, () => {
      const text = fixture(folder, 'ip-j-neigh.json')
      expect(parseIpNeighJson(text)).toHaveLength(text.trim() === '' ? 0 : (JSON.parse(text) as unknown[]).length)
    })
  }

  it('bad entries', () => {
    expect(parseError(() => parseIpNeighJson('[{"dev":"eth0"}]')).message).toMatch(/"dst"/)
    expect(parseError(() => parseIpNeighJson('[{"dst":"10.0.0.300","dev":"eth0"}]')).message).toMatch(/address/)
  })
})

describe('ip rule', () => {
  it('kernel-extra: priorities, selectors and tables', () => {
    const rules = parseIpRule(fixture('kernel-extra', 'ip-rule.txt'))
    expect(rules.map((r) => [r.priority, r.text, r.table])).toEqual([
      [0, 'from all lookup local', 'local'],
      [100, 'from 10.250.0.0/16 lookup 1000', '1000'],
      [200, 'from all fwmark 0x1 lookup 300', '300'],
      [32766, 'from all lookup main', 'main'],
      [32767, 'from all lookup default', 'default'],
    ])
    expect(rules[1].pos).toEqual({file: 'ip-rule.txt', line: 2, endLine: 2})
  })

  it('CRLF, no trailing newline, a rule without lookup, bad lines', () => {
    const rules = parseIpRule('0:\tfrom all lookup local\r\n1000:\tnot from all fwmark 0x10000/0x10000 goto 32766\r\n32000:  from all unreachable')
    expect(rules.map((r) => [r.priority, r.table])).toEqual([[0, 'local'], [1000, undefined], [32000, undefined]])
    expect(parseError(() => parseIpRule('0:\tfrom all lookup local\nfrom all lookup main')).line).toBe(2)
    expect(parseError(() => parseIpRule('12:')).line).toBe(1)
  })
})

describe('sysctl', () => {
  for (const folder of foldersWith('sysctl.txt')) {
    it(`${folder}: every non-blank line is an entry`, () => {
      const text = fixture(folder, 'sysctl.txt')
      const entries = parseSysctl(text)
      expect(entries).toHaveLength(text.split('\n').filter((l) => l.trim() !== '').length)
      expect(entries.find((e) => e.name === 'net.ipv4.fib_multipath_hash_policy')!.value).toBe('0')
    })
  }

  it('comments, blanks, CRLF, odd device names, empty and multi-word values', () => {
    const text = '# comment\r\n\r\n; also a comment\nnet.ipv4.ip_forward = 1\r\nnet.ipv4.conf.eth0/100.rp_filter=2\nnet.ipv4.ip_local_port_range = 32768\t60999\nkernel.domainname = \nnet.ipv4.conf.cali-x.rp_filter = 1'
    expect(parseSysctl(text).map((e) => [e.name, e.value, e.pos.line])).toEqual([
      ['net.ipv4.ip_forward', '1', 4],
      ['net.ipv4.conf.eth0/100.rp_filter', '2', 5],
      ['net.ipv4.ip_local_port_range', '32768\t60999', 6],
      ['kernel.domainname', '', 7],
      ['net.ipv4.conf.cali-x.rp_filter', '1', 8],
    ])
  })

  it('sysctl -a 2>&1 as a user: the keys it could not read are passed over', () => {
    const text = "net.ipv4.ip_forward = 1\nsysctl: permission denied on key 'fs.protected_fifos'\n" +
      'sysctl: reading key "net.ipv6.conf.all.stable_secret"\nnet.ipv4.fib_multipath_hash_policy = 0\n'
    expect(parseSysctl(text).map((e) => [e.name, e.pos.line])).toEqual([
      ['net.ipv4.ip_forward', 1],
      ['net.ipv4.fib_multipath_hash_policy', 4],
    ])
  })

  it('a line that is not name = value is a ParseError', () => {
    const e = parseError(() => parseSysctl('net.ipv4.ip_forward = 1\nsysctl: cannot stat /proc/sys/net/foo'))
    expect([e.file, e.line]).toEqual(['sysctl.txt', 2])
    expect(e.message).toMatch(/"name = value"/)
    expect(parseError(() => parseSysctl('= 1')).line).toBe(1)
  })
})
