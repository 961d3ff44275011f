// `watch`: the node's diagnosis kept current. The kernel's notifications (routes, links, addresses, rules) and
// a cheap poll of BIRD's `show protocols all` and the sysctls trigger a debounced diagnosis: of the prefixes a change
// touched (incremental.ts), or of the whole node by the check service when a change touches everything. The changes
// from the last state are handed out one by one, with flapping findings of its own. It never ends on a source
// failure: a source that fails is a change like any other.
import {BirdSocket, findBirdSocket} from '../collect/bird-socket.js'
import {collectSysctl} from '../collect/live.js'
import {SNAPSHOT_FILES} from '../collect/snapshot-files.js'
import type {KernelView} from './kernel-view.js'
import {parseBirdProtocols} from '../parse/bird-protocols.js'
import type {BirdProtocol} from '../model/types.js'
import {collectGarbage} from '../runtime/collect-garbage.js'
import type {CalicoGroupMemo} from '../model/calico.js'
import {loadClusterTruth, truthMeaning, type SourceOptions} from '../services/load.js'
import {seenPrefix} from './diagnose.js'
import {
  changedBlocks,
  diagnosePrefixes,
  touchedBy,
  touchedByKeys,
  touchedByLinks,
  type BlockHashes,
  type NodeBase,
  type Touched,
} from './incremental.js'
import {Reconciler, type ReconcileOptions} from './reconcile.js'
import type {TimedChange, WatchChange} from '../report/watch.js'
import {changesBetween, emptyState, FlapTracker, updatePrefixes, type NodeState, type SeenPrefix} from './state.js'

// more prefixes touched at once than this, and than this share of the node's: the whole node is diagnosed instead
// (one collection beats as many lookups)
const MAX_TOUCHED = 2000
const MAX_TOUCHED_SHARE = 0.1
const GC_AFTER_TOUCHED = 1000
// kernel changes held for the base a whole-node diagnosis leaves: past this many, that base is diagnosed whole again
const MAX_HELD = 100_000
// a verdict or finding that may come of a truth read long ago reads it again first, unless it is this fresh; within
// as long again, drawn at random: a node that goes down turns its block missing on every node at once
const TRUTH_FRESH_MS = 30_000
// the truth's host findings (its prefix findings turn a verdict misrouted or missing)
const TRUTH_FINDINGS = new Set([
  'block-affinity-conflict', 'block-without-ipamblock', 'borrowed-address-unrouted', 'node-address-mismatch',
  'route-owner-conflict',
])

export interface WatchOptions {
  source: SourceOptions
  intervalSeconds: number // BIRD poll
  debounceMs: number
  flapCount: number // more changes than this within the window is flapping
  flapWindowSeconds: number
  fixProtocol: string
  reconcile?: Omit<ReconcileOptions, 'source' | 'fixProtocol'>
  truth?: TruthOptions
}

/** Where Calico's truth is read again (source.clusterTruth holds the last read), and how it went at start. */
export interface TruthOptions {
  from: Pick<SourceOptions, 'calico' | 'kube'>
  intervalSeconds: number
  error?: string // the read at start failed (the API server down): the agent starts without the truth
  group?: CalicoGroupMemo // --kube: Calico's API group as the last read found it
}

export type {TimedChange} from '../report/watch.js'

/** What the agent counts for its metrics (render/metrics.ts reads these, never the other way round). */
export interface WatchCounters {
  verdictChanges: number
  sessionFlaps: number
  diagnoses: number
  lastDiagnosisAt?: number // ms since the epoch
  lastDurationSeconds?: number
  lastScope?: DiagnosisScope
}

/** What a diagnosis covered: the whole node, or the prefixes a change touched. */
export type DiagnosisScope = 'node' | 'prefixes'

export const NETLINK_SOURCE = 'rtnetlink'
export const BIRD_POLL_SOURCE = 'bird-socket'
export const TRUTH_SOURCE = 'calico'

/**
 * What tells that BIRD's routes changed, from `show protocols all`: each channel's route counts and its imports and
 * withdrawals accepted (a path that changes its next hop keeps the counts but is one more import accepted).
 */
