import {readFileSync} from 'node:fs'
import path from 'node:path'

import {FIXTURES, type Expected} from '../helpers.js'
import {createActions} from '../../src/ui/actions.js'
import type {CheckReport} from '../../src/services/report.js'
import {initialState, type Capabilities, type UiState} from '../../src/ui/state.js'

export const ECMP = path.join(FIXTURES, 'bird2-ecmp-not-tunneled')
export const TARGET = '192.168.110.128/26'

export function expected(dir = ECMP): Expected {
  return JSON.parse(readFileSync(path.join(dir, 'expected.json'), 'utf8')) as Expected
}

export async function fixtureReport(dir = ECMP): Promise<CheckReport> {
  return createActions({from: dir}).loadReport()
}

export const NONE: Capabilities = {previewFix: false, applyFix: false, writeBundle: false}
export const ALL: Capabilities = {previewFix: true, applyFix: true, writeBundle: true}

export function stateFor(report: CheckReport, opts: Partial<{live: boolean; capabilities: Capabilities; size: {columns: number; rows: number}}> = {}): UiState {
  return initialState({report, live: opts.live ?? false, source: ECMP, capabilities: opts.capabilities ?? NONE, size: opts.size ?? {columns: 80, rows: 24}, at: '2026-01-01T00:00:00Z'})
}

/** A copy of the report with one prefix's verdict changed. */
export function withVerdict(report: CheckReport, prefix: string, verdict: CheckReport['prefixes'][number]['verdict']): CheckReport {
  const copy = structuredClone(report)
  const line = copy.prefixes.find((p) => p.prefix === prefix)
  if (!line) throw new Error(`${prefix} not in the report`)
  line.verdict = verdict
  return copy
}
