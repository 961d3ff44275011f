// fleet offline: the join over snapshot directories (the shared fixtures as node n1), its JSON shape (DESIGN §4),
// the text matrix's width, and bad input.
import {cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {execa} from 'execa'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {FleetReport} from '../../src/fleet/join.js'
import {Chalk} from 'chalk'
import {renderFleet} from '../../src/render/fleet.js'
import {runFleet, writePieces} from '../../src/services/fleet.js'
import {BIN, ROOT} from '../helpers.js'
import {BIRD16, BIRD2, fixtureDir, LAB_HEALTHY, PEER_DOWN} from '../diagnose/helpers.js'
import {chromiumSkipReason, dumpDom, textOf} from './chromium.js'
import {FIXTURE_CLUSTER, writeTruth} from './truth.js'

const chromiumSkip = chromiumSkipReason()
if (chromiumSkip) console.warn(`fleet page test skipped: ${chromiumSkip}`)

let tmp: string
let truth: string
const asNode = (fixture: string, name: string): string => {
  const dir = path.join(tmp, `${fixture}-${name}`)
  cpSync(fixtureDir(fixture), dir, {recursive: true})
  writeFileSync(path.join(dir, 'node-name.txt'), `${name}\n`)
  return dir
}

beforeAll(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'rd-fleet-'))
  truth = writeTruth(path.join(tmp, 'truth'), {nodes: FIXTURE_CLUSTER})
})
afterAll(() => rmSync(tmp, {recursive: true, force: true}))

describe('fleet over snapshot directories', () => {
  it('a healthy node sees every other node ok; the nodes without a source are said', async () => {
    const r = await runFleet({sources: [asNode(LAB_HEALTHY, 'n1')], calico: truth})
    expect(Object.keys(r)).toEqual(['schema', 'nodes', 'pairs', 'findings', 'truth'])
    expect(r.nodes.map((n) => [n.name, n.address, n.source !== undefined])).toEqual([['n1', '172.31.10.4', true], ['n2', '172.31.20.5', false], ['n3', '172.31.30.6', false]])
    expect(r.pairs.map((p) => [p.from, p.to, p.verdict, p.checked])).toEqual([['n1', 'n2', 'ok', 1], ['n1', 'n3', 'ok', 1]])
    expect(r.findings.map((f) => [f.id, f.nodes])).toEqual([['node-without-source', ['n2']], ['node-without-source', ['n3']]])
  })
  it('a node whose routes bypass the tunnel: its pairs are not-tunneled, with the blocks and why', async () => {
    const r = await runFleet({sources: [asNode(BIRD2, 'n1')], calico: truth})
    expect(r.pairs.map((p) => [p.to, p.verdict])).toEqual([['n2', 'not-tunneled'], ['n3', 'not-tunneled']])
    expect(r.pairs[0].blocks).toEqual([expect.objectContaining({prefix: '192.168.110.128/26', verdict: 'not-tunneled', findings: [expect.objectContaining({id: 'tunnel-bypassed-by-ecmp', title: expect.stringMatching(/192\.168\.110\.128\/26/)})]})])
  })
  it('the truth from the sources\' own calico/ when neither --calico nor --kube is given', async () => {
    const dir = asNode(LAB_HEALTHY, 'n1')
    cpSync(truth, path.join(dir, 'calico'), {recursive: true})
    const r = await runFleet({sources: [dir]})
    expect(r.truth?.files).toHaveLength(7)
    expect(r.pairs).toHaveLength(2)
  })
  it('a node that holds another\'s block as its own: misrouted, and the nodes disagree about the block', async () => {
    // n1's capture given as n3: it blackholes 192.168.162.128/26, n1's block by the truth
    const r = await runFleet({sources: [asNode(BIRD2, 'n1'), asNode(LAB_HEALTHY, 'n3')], calico: truth})
    expect(r.pairs.find((p) => p.from === 'n3' && p.to === 'n1')).toMatchObject({verdict: 'misrouted', blocks: [{prefix: '192.168.162.128/26', verdict: 'misrouted'}]})
    expect(r.findings.filter((f) => f.id === 'owner-disagreement')).toEqual([expect.objectContaining({prefix: '192.168.162.128/26', nodes: ['n3']})])
    // said as what happened: n3 holds it as its own block, IPAM gives it to n1
    expect(r.findings.find((f) => f.id === 'owner-disagreement')!.title).toBe('n3 treats 192.168.162.128/26 as its own block; IPAM says n1 (172.31.10.4)')
    // and the fix on n3: the leftover blackhole goes by releasing the block there
    const held = r.pairs.find((p) => p.from === 'n3' && p.to === 'n1')!.blocks[0].findings.find((f) => f.id === 'block-owner-mismatch')!
    expect(held.fix).toBe('n3 still holds 192.168.162.128/26 as its own block (a leftover `blackhole 192.168.162.128/26`), while Calico\'s IPAM gives it to n1: ' +
      'remove the blackhole by releasing the block on n3: delete the stale BlockAffinity that still gives it to n3 ' +
      '(`kubectl get blockaffinities.crd.projectcalico.org | grep 192-168-162-128-26`), so that confd drops it from BIRD\'s config and BIRD withdraws the blackhole ' +
      '(`ip route del blackhole 192.168.162.128/26` by hand lasts only until BIRD\'s next kernel scan); the route to n1 (172.31.10.4) then carries its traffic.')
    // both directions between n1 and n3 are broken: not asymmetric
    expect(r.findings.map((f) => f.id)).not.toContain('asymmetric-pair')
  })
  it('a source without the kernel\'s routes is refused as check refuses it, naming the source', async () => {
    const dir = asNode(LAB_HEALTHY, 'n1')
    for (const name of ['ip-j-d-route.json', 'ip-d-route.txt']) rmSync(path.join(dir, name), {force: true})
    await expect(runFleet({sources: [dir], calico: truth})).rejects.toMatchObject({code: 'E_NO_KERNEL_ROUTES', message: expect.stringContaining(dir)})
  })
  it('two sources of one node are a usage error', async () => {
    await expect(runFleet({sources: [asNode(LAB_HEALTHY, 'n1'), asNode(BIRD2, 'n1')], calico: truth})).rejects.toThrow(/node n1 is already given by another source/)
  })
})

