// Calico's truth and `fleet` on the real lab (DESIGN §8): three full nodes (n2 and n3 program their BGP routes
// through tunl0 too), truth files written to match it, then one fault at a time. Every routedoctor run is the
// built CLI inside the node's own namespace, as a user runs it.
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {execa} from 'execa'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {BIN, ROOT} from '../helpers.js'
import {liveUnavailableReason, parseJson, type RunResult} from '../integration/live.js'
import {cleanupStaleLabs, fullPeerBirdConfig, startLab, TOPOLOGY, type BirdNode, type Lab} from '../lab/lab.js'
import {chromiumSkipReason, dumpDom, screenshot, textOf} from './chromium.js'
import {writeTruth, type TruthNode, type TruthSpec} from './truth.js'

const SCENARIO = 'bird2-healthy' as const
const reason = liveUnavailableReason(SCENARIO)
if (reason) console.warn(`fleet lab tests skipped: ${reason}`)
const chromiumSkip = chromiumSkipReason()
if (chromiumSkip && !reason) console.warn(`fleet page test skipped: ${chromiumSkip}`)

const NODES: BirdNode[] = ['n1', 'n2', 'n3']
const CLUSTER: TruthNode[] = NODES.map((n) => ({
  name: n,
  address: TOPOLOGY.nodes[n].loopback,
  blocks: [TOPOLOGY.nodes[n].block],
}))
const N2_BLOCK = TOPOLOGY.nodes.n2.block
const TRUTH_IDS = [
  'block-owner-mismatch',
  'block-affinity-conflict',
  'block-without-ipamblock',
  'block-unrouted',
  'node-address-mismatch',
  'route-owner-conflict',
  'borrowed-address-unrouted',
]

interface Pair {
  from: string
  to: string
  verdict: string
  checked: number
  blocks: Array<{prefix: string; verdict: string; findings: Array<{id: string}>}>
}
interface FleetJson {
  schema: number
  nodes: Array<{name: string; address?: string; source?: string}>
  pairs: Pair[]
  findings: Array<{id: string; nodes: string[]; prefix?: string}>
}
interface CheckJson {
  node: {kubeNode?: string; poolOrigin: string}
  prefixes: Array<{prefix: string; verdict: string; findings: Array<{id: string; title: string}>}>
  host: {findings: Array<{id: string; title: string}>}
}

