// The apply engine of DESIGN §5: lock, journal first, write, read back, watch for a route war,
// and on any failure put back exactly what the journal saved. It touches only the planned keys.
import {existsSync} from 'node:fs'
import {dirname} from 'node:path'

import {RouteDoctorError} from '../model/errors.js'
import {canonicalPrefix, familyOf} from '../model/prefix.js'
import {ROUTE_TYPES, type Family, type KernelRoute, type PlannedNexthop, type PlannedRoute, type PlannedRule} from '../model/types.js'
import type {OverlayPlan, PlanItem} from '../plan/plan.js'
import {
  type RouteSpec,
  type RuleSpec,
  lookupRule,
  protocolNumber,
  routeKeyText,
  routeTypeNumber,
  ruleText,
  RT_SCOPE_UNIVERSE,
  sameRule,
} from './codec.js'
import {
  type DumpedRoute,
  NetlinkError,
  type PreparedWrites,
  type RouteClient,
  decodeDumpedRoute,
  lazyDumpedRoute,
  openRouteClient,
} from './client.js'
import {
  type JournalChange,
  JournalFile,
  type JournalRule,
  type RouteKey,
  acquireLock,
  changeKey,
  newJournal,
  newJournalPath,
  readJournal,
  setJournalState,
} from './journal.js'
import {WireKeyIndex, ipv4PrefixKey, wireCheckable, wireDecodesLookedUp, wireMatchesLookedUp} from './scan.js'

// What the planner (src/plan) hands over: one item per corrected route.
export type {OverlayPlan, PlanItem} from '../plan/plan.js'

export interface ApplyOptions {
  journalDir: string
  watchSeconds: number
  watchIntervalMs?: number // default 500
  failAfter?: number // test hook: throw after this many route writes (fault injection)
  beforeWrite?: (index: number) => void | Promise<void> // test hook: runs before route `index` is written
  beforeRuleWrite?: (index: number) => void | Promise<void> // test hook: runs before rule `index` is added
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
  applied: PlannedRoute[] // routes written or withdrawn (and, when verified, as planned)
  rules?: string[] // the rules added and removed, as `ip rule add|del` text
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
  rules?: string[] // the rules put back as they were, as `ip rule add|del` text
  verified: boolean // the planned keys hold exactly the journal's "before"
  errors: ApplyErrorInfo[]
}

/** What to do about a route war, for routes through the tunnel device `dev`. */
export const durableAdvice = (dev: string): string =>
  'Another writer (BIRD or Felix) owns this prefix and puts its own route back. Do not fight it: fix the source. ' +
  'With BIRD 2.0.12+ or 3.2+ add to the kernel export filter, before `merge paths on`: ' +
  `\`ifname = "${dev}"; onlink = true; gw = bgp_next_hop; onlink = true;\` (see \`routedoctor fix --bird-config\`); ` +
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
// shared by every change with nothing at its key
const NO_BEFORE = Object.freeze([]) as unknown as JournalChange['before']

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

function nexthopIdentity(
  nh: {gateway?: string; dev?: string; weight: number; onlink: boolean},
  single: boolean,
): string {
  return `${nh.gateway ?? '-'}|${nh.dev ?? '-'}|${single ? 1 : nh.weight}|${nh.onlink ? 'onlink' : ''}`
}

