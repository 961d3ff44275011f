// The reports `check` and `explain` return: pure functions of a Snapshot. Presenters render them.
import {
  SnapshotIndex,
  OVERLAY_SETTINGS_FILE,
  compareAddresses,
  isEstablished,
  linkUsable,
  type PrefixFacts,
} from '../model/snapshot-index.js'
import {diagnoseFacts, diagnoseHost, diagnosePrefix, type PrefixDiagnosis} from '../diagnose/engine.js'
import {inInput, NONE, tunnelEndpoints} from '../diagnose/rule.js'
import {indexOfKey, keyPrefix, keyPrefixLength, prefixKey} from '../model/prefix-key.js'
import {planPrefix, reportedRoute, whyNoPlan, type PlanItem} from '../plan/plan.js'
import {formatBirdPath, formatKernelRoute, formatLink} from '../model/format.js'
import {snapshotHost} from '../snapshot/build.js'
import {
  canonicalAddress,
  canonicalPrefix,
  coveringPrefix,
  familyOf,
  hostBitsSet,
  ipv4Network,
  ipv4Text,
  ipv4Value,
  prefixContains,
  prefixLength,
} from '../model/prefix.js'
import {blockSizeOf, DEFAULT_BLOCK_SIZE} from '../model/calico.js'
import {UsageError} from '../model/errors.js'
import {
  BROKEN_KINDS,
  type BirdRoute,
  type BrokenKind,
  type Evidence,
  type Finding,
  type KernelRoute,
  type Nexthop,
  type Pool,
  type ReportedRoute,
  type Snapshot,
  type Verdict,
} from '../model/types.js'

export const SCHEMA = 1

const NO_KEYS = new Float64Array(0)

export interface NodeSummary {
  host?: string
  birdVersion?: string
  routerId?: string
  // BIRD is recovering from a graceful restart: routes of before the restart stay until it ends
  gracefulRestart?: {waiting?: number; unit?: string; remaining?: number; wait?: number}
  sessions: {up: number; total: number}
  tunnelDev: string
  pools: Pool[]
  poolOrigin: Snapshot['poolOrigin']
  uncheckedPools?: Pool[] // vxlan and no-encapsulation pools: not judged (VXLAN routes are Felix's, over vxlan.calico)
  missing: string[] // sources not in the snapshot, or not collected live
  failed: Array<{file: string; error: string}> // sources that could not be collected
  bundleWarnings: string[] // a replayed bundle's: files edited after collection, members missing
  kubeNode?: string // with Calico's truth: which Kubernetes node this is
}

export interface PrefixLine {
  prefix: string
  verdict: Verdict
  findings: Finding[]
  plan: ReportedRoute | null
}

/**
 * Prefixes reported ok in bulk (bulk/healthy.ts), in prefix order: `keys[from]` to `keys[to - 1]` of the snapshot's
 * healthy keys, each `ok` with no findings and no plan. Presenters write their rows from the keys
 * (render/bulk-healthy.ts), without a PrefixLine or a prefix string for each: most of a full table.
 */
export interface BulkHealthyPrefixes {
  keys: Float64Array
  from: number
  to: number // > from
}

/**
 * Prefixes reported broken in bulk (Snapshot.broken, check's text report only), in prefix order: `keys[from]` to
 * `keys[to - 1]` of the snapshot's broken keys, each with `broken`'s verdict and its one finding, no plan.
 */
export interface BulkBrokenPrefixes {
  keys: Float64Array
  from: number
  to: number // > from
  broken: BrokenKind
}

export type CheckLine = PrefixLine | BulkHealthyPrefixes | BulkBrokenPrefixes

export function isBulkHealthyPrefixes(l: CheckLine): l is BulkHealthyPrefixes {
  return (l as BulkHealthyPrefixes).keys !== undefined && (l as BulkBrokenPrefixes).broken === undefined
}

export function isBulkBrokenPrefixes(l: CheckLine): l is BulkBrokenPrefixes {
  return (l as BulkBrokenPrefixes).broken !== undefined
}

// a run's rows are one string when written: a bound on its length
const MAX_RUN = 4096

export interface CheckReport {
  schema: number
  node: NodeSummary
  prefixes: PrefixLine[]
  host: {findings: Finding[]}
  summary: {
    prefixes: number
    verdicts: Partial<Record<Verdict, number>>
    errors: number
    warnings: number
    exitCode: 0 | 1
  }
}

