// The full-table path's one entry point: a snapshot whose healthy prefixes are reported in bulk (kept as prefix keys,
// never built as routes) and whose every other route is built as buildSnapshot builds it. Whatever is made of it
// (check's report, an explanation, a plan) is buildSnapshot's, byte for byte (test/bulk/healthy.test.ts).
import {DeferredBirdPaths, DeferredKernelRoutes, KeyTable, OutsidePoolRoutes, type DeferredRoutes} from './deferred.js'
import {dropKernelRouteText, dropSourceTexts, withoutUnreadRoutes} from './drop-texts.js'
import {separateHealthy} from './healthy.js'
import {coveringKeys, indexOfKey, prefixKey} from '../model/prefix-key.js'
import {canonicalAddress, canonicalPrefix, ipv4Value} from '../model/prefix.js'
import type {KernelRoute, Snapshot, SourceFile} from '../model/types.js'
import {collectAfter} from '../runtime/collect-garbage.js'
import {buildSnapshot, type BuildOptions, type RouteDeferral} from '../snapshot/build.js'

/** One parse with its routes deferred, separated as each reader needs it (explain, fix, the interactive UI). */
export interface BulkSnapshot {
  /** Every healthy prefix reported in bulk: the list of prefixes (verdicts, finding ids, plans). */
  readonly all: Snapshot
  /**
   * Every healthy prefix reported in bulk but those `query` names or whose network covers the address it names, whose
   * routes stay built: what an explanation or a plan of `query` reads (a healthy prefix has no plan). `all` without
   * one.
   */
  keeping(query?: string): Snapshot
  /** Does `all` report in bulk a prefix that `query` names, or one that covers the address it names? */
  reportsInBulk(query: string): boolean
}

/**
 * `check`'s snapshot of `files`, whose texts it gives up while parsing (BuildOptions.consume): every healthy prefix
 * reported in bulk, the routes no diagnosis reads dropped (bulk/drop-texts.ts withoutUnreadRoutes), and the big texts
 * dropped but the lines evidence cites. `check-text`: for check's text report (verdicts and finding ids only), the
 * prefixes BIRD routes off the tunnel reported in bulk too (bulk/healthy.ts).
 */
export function buildBulkSnapshot(files: SourceFile[], opts: BuildOptions, use: 'check' | 'check-text'): Snapshot
/** The texts kept (evidence cites any line): for `explain`, `fix` and the interactive UI. */
export function buildBulkSnapshot(files: SourceFile[], opts: BuildOptions, use: 'query'): BulkSnapshot
export function buildBulkSnapshot(files: SourceFile[], opts: BuildOptions, use: 'check' | 'check-text' | 'query'): Snapshot | BulkSnapshot {
  const offTunnel = use === 'check-text'
  if (use !== 'query') {
    const separated = separatedForCheck(files, opts, offTunnel)
    // the routes the parse deferred are garbage now: on a full table they go before the cited lines are copied beside
    // BIRD's text (check's peak), not at V8's next full collection
    collectAfter(files, (f) => f.text?.length ?? 0, FULL_TABLE_TEXT)
    return dropSourceTexts(withoutUnreadRoutes(separated))
  }
  const deferral = new Deferral(offTunnel)
  const parsed = buildSnapshot(files, {...opts, defer: deferral})
  let separated: Snapshot | undefined
  const all = (): Snapshot => (separated ??= separateHealthy(parsed, deferral.routes))
  return {
    get all() {
      return all()
    },
    keeping(query) {
      if (query === undefined) return all()
      return separateHealthy(parsed, deferral.routes, {alwaysBuilt: queryKeys(query)})
    },
    reportsInBulk(query) {
      const keys = all().healthy?.keys
      if (keys === undefined || keys.length === 0) return false
      return queryKeyList(query).some((key) => indexOfKey(keys, key) >= 0) // the keys are sorted
    },
  }
}

// a text this long is a full table's: its deferred routes' columns are worth a full collection
const FULL_TABLE_TEXT = 128 * 2 ** 20

/** check's parse of `files`, separated; the routes it deferred go with this frame (they are read only here). */
function separatedForCheck(files: SourceFile[], opts: BuildOptions, offTunnel: boolean): Snapshot {
  const deferral = new Deferral(offTunnel)
  // the kernel's text goes before BIRD's is parsed, not at V8's next full collection (seconds later, on a full table)
  const onTextDropped = () => collectAfter(files, (f) => f.droppedLength ?? 0)
  const parsed = buildSnapshot(files, {...opts, defer: deferral, consume: true, onTextDropped})
  return separateHealthy(parsed, deferral.routes, {offTunnel})
}

/** The sinks a parse defers routes to (snapshot/build.ts RouteDeferral), and what they hold afterwards. */
export class Deferral implements RouteDeferral {
  readonly routes: DeferredRoutes = {}

  /** `offTunnel`: BIRD's routes off the tunnel are deferred too (check's text report). */
  constructor(readonly offTunnel = false) {}

  kernelSinks(
    tunnelDev: string,
    outside: ((key: number) => boolean) | undefined,
  ): {tunnel: DeferredKernelRoutes; outsidePool?: OutsidePoolRoutes} {
    this.routes.kernel = new DeferredKernelRoutes('ip-j-d-route.json', tunnelDev, this.offTunnel)
    if (outside !== undefined) this.routes.outsidePool = new OutsidePoolRoutes(outside)
    return {tunnel: this.routes.kernel, outsidePool: this.routes.outsidePool}
  }

  birdSink(outside: ((key: number) => boolean) | undefined): DeferredBirdPaths | undefined {
    const kernel = this.routes.kernel
    if ((kernel === undefined || kernel.size === 0) && outside === undefined) return undefined
    this.routes.bird = new DeferredBirdPaths(
      'birdc-show-route-all.txt',
      kernel?.index().byKey ?? new KeyTable(0),
      outside,
    )
    return this.routes.bird
  }

  dropKernelText(file: SourceFile, routes: KernelRoute[]): SourceFile {
    return dropKernelRouteText(file, routes, [this.routes.outsidePool, this.routes.kernel?.offTunnel])
  }
}

/**
 * The prefix keys a query may be about: its prefix, or every network that covers its address (IPv4: only those are
 * deferred).
 */
function queryKeys(query: string): (key: number) => boolean {
  const keys = new Set(queryKeyList(query))
  return (k) => keys.has(k)
}

function queryKeyList(query: string): number[] {
  if (query.includes('/')) {
    // the prefix, and every network that covers it (a prefix inside a block is that block's)
    const key = prefixKey(canonicalPrefix(query) ?? '')
    if (key < 0) return []
    const len = key % 64
    return coveringKeys((key - len) / 64).filter((k) => k % 64 <= len)
  }
  const v = ipv4Value(canonicalAddress(query) ?? '')
  return v < 0 ? [] : coveringKeys(v)
}
