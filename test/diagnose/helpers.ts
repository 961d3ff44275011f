// Loading real captures as SourceFile[], editing their raw text in memory (the smallest edit that
// shows a condition no capture shows), and checking that a finding's evidence cites real lines.
import {existsSync, readFileSync, readdirSync} from 'node:fs'
import path from 'node:path'

import {expect} from 'vitest'

import {SNAPSHOT_FILE_NAMES} from '../../src/collect/snapshot-files.js'
import {diagnoseHost, diagnosePrefix, type PrefixDiagnosis} from '../../src/diagnose/engine.js'
import {buildSnapshot, type BuildOptions} from '../../src/snapshot/build.js'
import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import type {Finding, FindingId, SourceFile} from '../../src/model/types.js'
import {FIXTURES} from '../helpers.js'

export const BIRD2 = 'bird2-ecmp-not-tunneled'
export const BIRD16 = 'bird16-ecmp-not-tunneled'
export const BIRD16_LL = 'bird16-ipv6-ll-underlay-unreachable'
export const PEER_DOWN = 'bird2-peer-down'
export const LAB_HEALTHY = 'lab-bird2-healthy'

export function fixtureDir(name: string): string {
  return path.join(FIXTURES, name)
}

export function fixtureExists(name: string): boolean {
  return existsSync(fixtureDir(name))
}

/** The snapshot files of a capture folder, read synchronously (the same names readSnapshotDir keeps). */
export function loadFiles(name: string): SourceFile[] {
  const dir = fixtureDir(name)
  const known = new Set<string>(SNAPSHOT_FILE_NAMES)
  return readdirSync(dir).filter((n) => known.has(n)).sort().map((n) => ({name: n, text: readFileSync(path.join(dir, n), 'utf8')}))
}

export function fileText(files: SourceFile[], name: string): string {
  const f = files.find((x) => x.name === name)
  if (f?.text === undefined) throw new Error(`no ${name} in the snapshot`)
  return f.text
}

/** A copy of `files` with one file's text rewritten; the edit must change something. */
export function editFile(files: SourceFile[], name: string, edit: (text: string) => string): SourceFile[] {
  const before = fileText(files, name)
  const after = edit(before)
  if (after === before) throw new Error(`edit of ${name} changed nothing`)
  return files.map((f) => (f.name === name ? {...f, text: after} : f))
}

/** Replace one exact substring (it must occur exactly once). */
export function replaceOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from)
  if (at < 0) throw new Error(`not found: ${JSON.stringify(from)}`)
  if (text.indexOf(from, at + from.length) >= 0) throw new Error(`not unique: ${JSON.stringify(from)}`)
  return text.slice(0, at) + to + text.slice(at + from.length)
}

export function dropFile(files: SourceFile[], name: string): SourceFile[] {
  if (!files.some((f) => f.name === name)) throw new Error(`no ${name} to drop`)
  return files.filter((f) => f.name !== name)
}

type Json = Record<string, unknown>

/** Edit the objects of a JSON array file (ip -j output): map returns the replacement, or null to delete. */
export function editJsonArray(
  files: SourceFile[],
  name: string,
  map: (o: Json) => Json | Json[] | null,
  extra: Json[] = [],
): SourceFile[] {
  return editFile(files, name, (text) => {
    const list = JSON.parse(text) as Json[]
    const out: Json[] = []
    for (const o of list) {
      const r = map(o)
      if (r === null) continue
      if (Array.isArray(r)) out.push(...r)
      else out.push(r)
    }
    out.push(...extra)
    return JSON.stringify(out) + (text.endsWith('\n') ? '\n' : '')
  })
}

