// watch re-reads Calico's truth every minute and diagnoses the whole node when it changed: a Node's status (its
// heartbeat, every few minutes on every node) and resourceVersions change the files, not what a diagnosis reads.
import {describe, expect, it} from 'vitest'

import {type ClusterTruth, parseTruthFiles, truthMeaning} from '../../src/services/load.js'
import {truthTexts} from '../cluster/truth.js'

const spec = {nodes: [{name: 'n1', address: '172.31.10.4', blocks: ['192.168.162.128/26']}, {name: 'n2', address: '172.31.20.5', blocks: ['192.168.110.128/26']}]}

function truthOf(texts: Record<string, string>): ClusterTruth {
  const files = Object.entries(texts).map(([name, text]) => ({name: `calico/${name}`, text}))
  return {files, truth: parseTruthFiles(files)}
}

/** nodes.json with each Node's status and the List's resourceVersion as a kubelet's heartbeat leaves them. */
function heartbeat(texts: Record<string, string>, at: string): Record<string, string> {
  const nodes = JSON.parse(texts['nodes.json'])
  nodes.metadata.resourceVersion = at
  for (const n of nodes.items) {
    n.metadata.resourceVersion = at
    n.status.conditions.push({type: 'Ready', status: 'True', lastHeartbeatTime: at, reason: 'KubeletReady'})
  }
  return {...texts, 'nodes.json': JSON.stringify(nodes, null, 4) + '\n'}
}

describe('what of Calico\'s truth counts as a change', () => {
  it('a heartbeat in every Node\'s status is no change, though every line after it moved', () => {
    const before = truthOf(truthTexts(spec))
    const after = truthOf(heartbeat(truthTexts(spec), '2026-12-05T18:00:00Z'))
    expect(after.files).not.toEqual(before.files)
    expect(truthMeaning(after)).toBe(truthMeaning(before))
  })

  it('a node\'s new address, a moved block or a new pool is a change', () => {
    const before = truthMeaning(truthOf(truthTexts(spec)))
    const moved = {nodes: [{...spec.nodes[0], blocks: []}, {...spec.nodes[1], blocks: [...spec.nodes[1].blocks, '192.168.162.128/26']}]}
    expect(truthMeaning(truthOf(truthTexts(moved)))).not.toBe(before)
    const readdressed = {nodes: [{...spec.nodes[0], address: '172.31.10.9'}, spec.nodes[1]]}
    expect(truthMeaning(truthOf(truthTexts(readdressed)))).not.toBe(before)
    expect(truthMeaning(truthOf(truthTexts({...spec, pools: [{cidr: '10.244.0.0/16'}]})))).not.toBe(before)
  })
})
