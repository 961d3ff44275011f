// The apply engine of DESIGN §5: lock, journal first, write, read back, watch for a route war,
// and on any failure put back exactly what the journal saved. It touches only the planned keys.
import {dirname} from 'node:path'

import {RouteDoctorError} from '../model/errors.js'
import {canonicalPrefix, familyOf} from '../model/prefix.js'
import type {Family, KernelRoute, PlannedRoute} from '../model/types.js'
import type {PlanItem} from '../plan/plan.js'
import {ipRouteReplace} from '../model/format.js'
import {ROUTE_TYPES, type RouteSpec, protocolNumber, routeKeyText, routeTypeNumber, RT_SCOPE_UNIVERSE} from './codec.js'
import {type DumpedRoute, NetlinkError, type RouteClient, openRouteClient} from './client.js'
import {
  type Journal, type JournalChange, type RouteKey, acquireLock, newJournal, newJournalPath, readJournal,
  setJournalState, writeJournal,
} from './journal.js'

// What the planner (src/plan) hands over: one item per corrected route.
export type {PlanItem} from '../plan/plan.js'

export interface ApplyOptions {
  journalDir: string
  watchSeconds: number
  watchIntervalMs?: number // default 500
  failAfter?: number // test hook: throw after this many route writes (fault injection)
  beforeWrite?: (index: number) => void | Promise<void> // test hook: runs before route `index` is written
  client?: RouteClient // default: an rtnetlink socket in this namespace
}

export interface RouteWar {
  dst: string
  table: string
  metric: number
  kind: 'removed' | 'replaced' | 'reinstalled' // ours gone / another route at our key / the replaced route is back
  current?: KernelRoute // what holds the key now
  by?: string // protocol of `current`
  detail: string
  advice: string
}

export interface ApplyErrorInfo {
  message: string
  code?: string // RouteDoctorError code, e.g. E_NETLINK_ENODEV
  errno?: string // ENODEV, EEXIST, ...
  dst?: string
}

export interface ApplyResult {
  applied: PlannedRoute[] // routes written (and, when verified, present as planned)
  verified: boolean
  journal: string
  routeWar?: RouteWar[]
  restored?: boolean // the journal was restored after a failure; true only when the read-back matched
  errors: ApplyErrorInfo[]
}

export interface RevertResult {
  journal: string
  restored: KernelRoute[] // routes put back as the journal saved them
  deleted: PlannedRoute[] // routes routedoctor had added that were removed
  verified: boolean // the planned keys hold exactly the journal's "before"
  errors: ApplyErrorInfo[]
}

const DURABLE_ADVICE =
  'Another writer (BIRD or Felix) owns this prefix and puts its own route back. Do not fight it: fix the source. ' +
  'With BIRD 2.0.12+ or 3.2+ add to the kernel export filter, before `merge paths on`: ' +
  '`ifname = "tunl0"; onlink = true; gw = bgp_next_hop; onlink = true;` (see `routedoctor fix --bird-config`); ' +
  'where Felix programs routes (proto 80), let only one of them own the pool.'

// ------------------------------------------------------------------ helpers

function keyOf(r: {family: Family; tableId: number; dst: string; metric: number}): RouteKey {
  return {family: r.family, tableId: r.tableId, dst: r.dst, metric: r.metric}
}

const keyText = (k: RouteKey): string => routeKeyText(k.family, k.tableId, k.dst, k.metric)

/** A dump indexed once by key (family|table|dst|metric), so each lookup is O(1), not a scan. */
type RouteIndex = Map<string, DumpedRoute[]>

// IPv4 routes with a TOS are a different key; routedoctor never plans them, so they are not indexed.
function indexRoutes(routes: DumpedRoute[]): RouteIndex {
  const index: RouteIndex = new Map()
  for (const d of routes) {
    if (d.spec.tos) continue // the spec's key is the route's: read it without building the route
    const k = keyText(d.spec)
    const list = index.get(k)
    if (list) list.push(d)
    else index.set(k, [d])
  }
  return index
}

