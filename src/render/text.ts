// Plain-text presenters: what a network engineer reads top to bottom.
import type {ChalkInstance} from 'chalk'

import {type AnyPlannedRoute, counted, formatKernelRoute, ipRouteReplace, tableClause} from '../model/format.js'
import type {FixMode, FixReport, PlannedFix} from '../report/fix.js'
import {BROKEN_KINDS, type Evidence, type Finding, type KernelRoute, type Verdict} from '../model/types.js'
import {
  type CheckReport,
  type CheckRun,
  type ExplainReport,
  type NodeSummary,
  type BulkHealthyPrefixes,
  isBulkBrokenPrefixes,
  isBulkHealthyPrefixes,
} from '../report/report.js'
import {bulkHealthyRows} from './bulk-healthy.js'
import {severityColor, verdictColor} from './style.js'

function pad(s: string, n: number): string {
  return s.length >= n ? `${s} ` : s + ' '.repeat(n - s.length)
}

function indent(text: string, by: string): string {
  return text.split('\n').map((l) => by + l).join('\n')
}

function gracefulRestartText(gr: NonNullable<NodeSummary['gracefulRestart']>): string {
  const waiting = gr.waiting !== undefined ? `, waiting for ${gr.waiting} ${gr.unit ?? 'protocols'} to recover` : ''
  const timer = gr.remaining !== undefined ? `, wait timer ${gr.remaining}/${gr.wait ?? '?'} s` : ''
  return `BIRD graceful restart recovery in progress${waiting}${timer}: ` +
    'routes from before the restart stay in the kernel until it ends'
}

/** `2/2 Established`; no protocols read (missing, or BIRD's socket failed) is no claim about sessions, not "0/0". */
export function sessionsWords(s: {up: number; total: number}, protocolsRead: boolean): string {
  return s.total === 0 && !protocolsRead ? 'unknown (no BIRD protocols)' : `${s.up}/${s.total} Established`
}

/**
 * The node's name, or plainly that no source names it (BIRD 1.6 prints no host name, a snapshot taken by hand has no
 * `hostname` file), with BIRD's router id, which on a Calico node is its address.
 */
export function nodeLabel(n: Pick<NodeSummary, 'host' | 'routerId'>): string {
  if (n.host !== undefined) return n.host
  return n.routerId !== undefined ? `unknown (router id ${n.routerId})` : 'unknown'
}

export function renderNode(n: NodeSummary, c: ChalkInstance): string {
  const pools =
    n.pools.length > 0
      ? n.pools.map((p) => `${p.cidr} (${p.mode}${p.crossSubnet ? ' CrossSubnet' : ''})`).join(', ') +
        ` from ${n.poolOrigin === 'flag' ? '--pool' : n.poolOrigin}`
      : n.uncheckedPools?.length
        ? c.yellow('no IP-in-IP pool')
        : c.yellow(
            'none found (give --pool CIDR=ipip, --ippools FILE, or a snapshot with ippools.yaml or a Calico bird.conf)',
          )
  const noProtocols = (f: string) => f === 'birdc-show-protocols-all.txt'
  const sessions = sessionsWords(n.sessions, !n.missing.some(noProtocols) && !n.failed.some((f) => noProtocols(f.file)))
  const lines = [
    `${c.bold('node')} ${nodeLabel(n)}${n.kubeNode && n.kubeNode !== n.host ? ` (Kubernetes node ${n.kubeNode})` : ''}  ${c.bold('BIRD')} ${n.birdVersion ?? 'unknown'}  ${c.bold('sessions')} ${sessions}  ${c.bold('tunnel')} ${n.tunnelDev}`,
    `${c.bold('pools')} ${pools}`,
  ]
  if (n.gracefulRestart !== undefined) lines.push(c.yellow(gracefulRestartText(n.gracefulRestart)))
  for (const p of n.uncheckedPools ?? []) {
    lines.push(
      c.yellow(
        `pool ${p.cidr} (${p.mode}) not checked: ${p.mode === 'vxlan' ? 'VXLAN routes are Felix\'s, over vxlan.calico' : 'no encapsulation: BIRD routes it directly'}; routedoctor judges IP-in-IP pools`,
      ),
    )
  }
  // the same words for a snapshot and the live node (a report replays byte for byte)
  if (n.missing.length > 0) lines.push(c.dim(`missing sources: ${n.missing.join(', ')}`))
  lines.push(...failedLines(n.failed).map((l) => c.yellow(l)))
  for (const w of n.bundleWarnings) lines.push(c.yellow(`bundle: ${w}`))
  return lines.join('\n')
}