export interface ChainStep {
  step: 'session' | 'bird' | 'resolution' | 'rule' | 'kernel' | 'tunnel'
  status: 'ok' | 'error' | 'warning' | 'info' | 'absent'
  summary: string
  evidence: Evidence[]
}

export interface ExplainReport {
  schema: number
  prefix: string
  query: string
  verdict: Verdict
  findings: Finding[]
  kernel: KernelRoute[]
  bird: BirdRoute[]
  plan: ReportedRoute | null
  planMode?: PlanItem['mode']
  planNote?: string // why there is no corrected route, when there is none
  scope?: TargetScope // the prefix is no tunnel prefix: what it is
  chain: ChainStep[]
  node: NodeSummary
}

export function nodeSummary(ctx: SnapshotIndex): NodeSummary {
  const s = ctx.snapshot
  return {
    // where no source names the host, the Kubernetes node it is (--node, node-name.txt, Calico's truth)
    host: snapshotHost(s) ?? s.nodeName,
    birdVersion: s.bird.status?.version,
    routerId: s.bird.status?.routerId,
    ...gracefulRestart(s),
    sessions: {up: ctx.bgpProtocols.filter(isEstablished).length, total: ctx.bgpProtocols.length},
    tunnelDev: s.tunnelDev,
    pools: s.pools,
    poolOrigin: s.poolOrigin,
    ...(s.uncheckedPools ? {uncheckedPools: s.uncheckedPools} : {}),
    // a source that failed is said once, with why: not also as missing
    // (live, IPPools come from --ippools or --pool, never from the node: not a missing source)
    missing: s.missing.filter(
      (m) =>
        !s.files.some((f) => f.name === m && f.error !== undefined) &&
        !(s.origin.kind === 'live' && m === 'ippools.yaml'),
    ),
    failed: s.files.filter((f) => f.error !== undefined).map((f) => ({file: f.name, error: f.error!})),
    bundleWarnings: [...(s.origin.warnings ?? []), ...refusedTableNote(ctx)],
    ...(s.calico && s.nodeName ? {kubeNode: s.nodeName} : {}),
  }
}

/**
 * A table inside 1-255 an earlier build recorded (`bundle --table`, before --table refused it): read, said in one line,
 * not used. An overlay there would be a table Felix, the kernel or BIRD keeps routes in (DESIGN §5), and `fix` always
 * refused it, so routedoctor's routes were never there.
 */
function refusedTableNote(ctx: SnapshotIndex): string[] {
  const refused = ctx.snapshot.overlay?.refusedTable
  if (refused === undefined) return []
  return [
    `${OVERLAY_SETTINGS_FILE}:${refused.line} records table ${refused.table}, inside 1-255 (Felix may claim 1-250, ` +
      `253-255 are the kernel's): --table refuses it today and fix never wrote there; routedoctor's routes are read ` +
      `and planned in table ${ctx.overlayTable} instead`,
  ]
}

function gracefulRestart(s: Snapshot): Pick<NodeSummary, 'gracefulRestart'> {
  const gr = s.bird.status?.gracefulRestart
  if (gr === undefined) return {}
  const {pos: _pos, ...state} = gr
  return {gracefulRestart: state}
}

const reportedOf = (item: PlanItem | null | undefined): ReportedRoute | null =>
  item ? reportedRoute(item.planned, item.action) : null

function line(ctx: SnapshotIndex, d: PrefixDiagnosis, plans: boolean): PrefixLine {
  return {
    prefix: d.prefix,
    verdict: d.verdict,
    findings: d.findings,
    plan: plans ? reportedOf(planPrefix(ctx, d)) : null,
  }
}

export interface CheckRunOptions {
  // false: no line carries its plan (`plan` null), for a presenter that shows none (check's text report)
  plans?: boolean
}

/**
 * `check` as it runs: every pool prefix is diagnosed when `prefixes` is consumed (once), so a full
 * table's findings and evidence are never all held at the same time; `summary()` is complete once
 * `prefixes` is exhausted.
 */
