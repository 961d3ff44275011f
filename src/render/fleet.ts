// `fleet`'s text report: a node × node matrix that fits 80 columns (up to MATRIX_MAX nodes; beyond, counts and
// the broken pairs), then the cluster findings and each broken pair's blocks.
import type {ChalkInstance} from 'chalk'

import {VERDICT_ORDER, type FleetPair, type FleetReport} from '../fleet/join.js'
import {counted} from '../model/format.js'
import type {Verdict} from '../model/types.js'
import {severityColor, verdictColor} from './style.js'

export const MATRIX_MAX = 12

const CELL: Record<string, string> = {
  ok: 'ok', missing: 'MISS', unreachable: 'UNRE', misrouted: 'MISR', 'not-tunneled': 'NTUN', 'multipath-lost': 'MPL',
}

/** Exit status: 1 when a pair is broken or a cluster finding is an error. */
export function fleetExitCode(r: FleetReport): 0 | 1 {
  return r.pairs.some((p) => p.verdict !== 'ok') || r.findings.some((f) => f.severity === 'error') ? 1 : 0
}

export function renderFleet(r: FleetReport, c: ChalkInstance): string {
  const out: string[] = []
  const sources = r.nodes.filter((n) => n.source !== undefined).length
  out.push(
    `${c.bold('fleet')} ${counted(r.nodes.length, 'node')}, ${sources} with a source; ${r.truth ? `Calico's truth: ${counted(r.truth.files.length, 'file')}${r.truth.apiGroup ? ` (${r.truth.apiGroup})` : ''}` : c.yellow('no Calico truth (give --calico DIR or --kube, or bundles with calico/): no block owners, no matrix')}`,
  )
  const pair = new Map(r.pairs.map((p) => [`${p.from}\0${p.to}`, p]))
  // without the truth no block has an owner: the header says there is no matrix, so none of '-' cells is drawn
  const matrix = r.truth !== null || r.pairs.some((p) => p.checked > 0)
  if (r.nodes.length <= MATRIX_MAX) {
    out.push('')
    const width = Math.max(16, ...r.nodes.map((n) => n.name.length))
    r.nodes.forEach((n, i) =>
      out.push(
        `${String(i + 1).padStart(3)}  ${n.name.padEnd(width)} ${(n.address ?? '?').padEnd(16)} ${n.source ?? c.yellow('no source')}`,
      ),
    )
  }
  if (r.nodes.length <= MATRIX_MAX && matrix) {
    out.push('')
    out.push(`${'from \\ to'.padEnd(15)}${r.nodes.map((_, i) => String(i + 1).padEnd(5)).join('')}`)
    r.nodes.forEach((a, i) => {
      const cells = r.nodes.map((b) => {
        if (a.name === b.name) return c.dim('·'.padEnd(5))
        if (a.source === undefined) return c.dim('?'.padEnd(5))
        const p = pair.get(`${a.name}\0${b.name}`)
        if (!p || p.checked === 0) return c.dim('-'.padEnd(5))
        return verdictColor(c, p.verdict)((CELL[p.verdict] ?? p.verdict).padEnd(5))
      })
      out.push(`${String(i + 1).padStart(3)} ${a.name.slice(0, 9).padEnd(10)} ${cells.join('')}`.trimEnd())
    })
    out.push(
      c.dim('rows: from; columns: to. MISS missing, UNRE unreachable, MISR misrouted,'),
      c.dim('NTUN not tunnelled, MPL multipath lost, - no blocks there, ? no source'),
    )
  } else if (matrix) {
    const counts = new Map<Verdict, number>()
    for (const p of r.pairs) if (p.checked > 0) counts.set(p.verdict, (counts.get(p.verdict) ?? 0) + 1)
    out.push(
      `pairs: ${
        [...counts]
          .sort((a, b) => VERDICT_ORDER.indexOf(a[0]) - VERDICT_ORDER.indexOf(b[0]))
          .map(([v, n]) => `${n} ${v}`)
          .join(', ') || 'none with blocks'
      } (matrix shown up to ${MATRIX_MAX} nodes: --json or --html for all)`,
    )
    const byFrom = new Map<string, number>()
    for (const p of r.pairs) if (p.verdict !== 'ok') byFrom.set(p.from, (byFrom.get(p.from) ?? 0) + 1)
    const worst = [...byFrom].sort((a, b) => b[1] - a[1]).slice(0, 10)
    if (worst.length > 0) out.push(`most broken from: ${worst.map(([n, k]) => `${n} (${k})`).join(', ')}`)
  }
  if (r.findings.length > 0) {
    out.push('', c.bold('cluster findings'))
    for (const f of r.findings) out.push(`  ${severityColor(c, f.severity)(f.severity.padEnd(7))} ${f.id}  ${f.title}`)
  }
  const broken = r.pairs.filter((p) => p.verdict !== 'ok')
  if (broken.length > 0) {
    out.push('', c.bold('broken pairs'))
    for (const p of broken.slice(0, 200)) out.push(...renderPair(p, c))
    if (broken.length > 200) out.push(`  … ${broken.length - 200} more: --json or --html`)
  } else if (r.pairs.some((p) => p.checked > 0)) {
    out.push('', c.green(`every pair ok (${counted(r.pairs.filter((p) => p.checked > 0).length, 'pair')} with blocks)`))
  }
  return out.join('\n')
}

function renderPair(p: FleetPair, c: ChalkInstance): string[] {
  const out = [
    `  ${p.from} → ${p.to}: ${verdictColor(c, p.verdict)(p.verdict)} (${p.blocks.length} of ${counted(p.checked, 'block')})`,
  ]
  for (const b of p.blocks.slice(0, 5))
    out.push(
      `    ${b.prefix.padEnd(20)} ${verdictColor(c, b.verdict)(b.verdict.padEnd(15))} ${b.findings.map((f) => f.id).join(', ')}`,
    )
  if (p.blocks.length > 5) out.push(`    … ${p.blocks.length - 5} more`)
  return out
}
