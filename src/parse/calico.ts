// Calico's cluster truth: `kubectl get RESOURCE -o json` Lists (DESIGN §3 `calico/*.json`) -> CalicoTruth.
// Both API groups: crd.projectcalico.org/v1 (BlockAffinity spec.deleted a string) and projectcalico.org/v3.
import {ParseError} from '../model/errors.js'
import {
  blockSizeProblem,
  CALICO_DIR,
  type BgpPeer,
  type BlockAffinity,
  type CalicoNode,
  type CalicoTruth,
  type ClusterRoutesSetting,
  type IpamBlock,
} from '../model/calico.js'
import {canonicalAddress, canonicalPrefix, ipv4Text, ipv4Value} from '../model/prefix.js'
import type {Pool, SourcePos} from '../model/types.js'
import {isRecord} from './ip-common.js'

const CALICO_GROUPS = ['crd.projectcalico.org/v1', 'projectcalico.org/v3']

// Nodes come as kubectl lists them (a List of v1 Nodes) or as --kube asks for them: metadata only, a
// PartialObjectMetadataList of meta.k8s.io/v1 PartialObjectMetadata (a Node's name and annotations are all it reads)
const METADATA_LIST = 'PartialObjectMetadataList'
const METADATA = {kind: 'PartialObjectMetadata', groups: ['meta.k8s.io/v1']}

const KINDS: Record<string, {kind: string; groups: string[]; metadataOnly?: boolean}> = {
  'ippools.json': {kind: 'IPPool', groups: CALICO_GROUPS},
  'ipamblocks.json': {kind: 'IPAMBlock', groups: CALICO_GROUPS},
  'blockaffinities.json': {kind: 'BlockAffinity', groups: CALICO_GROUPS},
  'nodes.json': {kind: 'Node', groups: ['v1'], metadataOnly: true},
  'bgpconfigurations.json': {kind: 'BGPConfiguration', groups: CALICO_GROUPS},
  'bgppeers.json': {kind: 'BGPPeer', groups: CALICO_GROUPS},
  'felixconfigurations.json': {kind: 'FelixConfiguration', groups: CALICO_GROUPS},
}

export interface CalicoText {
  name: string // `calico/ipamblocks.json`
  text: string
}

interface Item {
  value: Record<string, unknown>
  pos: SourcePos
  name: string
}

/** The truth of the given files (any subset of the seven); a file that is not what it should be is a ParseError. */
export function parseCalicoTruth(files: CalicoText[]): CalicoTruth {
  const truth: CalicoTruth = {
    files: [],
    pools: [],
    blocks: [],
    affinities: [],
    nodes: [],
    felixClusterRoutes: [],
    birdClusterRoutes: [],
    peers: [],
  }
  for (const f of files) {
    const base = f.name.startsWith(CALICO_DIR) ? f.name.slice(CALICO_DIR.length) : f.name
    const expected = KINDS[base]
    if (!expected) continue
    truth.files.push(f.name)
    for (const item of listItems(f.text, f.name, expected, truth)) {
      const spec = isRecord(item.value.spec) ? item.value.spec : {}
      switch (expected.kind) {
        case 'IPPool': truth.pools.push(pool(item, spec)); break
        case 'IPAMBlock': truth.blocks.push(block(item, spec)); break
        case 'BlockAffinity': truth.affinities.push(affinity(item, spec)); break
        case 'Node': truth.nodes.push(node(item)); break
        case 'BGPConfiguration': {
          const s = setting(item, spec)
          if (s) truth.birdClusterRoutes.push(s)
          if (item.name === 'default' && typeof spec.nodeToNodeMeshEnabled === 'boolean')
            truth.nodeToNodeMesh = spec.nodeToNodeMeshEnabled
          break
        }
        case 'FelixConfiguration': {
          const s = setting(item, spec)
          if (s) truth.felixClusterRoutes.push(s)
          break
        }
        case 'BGPPeer': truth.peers.push(peer(item, spec)); break
      }
    }
  }
  return truth
}

function fail(item: Item, expected: string, found: unknown): never {
  throw new ParseError(
    item.pos.file,
    item.pos.line,
    expected,
    `${item.name}: ${typeof found === 'string' ? found : (JSON.stringify(found) ?? 'nothing')}`,
  )
}

function cidrOf(item: Item, value: unknown, field: string): string {
  const cidr = typeof value === 'string' && value.includes('/') ? canonicalPrefix(value) : undefined
  if (cidr === undefined) fail(item, `${field} to be a CIDR`, value)
  return cidr
}

