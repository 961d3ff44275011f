// What a rule is: a pure function of the Context (and, for prefix rules, one prefix's facts).
import type {Context, NexthopResolution, PrefixFacts} from '../model/context.js'
import type {Evidence, Finding, FindingId, Severity} from '../model/types.js'

export const SEVERITY: Record<FindingId, Severity> = {
  'tunnel-bypassed-by-ecmp': 'error', 'tunnel-not-programmed': 'error', 'nexthop-unresolvable-by-bird': 'error',
  'nexthop-unreachable': 'error', 'multipath-lost': 'error', 'prefix-missing': 'error', 'peer-down': 'error',
  'tunnel-device-missing': 'error', 'tunnel-device-down': 'error', 'onlink-missing': 'error', 'forwarding-off': 'error',
  'bird-kernel-mismatch': 'error',
  'block-owner-mismatch': 'error', 'block-affinity-conflict': 'error', 'block-without-ipamblock': 'error', 'block-unrouted': 'error',
  'node-address-mismatch': 'error', 'route-owner-conflict': 'error', 'borrowed-address-unrouted': 'warning',
  'tunnel-mtu': 'warning', 'rp-filter-strict': 'warning', 'hash-policy-l3': 'warning', 'stale-kernel-route': 'warning',
  'conflicting-route-owners': 'warning',
  'local-block': 'info',
}

/** What a rule returns when it finds nothing: one shared, read-only empty list (most prefixes are healthy). */
export const NONE = Object.freeze([]) as unknown as Finding[]

export interface PrefixRule {
  id: FindingId
  scope: 'prefix'
  run(ctx: Context, facts: PrefixFacts): Finding[]
}

export interface HostRule {
  id: FindingId
  scope: 'host'
  run(ctx: Context): Finding[]
}

export type Rule = PrefixRule | HostRule

export function finding(id: FindingId, f: {prefix?: string; title: string; detail: string; evidence: Evidence[]; fix?: string}): Finding {
  // the keys in the order a finding's JSON has them (DESIGN §4), prefix and fix only when there are any
  const severity = SEVERITY[id]
  if (f.prefix) {
    return f.fix
      ? {id, severity, prefix: f.prefix, title: f.title, detail: f.detail, evidence: f.evidence, fix: f.fix}
      : {id, severity, prefix: f.prefix, title: f.title, detail: f.detail, evidence: f.evidence}
  }
  return f.fix ? {id, severity, title: f.title, detail: f.detail, evidence: f.evidence, fix: f.fix} : {id, severity, title: f.title, detail: f.detail, evidence: f.evidence}
}

/** What a finding says and cites, besides its id, severity and prefix. */
export interface FindingTexts {
  title: string
  detail: string
  evidence: Evidence[]
  fix?: string
}

const NO_EVIDENCE = Object.freeze([]) as unknown as Evidence[]

/**
 * A prefix rule's finding about `prefix`. What it says is made only when the Context wants it (`texts`): check's text
 * report shows a prefix finding by its id alone, and making the texts of a full table's 190k findings took ~0.2 s.
 */
export function prefixFinding(ctx: Context, id: FindingId, prefix: string, texts: () => FindingTexts): Finding {
  if (!ctx.texts) return {id, severity: SEVERITY[id], prefix, title: '', detail: '', evidence: NO_EVIDENCE}
  const made = texts()
  return finding(id, {prefix, title: made.title, detail: made.detail, evidence: made.evidence, fix: made.fix})
}

/** Is this kernel route through the tunnel: every next hop on the tunnel device? */
export function throughTunnel(ctx: Context, facts: PrefixFacts): boolean {
  const r = facts.effective
  if (!r || r.type !== 'unicast' || r.nexthops.length === 0) return false
  const dev = ctx.snapshot.tunnelDev
  for (const n of r.nexthops) if (n.dev !== dev) return false
  return true
}

/** Evidence for a kernel route and the BIRD paths behind a prefix. */
export function prefixEvidence(ctx: Context, facts: PrefixFacts): Evidence[] {
  const out: Evidence[] = []
  for (const r of facts.bestSet) for (const e of ctx.cite(r.pos)) out.push(e)
  if (facts.effective) for (const e of ctx.citeKernelRoute(facts.effective)) out.push(e)
  return out
}

export function resolutionEvidence(ctx: Context, facts: PrefixFacts): Evidence[] {
  return facts.resolutions.length === 1 ? ctx.resolutionEvidence(facts.resolutions[0]) : facts.resolutions.flatMap((r) => ctx.resolutionEvidence(r))
}


/** The next hops a correct route has: distinct BGP next hops of the best set that the kernel can reach, not our own. */
export function wantedGateways(facts: PrefixFacts): string[] {
  // a list of resolutions is often one Context shares among the prefixes of a next hop: computed once for it
  let wanted = wantedOf.get(facts.resolutions)
  if (wanted === undefined) {
    wanted = Object.freeze(facts.resolutions.filter((r) => r.lookup.reachable && !r.own).map((r) => r.bgpNextHop)) as string[]
    wantedOf.set(facts.resolutions, wanted)
  }
  return wanted
}

const wantedOf = new WeakMap<readonly NexthopResolution[], string[]>()
