// `/metrics`: the agent's state in Prometheus' text format (prom-client), made fresh at every scrape. Bounded
// cardinality: counts by verdict, finding id and severity, session state and source; no series per prefix
// or per peer.
import {Counter, Gauge, Histogram, Registry} from 'prom-client'

import {SEVERITY} from '../diagnose/rule.js'
import type {WatchAgent} from './watch.js'

// every verdict of DESIGN §4, so that each series exists (0) before the first prefix has it
export const VERDICTS = ['ok', 'local', 'not-tunneled', 'unreachable', 'missing', 'misrouted', 'multipath-lost', 'not-in-pool']
const WATCH_FINDINGS: Record<string, 'warning'> = {'route-flapping': 'warning', 'peer-flapping': 'warning'}
// BIRD's BGP states: present at 0 so that "sessions not Established" alerts see a series
const BGP_STATES = ['Established', 'Idle', 'Connect', 'Active', 'OpenSent', 'OpenConfirm', 'Close', 'Down']

export interface AgentMetrics {
  registry: Registry
  contentType: string
  metrics(): Promise<string>
}

const zeroed = (keys: readonly string[]): Map<string, number> => new Map(keys.map((k) => [k, 0]))

/** A gauge set to `counts` and nothing else (series of an earlier scrape that are gone now are dropped). */
function setCounts(gauge: Gauge, counts: Map<string, number>, labels: (key: string) => Record<string, string>): void {
  gauge.reset()
  for (const [key, n] of counts) gauge.set(labels(key), n)
}

/** A counter that follows one of the agent's own counts (`count` never goes down). */
function countedBy(registry: Registry, name: string, help: string, count: () => number): void {
  let seen = 0
  new Counter({
    name, help, registers: [registry],
    collect() {
      this.inc(count() - seen)
      seen = count()
    },
  })
}

export function agentMetrics(agent: WatchAgent, version: string): AgentMetrics {
  const registry = new Registry()
  const severities: Record<string, string> = {...SEVERITY, ...WATCH_FINDINGS}
  new Gauge({
    name: 'routedoctor_prefixes',
    help: 'Tunnel-pool prefixes by verdict, as of the last diagnosis.',
    labelNames: ['verdict'],
    registers: [registry],
    collect() {
      this.reset()
      const counts = agent.state.verdicts
      for (const v of new Set([...VERDICTS, ...Object.keys(counts)])) this.set({verdict: v}, counts[v] ?? 0)
    },
  })
  new Gauge({
    name: 'routedoctor_findings',
    help: 'Findings by id and severity (prefix and host findings, and watch\'s flapping), as of the last diagnosis.',
    labelNames: ['id', 'severity'],
    registers: [registry],
    collect() {
      const counts = zeroed(Object.keys(severities))
      const add = (id: string) => counts.set(id, (counts.get(id) ?? 0) + 1)
      for (const p of agent.state.prefixes.values()) for (const f of p.findings) add(f.id)
      for (const f of agent.state.host) add(f.id)
      for (let i = 0; i < agent.routeFlaps.current.size; i++) add('route-flapping')
      for (let i = 0; i < agent.peerFlaps.current.size; i++) add('peer-flapping')
      setCounts(this, counts, (id) => ({id, severity: severities[id] ?? 'warning'}))
    },
  })
  new Gauge({
    name: 'routedoctor_bgp_sessions',
    help: 'BIRD\'s BGP sessions by state.',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const counts = zeroed(BGP_STATES)
      for (const s of agent.state.sessions.values()) counts.set(s.state, (counts.get(s.state) ?? 0) + 1)
      setCounts(this, counts, (state) => ({state}))
    },
  })
  new Gauge({
    name: 'routedoctor_overlay_routes',
    help: 'Kernel routes carrying routedoctor\'s protocol number.',
    registers: [registry],
    collect() {
      this.set(agent.overlayRoutes)
    },
  })
  countedBy(
    registry,
    'routedoctor_verdict_changes_total',
    'Times a prefix\'s verdict changed.',
    () => agent.counters.verdictChanges,
  )
  countedBy(
    registry,
    'routedoctor_bgp_session_flaps_total',
    'Times a BGP session changed state.',
    () => agent.counters.sessionFlaps,
  )
  const durations = new Histogram({
    name: 'routedoctor_diagnosis_duration_seconds',
    help: 'How long a diagnosis took (collection included), of the whole node or of the prefixes a change touched.',
    labelNames: ['scope'],
    // up to the DaemonSet's start-up allowance: a full table's first diagnosis on a busy node takes minutes
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  })
  agent.onDuration = (seconds, scope) => durations.observe({scope}, seconds)
  // both series exist from the start
  for (const scope of ['node', 'prefixes']) durations.zero({scope})
  new Gauge({
    name: 'routedoctor_last_diagnosis_timestamp_seconds',
    help: 'When the last diagnosis finished (Unix time).',
    registers: [registry],
    collect() {
      this.set((agent.counters.lastDiagnosisAt ?? 0) / 1000)
    },
  })
  new Gauge({
    name: 'routedoctor_source_up', help: 'Whether a source was read at the last diagnosis or poll (1) or failed (0).',
    labelNames: ['source'], registers: [registry],
    collect() {
      this.reset()
      for (const [source, error] of agent.sources()) this.set({source}, error === undefined ? 1 : 0)
    },
  })
  const info = new Gauge({
    name: 'routedoctor_build_info',
    help: 'routedoctor\'s version.',
    labelNames: ['version'],
    registers: [registry],
  })
  info.set({version}, 1)
  return {registry, contentType: registry.contentType, metrics: () => registry.metrics()}
}
