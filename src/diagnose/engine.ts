// Runs the rules and derives a prefix's verdict from its facts and findings (DESIGN §4 order).
import type {SnapshotIndex, PrefixFacts} from '../model/snapshot-index.js'
import type {Finding, Verdict} from '../model/types.js'
import {misrouted, NONE} from './rule.js'
import {hostRules, prefixRules} from './rules/index.js'

export interface PrefixDiagnosis {
  prefix: string
  verdict: Verdict
  findings: Finding[]
  facts: PrefixFacts
}

export function diagnosePrefix(ctx: SnapshotIndex, prefix: string): PrefixDiagnosis {
  return diagnoseFacts(ctx, ctx.facts(prefix))
}

export function diagnoseFacts(ctx: SnapshotIndex, facts: PrefixFacts): PrefixDiagnosis {
  if (!facts.pool) return {prefix: facts.prefix, verdict: 'not-in-pool', findings: [], facts}
  let findings: Finding[] = NONE
  for (const rule of prefixRules) {
    const found = rule.run(ctx, facts)
    if (found.length === 0) continue
    if (findings === NONE) findings = []
    for (const f of found) findings.push(f)
  }
  return {prefix: facts.prefix, verdict: verdictOf(facts, findings, ctx), findings, facts}
}

export function diagnoseHost(ctx: SnapshotIndex): Finding[] {
  return hostRules.flatMap((rule) => rule.run(ctx))
}

const BROKEN_TYPES = new Set(['unreachable', 'blackhole', 'prohibit'])

/** The first that applies of: missing, unreachable, misrouted, not-tunneled, multipath-lost, ok; local stands alone. */
export function verdictOf(facts: PrefixFacts, findings: Finding[], ctx?: SnapshotIndex): Verdict {
  const has = (id: Finding['id']) => findings.some((f) => f.id === id)
  // another node's block held here as local (a leftover affinity's blackhole) is misrouted, not local
  if (facts.local) return findings.length > 0 && has('block-owner-mismatch') ? 'misrouted' : 'local'
  if (!facts.effective) return 'missing'
  if (BROKEN_TYPES.has(facts.effective.type) || (findings.length > 0 && has('nexthop-unreachable')))
    return 'unreachable'
  if ((ctx !== undefined && misrouted(ctx, facts)) || (findings.length > 0 && has('block-owner-mismatch')))
    return 'misrouted'
  if (findings.length === 0) return 'ok'
  if (has('tunnel-bypassed-by-ecmp') || has('tunnel-not-programmed')) return 'not-tunneled'
  if (has('multipath-lost')) return 'multipath-lost'
  return 'ok'
}