/** Kernel routes in ip-j-d-route.json, by dst as ip prints it (`192.168.200.10`, `192.168.82.0/26`). */
export function editJsonRoutes(
  files: SourceFile[],
  edits: Record<string, Json | Json[] | null>,
  extra: Json[] = [],
): SourceFile[] {
  const seen = new Set<string>()
  const out = editJsonArray(
    files,
    'ip-j-d-route.json',
    (o) => {
      const dst = String(o.dst)
      if (!(dst in edits) || o.table === 'local') return o
      seen.add(dst)
      return edits[dst]
    },
    extra,
  )
  for (const dst of Object.keys(edits)) if (!seen.has(dst)) throw new Error(`no route ${dst} in ip-j-d-route.json`)
  return out
}

/**
 * Kernel routes in ip-d-route.txt (`ip -d route show table all`): a route is its header line
 * `TYPE DST …` and the tab-indented `nexthop` lines after it. null deletes it.
 */
export function editTextRoutes(files: SourceFile[], edits: Record<string, string[] | null>): SourceFile[] {
  return editFile(files, 'ip-d-route.txt', (text) => {
    const lines = text.split('\n')
    const out: string[] = []
    const seen = new Set<string>()
    for (let i = 0; i < lines.length; i++) {
      const words = lines[i].split(' ')
      const dst = words[1]
      if (!lines[i].startsWith('\t') && dst !== undefined && dst in edits && !/ table local /.test(lines[i])) {
        seen.add(dst)
        while (lines[i + 1]?.startsWith('\t')) i++
        const repl = edits[dst]
        if (repl) out.push(...repl)
        continue
      }
      out.push(lines[i])
    }
    for (const dst of Object.keys(edits)) if (!seen.has(dst)) throw new Error(`no route ${dst} in ip-d-route.txt`)
    return out.join('\n')
  })
}

/** A BIRD `show route all` entry (header line and its tab-indented attribute lines), by prefix. */
export function dropBirdRoute(files: SourceFile[], prefix: string): SourceFile[] {
  return editFile(files, 'birdc-show-route-all.txt', (text) => {
    const lines = text.split('\n')
    const out: string[] = []
    let dropping = false
    for (const line of lines) {
      if (!line.startsWith('\t')) {
        // a new entry: its own prefix, or a continuation path (leading spaces) of the entry before
        if (line.startsWith(prefix + ' ')) dropping = true
        else if (!/^\s/.test(line)) dropping = false
      }
      if (!dropping) out.push(line)
    }
    return out.join('\n')
  })
}

export function links(files: SourceFile[], ifname: string, edit: (l: Json) => Json | null): SourceFile[] {
  let seen = false
  const out = editJsonArray(files, 'ip-j-d-link.json', (o) => {
    if (o.ifname !== ifname) return o
    seen = true
    return edit(o)
  })
  if (!seen) throw new Error(`no link ${ifname}`)
  return out
}

export function snapshotIndexOf(files: SourceFile[], opts: BuildOptions = {}): SnapshotIndex {
  return new SnapshotIndex(buildSnapshot(files, opts))
}

export function ctxOfFixture(name: string, opts: BuildOptions = {}): SnapshotIndex {
  return snapshotIndexOf(loadFiles(name), opts)
}

export function prefixFindings(ctx: SnapshotIndex, prefix: string, id?: FindingId): Finding[] {
  const all = diagnosePrefix(ctx, prefix).findings
  return id ? all.filter((f) => f.id === id) : all
}

export function hostFindings(ctx: SnapshotIndex, id?: FindingId): Finding[] {
  const all = diagnoseHost(ctx)
  return id ? all.filter((f) => f.id === id) : all
}

/** Every finding over every pool prefix and the host. */
export function allFindings(ctx: SnapshotIndex): {prefixes: PrefixDiagnosis[]; host: Finding[]} {
  return {prefixes: ctx.poolPrefixes().map((p) => diagnosePrefix(ctx, p)), host: diagnoseHost(ctx)}
}

const ROUTE_TYPES = new Set(['unicast', 'local', 'broadcast', 'anycast', 'multicast', 'blackhole', 'unreachable', 'prohibit', 'throw', 'nat'])

/**
 * Every evidence item names a file of this snapshot and a line range inside it; for a text file its
 * text is those lines verbatim (or their first 300 characters and `...`); for a JSON file (one object
 * per top-level element, possibly all on line 1) the rendering names the object those lines hold.
 */
