// The watch agent's own scheduling, with its sources replaced: the kernel view (notifications are handed in by the
// test), the worker's whole-node diagnosis (held until the test lets it finish), BIRD's socket (answers given by the
// test) and the diagnosis of touched prefixes (recorded). What a change touches is judged by the base of the
// diagnosis that is current once it can be; BIRD is polled once at a time; a path that changes with the same route
// counts is seen; stop ends a whole-node diagnosis under way.
import {afterEach, beforeEach, describe, expect, it, vi} from 'vitest'

import type {NodeDiagnosis} from '../../src/agent/diagnose.js'
import type {NodeBase} from '../../src/agent/incremental.js'
import type {KernelViewHandlers} from '../../src/agent/kernel-view.js'
import {emptyState} from '../../src/agent/state.js'
import {ipv4Pools} from '../../src/model/snapshot-index.js'
import type {KernelEvent} from '../../src/netlink/events.js'

const h = vi.hoisted(() => ({
  handlers: undefined as KernelViewHandlers | undefined,
  nodeDiagnoses: [] as Array<{resolve: (d: unknown) => void; reject: (e: Error) => void}>,
  birdTexts: [] as string[],
  birdCommands: [] as string[],
  birdHold: undefined as Promise<void> | undefined,
  prefixCalls: [] as Array<{prefixes: string[]; base: unknown}>,
  hashes: 0,
  nextHashes: undefined as unknown,
  truthReads: 0,
  truthFails: true, // the API server down
  prefixLines: [] as Array<{prefix: string; verdict: string; findings: []}>,
}))

vi.mock('../../src/agent/kernel-view.js', () => ({
  KernelView: class {
    readonly own = {keys: new Set()}
    readonly store = {loaded: true, keysOnDevices: () => []}
    readonly busy = false
    constructor(_protocol: number, on: KernelViewHandlers) {
      h.handlers = on
    }
    async start(): Promise<void> {}
    async settled(): Promise<void> {}
    reread(): void {}
    close(): void {}
  },
}))

vi.mock('../../src/agent/node-worker.js', () => ({
  diagnoseNodeApart: () => new Promise((resolve, reject) => h.nodeDiagnoses.push({resolve, reject})),
  birdHashesApart: async () => {
    h.hashes++
    return h.nextHashes ?? {keys: new Float64Array(0), hashes: new Uint32Array(0), other: new Map()}
  },
  stopWorkers: () => {
    for (const d of h.nodeDiagnoses.splice(0)) d.reject(new Error('the agent is stopping'))
  },
}))

vi.mock('../../src/collect/bird-socket.js', () => ({
  findBirdSocket: (p: string) => p,
  BirdSocket: {
    connect: async () => ({
      hello: 'BIRD 2.0.12 ready.',
      async command(c: string) {
        h.birdCommands.push(c)
        await h.birdHold
        return h.birdTexts.shift() ?? ''
      },
      close() {},
    }),
  },
}))

vi.mock('../../src/agent/incremental.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../src/agent/incremental.js')>()),
  diagnosePrefixes: async (prefixes: string[], base: unknown) => {
    h.prefixCalls.push({prefixes, base})
    return {lines: h.prefixLines}
  },
}))

vi.mock('../../src/services/load.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../src/services/load.js')>()),
  loadClusterTruth: async () => {
    h.truthReads++
    if (h.truthFails) throw new Error('--kube: https://127.0.0.1:6443: cannot list the API groups (ECONNREFUSED)')
    return {files: [], truth: {reads: h.truthReads}}
  },
}))

const {WatchAgent} = await import('../../src/agent/watch.js')

const baseWith = (pool: string): NodeBase => ({
  files: [],
  origin: {kind: 'live'},
  v4Pools: ipv4Pools([{cidr: pool, mode: 'ipip', origin: 'flag'}]),
  v6Pools: false,
  nextHops: [],
  tunnelDev: 'tunl0',
  uplinks: ['eth0'],
})
const diagnosis = (base: NodeBase, birdHashes = hashesOf([])): NodeDiagnosis =>
  ({state: emptyState(), base, birdHashes})