/** Sources that failed, one line per reason: a BIRD socket that cannot be reached fails three sources alike. */
export function failedLines(failed: NodeSummary['failed']): string[] {
  const byError = new Map<string, string[]>()
  for (const f of failed) byError.set(f.error, [...(byError.get(f.error) ?? []), f.file])
  // a file that is there but says nothing: not "could not collect"
  return [...byError].map(([error, files]) => /^the file (is empty|holds no)/.test(error)
    ? `${files.join(', ')}: ${error.replace(/^the file (is )?/, '')}`
    : `could not collect ${files.join(', ')}: ${error}`)
}

/** file:line[-endLine], or file[element] for a route of a one-line JSON dump. */
export function evidenceWhere(x: Evidence): string {
  if (x.element !== undefined) return `${x.file}[${x.element}]`
  return `${x.file}:${x.line}${x.endLine !== x.line ? `-${x.endLine}` : ''}`
}

export function renderEvidence(e: Evidence[], c: ChalkInstance, by = '      '): string[] {
  return e.map((x) => {
    const where = evidenceWhere(x)
    const text = x.text.split('\n')
    return `${by}${c.dim(where)}  ${text[0]}${text
      .slice(1)
      .map((t) => `\n${by}${' '.repeat(where.length + 2)}${t}`)
      .join('')}`
  })
}

const evidenceKey = (e: Evidence) => `${e.file}:${e.line}-${e.endLine}\n${e.text}`

/** `shown`: evidence already on the screen, cited by file and line only (and the new evidence is added to it). */
export function renderFinding(f: Finding, c: ChalkInstance, shown?: Set<string>): string {
  const sev = severityColor(c, f.severity)(f.severity.toUpperCase())
  const out = [`  ${sev} ${c.bold(f.id)}${f.prefix ? ` ${f.prefix}` : ''}: ${f.title}`, indent(f.detail, '      ')]
  const fresh = shown ? f.evidence.filter((e) => !shown.has(evidenceKey(e))) : f.evidence
  const seen = shown ? f.evidence.filter((e) => shown.has(evidenceKey(e))) : []
  if (fresh.length > 0) out.push('      evidence:', ...renderEvidence(fresh, c, '        '))
  const cites = [...new Set(seen.map(evidenceWhere))].join(', ')
  if (seen.length > 0) out.push(`      ${fresh.length > 0 ? 'and' : 'evidence:'} ${c.dim(cites)} ${c.dim('(above)')}`)
  for (const e of fresh) shown?.add(evidenceKey(e))
  if (f.fix) out.push(`      ${c.bold('what to do:')} ${f.fix}`)
  return out.join('\n')
}

export function renderPlanned(p: AnyPlannedRoute): string {
  const head = `${p.dst}${tableClause(p.table)} proto ${p.protocol} metric ${p.metric}`
  if (p.nexthops.length === 1) {
    const n = p.nexthops[0]
    return `${head} via ${n.gateway} dev ${n.dev}${n.onlink ? ' onlink' : ''}`
  }
  return [
    head,
    ...p.nexthops.map((n) => `\tnexthop via ${n.gateway} dev ${n.dev} weight ${n.weight}${n.onlink ? ' onlink' : ''}`),
  ].join('\n')
}

export function renderCheck(r: CheckReport, c: ChalkInstance): string {
  let maxPrefixLength = 0
  for (const p of r.prefixes) if (p.prefix.length > maxPrefixLength) maxPrefixLength = p.prefix.length
  return [...renderCheckLines({...r, lines: r.prefixes, maxPrefixLength, summary: () => r.summary}, c)].join('\n')
}

