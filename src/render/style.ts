// Colours for text output: off with NO_COLOR, on a non-TTY (chalk's detection), or when asked.
import chalk, {Chalk, type ChalkInstance} from 'chalk'

import type {Severity, Verdict} from '../model/types.js'

export function palette(color?: boolean): ChalkInstance {
  if (process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== '') return new Chalk({level: 0})
  if (color === false) return new Chalk({level: 0})
  return chalk
}

export function verdictColor(c: ChalkInstance, v: Verdict): (s: string) => string {
  switch (v) {
    case 'ok': return c.green
    case 'local': case 'not-in-pool': return c.dim
    default: return c.red
  }
}

export function severityColor(c: ChalkInstance, s: Severity): (s: string) => string {
  return s === 'error' ? c.red : s === 'warning' ? c.yellow : c.cyan
}
