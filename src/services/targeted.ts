// `explain` on the live node, collecting what one block's chain reads and nothing table-wide: BIRD's paths at the
// prefix (`show route PREFIX all`, or `show route for ADDRESS all`), its status and protocols; from the kernel, in
// one rtnetlink dump read in place, the routes at the prefix, the routes holding each address a lookup is made for
// (the BGP next hops, the sessions' neighbours, the address asked about) in every table, and the local table; the
// links, addresses, rules, neighbours, sysctls and BIRD's config as a full collection has them. The explanation made
// of it is the full collection's (test/integration/explain-targeted.test.ts holds them equal in the lab).
import os from 'node:os'

import type {CollectLiveOptions} from '../collect/live.js'
import {SNAPSHOT_FILES} from '../collect/snapshot-files.js'
import {isEstablished} from '../model/snapshot-index.js'
import {canonicalAddress, canonicalPrefix, ipv4Value} from '../model/prefix.js'
import type {SourceFile} from '../model/types.js'
import {parseBirdProtocols} from '../parse/bird-protocols.js'
import {parseBirdRoutes} from '../parse/bird-routes.js'
import type {LoadedSource} from './load.js'

export interface TargetedSource extends LoadedSource {
  /**
   * The BGP next hops standing for the pool paths not collected (node-wide checks look at every one): the addresses
   * of the Established sessions that brought routes. A full mesh's next hops are its neighbours; behind a route
   * reflector they are the announcing nodes, which no session names.
   */
  otherNextHops: string[]
}

/** What a query asks BIRD, and the kernel, about; undefined for a query the targeted path does not serve (IPv6). */
function targetOf(query: string): {prefix?: string; address?: string; birdCommand: string} | undefined {
  if (query.includes('/')) {
    const prefix = canonicalPrefix(query)
    if (prefix === undefined || ipv4Value(prefix, 0, prefix.indexOf('/')) < 0) return undefined
    return {prefix, birdCommand: `show route ${prefix} all`}
  }
  const address = canonicalAddress(query)
  if (address === undefined || ipv4Value(address) < 0) return undefined
  return {address, birdCommand: `show route for ${address} all`}
}

/** Does `query` have a targeted collection (an IPv4 prefix or address)? Else the caller collects everything. */
export function isTargetable(query: string): boolean {
  return targetOf(query) !== undefined
}

export async function collectTargeted(query: string, opts: CollectLiveOptions): Promise<TargetedSource> {
  const target = targetOf(query)
  if (target === undefined) throw new Error(`collectTargeted: ${query} is not an IPv4 prefix or address`)
  const {collectBird, collectLive} = await import('../collect/live.js')
  // BIRD answers at once: what it says names the kernel routes to read, whose dump then runs beside the `ip` commands
  const birdFiles = collectBird({...opts, birdRoutesCommand: target.birdCommand})
  const rest = collectLive({...opts, routeText: 'fallback', routeTables: false, birdFiles})
  const bird = await birdFiles
  const text = (name: string) => bird.find((f) => f.name === name)?.text
  // parse errors are reported where the snapshot is built, naming the file and line: here a text that does not
  // parse asks for nothing
  const paths = tryParse(() => parseBirdRoutes(text(SNAPSHOT_FILES.birdRoutes) ?? '', SNAPSHOT_FILES.birdRoutes))
  const protocols = tryParse(() => parseBirdProtocols(text(SNAPSHOT_FILES.birdProtocols) ?? ''))
  const otherNextHops = [
    ...new Set(
      protocols
        .filter(
          (p) =>
            p.proto.toUpperCase() === 'BGP' &&
            isEstablished(p) &&
            (p.routes?.imported ?? 0) > 0 &&
            p.neighborAddress !== undefined,
        )
        .map((p) => p.neighborAddress!),
    ),
  ]
  const addresses = new Set<string>(otherNextHops)
  for (const p of paths) if (p.bgpNextHop !== undefined) addresses.add(p.bgpNextHop)
  if (target.address !== undefined) addresses.add(target.address)
  // BIRD's answer to an address is the prefix that holds it, whose routes the kernel is asked for too
  const prefixes = new Set<string>(paths.map((p) => p.prefix))
  if (target.prefix !== undefined) prefixes.add(target.prefix)
  const [files, kernel] = await Promise.all([rest, collectKernelRoutes([...prefixes], [...addresses])])
  files.unshift(kernel)
  return {files, origin: {kind: 'live', collectedAt: new Date().toISOString(), host: os.hostname()}, otherNextHops}
}

function tryParse<T>(parse: () => T[]): T[] {
  try {
    return parse()
  } catch {
    return []
  }
}

async function collectKernelRoutes(prefixes: string[], addresses: string[]): Promise<SourceFile> {
  const t0 = performance.now()
  const file: SourceFile = {
    name: SNAPSHOT_FILES.ipRouteJson,
    command:
      `rtnetlink route dump (IPv4, every table), kept: the local table, the routes at ${prefixes.join(', ') || 'no prefix'}` +
      ` and those holding ${addresses.join(', ') || 'no address'}`,
  }
  try {
    const {openRouteClient} = await import('../netlink/client.js')
    const {ipRouteJsonText, kernelRoutesFor} = await import('../netlink/routes-for.js')
    const client = await openRouteClient()
    try {
      file.text = ipRouteJsonText(await kernelRoutesFor(client, {prefixes, addresses}))
      file.exitStatus = 0
    } finally {
      client.close()
    }
  } catch {
    // no rtnetlink here (the binding did not load): the whole table from iproute2, as a full collection reads it
    const {collectIp} = await import('../collect/live.js')
    return collectIp(SNAPSHOT_FILES.ipRouteJson, ['-j', '-d', 'route', 'show', 'table', 'all'])
  }
  file.durationMs = Math.round(performance.now() - t0)
  return file
}