const NONE: readonly DumpedRoute[] = Object.freeze([])

function atKey(index: RouteIndex, key: RouteKey): readonly DumpedRoute[] {
  return index.get(keyText(key)) ?? NONE
}

// a protocol name this module does not know (a local rt_protos.d entry) still compares by name
const protoKeys = new Map<string, string>()
function protoKey(name: string): string {
  let key = protoKeys.get(name)
  if (key === undefined) {
    try {
      key = String(protocolNumber(name))
    } catch {
      key = name
    }
    protoKeys.set(name, key)
  }
  return key
}

function nexthopIdentity(nh: {gateway?: string; dev?: string; weight: number; onlink: boolean}, single: boolean): string {
  return `${nh.gateway ?? '-'}|${nh.dev ?? '-'}|${single ? 1 : nh.weight}|${nh.onlink ? 'onlink' : ''}`
}

/** What makes a route the same route for routedoctor; link-state flags (linkdown, dead) are the kernel's. */
export function routeIdentity(r: KernelRoute): string {
  const single = r.nexthops.length === 1
  const nhs = r.nexthops
    .map((nh) => nexthopIdentity({gateway: nh.gateway?.address, dev: nh.dev, weight: nh.weight, onlink: nh.flags.includes('onlink')}, single))
    .sort()
  return JSON.stringify([r.family, r.type, r.dst, r.tableId, protoKey(r.protocol), r.scope, r.metric, r.prefsrc ?? '', r.tos ?? '', nhs])
}

/** Does the kernel route carry exactly the planned route (dst, table, metric, protocol, next-hop set)? */
export function matchesPlanned(r: KernelRoute, p: PlannedRoute): boolean {
  if (r.type !== 'unicast' || r.tableId !== p.tableId || r.metric !== p.metric) return false
  if (r.nexthops.length !== p.nexthops.length) return false
  if (r.dst !== p.dst && r.dst !== canonicalPrefix(p.dst, familyOf(p.dst))) return false
  if (r.protocol !== p.protocol && protoKey(r.protocol) !== protoKey(p.protocol)) return false
  if (p.nexthops.length === 1) {
    // one next hop: compared field by field, as nexthopIdentity would (weight does not count)
    const nh = r.nexthops[0]
    const want = p.nexthops[0]
    return (nh.gateway?.address ?? '-') === (want.gateway ?? '-') && (nh.dev ?? '-') === (want.dev ?? '-') && nh.flags.includes('onlink') === Boolean(want.onlink)
  }
  const single = false
  const have = r.nexthops
    .map((nh) => nexthopIdentity({gateway: nh.gateway?.address, dev: nh.dev, weight: nh.weight, onlink: nh.flags.includes('onlink')}, single))
    .sort()
  const want = p.nexthops.map((nh) => nexthopIdentity(nh, single)).sort()
  return have.every((h, i) => h === want[i])
}

/**
 * matchesPlanned(route, p) for a dumped route found at p's key (so family, table, dst and metric
 * already agree), read from its spec, so the read-back of a large plan need not build every route.
 */
export function specMatchesPlanned(spec: RouteSpec, p: PlannedRoute): boolean {
  if ((ROUTE_TYPES[spec.type - 1] ?? 'unicast') !== 'unicast') return false
  if (spec.nexthops.length !== p.nexthops.length) return false
  if (String(spec.protocol) !== protoKey(p.protocol)) return false // protoKey(protocolName(n)) is String(n)
  // the next hop as toKernelRoute shows it: dev by name (if<N> when unknown), onlink from the flags
  const devOf = (nh: RouteSpec['nexthops'][number]): string | undefined => (nh.ifindex !== undefined && nh.ifindex > 0 ? nh.dev ?? `if${nh.ifindex}` : undefined)
  if (p.nexthops.length === 1) {
    // nexthopIdentity's fields, compared one by one (a single next hop's weight does not count)
    const nh = spec.nexthops[0]
    const want = p.nexthops[0]
    return (nh.gateway ?? '-') === (want.gateway ?? '-') && (devOf(nh) ?? '-') === (want.dev ?? '-') && Boolean(nh.onlink) === Boolean(want.onlink)
  }
  const single = false
  const have = spec.nexthops.map((nh) =>
    nexthopIdentity({
      gateway: nh.gateway,
      dev: devOf(nh),
      weight: nh.weight ?? 1,
      onlink: Boolean(nh.onlink),
    }, single))
  const want = p.nexthops.map((nh) => nexthopIdentity(nh, false)).sort()
  have.sort()
  return have.every((h, i) => h === want[i])
}

