// Calico's cluster truth (DESIGN §3 `calico/*.json`): which node owns each block, each node's address, and
// who programs cluster routes. Either API group parses to these shapes; every object cites its item's lines.
import type {Pool, SourcePos} from './types.js'

/** Calico's default spec.blockSize: an IPv4 pool's blocks are /26, an IPv6 pool's /122. */
export const DEFAULT_BLOCK_SIZE = {inet: 26, inet6: 122} as const

/** The prefix length of `pool`'s blocks. */
export function blockSizeOf(pool: Pool): number {
  return pool.blockSize ?? DEFAULT_BLOCK_SIZE[pool.cidr.includes(':') ? 'inet6' : 'inet']
}

/**
 * Calico's range for spec.blockSize (20-32 for IPv4, 116-128 for IPv6), and not wider than the pool: the message
 * of what was expected, or undefined when `value` is one.
 */
export function blockSizeProblem(value: unknown, cidr: string): string | undefined {
  const v6 = cidr.includes(':')
  const [min, max] = v6 ? [116, 128] : [20, 32]
  const poolLength = Number(cidr.slice(cidr.indexOf('/') + 1))
  const low = Math.max(min, poolLength)
  if (Number.isInteger(value) && (value as number) >= low && (value as number) <= max) return undefined
  return `spec.blockSize to be a block prefix length ${low}-${max} (Calico's range for ${v6 ? 'IPv6' : 'IPv4'}, within the pool)`
}

/** The seven `kubectl get RESOURCE -o json` files, as named under `calico/` in a snapshot. */
export const CALICO_FILES = [
  'ippools.json', 'ipamblocks.json', 'blockaffinities.json', 'nodes.json',
  'bgpconfigurations.json', 'bgppeers.json', 'felixconfigurations.json',
] as const

/** The snapshot file recording which Kubernetes node it is (`bundle --node`); one line. */
export const NODE_NAME_FILE = 'node-name.txt'

/** A snapshot file name of the truth: `calico/ipamblocks.json`. */
export const CALICO_DIR = 'calico/'

export type AffinityState = 'confirmed' | 'pending' | 'pendingDeletion'

export interface BlockAffinity {
  name: string
  cidr: string // canonical
  node: string
  state: AffinityState | string
  deleted: boolean
  pos: SourcePos
}

export interface BlockAllocation {
  address: string // the block's address at that ordinal
  node?: string // secondary.node of its attributes: the node the address is used on
  handle?: string
  pod?: string
}

export interface IpamBlock {
  name: string
  cidr: string // canonical
  affinityNode?: string // `host:<node>`; absent for none or `virtual:…`
  deleted: boolean
  borrowed: BlockAllocation[] // addresses used on another node than the block's (borrowed IPs)
  pos: SourcePos
}

export interface CalicoNode {
  name: string
  ipv4Address?: string // the address of `projectcalico.org/IPv4Address`, without its length
  ipv4Cidr?: string // the annotation as written, e.g. 10.2.0.50/19
  tunnelAddress?: string // projectcalico.org/IPv4IPIPTunnelAddr
  pos: SourcePos
}

export type ProgramClusterRoutes = 'Enabled' | 'Disabled' | 'EnabledIPIPOnly' | 'EnabledNoEncapOnly'

export interface ClusterRoutesSetting {
  value: ProgramClusterRoutes | string
  name: string // the resource's name (`default`, `node.n1`)
  pos: SourcePos
}

export interface BgpPeer {
  name: string
  peerIP?: string
  node?: string
  pos: SourcePos
}

export interface CalicoTruth {
  files: string[] // the calico/ files it was read from
  apiGroup?: string // crd.projectcalico.org/v1 or projectcalico.org/v3 (the first seen)
  pools: Pool[]
  blocks: IpamBlock[]
  affinities: BlockAffinity[]
  nodes: CalicoNode[]
  felixClusterRoutes: ClusterRoutesSetting[] // FelixConfiguration spec.programClusterRoutes where set
  birdClusterRoutes: ClusterRoutesSetting[] // BGPConfiguration spec.programClusterRoutes where set
  nodeToNodeMesh?: boolean // BGPConfiguration default's nodeToNodeMeshEnabled
  peers: BgpPeer[]
}

/** Who a block belongs to by the truth: IPAMBlock's affinity host, else its one confirmed affinity. */
export interface BlockOwner {
  cidr: string
  node?: string // undefined: nobody (no block, or conflicting affinities without one)
  address?: string // the owner's IPv4Address
  block?: IpamBlock
  affinities: BlockAffinity[] // not deleted, of any state
}

