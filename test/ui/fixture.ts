import {cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {FIXTURES, ROOT, scenarioDirs, type Expected} from '../helpers.js'
import {createActions} from '../../src/ui/actions.js'
import type {CheckReport} from '../../src/report/report.js'
import {initialState, update, type Capabilities, type Effect, type KeyInfo, type UiEvent, type UiState} from '../../src/ui/state.js'

export const ECMP = path.join(FIXTURES, 'bird2-ecmp-not-tunneled')
export const TARGET = '192.168.110.128/26'
/** The shipped example. */
export const EXAMPLE = path.join(ROOT, 'examples/bird2-ecmp-not-tunneled')
/** Every capture the UI is tried on: the shipped example and the shared fixtures. */
export const CAPTURES = [EXAMPLE, ...scenarioDirs()]
export const name = (dir: string) => path.relative(ROOT, dir)

/** The error a live collection records when BIRD's control socket is absent (collect/live.ts's text). */
export const NO_SOCKET = 'BIRD control socket /var/run/calico/bird.ctl does not exist (is BIRD running? pass --bird-socket PATH)'
export const BIRD_FILES = ['birdc-show-status.txt', 'birdc-show-protocols-all.txt', 'birdc-show-route-all.txt']

/**
 * A copy of a capture as a collection without BIRD's socket leaves it: BIRD's files absent and
 * listed in errors.json with the reason (the snapshot layout collect/snapshot-files.ts writes).
 */
export function withoutBird(dir: string): {dir: string; remove: () => void} {
  const copy = mkdtempSync(path.join(os.tmpdir(), 'rd-ui-nobird-'))
  cpSync(dir, copy, {recursive: true})
  for (const f of BIRD_FILES) rmSync(path.join(copy, f), {force: true})
  writeFileSync(path.join(copy, 'errors.json'), JSON.stringify(BIRD_FILES.map((f) => ({name: f, error: NO_SOCKET}))))
  return {dir: copy, remove: () => rmSync(copy, {recursive: true, force: true})}
}

export function expected(dir = ECMP): Expected {
  return JSON.parse(readFileSync(path.join(dir, 'expected.json'), 'utf8')) as Expected
}

export async function fixtureReport(dir = ECMP): Promise<CheckReport> {
  return createActions({from: dir}).loadReport()
}

export const NONE: Capabilities = {previewFix: false, applyFix: false, writeBundle: false}
export const ALL: Capabilities = {previewFix: true, applyFix: true, writeBundle: true}

export function stateFor(
  report: CheckReport,
  opts: Partial<{
    live: boolean
    capabilities: Capabilities
    size: {columns: number; rows: number}
    source: string
  }> = {},
): UiState {
  return initialState({
    report,
    live: opts.live ?? false,
    source: opts.source ?? ECMP,
    capabilities: opts.capabilities ?? NONE,
    size: opts.size ?? {columns: 80, rows: 24},
    at: '2026-01-01T00:00:00Z',
  })
}

/** A copy of the report with one prefix's verdict changed. */
export function withVerdict(report: CheckReport, prefix: string, verdict: CheckReport['prefixes'][number]['verdict']): CheckReport {
  const copy = structuredClone(report)
  const line = copy.prefixes.find((p) => p.prefix === prefix)
  if (!line) throw new Error(`${prefix} not in the report`)
  line.verdict = verdict
  return copy
}

export const key = (input: string, k: KeyInfo = {}): UiEvent => ({type: 'key', input, key: k})

/** The state after the events, and every effect they asked for. */
export function run(state: UiState, ...events: UiEvent[]): {state: UiState; effects: Effect[]} {
  let s = state
  const effects: Effect[] = []
  for (const e of events) {
    const u = update(s, e)
    s = u.state
    effects.push(...u.effects)
  }
  return {state: s, effects}
}