function pool(item: Item, spec: Record<string, unknown>): Pool {
  const cidr = cidrOf(item, spec.cidr, 'spec.cidr')
  const on = (m: unknown) => m === 'Always' || m === 'CrossSubnet'
  const mode = on(spec.ipipMode) ? 'ipip' : on(spec.vxlanMode) ? 'vxlan' : 'none'
  const p: Pool = {cidr, mode, origin: 'calico', name: item.name, pos: item.pos}
  if (mode === 'ipip' && spec.ipipMode === 'CrossSubnet') p.crossSubnet = true
  if (spec.blockSize !== undefined) {
    const problem = blockSizeProblem(spec.blockSize, cidr)
    if (problem !== undefined) fail(item, problem, spec.blockSize)
    p.blockSize = spec.blockSize as number
  }
  return p
}

function block(item: Item, spec: Record<string, unknown>): IpamBlock {
  const cidr = cidrOf(item, spec.cidr, 'spec.cidr')
  const affinity = typeof spec.affinity === 'string' ? spec.affinity : undefined
  const affinityNode = affinity?.startsWith('host:') ? affinity.slice(5) : undefined
  const b: IpamBlock = {
    name: item.name,
    cidr,
    deleted: spec.deleted === true || spec.deleted === 'true',
    borrowed: [],
    pos: item.pos,
  }
  if (affinityNode) b.affinityNode = affinityNode
  // a borrowed address: allocated to a workload on another node than the block's affine one
  const allocations = Array.isArray(spec.allocations) ? spec.allocations : []
  const attributes = Array.isArray(spec.attributes) ? spec.attributes : []
  const base = ipv4Value(cidr.slice(0, cidr.indexOf('/')))
  if (base < 0 || affinityNode === undefined) return b
  for (let i = 0; i < allocations.length; i++) {
    const at = allocations[i]
    if (typeof at !== 'number') continue
    const attr = attributes[at]
    const secondary = isRecord(attr) && isRecord(attr.secondary) ? attr.secondary : undefined
    const used = typeof secondary?.node === 'string' ? secondary.node : undefined
    if (used === undefined || used === affinityNode || secondary?.type === 'ipipTunnelAddress') continue
    b.borrowed.push({
      address: ipv4Text(base + i), node: used,
      ...(isRecord(attr) && typeof attr.handle_id === 'string' ? {handle: attr.handle_id} : {}),
      ...(typeof secondary?.pod === 'string' ? {pod: `${String(secondary.namespace ?? '')}/${secondary.pod}`} : {}),
    })
  }
  return b
}

function affinity(item: Item, spec: Record<string, unknown>): BlockAffinity {
  const cidr = cidrOf(item, spec.cidr, 'spec.cidr')
  if (typeof spec.node !== 'string' || spec.node === '') fail(item, 'spec.node to name a node', spec.node)
  const d = spec.deleted
  // v1 writes spec.deleted as a string, v3 as a bool
  if (d !== undefined && typeof d !== 'boolean' && d !== 'true' && d !== 'false')
    fail(item, 'spec.deleted to be true or false', d)
  return {
    name: item.name,
    cidr,
    node: spec.node,
    state: typeof spec.state === 'string' ? spec.state : 'confirmed',
    deleted: d === true || d === 'true',
    pos: item.pos,
  }
}

function node(item: Item): CalicoNode {
  const metadata = isRecord(item.value.metadata) ? item.value.metadata : {}
  const ann = isRecord(metadata.annotations) ? metadata.annotations : {}
  const n: CalicoNode = {name: item.name, pos: item.pos}
  const v4 = ann['projectcalico.org/IPv4Address']
  if (v4 !== undefined) {
    const text = typeof v4 === 'string' ? v4 : ''
    const address = canonicalAddress(text.split('/')[0])
    if (address === undefined || (text.includes('/') && canonicalPrefix(text) === undefined))
      fail(item, 'annotation projectcalico.org/IPv4Address to be an address or CIDR', v4)
    n.ipv4Address = address
    n.ipv4Cidr = text
  }
  const tunnel = ann['projectcalico.org/IPv4IPIPTunnelAddr']
  if (typeof tunnel === 'string' && canonicalAddress(tunnel)) n.tunnelAddress = canonicalAddress(tunnel)
  return n
}

function setting(item: Item, spec: Record<string, unknown>): ClusterRoutesSetting | undefined {
  const value = spec.programClusterRoutes
  if (value === undefined) return undefined
  if (typeof value !== 'string' || !['Enabled', 'Disabled', 'EnabledIPIPOnly', 'EnabledNoEncapOnly'].includes(value)) {
    fail(item, 'spec.programClusterRoutes to be Enabled, Disabled, EnabledIPIPOnly or EnabledNoEncapOnly', value)
  }
  return {value, name: item.name, pos: item.pos}
}