export function routeChanges(protocols: readonly BirdProtocol[]): string {
  return JSON.stringify(protocols.map((p) => [p.name, p.channels ?? []]))
}

/**
 * The lines of sysctl.txt a diagnosis reads: all but the rp_filter of devices other than all, default, the tunnel and
 * the uplinks.
 */
function sysctlsRead(text: string | undefined, base: NodeBase): string {
  const devs = new Set(['all', 'default', base.tunnelDev, ...base.uplinks])
  return (text ?? '').split('\n').filter((line) => {
    const dev = /^net\.ipv4\.conf\.(\S+)\.rp_filter /.exec(line)?.[1]
    return dev === undefined || devs.has(dev.replaceAll('/', '.'))
  }).join('\n')
}

export class WatchAgent {
  state: NodeState = emptyState()
  readonly counters: WatchCounters = {verdictChanges: 0, sessionFlaps: 0, diagnoses: 0}
  /** Sources of the agent itself (the notification socket, BIRD's poll): error or undefined. */
  readonly agentSources = new Map<string, string | undefined>()
  readonly routeFlaps: FlapTracker
  readonly peerFlaps: FlapTracker
  ready = false
  running = false
  runningSince = 0

  private timer: NodeJS.Timeout | undefined
  private poll: NodeJS.Timeout | undefined
  private pending = false
  private rerun = false
  private stopped = false
  private kernel: KernelView | undefined // the kernel's routes and routedoctor's own, kept from notifications
  private kernelRetry: NodeJS.Timeout | undefined
  private lastNodeMs = 0 // how long the last whole-node diagnosis took
  private idle: Promise<void> = Promise.resolve()
  /** Told each diagnosis's duration (the metrics' histogram): nothing is kept for a reader that may never come. */
  onDuration: ((seconds: number, scope: DiagnosisScope) => void) | undefined
  readonly reconciler: Reconciler | undefined
  private again: NodeJS.Timeout | undefined
  private base: NodeBase | undefined // what the last full diagnosis leaves for diagnosing single prefixes
  private touched: Touched = {prefixes: new Set(), full: 'the first diagnosis'}
  private sessionStates: string | undefined
  private routeCounts: string | undefined
  private birdHashes: BlockHashes | undefined
  private reconcileDue = false
  private polling = false // a BIRD poll (and the sysctls') under way: the next tick skips
  private truthReading = false // apart from the polls: an API server that does not answer never holds BIRD's up
  private readonly truthAbort = new AbortController() // stop() ends a read under way: its 30 s would hold the exit
  private truthDueAt = 0
  private truthReadAt = 0
  private truthFailures = 0
  private nodeRunning = false // a whole-node diagnosis under way: the base it replaces is stale
  private held: Array<(base: NodeBase) => void> = []
  private heldWeight = 0

  constructor(readonly opts: WatchOptions, private readonly emit: (change: TimedChange) => void) {
    this.routeFlaps = new FlapTracker(opts.flapCount, opts.flapWindowSeconds * 1000)
    this.peerFlaps = new FlapTracker(opts.flapCount, opts.flapWindowSeconds * 1000)
    if (opts.reconcile) {
      this.reconciler = new Reconciler({...opts.reconcile, source: opts.source, fixProtocol: opts.fixProtocol},
        (c) => this.emit({at: new Date().toISOString(), ...c}),
        (ms) => {
          clearTimeout(this.again)
          this.again = setTimeout(() => {
            this.reconcileDue = true
            this.trigger()
          }, ms)
        })
    }
  }

