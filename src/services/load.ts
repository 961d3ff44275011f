// Where a Snapshot comes from: a snapshot directory, a bundle, or the live node.
import {readFile, stat} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {readCalicoDir, readSnapshotDir} from '../collect/snapshot-dir.js'
import {buildBulkSnapshot, type BulkSnapshot} from '../bulk/build.js'
import {CALICO_DIR, CALICO_FILES, type CalicoGroupMemo, type CalicoTruth} from '../model/calico.js'
import {SnapshotIndex, type SnapshotIndexOptions} from '../model/snapshot-index.js'
import {
  buildSnapshot,
  type BuildOptions,
  haveKernelRoutes,
  KERNEL_ROUTE_FILES,
  namingPaths,
  unreadFallbacks,
} from '../snapshot/build.js'
import {collectAfter} from '../runtime/collect-garbage.js'
import {RouteDoctorError} from '../model/errors.js'
import type {Snapshot, SourceFile} from '../model/types.js'
import {parseCalicoTruth} from '../parse/calico.js'
import {checkRun, type CheckRun} from '../report/report.js'

export interface SourceOptions {
  from?: string // DIR or BUNDLE.tar.gz; live when absent
  birdSocket?: string
  birdConfig?: string
  pools?: string[]
  ippools?: string // a Calico IPPool list file
  tunnelDev?: string
  calico?: string // --calico DIR: Calico's truth as kubectl -o json files
  kube?: boolean // --kube: Calico's truth read live from the Kubernetes API
  node?: string // --node NAME
  fixProtocol?: number // --protocol: the protocol number routedoctor's own routes carry
  overlayTable?: number // --table: the overlay table they live in
  ownTruth?: boolean // false: a snapshot's or bundle's own calico/ is not read (the truth comes from elsewhere)
  /** Calico's truth read and parsed already (loadClusterTruth): used instead of reading --calico/--kube again. */
  clusterTruth?: ClusterTruth
  /**
   * Live: collect every source, also those a diagnosis does not read when others are there (a bundle keeps them all).
   */
  everySource?: boolean
  /** Read the text route dump beside the JSON one (not too large): explain cites a route by its line there. */
  routeTextToo?: boolean
  /**
   * Refuse (exit 2) a source without the kernel's routes: every verdict compares BIRD with the kernel's route
   * (check, explain, fix). `bundle` writes what it got; `ui` and `watch` show the source as failed.
   */
  requireKernelRoutes?: boolean
}

/** How a SnapshotIndex knows routedoctor's own routes: by the --protocol and --table the source was given. */
export function ownRoutes(opts: SourceOptions): SnapshotIndexOptions {
  const own: SnapshotIndexOptions = {}
  if (opts.fixProtocol !== undefined) own.fixProtocol = String(opts.fixProtocol)
  if (opts.overlayTable !== undefined) own.overlayTable = opts.overlayTable
  return own
}

// explain reads the text route dump beside the JSON one up to this size (model/route-cite.ts indexes no larger one)
const CITED_ROUTE_TEXT = 32 * 2 ** 20

export interface LoadedSource {
  files: SourceFile[]
  origin: Snapshot['origin']
}

export async function loadSourceFiles(opts: SourceOptions): Promise<LoadedSource> {
  const elsewhere = opts.clusterTruth !== undefined || opts.calico !== undefined || opts.kube
  const source = await loadNodeFiles(elsewhere ? {...opts, ownTruth: false} : opts)
  const truth = opts.clusterTruth?.files ?? (await truthFiles(opts))
  if (truth) source.files = [...source.files.filter((f) => !f.name.startsWith(CALICO_DIR)), ...truth]
  if (opts.requireKernelRoutes) requireKernelRoutes(source)
  return source
}

