// `watch`'s output: one line per change, timestamped; text, or JSON lines (schema 1).
import type {ChalkInstance} from 'chalk'

import type {NodeState} from '../agent/state.js'
import type {TimedChange} from '../agent/watch.js'
import {keyPrefix} from '../model/aside.js'
import type {Verdict} from '../model/types.js'
import {severityColor, verdictColor} from './style.js'

export interface WatchStarted {
  at: string
  kind: 'started'
  prefixes: number
  verdicts: Record<string, number>
  sessions: {up: number; total: number}
  listen?: string
}

/**
 * The agent's state as `/state` serves it: every prefix with its verdict and finding ids, in check's order of
 * fields (the healthy ones settled in bulk as ok), the host findings and the sessions.
 */
export function watchStateJson(s: NodeState): unknown {
  const prefixes: Array<{prefix: string; verdict: string; findings: Array<{id: string; severity: string}>}> = []
  for (const key of s.healthyKeys) prefixes.push({prefix: keyPrefix(key), verdict: 'ok', findings: []})
  for (const [prefix, p] of s.prefixes) prefixes.push({prefix, verdict: p.verdict, findings: p.findings.map((f) => ({id: f.id, severity: f.severity}))})
  prefixes.sort((a, b) => (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0))
  return {
    schema: 1, prefixes, verdicts: s.verdicts,
    host: {findings: s.host.map((f) => ({id: f.id, severity: f.severity}))},
    sessions: Object.fromEntries(s.sessions),
  }
}

export function watchLineJson(c: TimedChange | WatchStarted): string {
  return JSON.stringify({schema: 1, ...c})
}

export function watchLineText(c: TimedChange | WatchStarted, p: ChalkInstance): string {
  const v = (verdict: string) => verdictColor(p, verdict as Verdict)(verdict)
  switch (c.kind) {
    case 'started': {
      const counts = Object.entries(c.verdicts).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`).join(', ')
      return `${c.at} watching: ${c.prefixes} prefixes${counts ? ` (${counts})` : ''}, ` +
        `BGP sessions ${c.sessions.up}/${c.sessions.total} Established${c.listen ? `, serving http://${c.listen}/metrics` : ''}`
    }
    case 'verdict':
      return `${c.at} verdict ${c.prefix} ${v(c.from)} → ${v(c.to)}`
    case 'finding': {
      const sign = c.op === 'appeared' ? '+' : '-'
      return `${c.at} finding ${sign} ${severityColor(p, c.severity)(c.id)}${c.prefix ? ` ${c.prefix}` : ''}: ${c.title}${c.op === 'cleared' ? ' (cleared)' : ''}`
    }
    case 'session':
      return `${c.at} session ${c.name}${c.neighbor ? ` (${c.neighbor})` : ''} ${c.from} → ${c.to}${c.lastError ? ` (${c.lastError})` : ''}`
    case 'reconcile':
      return `${c.at} reconcile ${c.op === 'failed' || c.op === 'route-war' ? p.red(c.op) : c.op}${c.prefix ? ` ${c.prefix}` : ''}` +
        `${c.routes !== undefined ? ` ${c.routes} route${c.routes === 1 ? '' : 's'}` : ''}${c.journal ? ` (journal ${c.journal})` : ''}${c.detail ? `: ${c.detail}` : ''}`
    case 'source':
      return `${c.at} source ${c.source} ${c.op === 'failed' ? p.red('failed') : p.green('recovered')}${c.error ? `: ${c.error}` : ''}`
  }
}
