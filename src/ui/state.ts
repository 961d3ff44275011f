// The TUI's state and its one pure update function: (state, event) → new state + effects to run.
// No Ink, no React, no I/O here: the controller runs the effects through the injected actions and
// feeds their results back as events. Everything a key does is decided here and unit-tested.
import type {CheckReport, PrefixLine} from '../report/report.js'
import {counted} from '../model/format.js'
import type {Verdict} from '../model/types.js'
import {wrap} from './ansi.js'
import {splitKeys} from './keys.js'

export type Mode = 'list' | 'filter' | 'pane' | 'confirm'
export type PaneKind = 'explain' | 'fix' | 'apply' | 'bundle' | 'help' | 'host'

export interface Pane {
  kind: PaneKind
  prefix?: string
  seq: number // the request this pane waits for (stale results are dropped)
  status: 'loading' | 'ready' | 'error' | 'unavailable'
  text: string
  scroll: number
}

export interface Change {
  from: Verdict | 'new'
  to: Verdict
  generation: number // the load that saw it
}

export interface Capabilities {
  previewFix: boolean
  applyFix: boolean
  writeBundle: boolean
}

export interface UiState {
  report?: CheckReport
  generation: number // completed loads
  loading: boolean
  loadError?: string
  loadedAt?: string
  // how long the last load took (ms): a timer's refresh waits at least as long after it, so that a full table's
  // loads, which hold the event loop, leave the keys time between them
  loadMs?: number
  selected?: string // a prefix: selection survives refreshes and filtering
  filter: string
  mode: Mode
  pane?: Pane
  seq: number
  changes: Record<string, Change>
  notice?: string
  refreshAsked?: boolean // the load under way was asked for with `r`: say when it is in
  confirm?: {prefix?: string} // the prefix whose plan is applied; none: the whole plan
  size: {columns: number; rows: number}
  live: boolean
  source: string // "live" or the --from path
  capabilities: Capabilities
  quit: boolean
}

/** A key as Ink's useInput reports it (only the fields used here). */
export interface KeyInfo {
  upArrow?: boolean; downArrow?: boolean; leftArrow?: boolean; rightArrow?: boolean
  pageUp?: boolean; pageDown?: boolean; home?: boolean; end?: boolean
  return?: boolean; escape?: boolean; ctrl?: boolean; meta?: boolean; tab?: boolean
  backspace?: boolean; delete?: boolean
}

export type UiEvent =
  | {type: 'key'; input: string; key: KeyInfo}
  | {type: 'loaded'; report: CheckReport; at: string; tookMs?: number}
  | {type: 'load-failed'; error: string}
  | {type: 'pane-result'; seq: number; ok: boolean; text: string}
  | {type: 'resize'; columns: number; rows: number}
  | {type: 'tick'; now?: number} // the refresh timer (now: Date.now())

export type Effect =
  | {type: 'load'; freshTruth?: true} // freshTruth: `r` asked, Calico's truth is read again whatever its age
  | {type: 'explain'; prefix: string; seq: number}
  | {type: 'preview-fix'; prefix: string; seq: number}
  | {type: 'apply-fix'; prefix?: string; seq: number} // no prefix: the whole plan
  | {type: 'write-bundle'; seq: number}
  | {type: 'exit'}

export interface Update {
  state: UiState
  effects: Effect[]
}

/** How long (in loads) a verdict change stays marked. */
export const CHANGE_MEMORY = 3

export const NOT_AVAILABLE = {
  previewFix: 'Fix preview is not available: no fix service is wired into the UI.',
  applyFix:
    'Applying a fix is not available here: with --from the source is an offline snapshot, not this node\'s kernel (run `routedoctor ui` on the node).',
  writeBundle: 'Writing a bundle is not available: no bundle service is wired into the UI.',
}

/** `loadError`: why the first load gave no report (shown instead of a list; live, the next refresh tries again). */
export function initialState(opts: {
  report?: CheckReport; loadError?: string; live: boolean; source: string; size?: {columns: number; rows: number}
  capabilities: Capabilities; at?: string
}): UiState {
  const base: UiState = {
    generation: 0, loading: opts.report === undefined && opts.loadError === undefined, filter: '', mode: 'list', seq: 0,
    changes: {},
    ...(opts.report === undefined && opts.loadError !== undefined ? {loadError: opts.loadError} : {}),
    size: opts.size ?? {columns: 80, rows: 24},
    live: opts.live,
    source: opts.source,
    capabilities: opts.capabilities,
    quit: false,
  }
  if (!opts.report) return base
  return applyReport(base, opts.report, opts.at ?? new Date().toISOString())
}