export interface CheckRun {
  schema: number
  node: NodeSummary
  prefixes: Iterable<PrefixLine>
  lines: Iterable<CheckLine> // the same, those reported in bulk in runs; consume this or `prefixes`, not both
  maxPrefixLength: number // the longest prefix text: presenters align columns before the first line
  host: {findings: Finding[]}
  summary(): CheckReport['summary']
}

export function checkRun(ctx: SnapshotIndex, opts: CheckRunOptions = {}): CheckRun {
  const plans = opts.plans ?? true
  const {prefixes: poolPrefixes, v4Keys} = ctx.poolPrefixIndex()
  const healthy = ctx.snapshot.healthy?.keys ?? NO_KEYS // reported in bulk: ok, merged in by key
  const broken = ctx.snapshot.broken?.keys ?? NO_KEYS // reported in bulk, broken: merged in by key
  const kinds = ctx.snapshot.broken?.kinds
  let maxPrefixLength = 0
  for (const p of poolPrefixes) if (p.length > maxPrefixLength) maxPrefixLength = p.length
  for (const keys of [healthy, broken]) {
    for (const key of keys) {
      const n = keyPrefixLength(key)
      if (n > maxPrefixLength) maxPrefixLength = n
    }
  }
  const host = diagnoseHost(ctx)
  const verdicts: Partial<Record<Verdict, number>> = {}
  let count = 0
  let errors = host.filter((f) => f.severity === 'error').length
  let warnings = host.filter((f) => f.severity === 'warning').length
  function* lines(): Generator<CheckLine> {
    let h = 0
    let b = 0
    for (let i = 0; i <= poolPrefixes.length; i++) {
      const before = i < v4Keys.length ? v4Keys[i] : Number.POSITIVE_INFINITY
      // those reported in bulk below the next one diagnosed, in key order: runs of healthy ones and of broken ones
      // (of one kind each)
      for (;;) {
        const hk = h < healthy.length ? healthy[h] : Number.POSITIVE_INFINITY
        const bk = b < broken.length ? broken[b] : Number.POSITIVE_INFINITY
        if (hk < bk) {
          if (hk >= before) break
          const from = h
          while (h < healthy.length && healthy[h] < before && healthy[h] < bk && h - from < MAX_RUN) h++
          count += h - from
          verdicts.ok = (verdicts.ok ?? 0) + h - from
          yield {keys: healthy, from, to: h}
        } else {
          if (bk >= before) break
          const from = b
          const kind = kinds![b]
          while (b < broken.length && broken[b] < before && broken[b] < hk && kinds![b] === kind && b - from < MAX_RUN)
            b++
          const {verdict} = BROKEN_KINDS[kind]
          count += b - from
          errors += b - from
          verdicts[verdict] = (verdicts[verdict] ?? 0) + b - from
          yield {keys: broken, from, to: b, broken: BROKEN_KINDS[kind]}
        }
      }
      if (i === poolPrefixes.length) break
      const l = line(ctx, diagnoseFacts(ctx, ctx.poolFactsAt(i)), plans)
      count++
      verdicts[l.verdict] = (verdicts[l.verdict] ?? 0) + 1
      for (const f of l.findings) {
        if (f.severity === 'error') errors++
        else if (f.severity === 'warning') warnings++
      }
      yield l
    }
  }
  function* prefixes(): Generator<PrefixLine> {
    for (const l of lines()) {
      if (isBulkBrokenPrefixes(l)) throw new Error('checkRun: prefixes reported broken in bulk have no findings to list (check\'s text report only)')
      if (!isBulkHealthyPrefixes(l)) yield l
      else
        for (let j = l.from; j < l.to; j++)
          yield {prefix: keyPrefix(l.keys[j]), verdict: 'ok', findings: NONE, plan: null}
    }
  }
  return {
    schema: SCHEMA,
    node: nodeSummary(ctx),
    prefixes: prefixes(),
    lines: lines(),
    maxPrefixLength,
    host: {findings: host},
    summary: () => ({prefixes: count, verdicts, errors, warnings, exitCode: errors > 0 ? 1 : 0}),
  }
}

/**
 * check's line of each of `prefixes` (canonical IPv4 or IPv6 prefixes), made as check's walk makes it; a prefix that
 * is no pool prefix of `ctx` (nothing holds it) is left out. `watch` re-diagnoses the prefixes a change touched with
 * it.
 */