/** Refuses (exit 2) a source that holds neither kernel route dump, naming the snapshot or the failed command. */
export function requireKernelRoutes(source: LoadedSource): void {
  if (haveKernelRoutes(source.files)) return
  const failed = source.files.filter((f) => KERNEL_ROUTE_FILES.includes(f.name) && f.error !== undefined)
  const expected = `(expected ${KERNEL_ROUTE_FILES.join(' or ')} from \`ip -j -d route show table all\`)`
  if (source.origin.kind === 'live') {
    const why = failed.map((f) =>
      f.error!.includes('`') || f.command === undefined ? f.error! : `\`${f.command}\`: ${f.error!}`,
    )
    throw new RouteDoctorError(
      `no kernel routes: ${why.join('; ') || 'the kernel\'s routes were not collected'}; nothing can be judged without them`,
      2,
      'E_NO_KERNEL_ROUTES',
    )
  }
  const what = `${source.origin.kind === 'bundle' ? 'bundle' : 'snapshot'} ${source.origin.path ?? '?'}`
  const recorded =
    failed.length > 0 ? `: when collected, ${failed.map((f) => `${f.name} failed (${f.error})`).join(', ')} ` : ' '
  throw new RouteDoctorError(`${what} has no kernel routes${recorded}${expected}`, 2, 'E_NO_KERNEL_ROUTES')
}

/** Calico's truth as read (its `calico/*.json` files, which findings cite and bundles carry) and as parsed. */
export interface ClusterTruth {
  files: SourceFile[]
  truth: CalicoTruth
}

/**
 * Calico's truth of --calico DIR or --kube, read and parsed once, for a caller that diagnoses again and again (watch):
 * given as SourceOptions.clusterTruth, no diagnosis reads or parses it again. Undefined without either flag; a file
 * that is not what it should be is an error naming the file and the item (exit 2).
 */
export async function loadClusterTruth(
  opts: Pick<SourceOptions, 'calico' | 'kube'>,
  signal?: AbortSignal, // ends a --kube read under way (the agent stopping)
  group?: CalicoGroupMemo, // the API group found by the last read, kept (the agent's reads)
): Promise<ClusterTruth | undefined> {
  const files = await truthFiles(opts, signal, group)
  return files ? {files, truth: parseTruthFiles(files)} : undefined
}

/**
 * What of Calico's truth a diagnosis reads, as a string to compare: not where in the files it stands (a Node's
 * status, rewritten every few minutes, moves every line after it) nor the files' names.
 */
export function truthMeaning(t: ClusterTruth | undefined): string {
  return JSON.stringify(t?.truth, (key, value: unknown) => (key === 'pos' || key === 'files' ? undefined : value))
}

/** Calico's truth of its `calico/*.json` files (of a snapshot or bundle from `origin`). */
export function parseTruthFiles(files: SourceFile[], origin?: Snapshot['origin']): CalicoTruth {
  return namingPaths(files, origin, () =>
    parseCalicoTruth(files.filter((f) => f.text !== undefined).map((f) => ({name: f.name, text: f.text!}))),
  )
}

/** Calico's truth from --calico DIR or --kube (the API client is loaded only then); undefined without either. */
export async function truthFiles(
  opts: Pick<SourceOptions, 'calico' | 'kube'>,
  signal?: AbortSignal,
  group?: CalicoGroupMemo,
): Promise<SourceFile[] | undefined> {
  if (opts.calico !== undefined && opts.kube)
    throw new RouteDoctorError('--calico and --kube: give one source of Calico\'s truth', 2, 'E_USAGE')
  if (opts.calico !== undefined) {
    // a directory with none of the files is a wrong path, not a cluster without truth: judging without it is no answer
    const files = await readCalicoDir(opts.calico)
    if (files.length > 0) return files
    throw new RouteDoctorError(
      `--calico ${opts.calico}: none of ${CALICO_FILES.join(', ')} there (expected \`kubectl get RESOURCE -o json\` ` +
        'files; a snapshot or bundle carries its own under calico/)',
      2,
      'E_FROM',
    )
  }
  if (opts.kube) {
    const {readKubeTruth} = await import('../collect/kube.js')
    return readKubeTruth(signal, group)
  }
  return undefined
}

/** `unread` and every `calico/` file besides. */
function withoutTruth(
  unread: ((present: ReadonlySet<string>) => ReadonlySet<string>) | undefined,
): (present: ReadonlySet<string>) => ReadonlySet<string> {
  return (present) =>
    new Set([...(unread?.(present) ?? []), ...[...present].filter((name) => name.startsWith(CALICO_DIR))])
}

