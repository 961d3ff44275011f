// The fleet's join (DESIGN §9): each node's check, one node at a time, folded into a node × node matrix (from each
// node, the worst verdict of another node's blocks) and the cluster findings no single node can see. A node's
// diagnosis is dropped once folded: only its broken blocks are kept.
import {counted} from '../model/format.js'
import {indexOfKey, prefixKey} from '../model/prefix-key.js'
import {clusterIndex, type CalicoTruth, type ClusterIndex} from '../model/calico.js'
import {FELIX_PROTOCOL, type SnapshotIndex} from '../model/snapshot-index.js'
import type {Finding, Severity, Verdict} from '../model/types.js'
import {isBulkHealthyPrefixes, type CheckRun} from '../report/report.js'

export const FLEET_SCHEMA = 1

/** Worst first: the order a pair's verdict is chosen in (DESIGN §4's precedence). */
export const VERDICT_ORDER: Verdict[] = ['missing', 'unreachable', 'misrouted', 'not-tunneled', 'multipath-lost', 'ok']

export type ClusterFindingId =
  | 'owner-disagreement' | 'asymmetric-pair' | 'tunnel-mtu-differs' | 'hash-policy-differs'
  | 'bird-versions-mixed' | 'route-owners-mixed' | 'node-without-source' | 'source-not-in-truth'

export interface ClusterFinding {
  id: ClusterFindingId
  severity: Severity
  prefix?: string
  title: string
  detail: string
  nodes: string[]
}

export interface FleetBlock {
  prefix: string
  verdict: Verdict
  findings: Array<Pick<Finding, 'id' | 'severity' | 'title' | 'detail'> & {fix?: string}>
}

export interface FleetPair {
  from: string
  to: string
  verdict: Verdict
  checked: number // the to-node's blocks seen from the from-node
  ok: number
  blocks: FleetBlock[] // the blocks that are not ok
}

export interface FleetNode {
  name: string
  address?: string
  source?: string
  summary?: {
    prefixes: number
    errors: number
    warnings: number
    verdicts: Partial<Record<Verdict, number>>
    host: string[]
  }
  birdVersion?: string
  tunnelMtu?: number
  hashPolicy?: string
  routeOwner?: 'bird' | 'felix' | 'both' | 'none'
}

export interface FleetReport {
  schema: number
  nodes: FleetNode[]
  pairs: FleetPair[]
  findings: ClusterFinding[]
  truth: {files: string[]; apiGroup?: string} | null
}

// the blocks of a pair explained in full; beyond, a block keeps its verdict and finding ids
const EXPLAINED_PER_PAIR = 50

const SEVERITY: Record<ClusterFindingId, Severity> = {
  'owner-disagreement': 'error',
  'asymmetric-pair': 'warning',
  'tunnel-mtu-differs': 'warning',
  'hash-policy-differs': 'warning',
  'bird-versions-mixed': 'info',
  'route-owners-mixed': 'warning',
  'node-without-source': 'warning',
  'source-not-in-truth': 'warning',
}

const worse = (a: Verdict, b: Verdict): Verdict => (VERDICT_ORDER.indexOf(a) <= VERDICT_ORDER.indexOf(b) ? a : b)

/**
 * Each block's owner by the truth, by the block's key (model/prefix-key.ts prefixKey): bulk-healthy runs come as keys.
 */
export class BlockOwners {
  private readonly keys: Float64Array // ascending
  private readonly names: string[]

  constructor(index: ClusterIndex | undefined) {
    const owned = index ? [...index.owners.values()].filter((o) => o.node !== undefined && o.block !== undefined)
      .map((o) => [prefixKey(o.cidr), o.node!] as const).sort((a, b) => a[0] - b[0]) : []
    this.keys = Float64Array.from(owned, (o) => o[0])
    this.names = owned.map((o) => o[1])
  }

  /** The owner of the block with this key, by binary search; undefined when it is no block of the truth. */
  ofKey(key: number): string | undefined {
    const at = indexOfKey(this.keys, key)
    return at < 0 ? undefined : this.names[at]
  }
}

/**
 * One node's part of the join, made of its check alone: plain data (no class, no view into the node's texts), so a
 * worker thread can send it as it is. `pairs` are this node's, `endpoints` where it sends the blocks it does not
 * find ok, both in the order its check gave them.
 */
export interface NodeFold {
  facts: Pick<FleetNode, 'birdVersion' | 'tunnelMtu' | 'hashPolicy' | 'routeOwner' | 'summary'>
  tunnelDev: string // the device tunnelMtu is of (--tunnel-dev, or what a bundle recorded)
  pairs: FleetPair[]
  endpoints: Array<[prefix: string, where: string]>
}