// ---------------------------------------------------------------------------------------------
// Derived data (pure selectors the view uses too)

const rank = (v: Verdict) => (v === 'ok' ? 2 : v === 'local' || v === 'not-in-pool' ? 3 : 1)

// Reports are never changed once made: their sorted and filtered rows are computed once per report
// (and filter), not on every call (a frame asks several times; a full table has a million rows).
const sortedCache = new WeakMap<CheckReport, readonly PrefixLine[]>()
const filteredCache = new WeakMap<CheckReport, {filter: string; rows: readonly PrefixLine[]}>()

/** The report's prefixes, problems first, then healthy, then local / not-in-pool; report order within each. */
export function sortedRows(report: CheckReport | undefined): readonly PrefixLine[] {
  if (!report) return []
  let rows = sortedCache.get(report)
  if (rows === undefined) {
    rows = report.prefixes
      .map((p, i) => ({p, i}))
      .sort((a, b) => rank(a.p.verdict) - rank(b.p.verdict) || a.i - b.i)
      .map((x) => x.p)
    sortedCache.set(report, rows)
  }
  return rows
}

export function matches(p: PrefixLine, filter: string): boolean {
  if (filter === '') return true
  const hay = [p.prefix, p.verdict, ...p.findings.map((f) => f.id)].join(' ').toLowerCase()
  return filter.toLowerCase().split(/\s+/).filter(Boolean).every((w) => hay.includes(w))
}

export function visibleRows(state: UiState): readonly PrefixLine[] {
  const report = state.report
  if (!report) return []
  const hit = filteredCache.get(report)
  if (hit !== undefined && hit.filter === state.filter) return hit.rows
  const rows = state.filter === '' ? sortedRows(report) : sortedRows(report).filter((p) => matches(p, state.filter))
  filteredCache.set(report, {filter: state.filter, rows})
  return rows
}

export function selectedIndex(state: UiState): number {
  return visibleRows(state).findIndex((p) => p.prefix === state.selected)
}

/** The selected prefix when the list shows it (a filter can hide every row): the one keys act on. */
export function shownSelection(state: UiState): string | undefined {
  return state.selected !== undefined && selectedIndex(state) >= 0 ? state.selected : undefined
}

/** Sources that could not be collected (or a replayed bundle's warnings): the header gives them a row. */
export function hasSourceProblems(state: UiState): boolean {
  const n = state.report?.node
  return n !== undefined && (n.failed.length > 0 || n.bundleWarnings.length > 0)
}

/**
 * Rows for each region at the current size: header 2 (3 with source problems), column titles 1, list,
 * [pane title 1 + pane], footer 1.
 */
export function layout(state: UiState): {list: number; pane: number} {
  const rows = Math.max(8, state.size.rows)
  const body = rows - 4 - (hasSourceProblems(state) ? 1 : 0)
  if (!state.pane) return {list: body, pane: 0}
  const count = Math.max(1, visibleRows(state).length)
  const list = Math.min(count, Math.max(2, Math.floor((body - 1) / 3)))
  return {list, pane: body - 1 - list}
}

/** The pane's text as screen rows at the current width (what scrolling counts). */
export function paneRows(state: UiState): string[] {
  if (!state.pane) return []
  return wrap(state.pane.text, Math.max(10, state.size.columns - 1))
}

function maxScroll(state: UiState): number {
  return Math.max(0, paneRows(state).length - layout(state).pane)
}

// ---------------------------------------------------------------------------------------------

function keepSelection(state: UiState): UiState {
  const rows = visibleRows(state)
  if (rows.length === 0) return state
  if (rows.some((r) => r.prefix === state.selected)) return state
  return {...state, selected: rows[0].prefix}
}

function clampScroll(state: UiState): UiState {
  if (!state.pane) return state
  const scroll = Math.max(0, Math.min(state.pane.scroll, maxScroll(state)))
  return scroll === state.pane.scroll ? state : {...state, pane: {...state.pane, scroll}}
}

