// Plain-text presenters: what a network engineer reads top to bottom.
import type {ChalkInstance} from 'chalk'

import {formatKernelRoute, ipRouteReplace} from '../model/format.js'
import type {FixReport} from '../services/fix.js'
import type {Evidence, Finding, PlannedRoute, Verdict} from '../model/types.js'
import {type CheckReport, type CheckRun, type ExplainReport, type NodeSummary, type SettledPrefixes, isSettledPrefixes} from '../services/report.js'
import {settledRows} from './settled.js'
import {severityColor, verdictColor} from './style.js'

function pad(s: string, n: number): string {
  return s.length >= n ? `${s} ` : s + ' '.repeat(n - s.length)
}

function indent(text: string, by: string): string {
  return text.split('\n').map((l) => by + l).join('\n')
}

export function renderNode(n: NodeSummary, c: ChalkInstance): string {
  const pools = n.pools.length > 0
    ? n.pools.map((p) => `${p.cidr} (${p.mode})`).join(', ') + ` from ${n.poolOrigin === 'flag' ? '--pool' : n.poolOrigin}`
    : c.yellow('none found (give --pool CIDR=ipip, --ippools FILE, or a snapshot with ippools.yaml or a Calico bird.conf)')
  const lines = [
    `${c.bold('node')} ${n.host ?? '?'}${n.kubeNode && n.kubeNode !== n.host ? ` (Kubernetes node ${n.kubeNode})` : ''}  ${c.bold('BIRD')} ${n.birdVersion ?? '?'}  ${c.bold('sessions')} ${n.sessions.up}/${n.sessions.total} Established  ${c.bold('tunnel')} ${n.tunnelDev}`,
    `${c.bold('pools')} ${pools}`,
  ]
  if (n.missing.length > 0) lines.push(c.dim(`not in the snapshot: ${n.missing.join(', ')}`))
  for (const f of n.failed) lines.push(c.yellow(`could not collect ${f.file}: ${f.error}`))
  for (const w of n.bundleWarnings) lines.push(c.yellow(`bundle: ${w}`))
  return lines.join('\n')
}

export function renderEvidence(e: Evidence[], c: ChalkInstance, by = '      '): string[] {
  return e.map((x) => {
    const where = `${x.file}:${x.line}${x.endLine !== x.line ? `-${x.endLine}` : ''}`
    const text = x.text.split('\n')
    return `${by}${c.dim(where)}  ${text[0]}${text.slice(1).map((t) => `\n${by}${' '.repeat(where.length + 2)}${t}`).join('')}`
  })
}

export function renderFinding(f: Finding, c: ChalkInstance): string {
  const sev = severityColor(c, f.severity)(f.severity.toUpperCase())
  const out = [`  ${sev} ${c.bold(f.id)}${f.prefix ? ` ${f.prefix}` : ''}: ${f.title}`, indent(f.detail, '      ')]
  if (f.evidence.length > 0) out.push('      evidence:', ...renderEvidence(f.evidence, c, '        '))
  if (f.fix) out.push(`      ${c.bold('what to do:')} ${f.fix}`)
  return out.join('\n')
}

export function renderPlanned(p: PlannedRoute): string {
  const head = `${p.dst}${p.table !== 'main' ? ` table ${p.table}` : ''} proto ${p.protocol} metric ${p.metric}`
  if (p.nexthops.length === 1) {
    const n = p.nexthops[0]
    return `${head} via ${n.gateway} dev ${n.dev}${n.onlink ? ' onlink' : ''}`
  }
  return [head, ...p.nexthops.map((n) => `\tnexthop via ${n.gateway} dev ${n.dev} weight ${n.weight}${n.onlink ? ' onlink' : ''}`)].join('\n')
}

export function renderCheck(r: CheckReport, c: ChalkInstance): string {
  let maxPrefixLength = 0
  for (const p of r.prefixes) if (p.prefix.length > maxPrefixLength) maxPrefixLength = p.prefix.length
  return [...renderCheckLines({...r, lines: r.prefixes, maxPrefixLength, summary: () => r.summary}, c)].join('\n')
}

/**
 * `check` as lines, errors first, then the rest in prefix order. Broken prefixes are written as they
 * are diagnosed; the others are held until the end. A run of settled prefixes is one piece of several lines.
 */