/** Node `name`'s fold of its check (consumed here) over its SnapshotIndex. */
export function foldNode(name: string, ctx: SnapshotIndex, run: CheckRun, owners: BlockOwners): NodeFold {
  const s = ctx.snapshot
  const facts: NodeFold['facts'] = {}
  if (s.bird.status?.version) facts.birdVersion = own(s.bird.status.version)
  const mtu = ctx.links.get(s.tunnelDev)?.mtu
  if (mtu !== undefined) facts.tunnelMtu = mtu
  const hash = ctx.sysctlValue('net.ipv4.fib_multipath_hash_policy')?.value.trim()
  if (hash !== undefined) facts.hashPolicy = own(hash)
  facts.routeOwner = routeOwner(ctx)
  const mine = new Map<string, FleetPair>() // this node's pairs by the to-node
  const endpoints: NodeFold['endpoints'] = []
  let last: FleetPair | undefined
  const pairOf = (to: string): FleetPair => {
    if (last?.to === to) return last
    let p = mine.get(to)
    if (!p) mine.set(to, (p = {from: name, to, verdict: 'ok', checked: 0, ok: 0, blocks: []}))
    return (last = p)
  }
  for (const l of run.lines) {
    if (isBulkHealthyPrefixes(l)) {
      for (let j = l.from; j < l.to; j++) {
        const to = owners.ofKey(l.keys[j])
        if (to === undefined || to === name) continue
        const p = pairOf(to)
        p.checked++
        p.ok++
      }
      continue
    }
    const to = owners.ofKey(prefixKey(l.prefix))
    if (to === undefined || to === name) continue
    const p = pairOf(to)
    p.checked++
    // local: another node's block held here as this node's own (misrouted when the truth is known)
    const verdict: Verdict = l.verdict === 'local' ? 'misrouted' : l.verdict === 'not-in-pool' ? 'ok' : l.verdict
    if (verdict === 'ok') {
      p.ok++
      continue
    }
    p.verdict = worse(p.verdict, verdict)
    const full = p.blocks.length < EXPLAINED_PER_PAIR
    const prefix = own(l.prefix)
    p.blocks.push({
      prefix,
      verdict,
      findings: l.findings.map((f) =>
        full
          ? {
              id: f.id,
              severity: f.severity,
              title: own(f.title),
              detail: own(f.detail),
              ...(f.fix ? {fix: own(f.fix)} : {}),
            }
          : {id: f.id, severity: f.severity, title: own(f.title), detail: ''},
      ),
    })
    endpoints.push([prefix, own(endpointOf(ctx, l.prefix))])
  }
  const sum = run.summary()
  facts.summary = {
    prefixes: sum.prefixes,
    errors: sum.errors,
    warnings: sum.warnings,
    verdicts: sum.verdicts,
    host: run.host.findings.map((f) => f.id),
  }
  return {facts, tunnelDev: s.tunnelDev, pairs: [...mine.values()], endpoints}
}

export class FleetJoin {
  private readonly index?: ClusterIndex
  private readonly nodes = new Map<string, FleetNode>()
  private readonly pairs = new Map<string, FleetPair>() // `${from}\0${to}`
  // block -> endpoint (addresses it is routed to, sorted, joined) -> nodes, for the blocks some node routes elsewhere
  private readonly endpoints = new Map<string, Map<string, string[]>>()
  private readonly tunnelDevs = new Set<string>() // the sources' tunnel devices, for the words of tunnel-mtu-differs

  constructor(readonly truth: CalicoTruth | undefined) {
    if (truth) {
      this.index = clusterIndex(truth)
      for (const n of truth.nodes)
        this.nodes.set(n.name, {name: n.name, ...(n.ipv4Address ? {address: n.ipv4Address} : {})})
    }
  }

  /** Has a source already been folded in as this node? */
  has(name: string): boolean {
    return this.nodes.get(name)?.source !== undefined
  }

  /** Folds in node `name`'s fold (foldNode) of `source`; the nodes are folded in the order of their sources. */
  add(name: string, source: string, fold: NodeFold): void {
    const node: FleetNode = this.nodes.get(name) ?? {name}
    node.source = source
    const address = this.index?.nodesByName.get(name)?.ipv4Address
    if (address) node.address = address
    Object.assign(node, fold.facts)
    this.tunnelDevs.add(fold.tunnelDev)
    this.nodes.set(name, node)
    for (const p of fold.pairs) this.pairs.set(`${name}\0${p.to}`, p)
    for (const [prefix, where] of fold.endpoints) {
      let seen = this.endpoints.get(prefix)
      if (!seen) this.endpoints.set(prefix, (seen = new Map()))
      const list = seen.get(where)
      if (list) list.push(name)
      else seen.set(where, [name])
    }
  }

