// What `watch` knows of the node after a diagnosis, and the changes between two such states: pure, no I/O.
// Prefixes found healthy in bulk are held as their keys only (most of a full table); every other prefix
// keeps its verdict and finding ids.
import {indexOfKey, keyPrefix, prefixKey} from '../model/prefix-key.js'
import type {Severity} from '../model/types.js'
import type {WatchChange} from '../report/watch.js'

export interface SeenFinding {
  id: string
  severity: Severity
  title: string
}

export interface SeenPrefix {
  verdict: string
  findings: SeenFinding[]
}

export interface SeenSession {
  state: string // BGP state (Established, Active, ...), else the protocol's state
  neighbor?: string
  lastError?: string
}

export interface NodeState {
  prefixes: Map<string, SeenPrefix> // every prefix not found healthy
  healthyKeys: Float64Array // sorted keys of the prefixes reported ok in bulk (model/prefix-key.ts prefixKey)
  verdicts: Record<string, number>
  host: SeenFinding[]
  sessions: Map<string, SeenSession>
  sources: Map<string, string | undefined> // source → its error, undefined when it was read
  overlayRoutes: number
}

export type {WatchChange} from '../report/watch.js'

/** A prefix's verdict in `s`: its own, `ok` when found healthy, `absent` when neither BIRD nor the kernel holds it. */
export function verdictIn(s: NodeState, prefix: string): string {
  const seen = s.prefixes.get(prefix)
  if (seen) return seen.verdict
  return hasKey(s.healthyKeys, prefixKey(prefix)) ? 'ok' : 'absent'
}

const hasKey = (keys: Float64Array, key: number): boolean => key >= 0 && indexOfKey(keys, key) >= 0

const findingsOf = (s: NodeState, prefix: string): SeenFinding[] => s.prefixes.get(prefix)?.findings ?? []

/** A prefix's verdict change and the findings that appeared or cleared, added to `out`. */
function prefixChanges(
  prefix: string,
  from: string,
  had: SeenFinding[],
  to: string,
  has: SeenFinding[],
  out: WatchChange[],
): void {
  if (from !== to) out.push({kind: 'verdict', prefix, from, to})
  const was = new Map(had.map((f) => [f.id, f]))
  const now = new Map(has.map((f) => [f.id, f]))
  for (const [id, f] of now)
    if (!was.has(id)) out.push({kind: 'finding', op: 'appeared', id, severity: f.severity, prefix, title: f.title})
  for (const [id, f] of was)
    if (!now.has(id)) out.push({kind: 'finding', op: 'cleared', id, severity: f.severity, prefix, title: f.title})
}

/**
 * `state` with the prefixes of `touched` diagnosed again (changed in place): each takes its line in `seen`, or leaves
 * when it has none (nothing holds it now). Returns the changes, as changesBetween would give them.
 */
export function updatePrefixes(
  state: NodeState,
  touched: Iterable<string>,
  seen: ReadonlyMap<string, SeenPrefix>,
): WatchChange[] {
  const out: WatchChange[] = []
  const noLongerHealthy = new Set<number>()
  for (const prefix of [...new Set(touched)].sort()) {
    const from = verdictIn(state, prefix)
    const had = findingsOf(state, prefix)
    const now = seen.get(prefix)
    if (from !== 'absent') state.verdicts[from] = (state.verdicts[from] ?? 1) - 1
    if (state.verdicts[from] === 0) delete state.verdicts[from]
    if (now) state.verdicts[now.verdict] = (state.verdicts[now.verdict] ?? 0) + 1
    const key = prefixKey(prefix)
    if (hasKey(state.healthyKeys, key)) noLongerHealthy.add(key)
    if (now) state.prefixes.set(prefix, now)
    else state.prefixes.delete(prefix)
    prefixChanges(prefix, from, had, now?.verdict ?? 'absent', now?.findings ?? [], out)
  }
  if (noLongerHealthy.size > 0) state.healthyKeys = state.healthyKeys.filter((k) => !noLongerHealthy.has(k))
  return out
}

/** Host findings by id: one appears when the first of its id does, and clears when the last goes. */
function hostById(host: SeenFinding[]): Map<string, SeenFinding> {
  const out = new Map<string, SeenFinding>()
  for (const f of host) if (!out.has(f.id)) out.set(f.id, f)
  return out
}

/**
 * What changed from `before` to `after`, in a stable order: sources, sessions, prefixes (verdict then findings; not
 * compared when `withPrefixes` is false), host findings.
 */