function applyReport(state: UiState, report: CheckReport, at: string): UiState {
  const generation = state.generation + 1
  const changes: Record<string, Change> = {}
  for (const [prefix, c] of Object.entries(state.changes))
    if (c.generation > generation - CHANGE_MEMORY) changes[prefix] = c
  let notice: string | undefined
  if (state.report) {
    const before = new Map(state.report.prefixes.map((p) => [p.prefix, p.verdict]))
    const now = new Set(report.prefixes.map((p) => p.prefix))
    let changed = 0
    for (const p of report.prefixes) {
      const was = before.get(p.prefix)
      if (was === p.verdict) continue
      changes[p.prefix] = {from: was ?? 'new', to: p.verdict, generation}
      changed++
    }
    const gone = [...before.keys()].filter((p) => !now.has(p))
    for (const p of gone) delete changes[p]
    if (changed > 0 || gone.length > 0) {
      notice = [
        changed > 0 ? `${changed} verdict${changed === 1 ? '' : 's'} changed` : '',
        gone.length > 0 ? `gone: ${gone.join(', ')}` : '',
      ]
        .filter(Boolean)
        .join('; ')
    }
  }
  return keepSelection({
    ...state,
    report,
    generation,
    loading: false,
    loadError: undefined,
    loadedAt: at,
    changes,
    notice: notice ?? state.notice,
  })
}

function selectedLine(state: UiState): PrefixLine | undefined {
  const prefix = shownSelection(state)
  return prefix === undefined ? undefined : state.report?.prefixes.find((p) => p.prefix === prefix)
}

function nothingShown(state: UiState): Update {
  const notice = state.filter
    ? `no prefix is listed: the filter ${JSON.stringify(state.filter)} matches none (Esc clears it)`
    : 'no prefix selected'
  return {state: {...state, notice}, effects: []}
}

/** A pane about one prefix (explanation, fix preview) follows the selection, and closes when no prefix is listed. */
function follow(state: UiState): Update {
  const p = state.pane
  const prefix = shownSelection(state)
  if (!p || (p.kind !== 'explain' && p.kind !== 'fix') || p.prefix === prefix) return {state, effects: []}
  if (prefix === undefined) {
    return {state: {...state, pane: undefined, mode: state.mode === 'pane' ? 'list' : state.mode}, effects: []}
  }
  return p.kind === 'explain' ? explain(state, false) : previewFix(state, false)
}

function refilter(state: UiState, filter: string, mode: Mode): Update {
  return follow(keepSelection({...state, filter, mode}))
}

function openPane(state: UiState, kind: PaneKind, status: Pane['status'], text: string, prefix?: string): UiState {
  const seq = state.seq + 1
  return {...state, seq, pane: {kind, prefix, seq, status, text, scroll: 0}}
}

function move(state: UiState, delta: number | 'first' | 'last'): Update {
  const rows = visibleRows(state)
  if (rows.length === 0) return {state, effects: []}
  const i = Math.max(0, selectedIndex(state))
  const next =
    delta === 'first' ? 0 : delta === 'last' ? rows.length - 1 : Math.max(0, Math.min(rows.length - 1, i + delta))
  return follow({...state, selected: rows[next].prefix})
}

function scroll(state: UiState, delta: number | 'top' | 'bottom'): UiState {
  if (!state.pane) return state
  const to = delta === 'top' ? 0 : delta === 'bottom' ? maxScroll(state) : state.pane.scroll + delta
  return clampScroll({...state, pane: {...state.pane, scroll: Math.max(0, to)}})
}

function explain(state: UiState, focus: boolean): Update {
  const prefix = shownSelection(state)
  if (!prefix) return nothingShown(state)
  const keepScroll = state.pane?.kind === 'explain' && state.pane.prefix === prefix ? state.pane.scroll : 0
  const s = openPane(state, 'explain', 'loading', `explaining ${prefix}…`, prefix)
  s.pane!.scroll = keepScroll
  return {state: {...s, mode: focus ? 'pane' : s.mode}, effects: [{type: 'explain', prefix, seq: s.seq}]}
}