/**
 * `check` as lines, errors first, then the rest in prefix order. Broken prefixes are written as they
 * are diagnosed; the others are held until the end. A run of bulk-healthy prefixes is one piece of several lines.
 */
export function* renderCheckLines(r: CheckRun, c: ChalkInstance): Generator<string> {
  yield renderNode(r.node, c)
  yield ''
  const width = Math.max(20, r.maxPrefixLength + 2)
  // a row without findings ends at its verdict (no trailing spaces)
  const row = (prefix: string, verdict: Verdict, ids: string) =>
    pad(prefix, width) + verdictColor(c, verdict)(ids === '' ? verdict : pad(verdict, 16)) + ids
  const healthyRow = {before: '', after: verdictColor(c, 'ok')('ok'), sep: '\n', width} // row(prefix, 'ok', '')
  // row(prefix, VERDICT, FINDING) of each kind of prefix reported broken in bulk
  const brokenRows = new Map(BROKEN_KINDS.map((k) => [k, {before: '', after: verdictColor(c, k.verdict)(pad(k.verdict, 16)) + k.finding, sep: '\n', width}]))
  let header = false
  // held until the broken ones are written: ok, then local and not-in-pool, as [prefix, verdict, ids] triples
  // (three references, not a rendered line: a full table holds most of its prefixes here), and among the ok
  // ones runs of bulk-healthy prefixes (one reference each)
  const later: Array<Array<string | BulkHealthyPrefixes>> = [[], []]
  for (const p of r.lines) {
    if (!header) {
      yield c.bold(pad('PREFIX', width) + pad('VERDICT', 16) + 'FINDINGS')
      header = true
    }
    if (isBulkBrokenPrefixes(p)) {
      yield bulkHealthyRows(p, brokenRows.get(p.broken)!)
      continue
    }
    if (isBulkHealthyPrefixes(p)) {
      later[0].push(p)
      continue
    }
    let ids = ''
    // an id found for several next hops is listed once
    for (const f of p.findings)
      if (f.severity !== 'info' && !(ids === f.id || ids.startsWith(`${f.id},`) || ids.includes(`, ${f.id}`)))
        ids += ids === '' ? f.id : `, ${f.id}`
    if (p.verdict === 'ok') later[0].push(p.prefix, p.verdict, ids)
    else if (p.verdict === 'local' || p.verdict === 'not-in-pool') later[1].push(p.prefix, p.verdict, ids)
    else yield row(p.prefix, p.verdict, ids)
  }
  for (const group of later) {
    for (let i = 0; i < group.length; ) {
      const at = group[i]
      if (typeof at === 'string') {
        yield row(at, group[i + 1] as Verdict, group[i + 2] as string)
        i += 3
      } else {
        yield bulkHealthyRows(at, healthyRow)
        i++
      }
    }
  }
  if (!header)
    yield c.yellow(
      r.node.pools.length === 0
        ? `No ${r.node.uncheckedPools?.length ? 'IP-in-IP ' : ''}pools: no prefix is a tunnel prefix.`
        : 'No prefix inside the pools is held by BIRD or routed by the kernel.',
    )
  yield ''
  yield c.bold('Host')
  if (r.host.findings.length === 0) yield c.green('  no host findings')
  for (const f of r.host.findings)
    yield `  ${severityColor(c, f.severity)(f.severity.toUpperCase())} ${c.bold(f.id)}: ${f.title}`
  const summary = r.summary()
  const verdicts = Object.entries(summary.verdicts)
    .map(([v, n]) => `${n} ${v}`)
    .join(', ')
  yield ''
  yield `${counted(summary.prefixes, 'prefix', 'prefixes')}${verdicts ? ` (${verdicts})` : ''}; ${counted(summary.errors, 'error')}, ${counted(summary.warnings, 'warning')}.`
  if (summary.exitCode !== 0)
    yield c.dim('`routedoctor explain PREFIX` shows why, with evidence; `routedoctor fix` shows the corrected routes.')
}