  finish(): FleetReport {
    const nodes = [...this.nodes.values()].sort((a, b) => a.name.localeCompare(b.name, 'en', {numeric: true}))
    const findings: ClusterFinding[] = []
    const add = (id: ClusterFindingId, f: Omit<ClusterFinding, 'id' | 'severity'>) =>
      findings.push({id, severity: SEVERITY[id], ...f})
    const withSource = nodes.filter((n) => n.source !== undefined)
    // pairs in matrix order; a node with a source sees every other node, even one without blocks
    const pairs: FleetPair[] = []
    for (const a of withSource) {
      for (const b of nodes) {
        if (a.name === b.name) continue
        pairs.push(
          this.pairs.get(`${a.name}\0${b.name}`) ?? {
            from: a.name,
            to: b.name,
            verdict: 'ok',
            checked: 0,
            ok: 0,
            blocks: [],
          },
        )
      }
    }
    // nodes that disagree about a block's owner: routing it to different places, or elsewhere than its owner
    for (const [prefix, seen] of this.endpoints) {
      const owner = this.index?.ownerOf(prefix)
      const wrong = [...seen].filter(([where]) => where !== '' && where !== owner?.address)
      if (wrong.length === 0) continue
      const routedElsewhere = new Set([...seen.values()].flat())
      const ok = withSource.filter((n) => n.name !== owner?.node && !routedElsewhere.has(n.name)).map((n) => n.name)
      // what each group does with the block: holds it as its own (a leftover blackhole), or routes it to an address
      const groups = wrong.map(([where, names], i) => {
        const it = i === 0 ? prefix : 'it'
        const one = names.length === 1
        const who = names.join(', ')
        if (where === 'this node') return `${who} ${one ? 'treats' : 'treat'} ${it} as ${one ? 'its' : 'their'} own block`
        const to = where.split(' ').map((a) => {
          const n = this.index?.nodesByAddress.get(a)
          return n ? `${a} (${n.name})` : a
        })
        return `${who} ${one ? 'routes' : 'route'} ${it} to ${to.join(' and ')}`
      })
      const ownerAddress = owner?.address ? ` (${owner.address})` : ''
      const ipam = owner?.node ? `IPAM says ${owner.node}${ownerAddress}` : 'IPAM names no owner'
      add('owner-disagreement', {
        prefix,
        title: `${groups.join('; ')}; ${ipam}`,
        detail: `${counted(wrong.flatMap(([, n]) => n).length, 'node sends', 'nodes send')} ${prefix}'s traffic elsewhere than ` +
          `${owner?.node ? `its owner ${owner.node}` : 'the others'}` +
          (ok.length > 0 ? `; ${counted(ok.length, 'routes', 'route')} it to ${owner?.address ?? 'its owner'}` : '') + ' (node#1032, calico#6486).',
        nodes: wrong.flatMap(([, n]) => n),
      })
    }
    // asymmetric pairs: one direction broken, the other fine
    const byKey = new Map(pairs.map((p) => [`${p.from}\0${p.to}`, p]))
    for (const p of pairs) {
      const back = byKey.get(`${p.to}\0${p.from}`)
      if (p.verdict === 'ok' || !back || back.verdict !== 'ok' || back.checked === 0 && p.checked === 0) continue
      add('asymmetric-pair', {
        title: `${p.from} → ${p.to} is ${p.verdict}, ${p.to} → ${p.from} is ok`,
        detail: `From ${p.from}, ${p.checked === 1 ? `${p.to}'s one block is` : `${p.blocks.length} of ${p.to}'s ${p.checked} blocks ${p.blocks.length === 1 ? 'is' : 'are'}`} broken (${p.blocks
          .slice(0, 3)
          .map((b) => `${b.prefix} ${b.verdict}`)
          .join(', ')}); the way back works. Replies to connections ${p.to} opens can be lost.`,
        nodes: [p.from, p.to],
      })
    }
    differing(
      withSource,
      (n) => n.tunnelMtu?.toString(),
      (values) =>
        add('tunnel-mtu-differs', {
          title: `${[...this.tunnelDevs].join('/')} MTU differs between nodes: ${values}`,
          detail:
            'Pods on nodes with the larger MTU send packets that the smaller tunnel drops or fragments (calico#8953, #7651).',
          nodes: withSource.map((n) => n.name),
        }),
    )
    differing(
      withSource,
      (n) => n.hashPolicy,
      (values) =>
        add('hash-policy-differs', {
          title: `net.ipv4.fib_multipath_hash_policy differs between nodes: ${values}`,
          detail: 'Tunnelled traffic spreads over ECMP links on some nodes and not on others.',
          nodes: withSource.map((n) => n.name),
        }),
    )
    differing(
      withSource,
      (n) => n.birdVersion,
      (values) =>
        add('bird-versions-mixed', {
          title: `Mixed BIRD versions: ${values}`,
          detail:
            'Nodes run different BIRD versions: the fix that works on one (the kernel filter, onlink) may not on another.',
          nodes: withSource.map((n) => n.name),
        }),
    )
    differing(
      withSource,
      (n) => (n.routeOwner === 'none' ? undefined : n.routeOwner),
      (values) =>
        add('route-owners-mixed', {
          title: `IP-in-IP routes are programmed by different owners on different nodes: ${values}`,
          detail:
            'BIRD (proto bird) on some nodes, Felix (proto 80) on others: programClusterRoutes differs per node, or a node was upgraded without the other.',
          nodes: withSource.map((n) => n.name),
        }),
    )
    for (const n of nodes) {
      if (n.source === undefined)
        add('node-without-source', {
          title: `${n.name} is in Calico's truth but no source was given for it`,
          detail: `Nothing is known of how ${n.name} routes; the others' routes to it are still checked.`,
          nodes: [n.name],
        })
      else if (this.index && !this.index.nodesByName.has(n.name))
        add('source-not-in-truth', {
          title: `${n.name} (${n.source}) is no Node of Calico's truth`,
          detail:
            'Its name is not a Kubernetes Node: give --node NAME when collecting, or check the truth is of this cluster.',
          nodes: [n.name],
        })
    }
    return {
      schema: FLEET_SCHEMA,
      nodes,
      pairs,
      findings,
      truth: this.truth
        ? {files: this.truth.files, ...(this.truth.apiGroup ? {apiGroup: this.truth.apiGroup} : {})}
        : null,
    }
  }
}

