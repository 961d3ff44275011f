// `watch`'s output: one line per change, timestamped; text, or JSON lines (schema 1).
import type {ChalkInstance} from 'chalk'

import type {TimedChange} from '../report/watch.js'
import {counted} from '../model/format.js'
import type {Verdict} from '../model/types.js'
import {severityColor, verdictColor} from './style.js'
import {sessionsWords} from './text.js'

export interface WatchStarted {
  at: string
  kind: 'started'
  prefixes: number
  verdicts: Record<string, number>
  sessions: {up: number; total: number; known: boolean} // known: BIRD's protocols were read
  listen?: string
}

export function watchLineJson(c: TimedChange | WatchStarted): string {
  return JSON.stringify({schema: 1, ...c})
}

export function watchLineText(c: TimedChange | WatchStarted, p: ChalkInstance): string {
  const v = (verdict: string) => verdictColor(p, verdict as Verdict)(verdict)
  switch (c.kind) {
    case 'started': {
      const counts = Object.entries(c.verdicts)
        .filter(([, n]) => n > 0)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ')
      return (
        `${c.at} watching: ${counted(c.prefixes, 'prefix', 'prefixes')}${counts ? ` (${counts})` : ''}, ` +
        `BGP sessions ${sessionsWords(c.sessions, c.sessions.known)}${c.listen ? `, serving http://${c.listen}/metrics` : ''}`
      )
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
      return (
        `${c.at} reconcile ${c.op === 'failed' || c.op === 'route-war' ? p.red(c.op) : c.op}${c.prefix ? ` ${c.prefix}` : ''}` +
        `${c.routes !== undefined ? ` ${c.routes} route${c.routes === 1 ? '' : 's'}` : ''}${c.journal ? ` (journal ${c.journal})` : ''}${c.detail ? `: ${c.detail}` : ''}`
      )
    case 'source':
      return `${c.at} source ${c.source} ${c.op === 'failed' ? p.red('failed') : p.green('recovered')}${c.error ? `: ${c.error}` : ''}`
  }
}
