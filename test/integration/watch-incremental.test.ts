// `watch` re-diagnoses only what a change touches, and what it then holds is what a full `check --json`
// of the same namespace says. On n1 of the ECMP scenario, with Calico's truth (--calico DIR, files as kubectl writes
// them), through a series of changes — a block's route replaced, a block withdrawn, a MED set on a block's path (the
// route counts the same), a BGP session down and up, the tunnel down and up, a device carrying a block's route down
// and away, the overlay applied, the truth changed to give a block to another node — the agent's /state (every
// prefix's verdict and finding ids, and the host findings) is compared with check's after each. A route's change is
// diagnosed alone (the `prefixes` series of the duration histogram counts it, the `node` one does not), and a device
// without routes not at all.
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {execa} from 'execa'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {type TruthNode, writeTruth} from '../cluster/truth.js'
import {type BirdNode, cleanupStaleLabs, type Lab, peerBirdConfig, startLab, TOPOLOGY} from '../lab/lab.js'
import {type CheckJson, liveFlags, liveUnavailableReason, parseJson, POOL, rd, sleep} from './live.js'
import {startWatchAgent, until, type WatchAgentRun} from './watch-agent.js'

const PORT = 21181
const N2_BLOCK = TOPOLOGY.nodes.n2.block
const N3_BLOCK = TOPOLOGY.nodes.n3.block
const N2_SESSION = `Mesh_${TOPOLOGY.nodes.n2.loopback.replaceAll('.', '_')}`
const NODES: BirdNode[] = ['n1', 'n2', 'n3']
const CLUSTER: TruthNode[] = NODES.map((n) => ({
  name: n,
  address: TOPOLOGY.nodes[n].loopback,
  blocks: [TOPOLOGY.nodes[n].block],
}))
const reason = liveUnavailableReason('bird2-ecmp')
if (reason) console.warn(`watch's incremental diagnosis in the lab skipped: ${reason}`)

interface Seen {
  prefixes: Record<string, string> // prefix → verdict and finding ids
  host: string[]
}

// key order aside: check lists prefixes in address order, /state in text order
const canonical = (s: Seen): string => JSON.stringify({prefixes: Object.entries(s.prefixes).sort(), host: s.host})
const prefixLine = (p: {verdict: string; findings: Array<{id: string}>}) => [p.verdict, ...p.findings.map((f) => f.id).sort()].join(' ')

