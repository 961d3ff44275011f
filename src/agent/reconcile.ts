// `watch --reconcile`: keeps routedoctor's own routes equal to the fix service's plan as things change. A plan
// must hold --settle seconds before it is written, writes are at least --write-interval apart, each one goes
// through the fix service's apply (journal, read-back, route-war watch, restore on failure), and a prefix whose
// route another writer puts back is left alone for a while (doubling up to an hour), never fought.
import type {OverlayPlan} from '../plan/plan.js'
import type {SourceOptions} from '../services/load.js'
import type {FixSettings, PlannedOverlay} from './planned.js'
import type {WatchChange} from './state.js'

export interface ReconcileOptions {
  source: SourceOptions
  fixProtocol: string
  settleSeconds: number
  writeIntervalSeconds: number
  rulePriority?: number // as fix's --rule-priority; not given, a pool's rule stays where it is
  journalDir: string
  journalKeep: number // the newest journals kept in journalDir (journal retention)
  cleanupOnExit: boolean
}

// how long apply watches for another writer putting its route back
const WAR_WATCH_SECONDS = 3
const BACKOFF_FIRST_MS = 60_000
const BACKOFF_MAX_MS = 3_600_000

/**
 * The fix service's plan → apply path: the one place reconcile reaches it (plan as `fix` plans, in a worker thread:
 * a full table's collection and plan would hold the agent's thread; apply and revert as `fix --apply` and
 * `fix --revert` do).
 */
export const fixPath = {
  async plan(source: SourceOptions, fix: FixSettings, skip: string[], ask: string[]): Promise<PlannedOverlay> {
    const {planOverlayApart} = await import('./node-worker.js')
    return planOverlayApart(source, fix, skip, ask)
  },
  async apply(plan: OverlayPlan, journalDir: string) {
    const {applyFix} = await import('../services/fix.js')
    return applyFix(plan, {journalDir, watchSeconds: WAR_WATCH_SECONDS})
  },
  async revert(journal: string) {
    const {revertFix} = await import('../services/fix.js')
    return revertFix(journal)
  },
  async prune(dir: string, keep: number, protect: ReadonlySet<string>) {
    const {pruneFixJournals} = await import('../services/fix.js')
    return pruneFixJournals(dir, keep, protect)
  },
}

export class Reconciler {
  private pending: {signature: string; since: number} | undefined
  private lastWriteAt = Number.NEGATIVE_INFINITY
  // prefixes in a route war: left alone until `until`, then tried again; gone once the prefix is right again
  readonly backoff = new Map<string, {until: number; ms: number}>()
  readonly journals: string[] = [] // with --cleanup-on-exit: written by this run, oldest first (what it reverts)

  constructor(
    readonly opts: ReconcileOptions,
    private readonly emit: (change: WatchChange) => void,
    private readonly again: (ms: number) => void, // reconcile again after ms (a diagnosis, then reconcile)
    private readonly path = fixPath,
  ) {}

  /** After a diagnosis: plan, and write what has held for --settle seconds. */
  async reconcile(now: number): Promise<void> {
    // the overlay's routes and rules only (DESIGN §5): a prefix in a route war waits out its back-off
    const skip = [...this.backoff].filter(([, b]) => b.until > now).map(([dst]) => dst)
    const expired = [...this.backoff].filter(([, b]) => b.until <= now).map(([dst]) => dst)
    const fix = {fixProtocol: this.opts.fixProtocol, rulePriority: this.opts.rulePriority}
    let planned: PlannedOverlay
    try {
      planned = await this.path.plan(this.opts.source, fix, skip, expired)
    } catch (error) {
      const {WorkerStopped} = await import('./node-worker.js')
      if (!(error instanceof WorkerStopped))
        this.emit({kind: 'reconcile', op: 'failed', detail: `planning: ${(error as Error).message}`})
      return
    }
    // a back-off over for a prefix the plan no longer writes: the prefix is right again (or gone)
    for (const dst of expired) if (!planned.asked.includes(dst)) this.backoff.delete(dst)
    if (planned.routes === 0 && planned.rules === 0) {
      this.pending = undefined
      return
    }
    const sig = planned.signature
    if (this.pending?.signature !== sig) {
      this.pending = {signature: sig, since: now}
      this.again(this.opts.settleSeconds * 1000)
      return
    }
    const settled = this.pending.since + this.opts.settleSeconds * 1000
    const wait = Math.max(settled, this.lastWriteAt + this.opts.writeIntervalSeconds * 1000) - now
    if (wait > 0) {
      this.again(wait)
      return
    }
    this.pending = undefined
    this.lastWriteAt = now
    let result: Awaited<ReturnType<typeof fixPath.apply>>
    try {
      result = await this.path.apply(JSON.parse(planned.json) as OverlayPlan, this.opts.journalDir)
    } catch (error) {
      this.emit({kind: 'reconcile', op: 'failed', detail: (error as Error).message})
      return
    }
    if (this.opts.cleanupOnExit) this.journals.push(result.journal)
    await this.prune()
    if (result.errors.length > 0 || !result.verified) {
      this.emit({
        kind: 'reconcile',
        op: 'failed',
        routes: planned.routes,
        journal: result.journal,
        detail: `${result.errors.map((e) => e.message).join('; ') || 'the read-back did not match'}${result.restored ? ' (restored from the journal)' : ''}`,
      })
    } else {
      this.emit({kind: 'reconcile', op: 'applied', routes: result.applied.length, journal: result.journal})
      // written again after its back-off, and nobody undid it this time: the war is over
      const warred = new Set((result.routeWar ?? []).map((w) => w.dst))
      for (const dst of expired) if (!warred.has(dst)) this.backoff.delete(dst)
    }
    for (const war of result.routeWar ?? []) {
      const ms = Math.min((this.backoff.get(war.dst)?.ms ?? BACKOFF_FIRST_MS / 2) * 2, BACKOFF_MAX_MS)
      this.backoff.set(war.dst, {until: now + ms, ms})
      this.emit({
        kind: 'reconcile',
        op: 'route-war',
        prefix: war.dst,
        detail: `${war.detail}; backing off for ${ms / 1000} s`,
      })
    }
  }

  /** Journal retention after a write: the newest --journal-keep stay, and every one --cleanup-on-exit will revert. */
  private async prune(): Promise<void> {
    try {
      await this.path.prune(this.opts.journalDir, this.opts.journalKeep, new Set(this.journals))
    } catch (error) {
      this.emit({kind: 'reconcile', op: 'failed', detail: `journal retention: ${(error as Error).message}`})
    }
  }

  /** --cleanup-on-exit: every write of this run undone, newest first, as `fix --revert` undoes one. */
  async cleanup(): Promise<void> {
    for (const journal of [...this.journals].reverse()) {
      try {
        const r = await this.path.revert(journal)
        this.emit({
          kind: 'reconcile',
          op: r.verified && r.errors.length === 0 ? 'withdrawn' : 'failed',
          journal,
          routes: r.deleted.length + r.restored.length,
          ...(r.errors.length > 0 ? {detail: r.errors.map((e) => e.message).join('; ')} : {}),
        })
      } catch (error) {
        this.emit({kind: 'reconcile', op: 'failed', journal, detail: (error as Error).message})
      }
    }
  }
}