export function checkLines(ctx: SnapshotIndex, prefixes: Iterable<string>, opts: CheckRunOptions = {}): PrefixLine[] {
  const {prefixes: poolPrefixes, v4Keys} = ctx.poolPrefixIndex()
  const out: PrefixLine[] = []
  for (const p of prefixes) {
    const key = prefixKey(p)
    // the IPv4 keys are sorted: a binary search, not an index of the whole table built per call
    const i = key >= 0 ? indexOfKey(v4Keys, key) : poolPrefixes.indexOf(p, v4Keys.length)
    if (i < 0) continue
    out.push(line(ctx, diagnoseFacts(ctx, ctx.poolFactsAt(i)), opts.plans ?? true))
  }
  return out
}

/** The whole `check` report, materialised (the UI, bundles, tests). */
export function checkReport(ctx: SnapshotIndex): CheckReport {
  const run = checkRun(ctx)
  const prefixes = [...run.prefixes]
  return {schema: run.schema, node: run.node, prefixes, host: run.host, summary: run.summary()}
}

const EXPECTED_TARGET = 'expected a prefix (192.168.110.128/26) or an address (192.168.110.130)'

/**
 * What `explain` and `fix` are about: PREFIX or ADDRESS as given when something holds it, else the tunnel prefix that
 * covers it (a prefix or address inside a block is that block), else as given. Host bits in a prefix are a usage error.
 */
export function resolveTarget(ctx: SnapshotIndex, query: string): string {
  const prefix = query.includes('/') ? canonicalPrefix(query) : canonicalPrefix(canonicalAddress(query) ?? '')
  if (!prefix) throw new UsageError(`${query}: ${EXPECTED_TARGET}`)
  const network = hostBitsSet(query)
  if (network) {
    throw new UsageError(
      `${query}: host bits set in a prefix; give the prefix ${network} or the address ${query.slice(0, query.indexOf('/'))}`,
    )
  }
  if (ctx.birdRoutesFor(prefix).length > 0 || ctx.kernelRoutesFor(prefix).length > 0) return prefix
  const covering = coveringPrefix(ctx.poolPrefixes(), prefix)
  if (covering) return covering
  if (!query.includes('/')) {
    const route = ctx.fib.lookupInTable(canonicalAddress(query)!, 254)[0]
    if (route && route.dst !== '0.0.0.0/0' && ctx.poolOf(route.dst)) return route.dst
  }
  return enclosingBlock(ctx, prefix) ?? prefix
}

/** The block of its tunnel pool that holds `prefix` (an address, or a prefix longer than the pool's blocks). */
function enclosingBlock(ctx: SnapshotIndex, prefix: string): string | undefined {
  const pool = ctx.poolOf(prefix)
  const slash = prefix.indexOf('/')
  const value = ipv4Value(prefix, 0, slash)
  if (pool === undefined || value < 0) return undefined
  const length = blockSizeOf(pool)
  if (prefixLength(prefix) <= length) return undefined
  return `${ipv4Text(ipv4Network(value, length))}/${length}`
}

/** What a prefix nothing holds is, when it is no tunnel prefix: a pool, wider than a block, outside the pools. */
export interface TargetScope {
  kind: 'pool' | 'wider-than-block' | 'outside-pools' | 'unchecked-pool'
  pool?: Pool // the pool it is or lies in (for outside-pools: none)
  blockSize?: number // the pool's block length (spec.blockSize, else Calico's default)
  inside: string[] // the tunnel prefixes it holds, at most SCOPE_LIST
  insideCount: number
  summary: string
}

const SCOPE_LIST = 20