describe.skipIf(reason !== null)('watch\'s incremental diagnosis equals a full check', {timeout: 300_000}, () => {
  let lab: Lab
  let dir: string
  let agent: WatchAgentRun
  let truth: string

  async function get(pathname: string): Promise<string> {
    const r = await execa('ip', ['netns', 'exec', lab.ns('n1'), 'node', path.join(dir, 'get.mjs'), `http://127.0.0.1:${PORT}${pathname}`])
    return r.stdout
  }

  async function agentSeen(): Promise<Seen> {
    const s = JSON.parse(await get('/state'))
    return {
      prefixes: Object.fromEntries(s.prefixes.map((p: any) => [p.prefix, prefixLine(p)])),
      host: s.host.findings.map((f: {id: string}) => f.id).sort(),
    }
  }

  async function checkSeen(): Promise<Seen> {
    const c = parseJson<CheckJson>(await rd(lab, ['check', ...liveFlags(lab), ...POOL, '--calico', truth, '--json']), 'check')
    return {
      prefixes: Object.fromEntries(c.prefixes.map((p) => [p.prefix, prefixLine(p)])),
      host: c.host.findings.map((f) => f.id).sort(),
    }
  }

  const diagnoses = async (scope: 'node' | 'prefixes') =>
    Number(new RegExp(`^routedoctor_diagnosis_duration_seconds_count\\{scope="${scope}"\\} (\\d+)`, 'm').exec(await get('/metrics'))?.[1] ?? -1)

  /** Waits until the agent holds what check says (both settle within seconds of a change); returns it. */
  async function equalToCheck(what: string): Promise<Seen> {
    let last: {agent: Seen; check: Seen} | undefined
    try {
      return await until(
        `the agent's state to equal check's after ${what}`,
        async () => {
          const check = await checkSeen()
          await sleep(2500) // the agent's debounce and BIRD poll after the last change check saw
          const seen = await agentSeen()
          last = {agent: seen, check}
          return canonical(seen) === canonical(check) && canonical(await checkSeen()) === canonical(check)
            ? seen
            : undefined
        },
        60_000,
      )
    } catch (error) {
      expect(last?.agent, `${(error as Error).message}`).toEqual(last?.check)
      throw error
    }
  }

  const ip = (...args: string[]) => execa('ip', ['-n', lab.ns('n1'), ...args])

  beforeAll(async () => {
    await cleanupStaleLabs()
    dir = mkdtempSync(path.join(os.tmpdir(), 'rd-incremental-'))
    writeFileSync(path.join(dir, 'get.mjs'), `const r = await fetch(process.argv[2]); process.stdout.write(await r.text())\n`)
    truth = writeTruth(path.join(dir, 'truth'), {nodes: CLUSTER})
    lab = await startLab('bird2-ecmp')
    agent = startWatchAgent(lab, ['--interval', '1', '--listen', `127.0.0.1:${PORT}`, '--calico', truth, '--truth-interval', '2'])
    await until('the started line', () => agent.lines.find((l) => l.kind === 'started'), 120_000)
  }, 180_000)

  afterAll(async () => {
    agent?.process.kill('SIGKILL')
    await Promise.allSettled([agent?.process])
    await lab?.teardown()
    if (dir) rmSync(dir, {recursive: true, force: true})
  })

  it('starts equal to check', async () => {
    const seen = await equalToCheck('the start')
    expect(seen.prefixes[N2_BLOCK]).toMatch(/^not-tunneled /)
  })

  it('a block\'s route replaced, then put back: that prefix is diagnosed alone, and the state equals check', async () => {
    const node = await diagnoses('node')
    const prefixes = await diagnoses('prefixes')
    await ip('route', 'add', N2_BLOCK, 'via', TOPOLOGY.nodes.n2.loopback, 'dev', 'tunl0', 'onlink', 'metric', '10', 'proto', 'static')
    const seen = await equalToCheck('a route replaced')
    expect(seen.prefixes[N2_BLOCK]).not.toMatch(/^not-tunneled/)
    await ip('route', 'del', N2_BLOCK, 'metric', '10')
    expect((await equalToCheck('the route put back')).prefixes[N2_BLOCK]).toMatch(/^not-tunneled /)
    expect(await diagnoses('prefixes')).toBeGreaterThan(prefixes)
    expect(await diagnoses('node')).toBe(node)
    expect(agent.lines.some((l) => l.kind === 'verdict' && l.prefix === N2_BLOCK && l.from === 'not-tunneled')).toBe(true)
  })

  it('a block withdrawn by its owner, then announced again', async () => {
    await lab.reconfigure('n3', peerBirdConfig('n3', [TOPOLOGY.anycast]))
    // Calico's IPAM still gives the block to n3: it is missing here, and unrouted
    expect((await equalToCheck('n3 withdrawing its block')).prefixes[N3_BLOCK]).toMatch(/^missing .*block-unrouted/)
    await lab.reconfigure('n3', peerBirdConfig('n3'))
    expect((await equalToCheck('n3 announcing its block again')).prefixes[N3_BLOCK]).toMatch(/^not-tunneled /)
  })

  it('a path changing an attribute, the route counts the same (n3 sets a MED on its block): that prefix is diagnosed again, not the whole node', async () => {
    const node = await diagnoses('node')
    const prefixes = await diagnoses('prefixes')
    const med = peerBirdConfig('n3').replace('  calico_aggr();', `  if ( net = ${N3_BLOCK} ) then bgp_med = 5;\n  calico_aggr();`)
    expect(med).toContain('bgp_med')
    await lab.reconfigure('n3', med)
    await until('a diagnosis of the changed prefix', async () => ((await diagnoses('prefixes')) > prefixes ? true : undefined), 30_000)
    expect(await diagnoses('node')).toBe(node)
    await lab.reconfigure('n3', peerBirdConfig('n3'))
    expect((await equalToCheck('n3\'s MED gone')).prefixes[N3_BLOCK]).toMatch(/^not-tunneled /)
  })

  it('a BGP session down, then up', async () => {
    await lab.birdc('n1', `disable ${N2_SESSION}`)
    expect((await equalToCheck('the session to n2 down')).host).toContain('peer-down')
    await lab.birdc('n1', `enable ${N2_SESSION}`)
    await lab.waitEstablished('n1')
    expect((await equalToCheck('the session to n2 up')).host).not.toContain('peer-down')
  })

  it('the tunnel device down, then up', async () => {
    await ip('link', 'set', 'tunl0', 'down')
    expect((await equalToCheck('tunl0 down')).host).toContain('tunnel-device-down')
    await ip('link', 'set', 'tunl0', 'up')
    expect((await equalToCheck('tunl0 up')).host).not.toContain('tunnel-device-down')
  })

  it('a device without routes comes and goes unnoticed; one carrying a pool route goes down: its prefix alone', async () => {
    const node = await diagnoses('node')
    const prefixes = await diagnoses('prefixes')
    await ip('link', 'add', 'rdv0', 'type', 'veth', 'peer', 'name', 'rdv1')
    await ip('link', 'set', 'rdv1', 'up')
    await ip('link', 'set', 'rdv0', 'up')
    await sleep(3000) // the debounce, twice over
    expect(await diagnoses('node')).toBe(node)
    expect(await diagnoses('prefixes')).toBe(prefixes)
    // the block tunnelled, then routed through the new device in front of that
    await ip('route', 'add', N2_BLOCK, 'via', TOPOLOGY.nodes.n2.loopback, 'dev', 'tunl0', 'onlink', 'metric', '10', 'proto', 'static')
    expect((await equalToCheck('the block tunnelled')).prefixes[N2_BLOCK]).not.toMatch(/^not-tunneled/)
    await ip('route', 'add', N2_BLOCK, 'dev', 'rdv0', 'metric', '5')
    expect((await equalToCheck('the block routed through the new device')).prefixes[N2_BLOCK]).toMatch(/^not-tunneled /)
    // the kernel flushes the device's routes without a notification: the tunnelled route is in force again
    await ip('link', 'set', 'rdv0', 'down')
    expect((await equalToCheck('the device down')).prefixes[N2_BLOCK]).not.toMatch(/^not-tunneled/)
    await ip('link', 'del', 'rdv0')
    await ip('route', 'del', N2_BLOCK, 'metric', '10')
    expect((await equalToCheck('the device gone, the tunnelled route deleted')).prefixes[N2_BLOCK]).toMatch(/^not-tunneled /)
    expect(await diagnoses('node')).toBe(node)
    expect(await diagnoses('prefixes')).toBeGreaterThan(prefixes)
  })

  it('the overlay applied by fix --apply', async () => {
    const r = await rd(lab, ['fix', '--apply', '--yes', '--watch', '0', '--journal-dir', dir, ...liveFlags(lab), ...POOL, '--json'])
    expect(r.exitCode, r.stderr).toBe(0)
    expect((await equalToCheck('the overlay applied')).prefixes[N2_BLOCK]).toMatch(/^ok .*overlay-active/)
  })

  it('Calico\'s truth read again: a block given to another node is misrouted, as check says with the same truth', async () => {
    writeTruth(truth, {nodes: CLUSTER.map((n) => ({...n, blocks: n.name === 'n3' ? [...n.blocks, N2_BLOCK] : n.name === 'n2' ? [] : n.blocks}))})
    const seen = await equalToCheck('the truth changed')
    expect(seen.prefixes[N2_BLOCK]).toMatch(/^misrouted .*block-owner-mismatch/)
  })
})
