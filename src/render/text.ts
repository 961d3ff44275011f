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
    : n.uncheckedPools?.length ? c.yellow('no IP-in-IP pool')
    : c.yellow('none found (give --pool CIDR=ipip, --ippools FILE, or a snapshot with ippools.yaml or a Calico bird.conf)')
  const lines = [
    `${c.bold('node')} ${n.host ?? '?'}  ${c.bold('BIRD')} ${n.birdVersion ?? '?'}  ${c.bold('sessions')} ${n.sessions.up}/${n.sessions.total} Established  ${c.bold('tunnel')} ${n.tunnelDev}`,
    `${c.bold('pools')} ${pools}`,
  ]
  for (const p of n.uncheckedPools ?? []) {
    lines.push(c.yellow(`pool ${p.cidr} (${p.mode}) not checked: ${p.mode === 'vxlan' ? 'VXLAN routes are Felix\'s, over vxlan.calico' : 'no encapsulation: BIRD routes it directly'}; routedoctor judges IP-in-IP pools`))
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
  return [...byError].map(([error, files]) => error.startsWith('the file is empty')
    ? `${files.join(', ')}: ${error.slice('the file is '.length)}`
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
    // an id found for several next hops is listed once
    for (const f of p.findings) if (f.severity !== 'info' && !(ids === f.id || ids.startsWith(`${f.id},`) || ids.includes(`, ${f.id}`))) ids += ids === '' ? f.id : `, ${f.id}`
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
  if (!header) yield c.yellow(r.node.pools.length === 0 ? `No ${r.node.uncheckedPools?.length ? 'IP-in-IP ' : ''}pools: no prefix is a tunnel prefix.` : 'No prefix inside the pools is held by BIRD or routed by the kernel.')
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
  const covers = r.query !== r.prefix ? c.dim(` (holds ${r.query})`) : ''
  if (r.scope) {
    const out = [`${c.bold(r.prefix)}: ${c.dim('NOT A TUNNEL PREFIX')}`, renderNode(r.node, c), '', r.scope.summary]
    if (r.scope.inside.length > 0) {
      out.push('', c.bold('Tunnel prefixes inside it'), ...r.scope.inside.map((p) => `  ${p}`))
      if (r.scope.insideCount > r.scope.inside.length) out.push(c.dim(`  and ${r.scope.insideCount - r.scope.inside.length} more (routedoctor check lists them)`))
      out.push(c.dim('`routedoctor explain BLOCK` explains one of them.'))
    }
    for (const s of r.chain) out.push('', `${c.bold('Kernel route')} ${s.summary}`)
    return out.join('\n')
  }
  const out = [`${c.bold(r.prefix)}${covers}: ${verdictColor(c, r.verdict)(r.verdict.toUpperCase())}`, renderNode(r.node, c), '']
  // evidence is printed once: a finding that cites lines the chain already showed refers to them
  const shown = new Set<string>()
  const firstTime = (e: Evidence[]) => {
    const fresh: Evidence[] = []
    const seen: string[] = []
    for (const x of e) {
      const key = `${x.file}:${x.line}-${x.endLine}:${x.text}`
      if (shown.has(key)) seen.push(evidenceWhere(x))
      else {
        shown.add(key)
        fresh.push(x)
      }
    }
    return {fresh, seen}
  }
  let n = 1
  for (const s of r.chain) {
    const mark = s.status === 'ok' ? c.green('✔') : s.status === 'error' ? c.red('✘') : s.status === 'warning' ? c.yellow('!') : c.dim('·')
    const lines = s.summary.split('\n')
    out.push(`${n++}. ${mark} ${c.bold(pad(STEP_TITLE[s.step], 14))}${lines[0]}`)
    for (const l of lines.slice(1)) out.push(`${' '.repeat(19)}${l}`)
    out.push(...renderEvidence(firstTime(s.evidence).fresh, c, '       '))
  }
  out.push('', c.bold('Findings'))
  if (r.findings.length === 0) out.push(c.green('  none'))
  for (const f of r.findings) {
    const {fresh, seen} = firstTime(f.evidence)
    out.push(renderFinding({...f, evidence: fresh}, c))
    if (seen.length > 0) out.push(c.dim(`      evidence above: ${[...new Set(seen)].join(', ')}`))
  }
  out.push('', c.bold('Corrected route'))
  if (!r.plan) out.push(`  none${r.planNote ? `: ${r.planNote}` : r.verdict === 'ok' || r.verdict === 'local' ? ': the route is right as it is' : ''}`)
  else {
    out.push(indent(renderPlanned(r.plan), '  '))
    const how = r.kernel.length === 0 ? 'the kernel has no route for it' : r.planMode === 'beside' ? `beside BIRD's route, at a lower metric; BIRD's stays as it is` : `replacing BIRD's route at its metric`
    out.push(c.dim(`  (${how}; routedoctor fix --apply programs it)`))
    out.push(`  ${ipRouteReplace(r.plan)}`)
  }
  return out.join('\n')
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`
}

export function renderFix(r: FixReport, c: ChalkInstance): string {
  const out: string[] = []
  for (const l of failedLines(r.node.failed)) out.push(c.yellow(l))
  for (const w of r.node.bundleWarnings) out.push(c.yellow(`bundle: ${w}`))
  if (r.unavailable) out.push(c.red(`Cannot plan: ${r.unavailable}.`))
  else if (r.scope?.startsWith('no tunnel prefix')) out.push(c.yellow(`Nothing to fix: ${r.scope}.`))
  else if (r.entries.length === 0 && r.skipped.length > 0) out.push(c.yellow(`Nothing routedoctor can program${r.scope ? ` for ${r.scope}` : ''}:`))
  else if (r.entries.length === 0) out.push(c.green(`Nothing to fix: ${r.scope ? `${r.scope} needs no correction` : 'every tunnel prefix is healthy'}.`))
  for (const e of r.entries) {
    out.push(`${c.bold(e.prefix)}  ${c.red(e.verdict)}`)
    for (const k of e.current) {
      const mark = e.mode === 'beside' || k.metric !== e.planned.metric || k.tableId !== e.planned.tableId ? c.dim('  =') : c.red('  -')
      out.push(...formatKernelRoute(k).split('\n').map((l, i) => `${i === 0 ? mark : '   '} ${l}`))
    }
    out.push(...renderPlanned(e.planned).split('\n').map((l, i) => `${i === 0 ? c.green('  +') : '   '} ${l}`))
    out.push(c.dim(e.current.length === 0
      ? `    added at metric ${e.planned.metric}: the kernel has no route for it`
      : e.mode === 'beside'
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