export function expectRealEvidence(ctx: SnapshotIndex, f: Finding, opts: {allowEmpty?: boolean} = {}): void {
  if (!opts.allowEmpty) expect(f.evidence.length, `${f.id} cites something`).toBeGreaterThan(0)
  for (const e of f.evidence) {
    const file = ctx.snapshot.files.find((x) => x.name === e.file)
    expect(file?.text, `${f.id}: evidence file ${e.file} is in the snapshot`).toBeDefined()
    const lines = file!.text!.split(/\r?\n/)
    expect(e.line, `${f.id}: ${e.file} line`).toBeGreaterThanOrEqual(1)
    expect(e.endLine, `${f.id}: ${e.file} endLine`).toBeGreaterThanOrEqual(e.line)
    expect(e.endLine, `${f.id}: ${e.file} has line ${e.endLine}`).toBeLessThanOrEqual(lines.length)
    const cited = lines.slice(e.line - 1, e.endLine).join('\n')
    expect(e.text.length, `${f.id}: evidence text`).toBeGreaterThan(0)
    if (e.file.endsWith('.json')) {
      const token = e.text.split(/\s+/).find((w) => w !== '' && !ROUTE_TYPES.has(w))!
      expect(cited, `${f.id}: ${e.file}:${e.line} holds the object rendered as "${e.text.split('\n')[0]}"`).toContain(`"${token}"`)
    } else if (e.text.endsWith('...') && e.text !== cited) {
      expect(cited.startsWith(e.text.slice(0, -3)), `${f.id}: ${e.file}:${e.line}-${e.endLine} begins with the cited text`).toBe(true)
    } else {
      expect(e.text, `${f.id}: ${e.file}:${e.line}-${e.endLine} verbatim`).toBe(cited)
    }
  }
}

/** The evidence items from one file whose text contains `needle`. */
export function cites(f: Finding, file: string, needle: string): boolean {
  return f.evidence.some((e) => e.file === file && e.text.includes(needle))
}

/** The 1-based number of the first line of `file` that contains (or matches) `needle`. */
export function lineOf(files: SourceFile[], file: string, needle: string | RegExp): number {
  const i = fileText(files, file).split(/\r?\n/).findIndex((l) => (typeof needle === 'string' ? l.includes(needle) : needle.test(l)))
  if (i < 0) throw new Error(`${needle} not in ${file}`)
  return i + 1
}

// ---------------------------------------------------------------- the healthy shape (DESIGN §1)

const tunnelRoute = (dst: string, gw: string): Json => ({
  type: 'unicast', dst, gateway: gw, dev: 'tunl0', table: 'main', protocol: 'bird', scope: 'global', metric: 32, flags: ['onlink'],
})

export const HEALTHY_JSON: Record<string, Json> = {
  '192.168.110.128/26': tunnelRoute('192.168.110.128/26', '172.31.20.5'),
  '192.168.82.0/26': tunnelRoute('192.168.82.0/26', '172.31.30.6'),
  '192.168.200.10': {
    type: 'unicast', dst: '192.168.200.10', table: 'main', protocol: 'bird', scope: 'global', metric: 32, flags: [],
    nexthops: [
      {gateway: '172.31.20.5', dev: 'tunl0', weight: 1, flags: ['onlink']},
      {gateway: '172.31.30.6', dev: 'tunl0', weight: 1, flags: ['onlink']},
    ],
  },
}

export const HEALTHY_TEXT: Record<string, string[]> = {
  '192.168.110.128/26': ['unicast 192.168.110.128/26 via 172.31.20.5 dev tunl0 table main proto bird scope global metric 32 onlink '],
  '192.168.82.0/26': ['unicast 192.168.82.0/26 via 172.31.30.6 dev tunl0 table main proto bird scope global metric 32 onlink '],
  '192.168.200.10': [
    'unicast 192.168.200.10 table main proto bird scope global metric 32 ',
    '\tnexthop via 172.31.20.5 dev tunl0 weight 1 onlink ',
    '\tnexthop via 172.31.30.6 dev tunl0 weight 1 onlink ',
  ],
}