  async start(): Promise<void> {
    try {
      const {KernelView} = await import('./kernel-view.js')
      const kernel = new KernelView(Number(this.opts.fixProtocol), {
        events: (events, links) => {
          this.classify((base) => {
            touchedBy(events, base, this.touched)
            touchedByLinks(links, base, kernel.store, this.touched)
          }, events.length)
          // the kernel flushed or marked those devices' routes without a notification
          if (links.some((l) => l.routes > 0 && l.routesChanged)) kernel.reread()
          this.trigger()
        },
        lost: (error) => {
          this.setAgentSource(NETLINK_SOURCE, error.message)
          this.touched.full ??= 'kernel notifications were lost'
          this.trigger()
        },
        reread: (changed, recovered) => {
          this.classify((base) => touchedByKeys(changed, base, this.touched), changed.size)
          if (recovered) this.setAgentSource(NETLINK_SOURCE, undefined)
          this.trigger()
        },
        failed: (error) => {
          this.setAgentSource(NETLINK_SOURCE, error.message)
          this.touched.full ??= `the kernel's routes: ${error.message}`
          this.trigger()
          // read again at the next poll: until then every diagnosis is of the whole node
          clearTimeout(this.kernelRetry)
          if (!this.stopped) this.kernelRetry = setTimeout(() => kernel.reread(), this.opts.intervalSeconds * 1000)
        },
      })
      this.kernel = kernel
      await kernel.start()
      if (kernel.store.loaded) this.setAgentSource(NETLINK_SOURCE, undefined)
    } catch (error) {
      this.kernel?.close()
      this.kernel = undefined
      this.setAgentSource(NETLINK_SOURCE, (error as Error).message)
    }
    const truth = this.opts.truth
    if (truth) {
      this.setAgentSource(TRUTH_SOURCE, truth.error)
      this.truthRead(truth.error === undefined)
    }
    await this.pollBird(false)
    await this.diagnose()
    this.ready = true
    this.poll = setInterval(() => void this.tick(), this.opts.intervalSeconds * 1000)
  }

