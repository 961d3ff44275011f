// calico/nodes.json in both shapes: kubectl's List of v1 Nodes (--calico DIR, older bundles) and the
// PartialObjectMetadataList --kube asks for; each parses to the same nodes, and a wrong shape names file and line.
import {describe, expect, it} from 'vitest'

import {parseCalicoTruth} from '../../src/parse/calico.js'
import {FIXTURE_CLUSTER, truthTexts} from './truth.js'

const asMetadata = (listText: string): string => {
  const list = JSON.parse(listText) as {items: Array<{metadata: unknown}>}
  return JSON.stringify({
    kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: {resourceVersion: '42'},
    items: list.items.map((n) => ({kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: n.metadata})),
  }, null, 4)
}
const nodes = (text: string) =>
  parseCalicoTruth([{name: 'calico/nodes.json', text}]).nodes.map(({pos, ...n}) => ({...n, line: pos.line}))

describe('calico/nodes.json', () => {
  const list = truthTexts({nodes: FIXTURE_CLUSTER})['nodes.json']

  it('a List of Nodes and a PartialObjectMetadataList give the same nodes', () => {
    const full = nodes(list)
    expect(full.map((n) => [n.name, n.ipv4Address])).toEqual(FIXTURE_CLUSTER.map((n) => [n.name, n.address]))
    const partial = nodes(asMetadata(list))
    const unplaced = (ns: typeof full) => ns.map((n) => ({...n, line: undefined}))
    expect(unplaced(partial)).toEqual(unplaced(full))
    // each node cites its own item's line
    expect(new Set(partial.map((n) => n.line)).size).toBe(partial.length)
    expect(partial[1].line).toBeGreaterThan(partial[0].line)
  })

  it('a NodeList (the API server\'s kind) parses as a List', () => {
    expect(nodes(JSON.stringify({...JSON.parse(list), kind: 'NodeList'}))).toHaveLength(FIXTURE_CLUSTER.length)
  })

  it('a metadata list of other items, or of another group, is an error naming the file, the line and the item', () => {
    const text = asMetadata(list)
    expect(() => nodes(text.replace('"kind": "PartialObjectMetadata",', '"kind": "Node",')))
      .toThrow(/^calico\/nodes\.json:\d+: expected a PartialObjectMetadata, found "n1: Node"$/)
    expect(() => nodes(text.replace('"apiVersion": "meta.k8s.io/v1",\n            "metadata"', '"apiVersion": "v1",\n            "metadata"')))
      .toThrow(/^calico\/nodes\.json:\d+: expected apiVersion meta\.k8s\.io\/v1, found "n1: v1"$/)
    // a List's Node items stay Nodes
    expect(() => nodes(list.replace('"kind": "Node"', '"kind": "PartialObjectMetadata"')))
      .toThrow(/^calico\/nodes\.json:\d+: expected a Node, found "n1: PartialObjectMetadata"$/)
    expect(() => nodes('{"kind": "Node", "metadata": {}}'))
      .toThrow(/^calico\/nodes\.json:1: expected a List of Node or a PartialObjectMetadataList \(kubectl get … -o json\)/)
  })

  it('only nodes.json may be metadata: a PartialObjectMetadataList of IPAMBlocks is refused', () => {
    const blocks = truthTexts({nodes: FIXTURE_CLUSTER})['ipamblocks.json']
    const text = JSON.stringify({...JSON.parse(blocks), kind: 'PartialObjectMetadataList'})
    expect(() => parseCalicoTruth([{name: 'calico/ipamblocks.json', text}]))
      .toThrow(/^calico\/ipamblocks\.json:1: expected a List of IPAMBlock, found "PartialObjectMetadataList"$/)
  })
})