function previewFix(state: UiState, focus = true): Update {
  const prefix = shownSelection(state)
  if (!prefix) return nothingShown(state)
  const mode = focus ? 'pane' : state.mode
  if (!state.capabilities.previewFix) {
    return {state: {...openPane(state, 'fix', 'unavailable', NOT_AVAILABLE.previewFix, prefix), mode}, effects: []}
  }
  const s = openPane(state, 'fix', 'loading', `planning the fix for ${prefix}…`, prefix)
  return {state: {...s, mode}, effects: [{type: 'preview-fix', prefix, seq: s.seq}]}
}

// findings whose prefix's plan withdraws routedoctor's routes (with or without a corrected route)
const WITHDRAWN = new Set(['overlay-stale', 'overlay-learnable'])

/** Does applying `line`'s plan change anything: a corrected route, or routes of routedoctor's withdrawn? */
export function lineApplies(line: PrefixLine): boolean {
  return line.plan !== null || line.findings.some((f) => WITHDRAWN.has(f.id))
}

/**
 * `a`: the selected prefix's plan (its corrected route, its withdrawals, the overlay's rules), or, for a prefix with
 * none, the whole plan: withdrawals of routes outside every listed prefix and rule changes show on no line.
 */
function askApply(state: UiState): Update {
  const line = selectedLine(state)
  if (!line) return nothingShown(state)
  if (!state.capabilities.applyFix)
    return {
      state: {...openPane(state, 'apply', 'unavailable', NOT_AVAILABLE.applyFix, line.prefix), mode: 'pane'},
      effects: [],
    }
  const confirm = lineApplies(line) ? {prefix: line.prefix} : {}
  return {state: {...state, mode: 'confirm', confirm, notice: undefined}, effects: []}
}

function writeBundle(state: UiState): Update {
  if (!state.capabilities.writeBundle)
    return {state: {...openPane(state, 'bundle', 'unavailable', NOT_AVAILABLE.writeBundle), mode: 'pane'}, effects: []}
  const s = openPane(state, 'bundle', 'loading', 'writing a support bundle…')
  return {state: {...s, mode: 'pane'}, effects: [{type: 'write-bundle', seq: s.seq}]}
}

/** Is it less than the last load's duration since that load ended? (A key's `r` refreshes anyway.) */
function resting(state: UiState, now: number | undefined): boolean {
  if (now === undefined || state.loadMs === undefined || state.loadedAt === undefined) return false
  return now - Date.parse(state.loadedAt) < state.loadMs
}

/** What `r` says once its load is in: when, and what changed (or that nothing did). */
function refreshedNotice(before: UiState, after: UiState, at: string): string {
  const d = new Date(at)
  const when = Number.isNaN(d.getTime()) ? '' : ` at ${d.toTimeString().slice(0, 8)}`
  const what = after.notice !== before.notice && after.notice
    ? after.notice
    : `no verdict changed (${counted(after.report?.prefixes.length ?? 0, 'prefix', 'prefixes')})`
  return `refreshed${when}: ${what}`
}

function refresh(state: UiState, asked = false): Update {
  if (state.loading) return {state, effects: []}
  return {state: {...state, loading: true}, effects: [asked ? {type: 'load', freshTruth: true} : {type: 'load'}]}
}

function toggleHelp(state: UiState): Update {
  if (state.pane?.kind === 'help') return {state: {...state, pane: undefined, mode: 'list'}, effects: []}
  return {state: {...openPane(state, 'help', 'ready', HELP), mode: 'pane'}, effects: []}
}

function hostPane(state: UiState, hostText: (s: UiState) => string): Update {
  return {state: {...openPane(state, 'host', 'ready', hostText(state)), mode: 'pane'}, effects: []}
}

const quit = (state: UiState): Update => ({state: {...state, quit: true}, effects: [{type: 'exit'}]})

/** Keys every non-text mode shares. */
function common(state: UiState, input: string, key: KeyInfo, hostText: (s: UiState) => string): Update | undefined {
  switch (input) {
    case 'q': return quit(state)
    case '/': return {state: {...state, mode: 'filter', notice: undefined}, effects: []}
    case 'f': return previewFix(state)
    case 'a': return askApply(state)
    case 'b': return writeBundle(state)
    case 'r': {
      const u = refresh(state, true)
      return u.effects.length > 0 ? {...u, state: {...u.state, refreshAsked: true}} : u
    }
    case '?': return toggleHelp(state)
    case 'h': return hostPane(state, hostText)
  }
  if (key.return) return explain(state, true)
  return undefined
}

