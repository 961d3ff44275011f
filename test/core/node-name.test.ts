// The node line names the node wherever a source knows it (BIRD 1.6 prints no host name), else says plainly that it
// is unknown, as the rest of the header words what it could not read.
import {readdirSync} from 'node:fs'
import path from 'node:path'

import {Chalk} from 'chalk'
import {execa} from 'execa'
import {describe, expect, it} from 'vitest'

import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import type {SourceFile} from '../../src/model/types.js'
import {calicoNodeName} from '../../src/parse/bird-conf.js'
import {checkReport, explainReport} from '../../src/report/report.js'
import {renderCheck, renderExplain} from '../../src/render/text.js'
import {buildSnapshot} from '../../src/snapshot/build.js'
import {BIRD16, BIRD16_LL, BIRD2, loadFiles} from '../diagnose/helpers.js'
import {truthTexts} from '../cluster/truth.js'
import {BIN, FIXTURES, tempDir} from '../helpers.js'

const plain = new Chalk({level: 0})
const BLOCK = '192.168.110.130'

// the mesh section as calico-node's confd renders it (bird.cfg.template) on n1, whose address is 172.31.10.4
const CALICO_MESH = `
# ------------- Node-to-node mesh -------------

# For peer /host/n1/ip_addr_v4
# Skipping ourselves (172.31.10.4)


# For peer /host/n2/ip_addr_v4
protocol bgp Mesh_172_31_20_5 from bgp_template {
  neighbor 172.31.20.5 as 64512;
}
`

const nodeLine = (files: SourceFile[]) => {
  const ctx = new SnapshotIndex(buildSnapshot(files))
  const explained = renderExplain(explainReport(ctx, BLOCK), plain).split('\n')[1]
  expect(renderCheck(checkReport(ctx), plain).split('\n')[0]).toBe(explained) // check's header says the same
  return explained
}
const edit = (files: SourceFile[], name: string, text: (old: string) => string): SourceFile[] => [
  ...files.filter((f) => f.name !== name),
  {name, text: text(files.find((f) => f.name === name)?.text ?? '')},
]

describe('the node line', () => {
  it.each([BIRD16, BIRD16_LL])('%s (BIRD 1.6, no hostname file): unknown, with BIRD\'s router id, never "?"', (name) => {
    const line = nodeLine(loadFiles(name))
    expect(line).toBe('node unknown (router id 172.31.10.4)  BIRD 1.6.8  sessions 2/2 Established  tunnel tunl0')
    const json = checkReport(new SnapshotIndex(buildSnapshot(loadFiles(name)))).node
    expect(json.host).toBeUndefined()
    expect(json.routerId).toBe('172.31.10.4')
  })

  it('BIRD 2 names it from show status (Hostname is vm)', () => {
    expect(nodeLine(loadFiles(BIRD2))).toMatch(/^node vm {2}BIRD 2\.0\.12 /)
  })

  it('BIRD 1.6 with a hostname file, node-name.txt (bundle --node), or a bird.conf Calico rendered: named', () => {
    const files = loadFiles(BIRD16)
    expect(nodeLine(edit(files, 'hostname', () => 'worker-7\n'))).toMatch(/^node worker-7 {2}BIRD 1\.6\.8 /)
    expect(nodeLine(edit(files, 'node-name.txt', () => 'n1\n'))).toMatch(/^node n1 {2}BIRD 1\.6\.8 /)
    const rendered = edit(files, 'bird.conf', (conf) => conf + CALICO_MESH)
    expect(nodeLine(rendered)).toMatch(/^node n1 {2}BIRD 1\.6\.8 /)
    expect(buildSnapshot(rendered).nodeName).toBe('n1')
    // a host name wins over the config's node name
    expect(nodeLine(edit(rendered, 'hostname', () => 'worker-7\n'))).toMatch(/^node worker-7 {2}BIRD 1\.6\.8 /)
  })

  it('BIRD 1.6 with Calico\'s truth: the Node whose address is this host\'s', () => {
    const texts = truthTexts({nodes: [
      {name: 'n1', address: '172.31.10.4', blocks: ['192.168.162.128/26']},
      {name: 'n2', address: '172.31.20.5', blocks: ['192.168.110.128/26']},
      {name: 'n3', address: '172.31.30.6', blocks: ['192.168.82.0/26']},
    ]})
    const files = [...loadFiles(BIRD16), ...Object.entries(texts).map(([n, text]) => ({name: `calico/${n}`, text}))]
    expect(nodeLine(files)).toMatch(/^node n1 {2}BIRD 1\.6\.8 /)
    // without `ip addr`, by BIRD's router id, which Calico sets to the node's address
    expect(nodeLine(files.filter((f) => f.name !== 'ip-j-addr.json'))).toMatch(/^node n1 {2}BIRD 1\.6\.8 /)
  })
})

describe('a bundle of a snapshot that names no node', () => {
  it('is routedoctor-unknown-…, records no host, and its replay (redacted too) says unknown as the snapshot does', async () => {
    const run = (args: string[]) => execa('node', [BIN, ...args], {reject: false, env: {NO_COLOR: '1'}})
    const from = path.join(FIXTURES, BIRD16)
    const header = (await run(['check', '--from', from])).stdout.split('\n')[0]
    expect(header).toMatch(/^node unknown \(router id 172\.31\.10\.4\) /)
    const dir = tempDir('rd-unnamed-')
    expect((await run(['bundle', '--from', from, '-o', `${dir}/`])).exitCode).toBe(0)
    const [made] = readdirSync(dir)
    expect(made).toMatch(/^routedoctor-unknown-\d{8}-\d{6}\.tar\.gz$/)
    const bundle = path.join(dir, made)
    expect(JSON.parse((await execa('tar', ['-xzOf', bundle, 'manifest.json'])).stdout).host).toBe('')
    expect((await run(['check', '--from', bundle])).stdout.split('\n')[0]).toBe(header)
    expect((await execa('tar', ['-xzOf', bundle, 'report.md'])).stdout).toContain(header)
    // redacted: the router id is pseudonymised, and no made-up host name stands for "unknown"
    const redacted = path.join(dir, 'r.tar.gz')
    expect((await run(['bundle', '--redact', '--from', from, '-o', redacted])).exitCode).toBe(0)
    expect((await run(['check', '--from', redacted])).stdout.split('\n')[0]).toMatch(/^node unknown \(router id [\d.]+\) {2}BIRD/)
  })
})

describe('calicoNodeName', () => {
  it('reads the node a rendered config is for, in either key layout; nothing from other configs', () => {
    expect(calicoNodeName(CALICO_MESH)).toBe('n1')
    expect(calicoNodeName(CALICO_MESH.replaceAll('/host/', '/bgp/v1/host/').replaceAll('\n', '\r\n'))).toBe('n1')
    expect(calicoNodeName('# For peer /host/n2/ip_addr_v4\nprotocol bgp Mesh_172_31_20_5 from bgp_template {}\n'))
      .toBeUndefined()
    // a global peer that is this node is skipped the same way, but names no node
    expect(calicoNodeName('# For peer /global/peer_v4/172.31.10.4\n# Skipping ourselves (172.31.10.4)\n')).toBeUndefined()
    expect(calicoNodeName(loadFiles(BIRD16).find((f) => f.name === 'bird.conf')!.text!)).toBeUndefined()
  })
})