export function* renderCheckLines(r: CheckRun, c: ChalkInstance): Generator<string> {
  yield renderNode(r.node, c)
  yield ''
  const width = Math.max(20, r.maxPrefixLength + 2)
  const row = (prefix: string, verdict: Verdict, ids: string) => pad(prefix, width) + verdictColor(c, verdict)(pad(verdict, 16)) + ids
  const settled = {before: '', after: verdictColor(c, 'ok')(pad('ok', 16)), sep: '\n', width} // row(prefix, 'ok', '')
  let header = false
  // held until the broken ones are written: ok, then local and not-in-pool, as [prefix, verdict, ids] triples
  // (three references, not a rendered line: a full table holds most of its prefixes here), and among the ok
  // ones runs of settled prefixes (one reference each)
  const later: Array<Array<string | SettledPrefixes>> = [[], []]
  for (const p of r.lines) {
    if (!header) {
      yield c.bold(pad('PREFIX', width) + pad('VERDICT', 16) + 'FINDINGS')
      header = true
    }
    if (isSettledPrefixes(p)) {
      later[0].push(p)
      continue
    }
    let ids = ''
    for (const f of p.findings) if (f.severity !== 'info') ids += ids === '' ? f.id : `, ${f.id}`
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
        yield settledRows(at, settled)
        i++
      }
    }
  }
  if (!header) yield c.yellow(r.node.pools.length === 0 ? 'No pools: no prefix is a tunnel prefix.' : 'No prefix inside the pools is held by BIRD or routed by the kernel.')
  yield ''
  yield c.bold('Host')
  if (r.host.findings.length === 0) yield c.green('  no host findings')
  for (const f of r.host.findings) yield `  ${severityColor(c, f.severity)(f.severity.toUpperCase())} ${c.bold(f.id)}: ${f.title}`
  const summary = r.summary()
  const verdicts = Object.entries(summary.verdicts).map(([v, n]) => `${n} ${v}`).join(', ')
  yield ''
  yield `${summary.prefixes} prefixes${verdicts ? ` (${verdicts})` : ''}; ${plural(summary.errors, 'error')}, ${plural(summary.warnings, 'warning')}.`
  if (summary.exitCode !== 0) yield c.dim('`routedoctor explain PREFIX` shows why, with evidence; `routedoctor fix` shows the corrected routes.')
}

const STEP_TITLE = {session: 'BGP session', bird: 'BIRD paths', resolution: 'Next hop', kernel: 'Kernel route', tunnel: 'Tunnel device'}

export function renderExplain(r: ExplainReport, c: ChalkInstance): string {
  const out = [`${c.bold(r.prefix)}${r.query !== r.prefix ? c.dim(` (covers ${r.query})`) : ''}: ${verdictColor(c, r.verdict)(r.verdict.toUpperCase())}`, renderNode(r.node, c), '']
  let n = 1
  for (const s of r.chain) {
    const mark = s.status === 'ok' ? c.green('✔') : s.status === 'error' ? c.red('✘') : s.status === 'warning' ? c.yellow('!') : c.dim('·')
    const lines = s.summary.split('\n')
    out.push(`${n++}. ${mark} ${c.bold(pad(STEP_TITLE[s.step], 14))}${lines[0]}`)
    for (const l of lines.slice(1)) out.push(`${' '.repeat(19)}${l}`)
    out.push(...renderEvidence(s.evidence, c, '       '))
  }
  out.push('', c.bold('Findings'))
  if (r.findings.length === 0) out.push(c.green('  none'))
  for (const f of r.findings) out.push(renderFinding(f, c))
  out.push('', c.bold('Corrected route'))
  if (!r.plan) out.push(`  none${r.verdict === 'missing' ? ': nothing to program until a BGP path for it is back' : r.verdict === 'ok' || r.verdict === 'local' ? ': the route is right as it is' : ''}`)
  else {
    out.push(indent(renderPlanned(r.plan), '  '))
    out.push(c.dim(`  (${r.planMode === 'beside' ? `beside BIRD's route, at a lower metric; BIRD's stays as it is` : `replacing BIRD's route at its metric`}; routedoctor fix --apply programs it)`))
    out.push(`  ${ipRouteReplace(r.plan)}`)
  }
  return out.join('\n')
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`
}

export function renderFix(r: FixReport, c: ChalkInstance): string {
  const out: string[] = []
  for (const f of r.node.failed) out.push(c.yellow(`could not collect ${f.file}: ${f.error}`))
  for (const w of r.node.bundleWarnings) out.push(c.yellow(`bundle: ${w}`))
  if (r.unavailable) out.push(c.red(`Cannot plan: ${r.unavailable}.`))
  else if (r.entries.length === 0) out.push(c.green('Nothing to fix: every tunnel prefix is healthy or has nothing routedoctor can program.'))
  for (const e of r.entries) {
    out.push(`${c.bold(e.prefix)}  ${c.red(e.verdict)}`)
    for (const k of e.current) {
      const mark = e.mode === 'beside' || k.metric !== e.planned.metric || k.tableId !== e.planned.tableId ? c.dim('  =') : c.red('  -')
      out.push(...formatKernelRoute(k).split('\n').map((l, i) => `${i === 0 ? mark : '   '} ${l}`))
    }
    out.push(...renderPlanned(e.planned).split('\n').map((l, i) => `${i === 0 ? c.green('  +') : '   '} ${l}`))
    out.push(c.dim(e.mode === 'beside'
      ? `    added beside BIRD's route at metric ${e.planned.metric} (lower wins); BIRD's route is left as it is, removing ours restores it`
      : `    replaces the route at metric ${e.planned.metric} (BIRD writes metric 0: nothing is lower)`))
    out.push(`    ${e.ipRoute}`, '')
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