/** BIRD's hashes of IPv4 blocks: [prefix, hash of its `show route all` lines]. */
function hashesOf(blocks: Array<[string, number]>): NodeDiagnosis['birdHashes'] {
  const keyOf = (prefix: string) => {
    const [addr, len] = prefix.split('/')
    return addr.split('.').reduce((v, o) => v * 256 + Number(o), 0) * 64 + Number(len)
  }
  const sorted = blocks.map(([p, hash]) => [keyOf(p), hash]).sort((a, b) => a[0] - b[0])
  return {keys: Float64Array.from(sorted, (b) => b[0]), hashes: Uint32Array.from(sorted, (b) => b[1]), other: new Map()}
}
const routeEvent = (dst: string): KernelEvent =>
  ({kind: 'route', op: 'new', family: 'inet', dst, table: 254}) as KernelEvent

const protocols = (routes: number, accepted: number) => `BIRD 2.0.12 ready.
Name       Proto      Table      State  Since         Info
Mesh_172_31_20_5 BGP        ---        up     10:16:13.826  Established
  BGP state:          Established
    Neighbor address: 172.31.20.5
  Channel ipv4
    State:          UP
    Routes:         ${routes} imported, 0 exported, ${routes} preferred
    Route change stats:     received   rejected   filtered    ignored   accepted
      Import updates:            ${accepted + 3}          0          0          3          ${accepted}
      Import withdraws:              0          0        ---          0          0
`

function newAgent(reconcile = false, truth?: {error?: string}) {
  const emitted: any[] = []
  const agent = new WatchAgent({
    ...(truth ? {truth: {from: {kube: true}, intervalSeconds: 300, ...truth}} : {}),
    source: {birdSocket: '/nonexistent/bird.ctl'},
    intervalSeconds: 5,
    debounceMs: 10,
    flapCount: 5,
    flapWindowSeconds: 60,
    fixProtocol: '252',
    ...(reconcile
      ? {reconcile: {settleSeconds: 1, writeIntervalSeconds: 1, journalDir: '/nonexistent', journalKeep: 100, cleanupOnExit: true}}
      : {}),
  }, (c) => emitted.push(c))
  return {agent, emitted}
}

/** Lets timers and promises run until `done()` holds (the agent's debounce is fake time). */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await vi.advanceTimersByTimeAsync(20)
  expect(done()).toBe(true)
}

