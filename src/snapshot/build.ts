// SourceFile[] (from a directory, a bundle or the live node) -> Snapshot. Each file goes to its
// parser; a parse error propagates (exit 2) naming the file and line.
import {calicoNodeName, parseBirdConf} from '../parse/bird-conf.js'
import {parseBirdProtocols} from '../parse/bird-protocols.js'
import {parseBirdRoutes, type BirdPathSink} from '../parse/bird-routes.js'
import {parseBirdStatus} from '../parse/bird-status.js'
import {parseIpAddrJson} from '../parse/ip-addr.js'
import {parseIpLinkJson, parseIpLinkText} from '../parse/ip-link.js'
import {parseIpNeighJson} from '../parse/ip-neigh.js'
import {parseIpPools} from '../parse/ippools.js'
import {parseIpRouteJson, type OutsideRouteSink, type TunnelRouteSink} from '../parse/ip-route-json.js'
import {parseIpRouteText} from '../parse/ip-route-text.js'
import {parseIpRule} from '../parse/ip-rule.js'
import {parseSysctl} from '../parse/sysctl.js'
import {isInterfaceName, isOverlayTable, OVERLAY_TABLE_EXPECTED, parseOverlaySettings} from '../parse/overlay-settings.js'
import {parseCalicoTruth} from '../parse/calico.js'
import {CALICO_DIR, NODE_NAME_FILE, nodeNameOf, type CalicoTruth} from '../model/calico.js'
import {DEFAULT_TUNNEL_DEV, OVERLAY_SETTINGS_FILE, outsidePools, ruleBeforeMain} from '../model/snapshot-index.js'
import {ParseError, UsageError} from '../model/errors.js'
import {canonicalPrefix, familyOf, hostBitsSet} from '../model/prefix.js'
import type {
  BirdConfig,
  BirdProtocol,
  BirdRoute,
  KernelRoute,
  Pool,
  PoolMode,
  Snapshot,
  SourceFile,
} from '../model/types.js'

export {NODE_NAME_FILE}

export interface BuildOptions {
  pools?: string[] // --pool CIDR[=ipip|vxlan|none]
  ippools?: SourceFile // --ippools FILE
  tunnelDev?: string
  origin?: Snapshot['origin']
  node?: string // --node NAME: which Kubernetes node this is
  truth?: CalicoTruth // Calico's truth parsed already (fleet: once for every node), instead of the files' calico/
  /** Where to defer (leave unbuilt) BIRD's tunnel routes and single BGP paths: the full-table path's (src/bulk/). */
  defer?: RouteDeferral
  /**
   * With `defer`: the caller gives up the texts of `files`. The kernel's JSON route dump is dropped as soon as
   * its routes are read (its entry in `files` replaced by one with an empty text, see bulk/drop-texts.ts): the
   * routes deferred are built again without it.
   */
  consume?: boolean
  /** With `consume`: called once a text is dropped (check collects garbage then: bulk/drop-texts.ts). */
  onTextDropped?: () => void
}

/**
 * How the full-table path (src/bulk/) takes the routes it defers while the parsers read: through the sinks the
 * parsers declare, and, with `consume`, how the kernel's JSON dump lets go of its text once its routes are read.
 */
export interface RouteDeferral {
  /** The kernel's sinks: BIRD's tunnel routes, and, with `outside` (check), the IPv4 routes outside every pool. */
  kernelSinks(
    tunnelDev: string,
    outside: ((key: number) => boolean) | undefined,
  ): {tunnel: TunnelRouteSink; outsidePool?: OutsideRouteSink}
  /** BIRD's sink, asked once the kernel's routes are read; undefined when no path can be deferred. */
  birdSink(outside: ((key: number) => boolean) | undefined): BirdPathSink | undefined
  /** The kernel JSON dump's entry without its text, the routes read from it holding none of it. */
  dropKernelText(file: SourceFile, routes: KernelRoute[]): SourceFile
}

/**
 * Every --pool, each CIDR once; one CIDR given with two modes is refused (which would be judged is anyone's guess).
 */
export function parsePoolFlags(flags: string[]): Pool[] {
  const pools = flags.map(parsePoolFlag)
  for (const [i, p] of pools.entries()) {
    const other = pools.findIndex((q, j) => j < i && q.cidr === p.cidr && q.mode !== p.mode)
    if (other >= 0)
      throw new UsageError(`--pool ${flags[other]} and --pool ${flags[i]}: one pool, two modes; give it once`)
  }
  return pools.filter((p, i) => pools.findIndex((q) => q.cidr === p.cidr) === i)
}

