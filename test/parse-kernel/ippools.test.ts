import {describe, expect, it} from 'vitest'

import {parseIpPools} from '../../src/parse/ippools.js'
import {fixture, foldersWith, parseError} from './helpers.js'

describe('ippools', () => {
  for (const folder of foldersWith('ippools.yaml')) {
    it(`${folder}: the IPIP pool 192.168.0.0/16`, () => {
      const pools = parseIpPools(fixture(folder, 'ippools.yaml'), 'ippools.yaml')
      const crossSubnet = folder.includes('crosssubnet') ? {crossSubnet: true} : {} // ipipMode: CrossSubnet
      expect(pools).toEqual([
        {cidr: '192.168.0.0/16', mode: 'ipip', origin: 'ippools', name: 'default-ipv4-ippool', pos: {file: 'ippools.yaml', line: 4, endLine: 17}, blockSize: 26, ...crossSubnet},
      ])
    })
  }

  it('calicoctl get ippools -o yaml: several pools, modes, disabled still counted, v6', () => {
    const text = [
      'apiVersion: projectcalico.org/v3',
      'items:',
      '- apiVersion: projectcalico.org/v3',
      '  kind: IPPool',
      '  metadata: {name: ipip-cross}',
      '  spec: {cidr: 10.244.0.0/16, ipipMode: CrossSubnet, vxlanMode: Never}',
      '- apiVersion: projectcalico.org/v3',
      '  kind: IPPool',
      '  metadata: {name: vx}',
      '  spec: {cidr: 10.245.0.0/16, ipipMode: Never, vxlanMode: Always}',
      '- kind: IPPool',
      '  metadata: {name: plain}',
      '  spec:',
      '    cidr: 10.246.0.1/16',
      '    disabled: true',
      '- kind: IPPool',
      '  metadata: {name: v6}',
      '  spec: {cidr: "fd00:10:244::/64"}',
      'kind: IPPoolList',
      'metadata:',
      '  resourceVersion: "1234"',
    ].join('\r\n')
    const pools = parseIpPools(text, 'ippools.yaml')
    expect(pools.map((p) => [p.name, p.cidr, p.mode, p.pos?.line])).toEqual([
      ['ipip-cross', '10.244.0.0/16', 'ipip', 3],
      ['vx', '10.245.0.0/16', 'vxlan', 7],
      ['plain', '10.246.0.0/16', 'none', 11],
      ['v6', 'fd00:10:244::/64', 'none', 16],
    ])
  })

  it('JSON list, single pool, bare list, multi-document, calicoctl v1, other kinds skipped', () => {
    const json = JSON.stringify({kind: 'IPPoolList', items: [{kind: 'IPPool', metadata: {name: 'a'}, spec: {cidr: '192.168.0.0/16', ipipMode: 'Always'}}]}, null, 2)
    expect(parseIpPools(json, 'ippools.json')).toMatchObject([{cidr: '192.168.0.0/16', mode: 'ipip', name: 'a', pos: {file: 'ippools.json', line: 4}}])
    expect(parseIpPools('{"kind":"IPPool","spec":{"cidr":"10.0.0.0/8","vxlanMode":"CrossSubnet"}}', 'p.json')).toMatchObject([{cidr: '10.0.0.0/8', mode: 'vxlan', pos: {line: 1}}])
    expect(parseIpPools('- spec: {cidr: 10.1.0.0/16, ipipMode: always}\n- spec: {cidr: 10.2.0.0/16}\n', 'p.yaml').map((p) => p.mode)).toEqual(['ipip', 'none'])
    const multi = 'kind: IPPool\nspec: {cidr: 10.1.0.0/16, ipipMode: Always}\n---\nkind: BGPConfiguration\nspec: {asNumber: 64512}\n---\nkind: IPPool\nspec: {cidr: 10.3.0.0/16}\n'
    expect(parseIpPools(multi, 'p.yaml').map((p) => [p.cidr, p.pos?.line])).toEqual([['10.1.0.0/16', 1], ['10.3.0.0/16', 7]])
    const v1 = '- apiVersion: v1\n  kind: ipPool\n  metadata:\n    cidr: 192.168.0.0/16\n  spec:\n    ipip:\n      enabled: true\n      mode: always\n    nat-outgoing: true\n'
    expect(parseIpPools(v1, 'p.yaml')).toMatchObject([{cidr: '192.168.0.0/16', mode: 'ipip'}])
    expect(parseIpPools('', 'p.yaml')).toEqual([])
    expect(parseIpPools('# nothing\n', 'p.yaml')).toEqual([])
    expect(parseIpPools('kind: IPPoolList\nitems: []\n', 'p.yaml')).toEqual([])
  })

  it('bad input is a ParseError with the line', () => {
    expect(parseError(() => parseIpPools('items:\n- spec: {cidr: 10.0.0.0/8\n', 'p.yaml')).file).toBe('p.yaml')
    const noCidr = parseError(() => parseIpPools('items:\n- kind: IPPool\n  spec: {ipipMode: Always}\n', 'p.yaml'))
    expect([noCidr.line, noCidr.message]).toEqual([2, expect.stringMatching(/spec\.cidr/)])
    expect(parseError(() => parseIpPools('- spec: {cidr: 10.0.0.0}\n', 'p.yaml')).message).toMatch(/CIDR/)
    expect(parseError(() => parseIpPools('just words', 'p.yaml')).message).toMatch(/IPPool object/)
    expect(parseError(() => parseIpPools('a: b: c', 'p.yaml')).line).toBe(1)
  })
})