export function defaultHostText(state: UiState): string {
  const f = state.report?.host.findings ?? []
  const n = state.report?.node
  const sources = [
    ...(n?.failed ?? []).map((x) => `  could not collect ${x.file}: ${x.error}`),
    ...(n?.bundleWarnings ?? []).map((w) => `  bundle: ${w}`),
  ]
  const problems = sources.length > 0 ? ['Sources', ...sources, ''] : []
  if (f.length === 0) return [...problems, 'Host: no host findings.'].join('\n')
  const finding = (x: (typeof f)[number]) =>
    `  ${x.severity.toUpperCase()} ${x.id}: ${x.title}\n      ${x.detail}${x.fix ? `\n      what to do: ${x.fix}` : ''}`
  return [...problems, 'Host findings', ...f.map(finding)].join('\n')
}

/**
 * Every key of one input chunk, in order. A run of text is one key per character outside the
 * filter, and the filter's text as a whole. Keys after the one that asks "apply?" are dropped:
 * they were typed before the question was on the screen, so none of them is its answer.
 */
function onInput(state: UiState, input: string, key: KeyInfo, hostText: (s: UiState) => string): Update {
  let s = state
  const effects: Effect[] = []
  const step = (i: string, k: KeyInfo) => {
    const asked = s.mode === 'confirm'
    const u = onKey(s, i, k, hostText)
    s = u.state
    effects.push(...u.effects)
    return s.quit || (!asked && s.mode === 'confirm')
  }
  for (const k of splitKeys(input, key)) {
    if (k.key.ctrl || k.key.meta || [...k.input].length <= 1) {
      if (step(k.input, k.key)) break
      continue
    }
    let text = k.input
    let stop = false
    while (text !== '' && !stop) {
      const one = s.mode === 'filter' ? text : String.fromCodePoint(text.codePointAt(0)!)
      text = text.slice(one.length)
      stop = step(one, {})
    }
    if (stop) break
  }
  // a read-only pane request that a later key of the chunk replaced would be dropped as stale: not made at all
  const current = s.pane?.seq
  const stale = (e: Effect) => (e.type === 'explain' || e.type === 'preview-fix') && e.seq !== current
  return {state: s, effects: effects.filter((e) => !stale(e))}
}

function onKey(state: UiState, input: string, key: KeyInfo, hostText: (s: UiState) => string): Update {
  if (key.ctrl && input === 'c') return quit(state)
  const s = state.notice && state.mode !== 'confirm' ? {...state, notice: undefined} : state
  switch (s.mode) {
    case 'confirm': {
      const prefix = s.confirm!.prefix
      const back: UiState = {...s, mode: s.pane ? 'pane' : 'list', confirm: undefined}
      if (input === 'y' || input === 'Y') {
        const o = openPane(
          back,
          'apply',
          'loading',
          prefix === undefined ? 'applying the whole plan…' : `applying the plan for ${prefix}…`,
          prefix,
        )
        return {
          state: {...o, mode: 'pane'},
          effects: [{type: 'apply-fix', ...(prefix === undefined ? {} : {prefix}), seq: o.seq}],
        }
      }
      return {state: {...back, notice: `not applied: ${prefix ?? 'the node'} left as it is`}, effects: []}
    }
    case 'filter': {
      if (key.escape) return refilter(s, '', 'list')
      if (key.return) return {state: {...s, mode: 'list'}, effects: []}
      if (key.upArrow) return move(s, -1)
      if (key.downArrow) return move(s, 1)
      if (key.backspace || key.delete) return refilter(s, s.filter.slice(0, -1), 'filter')
      if (key.ctrl || key.meta || key.tab || input === '') return {state: s, effects: []}
      // eslint-disable-next-line no-control-regex
      const text = input.replace(/[\x00-\x1f\x7f]/g, '')
      return refilter(s, s.filter + text, 'filter')
    }
    case 'pane': {
      const page = Math.max(1, layout(s).pane - 1)
      if (key.escape) return {state: {...s, pane: undefined, mode: 'list'}, effects: []}
      if (key.tab) return {state: {...s, mode: 'list'}, effects: []}
      if (key.upArrow || input === 'k') return {state: scroll(s, -1), effects: []}
      if (key.downArrow || input === 'j') return {state: scroll(s, 1), effects: []}
      if (key.pageUp || input === 'u') return {state: scroll(s, -page), effects: []}
      if (key.pageDown || input === ' ' || input === 'd') return {state: scroll(s, page), effects: []}
      if (key.home || input === 'g') return {state: scroll(s, 'top'), effects: []}
      if (key.end || input === 'G') return {state: scroll(s, 'bottom'), effects: []}
      if (key.return && s.pane?.kind === 'explain') return {state: {...s, mode: 'list'}, effects: []}
      return common(s, input, key, hostText) ?? {state: s, effects: []}
    }
    case 'list': {
      if (key.escape) {
        if (s.filter) return refilter(s, '', 'list')
        if (s.pane) return {state: {...s, pane: undefined}, effects: []}
        return {state: s, effects: []}
      }
      if (key.tab && s.pane) return {state: {...s, mode: 'pane'}, effects: []}
      if (key.upArrow || input === 'k') return move(s, -1)
      if (key.downArrow || input === 'j') return move(s, 1)
      if (key.pageUp) return move(s, -layout(s).list)
      if (key.pageDown) return move(s, layout(s).list)
      if (key.home || input === 'g') return move(s, 'first')
      if (key.end || input === 'G') return move(s, 'last')
      return common(s, input, key, hostText) ?? {state: s, effects: []}
    }
  }
}