function peer(item: Item, spec: Record<string, unknown>): BgpPeer {
  const p: BgpPeer = {name: item.name, pos: item.pos}
  if (spec.peerIP !== undefined) {
    // `10.0.0.1`, or `10.0.0.1:179`
    const address =
      typeof spec.peerIP === 'string'
        ? canonicalAddress(spec.peerIP.replace(/^\[?([^\]]+?)\]?(:\d+)?$/, '$1'))
        : undefined
    if (address === undefined) fail(item, 'spec.peerIP to be an address', spec.peerIP)
    p.peerIP = address
  }
  if (typeof spec.node === 'string') p.node = spec.node
  return p
}

/**
 * The items of a List of the expected kind (or, where metadata suffices, of a PartialObjectMetadataList); anything
 * else is a ParseError naming the file and the item.
 */
function listItems(text: string, file: string, expected: (typeof KINDS)[string], truth: CalicoTruth): Item[] {
  const {kind} = expected
  const lists = `a List of ${kind}${expected.metadataOnly ? ` or a ${METADATA_LIST}` : ''}`
  let root: unknown
  try {
    root = JSON.parse(text)
  } catch (error) {
    const m = /position (\d+)/.exec((error as Error).message)
    throw new ParseError(
      file,
      m ? lineAt(text, Number(m[1])) : 1,
      `kubectl -o json output (${an(kind)}List)`,
      (error as Error).message,
    )
  }
  if (!isRecord(root) || !Array.isArray(root.items))
    throw new ParseError(
      file,
      1,
      `${lists} (kubectl get … -o json)`,
      JSON.stringify(isRecord(root) ? (root.kind ?? Object.keys(root).join(',')) : root),
    )
  const partial = expected.metadataOnly === true && root.kind === METADATA_LIST
  if (typeof root.kind === 'string' && root.kind !== 'List' && root.kind !== `${kind}List` && !partial)
    throw new ParseError(file, 1, lists, root.kind)
  // a metadata list's items are metadata; a List's, whole objects
  const {kind: itemKind, groups} = partial ? METADATA : expected
  const spans = itemSpans(text)
  return root.items.map((value, i) => {
    const span = spans[i] ?? {line: 1, endLine: 1}
    const pos = {file, line: span.line, endLine: span.endLine}
    const metadata = isRecord(value) && isRecord(value.metadata) ? value.metadata : {}
    const item: Item = {
      value: isRecord(value) ? value : {},
      pos,
      name: typeof metadata.name === 'string' ? metadata.name : `items[${i}]`,
    }
    if (!isRecord(value)) fail(item, `${an(itemKind)} object`, value)
    if (value.kind !== undefined && value.kind !== itemKind) fail(item, an(itemKind), value.kind)
    const group = value.apiVersion
    if (group !== undefined && (typeof group !== 'string' || !groups.includes(group)))
      fail(item, `apiVersion ${groups.join(' or ')}`, group)
    if (group !== undefined && kind !== 'Node') truth.apiGroup ??= group as string
    return item
  })
}

/** `a BGPPeer`, `an IPPool`: the kinds' leading capitals are read as letters (I-P-Pool, I-P-A-M-Block). */
function an(kind: string): string {
  return `${/^[AEIOU]/.test(kind) ? 'an' : 'a'} ${kind}`
}

function lineAt(text: string, offset: number): number {
  let line = 1
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) line++
  return line
}

/**
 * The line spans of the elements of the root object's `items` array, by one scan of the text (JSON.parse gives
 * values, not positions). Assumes the text is valid JSON (parsed before).
 */
export function itemSpans(text: string): Array<{line: number; endLine: number}> {
  const spans: Array<{line: number; endLine: number}> = []
  let depth = 0
  let line = 1
  let inItems = false
  let start = 0
  let lastKey = ''
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 10) line++
    else if (c === 34) {
      // a string: to its closing quote; at depth 1 remember it as a possible key
      let j = i + 1
      while (j < text.length && text.charCodeAt(j) !== 34) j += text.charCodeAt(j) === 92 ? 2 : 1
      if (depth === 1) lastKey = text.slice(i + 1, j)
      for (let k = i + 1; k < j; k++) if (text.charCodeAt(k) === 10) line++
      i = j
    } else if (c === 123 || c === 91) {
      if (depth === 1 && c === 91 && lastKey === 'items') inItems = true
      else if (inItems && depth === 2) start = line
      depth++
    } else if (c === 125 || c === 93) {
      depth--
      if (inItems && depth === 2) spans.push({line: start, endLine: line})
      if (inItems && depth === 1) inItems = false
    } else if (inItems && depth === 2 && c > 32 && c !== 44) {
      // a scalar element (not an object): its own line
      let j = i
      while (j < text.length && !',]\n'.includes(text[j])) j++
      spans.push({line, endLine: line})
      i = j - 1
    }
  }
  return spans
}