/**
 * bird2-ecmp-not-tunneled with its pool routes rewritten into the shape BIRD 2.0.12 programs with the
 * onlink kernel filter, in both ip-j-d-route.json and ip-d-route.txt; BIRD's own view is unchanged
 * (its `show route` never shows the tunl0 rewrite).
 */
export function healthyFiles(): SourceFile[] {
  return editTextRoutes(editJsonRoutes(loadFiles(BIRD2), HEALTHY_JSON), HEALTHY_TEXT)
}

export {tunnelRoute}

/** DESIGN §4's table of finding ids and severities: the contract, written out here on purpose. */
export const DESIGN_SEVERITY: Record<FindingId, 'error' | 'warning' | 'info'> = {
  'tunnel-bypassed-by-ecmp': 'error', 'tunnel-not-programmed': 'error', 'nexthop-unresolvable-by-bird': 'error',
  'nexthop-unreachable': 'error', 'multipath-lost': 'error', 'prefix-missing': 'error', 'peer-down': 'error',
  'tunnel-device-missing': 'error', 'tunnel-device-down': 'error', 'onlink-missing': 'error', 'forwarding-off': 'error',
  'bird-kernel-mismatch': 'error', 'overlay-stale': 'error', 'overlay-learnable': 'error', 'route-leaked-to-bgp': 'error',
  'tunnel-endpoint-mismatch': 'error',
  'block-owner-mismatch': 'error', 'block-affinity-conflict': 'error', 'block-without-ipamblock': 'error', 'block-unrouted': 'error',
  'node-address-mismatch': 'error', 'route-owner-conflict': 'error', 'borrowed-address-unrouted': 'warning',
  'tunnel-mtu': 'warning', 'rp-filter-strict': 'warning', 'hash-policy-l3': 'warning', 'stale-kernel-route': 'warning',
  'conflicting-route-owners': 'warning',
  'local-block': 'info', 'overlay-active': 'info',
}

/** The one finding `id` for `prefix`: its prefix, its DESIGN severity and real evidence are checked. */
export function theFinding(ctx: SnapshotIndex, prefix: string, id: FindingId): Finding {
  const found = prefixFindings(ctx, prefix, id)
  expect(found.map((f) => f.id), `${id} on ${prefix}`).toEqual([id])
  const f = found[0]
  expect(f.prefix).toBe(prefix)
  expect(f.severity).toBe(DESIGN_SEVERITY[id])
  expectRealEvidence(ctx, f)
  return f
}

/** The one host finding `id`, with its DESIGN severity and no prefix. */
export function theHostFinding(ctx: SnapshotIndex, id: FindingId, opts: {allowEmptyEvidence?: boolean} = {}): Finding {
  const found = hostFindings(ctx, id)
  expect(found.map((f) => f.id), `host ${id}`).toEqual([id])
  const f = found[0]
  expect(f.prefix).toBeUndefined()
  expect(f.severity).toBe(DESIGN_SEVERITY[id])
  expectRealEvidence(ctx, f, {allowEmpty: opts.allowEmptyEvidence})
  return f
}

/** Lab re-captures of the same scenarios (test/fixtures/lab-*), when they are there. */
const LAB_TWINS: Record<string, string> = {
  [BIRD2]: 'lab-bird2-ecmp', [BIRD16]: 'lab-bird16-ecmp', [BIRD16_LL]: 'lab-bird16-ipv6-ll', [PEER_DOWN]: 'lab-bird2-peer-down',
}

/** The capture and its lab twin, if present: the same scenario from two real runs. */
export function withTwins(...names: string[]): string[] {
  return names.flatMap((n) => (LAB_TWINS[n] && fixtureExists(LAB_TWINS[n]) ? [n, LAB_TWINS[n]] : [n]))
}
