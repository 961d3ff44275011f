// Calico's cluster truth read live from the Kubernetes API (--kube): the same Lists `kubectl get RESOURCE -o json`
// writes, as `calico/*.json` sources. Read-only (list only). The client is loaded only here: the other commands
// and flags never pay for it. Credentials: kubeconfig (KUBECONFIG, ~/.kube/config) or the in-cluster service account.
import {existsSync} from 'node:fs'
import {homedir} from 'node:os'
import path from 'node:path'

import {RouteDoctorError} from '../model/errors.js'
import {CALICO_DIR} from '../model/calico.js'
import type {SourceFile} from '../model/types.js'

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token'

// resourceVersion=0: the API server answers from its watch cache, not with a quorum read of etcd; an agent on every
// node re-reads these every minute, and a list seconds old is as good
const ANY_VERSION = '0'

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

export async function readKubeTruth(): Promise<SourceFile[]> {
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
    const e = error as {code?: number; message?: string; body?: unknown}
    const status = e.code !== undefined ? `HTTP ${e.code}` : (e.message ?? String(error)).split('\n')[0]
    throw new RouteDoctorError(`--kube: ${server}: cannot list ${what} (${status})`, 2, 'E_KUBE')
  }
  const groups = await kc.makeApiClient(k8s.ApisApi).getAPIVersions().catch((error) => fail('the API groups', error))
  const {group, version} = calicoGroup(groups.groups.map((g) => g.name))
  const custom = kc.makeApiClient(k8s.CustomObjectsApi)
  const files: SourceFile[] = []
  for (const plural of CALICO_PLURALS) {
    const command = `GET /apis/${group}/${version}/${plural}`
    const started = Date.now()
    try {
      const list = await custom.listClusterCustomObject({group, version, plural, resourceVersion: ANY_VERSION})
      files.push({
        name: `${CALICO_DIR}${plural}.json`,
        text: JSON.stringify(list, null, 4) + '\n',
        command,
        durationMs: Date.now() - started,
      })
    } catch (error) {
      // a resource the cluster does not serve is a file that is not there; any other failure is said
      if ((error as {code?: number}).code === 404) continue
      fail(`${plural}.${group}`, error)
    }
  }
  const started = Date.now()
  const nodes = await kc
    .makeApiClient(k8s.CoreV1Api)
    .listNode({resourceVersion: ANY_VERSION})
    .catch((error) => fail('nodes', error))
  const list = {
    apiVersion: 'v1',
    kind: 'List',
    items: nodes.items.map((n) => ({apiVersion: 'v1', kind: 'Node', ...n})),
    metadata: {resourceVersion: nodes.metadata?.resourceVersion ?? ''},
  }
  files.push({
    name: `${CALICO_DIR}nodes.json`,
    text: JSON.stringify(list, null, 4) + '\n',
    command: 'GET /api/v1/nodes',
    durationMs: Date.now() - started,
  })
  return files
}
