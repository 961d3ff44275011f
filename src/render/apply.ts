// What an apply or a revert did, in plain words.
import type {ChalkInstance} from 'chalk'

import type {ApplyResult, RevertResult} from '../netlink/apply.js'
import {appliedCleanly, type PlannedFix} from '../report/fix.js'
import {renderPlanned} from './text.js'

export function renderApply(r: ApplyResult, c: ChalkInstance): string {
  const out: string[] = []
  for (const p of r.applied) {
    if (p.action === 'delete')
      out.push(
        `${c.green('withdrew')} ${p.dst}${p.table !== 'main' ? ` table ${p.table}` : ''} proto ${p.protocol} metric ${p.metric}`,
      )
    else out.push(`${c.green('programmed')} ${renderPlanned(p).split('\n').join('\n           ')}`)
  }
  for (const rule of r.rules ?? []) out.push(`${c.green('rule')} ${rule}`)
  for (const e of r.errors) out.push(c.red(`error: ${e.message}`))
  for (const w of r.routeWar ?? [])
    out.push(c.yellow(`route war on ${w.dst} (table ${w.table}, metric ${w.metric}): ${w.detail}`), `  ${w.advice}`)
  if (r.restored) out.push(c.yellow('The kernel was restored from the journal: nothing routedoctor wrote remains.'))
  out.push(
    appliedCleanly(r)
      ? c.green(
          `Verified: the kernel holds the planned routes and rules. Journal: ${r.journal} (undo: routedoctor fix --revert ${r.journal})`,
        )
      : `Journal: ${r.journal}`,
  )
  return out.join('\n')
}

export function renderRevert(r: RevertResult, c: ChalkInstance): string {
  const out: string[] = []
  for (const p of r.deleted)
    out.push(`${c.green('removed')} ${p.dst}${p.table !== 'main' ? ` table ${p.table}` : ''} proto ${p.protocol} metric ${p.metric}`)
  for (const k of r.restored)
    out.push(
      `${c.green('restored')} ${k.dst}${k.table !== 'main' ? ` table ${k.table}` : ''} proto ${k.protocol} metric ${k.metric}`,
    )
  for (const rule of r.rules ?? []) out.push(`${c.green('rule')} ${rule}`)
  for (const e of r.errors) out.push(c.red(`error: ${e.message}`))
  out.push(
    r.verified
      ? c.green(`Verified: the routes and rules are as the journal saved them before the apply.`)
      : c.red('The routes do not match the journal\'s "before": see the errors above.'),
  )
  return out.join('\n')
}

/** The question `fix --apply` asks: what it is about to change. */
export function applyQuestion(p: Pick<PlannedFix, 'items' | 'plan'>): string {
  const routes = p.items.length
  const rules = p.plan.rules.length
  const what = [
    routes > 0 ? `${routes} route change${routes === 1 ? '' : 's'}` : '',
    rules > 0 ? `${rules} rule change${rules === 1 ? '' : 's'}` : '',
  ]
  return `Make ${what.filter(Boolean).join(' and ')} now?`
}