export function parsePoolFlag(flag: string): Pool {
  const [cidrText, modeText = 'ipip'] = flag.split('=')
  const cidr = canonicalPrefix(cidrText)
  if (!cidr || !cidrText.includes('/'))
    throw new UsageError(`--pool ${flag}: expected CIDR[=ipip|vxlan|none], e.g. 192.168.0.0/16=ipip`)
  if (!['ipip', 'vxlan', 'none'].includes(modeText))
    throw new UsageError(`--pool ${flag}: mode must be ipip, vxlan or none`)
  const network = hostBitsSet(cidrText)
  if (network) throw new UsageError(`--pool ${flag}: host bits set in ${cidrText} (the network is ${network})`)
  if (modeText === 'ipip' && familyOf(cidr) === 'inet6')
    throw new UsageError(`--pool ${flag}: Calico has no IPv6 IP-in-IP (an IPv6 pool is vxlan or none)`)
  return {cidr, mode: modeText as PoolMode, origin: 'flag'}
}

/** The tunnel device flag: a Linux interface name (1-15 characters, no `/`, whitespace or `:`). */
export function checkTunnelDev(name: string): string {
  if (!isInterfaceName(name)) {
    throw new UsageError(
      `--tunnel-dev ${JSON.stringify(name)}: expected an interface name (1-15 characters, no '/', ':' or spaces), e.g. tunl0`,
    )
  }
  return name
}

/** The overlay table flag (DESIGN §5): refused where BIRD, Felix or the kernel keep routes. */
export function checkOverlayTable<T extends number | undefined>(table: T): T {
  if (table !== undefined && !isOverlayTable(table)) throw new UsageError(`--table ${table}: expected ${OVERLAY_TABLE_EXPECTED}`)
  return table
}

/** The overlay rules' priority flag (DESIGN §5): between local's rule (0) and main's (32766). */
export function checkRulePriority<T extends number | undefined>(priority: T): T {
  if (priority !== undefined && !ruleBeforeMain(priority)) {
    throw new UsageError(`--rule-priority ${priority}: expected 1-32765 (below main's rule at 32766, after local's at 0)`)
  }
  return priority
}

interface TunnelPools {
  calico: CalicoTruth | undefined
  config: BirdConfig | undefined
  pools: Pool[]
  poolOrigin: Snapshot['poolOrigin']
  unchecked?: Pool[] // vxlan and no-encapsulation pools: not IP-in-IP, not routedoctor's to judge
}

/** Only IP-in-IP pools are tunnel pools; the others are kept apart, shown as not checked. */
function ipipOnly(t: TunnelPools): TunnelPools {
  const unchecked = t.pools.filter((p) => p.mode !== 'ipip')
  return unchecked.length === 0 ? t : {...t, pools: t.pools.filter((p) => p.mode === 'ipip'), unchecked}
}

/** Calico's truth of the `calico/*.json` files among `files`; undefined when there are none. */
function calicoTruthOf(files: SourceFile[]): CalicoTruth | undefined {
  const texts = files
    .filter((f) => f.name.startsWith(CALICO_DIR) && f.text !== undefined)
    .map((f) => ({name: f.name, text: f.text!}))
  return texts.length > 0 ? parseCalicoTruth(texts) : undefined
}

/** Which prefixes are tunnel prefixes: flags, else IPPools, else Calico's truth, else the BIRD config, else none. */
function tunnelPoolsOf(files: SourceFile[], opts: BuildOptions, tunnelDev: string): TunnelPools {
  const calico = opts.truth ?? calicoTruthOf(files)
  const conf = files.find((f) => f.name === 'bird.conf' && f.text !== undefined)?.text
  const config = conf !== undefined ? parseBirdConf(conf, 'bird.conf', {tunnelDev}) : undefined
  const ippoolsFile =
    opts.ippools ?? files.find((f) => (f.name === 'ippools.yaml' || f.name === 'ippools.json') && f.text !== undefined)
  if (opts.pools && opts.pools.length > 0)
    return {calico, config, pools: parsePoolFlags(opts.pools), poolOrigin: 'flag'}
  if (ippoolsFile?.text !== undefined)
    return {calico, config, pools: parseIpPools(ippoolsFile.text, ippoolsFile.name), poolOrigin: 'ippools'}
  if (calico && calico.pools.length > 0) return {calico, config, pools: calico.pools, poolOrigin: 'calico'}
  if (config && config.pools.length > 0) return {calico, config, pools: config.pools, poolOrigin: 'bird.conf'}
  return {calico, config, pools: [], poolOrigin: 'none'}
}

