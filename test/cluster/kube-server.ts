// A stand-in for the Kubernetes API server (the one part that cannot run here): the paths --kube reads (discovery,
// Calico's resources, Nodes) answered from recorded Lists, over TLS with a certificate made here and a bearer token,
// as a cluster would. The client under test is the real one.
import {readFileSync, writeFileSync} from 'node:fs'
import {createServer, type Server} from 'node:https'
import path from 'node:path'

import {execa} from 'execa'

import {FIXTURE_CLUSTER, truthTexts, type Group} from './truth.js'

export const KUBE_TOKEN = 'rd-test-token-3f9a'
const KINDS: Record<string, string> = {
  ippools: 'IPPool', ipamblocks: 'IPAMBlock', blockaffinities: 'BlockAffinity', bgpconfigurations: 'BGPConfiguration', bgppeers: 'BGPPeer', felixconfigurations: 'FelixConfiguration',
}

export interface KubeRequest {method: string; url: string; auth?: string; accept?: string}

export class KubeServer {
  requests: KubeRequest[] = []
  served: Group[] = ['crd.projectcalico.org/v1']
  metadataServed = true // false: a server that cannot answer Nodes as metadata only (the plain List instead)
  hang = false // true: a server that takes requests and never answers them
  answers: Record<string, string> = {} // a path's answer (200, JSON) in place of its List: what does not parse
  port = 0
  private server: Server | undefined

  private constructor(private readonly dir: string) {}

  /** Certificates made in `dir`; not listening until listen(). */
  static async make(dir: string): Promise<KubeServer> {
    await execa('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=routedoctor-test-apiserver',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')])
    return new KubeServer(dir)
  }

  /** Listens on `port` (0: any free one). */
  async listen(port = 0): Promise<void> {
    const tls = {key: readFileSync(path.join(this.dir, 'key.pem')), cert: readFileSync(path.join(this.dir, 'cert.pem'))}
    this.server = createServer(tls, (req, res) => {
      this.requests.push({method: req.method ?? '', url: req.url ?? '', auth: req.headers.authorization, accept: req.headers.accept})
      if (this.hang) return
      const json = (status: number, body: unknown, type = 'application/json') => {
        res.writeHead(status, {'content-type': type})
        res.end(JSON.stringify(body))
      }
      if (req.headers.authorization !== `Bearer ${KUBE_TOKEN}`) return json(401, {kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'Unauthorized', code: 401})
      const url = new URL(req.url ?? '/', 'https://x')
      if (this.answers[url.pathname] !== undefined) {
        res.writeHead(200, {'content-type': 'application/json'})
        return res.end(this.answers[url.pathname])
      }
      if (url.pathname === '/apis') {
        return json(200, {kind: 'APIGroupList', apiVersion: 'v1', groups: this.served.map((g) => {
          const [name, version] = g.split('/')
          return {name, versions: [{groupVersion: g, version}], preferredVersion: {groupVersion: g, version}}
        })})
      }
      const texts = truthTexts({nodes: FIXTURE_CLUSTER, group: this.served[0]})
      if (url.pathname === '/api/v1/nodes') {
        // what an API server does: the first media type of the Accept list it can serve
        const nodes = JSON.parse(texts['nodes.json']) as {items: Array<{metadata: Record<string, unknown>}>}
        const managedFields = [{manager: 'kubelet', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: {'f:status': {}}}]
        const wanted = (req.headers.accept ?? '').split(',')[0]
        if (this.metadataServed && wanted === 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1') {
          return json(200, {kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: {resourceVersion: '42'},
            items: nodes.items.map((n) => ({kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: {...n.metadata, managedFields}}))}, wanted)
        }
        return json(200, {...nodes, kind: 'NodeList', items: nodes.items.map((n) => ({...n, metadata: {...n.metadata, managedFields}}))})
      }
      const m = /^\/apis\/([^/]+\/[^/]+)\/([a-z]+)$/.exec(url.pathname)
      if (m && this.served.includes(m[1] as Group) && texts[`${m[2]}.json`]) {
        const list = JSON.parse(texts[`${m[2]}.json`])
        return json(200, {...list, apiVersion: m[1], kind: `${KINDS[m[2]]}List`})
      }
      json(404, {kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404})
    })
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve))
    this.port = (this.server.address() as {port: number}).port
  }

  async close(): Promise<void> {
    const server = this.server
    this.server = undefined
    if (server) await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
  }

  /** A kubeconfig for https://127.0.0.1:PORT with this server's CA and `token`. */
  kubeconfig(token = KUBE_TOKEN, port = this.port): string {
    const file = path.join(this.dir, `kubeconfig-${token}-${port}`)
    const ca = readFileSync(path.join(this.dir, 'cert.pem')).toString('base64')
    writeFileSync(file, [
      'apiVersion: v1', 'kind: Config', 'current-context: test',
      'clusters:', `- name: test`, `  cluster: {server: "https://127.0.0.1:${port}", certificate-authority-data: ${ca}}`,
      'users:', `- name: reader`, `  user: {token: ${token}}`,
      'contexts:', '- name: test', '  context: {cluster: test, user: reader}', '',
    ].join('\n'))
    return file
  }
}