export function changesBetween(before: NodeState, after: NodeState, withPrefixes = true): WatchChange[] {
  const out: WatchChange[] = []
  for (const [source, error] of after.sources) {
    const was = before.sources.has(source) ? before.sources.get(source) : undefined
    if (error !== undefined && was === undefined) out.push({kind: 'source', source, op: 'failed', error})
    else if (error === undefined && was !== undefined) out.push({kind: 'source', source, op: 'recovered'})
  }
  const names = new Set([...before.sessions.keys(), ...after.sessions.keys()])
  for (const name of names) {
    const a = before.sessions.get(name)
    const b = after.sessions.get(name)
    const from = a?.state ?? 'absent'
    const to = b?.state ?? 'absent'
    if (from === to) continue
    const neighbor = b?.neighbor ?? a?.neighbor
    out.push({
      kind: 'session',
      name,
      ...(neighbor ? {neighbor} : {}),
      from,
      to,
      ...(b?.lastError ? {lastError: b.lastError} : {}),
    })
  }
  // only the prefixes whose line may differ are compared and sorted: most of a full table's are the same
  const prefixes: string[] = []
  if (withPrefixes) {
    for (const [prefix, now] of after.prefixes) {
      const was = before.prefixes.get(prefix)
      if (was === undefined || was.verdict !== now.verdict || !sameIds(was.findings, now.findings))
        prefixes.push(prefix)
    }
    for (const prefix of before.prefixes.keys()) if (!after.prefixes.has(prefix)) prefixes.push(prefix)
  }
  prefixes.sort()
  for (const prefix of prefixes)
    prefixChanges(
      prefix,
      verdictIn(before, prefix),
      findingsOf(before, prefix),
      verdictIn(after, prefix),
      findingsOf(after, prefix),
      out,
    )
  const was = hostById(before.host)
  const now = hostById(after.host)
  for (const [id, f] of now)
    if (!was.has(id)) out.push({kind: 'finding', op: 'appeared', id, severity: f.severity, title: f.title})
  for (const [id, f] of was)
    if (!now.has(id)) out.push({kind: 'finding', op: 'cleared', id, severity: f.severity, title: f.title})
  return out
}

const sameIds = (a: readonly SeenFinding[], b: readonly SeenFinding[]): boolean =>
  a.length === b.length && a.every((f, i) => f.id === b[i].id)

export function emptyState(): NodeState {
  return {
    prefixes: new Map(),
    healthyKeys: new Float64Array(0),
    verdicts: {},
    host: [],
    sessions: new Map(),
    sources: new Map(),
    overlayRoutes: 0,
  }
}

/**
 * Flapping (DESIGN §4 `route-flapping`, `peer-flapping`): a thing that changed state more than `count` times
 * within `windowMs`. Keeps each thing's recent change times only; a thing flaps until its changes in the
 * window fall back to `count` or fewer.
 */
export class FlapTracker {
  private readonly times = new Map<string, number[]>()
  private readonly flapping = new Set<string>()

  constructor(readonly count: number, readonly windowMs: number) {}

  /** Records a change of `key` at `now`; true when `key` starts flapping with it. */
  record(key: string, now: number): boolean {
    const t = this.times.get(key) ?? []
    t.push(now)
    this.times.set(key, t)
    this.prune(key, t, now)
    if (t.length > this.count && !this.flapping.has(key)) {
      this.flapping.add(key)
      return true
    }
    return false
  }

  /** The keys that stopped flapping by `now` (their changes left the window). */
  expire(now: number): string[] {
    const stopped: string[] = []
    for (const [key, t] of this.times) {
      this.prune(key, t, now)
      if (this.flapping.has(key) && t.length <= this.count) {
        this.flapping.delete(key)
        stopped.push(key)
      }
    }
    return stopped
  }

  get current(): ReadonlySet<string> {
    return this.flapping
  }

  private prune(key: string, t: number[], now: number): void {
    let drop = 0
    while (drop < t.length && t[drop] <= now - this.windowMs) drop++
    if (drop > 0) t.splice(0, drop)
    if (t.length === 0 && !this.flapping.has(key)) this.times.delete(key)
  }
}

/**
 * The agent's state as `/state` serves it: every prefix with its verdict and finding ids, in check's order of
 * fields (the healthy ones reported in bulk as ok), the host findings and the sessions.
 */
export function stateJson(s: NodeState): unknown {
  const prefixes: Array<{prefix: string; verdict: string; findings: Array<{id: string; severity: string}>}> = []
  for (const key of s.healthyKeys) prefixes.push({prefix: keyPrefix(key), verdict: 'ok', findings: []})
  for (const [prefix, p] of s.prefixes)
    prefixes.push({prefix, verdict: p.verdict, findings: p.findings.map((f) => ({id: f.id, severity: f.severity}))})
  prefixes.sort((a, b) => (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0))
  return {
    schema: 1, prefixes, verdicts: s.verdicts,
    host: {findings: s.host.map((f) => ({id: f.id, severity: f.severity}))},
    sessions: Object.fromEntries(s.sessions),
  }
}