/**
 * A parse error in any of `files` names the file as the user gave it; findings' evidence keeps the snapshot's names.
 */
export function buildSnapshot(files: SourceFile[], opts: BuildOptions = {}): Snapshot {
  return namingPaths(opts.ippools ? [opts.ippools, ...files] : files, opts.origin, () => parseSnapshot(files, opts))
}

/** Runs `parse`; a ParseError in it names the file by its path, a snapshot directory's file or a bundle's member. */
export function namingPaths<T>(
  files: readonly SourceFile[],
  origin: Snapshot['origin'] | undefined,
  parse: () => T,
): T {
  try {
    return parse()
  } catch (error) {
    if (!(error instanceof ParseError)) throw error
    const own = files.find((f) => f.name === error.file)?.path
    const at = own ?? (origin?.path === undefined ? undefined
      : origin.kind === 'dir' ? `${origin.path.replace(/\/+$/, '')}/${error.file}`
      : origin.kind === 'bundle' ? `${origin.path}:snapshot/${error.file}` : undefined)
    throw at === undefined || at === error.file ? error : error.at(at)
  }
}

/**
 * The node's name: the bundle's or live host's, else the snapshot's `hostname` file, else BIRD's `show status` (BIRD
 * 2+), else the node a Calico-rendered bird.conf is for (BIRD 1.6 prints no host name).
 */
export function snapshotHost(s: Pick<Snapshot, 'origin' | 'files'>): string | undefined {
  const text = (name: string) => s.files.find((f) => f.name === name)?.text
  const file = text('hostname')?.trim().split(/\s+/)[0]
  const hostLine = text('birdc-show-status.txt')?.match(/^Hostname is (\S+)/m)?.[1]
  const conf = text('bird.conf')
  return s.origin.host ?? (file || undefined) ?? hostLine ?? (conf !== undefined ? calicoNodeName(conf) : undefined)
}

function parseSnapshot(files: SourceFile[], opts: BuildOptions): Snapshot {
  markEmpty(files)
  const text = (name: string) => files.find((f) => f.name === name && f.text !== undefined)?.text
  // read first: the tunnel device it records decides how the routes are read
  const overlayText = text(OVERLAY_SETTINGS_FILE)
  const overlay = overlayText !== undefined ? parseOverlaySettings(overlayText, OVERLAY_SETTINGS_FILE) : undefined
  const tunnelDev = opts.tunnelDev ?? overlay?.tunnelDev ?? DEFAULT_TUNNEL_DEV
  const defer = opts.defer
  const consume = defer !== undefined && opts.consume === true
  // for check, the pools are known before the kernel's routes are read, so that those outside every pool are
  // deferred; a file they come from that is wrong is reported below, where it is read (errors come in one order)
  let early: TunnelPools | undefined
  if (consume) {
    try {
      early = ipipOnly(tunnelPoolsOf(files, opts, tunnelDev))
    } catch {
      early = undefined
    }
  }
  const outside = early ? outsidePools(early.pools) : undefined
  let kernelRoutes = kernelRoutesOf(files, tunnelDev, defer, consume, outside)
  if (consume) opts.onTextDropped?.() // here: kernelRoutesOf's frame, which held the text, is gone
  // IPv6 routes only from ip-6-d-route.txt when the main table dump has none
  const v6 = text('ip-6-d-route.txt')
  if (v6 !== undefined && !kernelRoutes.some((r) => r.family === 'inet6'))
    kernelRoutes = kernelRoutes.concat(parseIpRouteText(v6, 'ip-6-d-route.txt', {family: 'inet6'}))
  const linksJson = text('ip-j-d-link.json')
  const linksText = text('ip-d-link.txt')
  const links =
    linksJson !== undefined ? parseIpLinkJson(linksJson) : linksText !== undefined ? parseIpLinkText(linksText) : []
  const addr = text('ip-j-addr.json')
  const neigh = text('ip-j-neigh.json')
  const rule = text('ip-rule.txt')
  const sysctl = text('sysctl.txt')
  const status = text('birdc-show-status.txt')
  const birdRoutes = text('birdc-show-route-all.txt')
  const protocols = text('birdc-show-protocols-all.txt')
  const {calico, config, pools, poolOrigin, unchecked} = early ?? ipipOnly(tunnelPoolsOf(files, opts, tunnelDev))
  // a path is deferred where the kernel deferred a route too (the others would be read again), and, for check
  // (`consume`), where its network is outside every pool: check reads such a path only if it holds a BGP next hop,
  // so a full table outside the pools is never built
  const birdSink = defer !== undefined && birdRoutes !== undefined ? defer.birdSink(outside) : undefined

  const birdStatus = status !== undefined ? parseBirdStatus(status) : undefined // parse errors in the files' order
  const parsedRoutes = birdRoutes !== undefined ? parseBirdRoutes(birdRoutes, 'birdc-show-route-all.txt', birdSink) : []
  const parsedProtocols = protocols !== undefined ? parseBirdProtocols(protocols) : []
  if (protocols !== undefined && parsedProtocols.length === 0) markNoProtocols(files)
  plainRouteSources(parsedRoutes, parsedProtocols)
  const addresses = addr !== undefined ? parseIpAddrJson(addr) : []
  const origin = opts.origin ?? {kind: 'dir'}
  const nodeName = nodeNameOf(
    calico,
    opts.node ?? text(NODE_NAME_FILE)?.trim() ?? undefined,
    // BIRD's router id too: Calico sets it to the node's address, known where `ip addr` was not collected
    [...addresses.map((a) => a.local), ...(birdStatus?.routerId !== undefined ? [birdStatus.routerId] : [])],
    snapshotHost({origin, files}),
  )
  return {
    origin,
    files,
    missing: missingSources(files),
    kernelRoutes,
    links,
    addresses,
    neighbors: neigh !== undefined ? parseIpNeighJson(neigh) : [],
    rules: rule !== undefined ? parseIpRule(rule) : [],
    sysctl: sysctl !== undefined ? parseSysctl(sysctl) : [],
    bird: {
      status: birdStatus,
      routes: parsedRoutes,
      protocols: parsedProtocols,
      config,
    },
    pools,
    poolOrigin,
    ...(unchecked ? {uncheckedPools: unchecked} : {}),
    tunnelDev,
    ...(calico ? {calico} : {}),
    ...(nodeName ? {nodeName} : {}),
    ...(overlay !== undefined ? {overlay} : {}),
  }
}

