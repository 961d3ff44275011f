// Calico truth files as `kubectl get RESOURCE -o json` writes them, for a described cluster: tests write them to
// match a snapshot (the shared fixtures, the lab), then change one thing.
import {mkdirSync, writeFileSync} from 'node:fs'
import path from 'node:path'

export type Group = 'crd.projectcalico.org/v1' | 'projectcalico.org/v3'

export interface TruthNode {
  name: string
  address: string // projectcalico.org/IPv4Address without its length
  blocks: string[]
}

export interface TruthSpec {
  group?: Group
  pools?: Array<{cidr: string; ipipMode?: string}>
  nodes: TruthNode[]
  // extra affinities (a pending duplicate, an affinity without a block) and blocks without an affinity object
  affinities?: Array<{cidr: string; node: string; state?: string}>
  skipBlocks?: string[] // blocks whose IPAMBlock is left out (their affinities stay)
  borrowed?: Array<{block: string; ordinal: number; node: string; pod: string}>
  felix?: string // FelixConfiguration default programClusterRoutes
  bird?: string // BGPConfiguration default programClusterRoutes
}

const list = (kind: string, apiVersion: string, items: unknown[]) => JSON.stringify({apiVersion: 'v1', items, kind: 'List', metadata: {resourceVersion: ''}}, null, 4) + '\n'
const cidrName = (cidr: string) => cidr.replace(/[./:]/g, '-')

/** The seven files' texts, by file name. */
export function truthTexts(spec: TruthSpec): Record<string, string> {
  const g = spec.group ?? 'crd.projectcalico.org/v1'
  const v1 = g === 'crd.projectcalico.org/v1'
  const item = (kind: string, name: string, s: Record<string, unknown>) => ({apiVersion: g, kind, metadata: {name, resourceVersion: '1'}, spec: s})
  const pools = (spec.pools ?? [{cidr: '192.168.0.0/16'}]).map((p, i) => item('IPPool', `pool-${i}`, {cidr: p.cidr, blockSize: 26, ipipMode: p.ipipMode ?? 'Always', vxlanMode: 'Never', natOutgoing: true, nodeSelector: 'all()'}))
  const affinities: unknown[] = []
  const blocks: unknown[] = []
  const skip = new Set(spec.skipBlocks ?? [])
  for (const n of spec.nodes) {
    for (const b of n.blocks) {
      affinities.push(item('BlockAffinity', `${n.name}-${cidrName(b)}`, {cidr: b, deleted: v1 ? 'false' : false, node: n.name, state: 'confirmed'}))
      if (skip.has(b)) continue
      const size = 2 ** (32 - Number(b.split('/')[1]))
      const allocations: Array<number | null> = new Array(size).fill(null)
      const attributes: unknown[] = [{handle_id: `ipip-tunnel-addr-${n.name}`, secondary: {node: n.name, type: 'ipipTunnelAddress'}}]
      allocations[0] = 0
      for (const x of spec.borrowed ?? []) {
        if (x.block !== b) continue
        allocations[x.ordinal] = attributes.length
        attributes.push({handle_id: `k8s-pod-network.${x.pod}`, secondary: {namespace: 'default', node: x.node, pod: x.pod}})
      }
      blocks.push(item('IPAMBlock', cidrName(b), {cidr: b, affinity: `host:${n.name}`, strictAffinity: false, deleted: false, allocations, unallocated: [], attributes}))
    }
  }
  for (const a of spec.affinities ?? []) {
    affinities.push(item('BlockAffinity', `${a.node}-${cidrName(a.cidr)}`, {cidr: a.cidr, deleted: v1 ? 'false' : false, node: a.node, state: a.state ?? 'confirmed'}))
  }
  const nodes = spec.nodes.map((n) => ({
    apiVersion: 'v1', kind: 'Node',
    metadata: {name: n.name, annotations: {'projectcalico.org/IPv4Address': `${n.address}/24`, 'node.alpha.kubernetes.io/ttl': '0'}, labels: {'kubernetes.io/hostname': n.name}},
    status: {conditions: [{type: 'NetworkUnavailable', status: 'False', reason: 'CalicoIsUp'}]},
  }))
  const bgp = [item('BGPConfiguration', 'default', {nodeToNodeMeshEnabled: true, asNumber: 64512, ...(spec.bird ? {programClusterRoutes: spec.bird} : {})})]
  const felix = [item('FelixConfiguration', 'default', {...(spec.felix ? {programClusterRoutes: spec.felix} : {}), logSeverityScreen: 'Info'})]
  return {
    'ippools.json': list('IPPool', g, pools),
    'ipamblocks.json': list('IPAMBlock', g, blocks),
    'blockaffinities.json': list('BlockAffinity', g, affinities),
    'nodes.json': list('Node', 'v1', nodes),
    'bgpconfigurations.json': list('BGPConfiguration', g, bgp),
    'bgppeers.json': list('BGPPeer', g, []),
    'felixconfigurations.json': list('FelixConfiguration', g, felix),
  }
}

export function writeTruth(dir: string, spec: TruthSpec): string {
  mkdirSync(dir, {recursive: true})
  for (const [name, text] of Object.entries(truthTexts(spec))) writeFileSync(path.join(dir, name), text)
  return dir
}

/** The shared fixtures' cluster (test/fixtures/README.md): n1 is the node captured. */
export const FIXTURE_CLUSTER: TruthNode[] = [
  {name: 'n1', address: '172.31.10.4', blocks: ['192.168.162.128/26']},
  {name: 'n2', address: '172.31.20.5', blocks: ['192.168.110.128/26']},
  {name: 'n3', address: '172.31.30.6', blocks: ['192.168.82.0/26']},
]