/**
 * A copy of a string kept past its node that shares no memory with the node's texts: V8 makes a substring of 13 or
 * more characters (and a concatenation of them) a view into the string it was cut from, which then stays alive whole.
 */
function own(s: string): string {
  return s.length < 13 ? s : Buffer.from(s, 'utf8').toString('utf8')
}

/** When the nodes that have a value do not all have the same one: "n1, n2: 1480; n3: 1440". */
function differing(
  nodes: FleetNode[],
  value: (n: FleetNode) => string | undefined,
  report: (values: string) => void,
): void {
  const groups = new Map<string, string[]>()
  for (const n of nodes) {
    const v = value(n)
    if (v === undefined) continue
    const list = groups.get(v)
    if (list) list.push(n.name)
    else groups.set(v, [n.name])
  }
  if (groups.size > 1)
    report(
      [...groups]
        .map(
          ([v, names]) =>
            `${names.length > 5 ? `${names.slice(0, 5).join(', ')} and ${names.length - 5} more` : names.join(', ')}: ${v}`,
        )
        .join('; '),
    )
}

/**
 * Where a node sends a prefix: the tunnel endpoints of the route in force, else BIRD's BGP next hops ('' for nowhere).
 */
function endpointOf(ctx: SnapshotIndex, prefix: string): string {
  const facts = ctx.facts(prefix)
  const r = facts.effective
  if (facts.local) return 'this node'
  if (r && r.type === 'unicast' && r.nexthops.every((n) => n.dev === ctx.snapshot.tunnelDev)) {
    return r.nexthops.map((n) => n.gateway?.address ?? '').filter(Boolean).sort().join(' ')
  }
  return [...facts.bgpNextHops].sort().join(' ')
}

/**
 * Who programs this node's IP-in-IP block routes: BIRD (proto bird, and the routes reported in bulk), Felix (proto 80).
 */
function routeOwner(ctx: SnapshotIndex): FleetNode['routeOwner'] {
  let bird = (ctx.snapshot.healthy?.keys.length ?? 0) > 0
  let felix = false
  const dev = ctx.snapshot.tunnelDev
  for (const r of ctx.snapshot.kernelRoutes) {
    if (
      r.type !== 'unicast' ||
      r.nexthops.length === 0 ||
      r.nexthops.some((n) => n.dev !== dev) ||
      ctx.poolOf(r.dst)?.mode !== 'ipip'
    )
      continue
    if (r.protocol === 'bird') bird = true
    else if (r.protocol === FELIX_PROTOCOL) felix = true
    if (bird && felix) break
  }
  return bird && felix ? 'both' : bird ? 'bird' : felix ? 'felix' : 'none'
}