// The source `show route all` prints (`Type:`) for the paths of a protocol, by the protocol's kind.
const SOURCE_OF_PROTOCOL: Record<string, string> = {
  bgp: 'BGP', kernel: 'inherit', static: 'static', device: 'device', direct: 'device',
}

/**
 * A plain `show route` (no `all`) prints no attributes, so no path has a source: it is the source of the
 * path's protocol's kind (a BGP protocol's path is a BGP path; without protocol data, a path with
 * `from PEER`, which only BGP prints on a Calico node).
 */
function plainRouteSources(routes: BirdRoute[], protocols: BirdProtocol[]): void {
  let kinds: Map<string, string> | undefined
  for (const r of routes) {
    if (r.source !== undefined) continue
    kinds ??= new Map(protocols.map((p) => [p.name, SOURCE_OF_PROTOCOL[p.proto.toLowerCase()] ?? '']))
    const source = kinds.get(r.protocol) || (protocols.length === 0 && r.from !== undefined ? 'BGP' : undefined)
    if (source !== undefined) r.source = source
  }
}

/**
 * The kernel's routes: from the JSON dump when there is one, else the text one. `consume`: the JSON dump's text
 * is dropped once read (in its own frame, so that no variable of buildSnapshot's keeps it).
 */
function kernelRoutesOf(
  files: SourceFile[],
  tunnelDev: string,
  defer: RouteDeferral | undefined,
  consume: boolean,
  outside: ((key: number) => boolean) | undefined,
): KernelRoute[] {
  const at = files.findIndex((f) => f.name === 'ip-j-d-route.json' && f.text !== undefined)
  if (at < 0) {
    const routesText = files.find((f) => f.name === 'ip-d-route.txt' && f.text !== undefined)?.text
    return routesText !== undefined ? parseIpRouteText(routesText) : []
  }
  if (files[at].text!.trim() === '') return [] // an empty dump (markEmpty): an empty table
  const sinks = defer?.kernelSinks(tunnelDev, outside)
  const routes = parseIpRouteJson(files[at].text!, 'ip-j-d-route.json', {
    deferred: sinks?.tunnel,
    outsidePool: sinks?.outsidePool,
  })
  if (consume) files[at] = defer!.dropKernelText(files[at], routes)
  return routes
}