function errorInfo(error: unknown, dst?: string): ApplyErrorInfo {
  const e = error as Error & {code?: string; errnoName?: string}
  const info: ApplyErrorInfo = {message: e?.message ?? String(error)}
  if (error instanceof RouteDoctorError) info.code = error.code
  if (error instanceof NetlinkError) info.errno = error.errnoName
  if (dst) info.dst = dst
  return info
}

// a plan names one protocol for thousands of routes: look it up once
const protocolNumbers = new Map<string, number>()
function protocolNumberOf(name: string): number {
  let n = protocolNumbers.get(name)
  if (n === undefined) {
    n = protocolNumber(name) // throws for an unknown name, and caches nothing
    protocolNumbers.set(name, n)
  }
  return n
}

/** The RTM_NEWROUTE spec for a planned route, devices resolved in `links` (name → ifindex). */
export function plannedSpec(p: PlannedRoute, ifindexOf: (dev: string) => number | undefined): RouteSpec {
  const family = familyOf(p.dst)
  const dst = canonicalPrefix(p.dst, family)
  if (!dst) throw new RouteDoctorError(`planned route has a bad destination: ${p.dst}`, 2, 'E_PLAN')
  if (p.nexthops.length === 0) throw new RouteDoctorError(`planned route ${dst} has no next hop`, 2, 'E_PLAN')
  return {
    family,
    dst,
    tableId: p.tableId,
    protocol: protocolNumberOf(p.protocol),
    metric: p.metric,
    type: routeTypeNumber('unicast'),
    scope: RT_SCOPE_UNIVERSE,
    nexthops: p.nexthops.map((nh) => {
      const ifindex = ifindexOf(nh.dev)
      if (ifindex === undefined) throw new RouteDoctorError(`next-hop device ${nh.dev} of ${dst} does not exist`, 1, 'E_NETLINK_ENODEV')
      return {gateway: nh.gateway, dev: nh.dev, ifindex, onlink: nh.onlink, weight: nh.weight}
    }),
  }
}

/** Dump the families and index the routes by key; only the routes at `keys` are decoded. */
async function dumpFamilies(client: RouteClient, families: Set<Family>, keys: ReadonlySet<string>): Promise<RouteIndex> {
  const out: DumpedRoute[] = []
  for (const f of families) for (const d of (await client.dumpRoutes(f, {keys})).routes) out.push(d)
  return indexRoutes(out)
}

const keysOf = (changes: JournalChange[]): Set<string> => new Set(changes.map((c) => keyText(c.key)))

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

// ------------------------------------------------------------------ restore

interface RestoreOutcome {
  restored: KernelRoute[]
  deleted: PlannedRoute[]
  verified: boolean
  errors: ApplyErrorInfo[]
}

/**
 * Put every key of the journal back as it was: a saved route is re-written exactly; where there
 * was none, our route is deleted (only if it is still ours: another owner's route is left alone).
 * Then read back and compare each key with the saved "before".
 */