describe.skipIf(reason !== null)('Calico truth and fleet on the lab', () => {
  let lab: Lab
  let tmp: string
  let truth: string

  const run = async (argv: string[], node?: BirdNode): Promise<RunResult> => {
    const r = await execa(node ? 'ip' : 'node', node ? ['netns', 'exec', lab.ns(node), 'node', BIN, ...argv] : [BIN, ...argv], {
      reject: false, stdin: 'ignore', cwd: ROOT, env: {NO_COLOR: '1', FORCE_COLOR: '0'}, timeout: 60_000,
    })
    return {stdout: String(r.stdout), stderr: String(r.stderr), exitCode: r.exitCode ?? -1}
  }
  const live = (node: BirdNode) => ['--bird-socket', lab.birdSocket(node), '--bird-conf', lab.birdConfigPath(node)]
  const check = async (node: BirdNode, spec: TruthSpec, extra: string[] = []): Promise<CheckJson> => {
    const dir = writeTruth(mkdtempSync(path.join(tmp, 'truth-')), spec)
    return parseJson<CheckJson>(
      await run(['check', ...live(node), '--calico', dir, '--json', ...extra], node),
      `check on ${node}`,
    )
  }
  const prefixIds = (c: CheckJson, prefix: string) =>
    c.prefixes.find((p) => p.prefix === prefix)?.findings.map((f) => f.id) ?? []
  const bundles = async (tag: string): Promise<string[]> =>
    Promise.all(
      NODES.map(async (n) => {
        const out = path.join(tmp, `${n}-${tag}.tar.gz`)
        const r = await run(['bundle', ...live(n), '--node', n, '--calico', truth, '-o', out], n)
        expect(r.exitCode, r.stderr).toBe(0)
        return out
      }),
    )

  beforeAll(async () => {
    await cleanupStaleLabs()
    lab = await startLab(SCENARIO, {fullNodes: true})
    tmp = mkdtempSync(path.join(os.tmpdir(), 'rd-fleet-lab-'))
    truth = writeTruth(path.join(tmp, 'truth'), {nodes: CLUSTER})
    // n2 and n3 route the other nodes' blocks through tunl0 as n1 does
    for (const node of ['n2', 'n3'] as const) {
      for (const other of NODES.filter((n) => n !== node)) {
        const hop = TOPOLOGY.nodes[other].loopback
        await lab.waitRoute(node, TOPOLOGY.nodes[other].block, (rs) => rs.some((r) => r.dev === 'tunl0' && r.gateway === hop), 20_000)
      }
    }
  }, 90_000)
  afterAll(async () => {
    await lab?.teardown()
    if (tmp) rmSync(tmp, {recursive: true, force: true})
  })

  it('a truth matching the lab adds no finding on any node, and each node finds its name by its address', async () => {
    for (const node of NODES) {
      const c = await check(node, {nodes: CLUSTER})
      expect(c.node.kubeNode).toBe(node)
      expect(c.node.poolOrigin).toBe('calico')
      const ids = [...c.prefixes.flatMap((p) => p.findings.map((f) => f.id)), ...c.host.findings.map((f) => f.id)]
      expect(ids.filter((id) => TRUTH_IDS.includes(id)), node).toEqual([])
      for (const other of NODES.filter((n) => n !== node)) expect(c.prefixes.find((p) => p.prefix === TOPOLOGY.nodes[other].block)?.verdict, `${node}: ${other}'s block`).toBe('ok')
    }
  }, 60_000)

  it('a block affine to the wrong node: block-owner-mismatch on that block, misrouted', async () => {
    const nodes = CLUSTER.map((n) => ({...n, blocks: n.name === 'n2' ? [] : n.name === 'n3' ? [...n.blocks, N2_BLOCK] : n.blocks}))
    const c = await check('n1', {nodes})
    expect(c.prefixes.find((p) => p.prefix === N2_BLOCK)?.verdict).toBe('misrouted')
    expect(prefixIds(c, N2_BLOCK)).toContain('block-owner-mismatch')
    expect(c.prefixes.find((p) => p.prefix === TOPOLOGY.nodes.n3.block)?.verdict).toBe('ok')
  }, 30_000)

  it('a pending duplicate that its node announces: block-affinity-conflict', async () => {
    // the address n2 and n3 both announce, as a /32 block of n2's with a pending affinity of n3's
    const nodes = CLUSTER.map((n) => (n.name === 'n2' ? {...n, blocks: [...n.blocks, `${TOPOLOGY.anycast.split('/')[0]}/32`]} : n))
    const anycast = `${TOPOLOGY.anycast.split('/')[0]}/32`
    const c = await check('n1', {nodes, affinities: [{cidr: anycast, node: 'n3', state: 'pending'}]})
    expect(prefixIds(c, anycast)).toEqual(expect.arrayContaining(['block-affinity-conflict', 'block-owner-mismatch']))
    expect(prefixIds(c, N2_BLOCK)).toEqual([])
  }, 30_000)

  it('an affinity without a block: block-without-ipamblock on that prefix', async () => {
    const nodes = CLUSTER.map((n) => (n.name === 'n3' ? {...n, blocks: [...n.blocks, '192.168.82.64/26']} : n))
    const c = await check('n1', {nodes, skipBlocks: ['192.168.82.64/26']})
    expect(prefixIds(c, '192.168.82.64/26')).toContain('block-without-ipamblock')
  }, 30_000)

  it('a wrong node address: node-address-mismatch, on n1 about n3 and on n3 about itself', async () => {
    const nodes = CLUSTER.map((n) => (n.name === 'n3' ? {...n, address: '172.31.30.99'} : n))
    const onN1 = await check('n1', {nodes})
    expect(onN1.host.findings.filter((f) => f.id === 'node-address-mismatch').map((f) => f.title)).toEqual([expect.stringMatching(/^n3's IPv4Address 172\.31\.30\.99/)])
    const onN3 = await check('n3', {nodes}, ['--node', 'n3'])
    expect(onN3.host.findings.find((f) => f.id === 'node-address-mismatch')?.title).toMatch(/This node's IPv4Address 172\.31\.30\.99 \(n3\)/)
  }, 30_000)

  it('conflicting programClusterRoutes: route-owner-conflict', async () => {
    const c = await check('n2', {nodes: CLUSTER, felix: 'EnabledIPIPOnly', bird: 'Enabled'})
    expect(c.host.findings.map((f) => f.id)).toContain('route-owner-conflict')
    const fine = await check('n2', {nodes: CLUSTER, felix: 'Disabled', bird: 'Enabled'})
    expect(fine.host.findings.map((f) => f.id)).not.toContain('route-owner-conflict')
  }, 30_000)

  it('fleet: six ok pairs, then exactly the broken direction once n3 routes n2\'s block to n1', async () => {
    const healthy = parseJson<FleetJson>(await run(['fleet', ...(await bundles('healthy')), '--json']), 'fleet')
    expect(healthy.nodes.map((n) => n.name)).toEqual(NODES)
    expect(healthy.pairs.map((p) => `${p.from}>${p.to}:${p.verdict}:${p.checked}`).sort()).toEqual(
      ['n1>n2', 'n1>n3', 'n2>n1', 'n2>n3', 'n3>n1', 'n3>n2'].map((p) => `${p}:ok:1`))
    expect(healthy.findings.map((f) => f.id)).not.toContain('owner-disagreement')

    // the fault: n3's BIRD writes n2's block through the tunnel to n1
    const conf = lab.birdConfigPath('n3')
    writeFileSync(conf, fullPeerBirdConfig('n3', [`if net = ${N2_BLOCK} && source = RTS_BGP then { ifname = "tunl0"; onlink = true; gw = ${TOPOLOGY.nodes.n1.loopback}; onlink = true; accept; }`]))
    expect(await lab.birdc('n3', 'configure')).toMatch(/Reconfigur/)
    await lab.waitRoute('n3', N2_BLOCK, (rs) => rs.some((r) => r.gateway === TOPOLOGY.nodes.n1.loopback), 20_000)

    const html = path.join(tmp, 'fleet.html')
    const broken = await run(['fleet', ...(await bundles('broken')), '--json', '--html', html])
    expect(broken.exitCode).toBe(1)
    const fleet = parseJson<FleetJson>(broken, 'fleet')
    const bad = fleet.pairs.filter((p) => p.verdict !== 'ok')
    expect(bad.map((p) => `${p.from}>${p.to}:${p.verdict}`)).toEqual(['n3>n2:misrouted'])
    expect(bad[0].blocks.map((b) => [b.prefix, b.verdict])).toEqual([[N2_BLOCK, 'misrouted']])
    expect(bad[0].blocks[0].findings.map((f) => f.id)).toContain('block-owner-mismatch')
    expect(fleet.findings.find((f) => f.id === 'asymmetric-pair')?.nodes).toEqual(['n3', 'n2'])
    expect(fleet.findings.find((f) => f.id === 'owner-disagreement')).toMatchObject({prefix: N2_BLOCK, nodes: ['n3'],
      title: `n3 routes ${N2_BLOCK} to ${TOPOLOGY.nodes.n1.loopback} (n1); IPAM says n2 (${TOPOLOGY.nodes.n2.loopback})`})

    const text = await run(['fleet', path.join(tmp, 'n1-broken.tar.gz'), path.join(tmp, 'n2-broken.tar.gz'), path.join(tmp, 'n3-broken.tar.gz')])
    expect(text.stdout).toMatch(/^\s+3 n3\s+ok\s+MISR\s+·$/m)
    const lines = text.stdout.split('\n')
    const matrix = lines.slice(lines.findIndex((l) => l.startsWith('from \\ to')), lines.findIndex((l) => l.startsWith('NTUN')) + 1)
    expect(matrix).toHaveLength(6)
    expect(Math.max(...matrix.map((l) => l.length))).toBeLessThanOrEqual(80)
  }, 120_000)

  // the page of the broken fleet above, in a real browser: the matrix and the broken cell's explanation; the
  // explanation is in a <details> of the static page (the browser opens it, no script), so it reads without JavaScript
  it.skipIf(chromiumSkip !== null)('the fleet page renders in headless Chromium: the matrix and the broken pair\'s explanation', async () => {
    const html = path.join(tmp, 'fleet.html')
    const page = readFileSync(html, 'utf8')
    expect(page).not.toMatch(/https?:\/\//)
    const dom = textOf(await dumpDom(html))
    const block = N2_BLOCK.replace(/\./g, '\\.')
    expect(dom).toContain('routedoctor fleet: 3 nodes, 1 broken pair')
    expect(dom).toContain('n3 → n2: 1 of 1 block broken')
    expect(dom).toMatch(new RegExp(`${block} misrouted `))
    expect(dom).toMatch(new RegExp(`block-owner-mismatch\\s*: ${block} leads to 172\\.31\\.10\\.4 \\(n1\\)`))
    expect(dom).toContain('asymmetric-pair')
    expect(page).toMatch(/<td class="v-misrouted" data-from="n3" data-to="n2"><details><summary>misrouted<\/summary>[^]*block-owner-mismatch[^]*<\/details><\/td>/)
    const png = await screenshot(html)
    expect(png.subarray(1, 4).toString()).toBe('PNG')
    expect(png.length).toBeGreaterThan(5000)
  }, 120_000)
})