describe('the watch agent', () => {
  beforeEach(() => {
    vi.useFakeTimers()
    h.nodeDiagnoses.length = 0
    h.birdTexts.length = 0
    h.birdCommands.length = 0
    h.prefixCalls.length = 0
    h.birdHold = undefined
    h.hashes = 0
    h.nextHashes = undefined
    h.truthReads = 0
    h.truthFails = true
    h.prefixLines = []
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  /** Started: its first whole-node diagnosis answered with `base`. */
  async function started(base: NodeBase, reconcile = false, truth?: {error?: string}) {
    const a = newAgent(reconcile, truth)
    if (a.agent.reconciler) vi.spyOn(a.agent.reconciler, 'reconcile').mockResolvedValue() // plans from a collection
    h.birdTexts.push(protocols(1, 1))
    const starting = a.agent.start()
    await until(() => h.nodeDiagnoses.length === 1)
    h.nodeDiagnoses.shift()!.resolve(diagnosis(base))
    await starting
    return a
  }

  it('judges a route that changed during a whole-node diagnosis by the base that diagnosis leaves', async () => {
    const {agent} = await started(baseWith('10.0.0.0/16'))
    // something touching the whole node: a diagnosis of it starts, in the worker
    h.handlers!.lost(new Error('ENOBUFS'))
    await until(() => h.nodeDiagnoses.length === 1)
    // meanwhile a route changes in a pool the new diagnosis finds (Calico's truth gained it)
    h.handlers!.events([routeEvent('10.1.0.0/26')], [])
    const next = baseWith('10.1.0.0/16')
    h.nodeDiagnoses.shift()!.resolve(diagnosis(next))
    await until(() => h.prefixCalls.length === 1)
    expect(h.prefixCalls[0]).toEqual({prefixes: ['10.1.0.0/26'], base: next})
    await agent.stop()
  })

  it('judges a route that changed before the first diagnosis by its base', async () => {
    const {agent} = newAgent()
    h.birdTexts.push(protocols(1, 1))
    const starting = agent.start()
    await until(() => h.nodeDiagnoses.length === 1)
    h.handlers!.events([routeEvent('10.0.0.64/26')], [])
    const base = baseWith('10.0.0.0/16')
    h.nodeDiagnoses.shift()!.resolve(diagnosis(base))
    await starting
    await until(() => h.prefixCalls.length === 1)
    expect(h.prefixCalls[0].prefixes).toEqual(['10.0.0.64/26'])
    await agent.stop()
  })

  it('re-diagnoses a block whose BIRD paths a whole-node diagnosis read between two polls that agree', async () => {
    const base = baseWith('10.0.0.0/16')
    const a = newAgent()
    h.birdTexts.push(protocols(1, 1))
    const starting = a.agent.start()
    await until(() => h.nodeDiagnoses.length === 1)
    h.nodeDiagnoses.shift()!.resolve(diagnosis(base, hashesOf([['10.0.0.64/26', 1]])))
    await starting
    h.handlers!.lost(new Error('ENOBUFS')) // a diagnosis of the whole node starts
    await until(() => h.nodeDiagnoses.length === 1)
    // the block's paths go A -> B -> A: the poll sees A on both sides, the diagnosis read B
    h.birdTexts.push(protocols(1, 2))
    h.nextHashes = hashesOf([['10.0.0.64/26', 1]])
    await vi.advanceTimersByTimeAsync(5000)
    expect(h.hashes).toBe(1)
    h.nodeDiagnoses.shift()!.resolve(diagnosis(base, hashesOf([['10.0.0.64/26', 2]])))
    await until(() => h.prefixCalls.length === 1)
    expect(h.prefixCalls[0].prefixes).toEqual(['10.0.0.64/26'])
    await a.agent.stop()
  })

  it('holds nothing while no diagnosis is under way and none has worked: the next one is of the whole node', async () => {
    const {agent} = newAgent()
    h.birdTexts.push(protocols(1, 1))
    const starting = agent.start()
    await until(() => h.nodeDiagnoses.length === 1)
    h.nodeDiagnoses.shift()!.reject(new Error('no source readable')) // the first diagnosis fails
    await starting
    h.handlers!.events([routeEvent('10.0.0.64/26')], [])
    await until(() => h.nodeDiagnoses.length === 1)
    h.nodeDiagnoses.shift()!.resolve(diagnosis(baseWith('10.0.0.0/16')))
    await vi.advanceTimersByTimeAsync(200)
    expect(h.prefixCalls).toEqual([]) // the whole node's diagnosis covered the route
    await agent.stop()
  })

  it('never polls BIRD twice at once: a slow poll makes the next ticks skip', async () => {
    const {agent} = await started(baseWith('10.0.0.0/16'))
    let release!: () => void
    h.birdHold = new Promise((r) => (release = r))
    const polls = h.birdCommands.length
    await vi.advanceTimersByTimeAsync(5000 * 4 + 100) // four intervals: the first poll is still waiting for BIRD
    expect(h.birdCommands.length).toBe(polls + 1)
    release()
    h.birdHold = undefined
    await vi.advanceTimersByTimeAsync(5000)
    expect(h.birdCommands.length).toBe(polls + 2)
    await agent.stop()
  })

  it('sees a path that changed with the same route counts (an import accepted) and hashes BIRD\'s routes', async () => {
    const {agent} = await started(baseWith('10.0.0.0/16'))
    h.birdTexts.push(protocols(1, 1))
    await vi.advanceTimersByTimeAsync(5000)
    expect(h.hashes).toBe(0) // nothing changed
    h.birdTexts.push(protocols(1, 2)) // one route, one more update accepted: its next hop changed
    await vi.advanceTimersByTimeAsync(5000)
    expect(h.hashes).toBe(1)
    await agent.stop()
  })

  it('keeps nothing per diagnosis for the metrics: each duration goes to its listener, or nowhere without one', async () => {
    const {agent} = await started(baseWith('10.0.0.0/16'))
    h.handlers!.events([routeEvent('10.0.0.64/26')], [])
    await until(() => h.prefixCalls.length === 1 && !agent.running)
    // an agent without --listen: nobody reads the durations, and none is held
    expect((agent as unknown as {durations?: unknown[]}).durations?.length ?? 0).toBe(0)
    const heard: string[] = []
    agent.onDuration = (_seconds, scope) => heard.push(scope)
    h.handlers!.events([routeEvent('10.0.0.128/26')], [])
    await until(() => heard.length === 1)
    expect(heard).toEqual(['prefixes'])
    await agent.stop()
  })

  it('stops during a whole-node diagnosis in the worker, and withdraws the overlay (--cleanup-on-exit)', async () => {
    const {agent} = await started(baseWith('10.0.0.0/16'), true)
    const cleanup = vi.spyOn(agent.reconciler!, 'cleanup').mockResolvedValue()
    h.handlers!.lost(new Error('ENOBUFS'))
    await until(() => h.nodeDiagnoses.length === 1 && agent.running)
    let stopped = false
    void agent.stop().then(() => (stopped = true))
    await until(() => stopped)
    expect(cleanup).toHaveBeenCalledOnce()
    expect(agent.running).toBe(false)
  })

  describe('Calico\'s truth', () => {
    beforeEach(() => vi.spyOn(Math, 'random').mockReturnValue(0.5)) // no spread: waits of exactly the back-off
    afterEach(() => vi.mocked(Math.random).mockRestore())

    it('an API server down at start: calico failing, read again after 5, 10, 20, 40 s, then taken', async () => {
      const {agent, emitted} = await started(baseWith('10.0.0.0/16'), false, {error: 'cannot list the API groups'})
      expect(emitted).toContainEqual(expect.objectContaining({kind: 'source', source: 'calico', op: 'failed'}))
      expect(agent.sources().get('calico')).toBe('cannot list the API groups')
      const readsAt: number[] = []
      for (let t = 5; t <= 75; t += 5) {
        const before = h.truthReads
        await vi.advanceTimersByTimeAsync(5000)
        if (h.truthReads > before) readsAt.push(t)
      }
      // the polls every 5 s go on; the API server is asked less and less often
      expect(readsAt).toEqual([5, 15, 35, 75])
      expect(agent.sources().get('calico')).toMatch(/ECONNREFUSED/)
      h.truthFails = false
      for (let i = 0; i < 40 && h.truthReads === 4; i++) await vi.advanceTimersByTimeAsync(5000)
      expect(h.truthReads).toBe(5)
      // taken: the source up, the whole node diagnosed again with it
      await until(() => h.nodeDiagnoses.length === 1)
      expect(agent.sources().get('calico')).toBeUndefined()
      expect(emitted).toContainEqual(expect.objectContaining({kind: 'source', source: 'calico', op: 'recovered'}))
      expect((agent.opts.source.clusterTruth as any).truth).toEqual({reads: 5})
      h.nodeDiagnoses.shift()!.resolve(diagnosis(baseWith('10.0.0.0/16')))
      // then every --truth-interval, not at each poll
      await vi.advanceTimersByTimeAsync(295_000)
      expect(h.truthReads).toBe(5)
      await vi.advanceTimersByTimeAsync(10_000)
      expect(h.truthReads).toBe(6)
      await agent.stop()
    })

    it('--reconcile plans nothing before the first truth (no pools known: the plan would withdraw the overlay)', async () => {
      const {agent} = await started(baseWith('10.0.0.0/16'), true, {error: 'cannot list the API groups'})
      const reconcile = vi.mocked(agent.reconciler!.reconcile)
      await vi.advanceTimersByTimeAsync(5000) // a read that fails again
      expect(h.truthReads).toBe(1)
      expect(reconcile).not.toHaveBeenCalled()
      h.truthFails = false
      await vi.advanceTimersByTimeAsync(10_000)
      await until(() => h.nodeDiagnoses.length === 1)
      h.nodeDiagnoses.shift()!.resolve(diagnosis(baseWith('10.0.0.0/16')))
      await until(() => reconcile.mock.calls.length === 1)
      await agent.stop()
    })

    it('a block turning misrouted reads the truth again within 30 s (spread), once it is 30 s old', async () => {
      h.truthFails = false
      const {agent} = await started(baseWith('10.0.0.0/16'), false, {})
      h.birdTexts.push(...Array.from({length: 30}, () => protocols(1, 1))) // BIRD unchanged at every poll
      const misrouted = async () => {
        h.prefixLines = [{prefix: '10.0.0.64/26', verdict: h.prefixLines[0]?.verdict === 'misrouted' ? 'ok' : 'misrouted', findings: []}]
        const calls = h.prefixCalls.length
        h.handlers!.events([routeEvent('10.0.0.64/26')], [])
        await until(() => h.prefixCalls.length === calls + 1)
      }
      await vi.advanceTimersByTimeAsync(10_000)
      await misrouted() // the truth just read: taken as it is
      await vi.advanceTimersByTimeAsync(5000)
      expect(h.truthReads).toBe(0)
      await misrouted() // back to ok: no read
      await vi.advanceTimersByTimeAsync(30_000)
      await misrouted()
      // every agent of the cluster sees a node's block turn missing at once: the read is drawn within 30 s (here 15),
      // not made by all at their next poll
      await vi.advanceTimersByTimeAsync(10_000)
      expect(h.truthReads).toBe(0)
      await vi.advanceTimersByTimeAsync(10_000)
      expect(h.truthReads).toBe(1)
      await agent.stop()
    })
  })
})
