// --kube against the test's own HTTPS server: the one part that cannot run here is a Kubernetes API server, so this
// test serves the API paths routedoctor reads (discovery, Calico's resources, Nodes) from recorded Lists, over TLS
// with a self-signed certificate made here and a bearer token, as a cluster would. The client is the real one.
import {existsSync, mkdtempSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {execa} from 'execa'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {BIN, ROOT} from '../helpers.js'
import {fixtureDir, LAB_HEALTHY} from '../diagnose/helpers.js'
import {KUBE_TOKEN as TOKEN, KubeServer} from './kube-server.js'
import type {Group} from './truth.js'

describe('--kube reads Calico\'s truth from the Kubernetes API', () => {
  let tmp: string
  let api: KubeServer

  beforeAll(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'rd-kube-'))
    api = await KubeServer.make(tmp)
    await api.listen()
  })
  afterAll(async () => {
    await api?.close()
    rmSync(tmp, {recursive: true, force: true})
  })

  const kubeconfig = (token: string) => api.kubeconfig(token)
  const rd = async (args: string[], token = TOKEN) => {
    const r = await execa('node', [BIN, ...args], {reject: false, cwd: ROOT, stdin: 'ignore', env: {NO_COLOR: '1', KUBECONFIG: kubeconfig(token), HOME: tmp}, extendEnv: false, timeout: 60_000})
    return {stdout: String(r.stdout), stderr: String(r.stderr), exitCode: r.exitCode ?? -1}
  }

  for (const group of ['crd.projectcalico.org/v1', 'projectcalico.org/v3'] as Group[]) {
    it(`reads every resource of the group served (${group}) with GETs only, and diagnoses as --calico does`, async () => {
      api.served = [group]
      api.requests = []
      const r = await rd(['check', '--from', fixtureDir(LAB_HEALTHY), '--kube', '--json'])
      expect(r.exitCode, r.stderr).toBe(0)
      const c = JSON.parse(r.stdout)
      expect(c.node.kubeNode).toBe('n1')
      expect(api.requests.every((q) => q.method === 'GET' && q.auth === `Bearer ${TOKEN}`)).toBe(true)
      const paths = api.requests.map((q) => q.url.split('?')[0])
      // every LIST is served from the API server's cache, not read from etcd (an agent on every node repeats them)
      for (const q of api.requests.filter((r) => r.url.startsWith('/api/v1/nodes') || /^\/apis\/[^/]+\/[^/]+\/[a-z]+/.test(r.url)))
        expect(new URL(q.url, 'https://x').searchParams.get('resourceVersion'), q.url).toBe('0')
      expect(paths).toEqual(
        expect.arrayContaining([
          '/apis',
          '/api/v1/nodes',
          ...['ippools', 'ipamblocks', 'blockaffinities', 'bgpconfigurations', 'bgppeers', 'felixconfigurations'].map(
            (p) => `/apis/${group}/${p}`,
          ),
        ]),
      )
      const ids = [
        ...c.prefixes.flatMap((p: {findings: Array<{id: string}>}) => p.findings.map((f) => f.id)),
        ...c.host.findings.map((f: {id: string}) => f.id),
      ]
      expect(ids.filter((id: string) => id.startsWith('block-') || id === 'node-address-mismatch')).toEqual([])
    }, 60_000)
  }

  it('a bundle with --kube carries the Lists under snapshot/calico/ and replays with them', async () => {
    api.served = ['crd.projectcalico.org/v1']
    const out = path.join(tmp, 'kube.tar.gz')
    const r = await rd(['bundle', '--from', fixtureDir(LAB_HEALTHY), '--kube', '--node', 'n1', '-o', out])
    expect(r.exitCode, r.stderr).toBe(0)
    const list = String((await execa('tar', ['tzf', out])).stdout).split('\n')
    expect(list).toEqual(expect.arrayContaining(['snapshot/calico/ipamblocks.json', 'snapshot/calico/nodes.json', 'snapshot/node-name.txt']))
    // the Nodes as asked for: metadata only, without the managedFields kubectl hides too
    const nodes = JSON.parse(String((await execa('tar', ['xzOf', out, 'snapshot/calico/nodes.json'])).stdout))
    expect(nodes).toMatchObject({kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1'})
    expect(nodes.items[0]).toMatchObject({kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: {name: 'n1'}})
    expect(nodes.items[0].metadata.annotations['projectcalico.org/IPv4Address']).toMatch(/^172\./)
    expect(JSON.stringify(nodes)).not.toMatch(/managedFields|"status"/)
    const replay = await rd(['check', '--from', out, '--json'], 'no-such-token')
    expect(JSON.parse(replay.stdout).node).toMatchObject({kubeNode: 'n1'})
  }, 60_000)

  for (const metadata of [true, false]) {
    it(`asks for the Nodes' metadata only; ${metadata ? 'a PartialObjectMetadataList' : 'a server that answers the whole NodeList'} diagnoses the same`, async () => {
      api.served = ['crd.projectcalico.org/v1']
      api.metadataServed = metadata
      api.requests = []
      try {
        const r = await rd(['check', '--from', fixtureDir(LAB_HEALTHY), '--kube', '--json'])
        expect(r.exitCode, r.stderr).toBe(0)
        const c = JSON.parse(r.stdout)
        // the node found by its IPv4Address annotation, and no finding from a node address misread
        expect(c.node.kubeNode).toBe('n1')
        expect(c.host.findings.map((f: {id: string}) => f.id)).not.toContain('node-address-mismatch')
        const nodes = api.requests.filter((q) => q.url.startsWith('/api/v1/nodes'))
        expect(nodes.map((q) => q.accept)).toEqual(['application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json'])
        // the Calico resources are asked for whole
        for (const q of api.requests.filter((x) => x.url.startsWith('/apis/crd.projectcalico.org/')))
          expect(q.accept, q.url).not.toMatch(/as=/)
      } finally {
        api.metadataServed = true
      }
    }, 60_000)
  }

  it('without a kubeconfig or a service account it says so, exit 2 (not the client\'s localhost:8080)', async ({skip}) => {
    if (existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')) skip('this runs in a pod: its service account')
    const r = await execa('node', [BIN, 'check', '--from', fixtureDir(LAB_HEALTHY), '--kube'],
      {reject: false, cwd: ROOT, stdin: 'ignore', env: {NO_COLOR: '1', HOME: tmp}, extendEnv: false, timeout: 60_000})
    expect(r.exitCode).toBe(2)
    expect(String(r.stderr)).toBe(`routedoctor: --kube: no kubeconfig (KUBECONFIG is not set, ${tmp}/.kube/config does not ` +
      'exist) and no in-cluster service account (/var/run/secrets/kubernetes.io/serviceaccount/token); or give --calico DIR')
  }, 60_000)

  it('a refused token is a clear error, exit 2', async () => {
    const r = await rd(['check', '--from', fixtureDir(LAB_HEALTHY), '--kube'], 'wrong-token')
    expect(r.exitCode).toBe(2)
    expect(r.stderr).toMatch(/^routedoctor: --kube: https:\/\/127\.0\.0\.1:\d+: cannot list the API groups \(HTTP 401\)$/m)
    expect(r.stderr).not.toMatch(/\n\s+at /)
  }, 60_000)

  it('an answer that is not a List of its kind names the server, the resource and what was expected (exit 2)', async () => {
    api.served = ['crd.projectcalico.org/v1']
    api.answers = {'/apis/crd.projectcalico.org/v1/ippools': JSON.stringify({kind: 'IPPoolList', apiVersion: 'crd.projectcalico.org/v1',
      items: [{kind: 'IPPool', metadata: {name: 'p1'}, spec: {cidr: 'nope'}}]})}
    try {
      // not the snapshot's own calico/ippools.json (--from): the answer came from the server
      const r = await rd(['check', '--from', fixtureDir(LAB_HEALTHY), '--kube'])
      expect(r.exitCode).toBe(2)
      expect(r.stderr).toBe(`routedoctor: --kube: https://127.0.0.1:${api.port}: ippools.crd.projectcalico.org, ` +
        'as calico/ippools.json:5: expected spec.cidr to be a CIDR, found "p1: nope"')
    } finally {
      api.answers = {}
    }
  }, 60_000)
})