async function restoreChanges(client: RouteClient, changes: JournalChange[]): Promise<RestoreOutcome> {
  const out: RestoreOutcome = {restored: [], deleted: [], verified: false, errors: []}
  const families = new Set(changes.map((c) => c.key.family))
  const keys = keysOf(changes)
  const byName = new Map<string, number>()
  for (const [index, name] of await client.links()) byName.set(name, index)
  const now = await dumpFamilies(client, families, keys)

  for (const change of [...changes].reverse()) {
    const current = atKey(now, change.key)
    try {
      if (change.before.length > 0) {
        for (const b of change.before) {
          if (current.some((c) => routeIdentity(c.route) === routeIdentity(b.route))) continue // already as it was
          const spec: RouteSpec = {
            ...b.spec,
            flags: undefined, // only ONLINK is ever sent; derived from the next hops below
            nexthops: b.spec.nexthops.map((nh) => {
              const ifindex = nh.dev !== undefined ? byName.get(nh.dev) : nh.ifindex
              if (nh.dev !== undefined && ifindex === undefined) throw new RouteDoctorError(`cannot restore ${b.route.dst}: device ${nh.dev} no longer exists`, 1, 'E_NETLINK_ENODEV')
              return {gateway: nh.gateway, dev: nh.dev, ifindex, onlink: nh.onlink, weight: nh.weight}
            }),
          }
          await client.replaceRoute(spec)
          out.restored.push(b.route)
        }
      } else {
        for (const c of current) {
          if (!matchesPlanned(c.route, change.planned)) continue // not ours: outside the plan
          await client.deleteRoute(c.spec)
          out.deleted.push(change.planned)
        }
      }
    } catch (error) {
      out.errors.push(errorInfo(error, change.key.dst))
    }
  }

  const after = await dumpFamilies(client, families, keys)
  out.verified = true
  for (const change of changes) {
    const have = atKey(after, change.key).map((d) => routeIdentity(d.route)).sort()
    const want = change.before.map((b) => routeIdentity(b.route)).sort()
    if (have.length !== want.length || have.some((h, i) => h !== want[i])) {
      out.verified = false
      out.errors.push({message: `after restore, ${change.key.dst} table ${change.planned.table} metric ${change.key.metric} is not as the journal saved it`, dst: change.key.dst})
    }
  }
  return out
}

// ------------------------------------------------------------------ verify and watch

function checkPlanned(routes: RouteIndex, changes: JournalChange[]): RouteWar[] {
  const wars: RouteWar[] = []
  for (const change of changes) {
    const here = atKey(routes, change.key)
    if (here.some((d) => specMatchesPlanned(d.spec, change.planned))) continue
    const p = change.planned
    const base = {dst: change.key.dst, table: p.table, metric: p.metric, advice: DURABLE_ADVICE}
    const current = here[0]?.route
    if (!current) {
      wars.push({...base, kind: 'removed', detail: `our route ${change.key.dst} metric ${p.metric} was removed`})
      continue
    }
    const old = [...change.before.map((b) => b.route), ...(change.replaces ? [change.replaces.route] : [])]
    const replaced = old.some((r) => routeIdentity(r) === routeIdentity(current))
    wars.push({
      ...base,
      kind: replaced ? 'reinstalled' : 'replaced',
      current,
      by: current.protocol,
      detail: replaced
        ? `the route we replaced came back (proto ${current.protocol})`
        : `our route was replaced by another (proto ${current.protocol})`,
    })
  }
  return wars
}

// ------------------------------------------------------------------ writing

// How many RTM_NEWROUTE requests go out together (one sendmsg) before their answers are awaited;
// each answer is matched to its request by sequence number. The kernel queues a batch's answers on
// the socket before it is read, so even a batch that fails in full (an error each) stays inside the
// receive buffer; were one dropped, the client reports the batch as failed and the apply restores.
export const WRITE_WINDOW = 256

