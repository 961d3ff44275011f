// What one --kube read costs the API server (docs/watch.md, "The API server's load"): the size of each object as the
// server sends it (compact JSON, managedFields included), for objects shaped as on real clusters: a worker with 50
// images, 12 labels and Calico's annotations; a /26 IPAMBlock with 30 pods. Estimates, not a capture of a cluster.
// node bench/kube-objects.mjs [NODES…]
const ts = '2026-11-02T09:14:51Z'
const mf = (manager, op, sub, fields) => ({manager, operation: op, apiVersion: 'v1', time: ts, fieldsType: 'FieldsV1', ...(sub ? {subresource: sub} : {}), fieldsV1: fields})
const name = 'ip-10-2-14-137.eu-west-1.compute.internal'
const labels = {'beta.kubernetes.io/arch': 'amd64', 'beta.kubernetes.io/instance-type': 'm6i.2xlarge', 'beta.kubernetes.io/os': 'linux',
  'failure-domain.beta.kubernetes.io/region': 'eu-west-1', 'failure-domain.beta.kubernetes.io/zone': 'eu-west-1b', 'kubernetes.io/arch': 'amd64',
  'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'node.kubernetes.io/instance-type': 'm6i.2xlarge',
  'topology.kubernetes.io/region': 'eu-west-1', 'topology.kubernetes.io/zone': 'eu-west-1b', 'node-role.kubernetes.io/worker': ''}
const annotations = {'kubeadm.alpha.kubernetes.io/cri-socket': 'unix:///run/containerd/containerd.sock', 'node.alpha.kubernetes.io/ttl': '0',
  'projectcalico.org/IPv4Address': '10.2.14.137/19', 'projectcalico.org/IPv4IPIPTunnelAddr': '192.168.57.128',
  'volumes.kubernetes.io/controller-managed-attach-detach': 'true'}
const fLabels = Object.fromEntries(Object.keys(labels).map((k) => [`f:${k}`, {}]))
const managedFields = [
  mf('kubeadm', 'Update', null, {'f:metadata': {'f:annotations': {'f:kubeadm.alpha.kubernetes.io/cri-socket': {}}}}),
  mf('kubelet', 'Update', null, {'f:metadata': {'f:annotations': {'.': {}, 'f:volumes.kubernetes.io/controller-managed-attach-detach': {}}, 'f:labels': {'.': {}, ...fLabels}}}),
  mf('kube-controller-manager', 'Update', null, {'f:metadata': {'f:annotations': {'f:node.alpha.kubernetes.io/ttl': {}}}, 'f:spec': {'f:podCIDR': {}, 'f:podCIDRs': {'.': {}, 'v:"10.244.7.0/24"': {}}}}),
  mf('calico-node', 'Update', 'status', {'f:metadata': {'f:annotations': {'f:projectcalico.org/IPv4Address': {}, 'f:projectcalico.org/IPv4IPIPTunnelAddr': {}}}, 'f:status': {'f:conditions': {'k:{"type":"NetworkUnavailable"}': {'.': {}, 'f:lastHeartbeatTime': {}, 'f:lastTransitionTime': {}, 'f:message': {}, 'f:reason': {}, 'f:status': {}, 'f:type': {}}}}}),
  mf('kubelet', 'Update', 'status', {'f:status': {'f:allocatable': {'f:ephemeral-storage': {}, 'f:memory': {}}, 'f:capacity': {'f:ephemeral-storage': {}, 'f:memory': {}},
    'f:conditions': Object.fromEntries(['DiskPressure', 'MemoryPressure', 'PIDPressure', 'Ready'].map((t) => [`k:{"type":"${t}"}`, {'f:lastHeartbeatTime': {}, 'f:lastTransitionTime': {}, 'f:message': {}, 'f:reason': {}, 'f:status': {}}])),
    'f:images': {}, 'f:nodeInfo': {'f:bootID': {}, 'f:kernelVersion': {}, 'f:osImage': {}}}}),
]
const metadata = {name, uid: 'd1f6a0c2-6a3b-4c1e-9a0f-5b7e2c9d8e41', resourceVersion: '918273645', creationTimestamp: ts, labels, annotations, managedFields}
const images = Array.from({length: 50}, (_, i) => ({names: [`registry.example.com/team-${i % 7}/service-${i}@sha256:${'a'.repeat(64)}`, `registry.example.com/team-${i % 7}/service-${i}:v1.${i}.3`], sizeBytes: 123456789 + i}))
const cond = (type, status, reason, message) =>
  ({type, status, lastHeartbeatTime: ts, lastTransitionTime: ts, reason, message})
