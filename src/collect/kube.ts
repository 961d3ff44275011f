// Calico's cluster truth read live from the Kubernetes API (--kube): the same Lists `kubectl get RESOURCE -o json`
// writes, as `calico/*.json` sources. Read-only (list only). The client is loaded only here: the other commands
// and flags never pay for it. Credentials: kubeconfig (KUBECONFIG, ~/.kube/config) or the in-cluster service account.
import {existsSync} from 'node:fs'
import {homedir} from 'node:os'
import path from 'node:path'

import {KubeRequestError, RouteDoctorError} from '../model/errors.js'
import {CALICO_DIR, type CalicoGroupMemo} from '../model/calico.js'
import type {SourceFile} from '../model/types.js'

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token'

// resourceVersion=0: the API server answers from its watch cache, not with a quorum read of etcd; an agent on every
// node re-reads these, and a list seconds old is as good
const ANY_VERSION = '0'

// Nodes as metadata only (routedoctor reads a Node's name and annotations, not its status), as client-go's metadata
// client asks; a server that cannot serve that form answers the plain List of the trailing `application/json`
export const NODE_METADATA_ACCEPT =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json'

// a server that accepts the connection and never answers ends the read, not the agent's reading of it
const REQUEST_TIMEOUT_MS = 30_000

export const CALICO_PLURALS = [
  'ippools',
  'ipamblocks',
  'blockaffinities',
  'bgpconfigurations',
  'bgppeers',
  'felixconfigurations',
] as const

/**
 * Which Calico API group the cluster serves (libcalico-go's rule): CALICO_API_GROUP, else v3 only when v1 is not
 * served.
 */
export function calicoGroup(served: string[], env = process.env.CALICO_API_GROUP): {group: string; version: string} {
  if (env) {
    const [group, version = group === 'projectcalico.org' ? 'v3' : 'v1'] = env.split('/')
    return {group, version}
  }
  if (served.includes('projectcalico.org') && !served.includes('crd.projectcalico.org'))
    return {group: 'projectcalico.org', version: 'v3'}
  return {group: 'crd.projectcalico.org', version: 'v1'}
}

/**
 * Calico's resources and the Nodes, as `kubectl get -o json` Lists; `signal` ends the requests under way. With
 * `memo`, the group the last read found is listed without discovery; a 404 there (Calico's API server installed or
 * removed since) discovers again and lists anew.
 */