/** Write routes `from`..`to`-1; the outcome of each, in order (undefined: acknowledged). */
async function writeBatch(client: RouteClient, changes: JournalChange[], from: number, to: number): Promise<Array<unknown>> {
  const specs = changes.slice(from, to).map((c) => c.write)
  if (client.replaceRoutes) return client.replaceRoutes(specs)
  // a client without batches: the requests still go out together, matched by their own promises
  return Promise.all(specs.map((spec) => client.replaceRoute(spec).then(() => undefined, (error: unknown) => error ?? new Error('write failed'))))
}

/**
 * Send every change's RTM_NEWROUTE in plan order, WRITE_WINDOW at a time, each batch answered in
 * full before the next goes out. On the first NACK (or an injected failure, or a beforeWrite hook
 * that throws) nothing more is sent, and the error of the earliest failing route in plan order is
 * thrown, carrying that route; the routes of its batch after it were written and answered too, so
 * the kernel's table is final when the caller restores (the journal covers every planned key).
 */
async function writePipelined(client: RouteClient, changes: JournalChange[], opts: ApplyOptions): Promise<void> {
  let i = 0
  while (i < changes.length) {
    if (opts.beforeWrite) await opts.beforeWrite(i) // a hook acts between writes (tests delete a device): one at a time
    let to = Math.min(changes.length, i + (opts.beforeWrite ? 1 : WRITE_WINDOW))
    const failAfter = opts.failAfter === undefined ? undefined : Math.max(1, opts.failAfter)
    if (failAfter !== undefined && failAfter > i) to = Math.min(to, failAfter)
    const outcome = await writeBatch(client, changes, i, to)
    const bad = outcome.findIndex((e) => e !== undefined)
    if (bad >= 0) throw outcome[bad]
    i = to
    if (failAfter !== undefined && i >= failAfter) throw new RouteDoctorError(`injected failure after ${i} route write(s)`, 1, 'E_INJECTED')
  }
}

// ------------------------------------------------------------------ apply

/**
 * Apply `items` (DESIGN §5). Never throws for a failure after the lock is taken: the result
 * carries the errors, and whether the journal was restored.
 */