/** The scope of `prefix` when it is not a tunnel prefix (undefined when it is one, or something holds it). */
export function targetScope(ctx: SnapshotIndex, prefix: string): TargetScope | undefined {
  const held = ctx.birdRoutesFor(prefix).length > 0 || ctx.kernelRoutesFor(prefix).length > 0
  const pool = ctx.poolOf(prefix)
  const blockSize = pool ? blockSizeOf(pool) : DEFAULT_BLOCK_SIZE[familyOf(prefix)]
  const len = prefixLength(prefix)
  if (pool && (held || len >= blockSize)) return undefined
  const all = ctx.poolPrefixes().filter((p) => prefixContains(prefix, p))
  const inside = all.slice(0, SCOPE_LIST)
  const separated = ctx.snapshot.healthy?.keys.filter((k) => prefixContains(prefix, keyPrefix(k))).length ?? 0
  const insideCount = all.length + separated
  const holds =
    insideCount === 0
      ? 'it holds no tunnel prefix'
      : `it holds ${insideCount} tunnel prefix${insideCount === 1 ? '' : 'es'}`
  const unchecked = (ctx.snapshot.uncheckedPools ?? []).find((p) => prefixContains(p.cidr, prefix))
  if (!pool && unchecked) {
    return {
      kind: 'unchecked-pool',
      pool: unchecked,
      inside,
      insideCount,
      summary: `${prefix} lies in the ${unchecked.mode} pool ${unchecked.cidr}: not checked (${unchecked.mode === 'vxlan' ? 'VXLAN routes are Felix\'s, over vxlan.calico' : 'no encapsulation'}); routedoctor judges IP-in-IP pools`,
    }
  }
  if (!pool) {
    const pools = ctx.snapshot.pools.filter((p) => prefixContains(prefix, p.cidr)).map((p) => p.cidr)
    return {
      kind: 'outside-pools',
      inside,
      insideCount,
      summary: `${prefix} is not a tunnel prefix: ${pools.length > 0 ? `it is wider than the pool${pools.length === 1 ? '' : 's'} ${pools.join(', ')}; ${holds}` : 'it lies outside every tunnel pool'}`,
    }
  }
  const kind = pool.cidr === prefix ? 'pool' : 'wider-than-block'
  return {
    kind,
    pool,
    blockSize,
    inside,
    insideCount,
    summary:
      `${prefix} is ${kind === 'pool' ? `the ${pool.mode} pool ${pool.cidr} itself` : `inside the pool ${pool.cidr}`}, wider than any block (/${blockSize}): ` +
      `not a tunnel prefix, and nothing routes it; ${holds}`,
  }
}

/**
 * `explain` of one prefix or address. `shared`: the node-wide parts (host findings, node summary) when the
 * caller explains many prefixes of one SnapshotIndex (a bundle), so they are computed once, not per prefix.
 */
export function explainReport(
  ctx: SnapshotIndex,
  query: string,
  shared?: {host: Finding[]; node: NodeSummary},
): ExplainReport {
  const prefix = resolveTarget(ctx, query)
  const scope = targetScope(ctx, prefix)
  if (scope) return scopeReport(ctx, prefix, query, scope, shared?.node)
  const d = diagnosePrefix(ctx, prefix)
  const item = planPrefix(ctx, d)
  const host = shared?.host ?? diagnoseHost(ctx)
  const f = d.facts
  // host findings that bear on this prefix: a session down when the prefix is missing or comes over it,
  // and node-wide conditions of the tunnel path
  const peers = new Set([...f.bgpNextHops, ...f.bird.map((r) => r.from).filter((a): a is string => a !== undefined)])
  const downLines = new Set(
    ctx.sessionsDown
      .filter(
        (p) =>
          (p.neighborAddress !== undefined && peers.has(p.neighborAddress)) ||
          f.bird.some((r) => r.protocol === p.name),
      )
      .map((p) => p.pos.line),
  )
  const relevant = host.filter((h) => {
    // the hash policy matters to a prefix whose next hop the kernel reaches through an ECMP route
    if (h.id === 'hash-policy-l3')
      return d.verdict !== 'local' && d.verdict !== 'not-in-pool' && f.resolutions.some((r) => r.multipath)
    if (h.id !== 'peer-down') return d.verdict !== 'local' && d.verdict !== 'not-in-pool'
    // every session down when the prefix is missing; otherwise the ones its paths came (or would come) over
    return (
      d.verdict === 'missing' ||
      h.evidence.some((e) => e.file === 'birdc-show-protocols-all.txt' && downLines.has(e.line))
    )
  })
  return {
    schema: SCHEMA,
    prefix: d.prefix,
    query,
    verdict: d.verdict,
    findings: [...d.findings, ...relevant],
    kernel: kernelRoutesOf(f),
    bird: f.bird,
    plan: reportedOf(item),
    ...(item ? {planMode: item.mode} : {planNote: whyNoPlan(ctx, d)}),
    chain: chain(ctx, d),
    node: shared?.node ?? nodeSummary(ctx),
  }
}