async function loadNodeFiles(opts: SourceOptions): Promise<LoadedSource> {
  if (opts.from) {
    const info = await stat(opts.from).catch(() => undefined)
    if (!info) throw new RouteDoctorError(`${opts.from}: no such snapshot directory or bundle`, 2, 'E_FROM')
    // a diagnosis reads a text form only without its JSON form; a bundle (everySource) keeps them all
    let fallbacks = opts.everySource ? undefined : unreadFallbacks
    if (fallbacks && opts.routeTextToo && (await routeTextFits(opts.from, info.isDirectory()))) {
      fallbacks = (present) => {
        const u = unreadFallbacks(present)
        u.delete('ip-d-route.txt')
        return u
      }
    }
    // a truth given otherwise (--calico, --kube, fleet's shared one): the source's own calico/ is not read
    const unread = opts.ownTruth === false ? withoutTruth(fallbacks) : fallbacks
    if (info.isDirectory())
      return {
        files: await readSnapshotDir(opts.from, {unread, calico: opts.ownTruth !== false}),
        origin: {kind: 'dir', path: opts.from},
      }
    const {readBundle} = await import('../bundle/tarball.js')
    // a replay needs only snapshot/ and the manifest: model.json and the reports are checksummed, not read
    const bundle = await readBundle(opts.from, {reportReadLimit: 0, unread})
    const origin: Snapshot['origin'] = {
      kind: 'bundle',
      path: opts.from,
      collectedAt: bundle.manifest.collectedAt,
      host: bundle.manifest.host || undefined, // '': no source named the node
    }
    if (bundle.warnings.length > 0) origin.warnings = bundle.warnings
    return {files: bundle.files, origin}
  }
  const {collectLive} = await import('../collect/live.js')
  const files = await collectLive({
    birdSocket: opts.birdSocket,
    birdConfig: opts.birdConfig,
    tunnelDev: opts.tunnelDev,
    routeText: opts.everySource ? 'always' : 'fallback',
  })
  // a full table's replies arrived as socket chunks and command output, garbage now: freed before the parse
  // grows the heap, not at V8's next full collection
  collectAfter(files, (f) => f.text?.length ?? 0)
  return {files, origin: {kind: 'live', collectedAt: new Date().toISOString(), host: os.hostname()}}
}

export async function snapshotFrom(source: LoadedSource, opts: SourceOptions): Promise<Snapshot> {
  return buildSnapshot(source.files, await buildOptions(source, opts))
}

async function buildOptions(source: LoadedSource, opts: SourceOptions): Promise<BuildOptions> {
  let ippools: SourceFile | undefined
  if (opts.ippools)
    ippools = {name: path.basename(opts.ippools), path: opts.ippools, text: await readIppoolsFile(opts.ippools)}
  return {
    pools: opts.pools,
    ippools,
    tunnelDev: opts.tunnelDev,
    origin: source.origin,
    node: opts.node,
    truth: opts.clusterTruth?.truth,
  }
}

/** The --ippools file's text; a usage error (exit 2) naming it when it cannot be read. */
export async function readIppoolsFile(file: string): Promise<string> {
  return readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new RouteDoctorError(`--ippools ${file}: cannot read (${error.code ?? error.message})`, 2, 'E_USAGE')
  })
}

/**
 * What `check` walks: the snapshot with its healthy prefixes reported in bulk (bulk/healthy.ts) and the
 * rest as buildSnapshot gives it, without its big texts once separated (bulk/drop-texts.ts: check reads nothing
 * raw but the lines it cites). Its report is buildSnapshot's, byte for byte.
 */
export async function loadCheckIndex(
  opts: SourceOptions,
  ctxOpts: SnapshotIndexOptions = {},
  onSource?: (source: LoadedSource) => void,
  offTunnel = false,
): Promise<SnapshotIndex> {
  const snapshot = await loadCheckSnapshot(opts, onSource, offTunnel)
  // the texts go now, not at V8's next full collection (here: not from within the frame that read them)
  collectAfter(snapshot.files, (f) => f.droppedLength ?? 0)
  return new SnapshotIndex(snapshot, {...ownRoutes(opts), ...ctxOpts})
}

/**
 * `check`'s run of the source, as `check` makes it: the healthy prefixes reported in bulk, and, as the text report
 * shows verdicts and finding ids only, evidence, texts and plans made for `detail` (the JSON report) only, and
 * without `detail` the prefixes BIRD routes off the tunnel reported in bulk too.
 */