export async function applyPlan(items: PlanItem[], opts: ApplyOptions): Promise<ApplyResult> {
  for (const item of items) {
    if (item.mode === 'replace' && item.replaces && item.replaces.metric !== item.planned.metric) {
      throw new RouteDoctorError(
        `replace mode writes at the replaced route's metric: ${item.planned.dst} plans metric ${item.planned.metric}, the kernel route has ${item.replaces.metric}`,
        2,
        'E_PLAN',
      )
    }
  }
  const release = acquireLock(opts.journalDir)
  const client = opts.client ?? (await openRouteClient().catch((error) => {
    release()
    throw error
  }))
  const journalPath = newJournalPath(opts.journalDir)
  const result: ApplyResult = {applied: [], verified: false, journal: journalPath, errors: []}
  let journal: Journal | undefined
  try {
    const byName = new Map<string, number>()
    for (const [index, name] of await client.links()) byName.set(name, index)
    const families = new Set(items.map((i) => familyOf(i.planned.dst)))

    // what will be written, and the keys it touches (only those are read from the kernel)
    const specs: Array<{item: PlanItem; write: RouteSpec; key: RouteKey}> = []
    const wanted = new Set<string>()
    const specErrors: ApplyErrorInfo[] = []
    for (const item of items) {
      let write: RouteSpec
      try {
        write = plannedSpec(item.planned, (dev) => byName.get(dev))
      } catch (error) {
        specErrors.push(errorInfo(error, item.planned.dst))
        continue
      }
      const key = keyOf(write)
      const k = keyText(key)
      if (wanted.has(k)) throw new RouteDoctorError(`the plan writes ${key.dst} metric ${key.metric} twice`, 2, 'E_PLAN')
      wanted.add(k)
      specs.push({item, write, key})
    }
    const keys = new Set(wanted)
    for (const {item} of specs) if (item.replaces) keys.add(keyText(keyOf(item.replaces)))
    const now = await dumpFamilies(client, families, keys)

    const changes: JournalChange[] = []
    for (const {item, write, key} of specs) {
      const change: JournalChange = {
        mode: item.mode,
        key,
        planned: item.planned,
        write,
        ipRoute: ipRouteReplace(item.planned),
        before: atKey(now, key).map(({route, spec}) => ({route, spec})),
      }
      if (item.replaces) {
        const r = item.replaces
        const there = atKey(now, keyOf(r))
        const identity = there.length > 1 ? routeIdentity(r) : undefined
        const found = (identity !== undefined ? there.find((d) => routeIdentity(d.route) === identity) : undefined) ?? there[0]
        if (found) change.replaces = {route: found.route, spec: found.spec}
      }
      changes.push(change)
    }
    // the journal comes first, even when nothing will be written, so every apply leaves a record
    journal = newJournal(changes)
    writeJournal(journalPath, journal)
    if (specErrors.length > 0) {
      result.errors.push(...specErrors)
      setJournalState(journalPath, journal, 'failed', 'planned devices missing; nothing written')
      return result
    }

    try {
      await writePipelined(client, changes, opts)
      result.applied = changes.map((c) => c.planned)
      const after = await dumpFamilies(client, families, wanted)
      const missing = checkPlanned(after, changes)
      if (missing.length > 0) {
        // something already undid a write: the same route war the watch looks for, only faster
        // (a route of our own protocol in another shape is a failed write, not a war)
        const wars = missing.filter((m) => !m.by || protoKey(m.by) !== protoKey(changes[0].planned.protocol))
        if (wars.length > 0) result.routeWar = wars
        throw new RouteDoctorError(`read-back failed: ${missing.map((m) => `${m.dst}: ${m.detail}`).join('; ')}`, 1, 'E_VERIFY')
      }
      result.verified = true

      const deadline = Date.now() + opts.watchSeconds * 1000
      while (changes.length > 0 && Date.now() < deadline) {
        await sleep(Math.min(opts.watchIntervalMs ?? 500, Math.max(0, deadline - Date.now())))
        const wars = checkPlanned(await dumpFamilies(client, families, wanted), changes)
        if (wars.length > 0) {
          result.routeWar = wars
          result.verified = false
          throw new RouteDoctorError(`route war: ${wars.map((w) => `${w.dst}: ${w.detail}`).join('; ')}`, 1, 'E_ROUTE_WAR')
        }
      }
      setJournalState(journalPath, journal, 'applied')
      return result
    } catch (error) {
      result.errors.push(errorInfo(error, error instanceof NetlinkError ? error.route?.dst : undefined))
      result.verified = false
      const outcome = await restoreChanges(client, changes)
      result.errors.push(...outcome.errors)
      result.restored = outcome.verified && outcome.errors.length === 0
      result.applied = []
      setJournalState(journalPath, journal, result.restored ? 'restored' : 'failed', result.errors[0]?.message)
      return result
    }
  } catch (error) {
    // before anything was written (the dump or the journal failed)
    result.errors.push(errorInfo(error))
    if (journal) setJournalState(journalPath, journal, 'failed', result.errors[0].message)
    return result
  } finally {
    if (!opts.client) client.close()
    release()
  }
}

/** Undo a completed apply: delete the routes it added, put back the ones it replaced, verify. */
export async function revertJournal(path: string, opts: {client?: RouteClient} = {}): Promise<RevertResult> {
  const journal = readJournal(path)
  const release = acquireLock(dirname(path))
  let client: RouteClient | undefined
  try {
    client = opts.client ?? (await openRouteClient())
    const outcome = await restoreChanges(client, journal.changes)
    setJournalState(path, journal, outcome.verified && outcome.errors.length === 0 ? 'reverted' : 'failed', outcome.errors[0]?.message)
    return {journal: path, restored: outcome.restored, deleted: outcome.deleted, verified: outcome.verified, errors: outcome.errors}
  } finally {
    if (client && !opts.client) client.close()
    release()
  }
}