// The text forms buildSnapshot reads only when their JSON form is not there (kernelRoutesOf, the links).
const TEXT_FALLBACKS: ReadonlyArray<readonly [json: string, text: string]> = [
  ['ip-j-d-route.json', 'ip-d-route.txt'],
  ['ip-j-d-link.json', 'ip-d-link.txt'],
]

/**
 * The files among `present` that buildSnapshot would not read: a text form whose JSON form is there too (a bundle
 * collects both). A full table's text route dump is large, and a diagnosis need not read or hold it.
 */
export function unreadFallbacks(present: ReadonlySet<string>): Set<string> {
  const unread = new Set<string>()
  for (const [json, text] of TEXT_FALLBACKS) if (present.has(json) && present.has(text)) unread.add(text)
  return unread
}

// Sources whose file may rightly be empty: a node without IPv6 routes
const MAY_BE_EMPTY = new Set(['ip-6-d-route.txt'])

/** The kernel's route dumps (either form): a snapshot without one cannot be judged (services/load.ts). */
export const KERNEL_ROUTE_FILES: readonly string[] = TEXT_FALLBACKS[0]

/** Does `files` hold the kernel's routes, in either form (an empty dump included: an empty table is data)? */
export function haveKernelRoutes(files: readonly SourceFile[]): boolean {
  return files.some((f) => KERNEL_ROUTE_FILES.includes(f.name) && f.text !== undefined)
}

/** How a failed form's error says that its other form was read (`other`: that form's name). */
export const readInstead = (other: string): string => `; ${other} was read instead`

/** `[]` from `ip -j`: no route (or link) at all, as an empty file (another namespace, or no `table all`). */
function emptyJsonDump(f: SourceFile): boolean {
  return TEXT_FALLBACKS.some(([json]) => json === f.name) && /^\[\s*\]$/.test(f.text!.trim())
}

/**
 * An empty file whose other form has content is no source: it is marked failed ("empty"), in place, so that the
 * other form is read and the header names it (an empty JSON dump read as an empty table beside a good text one
 * turned every remote block into `missing`). Without such another form, an empty kernel route dump is data, an
 * empty table, and named so in the header; an empty link dump is no source.
 */
export function markEmpty(files: SourceFile[]): void {
  for (let i = 0; i < files.length; i++) {
    const f = files[i]
    if (
      f.text === undefined ||
      f.error !== undefined ||
      MAY_BE_EMPTY.has(f.name) ||
      f.text.length > 64 ||
      (f.text.trim() !== '' && !emptyJsonDump(f))
    )
      continue
    const how = f.text.trim() === '' ? '' : ' ([])'
    const other = TEXT_FALLBACKS.find((pair) => pair.includes(f.name))?.find((n) => n !== f.name)
    const used =
      other !== undefined && files.some((g) => g.name === other && g.text !== undefined && g.text.trim() !== '')
    if (!used && KERNEL_ROUTE_FILES.includes(f.name))
      files[i] = {...f, error: `the file is empty${how}: read as an empty table`}
    else files[i] = {...f, text: undefined, error: `the file is empty${how}${used ? readInstead(other) : ''}`}
  }
}

/**
 * BIRD always runs protocols (a Calico node's device, kernel and BGP ones): a `show protocols all` holding none was
 * cut short, so it says nothing about the sessions (not "0/0"). Marked failed in place, its text kept for a bundle.
 */
function markNoProtocols(files: SourceFile[]): void {
  const at = files.findIndex((f) => f.name === 'birdc-show-protocols-all.txt' && f.text !== undefined)
  if (at >= 0 && files[at].error === undefined)
    files[at] = {...files[at], error: 'the file holds no protocol (cut short?): BGP sessions unknown'}
}

// Alternatives stand for one source: the first name is reported when none of them is there.
const SOURCES: string[][] = [
  ['ip-j-d-route.json', 'ip-d-route.txt'],
  ['ip-j-d-link.json', 'ip-d-link.txt'],
  ['ip-j-addr.json'],
  ['ip-j-neigh.json'],
  ['ip-rule.txt'],
  ['sysctl.txt'],
  ['birdc-show-status.txt'],
  ['birdc-show-route-all.txt'],
  ['birdc-show-protocols-all.txt'],
  ['bird.conf'],
  ['ippools.yaml', 'ippools.json'],
]

function missingSources(files: SourceFile[]): string[] {
  const have = new Set(files.filter((f) => f.text !== undefined).map((f) => f.name))
  return SOURCES.filter((alts) => !alts.some((n) => have.has(n))).map((alts) => alts[0])
}
