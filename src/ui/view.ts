// What each region of the screen shows, as lines that fit the terminal width exactly (pure:
// state + palette in, strings out). Components only put these lines on the screen.
import path from 'node:path'

import type {ChalkInstance} from 'chalk'

import {tunnelNexthops} from '../model/format.js'
import {verdictColor} from '../render/style.js'
import {nodeLabel} from '../render/text.js'
import type {CheckReport, PrefixLine} from '../report/report.js'
import {fit, visibleWidth, wrap} from './ansi.js'
import {hasSourceProblems, layout, paneRows, selectedIndex, visibleRows, type UiState} from './state.js'

const SEP = ' │ '

function pad(s: string, n: number): string {
  return s.length >= n ? `${s} ` : s + ' '.repeat(n - s.length)
}

/** As many items as fit in `width` columns, in the order given (most important first), joined by `sep`. */
export function fitItems(items: string[], width: number, sep = ' · '): string {
  let out = ''
  for (const item of items) {
    const next = out === '' ? item : out + sep + item
    if (visibleWidth(next) > width) break
    out = next
  }
  return out
}

function clock(iso?: string): string {
  if (!iso) return ''
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? '' : d.toTimeString().slice(0, 8)
}

export function headerLines(s: UiState, c: ChalkInstance): string[] {
  const w = s.size.columns
  const n = s.report?.node
  // a source that could not be read is "not read", never a count of zero
  const unread = (file: string) => n?.failed.some((f) => f.file === file) ?? false
  const sessions = !n ? '?'
    : unread('birdc-show-protocols-all.txt') ? c.yellow('not read')
      : `${n.sessions.up}/${n.sessions.total} up`
  const sessionsText = n && n.sessions.up < n.sessions.total ? c.red(sessions) : sessions
  const bird = unread('birdc-show-status.txt') ? c.yellow('not read') : (n ? (n.birdVersion ?? 'unknown') : '?')
  const source = s.live
    ? `live${s.loadedAt ? ` ${clock(s.loadedAt)}` : ''}`
    : `from ${s.source.length > 24 ? `…/${path.basename(s.source)}` : s.source}`
  const first = [
    c.bold('routedoctor'),
    `node ${c.bold(n ? nodeLabel(n) : '?')}`,
    `BIRD ${bird}`,
    `sessions ${sessionsText}`,
    source + (s.loading ? c.dim(' refreshing…') : ''),
  ].join(SEP)
  let second: string
  const shown = visibleRows(s).length
  const total = s.report?.prefixes.length ?? 0
  if (s.mode === 'filter') second = `${c.bold('/')}${s.filter}${c.inverse(' ')}  ${c.dim(`${shown} of ${total} · Enter keeps · Esc clears`)}`
  else if (s.filter) second = `filter ${c.bold(JSON.stringify(s.filter))}: ${shown} of ${total}  ${c.dim('(/ edits, Esc clears)')}`
  else if (!s.report && s.loadError) second = c.red('nothing judged: the source could not be loaded (why: below)')
  else if (!s.report) second = c.dim('loading…')
  else {
    const r = s.report
    const verdicts = Object.entries(r.summary.verdicts)
      .map(([v, k]) => `${k} ${v}`)
      .join(', ')
    const errs =
      r.summary.errors > 0
        ? c.red(`${r.summary.errors} error${r.summary.errors === 1 ? '' : 's'}`)
        : c.green('0 errors')
    const hostCount = r.host.findings.length
    second = [
      `${r.summary.prefixes} prefix${r.summary.prefixes === 1 ? '' : 'es'}${verdicts ? `: ${verdicts}` : ''}`,
      `${errs}, ${r.summary.warnings} warning${r.summary.warnings === 1 ? '' : 's'}`,
      hostCount > 0 ? `host: ${hostCount} (h)` : 'host: ok',
    ].join(SEP)
  }
  const lines = [fit(first, w), fit(second, w)]
  if (n && hasSourceProblems(s)) lines.push(fit(c.yellow(sourceProblems(n)), w))
  return lines
}