const STEP_TITLE = {
  session: 'BGP session',
  bird: 'BIRD paths',
  resolution: 'Next hop',
  rule: 'Policy rule',
  kernel: 'Kernel route',
  tunnel: 'Tunnel device',
}

export interface ExplainTextOptions {
  node?: boolean // the node's header (default true; the TUI shows it in its own header)
  evidenceOnce?: boolean // evidence already shown is cited by file and line only (default false)
}

export function renderExplain(r: ExplainReport, c: ChalkInstance, opts: ExplainTextOptions = {}): string {
  const covers = r.query !== r.prefix ? c.dim(` (holds ${r.query})`) : ''
  if (r.scope) {
    const out = [`${c.bold(r.prefix)}: ${c.dim('NOT A TUNNEL PREFIX')}`, renderNode(r.node, c), '', r.scope.summary]
    if (r.scope.inside.length > 0) {
      out.push('', c.bold('Tunnel prefixes inside it'), ...r.scope.inside.map((p) => `  ${p}`))
      if (r.scope.insideCount > r.scope.inside.length)
        out.push(c.dim(`  and ${r.scope.insideCount - r.scope.inside.length} more (routedoctor check lists them)`))
      out.push(c.dim('`routedoctor explain BLOCK` explains one of them.'))
    }
    for (const s of r.chain) out.push('', `${c.bold('Kernel route')} ${s.summary}`)
    return out.join('\n')
  }
  const out = [`${c.bold(r.prefix)}${covers}: ${verdictColor(c, r.verdict)(r.verdict.toUpperCase())}`]
  if (opts.node !== false) out.push(renderNode(r.node, c))
  out.push('')
  const shown = opts.evidenceOnce === false ? undefined : new Set<string>()
  let n = 1
  for (const s of r.chain) {
    const mark =
      s.status === 'ok'
        ? c.green('✔')
        : s.status === 'error'
          ? c.red('✘')
          : s.status === 'warning'
            ? c.yellow('!')
            : c.dim('·')
    const lines = s.summary.split('\n')
    // two spaces at least after the longest title: the text column is where wrapped rows continue
    out.push(`${n++}. ${mark} ${c.bold(pad(STEP_TITLE[s.step], 15))}${lines[0]}`)
    for (const l of lines.slice(1)) out.push(`${' '.repeat(20)}${l}`)
    out.push(...renderEvidence(shown ? s.evidence.filter((e) => !shown.has(evidenceKey(e))) : s.evidence, c, '       '))
    for (const e of s.evidence) shown?.add(evidenceKey(e))
  }
  out.push('', c.bold('Findings'))
  if (r.findings.length === 0) out.push(c.green('  none'))
  for (const f of r.findings) out.push(renderFinding(f, c, shown))
  out.push('', c.bold('Corrected route'))
  if (!r.plan)
    out.push(
      `  none${r.planNote ? `: ${r.planNote}` : r.verdict === 'ok' || r.verdict === 'local' ? ': the route is right as it is' : ''}`,
    )
  else {
    out.push(indent(renderPlanned(r.plan), '  '))
    const beside = besideOverlay(r.kernel, r.plan.protocol)
    out.push(
      c.dim(
        `  (in routedoctor's overlay table ${r.plan.table}, which BIRD never learns; ${beside}; routedoctor fix --apply programs it)`,
      ),
    )
    out.push(`  ${ipRouteReplace(r.plan)}`)
  }
  return out.join('\n')
}

/** What becomes of the other routes for a prefix when routedoctor's goes into its overlay table: named by owner. */
function besideOverlay(current: readonly KernelRoute[], ours: string): string {
  const owners = [...new Set(current.filter((k) => k.protocol !== ours).map((k) => k.protocol))]
  if (owners.length === 0) return current.length === 0 ? 'the kernel has no route for it' : 'the kernel has no other route for it'
  if (owners.length === 1 && owners[0] === 'bird') return 'BIRD\'s route stays as it is'
  return owners.length === 1
    ? `the proto ${owners[0]} route stays as it is`
    : `the ${owners.map((o) => `proto ${o}`).join(' and ')} routes stay as they are`
}