/**
 * The prefix's kernel routes: the one in force first (an overlay route), then BIRD's tables', then routedoctor's
 * elsewhere.
 */
function kernelRoutesOf(f: PrefixDiagnosis['facts']): KernelRoute[] {
  const e = f.effective
  if ((e === undefined || f.kernel.includes(e)) && f.ours.every((r) => f.kernel.includes(r))) return f.kernel
  return [...new Set([...(e ? [e] : []), ...f.kernel, ...f.ours])]
}

/** explain of a prefix that is no tunnel prefix: what it is, and the tunnel prefixes it holds. */
function scopeReport(
  ctx: SnapshotIndex,
  prefix: string,
  query: string,
  scope: TargetScope,
  node?: NodeSummary,
): ExplainReport {
  const kernel = ctx.kernelRoutesFor(prefix)
  const steps: ChainStep[] =
    kernel.length > 0
      ? [
          {
            step: 'kernel',
            status: 'info',
            summary: kernel.map((r) => formatKernelRoute(r)).join('\n'),
            evidence: kernel.flatMap((r) => ctx.citeKernelRoute(r)),
          },
        ]
      : []
  return {
    schema: SCHEMA,
    prefix,
    query,
    verdict: 'not-in-pool',
    findings: [],
    kernel,
    bird: ctx.birdRoutesFor(prefix),
    plan: null,
    scope,
    chain: steps,
    node: node ?? nodeSummary(ctx),
  }
}