/** What makes a route the same route for routedoctor; link-state flags (linkdown, dead) are the kernel's. */
export function routeIdentity(r: KernelRoute): string {
  const single = r.nexthops.length === 1
  const nhs = r.nexthops
    .map((nh) =>
      nexthopIdentity(
        {gateway: nh.gateway?.address, dev: nh.dev, weight: nh.weight, onlink: nh.flags.includes('onlink')},
        single,
      ),
    )
    .sort()
  return JSON.stringify([
    r.family,
    r.type,
    r.dst,
    r.tableId,
    protoKey(r.protocol),
    r.scope,
    r.metric,
    r.prefsrc ?? '',
    r.tos ?? '',
    nhs,
  ])
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
    return (
      (nh.gateway?.address ?? '-') === (want.gateway ?? '-') &&
      (nh.dev ?? '-') === (want.dev ?? '-') &&
      nh.flags.includes('onlink') === Boolean(want.onlink)
    )
  }
  const single = false
  const have = r.nexthops
    .map((nh) =>
      nexthopIdentity(
        {gateway: nh.gateway?.address, dev: nh.dev, weight: nh.weight, onlink: nh.flags.includes('onlink')},
        single,
      ),
    )
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
  const devOf = (nh: RouteSpec['nexthops'][number]): string | undefined =>
    nh.ifindex !== undefined && nh.ifindex > 0 ? (nh.dev ?? `if${nh.ifindex}`) : undefined
  if (p.nexthops.length === 1) {
    // nexthopIdentity's fields, compared one by one (a single next hop's weight does not count)
    const nh = spec.nexthops[0]
    const want = p.nexthops[0]
    return (
      (nh.gateway ?? '-') === (want.gateway ?? '-') &&
      (devOf(nh) ?? '-') === (want.dev ?? '-') &&
      Boolean(nh.onlink) === Boolean(want.onlink)
    )
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
  if (ipv4PrefixKey(p.dst) >= 0) return specOf(p, 'inet', p.dst, ifindexOf) // canonical already
  const family = familyOf(p.dst)
  const dst = canonicalPrefix(p.dst, family)
  if (!dst) throw new RouteDoctorError(`planned route has a bad destination: ${p.dst}`, 2, 'E_PLAN')
  return specOf(p, family, dst, ifindexOf)
}

const UNICAST = routeTypeNumber('unicast')

/**
 * The specs' next-hop lists of one apply, by the planned list they were made from. The planner
 * shares one frozen list among every route through the same gateways (src/plan/plan.ts): their
 * specs then share one list too (nothing writes to a spec's next hops), a full plan's worth of
 * objects fewer for the garbage collector to copy.
 */
type SpecHops = WeakMap<readonly PlannedNexthop[], RouteSpec['nexthops']>

function specOf(
  p: PlannedRoute,
  family: Family,
  dst: string,
  ifindexOf: (dev: string) => number | undefined,
  shared?: SpecHops,
): RouteSpec {
  const protocol = protocolNumberOf(p.protocol)
  const planned = p.nexthops
  let nexthops = shared?.get(planned)
  if (nexthops === undefined) {
    const n = planned.length
    if (n === 0) throw new RouteDoctorError(`planned route ${dst} has no next hop`, 2, 'E_PLAN')
    nexthops = new Array(n)
    for (let i = 0; i < n; i++) {
      const nh = planned[i]
      const ifindex = ifindexOf(nh.dev)
      if (ifindex === undefined)
        throw new RouteDoctorError(`next-hop device ${nh.dev} of ${dst} does not exist`, 1, 'E_NETLINK_ENODEV')
      nexthops[i] = {gateway: nh.gateway, dev: nh.dev, ifindex, onlink: nh.onlink, weight: nh.weight}
    }
    if (shared && Object.isFrozen(planned)) shared.set(planned, nexthops) // a list that cannot change since
  }
  return {
    family,
    dst,
    tableId: p.tableId,
    protocol,
    metric: p.metric,
    type: UNICAST,
    scope: RT_SCOPE_UNIVERSE,
    nexthops,
  }
}

/** Dump the families and index the routes by key; only the routes at `keys` are decoded. */
async function dumpFamilies(
  client: RouteClient,
  families: Set<Family>,
  keys: ReadonlySet<string>,
): Promise<RouteIndex> {
  const out: DumpedRoute[] = []
  for (const f of families) for (const d of (await client.dumpRoutes(f, {keys})).routes) out.push(d)
  return indexRoutes(out)
}

/** The routes one dump showed at a key (in dump order). */
type RoutesAt = (key: RouteKey) => readonly DumpedRoute[]

/**
 * Dump the families once and keep the routes at `keys`, decoded (devices named from `links`, else
 * a fresh links dump). Each message is looked up by its key bytes, so only those routes are decoded.
 */