export function renderFix(r: FixReport, c: ChalkInstance): string {
  const out: string[] = []
  for (const l of failedLines(r.node.failed)) out.push(c.yellow(l))
  for (const w of r.node.bundleWarnings) out.push(c.yellow(`bundle: ${w}`))
  if (r.unavailable) out.push(c.red(`Cannot plan: ${r.unavailable}.`))
  else if (r.scope?.startsWith('no tunnel prefix')) out.push(c.yellow(`Nothing to fix: ${r.scope}.`))
  else if (r.entries.length === 0 && r.rules.length === 0 && r.skipped.length > 0) {
    out.push(c.yellow(`Nothing routedoctor can program${r.scope ? ` for ${r.scope}` : ''}:`))
  } else if (r.entries.length === 0 && r.rules.length === 0) {
    const inPlace = r.kept > 0 ? ` (${counted(r.kept, 'route')} in the overlay table ${r.table})` : ''
    out.push(
      c.green(
        r.scope
          ? `Nothing to fix: ${r.scope} needs no correction${inPlace}.`
          : `Nothing to fix: every tunnel prefix is healthy, has nothing routedoctor can program, or its correction is in place${inPlace}.`,
      ),
    )
  }
  for (const e of r.entries) {
    out.push(`${c.bold(e.prefix)}  ${c.red(e.verdict)}`)
    for (const k of e.current) {
      const atKey = k.tableId === e.planned.table && k.metric === e.planned.metric
      const gone = e.action === 'delete' ? atKey && k.protocol === e.planned.protocol : atKey
      out.push(...formatKernelRoute(k).split('\n').map((l, i) => `${i === 0 ? (gone ? c.red('  -') : c.dim('  =')) : '   '} ${l}`))
    }
    if (e.action === 'replace') {
      out.push(...renderPlanned(e.planned).split('\n').map((l, i) => `${i === 0 ? c.green('  +') : '   '} ${l}`))
      const beside = besideOverlay(e.current, e.planned.protocol)
      out.push(c.dim(`    in the overlay table ${e.planned.table}, which BIRD never learns; ${beside}`))
    } else {
      out.push(c.dim(`    withdrawn: routedoctor's route is stale or sits where BIRD learns it`))
    }
    out.push(`    ${e.ipRoute}`, '')
  }
  if (r.rules.length > 0) {
    out.push(c.bold(`Rules of the overlay table ${r.table}`))
    for (let i = 0; i < r.rules.length; i++) {
      const rule = r.rules[i]
      out.push(
        `${rule.action === 'add' ? c.green('  +') : c.red('  -')} ${rule.priority}: from all to ${rule.to} lookup ${rule.table}`,
      )
      out.push(`    ${r.ruleLines[i]}`)
    }
    out.push('')
  }
  for (const s of r.skipped) out.push(c.yellow(`${s.prefix}  ${s.verdict}: nothing planned (${s.reason})`))
  return out.join('\n')
}

export function renderBirdConfig(r: FixReport, c: ChalkInstance): string {
  const a = r.birdConfig
  const out = [a.supported ? c.green(a.reason) : c.yellow(a.reason)]
  if (a.snippet) out.push('', a.snippet)
  return out.join('\n')
}

/** `fix`'s text for `mode`: the BIRD filter, or the plan (a dry run's with a note on how to apply it). */
export function renderFixPlan(p: Pick<PlannedFix, 'report' | 'changes'>, mode: FixMode, c: ChalkInstance): string {
  if (mode === 'bird-config') return renderBirdConfig(p.report, c)
  const note = mode === 'dry-run' && p.report.unavailable === undefined && p.changes > 0
  return (
    renderFix(p.report, c) +
    (note ? c.dim('\nDry run: nothing was changed. `routedoctor fix --apply` makes these changes.') : '')
  )
}