const node = {metadata, spec: {podCIDR: '10.244.7.0/24', podCIDRs: ['10.244.7.0/24'], providerID: `aws:///eu-west-1b/i-0abc123def4567890`},
  status: {capacity: {cpu: '8', 'ephemeral-storage': '104845292Ki', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0', memory: '32408536Ki', pods: '110'},
    allocatable: {cpu: '7910m', 'ephemeral-storage': '95551679740', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0', memory: '31391704Ki', pods: '110'},
    conditions: [cond('NetworkUnavailable', 'False', 'CalicoIsUp', 'Calico is running on this node'), cond('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
      cond('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'), cond('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'), cond('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status')],
    addresses: [{type: 'InternalIP', address: '10.2.14.137'}, {type: 'Hostname', address: name}, {type: 'InternalDNS', address: name}],
    daemonEndpoints: {kubeletEndpoint: {Port: 10250}},
    nodeInfo: {machineID: 'ec2'.padEnd(32, '0'), systemUUID: 'ec2'.padEnd(36, '0'), bootID: 'b'.repeat(36), kernelVersion: '6.1.112-122.189.amzn2023.x86_64', osImage: 'Amazon Linux 2023', containerRuntimeVersion: 'containerd://1.7.22', kubeletVersion: 'v1.31.2', kubeProxyVersion: 'v1.31.2', operatingSystem: 'linux', architecture: 'amd64'},
    images}}
const partial = {kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata}
const pods = 30
const attributes = [{handle_id: `ipip-tunnel-addr-${name}`, secondary: {node: name, type: 'ipipTunnelAddress'}},
  ...Array.from({length: pods}, (_, i) => ({handle_id: `k8s-pod-network.${'0123456789abcdef'.repeat(4)}`, secondary: {namespace: `team-${i % 7}`, node: name, pod: `service-${i}-7d9c8b6f5d-x${i}k2p`, timestamp: '2026-11-02 09:20:11.123456789 +0000 UTC'}}))]
const allocations = Array.from({length: 64}, (_, i) => (i <= pods ? i : null))
const bmf = [{manager: 'Go-http-client', operation: 'Update', apiVersion: 'crd.projectcalico.org/v1', time: ts, fieldsType: 'FieldsV1', fieldsV1: {'f:spec': {'.': {}, 'f:affinity': {}, 'f:allocations': {}, 'f:attributes': {}, 'f:cidr': {}, 'f:deleted': {}, 'f:sequenceNumber': {}, 'f:sequenceNumberForAllocation': {}, 'f:strictAffinity': {}, 'f:unallocated': {}}}}]
const block = {apiVersion: 'crd.projectcalico.org/v1', kind: 'IPAMBlock', metadata: {name: '192-168-57-128-26', uid: 'u'.repeat(36), resourceVersion: '918273001', generation: 40, creationTimestamp: ts, annotations: {'projectcalico.org/metadata': '{"creationTimestamp":null}'}, managedFields: bmf},
  spec: {cidr: '192.168.57.128/26', affinity: `host:${name}`, strictAffinity: false, deleted: false, allocations, unallocated: Array.from({length: 64 - pods - 1}, (_, i) => pods + 1 + i), attributes, sequenceNumber: 1730538000000000000, sequenceNumberForAllocation: Object.fromEntries(Array.from({length: pods + 1}, (_, i) => [String(i), 1730538000000000000 + i]))}}
const affinity = {apiVersion: 'crd.projectcalico.org/v1', kind: 'BlockAffinity', metadata: {name: `${name}-192-168-57-128-26`, uid: 'u'.repeat(36), resourceVersion: '918273002', generation: 1, creationTimestamp: ts, annotations: {'projectcalico.org/metadata': '{"creationTimestamp":null}'}, labels: {'projectcalico.org/cidr': '192-168-57-128-26', 'projectcalico.org/node': name}, managedFields: [{manager: 'Go-http-client', operation: 'Update', apiVersion: 'crd.projectcalico.org/v1', time: ts, fieldsType: 'FieldsV1', fieldsV1: {'f:spec': {'.': {}, 'f:cidr': {}, 'f:deleted': {}, 'f:node': {}, 'f:state': {}}}}]},
  spec: {cidr: '192.168.57.128/26', deleted: 'false', node: name, state: 'confirmed'}}
const len = (o) => Buffer.byteLength(JSON.stringify(o))
const sizes = {node: len(node), partial: len(partial), block: len(block), affinity: len(affinity)}
for (const [what, bytes] of Object.entries(sizes)) console.log(`${what.padEnd(9)} ${bytes} bytes`)
// one block per node (up to 64 pods a node); pools and configurations a few KB in all
const read = (n, nodeBytes) => n * (nodeBytes + sizes.block + sizes.affinity)
const mb = (b) => (b >= 1e9 ? `${(b / 1e9).toPrecision(2)} GB` : `${(b / 1e6).toPrecision(3)} MB`)
console.log('nodes  one read  all agents  per s at 300 s  whole Nodes per s at 60 s')
for (const n of (process.argv.length > 2 ? process.argv.slice(2) : ['50', '500', '2000']).map(Number)) {
  const now = read(n, sizes.partial)
  console.log(`${String(n).padEnd(6)} ${mb(now).padEnd(9)} ${mb(n * now).padEnd(11)} ${mb((n * now) / 300).padEnd(15)} ` +
    `${mb((n * read(n, sizes.node)) / 60)}`)
}