export function update(state: UiState, event: UiEvent, hostText: (s: UiState) => string = defaultHostText): Update {
  switch (event.type) {
    case 'key':
      return onInput(state, event.input, event.key, hostText)
    case 'resize':
      return {state: clampScroll({...state, size: {columns: event.columns, rows: event.rows}}), effects: []}
    case 'tick':
      return state.live && !resting(state, event.now) ? refresh(state) : {state, effects: []}
    case 'load-failed': {
      const notice = `refresh failed: ${event.error}`
      return {state: {...state, loading: false, refreshAsked: false, loadError: event.error, notice}, effects: []}
    }
    case 'loaded': {
      const s = {...applyReport(state, event.report, event.at), loadMs: event.tookMs, refreshAsked: false}
      if (state.refreshAsked) s.notice = refreshedNotice(state, s, event.at)
      // a pane about a prefix no longer listed follows the selection
      if (s.pane && (s.pane.kind === 'explain' || s.pane.kind === 'fix') && s.pane.prefix !== shownSelection(s)) {
        return follow(s)
      }
      // the open explanation is re-read from the new data, keeping its scroll position
      if (s.pane?.kind === 'explain' && s.pane.prefix) {
        const seq = s.seq + 1
        return {state: {...s, seq, pane: {...s.pane, seq}}, effects: [{type: 'explain', prefix: s.pane.prefix, seq}]}
      }
      return {state: clampScroll(s), effects: []}
    }
    case 'pane-result': {
      if (!state.pane || state.pane.seq !== event.seq) return {state, effects: []} // stale
      const s = clampScroll({...state, pane: {...state.pane, status: event.ok ? 'ready' : 'error', text: event.text}})
      // after a successful apply, show the new state of the node
      if (event.ok && state.pane.kind === 'apply') return refresh(s)
      return {state: s, effects: []}
    }
  }
}

export const HELP = `↑↓ jk   move (in a pane: scroll)      PgUp PgDn g G  page, first, last
/       filter: prefix, verdict, id    Enter keeps the filter, Esc clears it
Enter   explain the selected prefix    Tab  switch between list and pane
Esc     close the pane, clear filter   h    host findings
f       preview the fix                a    apply the fix (asks y/n first)
b       write a support bundle         r    refresh now (live: every few s)
?       this help                      q    quit

a applies the selected prefix's plan; on a prefix with nothing planned of
its own, the whole plan (withdrawals of stale corrections, rule changes).

Problems first (missing, unreachable, misrouted, not-tunneled,
multipath-lost), then ok, then local and not-in-pool. * marks a verdict
that changed lately (was → now).`