function chain(ctx: SnapshotIndex, d: PrefixDiagnosis): ChainStep[] {
  const f = d.facts
  const steps: ChainStep[] = []
  const dev = ctx.snapshot.tunnelDev
  // 1. sessions the best paths came over, by neighbour as the next hops are; for a missing prefix, those that are down
  const sessions = [...new Set(f.bestSet.map((r) => ctx.sessionOf(r)).filter((p) => p !== undefined))].sort(
    (a, b) => compareAddresses(a.neighborAddress ?? '255.255.255.255', b.neighborAddress ?? '255.255.255.255'),
  )
  if (sessions.length > 0) {
    for (const p of sessions) {
      steps.push({
        step: 'session',
        status: isEstablished(p) ? 'ok' : 'error',
        summary: `${p.name} to ${p.neighborAddress ?? '?'}: ${p.bgpState ?? p.state}${p.lastError ? ` (${p.lastError})` : ''}`,
        evidence: ctx.cite({...p.pos, endLine: p.pos.line}),
      })
    }
  } else if (f.local) {
    steps.push({
      step: 'session',
      status: 'info',
      summary: 'no BGP session involved: the prefix originates on this node',
      evidence: [],
    })
  } else if (ctx.bgpProtocols.length > 0) {
    const down = f.ownersDown
    steps.push({
      step: 'session',
      status: down.length > 0 ? 'error' : 'absent',
      summary:
        down.length > 0
          ? `no path received; sessions not Established: ${down.map((p) => `${p.name} (${p.neighborAddress ?? '?'}: ${p.bgpState ?? p.state}${p.lastError ? `, ${p.lastError}` : ''})`).join('; ')}`
          : ctx.bgpProtocols.length === 1
            ? 'no path received over the one Established session'
            : `no path received over any of ${ctx.bgpProtocols.length} Established sessions`,
      evidence: down.flatMap((p) => ctx.cite({...p.pos, endLine: p.pos.line})),
    })
  } else {
    const read = ctx.snapshot.files.some((f) => f.name === 'birdc-show-protocols-all.txt' && f.error === undefined)
    const summary = read && ctx.has('birdc-show-protocols-all.txt')
      ? 'BIRD has no BGP protocols'
      : ctx.haveBird
        ? `no BGP session data ${inInput(ctx)} (no birdc-show-protocols-all.txt)`
        : `no BIRD data ${inInput(ctx)}`
    steps.push({step: 'session', status: 'absent', summary, evidence: []})
  }
  // 2. BIRD's paths
  steps.push(
    f.bird.length > 0
      ? {
          step: 'bird',
          status: f.birdPrimary?.dest === 'unreachable' ? 'error' : 'ok',
          summary: f.bird
            .map((r) => `${formatBirdPath(r)}${f.bestSet.includes(r) && !r.primary ? ' (equal best)' : ''}`)
            .join('\n'),
          evidence: f.bird.flatMap((r) => ctx.cite(r.pos)),
        }
      : {
          step: 'bird',
          status: ctx.haveBird ? 'error' : 'absent',
          summary: ctx.haveBird ? 'BIRD holds no path for this prefix' : `no BIRD routes ${inInput(ctx)}`,
          evidence: [],
        },
  )
  // 3. next-hop resolution in the kernel FIB
  for (const r of f.resolutions) {
    const route = r.lookup.route
    steps.push({
      step: 'resolution',
      status: !r.lookup.reachable ? 'error' : r.viaInet6 || r.multipath ? 'warning' : 'ok',
      summary: route
        ? `${r.bgpNextHop} → ${formatKernelRoute(route).split('\n')[0]}${r.multipath ? ` (ECMP: ${route.nexthops.map(ecmpHop).join(', ')})` : ''}` +
          `${r.viaInet6 ? '; IPv6 link-local next hops, which BIRD before 2.0.8 cannot import' : ''}${r.own ? '; this is our own address' : ''}`
        : `${r.bgpNextHop} → no kernel route`,
      evidence: ctx.resolutionEvidence(r)})
  }
  // 4. the policy routing rule that decides, when it is not one of the kernel's own three
  const e = f.effective
  if (f.rule && e) {
    steps.push({
      step: 'rule',
      status: 'info',
      summary: `${f.rule.priority}: ${f.rule.text}\n→ table ${e.table} holds ${f.prefix}: it is looked up before main`,
      evidence: ctx.cite(f.rule.pos),
    })
  }
  // 5. the kernel route (the one in force first)
  const shown = kernelRoutesOf(f)
  steps.push(
    e
      ? {
          step: 'kernel',
          status: d.verdict === 'ok' || d.verdict === 'local' ? 'ok' : 'error',
          summary:
            shown.map((r) => formatKernelRoute(r)).join('\n') +
            (e.type === 'unicast' && !f.local
              ? e.nexthops.every((n) => n.dev === dev)
                ? `\n→ through ${dev}${strayEndpoints(ctx, f, e)}`
                : f.pool?.crossSubnet && !f.tunnelExpected
                  ? `\n→ not through ${dev}: the next hop is on this node's subnet, which CrossSubnet reaches directly`
                  : `\n→ not through ${dev}`
              : ''),
          evidence: shown.flatMap((r) => ctx.citeKernelRoute(r)),
        }
      : {
          step: 'kernel',
          status: ctx.haveKernel ? 'error' : 'absent',
          summary: ctx.haveKernel ? 'no kernel route for this prefix' : `no kernel routes ${inInput(ctx)}`,
          evidence: [],
        },
  )
  // 6. the tunnel device
  const link = ctx.links.get(dev)
  steps.push(
    link
      ? {
          step: 'tunnel',
          status: linkUsable(link) ? 'ok' : 'error',
          summary: formatLink(link),
          evidence: ctx.cite(link.pos, () => formatLink(link)),
        }
      : {
          step: 'tunnel',
          status: ctx.haveLinks ? 'error' : 'absent',
          summary: ctx.haveLinks ? `no ${dev} device` : `no links ${inInput(ctx)}`,
          evidence: [],
        },
  )
  return steps
}

/** `, to N, which BIRD's best paths do not name (they name M)`: a tunnel route to an endpoint BIRD does not name. */
function strayEndpoints(ctx: SnapshotIndex, f: PrefixFacts, route: KernelRoute): string {
  const stray = (tunnelEndpoints(ctx, route) ?? []).filter((h) => !f.bgpNextHops.includes(h))
  if (stray.length === 0 || f.bgpNextHops.length === 0) return ''
  return `, to ${stray.join(', ')}, which BIRD's best paths do not name (they name ${f.bgpNextHops.join(', ')})`
}

/** One next hop of an ECMP route as `[via [inet6] GW] [dev IF]`: a next hop may have no device (or no gateway). */
function ecmpHop(n: Nexthop): string {
  const via = n.gateway ? `via ${n.gateway.family === 'inet6' ? 'inet6 ' : ''}${n.gateway.address}` : ''
  return n.dev === undefined ? via : via === '' ? `dev ${n.dev}` : `${via} dev ${n.dev}`
}
