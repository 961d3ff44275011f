// `watch`'s changes: what moved between two diagnoses of the node.
// agent/state.ts finds them, render/watch.ts prints them.
import type {Severity} from '../model/types.js'

export type WatchChange =
  | {kind: 'verdict'; prefix: string; from: string; to: string}
  | {kind: 'finding'; op: 'appeared' | 'cleared'; id: string; severity: Severity; prefix?: string; title: string}
  | {kind: 'session'; name: string; neighbor?: string; from: string; to: string; lastError?: string}
  | {kind: 'source'; source: string; op: 'failed' | 'recovered'; error?: string}
  | {
      kind: 'reconcile'
      op: 'applied' | 'failed' | 'route-war' | 'withdrawn'
      prefix?: string
      routes?: number
      journal?: string
      detail?: string
    }

export type TimedChange = WatchChange & {at: string}