  /** Stops every trigger and ends a worker's diagnosis; resolves once the diagnosis under way has given up. */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    clearTimeout(this.again)
    clearTimeout(this.kernelRetry)
    clearInterval(this.poll)
    this.truthAbort.abort()
    this.kernel?.close()
    // a whole-node diagnosis in a worker can take tens of seconds on a full table: it is ended, not awaited
    ;(await import('./node-worker.js')).stopWorkers()
    await this.idle
    if (this.reconciler?.opts.cleanupOnExit) await this.reconciler.cleanup()
  }

  /** Something changed: a diagnosis runs once things have been quiet for debounceMs. */
  trigger(): void {
    if (this.stopped) return
    if (this.running) {
      this.rerun = true
      return
    }
    if (this.pending) return
    this.pending = true
    // a whole-node diagnosis never sooner after the last than that took: a full table's never takes the whole CPU
    this.timer = setTimeout(() => {
      this.pending = false
      void this.diagnose()
    }, this.wholeNode() ? Math.max(this.opts.debounceMs, this.lastNodeMs) : this.opts.debounceMs)
  }

  private async tick(): Promise<void> {
    if (this.stopped) return
    if (this.opts.truth && !this.truthReading && Date.now() >= this.truthDueAt) void this.pollTruth(this.opts.truth)
    if (this.polling) return
    this.polling = true
    try {
      this.expireFlaps()
      await this.pollBird(true)
      await this.pollSysctls()
    } finally {
      this.polling = false
    }
  }

  /**
   * Marks what a change touches, judged by the base; a change seen while no base is current (before the first
   * diagnosis, during one of the whole node) waits for the base that diagnosis leaves.
   */
  private classify(mark: (base: NodeBase) => void, weight: number): void {
    if (this.base !== undefined && !this.nodeRunning) return mark(this.base)
    // the whole node is diagnosed next anyway (no base yet, and none being made: the last attempt failed)
    if (this.touched.full !== undefined || !this.nodeRunning) return
    this.heldWeight += weight
    if (this.heldWeight > MAX_HELD) {
      this.held = []
      this.touched.full = 'too many changes during a diagnosis of the whole node'
    } else this.held.push(mark)
  }

  /** The changes held during a whole-node diagnosis, marked now that its base is current. */
  private release(): void {
    if (this.base === undefined) return // held until a diagnosis leaves one
    const held = this.held
    this.held = []
    this.heldWeight = 0
    for (const mark of held) mark(this.base)
  }

  /**
   * Calico's truth read again (--calico DIR, --kube): a change touches the whole node (blocks' owners, nodes'
   * addresses). A read that fails keeps the last truth (none, when the first failed) and is tried again sooner.
   */
  private async pollTruth(truth: TruthOptions): Promise<void> {
    this.truthReading = true
    let next: Awaited<ReturnType<typeof loadClusterTruth>>
    try {
      next = await loadClusterTruth(truth.from, this.truthAbort.signal, truth.group)
    } catch (error) {
      if (this.stopped) return
      this.setAgentSource(TRUTH_SOURCE, (error as Error).message)
      this.truthRead(false)
      return
    } finally {
      this.truthReading = false
    }
    if (this.stopped) return
    this.setAgentSource(TRUTH_SOURCE, undefined)
    this.truthRead(true)
    const source = this.opts.source
    // a Node's heartbeat or a resourceVersion is no change: only what the diagnosis reads diagnoses the node again
    if (next === undefined || truthMeaning(next) === truthMeaning(source.clusterTruth)) return
    // the object the reconciler and the server read too
    source.clusterTruth = next
    this.touched.full ??= 'Calico\'s truth changed'
    this.trigger()
  }

  /**
   * When the truth is read next: --truth-interval after a read; after failures --interval, doubling up to
   * --truth-interval. Spread by a fifth either way, so that agents started or failed together do not list together.
   */
  private truthRead(ok: boolean): void {
    const every = this.opts.truth!.intervalSeconds * 1000
    if (ok) this.truthReadAt = Date.now()
    this.truthFailures = ok ? 0 : this.truthFailures + 1
    const wait = ok ? every : Math.min(every, this.opts.intervalSeconds * 1000 * 2 ** (this.truthFailures - 1))
    this.truthDueAt = Date.now() + wait * (0.8 + 0.4 * Math.random())
  }

  /** A block turned misrouted or missing, or a finding of the truth appeared: judged by a truth read just now? */
  private confirmTruth(changes: readonly WatchChange[]): void {
    if (!this.opts.truth || this.truthFailures > 0 || Date.now() - this.truthReadAt < TRUTH_FRESH_MS) return
    const suspect = changes.some((c) =>
      c.kind === 'verdict' ? c.to === 'misrouted' || c.to === 'missing'
      : c.kind === 'finding' && c.op === 'appeared' && TRUTH_FINDINGS.has(c.id))
    // read within TRUTH_FRESH_MS, spread so that the cluster's agents do not all list at once; a truth that changed
    // diagnoses the node again
    if (suspect) this.truthDueAt = Math.min(this.truthDueAt, Date.now() + Math.random() * TRUTH_FRESH_MS)
  }

  /**
   * BIRD's `show protocols all`: a session's state changing touches the whole node; route counts changing, the
   * networks whose blocks of `show route all` changed (or the whole node, when that cannot be read).
   */
  private async pollBird(triggering: boolean): Promise<void> {
    let text: string
    let bird: BirdSocket | undefined
    try {
      bird = await BirdSocket.connect(findBirdSocket(this.opts.source.birdSocket), {timeoutMs: 5000})
      text = await bird.command('show protocols all')
      this.setAgentSource(BIRD_POLL_SOURCE, undefined, triggering)
    } catch (error) {
      bird?.close()
      this.setAgentSource(BIRD_POLL_SOURCE, (error as Error).message, triggering)
      return
    }
    try {
      let protocols: ReturnType<typeof parseBirdProtocols>
      try {
        protocols = parseBirdProtocols(text)
      } catch {
        protocols = []
      }
      const states = JSON.stringify(protocols.map((p) => [p.name, p.state, p.bgpState, p.lastError]))
      const counts = routeChanges(protocols)
      const first = this.sessionStates === undefined
      const statesChanged = states !== this.sessionStates
      const countsChanged = counts !== this.routeCounts
      this.sessionStates = states
      this.routeCounts = counts
      if (first || !triggering) return
      if (statesChanged) this.touched.full ??= 'BIRD\'s protocols changed state'
      else if (countsChanged) {
        const before = this.birdHashes
        if (this.base === undefined || before === undefined) this.touched.full ??= 'BIRD\'s routes changed'
        else {
          const {birdHashesApart} = await import('./node-worker.js')
          const after = await birdHashesApart(this.opts.source)
          this.birdHashes = after
          const held = this.nodeRunning
          this.classify((base) => {
            for (const p of changedBlocks(before, after, base)) this.touched.prefixes.add(p)
            // held across a whole-node diagnosis: it may have read BIRD between `before` and `after` (A, B, A again)
            const seen = this.birdHashes
            if (held && seen !== undefined && seen !== after) {
              for (const p of changedBlocks(seen, after, base)) this.touched.prefixes.add(p)
              this.birdHashes = after
            }
          }, 1)
        }
      } else return
      this.trigger()
    } catch (error) {
      this.touched.full ??= `BIRD's routes: ${(error as Error).message}`
      this.trigger()
    } finally {
      bird.close()
    }
  }

  /** The sysctls host findings read: a change touches the whole node. */
  private async pollSysctls(): Promise<void> {
    const base = this.base
    const kept = base?.files.find((f) => f.name === SNAPSHOT_FILES.sysctl)
    if (base === undefined || kept === undefined || this.stopped) return
    const now = await collectSysctl()
    if (sysctlsRead(now.text, base) !== sysctlsRead(kept.text, base)) {
      this.touched.full ??= 'a sysctl changed'
      this.trigger()
    }
  }

  private setAgentSource(source: string, error: string | undefined, triggering = true): void {
    const had = this.agentSources.has(source)
    const was = this.agentSources.get(source)
    this.agentSources.set(source, error)
    if (had && (was === undefined) === (error === undefined)) return
    if (!had && error === undefined) return
    this.emit({
      at: new Date().toISOString(),
      kind: 'source',
      source,
      op: error === undefined ? 'recovered' : 'failed',
      ...(error ? {error} : {}),
    })
    if (triggering && had) this.trigger()
  }

  /**
   * One diagnosis: of the prefixes touched since the last one, or of the whole node through the check service when
   * something touched everything (or too much); every change since the last state is emitted.
   */
  async diagnose(): Promise<void> {
    if (this.stopped || this.running) return
    this.running = true
    this.runningSince = Date.now()
    let done!: () => void
    this.idle = new Promise((resolve) => (done = resolve))
    try {
      // a read of the kernel's routes under way says which prefixes a device's change touched, and brings the store up
      // to date
      if (this.kernel?.busy) await this.kernel.settled()
      const t0 = performance.now()
      const touched = this.touched
      this.touched = {prefixes: new Set()}
      let changes: WatchChange[]
      let scope: DiagnosisScope | 'none' = 'node'
      const first = this.counters.diagnoses === 0
      const incremental = !this.wholeNode(touched)
      let lines: Awaited<ReturnType<typeof diagnosePrefixes>> | undefined
      if (incremental && touched.prefixes.size > 0) {
        try {
          lines = await diagnosePrefixes(
            [...touched.prefixes],
            this.base!,
            this.kernel!.store,
            this.opts.source,
            this.opts.fixProtocol,
          )
        } catch (error) {
          lines = {full: (error as Error).message}
        }
      }
      if (incremental && touched.prefixes.size === 0) {
        // nothing to diagnose (a source recovered, a reconcile falls due): no diagnosis
        scope = 'none'
        changes = []
      } else if (lines !== undefined && 'lines' in lines) {
        scope = 'prefixes'
        const seen = new Map<string, SeenPrefix>(lines.lines.map((l) => [l.prefix, seenPrefix(l)]))
        changes = updatePrefixes(this.state, touched.prefixes, seen)
        // many prefixes' snapshot (their paths, routes and findings) is garbage now: freed at once, as check frees its
        // texts
        if (touched.prefixes.size > GC_AFTER_TOUCHED) collectGarbage()
      } else {
        let next: NodeState
        this.nodeRunning = true
        try {
          const {diagnoseNodeApart} = await import('./node-worker.js')
          const node = await diagnoseNodeApart(this.opts.source, this.opts.fixProtocol)
          next = node.state
          this.base = node.base
          this.birdHashes = node.birdHashes
          this.setAgentSource('diagnosis', undefined)
        } catch (error) {
          if (this.stopped) return // ended by stop()
          // a diagnosis that cannot be made (no source readable at all) is a failed source, not the end
          this.setAgentSource('diagnosis', (error as Error).message)
          return
        } finally {
          // what changed meanwhile is judged by the new base (a prefix now in a pool, a next hop now resolved)
          this.nodeRunning = false
          this.release()
        }
        // the first diagnosis says what is wrong node-wide; prefix lines are changes only
        changes = first
          ? changesBetween(emptyState(), next, false).filter((c) => c.kind === 'source' || c.kind === 'finding')
          : changesBetween(this.state, next)
        this.state = next
      }
      const tookMs = performance.now() - t0
      if (scope !== 'none') {
        if (scope === 'node') this.lastNodeMs = tookMs
        this.counters.diagnoses++
        this.counters.lastDiagnosisAt = Date.now()
        this.counters.lastDurationSeconds = tookMs / 1000
        this.counters.lastScope = scope
        this.onDuration?.(tookMs / 1000, scope)
      }
      if (this.stopped) return
      if (!first) this.confirmTruth(changes)
      if (first || changes.length > 0) this.reconcileDue = true
      const at = new Date().toISOString()
      const now = Date.now()
      for (const c of changes) {
        this.emit({at, ...c})
        if (first) continue
        if (c.kind === 'verdict') {
          this.counters.verdictChanges++
          if (this.routeFlaps.record(c.prefix, now)) this.emitFlapping('route-flapping', c.prefix, at)
        } else if (c.kind === 'session') {
          this.counters.sessionFlaps++
          if (this.peerFlaps.record(c.name, now)) this.emitFlapping('peer-flapping', c.name, at)
        }
      }
      this.expireFlaps()
      // the plan is made of a full collection: only when something changed, or a write it waits for falls due; and
      // never without the truth asked for (no pools, no owners known: that plan would withdraw the whole overlay)
      if (this.reconciler && this.reconcileDue && !this.stopped && this.truthKnown()) {
        this.reconcileDue = false
        await this.reconciler.reconcile(Date.now())
      }
    } finally {
      this.running = false
      done()
      if (this.rerun && !this.stopped) {
        this.rerun = false
        this.trigger()
      }
    }
  }

  /** Calico's truth, when --kube or --calico asked for it, read at least once (not the case while the API is down). */
  private truthKnown(): boolean {
    return this.opts.truth === undefined || this.opts.source.clusterTruth !== undefined
  }

  /** Does what was touched ask for a diagnosis of the whole node? */
  private wholeNode(touched = this.touched): boolean {
    if (touched.full !== undefined || this.base === undefined || !this.kernel?.store.loaded) return true
    const n = touched.prefixes.size
    if (n <= MAX_TOUCHED) return false
    let held = 0 // every prefix of the state: the verdict counts include those found healthy
    for (const v of Object.values(this.state.verdicts)) held += v
    return n > held * MAX_TOUCHED_SHARE
  }

  private emitFlapping(id: 'route-flapping' | 'peer-flapping', key: string, at: string, cleared = false): void {
    const tracker = id === 'route-flapping' ? this.routeFlaps : this.peerFlaps
    const what = id === 'route-flapping' ? `${key}'s verdict` : `BGP session ${key}`
    this.emit({at, kind: 'finding', op: cleared ? 'cleared' : 'appeared', id, severity: 'warning',
      ...(id === 'route-flapping' ? {prefix: key} : {}),
      title: `${what} changed more than ${tracker.count} times within ${this.opts.flapWindowSeconds} s`})
  }

  private expireFlaps(): void {
    const at = new Date().toISOString()
    const now = Date.now()
    for (const key of this.routeFlaps.expire(now)) this.emitFlapping('route-flapping', key, at, true)
    for (const key of this.peerFlaps.expire(now)) this.emitFlapping('peer-flapping', key, at, true)
  }

  /** How many routes carry routedoctor's protocol number: from the notifications, else the last diagnosis. */
  get overlayRoutes(): number {
    return this.kernel?.store.loaded ? this.kernel.own.keys.size : this.state.overlayRoutes
  }

  /** Every source's state: the collection's files and the agent's own (error, or undefined when up). */
  sources(): Map<string, string | undefined> {
    return new Map([...this.state.sources, ...this.agentSources])
  }
}