/** The sources that failed, grouped by reason, the reason first (it is what to act on); `h` lists them in full. */
function sourceProblems(n: CheckReport['node']): string {
  const byError = new Map<string, string[]>()
  for (const f of n.failed) byError.set(f.error, [...(byError.get(f.error) ?? []), f.file])
  const parts = [...byError].map(([error, files]) => `${error}: ${files.join(', ')}`)
  parts.push(...n.bundleWarnings.map((w) => `bundle: ${w}`))
  return `${n.failed.length > 0 ? 'not collected' : 'bundle warnings'} (h lists them): ${parts.join('; ')}`
}

const widths = new WeakMap<CheckReport, number>()

/** The prefix column's width, once per report (a loop: a spread of a full table's prefixes overflows the stack). */
function prefixWidth(s: UiState): number {
  const r = s.report
  if (!r) return 20
  let w = widths.get(r)
  if (w === undefined) {
    w = 20
    for (const p of r.prefixes) if (p.prefix.length + 2 > w) w = p.prefix.length + 2
    widths.set(r, w)
  }
  return w
}

export function columnTitle(s: UiState, c: ChalkInstance): string {
  const rows = visibleRows(s)
  const h = layout(s).list
  const off = listOffset(s)
  const range = rows.length > h ? `  ${off + 1}-${Math.min(rows.length, off + h)} of ${rows.length}` : ''
  return fit(c.bold(`  ${pad('PREFIX', prefixWidth(s))}${pad('VERDICT', 16)}FINDINGS`) + c.dim(range), s.size.columns)
}

/** First visible row: the selection is kept near the middle of the list. */
export function listOffset(s: UiState): number {
  const n = visibleRows(s).length
  const h = layout(s).list
  if (n <= h) return 0
  const i = Math.max(0, selectedIndex(s))
  return Math.max(0, Math.min(i - Math.floor(h / 2), n - h))
}

export function rowText(p: PrefixLine, s: UiState, c: ChalkInstance): string {
  const change = s.changes[p.prefix]
  const selected = p.prefix === s.selected
  const ids = p.findings.filter((f) => f.severity !== 'info').map((f) => f.id).join(', ')
  const was = change ? `was ${change.from}${ids ? ' · ' : ''}` : ''
  const cell = pad(p.verdict, 16)
  const verdict = change ? c.bgYellow.black(p.verdict) + cell.slice(p.verdict.length) : verdictColor(c, p.verdict)(cell)
  const line = `${selected ? '›' : ' '}${change ? '*' : ' '}${pad(p.prefix, prefixWidth(s))}${verdict}${change ? c.yellow(was) : ''}${ids}`
  const fitted = fit(line, s.size.columns)
  return selected ? c.inverse(fitted) : fitted
}

export function listLines(s: UiState, c: ChalkInstance): string[] {
  const h = layout(s).list
  const rows = visibleRows(s)
  const out: string[] = []
  if (rows.length === 0 && !s.report && s.loadError) {
    // the whole reason, wrapped: it names what to give (a snapshot without kernel routes, a failed `ip`)
    const why = wrap(`could not load: ${s.loadError}`, s.size.columns - 2, 2)
    for (const l of why) out.push(fit(`  ${c.red(l)}`, s.size.columns))
  } else if (rows.length === 0) {
    const why = !s.report
      ? 'loading…'
      : s.filter
        ? `no prefix matches ${JSON.stringify(s.filter)} (Esc clears the filter)`
        : s.report.node.pools.length === 0
          ? c.yellow('No pools: no prefix is a tunnel prefix (give --pool CIDR=ipip or --ippools FILE).')
          : s.report.node.failed.some((f) => f.file === 'birdc-show-route-all.txt')
            ? c.yellow('BIRD\'s routes could not be read (see above), and the kernel routes no prefix inside the pools.')
            : c.yellow('No prefix inside the pools is held by BIRD or routed by the kernel.')
    out.push(fit(`  ${why}`, s.size.columns))
  } else {
    const off = listOffset(s)
    for (const p of rows.slice(off, off + h)) out.push(rowText(p, s, c))
  }
  while (out.length < h) out.push(' '.repeat(s.size.columns))
  return out.slice(0, h)
}