/** Indices over a CalicoTruth: blocks by CIDR, nodes by name and address. Pure. */
export class ClusterIndex {
  readonly nodesByName = new Map<string, CalicoNode>()
  readonly nodesByAddress = new Map<string, CalicoNode>()
  readonly owners = new Map<string, BlockOwner>() // every block or affinity CIDR
  private ownerKeyList?: number[]

  constructor(readonly truth: CalicoTruth) {
    for (const n of truth.nodes) {
      this.nodesByName.set(n.name, n)
      if (n.ipv4Address) this.nodesByAddress.set(n.ipv4Address, n)
    }
    for (const b of truth.blocks) if (!b.deleted) this.ownerEntry(b.cidr).block = b
    for (const a of truth.affinities) if (!a.deleted) this.ownerEntry(a.cidr).affinities.push(a)
    for (const o of this.owners.values()) {
      const confirmed = o.affinities.filter((a) => a.state === 'confirmed')
      o.node = o.block ? o.block.affinityNode : confirmed.length === 1 ? confirmed[0].node : undefined
      if (o.node !== undefined) o.address = this.nodesByName.get(o.node)?.ipv4Address
    }
  }

  private ownerEntry(cidr: string): BlockOwner {
    let o = this.owners.get(cidr)
    if (!o) this.owners.set(cidr, (o = {cidr, affinities: []}))
    return o
  }

  ownerOf(cidr: string): BlockOwner | undefined {
    return this.owners.get(cidr)
  }

  /** The keys of `owners`' CIDRs (`keyOf`: model/prefix-key.ts prefixKey), computed once. */
  ownerKeys(keyOf: (cidr: string) => number): number[] {
    return (this.ownerKeyList ??= [...this.owners.keys()].map(keyOf))
  }
}

/**
 * Which Kubernetes node a snapshot is: named, else the Node whose IPv4Address is one of the host's addresses, else the
 * host.
 */
export function nodeNameOf(
  truth: CalicoTruth | undefined,
  named: string | undefined,
  addresses: Iterable<string>,
  host: string | undefined,
): string | undefined {
  if (named) return named
  if (truth) {
    const own = new Set(addresses)
    const node = truth.nodes.find((n) => n.ipv4Address !== undefined && own.has(n.ipv4Address))
    if (node) return node.name
  }
  return host
}

/** Does a FelixConfiguration/BGPConfiguration value program IP-in-IP routes? */
export function programsIpip(value: string): boolean {
  return value === 'Enabled' || value === 'EnabledIPIPOnly'
}

/** One ClusterIndex per truth: a fleet's nodes share theirs. */
const indices = new WeakMap<CalicoTruth, ClusterIndex>()

export function clusterIndex(truth: CalicoTruth): ClusterIndex {
  let index = indices.get(truth)
  if (index === undefined) indices.set(truth, (index = new ClusterIndex(truth)))
  return index
}

/**
 * What the truth says of a prefix key for the bulk separation: the BGP next hop it wants (null: none is right), and its
 * owner.
 */
interface BulkTruth {
  want: string | null
  node?: string
}

const bulkTruths = new WeakMap<ClusterIndex, Map<number, BulkTruth>>()

/**
 * For the bulk separation of healthy prefixes (bulk/healthy.ts): which prefix keys the truth forbids reporting in bulk
 * with BGP next hop `hop`: a block whose owner's address is not `hop`, this node's own block, a block whose
 * affinities conflict or that has no IPAMBlock, a borrowed address. The rules read those.
 */
export function truthForbidsBulk(
  index: ClusterIndex,
  nodeName: string | undefined,
  keyOf: (prefix: string) => number,
): (key: number, hop: string) => boolean {
  let keys = bulkTruths.get(index)
  if (keys === undefined) {
    keys = new Map()
    for (const o of index.owners.values()) {
      const confirmed = o.affinities.filter((a) => a.state === 'confirmed').length
      const leftovers = o.affinities.some((a) => a.state !== 'confirmed')
      const odd = o.block === undefined || confirmed > 1 || leftovers || o.node === undefined
      if (odd) keys.set(keyOf(o.cidr), {want: null})
      else if (o.address !== undefined) keys.set(keyOf(o.cidr), {want: o.address, node: o.node})
    }
    for (const b of index.truth.blocks) for (const a of b.borrowed) keys.set(keyOf(`${a.address}/32`), {want: null})
    bulkTruths.set(index, keys)
  }
  const known = keys
  return (key, hop) => {
    const t = known.get(key)
    return t !== undefined && (t.want === null || t.want !== hop || t.node === nodeName)
  }
}

/** The Calico API group a --kube read found, kept for the next read (the agent's): discovered again on a 404. */
export interface CalicoGroupMemo {
  found?: {group: string; version: string}
}