async function routesAtKeys(
  client: RouteClient,
  families: Set<Family>,
  keys: readonly RouteKey[],
  links?: ReadonlyMap<number, string>,
): Promise<RoutesAt> {
  const index = new WireKeyIndex<DumpedRoute[]>()
  for (const k of keys) index.obtain(k.family, k.tableId, k.dst, k.metric, () => [])
  const names = links ?? (await client.links())
  for (const f of families) {
    await client.scanRoutes(f, (buf, start, end, i) => {
      const list = index.lookup(buf, start, end)
      if (!list) return
      const d = decodeDumpedRoute(buf, start, end, names, i)
      if (d) list.push(d)
    })
  }
  return (key) => index.get(key.family, key.tableId, key.dst, key.metric) ?? NONE
}

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
  const keys = changes.map(changeKey)
  const families = new Set(keys.map((k) => k.family))
  const links = await client.links()
  const byName = new Map<string, number>()
  for (const [index, name] of links) byName.set(name, index)
  const now = await routesAtKeys(client, families, keys, links)

  for (let i = changes.length - 1; i >= 0; i--) {
    const change = changes[i]
    const key = keys[i]
    const current = now(key)
    try {
      if (change.before.length > 0) {
        for (const b of change.before) {
          if (current.some((c) => routeIdentity(c.route) === routeIdentity(b.route))) continue // already as it was
          const spec: RouteSpec = {
            ...b.spec,
            flags: undefined, // only ONLINK is ever sent; derived from the next hops below
            nexthops: b.spec.nexthops.map((nh) => {
              const ifindex = nh.dev !== undefined ? byName.get(nh.dev) : nh.ifindex
              if (nh.dev !== undefined && ifindex === undefined)
                throw new RouteDoctorError(
                  `cannot restore ${b.route.dst}: device ${nh.dev} no longer exists`,
                  1,
                  'E_NETLINK_ENODEV',
                )
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
      out.errors.push(errorInfo(error, key.dst))
    }
  }

  const after = await routesAtKeys(client, families, keys)
  out.verified = true
  for (let i = 0; i < changes.length; i++) {
    const change = changes[i]
    const key = keys[i]
    const have = after(key).map((d) => routeIdentity(d.route)).sort()
    const want = change.before.map((b) => routeIdentity(b.route)).sort()
    if (have.length !== want.length || have.some((h, i) => h !== want[i])) {
      out.verified = false
      out.errors.push({
        message: `after restore, ${key.dst} table ${change.planned.table} metric ${key.metric} is not as the journal saved it`,
        dst: key.dst,
      })
    }
  }
  return out
}

// ------------------------------------------------------------------ verify and watch

/**
 * A key the apply reads from the kernel (see applyPlan): the routes a dump shows there and, at a
 * planned key, the write planned there (then it is a Pending).
 */
interface Slot {
  routes: DumpedRoute[] | undefined // the pre-write dump's, decoded
  change: JournalChange | undefined
  write: RouteSpec | undefined // exactly what is sent (RTM_NEWROUTE, NLM_F_CREATE|NLM_F_REPLACE)
  // the route the plan corrects, as it is now; in 'replace' mode it is also in `before`, in
  // 'beside' mode it is left alone and watched so its return can be told from a route war
  replaces?: {route: KernelRoute; spec: RouteSpec}
  matched: boolean // read-back: a route at the key is the planned one, told from its bytes
  found: DumpedRoute[] | undefined // read-back: the other routes at the key, decoded
}

/** A planned route on its way to the kernel, as the apply holds it (the journal keeps `change`). */
type Pending = Slot & {change: JournalChange; write: RouteSpec}

function checkPlanned(routesAt: (p: Pending) => readonly DumpedRoute[], pending: readonly Pending[]): RouteWar[] {
  const wars: RouteWar[] = []
  for (const w of pending) {
    const change = w.change
    const here = routesAt(w)
    if (here.some((d) => specMatchesPlanned(d.spec, change.planned))) continue
    const p = change.planned
    const dst = changeKey(change).dst
    const base = {dst, table: p.table, metric: p.metric, advice: durableAdvice(p.nexthops[0]?.dev ?? 'tunl0')}
    const current = here[0]?.route
    if (!current) {
      wars.push({...base, kind: 'removed', detail: `our route ${dst} metric ${p.metric} was removed`})
      continue
    }
    const old = [...change.before.map((b) => b.route), ...(w.replaces ? [w.replaces.route] : [])]
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

/**
 * Read the kernel back: which planned routes are not there as planned (DESIGN §5), as route wars.
 * One dump looked up in the apply's index: each route at a planned key is checked on its bytes
 * (scan.ts's wireMatches) and decoded only when they cannot tell.
 */
async function readBack(
  client: RouteClient,
  families: Set<Family>,
  pending: readonly Pending[],
  index: WireKeyIndex<Slot>,
): Promise<RouteWar[]> {
  const links = await client.links()
  for (const w of pending) {
    w.matched = false
    w.found = undefined
  }
  for (const f of families) {
    await client.scanRoutes(f, (buf, start, end, i) => {
      const w = index.lookup(buf, start, end)
      if (!w?.change || w.matched) return
      if (wireMatchesLookedUp(buf, start, end, w.write!) && wireCheckable(w.write!, links)) {
        w.matched = true
        return
      }
      const d = decodeDumpedRoute(buf, start, end, links, i)
      if (d) (w.found ??= []).push(d)
    })
  }
  const unmatched = pending.filter((w) => !w.matched)
  return unmatched.length === 0 ? [] : checkPlanned((w) => w.found ?? NONE, unmatched)
}

// ------------------------------------------------------------------ writing

// How many RTM_NEWROUTE requests go out together (one sendmsg) before their answers are awaited;
// each answer is matched to its request by sequence number. The kernel queues a batch's answers on
// the socket before it is read, so even a batch that fails in full (an error each) stays inside the
// receive buffer; were one dropped, the client reports the batch as failed and the apply restores.
export const WRITE_WINDOW = 256

/** Write routes `from`..`to`-1; the outcome of each, in order (undefined: acknowledged). */
async function writeBatch(
  client: RouteClient,
  pending: readonly Pending[],
  from: number,
  to: number,
  prepared?: PreparedWrites,
): Promise<Array<unknown>> {
  if (prepared) return prepared.send(from, to)
  const specs = pending.slice(from, to).map((w) => w.write)
  if (client.replaceRoutes) return client.replaceRoutes(specs)
  // a client without batches: the requests still go out together, matched by their own promises
  return Promise.all(
    specs.map((spec) =>
      client.replaceRoute(spec).then(
        () => undefined,
        (error: unknown) => error ?? new Error('write failed'),
      ),
    ),
  )
}

/**
 * Send every change's RTM_NEWROUTE in plan order, WRITE_WINDOW at a time, each batch answered in
 * full before the next goes out. On the first NACK (or an injected failure, or a beforeWrite hook
 * that throws) nothing more is sent, and the error of the earliest failing route in plan order is
 * thrown, carrying that route; the routes of its batch after it were written and answered too, so
 * the kernel's table is final when the caller restores (the journal covers every planned key).
 */
async function writePipelined(
  client: RouteClient,
  pending: readonly Pending[],
  opts: ApplyOptions,
  prepared?: PreparedWrites,
): Promise<void> {
  let i = 0
  while (i < pending.length) {
    if (opts.beforeWrite) await opts.beforeWrite(i) // a hook acts between writes (tests delete a device): one at a time
    let to = Math.min(pending.length, i + (opts.beforeWrite ? 1 : WRITE_WINDOW))
    const failAfter = opts.failAfter === undefined ? undefined : Math.max(1, opts.failAfter)
    if (failAfter !== undefined && failAfter > i) to = Math.min(to, failAfter)
    const outcome = await writeBatch(client, pending, i, to, prepared)
    const bad = outcome.findIndex((e) => e !== undefined)
    if (bad >= 0) throw outcome[bad]
    i = to
    if (failAfter !== undefined && i >= failAfter)
      throw new RouteDoctorError(`injected failure after ${i} route write(s)`, 1, 'E_INJECTED')
  }
}

/** The journal at a new path in `dir` (another apply of this process may have taken this second's name). */
function createJournalFile(
  dir: string,
  changes: JournalChange[],
  rules?: JournalRule[],
): {file: JournalFile; durable: Promise<void>} {
  const base = newJournalPath(dir)
  for (let n = 1; ; n++) {
    const path = n === 1 ? base : base.replace(/\.json$/, `-${n}.json`)
    try {
      return JournalFile.create(path, newJournal(changes, rules))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || n >= 100) throw error
    }
  }
}

// ------------------------------------------------------------------ apply

/**
 * Apply `items` (DESIGN §5). Never throws for a failure after the lock is taken: the result
 * carries the errors, and whether the journal was restored.
 */
export async function applyPlan(plan: OverlayPlan | PlanItem[], opts: ApplyOptions): Promise<ApplyResult> {
  const all = Array.isArray(plan) ? plan : plan.items
  const items = all.filter((i) => i.action !== 'delete')
  const deletions = all.filter((i) => i.action === 'delete')
  const plannedRules = Array.isArray(plan) ? [] : plan.rules
  const ruleProtocol = Array.isArray(plan) ? undefined : protocolNumberOf(plan.settings.protocol)
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
  const result: ApplyResult = {applied: [], verified: false, journal: newJournalPath(opts.journalDir), errors: []}
  let journal: JournalFile | undefined
  try {
    const links = await client.links()
    const byName = new Map<string, number>()
    for (const [index, name] of links) byName.set(name, index)
    const ifindexOf = (dev: string): number | undefined => byName.get(dev)
    const families = new Set(items.map((i) => familyOf(i.planned.dst)))

    // what will be written, and the keys it touches (only those are read from the kernel): one
    // index by key, whose slot holds the routes a dump finds there and the write planned there
    const index = new WireKeyIndex<Slot>()
    const newSlot = (): Slot => ({
      routes: undefined,
      change: undefined,
      write: undefined,
      matched: false,
      found: undefined,
    })
    const pending: Pending[] = []
    const replacesOf: Array<KernelRoute | undefined> = [] // each pending write's item.replaces
    const specErrors: ApplyErrorInfo[] = []
    const specHops: SpecHops = new WeakMap()
    for (const item of items) {
      const p = item.planned
      const packed = ipv4PrefixKey(p.dst) // canonical IPv4 text (nearly every plan's): one parse for spec and key
      let write: RouteSpec
      try {
        write = packed >= 0 ? specOf(p, 'inet', p.dst, ifindexOf, specHops) : plannedSpec(p, ifindexOf)
      } catch (error) {
        specErrors.push(errorInfo(error, p.dst))
        continue
      }
      const slot =
        packed >= 0
          ? index.obtainIPv4(write.tableId, write.metric, packed, newSlot)
          : index.obtain(write.family, write.tableId, write.dst, write.metric, newSlot)
      if (slot.change)
        throw new RouteDoctorError(`the plan writes ${write.dst} metric ${write.metric} twice`, 2, 'E_PLAN')
      slot.change = {mode: item.mode, planned: item.planned, before: NO_BEFORE} // its key: changeKey, as keyOf(write)
      slot.write = write
      pending.push(slot as Pending)
      replacesOf.push(item.replaces)
    }
    const replacesAt = replacesOf.map((r) =>
      r ? index.obtain(r.family, r.tableId, r.dst, r.metric, newSlot) : undefined,
    )

    // one dump: the routes at those keys, decoded (every other route is passed over on its key bytes)
    for (const f of families) {
      await client.scanRoutes(f, (buf, start, end, i) => {
        const slot = index.lookup(buf, start, end)
        if (!slot) return
        if (slot.change) {
          // at a planned key: journaled as "before", so decoded now
          const d = decodeDumpedRoute(buf, start, end, links, i)
          if (d) (slot.routes ??= []).push(d)
        } else if (wireDecodesLookedUp(buf, start, end)) {
          // only the route an item corrects (BIRD's, beside ours): read only if a route war needs it
          ;(slot.routes ??= []).push(lazyDumpedRoute(buf, start, end, links, i))
        }
      })
    }
    for (let i = 0; i < pending.length; i++) {
      const w = pending[i]
      const routes = w.routes
      if (routes) w.change.before = routes.map(({route, spec}) => ({route, spec}))
      const r = replacesOf[i]
      if (r) {
        const there = replacesAt[i]?.routes ?? NONE
        const identity = there.length > 1 ? routeIdentity(r) : undefined
        const found =
          (identity !== undefined ? there.find((d) => routeIdentity(d.route) === identity) : undefined) ?? there[0]
        if (found) w.replaces = found // its route is built when first read
      }
    }
    const changes = pending.map((w) => w.change)
    // the routes to withdraw, as the kernel holds them now (one already gone is left out: nothing to put back)
    const withdraw = await routesToWithdraw(client, deletions)
    for (const w of withdraw) changes.push(w.change)
    // the rules, and whether the kernel holds each now
    const journalRules =
      plannedRules.length > 0 || !Array.isArray(plan)
        ? await rulesBefore(client, plannedRules, ruleProtocol)
        : undefined
    // the journal comes first, even when nothing will be written, so every apply leaves a record;
    // while it is synced (on the thread pool), the writes are encoded
    const created = createJournalFile(opts.journalDir, changes, journalRules)
    journal = created.file
    result.journal = journal.path
    let prepared: PreparedWrites | undefined
    let prepareError: unknown
    if (specErrors.length === 0 && client.prepareReplaces) {
      try {
        prepared = client.prepareReplaces(pending.map((w) => w.write))
      } catch (error) {
        prepareError = error // nothing is sent: thrown below, where a write failure goes
      }
    }
    await created.durable
    if (specErrors.length > 0) {
      for (const e of specErrors) result.errors.push(e) // no spread: a full table can fail route by route
      journal.setState('failed', 'planned devices missing; nothing written')
      return result
    }

    try {
      if (prepareError !== undefined) throw prepareError
      // rules first (a rule whose table is still empty falls through to main), then routes, then withdrawals,
      // and a rule goes last, once its table is empty
      await addRules(client, journalRules ?? [], journal, opts)
      await writePipelined(client, pending, opts, prepared)
      for (const w of withdraw) await client.deleteRoute(w.spec)
      for (const r of journalRules ?? []) if (r.action === 'delete' && r.existed) await client.deleteRule!(r.rule)
      result.applied = changes.map((c) => c.planned)
      if (journalRules !== undefined && journalRules.length > 0) result.rules = journalRules.map(ruleLine)
      const unwithdrawn = await checkWithdrawn(client, withdraw)
      if (unwithdrawn.length > 0)
        throw new RouteDoctorError(
          `read-back failed: still in the kernel after the delete: ${unwithdrawn.join(', ')}`,
          1,
          'E_VERIFY',
        )
      const wrongRules = await checkRules(client, journalRules ?? [])
      if (wrongRules.length > 0) throw new RouteDoctorError(`read-back failed: ${wrongRules.join('; ')}`, 1, 'E_VERIFY')
      const missing = await readBack(client, families, pending, index)
      if (missing.length > 0) {
        // something already undid a write: the same route war the watch looks for, only faster
        // (a route of our own protocol in another shape is a failed write, not a war)
        const wars = missing.filter((m) => !m.by || protoKey(m.by) !== protoKey(changes[0].planned.protocol))
        if (wars.length > 0) result.routeWar = wars
        throw new RouteDoctorError(
          `read-back failed: ${missing.map((m) => `${m.dst}: ${m.detail}`).join('; ')}`,
          1,
          'E_VERIFY',
        )
      }
      result.verified = true

      const deadline = Date.now() + opts.watchSeconds * 1000
      while (pending.length > 0 && Date.now() < deadline) {
        await sleep(Math.min(opts.watchIntervalMs ?? 500, Math.max(0, deadline - Date.now())))
        const wars = await readBack(client, families, pending, index)
        if (wars.length > 0) {
          result.routeWar = wars
          result.verified = false
          throw new RouteDoctorError(
            `route war: ${wars.map((w) => `${w.dst}: ${w.detail}`).join('; ')}`,
            1,
            'E_ROUTE_WAR',
          )
        }
      }
      journal.setState('applied')
      return result
    } catch (error) {
      result.errors.push(errorInfo(error, error instanceof NetlinkError ? error.route?.dst : undefined))
      result.verified = false
      const outcome = await restoreChanges(client, changes)
      for (const e of outcome.errors) result.errors.push(e)
      const rules = await restoreRules(client, journalRules ?? [])
      for (const e of rules.errors) result.errors.push(e)
      result.restored = outcome.verified && outcome.errors.length === 0 && rules.verified
      result.rules = undefined
      result.applied = []
      journal.setState(result.restored ? 'restored' : 'failed', result.errors[0]?.message)
      return result
    }
  } catch (error) {
    // before anything was written (the dump or the journal failed)
    result.errors.push(errorInfo(error))
    if (journal) {
      try {
        journal.setState('failed', result.errors[0].message)
      } catch {
        // the journal itself failed; the error above says so
      }
    }
    return result
  } finally {
    journal?.close()
    if (!opts.client) client.close()
    release()
  }
}

/** Undo a completed apply: delete the routes it added, put back the ones it replaced, verify. */
export async function revertJournal(path: string, opts: {client?: RouteClient} = {}): Promise<RevertResult> {
  if (!existsSync(path)) readJournal(path) // its error; no lock (nor directory) made for a journal that is not there
  // locked before it is read: journal retention (pruneJournals) holds the lock to remove one
  const release = acquireLock(dirname(path))
  let client: RouteClient | undefined
  try {
    const journal = readJournal(path)
    client = opts.client ?? (await openRouteClient())
    const outcome = await restoreChanges(client, journal.changes)
    const rules = await restoreRules(client, journal.rules ?? [])
    const errors = [...outcome.errors, ...rules.errors]
    const verified = outcome.verified && rules.verified
    setJournalState(path, journal, verified && errors.length === 0 ? 'reverted' : 'failed', errors[0]?.message)
    return {
      journal: path,
      restored: outcome.restored,
      deleted: outcome.deleted,
      ...(rules.done.length > 0 ? {rules: rules.done} : {}),
      verified,
      errors,
    }
  } finally {
    if (client && !opts.client) client.close()
    release()
  }
}

// ------------------------------------------------------------------ withdrawals and rules

interface Withdrawal {
  change: JournalChange
  spec: RouteSpec // the route as the kernel holds it: what RTM_DELROUTE names
}

/** The routes to withdraw, as a fresh dump shows them at their keys (matched by identity). */
async function routesToWithdraw(client: RouteClient, deletions: readonly PlanItem[]): Promise<Withdrawal[]> {
  if (deletions.length === 0) return []
  const keys = deletions.map((d) =>
    keyOf({
      family: familyOf(d.planned.dst),
      tableId: d.planned.tableId,
      dst: canonicalPrefix(d.planned.dst, familyOf(d.planned.dst)) ?? d.planned.dst,
      metric: d.planned.metric,
    }),
  )
  const routes = await dumpFamilies(client, new Set(keys.map((k) => k.family)), new Set(keys.map(keyText)))
  const out: Withdrawal[] = []
  for (let i = 0; i < deletions.length; i++) {
    const d = deletions[i]
    const there = atKey(routes, keys[i])
    const want = d.replaces ? routeIdentity(d.replaces) : undefined
    const found = there.find((r) =>
      want !== undefined ? routeIdentity(r.route) === want : matchesPlanned(r.route, d.planned),
    )
    if (!found) continue
    out.push({
      change: {mode: 'delete', planned: d.planned, before: there.map(({route, spec}) => ({route, spec}))},
      spec: found.spec,
    })
  }
  return out
}

/** The withdrawn routes still in the kernel (dst and table). */
async function checkWithdrawn(client: RouteClient, withdraw: readonly Withdrawal[]): Promise<string[]> {
  if (withdraw.length === 0) return []
  const keys = withdraw.map((w) => changeKey(w.change))
  const routes = await dumpFamilies(client, new Set(keys.map((k) => k.family)), new Set(keys.map(keyText)))
  const out: string[] = []
  for (let i = 0; i < withdraw.length; i++) {
    const gone = withdraw[i].spec
    if (atKey(routes, keys[i]).some((r) => r.spec.protocol === gone.protocol))
      out.push(`${keys[i].dst} table ${withdraw[i].change.planned.table}`)
  }
  return out
}

function ruleClient(client: RouteClient): Required<Pick<RouteClient, 'rules' | 'addRule' | 'deleteRule'>> {
  if (!client.rules || !client.addRule || !client.deleteRule)
    throw new RouteDoctorError(
      'this netlink client cannot read or write rules (RTM_GETRULE/RTM_NEWRULE)',
      1,
      'E_NETLINK',
    )
  return {
    rules: client.rules.bind(client),
    addRule: client.addRule.bind(client),
    deleteRule: client.deleteRule.bind(client),
  }
}

/**
 * Add the journal's rules the kernel did not hold when it was read. One another writer added since then (EEXIST) was
 * present before: journaled so, a restore leaves it (it is not routedoctor's to remove).
 */
async function addRules(
  client: RouteClient,
  rules: readonly JournalRule[],
  journal: JournalFile,
  opts: ApplyOptions,
): Promise<void> {
  for (let i = 0; i < rules.length; i++) {
    const r = rules[i]
    if (r.action !== 'add' || r.existed) continue
    if (opts.beforeRuleWrite) await opts.beforeRuleWrite(i)
    try {
      await client.addRule!(r.rule)
    } catch (error) {
      if (!(error instanceof NetlinkError && error.errnoName === 'EEXIST')) throw error
      journal.rulePresent(i)
    }
  }
}

/** The kernel's rules of the families `rules` touch. */
async function kernelRules(client: RouteClient, families: Iterable<Family>): Promise<RuleSpec[]> {
  const c = ruleClient(client)
  const out: RuleSpec[] = []
  for (const f of new Set(families)) out.push(...(await c.rules(f)))
  return out
}

/** The planned rules as the journal keeps them: each with whether the kernel holds it now. */
async function rulesBefore(
  client: RouteClient,
  planned: readonly PlannedRule[],
  protocol?: number,
): Promise<JournalRule[]> {
  if (planned.length === 0) return []
  const specs = planned.map((r) => lookupRule(familyOf(r.to), r.priority, r.to, r.table, protocol))
  const now = await kernelRules(client, specs.map((r) => r.family))
  return planned.map((r, i) => {
    const found = now.find((k) => sameRule(k, specs[i]))
    // a rule removed is journaled as the kernel holds it (its protocol included), so a restore puts back that rule
    return {action: r.action, rule: r.action === 'delete' && found ? found : specs[i], existed: found !== undefined}
  })
}

/**
 * What an apply did to a journaled rule: `added`/`removed`, or, where the kernel already was as planned (the rule there
 * before the write, journaled `existed` or `rulesPresent`; or gone already), `present`/`absent`: nothing was done.
 */
const ruleLine = (r: JournalRule): string =>
  `${r.action === 'add' ? (r.existed ? 'present' : 'added') : (r.existed ? 'removed' : 'absent')} ${ruleText(r.rule)}`

/** What is wrong with the rules after an apply: an added one missing, a removed one still there. */
async function checkRules(client: RouteClient, rules: readonly JournalRule[]): Promise<string[]> {
  if (rules.length === 0) return []
  const now = await kernelRules(client, rules.map((r) => r.rule.family))
  const out: string[] = []
  for (const r of rules) {
    const there = now.some((k) => sameRule(k, r.rule))
    if (r.action === 'add' && !there) out.push(`rule ${ruleText(r.rule)} is missing`)
    if (r.action === 'delete' && there) out.push(`rule ${ruleText(r.rule)} is still there`)
  }
  return out
}

/** Put the journal's rules back as they were: remove the ones the apply added, add back the ones it removed; verify. */
async function restoreRules(
  client: RouteClient,
  rules: readonly JournalRule[],
): Promise<{done: string[]; verified: boolean; errors: ApplyErrorInfo[]}> {
  const out = {done: [] as string[], verified: true, errors: [] as ApplyErrorInfo[]}
  if (rules.length === 0) return out
  try {
    const c = ruleClient(client)
    const now = await kernelRules(client, rules.map((r) => r.rule.family))
    for (let i = rules.length - 1; i >= 0; i--) {
      const r = rules[i]
      const there = now.some((k) => sameRule(k, r.rule))
      try {
        if (!r.existed && there) {
          await c.deleteRule(r.rule)
          out.done.push(`removed ${ruleText(r.rule)}`)
        } else if (r.existed && !there) {
          await c.addRule(r.rule)
          out.done.push(`restored ${ruleText(r.rule)}`)
        }
      } catch (error) {
        out.errors.push(errorInfo(error))
      }
    }
    const after = await kernelRules(client, rules.map((r) => r.rule.family))
    for (const r of rules) {
      if (after.some((k) => sameRule(k, r.rule)) !== r.existed) {
        out.verified = false
        out.errors.push({message: `after restore, rule ${ruleText(r.rule)} is not as the journal saved it`})
      }
    }
  } catch (error) {
    out.verified = false
    out.errors.push(errorInfo(error))
  }
  return out
}