const PANE_TITLE: Record<string, string> = {
  explain: 'Explanation',
  fix: 'Fix preview',
  apply: 'Apply fix',
  bundle: 'Support bundle',
  help: 'Help',
  host: 'Host findings',
}

export function paneTitle(s: UiState, c: ChalkInstance): string {
  const p = s.pane!
  const total = paneRows(s).length
  const h = layout(s).pane
  const range = total > h ? ` ${p.scroll + 1}-${Math.min(total, p.scroll + h)} of ${total} ` : ''
  const name = ` ${PANE_TITLE[p.kind]}${p.prefix ? ` ${p.prefix}` : ''} `
  const w = s.size.columns
  // the name and range always; of the hints, what fits (Esc close first)
  const room = w - 3 - name.length - range.length - 2
  const hints = fitItems(s.mode === 'pane' ? ['Esc close', '↑↓ scroll', 'Tab list'] : ['Tab: focus pane'], room)
  const hint = hints ? ` ${hints} ` : ''
  const fill = Math.max(1, w - 2 - name.length - range.length - hint.length)
  const title = `──${name}${'─'.repeat(fill)}${range}${hint}`
  return fit(s.mode === 'pane' ? c.bold(title) : c.dim(title), w)
}

export function paneLines(s: UiState, c: ChalkInstance): string[] {
  const p = s.pane!
  const h = layout(s).pane
  const colour =
    p.status === 'unavailable'
      ? c.yellow
      : p.status === 'error'
        ? c.red
        : p.status === 'loading'
          ? c.dim
          : (x: string) => x
  const rows = paneRows(s)
    .slice(p.scroll, p.scroll + h)
    .map((l) => fit(colour(l), s.size.columns))
  while (rows.length < h) rows.push(' '.repeat(s.size.columns))
  return rows
}

// most important first: the bar shows as many as fit; `?` lists every key
const FOOTER_KEYS: Record<'list' | 'pane' | 'filter', string[]> = {
  list: ['? help', 'q quit', 'Enter explain', '/ filter', 'f fix', 'a apply', 'h host', 'r refresh', 'b bundle',
    '↑↓ jk move'],
  pane: ['? help', 'q quit', 'Esc close', '↑↓ jk scroll', 'Tab list', 'f fix', 'a apply', 'r refresh', 'b bundle',
    'PgUp/PgDn page'],
  filter: ['Enter keep', 'Esc clear', 'type to filter', '↑↓ move'],
}

export function footerLine(s: UiState, c: ChalkInstance): string {
  const w = s.size.columns
  if (s.mode === 'confirm' && s.confirm) {
    const {prefix} = s.confirm
    if (prefix === undefined)
      return fit(c.bold.yellow('Apply the whole plan (every correction, withdrawal and rule change)? [y/N] '), w)
    const plan = s.report?.prefixes.find((p) => p.prefix === prefix)?.plan
    // as `ip route` takes them, as every finding words a planned route (planned next hops are all onlink, on one dev)
    const what = plan && plan.nexthops.length > 0
      ? tunnelNexthops(plan.nexthops.map((n) => n.gateway), plan.nexthops[0].dev)
      : 'withdrawing routedoctor\'s stale routes'
    return fit(c.bold.yellow(`Apply ${prefix} ${what}? [y/N] `), w)
  }
  if (s.notice) return fit(c.cyan(s.notice), w)
  return fit(c.dim(fitItems(FOOTER_KEYS[s.mode === 'confirm' ? 'list' : s.mode], w)), w)
}

/** The whole screen, exactly size.rows lines (what the components show, for tests and debugging). */
export function frame(s: UiState, c: ChalkInstance): string[] {
  return [
    ...headerLines(s, c),
    columnTitle(s, c),
    ...listLines(s, c),
    ...(s.pane ? [paneTitle(s, c), ...paneLines(s, c)] : []),
    footerLine(s, c),
  ]
}