describe('fleet --jobs: nodes diagnosed in worker threads', () => {
  const fleet = (args: string[], node: string[] = []) =>
    execa('node', [...node, BIN, 'fleet', ...args], {reject: false, cwd: ROOT, env: {NO_COLOR: '1'}})
  const nodes = () => [asNode(BIRD2, 'n1'), asNode(PEER_DOWN, 'n2'), asNode(LAB_HEALTHY, 'n3'), asNode(BIRD16, 'n4')]

  it('gives the JSON, text and page of one thread, with --calico and with the first source\'s own truth', async () => {
    const sources = nodes()
    const own = asNode(LAB_HEALTHY, 'n3-own')
    cpSync(truth, path.join(own, 'calico'), {recursive: true})
    for (const args of [[...sources, '--calico', truth], [own, ...sources.filter((s) => !s.includes('n3'))]]) {
      const out = async (jobs: string) => {
        const html = path.join(tmp, `jobs-${jobs}.html`)
        const json = await fleet([...args, '--jobs', jobs, '--json'])
        const text = await fleet([...args, '--jobs', jobs, '--html', html])
        return {
          json: json.stdout, jsonExit: json.exitCode, text: text.stdout, textExit: text.exitCode, html: readFileSync(html, 'utf8'),
        }
      }
      const one = await out('1')
      expect(one.jsonExit, one.json).toBe(1)
      expect((JSON.parse(one.json) as FleetReport).nodes.filter((n) => n.source !== undefined)).toHaveLength(4)
      expect(await out('3')).toEqual(one)
    }
  }, 120_000)

  it('runs the workers asked for: each thread writes its own CPU profile', async () => {
    const prof = path.join(tmp, 'prof')
    const args = [...nodes(), '--calico', truth, '--jobs', '2', '--json']
    const r = await fleet(args, ['--cpu-prof', '--cpu-prof-dir', prof])
    expect(r.exitCode, r.stderr).toBe(1)
    expect(readdirSync(prof).filter((f) => f.endsWith('.cpuprofile'))).toHaveLength(3)
  }, 60_000)

  it('a bad source in a worker: exit 2 naming the first bad one in order, its file and line, no stack trace', async () => {
    const [n1, n2, n3, n4] = nodes()
    writeFileSync(path.join(n2, 'sysctl.txt'), 'net.ipv4.ip_forward = 1\nthis is not a sysctl line\n')
    writeFileSync(path.join(n4, 'ip-j-d-route.json'), '[{')
    for (const jobs of ['1', '2']) {
      const r = await fleet([n1, n2, n3, n4, '--calico', truth, '--jobs', jobs])
      expect(r.exitCode).toBe(2)
      const expected = `${n2}/sysctl.txt:2: expected a "name = value" line, found "this is not a sysctl line"`
      expect(r.stderr).toBe(`routedoctor: ${expected}`)
    }
    const r = await fleet([n1, n4, n3, '--calico', truth, '--jobs', '2', '--json'])
    expect(r.exitCode).toBe(2)
    const message = expect.stringMatching(new RegExp(`^${n4}/ip-j-d-route\\.json:\\d+: expected`))
    expect(JSON.parse(r.stdout).error).toMatchObject({code: 'E_PARSE', message})
    expect(r.stderr).not.toMatch(/\n\s+at /)
  }, 60_000)
})

