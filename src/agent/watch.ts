// `watch`: the node's diagnosis kept current. The kernel's notifications (routes, links, addresses, rules) and
// a cheap poll of BIRD's `show protocols` trigger a debounced diagnosis by the check service; the changes from
// the last state are handed out one by one, with flapping findings of its own. It never ends on a source
// failure: a source that fails is a change like any other.
import {BirdSocket, findBirdSocket} from '../collect/bird-socket.js'
import type {SourceOptions} from '../services/load.js'
import {diagnoseNode} from './diagnose.js'
import {Reconciler, type ReconcileOptions} from './reconcile.js'
import type {TimedChange} from '../report/watch.js'
import {changesBetween, emptyState, FlapTracker, type NodeState} from './state.js'

export interface WatchOptions {
  source: SourceOptions
  intervalSeconds: number // BIRD poll
  debounceMs: number
  flapCount: number // more changes than this within the window is flapping
  flapWindowSeconds: number
  fixProtocol: string
  reconcile?: Omit<ReconcileOptions, 'source' | 'fixProtocol'>
}

export type {TimedChange} from '../report/watch.js'

/** What the agent counts for its metrics (render/metrics.ts reads these, never the other way round). */
export interface WatchCounters {
  verdictChanges: number
  sessionFlaps: number
  diagnoses: number
  lastDiagnosisAt?: number // ms since the epoch
  lastDurationSeconds?: number
}

export const NETLINK_SOURCE = 'rtnetlink'
export const BIRD_POLL_SOURCE = 'bird-socket'

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
  private lastProtocols: string | undefined
  private kernel: {close(): void} | undefined
  private lastTookMs = 0
  private idle: Promise<void> = Promise.resolve()
  readonly durations: number[] = [] // seconds, handed to the histogram and emptied by it
  readonly reconciler: Reconciler | undefined
  private again: NodeJS.Timeout | undefined
  private own: {keys: ReadonlySet<string>} | undefined // routedoctor's own routes, kept from notifications

  constructor(readonly opts: WatchOptions, private readonly emit: (change: TimedChange) => void) {
    this.routeFlaps = new FlapTracker(opts.flapCount, opts.flapWindowSeconds * 1000)
    this.peerFlaps = new FlapTracker(opts.flapCount, opts.flapWindowSeconds * 1000)
    if (opts.reconcile) {
      this.reconciler = new Reconciler({...opts.reconcile, source: opts.source, fixProtocol: opts.fixProtocol},
        (c) => this.emit({at: new Date().toISOString(), ...c}),
        (ms) => {
          clearTimeout(this.again)
          this.again = setTimeout(() => this.trigger(), ms)
        })
    }
  }

  async start(): Promise<void> {
    try {
      const {ProtocolRoutes, watchKernel} = await import('../netlink/events.js')
      const own = new ProtocolRoutes(Number(this.opts.fixProtocol))
      this.kernel = await watchKernel((events) => {
        own.apply(events)
        this.trigger()
      }, (error) => {
        // notifications were lost: everything is read again
        this.setAgentSource(NETLINK_SOURCE, error.message)
        this.own = undefined
        own.keys.clear()
        own.load().then(() => (this.own = own), () => undefined)
        this.trigger()
      })
      // subscribed first, read second: a route written in between is in one or the other (both: one key)
      await own.load()
      this.own = own
      this.setAgentSource(NETLINK_SOURCE, undefined)
    } catch (error) {
      this.setAgentSource(NETLINK_SOURCE, (error as Error).message)
    }
    await this.pollBird(false)
    await this.diagnose()
    this.ready = true
    this.poll = setInterval(() => void this.tick(), this.opts.intervalSeconds * 1000)
  }

  /** Stops every trigger; resolves once a diagnosis under way has finished (or at once). */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    clearTimeout(this.again)
    clearInterval(this.poll)
    this.kernel?.close()
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
    // never sooner after a diagnosis than it took: a full table's diagnosis never takes the whole CPU
    this.timer = setTimeout(() => {
      this.pending = false
      void this.diagnose()
    }, Math.max(this.opts.debounceMs, this.lastTookMs))
  }

  private async tick(): Promise<void> {
    if (this.stopped) return
    this.expireFlaps()
    await this.pollBird(true)
  }

  /** BIRD's `show protocols`: a diagnosis when it differs from the last poll (or the socket fails or recovers). */
  private async pollBird(triggering: boolean): Promise<void> {
    let text: string
    let bird: BirdSocket | undefined
    try {
      bird = await BirdSocket.connect(findBirdSocket(this.opts.source.birdSocket), {timeoutMs: 5000})
      text = await bird.command('show protocols')
      this.setAgentSource(BIRD_POLL_SOURCE, undefined, triggering)
    } catch (error) {
      this.setAgentSource(BIRD_POLL_SOURCE, (error as Error).message, triggering)
      return
    } finally {
      bird?.close()
    }
    if (text !== this.lastProtocols) {
      const first = this.lastProtocols === undefined
      this.lastProtocols = text
      if (triggering && !first) this.trigger()
    }
  }

  private setAgentSource(source: string, error: string | undefined, triggering = true): void {
    const had = this.agentSources.has(source)
    const was = this.agentSources.get(source)
    this.agentSources.set(source, error)
    if (had && (was === undefined) === (error === undefined)) return
    if (!had && error === undefined) return
    this.emit({at: new Date().toISOString(), kind: 'source', source, op: error === undefined ? 'recovered' : 'failed', ...(error ? {error} : {})})
    if (triggering && had) this.trigger()
  }

  /** One diagnosis through the check service; every change since the last one is emitted. */
  async diagnose(): Promise<void> {
    if (this.stopped || this.running) return
    this.running = true
    this.runningSince = Date.now()
    let done!: () => void
    this.idle = new Promise((resolve) => (done = resolve))
    try {
      const t0 = performance.now()
      let next: NodeState
      try {
        next = await diagnoseNode(this.opts.source, this.opts.fixProtocol)
        this.setAgentSource('diagnosis', undefined)
      } catch (error) {
        // a diagnosis that cannot be made (no source readable at all) is a failed source, not the end
        this.setAgentSource('diagnosis', (error as Error).message)
        return
      }
      const tookMs = performance.now() - t0
      this.lastTookMs = tookMs
      this.counters.diagnoses++
      this.counters.lastDiagnosisAt = Date.now()
      this.counters.lastDurationSeconds = tookMs / 1000
      this.durations.push(tookMs / 1000)
      if (this.stopped) return
      const first = this.counters.diagnoses === 1
      // the first diagnosis says what is wrong node-wide; prefix lines are changes only
      const changes = first
        ? changesBetween(emptyState(), next).filter((c) => c.kind === 'source' || (c.kind === 'finding' && c.prefix === undefined))
        : changesBetween(this.state, next)
      this.state = next
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
      if (this.reconciler && !this.stopped) await this.reconciler.reconcile(Date.now())
    } finally {
      this.running = false
      done()
      if (this.rerun && !this.stopped) {
        this.rerun = false
        this.trigger()
      }
    }
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
    return this.own?.keys.size ?? this.state.overlayRoutes
  }

  /** Every source's state: the collection's files and the agent's own (error, or undefined when up). */
  sources(): Map<string, string | undefined> {
    return new Map([...this.state.sources, ...this.agentSources])
  }
}
