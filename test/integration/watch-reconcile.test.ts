// `watch --reconcile` in the lab: on n1 of the ECMP scenario (three blocks not tunneled) the agent
// writes the fix service's plan once it has held for --settle seconds, through the fix service's apply (a
// journal each), the blocks become ok; a process that keeps deleting one of its routes is a route war, reported
// and backed off from; a block that moves from n2 to n3 takes its correction along, and a block released by every
// node has its correction withdrawn (journaled); SIGTERM with --cleanup-on-exit, during a whole-node diagnosis held
// by a stopped BIRD, withdraws what the run wrote and exits 0 without waiting for it; a second agent's reconcile
// plans in a worker thread: held by a stopped BIRD, the agent answers /healthz and SIGTERM ends the plan at once.
// The pool's rule that an earlier `fix --apply --rule-priority 100` left stays the pool's one rule, and the journals
// an earlier run left in --journal-dir are pruned to --journal-keep. An agent started as the DaemonSet runs it (the
// pools from --kube alone) while the API server is down writes nothing.
import {existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {execa, type ResultPromise} from 'execa'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {cleanupStaleLabs, type Lab, peerBirdConfig, startLab, TOPOLOGY} from '../lab/lab.js'
import {liveUnavailableReason, sleep} from './live.js'
import {startWatchAgent, until} from './watch-agent.js'

const N3_BLOCK = TOPOLOGY.nodes.n3.block
const N2_BLOCK = TOPOLOGY.nodes.n2.block
const N3 = TOPOLOGY.nodes.n3.loopback
const PORT = 21179
const PORT2 = 21180
const OLD_JOURNAL = `${JSON.stringify({schema: 3, tool: 'routedoctor', time: '2026-11-01T10:00:00.000Z', host: 'n1', pid: 4242,
  rules: [], changes: []}, null, 2).replace(/\n}$/, ',')}\n  "state": "applied",\n  "history": []\n}\n`
const reason = liveUnavailableReason('bird2-ecmp')
if (reason) console.warn(`watch --reconcile in the lab skipped: ${reason}`)

describe.skipIf(reason !== null)('watch --reconcile in the lab', {timeout: 120_000}, () => {
  let lab: Lab
  let dir: string
  let agent: ResultPromise
  let fighter: ResultPromise | undefined
  let second: ResultPromise | undefined
  let dir2: string | undefined
  let lines: any[] = []
  let stderr = () => ''

  const ours = async () => (await lab.routes('n1')).filter((r) => r.protocol === '158')

  beforeAll(async () => {
    await cleanupStaleLabs()
    dir = mkdtempSync(path.join(os.tmpdir(), 'rd-reconcile-'))
    // an earlier run's journals, applied: older than any this run writes
    for (const minute of ['01', '02', '03'])
      writeFileSync(path.join(dir, `routedoctor-journal-20261101T10${minute}00Z-4242.json`), OLD_JOURNAL)
    lab = await startLab('bird2-ecmp')
    // where `fix --apply --rule-priority 100` puts the pool's rule
    await lab.exec('n1', ['ip', 'rule', 'add', 'priority', '100', 'to', '192.168.0.0/16', 'lookup', '1158'])
    const run = startWatchAgent(lab, ['--interval', '1', '--reconcile', '--settle', '8', '--write-interval', '2', '--journal-dir', dir,
      '--journal-keep', '2', '--cleanup-on-exit', '--listen', `127.0.0.1:${PORT}`])
    ;({process: agent, lines, stderr} = run)
  }, 120_000)

  afterAll(async () => {
    fighter?.kill('SIGKILL')
    agent?.kill('SIGKILL')
    second?.kill('SIGKILL')
    await Promise.allSettled([agent, fighter, second])
    await lab?.teardown()
    if (dir) rmSync(dir, {recursive: true, force: true})
    if (dir2) rmSync(dir2, {recursive: true, force: true})
  })

  it('writes the plan once it held, journaled, and the blocks become ok', async () => {
    const started = await until('the started line', () => lines.find((l) => l.kind === 'started'))
    expect(started.verdicts['not-tunneled']).toBe(3)
    const applied = await until('the applied line', () => lines.find((l) => l.kind === 'reconcile' && l.op === 'applied'))
    expect(applied.routes).toBe(3)
    expect(existsSync(applied.journal)).toBe(true)
    expect(path.dirname(applied.journal)).toBe(dir)
    await until('three blocks ok', () => lines.filter((l) => l.kind === 'verdict' && l.to === 'ok').length === 3 ? true : undefined)
    const routes = await ours()
    expect(routes.map((r) => r.dst).sort()).toEqual(['192.168.110.128/26', '192.168.200.10', N3_BLOCK])
    expect(routes.find((r) => r.dst === N3_BLOCK)).toMatchObject({gateway: '172.31.30.6', dev: 'tunl0'})
    // the agent counts them from the kernel's notifications
    const r = await execa('ip', ['netns', 'exec', lab.ns('n1'), 'node', '-e',
      `fetch('http://127.0.0.1:${PORT}/metrics').then((r) => r.text()).then((t) => process.stdout.write(t))`])
    expect(r.stdout).toMatch(/^routedoctor_overlay_routes 3$/m)
    // BIRD's own routes are untouched beside ours
    expect((await lab.routes('n1')).filter((r) => r.dst === N3_BLOCK && r.protocol === 'bird')).toHaveLength(1)
    // the pool's rule at 100 is its rule: not a second one at 32000
    const rules = (await lab.exec('n1', ['ip', 'rule', 'show'])).stdout.split('\n').filter((l) => l.includes('lookup 1158'))
    expect(rules.map((l) => l.trim().replace(/\s+/g, ' '))).toEqual(['100: from all to 192.168.0.0/16 lookup 1158'])
    // --journal-keep 2: the earlier run's two oldest go at this run's first write; this run's stay (--cleanup-on-exit)
    const journals = readdirSync(dir).filter((f) => f.endsWith('.json'))
    expect(journals).toContain(path.basename(applied.journal))
    expect(journals.filter((f) => f.includes('-4242.json'))).not.toContain('routedoctor-journal-20261101T100100Z-4242.json')
    expect(journals.filter((f) => f.includes('-4242.json'))).not.toContain('routedoctor-journal-20261101T100200Z-4242.json')
  })

  // as the DaemonSet runs it: pools and owners from --kube alone (no --pool, BIRD's config not readable), restarted
  // while the API server is down: without the truth it knows no pools, and a plan without pools withdraws everything
  it('an agent started with --kube while the API server is down writes nothing: the overlay stays', async () => {
    const dir3 = mkdtempSync(path.join(os.tmpdir(), 'rd-reconcile-'))
    const kubeconfig = path.join(dir3, 'kubeconfig')
    writeFileSync(kubeconfig, ['apiVersion: v1', 'kind: Config', 'current-context: t',
      'clusters: [{name: t, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
      'users: [{name: u, user: {token: t}}]', 'contexts: [{name: t, context: {cluster: t, user: u}}]', ''].join('\n'))
    const before = (await ours()).map((r) => r.dst).sort()
    expect(before).toHaveLength(3)
    const run = startWatchAgent(lab, ['--interval', '1', '--reconcile', '--settle', '1', '--write-interval', '1', '--journal-dir',
      dir3], {flags: ['--bird-socket', lab.birdSocket('n1'), '--bird-conf', path.join(dir3, 'none.conf'), '--kube', '--node', 'n1'],
      env: {KUBECONFIG: kubeconfig, HOME: dir3}})
    try {
      await until('the started line', () => run.lines.find((l) => l.kind === 'started'))
      expect(run.lines).toContainEqual(expect.objectContaining({kind: 'source', source: 'calico', op: 'failed'}))
      await sleep(5000) // past --settle and several --write-interval: a plan would have been written by now
      expect(run.lines.filter((l) => l.kind === 'reconcile'), run.stderr()).toEqual([])
      expect((await ours()).map((r) => r.dst).sort()).toEqual(before)
      expect(readdirSync(dir3).filter((f) => f.endsWith('.json'))).toEqual([])
    } finally {
      run.process.kill('SIGTERM')
      expect((await run.process).exitCode, run.stderr()).toBe(0)
      rmSync(dir3, {recursive: true, force: true})
    }
  })

  it('a writer that keeps deleting one of its routes is a route war: reported and backed off from, not fought', async () => {
    const appliedBefore = lines.filter((l) => l.kind === 'reconcile' && l.op === 'applied').length
    fighter = execa('ip', ['netns', 'exec', lab.ns('n1'), 'sh', '-c',
      `while true; do ip route del ${N3_BLOCK} table 1158 proto 158 2>/dev/null; sleep 0.2; done`], {reject: false})
    const war = await until('the route-war line', () => lines.find((l) => l.kind === 'reconcile' && l.op === 'route-war'), 45_000)
    expect(war.prefix).toBe(N3_BLOCK)
    expect(war.detail).toMatch(/backing off for 60 s/)
    const writes = lines.filter((l) => l.kind === 'reconcile' && (l.op === 'applied' || l.op === 'failed')).length
    await sleep(6000) // three write intervals: nothing more is written for that block
    expect(lines.filter((l) => l.kind === 'reconcile' && (l.op === 'applied' || l.op === 'failed')).length).toBe(writes)
    expect(appliedBefore).toBeGreaterThan(0)
    fighter.kill('SIGKILL')
    await fighter
    fighter = undefined
  })

  it('the overlay follows a block that moves from n2 to n3, and is withdrawn when the block is released: each write journaled', async () => {
    const applied = () => lines.filter((l) => l.kind === 'reconcile' && l.op === 'applied')
    const overlayOf = async (dst: string) => (await ours()).filter((r) => r.dst === dst)
    const before = applied().length
    await lab.reconfigure('n2', peerBirdConfig('n2', [TOPOLOGY.anycast]))
    await lab.reconfigure('n3', peerBirdConfig('n3', [N3_BLOCK, N2_BLOCK, TOPOLOGY.anycast]))
    const moved = await until('the overlay route to n3', async () => {
      const r = await overlayOf(N2_BLOCK)
      // the applied line comes once apply has watched for a route war
      return r.length === 1 && r[0].gateway === N3 && applied().length > before ? r[0] : undefined
    })
    expect(moved).toMatchObject({dev: 'tunl0', table: '1158'})
    expect(moved.flags).toContain('onlink')
    const followed = applied().slice(before)
    expect(followed.length).toBeGreaterThan(0)
    for (const a of followed) expect(existsSync(a.journal)).toBe(true)
    await until('the block ok again', () => lines.some((l) => l.kind === 'verdict' && l.prefix === N2_BLOCK && l.to === 'ok' &&
      lines.indexOf(l) > lines.indexOf(followed[0])) ? true : undefined)
    // released: no node announces it; the correction is withdrawn, and BIRD (which never learns the overlay) has
    // nothing
    const beforeRelease = applied().length
    await lab.reconfigure('n3', peerBirdConfig('n3', [N3_BLOCK, TOPOLOGY.anycast]))
    await until('the overlay route withdrawn', async () => ((await overlayOf(N2_BLOCK)).length === 0 && applied().length > beforeRelease ? true : undefined))
    const withdrawn = applied().slice(beforeRelease)
    expect(withdrawn.length).toBeGreaterThan(0)
    const journaled = withdrawn.map((a) => JSON.parse(readFileSync(a.journal, 'utf8')))
    expect(JSON.stringify(journaled)).toContain(N2_BLOCK) // the route it deleted is in the journal, for --revert
    expect((await lab.routes('n1')).filter((r) => r.dst === N2_BLOCK)).toEqual([])
    await until('the block gone from the agent\'s lines', () => lines.some((l) => l.kind === 'verdict' && l.prefix === N2_BLOCK &&
      l.to === 'absent') ? true : undefined)
  })

  it('SIGTERM during a whole-node diagnosis (its collection held by a stopped BIRD), with --cleanup-on-exit, withdraws what the run wrote and exits 0 at once', async () => {
    // the tunnel device changing asks for a diagnosis of the whole node, in the worker; n1's BIRD stopped leaves its
    // collection waiting for BIRD's answer (its timeout: 10 s)
    const bird = Number(readFileSync(path.join(lab.dir, 'n1.pid'), 'utf8'))
    process.kill(bird, 'SIGSTOP')
    try {
      await lab.exec('n1', ['ip', 'link', 'set', 'tunl0', 'mtu', '1400'])
      await sleep(2000) // the debounce: the diagnosis is under way, waiting for BIRD
      const t0 = Date.now()
      agent.kill('SIGTERM')
      // well before BIRD's timeout could end the diagnosis: the agent did not wait for it
      const r = await Promise.race([agent, sleep(6000).then(() => undefined)])
      expect(r, `the agent exited after SIGTERM with BIRD stopped; ${stderr()} ${JSON.stringify(lines.slice(-6))}`).toBeDefined()
      expect(r!.exitCode, `${r!.signal} after ${Date.now() - t0} ms ${stderr()} ${JSON.stringify(lines.slice(-6))} ${JSON.stringify((r as any).isForcefullyTerminated)}`).toBe(0)
    } finally {
      process.kill(bird, 'SIGCONT')
    }
    expect(lines.filter((l) => l.kind === 'reconcile' && l.op === 'withdrawn').length).toBeGreaterThan(0)
    expect(await ours()).toEqual([])
    expect(readdirSync(dir).filter((f) => f.endsWith('.json')).length).toBeGreaterThan(0)
  })

  it('a reconcile plans in a worker thread: held by a stopped BIRD, the agent answers /healthz, and SIGTERM with --cleanup-on-exit ends the plan, withdraws and exits 0 at once', async () => {
    dir2 = mkdtempSync(path.join(os.tmpdir(), 'rd-reconcile-'))
    const run = startWatchAgent(lab, ['--interval', '1', '--reconcile', '--settle', '8', '--write-interval', '2',
      '--journal-dir', dir2, '--cleanup-on-exit', '--listen', `127.0.0.1:${PORT2}`])
    second = run.process
    // one of its routes deleted: diagnosed by the prefix (BIRD answering), a verdict line and a plan (a full
    // collection) to put it back; once that plan has held --settle (8 s), it is made again before it is written
    // a block its correction made ok
    const {prefix} = await until('a block made ok', () => run.lines.find((l) => l.kind === 'verdict' && l.to === 'ok' &&
      !l.prefix.endsWith('/32')))
    const seen = run.lines.length
    await lab.exec('n1', ['ip', 'route', 'del', prefix, 'table', '1158', 'proto', '158'])
    await until('the deleted route\'s verdict line', () =>
      run.lines.slice(seen).find((l) => l.kind === 'verdict' && l.prefix === prefix && l.to !== 'ok'))
    await sleep(1500) // the first plan made
    const bird = Number(readFileSync(path.join(lab.dir, 'n1.pid'), 'utf8'))
    process.kill(bird, 'SIGSTOP')
    try {
      await sleep(8500) // past --settle: the second plan is under way, its collection waiting for BIRD (10 s)
      const health = await execa('ip', ['netns', 'exec', lab.ns('n1'), 'node', '-e',
        `fetch('http://127.0.0.1:${PORT2}/healthz').then(async (r) => process.stdout.write(r.status + ' ' + await r.text()))`])
      expect(health.stdout).toBe('200 ok') // execa drops the last newline
      const t0 = Date.now()
      second.kill('SIGTERM')
      // well before BIRD's timeout could end the plan's collection: the agent did not wait for it
      const r = await Promise.race([second, sleep(6000).then(() => undefined)])
      expect(r, `the agent exited after SIGTERM with BIRD stopped; ${run.stderr()} ${JSON.stringify(run.lines.slice(-6))}`).toBeDefined()
      expect(r!.exitCode, `${r!.signal} after ${Date.now() - t0} ms ${run.stderr()}`).toBe(0)
    } finally {
      process.kill(bird, 'SIGCONT')
    }
    expect(run.lines.filter((l) => l.kind === 'reconcile' && l.op === 'withdrawn').length).toBeGreaterThan(0)
    // a plan ended by the stop is no failure
    expect(run.lines.filter((l) => l.kind === 'reconcile' && l.op === 'failed')).toEqual([])
    expect(await ours()).toEqual([])
  })
})