describe('fleet --html', () => {
  // the page as a browser makes it: a real headless Chromium, no network, its DOM after load read back as text
  it.skipIf(chromiumSkip !== null)('renders in headless Chromium: the matrix, the broken pair\'s blocks and why, the cluster findings', async () => {
    const html = path.join(tmp, 'offline.html')
    const r = await execa('node', [BIN, 'fleet', asNode(BIRD2, 'n1'), asNode(LAB_HEALTHY, 'n3'), '--calico', truth, '--html', html], {reject: false, cwd: ROOT, env: {NO_COLOR: '1'}})
    expect(r.exitCode, String(r.stderr)).toBe(1)
    const page = readFileSync(html, 'utf8')
    // one line says which file was written, on stderr (stdout is the report)
    expect(String(r.stderr)).toBe(`wrote ${html} (${Buffer.byteLength(page)} bytes)`)
    expect(String(r.stdout)).not.toContain(html)
    expect(page.startsWith('<!doctype html>') && page.endsWith('</body></html>\n')).toBe(true)
    expect(page).not.toMatch(/https?:\/\/|<link |src=/)
    const dom = textOf(await dumpDom(html))
    expect(dom).toContain('routedoctor fleet: 3 nodes, 3 broken pairs')
    expect(dom).toContain('n3 → n1: 1 of 1 block broken')
    expect(dom).toContain('192.168.162.128/26 misrouted')
    expect(dom).toMatch(/block-owner-mismatch\s*: 192\.168\.162\.128\/26 leads to this node \(n3\), but Calico's IPAM gives it to n1/)
    expect(dom).toContain('n1 → n2: 1 of 1 block broken 192.168.110.128/26 not-tunneled tunnel-bypassed-by-ecmp')
    expect(dom).toMatch(/error owner-disagreement n3 treats 192\.168\.162\.128\/26 as its own block; IPAM says n1/)
    expect(dom).toMatch(/warning node-without-source n2/)
    expect(dom).toContain('4 errors, 1 warning ') // the nodes table: counts agree with their nouns
    expect(page).toMatch(/<td class="v-misrouted" data-from="n3" data-to="n1"><details><summary>misrouted<\/summary>/)
  }, 120_000)
})

describe('fleet --html: the file', () => {
  it('with --json: stdout is the JSON alone, the line naming the file on stderr', async () => {
    const html = path.join(tmp, 'with-json.html')
    const r = await execa('node', [BIN, 'fleet', asNode(LAB_HEALTHY, 'n1'), '--calico', truth, '--html', html, '--json'], {reject: false, cwd: ROOT, env: {NO_COLOR: '1'}})
    expect(JSON.parse(String(r.stdout)).schema).toBe(1)
    expect(String(r.stderr)).toBe(`wrote ${html} (${readFileSync(html).length} bytes)`)
  })

  it('a file that cannot be written: exit 2 naming it, no stack', async () => {
    const html = path.join(tmp, 'no-such-dir', 'x.html')
    const r = await execa('node', [BIN, 'fleet', asNode(LAB_HEALTHY, 'n1'), '--calico', truth, '--html', html], {reject: false, cwd: ROOT, env: {NO_COLOR: '1'}})
    expect(r.exitCode).toBe(2)
    expect(String(r.stderr).trim()).toBe(`routedoctor: --html ${html}: cannot write (ENOENT)`)
  })

  it('is written in chunks as it is made: a page larger than one chunk arrives whole', async () => {
    const file = path.join(tmp, 'pieces.html')
    const pieces = Array.from({length: 3000}, (_, i) => `<tr><td>row ${i}</td><td>${'x'.repeat(60)}</td></tr>`)
    const bytes = await writePieces(file, pieces, '--html')
    const text = readFileSync(file, 'utf8')
    expect(text).toBe(pieces.map((p) => `${p}\n`).join(''))
    expect(bytes).toBe(Buffer.byteLength(text))
    expect(bytes).toBeGreaterThan(3 * 64 * 1024)
  })
})

describe('the text matrix', () => {
  const report = (n: number): FleetReport => {
    const names = Array.from({length: n}, (_, i) => `worker-node-${String(i + 1).padStart(3, '0')}.example`)
    return {
      schema: 1, truth: {files: []}, findings: [],
      nodes: names.map((name, i) => ({name, address: `10.0.${i}.1`, source: `/var/tmp/bundles/${name}.tar.gz`})),
      pairs: names.flatMap((from) => names.filter((to) => to !== from).map((to) => ({from, to, verdict: from.endsWith('002.example') && to.endsWith('001.example') ? 'misrouted' as const : 'ok' as const, checked: 3, ok: 3, blocks: []}))),
    }
  }
  it('fits 80 columns up to 12 nodes', () => {
    const lines = renderFleet(report(12), new Chalk({level: 0})).split('\n')
    const matrix = lines.slice(lines.findIndex((l) => l.startsWith('from \\ to')), lines.findIndex((l) => l.startsWith('NTUN')) + 1)
    expect(matrix).toHaveLength(12 + 3)
    expect(Math.max(...matrix.map((l) => l.length))).toBeLessThanOrEqual(80)
    expect(matrix[2]).toMatch(/^ {2}2 worker-no\s+MISR\s+·\s+(ok\s+){9}ok$/)
  })
  it('summarises beyond 12 nodes', () => {
    const text = renderFleet(report(40), new Chalk({level: 0}))
    expect(text).not.toMatch(/from \\ to/)
    expect(text).toMatch(/^pairs: 1 misrouted, 1559 ok \(matrix shown up to 12 nodes/m)
    expect(text).toMatch(/most broken from: worker-node-002\.example \(1\)/)
  })
})

describe('bad input', () => {
  it('a truth file that is not what it should be: exit 2 naming the file and the item', async () => {
    const bad = writeTruth(path.join(tmp, 'bad'), {nodes: FIXTURE_CLUSTER})
    writeFileSync(path.join(bad, 'ipamblocks.json'), JSON.stringify({kind: 'List', items: [{apiVersion: 'crd.projectcalico.org/v1', kind: 'IPAMBlock', metadata: {name: 'b1'}, spec: {cidr: 'not-a-cidr'}}]}, null, 4))
    const r = await execa('node', [BIN, 'fleet', fixtureDir(LAB_HEALTHY), '--calico', bad], {reject: false, cwd: ROOT, env: {NO_COLOR: '1'}})
    expect(r.exitCode).toBe(2)
    expect(String(r.stderr)).toBe(`routedoctor: ${bad}/ipamblocks.json:4: expected spec.cidr to be a CIDR, found "b1: not-a-cidr"`)
  }, 30_000)
})

describe('bundle --redact with the truth', () => {
  it('pseudonymises the truth too (block names included) and still diagnoses the same', async () => {
    const out = path.join(tmp, 'red.tar.gz')
    const opts = {reject: false, cwd: ROOT, env: {NO_COLOR: '1'}}
    const b = await execa('node', [BIN, 'bundle', '--from', fixtureDir(LAB_HEALTHY), '--calico', truth, '--node', 'n1', '--redact', '-o', out], opts)
    expect(b.exitCode, String(b.stderr)).toBe(0)
    const x = mkdtempSync(path.join(tmp, 'x-'))
    await execa('tar', ['xzf', out, '-C', x])
    for (const f of ['ipamblocks.json', 'blockaffinities.json', 'nodes.json']) {
      const text = readFileSync(path.join(x, 'snapshot', 'calico', f), 'utf8')
      expect(text, f).not.toMatch(/192-168-|172\.31\.(10\.4|20\.5|30\.6)\b|"n[123]"|192\.168\.(162|110)\.128/)
    }
    const c = JSON.parse(String((await execa('node', [BIN, 'check', '--from', out, '--json'], opts)).stdout))
    expect(c.node.kubeNode).toMatch(/^host-/)
    expect(c.prefixes.flatMap((p: {findings: Array<{id: string}>}) => p.findings.map((f) => f.id)).filter((id: string) => id.startsWith('block-'))).toEqual([])
  }, 60_000)
})