export async function loadCheckRun(opts: SourceOptions, detail: boolean): Promise<CheckRun> {
  const ctx = await loadCheckIndex(opts, {evidence: detail, texts: detail}, undefined, !detail)
  return checkRun(ctx, {plans: detail})
}

/** `onSource`: sees the files as collected, before their texts are given up. */
async function loadCheckSnapshot(
  opts: SourceOptions,
  onSource?: (source: LoadedSource) => void,
  offTunnel = false,
): Promise<Snapshot> {
  const source = await loadSourceFiles(opts)
  onSource?.(source)
  return buildBulkSnapshot(source.files, await buildOptions(source, opts), offTunnel ? 'check-text' : 'check')
}

/**
 * What the interactive UI holds of one collection, made of one parse (bulk/build.ts BulkSnapshot: a full table's
 * healthy routes are never built): `list`, a SnapshotIndex for the list of prefixes (verdicts, finding ids and plans:
 * no evidence or texts, which only an explanation shows), and `indexFor(query)`, the SnapshotIndex an explanation or a
 * plan of `query` is made of (evidence and texts; when the list reports in bulk what the query names, the same parse
 * with it built, the last one kept). Each is buildSnapshot's.
 */
export interface BulkHealthySource {
  list: SnapshotIndex
  indexFor(query: string): SnapshotIndex
}

export async function loadBulkHealthySource(opts: SourceOptions): Promise<BulkHealthySource> {
  const source = await loadSourceFiles(opts)
  return bulkHealthySource(buildBulkSnapshot(source.files, await buildOptions(source, opts), 'query'), ownRoutes(opts))
}

/** The BulkHealthySource of one parse: a query about a prefix reported in bulk separates the same parse again. */
export function bulkHealthySource(bulk: BulkSnapshot, own: SnapshotIndexOptions = {}): BulkHealthySource {
  let full: SnapshotIndex | undefined
  let last: {query: string; index: SnapshotIndex} | undefined
  return {
    list: new SnapshotIndex(bulk.all, {...own, evidence: false, texts: false}),
    indexFor(query) {
      if (!bulk.reportsInBulk(query)) return (full ??= new SnapshotIndex(bulk.all, own))
      if (last?.query !== query) last = {query, index: new SnapshotIndex(bulk.keeping(query), own)}
      return last.index
    },
  }
}

/**
 * What `explain QUERY` reads: on the live node, for an IPv4 prefix or address, only what that prefix's chain needs
 * (services/targeted.ts); else loadBulkHealthySnapshot. The explanation is the same either way.
 */
export async function loadExplainSnapshot(opts: SourceOptions, query: string): Promise<Snapshot> {
  if (opts.from) return loadBulkHealthySnapshot(opts, query)
  const {collectTargeted, isTargetable} = await import('./targeted.js')
  if (!isTargetable(query)) return loadBulkHealthySnapshot(opts, query)
  const source = await collectTargeted(query, {
    birdSocket: opts.birdSocket,
    birdConfig: opts.birdConfig,
    tunnelDev: opts.tunnelDev,
  })
  if (opts.requireKernelRoutes) requireKernelRoutes(source)
  const snapshot = await snapshotFrom(source, opts)
  return source.otherNextHops.length > 0 ? {...snapshot, otherNextHops: source.otherNextHops} : snapshot
}

/** Is a snapshot directory's text route dump small enough to be read for citations (a bundle's: yes)? */
async function routeTextFits(from: string, dir: boolean): Promise<boolean> {
  if (!dir) return true
  const info = await stat(path.join(from, 'ip-d-route.txt')).catch(() => undefined)
  return info !== undefined && info.isFile() && info.size <= CITED_ROUTE_TEXT
}

/**
 * What `explain QUERY` and `fix [PREFIX]` read: every healthy prefix reported in bulk but what QUERY names
 * (bulk/build.ts BulkSnapshot.keeping); the texts kept, as evidence cites any line.
 */
export async function loadBulkHealthySnapshot(opts: SourceOptions, query?: string): Promise<Snapshot> {
  const source = await loadSourceFiles(opts)
  return buildBulkSnapshot(source.files, await buildOptions(source, opts), 'query').keeping(query)
}