export async function readKubeTruth(signal?: AbortSignal, memo?: CalicoGroupMemo): Promise<SourceFile[]> {
  const k8s = await import('@kubernetes/client-node')
  const kc = new k8s.KubeConfig()
  // without any, the client falls back to http://localhost:8080 and fails there with a message about TLS
  const kubeconfig = path.join(process.env.HOME || homedir(), '.kube', 'config')
  if (!process.env.KUBECONFIG && !existsSync(kubeconfig) && !existsSync(SERVICE_ACCOUNT_TOKEN)) {
    throw new RouteDoctorError(
      `--kube: no kubeconfig (KUBECONFIG is not set, ${kubeconfig} does not exist) and no ` +
        `in-cluster service account (${SERVICE_ACCOUNT_TOKEN}); or give --calico DIR`,
      2,
      'E_KUBE',
    )
  }
  try {
    kc.loadFromDefault()
  } catch (error) {
    throw new RouteDoctorError(
      `--kube: cannot load a kubeconfig or the in-cluster service account (${(error as Error).message})`,
      2,
      'E_KUBE',
    )
  }
  const server = kc.getCurrentCluster()?.server
  if (!server)
    throw new RouteDoctorError(
      '--kube: no cluster in the kubeconfig (set KUBECONFIG, or run in a pod with a service account)',
      2,
      'E_KUBE',
    )
  const fail = (what: string, error: unknown): never => {
    const e = error as {code?: number; message?: string; name?: string}
    const status =
      e.code !== undefined ? `HTTP ${e.code}`
      : e.name === 'AbortError' ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`
      : (e.message ?? String(error)).split('\n')[0]
    throw new KubeRequestError(`--kube: ${server}: cannot list ${what} (${status})`)
  }
  const timeout = timeoutOptions(k8s.Observable, signal)
  // (the request object first: options in its place are taken for it, and the call would have no timeout)
  const discover = async () =>
    process.env.CALICO_API_GROUP
      ? calicoGroup([])
      : calicoGroup(
          (
            await kc
              .makeApiClient(k8s.ApisApi)
              .getAPIVersions({}, timeout)
              .catch((error) => fail('the API groups', error))
          ).groups.map((g) => g.name),
        )
  const custom = kc.makeApiClient(k8s.CustomObjectsApi)
  // the group kept from the last read is listed without discovery; its first 404 (Calico's API server installed or
  // removed since) discovers again, and lists anew if the group changed
  let discovered = memo?.found === undefined || Boolean(process.env.CALICO_API_GROUP)
  let {group, version} = discovered ? await discover() : memo!.found!
  const files: SourceFile[] = []
  for (let i = 0; i < CALICO_PLURALS.length; i++) {
    const plural = CALICO_PLURALS[i]
    const command = `GET /apis/${group}/${version}/${plural}`
    const started = Date.now()
    try {
      const list = await custom.listClusterCustomObject({group, version, plural, resourceVersion: ANY_VERSION}, timeout)
      files.push({
        name: `${CALICO_DIR}${plural}.json`,
        path: answerOf(server, `${plural}.${group}`, `${plural}.json`),
        text: listText(list),
        command,
        durationMs: Date.now() - started,
      })
    } catch (error) {
      // a resource the cluster does not serve is a file that is not there; any other failure is said
      if ((error as {code?: number}).code !== 404) fail(`${plural}.${group}`, error)
      if (discovered) continue
      discovered = true
      const now = await discover()
      if (now.group === group && now.version === version) continue
      ;({group, version} = now)
      files.length = 0
      i = -1
    }
  }
  if (memo) memo.found = {group, version}
  const started = Date.now()
  const nodes = await kc
    .makeApiClient(k8s.CoreV1Api)
    .listNode({resourceVersion: ANY_VERSION}, k8s.setHeaderOptions('Accept', NODE_METADATA_ACCEPT, timeout))
    .catch((error) => fail('nodes', error))
  // the client reads either answer as a NodeList: a PartialObjectMetadataList keeps its kind and its items' kinds
  const partial = nodes.kind === 'PartialObjectMetadataList'
  const list = {
    apiVersion: partial ? 'meta.k8s.io/v1' : 'v1',
    kind: partial ? 'PartialObjectMetadataList' : 'List',
    items: nodes.items.map((n) => (partial ? n : {apiVersion: 'v1', kind: 'Node', ...n})),
    metadata: {resourceVersion: nodes.metadata?.resourceVersion ?? ''},
  }
  files.push({
    name: `${CALICO_DIR}nodes.json`,
    path: answerOf(server, 'nodes', 'nodes.json'),
    text: listText(list),
    command: 'GET /api/v1/nodes (metadata only)',
    durationMs: Date.now() - started,
  })
  return files
}

/**
 * Request options that give up on an answer after REQUEST_TIMEOUT_MS, or once `signal` aborts (the client's
 * middleware, applied to a call).
 */
function timeoutOptions(Observable: typeof import('@kubernetes/client-node').Observable, signal?: AbortSignal) {
  return {
    middleware: [{
      pre: (request: import('@kubernetes/client-node').RequestContext) => {
        const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS)
        request.setSignal(signal ? AbortSignal.any([signal, timeout]) : timeout)
        return new Observable(Promise.resolve(request))
      },
      post: (response: import('@kubernetes/client-node').ResponseContext) => new Observable(Promise.resolve(response)),
    }],
    middlewareMergeStrategy: 'append' as const,
  }
}

/**
 * What a parse error names for an answer: the server, the resource and the file it is written as (the line is of
 * that file, as a snapshot or bundle holds it), not a snapshot's own calico/ file.
 */
function answerOf(server: string, resource: string, file: string): string {
  return `--kube: ${server}: ${resource}, as ${CALICO_DIR}${file}`
}

/** A List as `kubectl get -o json` writes it: without the objects' managedFields (kubectl hides them too). */
function listText(list: unknown): string {
  return JSON.stringify(list, (key, value: unknown) => (key === 'managedFields' ? undefined : value), 4) + '\n'
}
