// deploy/: the kustomizations built (resources, generated ConfigMaps, namespace, labels, the overlay's JSON patches)
// and every object validated against the Kubernetes OpenAPI schemas (kubernetes-models; the Prometheus Operator's
// CRD schemas for ServiceMonitor and PrometheusRule), then what the issue asks of each checked. promtool checks
// and unit-tests the alert rules.
import {spawnSync} from 'node:child_process'
import {cpSync, existsSync, mkdirSync, readFileSync, symlinkSync} from 'node:fs'
import path from 'node:path'

import {execa} from 'execa'
import {describe, expect, it} from 'vitest'
import {parse, parseAllDocuments} from 'yaml'
import {ClusterRole} from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole'
import {ClusterRoleBinding} from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding'
import {DaemonSet} from 'kubernetes-models/apps/v1/DaemonSet'
import {ConfigMap} from 'kubernetes-models/v1/ConfigMap'
import {Namespace} from 'kubernetes-models/v1/Namespace'
import {ResourceQuota} from 'kubernetes-models/v1/ResourceQuota'
import {Service} from 'kubernetes-models/v1/Service'
import {ServiceAccount} from 'kubernetes-models/v1/ServiceAccount'
import {PrometheusRule} from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule'
import {ServiceMonitor} from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor'

import {agentMetrics, VERDICTS} from '../../src/agent/metrics.js'
import {DEFAULT_PORT, parseListen, serve} from '../../src/agent/server.js'
import {emptyState} from '../../src/agent/state.js'
import type {WatchAgent} from '../../src/agent/watch.js'
import {CALICO_PLURALS} from '../../src/collect/kube.js'
import {SEVERITY} from '../../src/diagnose/rule.js'
import {hostRules} from '../../src/diagnose/rules/index.js'
import {ROOT, tempDir} from '../helpers.js'

const DEPLOY = path.join(ROOT, 'deploy')
type Obj = {
  apiVersion: string
  kind: string
  metadata: {name: string; namespace?: string; labels?: Record<string, string>}
  [k: string]: unknown
}

const MODELS: Record<string, new (o: never) => {validate(): void}> = {
  'v1/Namespace': Namespace, 'v1/ResourceQuota': ResourceQuota, 'v1/ServiceAccount': ServiceAccount, 'v1/Service': Service, 'v1/ConfigMap': ConfigMap,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole, 'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'apps/v1/DaemonSet': DaemonSet,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor, 'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
}
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding'])

/** A JSON pointer's parent and last key; `-` appends. */
function applyPatch(target: Obj, ops: Array<{op: string; path: string; value: unknown}>): void {
  for (const op of ops) {
    expect(op.op, 'the overlay only adds').toBe('add')
    const keys = op.path.split('/').slice(1).map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'))
    const last = keys.pop()!
    let at: any = target
    for (const k of keys) {
      expect(at[k], `${op.path}: ${k} exists`).toBeDefined()
      at = at[k]
    }
    if (Array.isArray(at)) at.splice(last === '-' ? at.length : Number(last), 0, op.value)
    else at[last] = op.value
  }
}

/** kustomize build of `dir`, for the features deploy/ uses. */
function build(dir: string): Obj[] {
  const k = parse(readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8'))
  const out: Obj[] = []
  for (const r of k.resources ?? []) {
    const p = path.join(dir, r)
    if (existsSync(path.join(p, 'kustomization.yaml'))) out.push(...build(p))
    else for (const d of parseAllDocuments(readFileSync(p, 'utf8'))) out.push(d.toJS() as Obj)
  }
  for (const g of k.configMapGenerator ?? []) {
    expect(k.generatorOptions?.disableNameSuffixHash, 'names stable for the DaemonSet and node-problem-detector').toBe(true)
    const data: Record<string, string> = {}
    for (const f of g.files) {
      const [key, file] = f.includes('=') ? f.split('=') : [path.basename(f), f]
      expect(path.resolve(dir, file).startsWith(dir + path.sep), `${file} inside ${dir} (kustomize's load restrictor)`).toBe(true)
      data[key] = readFileSync(path.join(dir, file), 'utf8')
    }
    out.push({apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: g.name}, data})
  }
  for (const o of out) {
    if (k.namespace && !CLUSTER_SCOPED.has(o.kind)) o.metadata.namespace = k.namespace
    for (const l of k.labels ?? []) o.metadata.labels = {...o.metadata.labels, ...l.pairs}
  }
  for (const p of k.patches ?? []) {
    const targets = out.filter((o) => o.kind === p.target.kind && o.metadata.name === p.target.name)
    expect(targets, `patch target ${p.target.kind}/${p.target.name}`).toHaveLength(1)
    applyPatch(targets[0], parse(p.patch))
  }
  return out
}

function validateAll(objects: Obj[]): void {
  for (const o of objects) {
    const Model = MODELS[`${o.apiVersion}/${o.kind}`]
    expect(Model, `a schema for ${o.apiVersion} ${o.kind}`).toBeDefined()
    expect(() => new Model(o as never).validate(), `${o.kind}/${o.metadata.name}`).not.toThrow()
  }
}

const find = (objects: Obj[], kind: string) => objects.find((o) => o.kind === kind) as any

describe('deploy/ manifests', () => {
  const base = build(path.join(DEPLOY, 'base'))
  const reconcile = build(path.join(DEPLOY, 'overlays/reconcile'))

  it('every object of the base and of the reconcile overlay is valid against its OpenAPI schema', () => {
    expect(base.map((o) => o.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'DaemonSet', 'Namespace', 'PrometheusRule', 'ResourceQuota', 'Service', 'ServiceAccount', 'ServiceMonitor'])
    validateAll(base)
    validateAll(reconcile)
  })

  it('the schemas catch a broken DaemonSet (the validation can fail)', () => {
    const broken = structuredClone(find(base, 'DaemonSet'))
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'metrics'
    expect(() => new DaemonSet(broken).validate()).toThrow(/containerPort/)
  })

  it('the DaemonSet: host network, every taint tolerated, BIRD read-only, limits, probes, no NET_ADMIN', () => {
    const ds = find(base, 'DaemonSet')
    const pod = ds.spec.template.spec
    const c = pod.containers[0]
    expect(pod.hostNetwork).toBe(true)
    expect(pod.tolerations).toEqual([{operator: 'Exists'}])
    const calico = c.volumeMounts.find((m: any) => m.mountPath === '/var/run/calico')
    expect(calico.readOnly).toBe(true)
    expect(pod.volumes.find((v: any) => v.name === calico.name).hostPath).toEqual({path: '/var/run/calico', type: 'DirectoryOrCreate'})
    expect(
      c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.cpu && c.resources.limits.memory,
    ).toBeTruthy()
    expect(c.livenessProbe.httpGet.path).toBe('/healthz')
    expect(c.readinessProbe.httpGet.path).toBe('/readyz')
    expect(c.ports[0].containerPort).toBe(DEFAULT_PORT)
    expect(c.args).toContain(`--listen=[$(HOST_IP)]:${DEFAULT_PORT}`)
    expect(c.args).not.toContain('--reconcile')
    expect(c.securityContext.capabilities.add ?? []).not.toContain('NET_ADMIN')
    expect(c.securityContext.capabilities.drop).toEqual(['ALL'])
  })

  // the kubelet expands $(HOST_IP) to status.hostIP: an IPv6 address on an IPv6 (or IPv6-first dual-stack) node
  it.each([['IPv4', '127.0.0.1'], ['IPv6', '::1']])('the DaemonSet\'s --listen serves on an %s node', async (_family, hostIp) => {
    const c = find(base, 'DaemonSet').spec.template.spec.containers[0]
    const arg = (c.args as string[]).find((a) => a.startsWith('--listen='))!
    const listen = parseListen(arg.slice('--listen='.length).replace('$(HOST_IP)', hostIp))
    expect(listen).toEqual({host: hostIp, port: DEFAULT_PORT})
    const agent = {running: false, ready: true} as unknown as WatchAgent
    // any free port: the manifest's own may be taken on this machine
    const server = await serve(agent, agentMetrics(agent, 'test'), {listen: {...listen, port: 0}, source: {}})
    try {
      const {port} = server.address() as {port: number}
      const res = await fetch(`http://${hostIp.includes(':') ? `[${hostIp}]` : hostIp}:${port}/healthz`)
      expect(res.status).toBe(200)
    } finally {
      server.close()
    }
  })

  it('the DaemonSet reads Calico\'s truth as its own node: --kube, --node from the downward API', () => {
    const c = find(base, 'DaemonSet').spec.template.spec.containers[0]
    expect(c.args).toContain('--kube')
    expect(c.args).toContain('--node=$(NODE_NAME)')
    expect(c.env.find((e: any) => e.name === 'NODE_NAME').valueFrom.fieldRef.fieldPath).toBe('spec.nodeName')
    // the kubelet leaves a $(VAR) it does not know as it is: every one must be an env of the container
    const vars = c.args.flatMap((a: string) => [...a.matchAll(/\$\((\w+)\)/g)].map((m) => m[1]))
    for (const v of vars) expect(c.env.map((e: any) => e.name), v).toContain(v)
    // the pools come from the truth: a pool file of the example's would override the cluster's own
    expect(c.args.some((a: string) => a.startsWith('--ippools') || a.startsWith('--pool'))).toBe(false)
  })

  it('the probes allow a full table\'s first diagnosis, and answer within the agent\'s scrape budget', () => {
    const c = find(base, 'DaemonSet').spec.template.spec.containers[0]
    const {startupProbe: startup, livenessProbe: liveness, readinessProbe: readiness} = c
    expect(startup.httpGet.path).toBe('/readyz')
    // the kubelet's defaults: 10 s period, 1 s timeout, 3 failures
    expect((startup.periodSeconds ?? 10) * (startup.failureThreshold ?? 3)).toBeGreaterThanOrEqual(300)
    for (const p of [startup, liveness, readiness]) expect(p.timeoutSeconds ?? 1).toBeGreaterThanOrEqual(5)
    expect((liveness.periodSeconds ?? 10) * (liveness.failureThreshold ?? 3)).toBeGreaterThanOrEqual(60)
  })

  it('the namespace admits a pod on the host network with a host path, whatever Pod Security level a cluster enforces', () => {
    const pod = find(base, 'DaemonSet').spec.template.spec
    expect(pod.hostNetwork && pod.volumes.some((v: any) => v.hostPath)).toBe(true) // baseline refuses either
    expect(find(base, 'Namespace').metadata.labels['pod-security.kubernetes.io/enforce']).toBe('privileged')
  })

  it('a ResourceQuota admits the DaemonSet\'s priority class in its namespace (clusters that limit it to quota holders)', () => {
    const ds = find(base, 'DaemonSet')
    const quota = find(base, 'ResourceQuota')
    expect(quota.metadata.namespace).toBe(ds.metadata.namespace)
    const scope = quota.spec.scopeSelector.matchExpressions[0]
    expect(scope).toMatchObject({scopeName: 'PriorityClass', operator: 'In'})
    expect(scope.values).toContain(ds.spec.template.spec.priorityClassName)
    expect(Number(quota.spec.hard.pods)).toBeGreaterThanOrEqual(10_000)
  })

  it('the DaemonSet\'s NODE_OPTIONS are options Node accepts there (it refuses to start on others)', () => {
    const c = find(base, 'DaemonSet').spec.template.spec.containers[0]
    const options = c.env.find((e: any) => e.name === 'NODE_OPTIONS')?.value
    expect(options).toMatch(/--max-semi-space-size=\d+/)
    const r = spawnSync(process.execPath, ['-e', '0'], {env: {...process.env, NODE_OPTIONS: options}, encoding: 'utf8'})
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
  })

  it('the reconcile overlay adds NET_ADMIN and --reconcile, and nothing else changes the base', () => {
    const c = find(reconcile, 'DaemonSet').spec.template.spec.containers[0]
    expect(c.securityContext.capabilities.add).toEqual(['NET_ADMIN'])
    expect(c.args).toContain('--reconcile')
    expect(reconcile.filter((o) => o.kind !== 'DaemonSet')).toEqual(base.filter((o) => o.kind !== 'DaemonSet'))
  })

  it('the ClusterRole reads Calico\'s resources in both API groups and Nodes, and writes nothing', () => {
    const role = find(base, 'ClusterRole')
    const verbs = new Set(role.rules.flatMap((r: any) => r.verbs))
    expect([...verbs].sort()).toEqual(['get', 'list']) // --kube lists; it never watches
    const calico = role.rules.find((r: any) => r.apiGroups.includes('crd.projectcalico.org'))
    expect(calico.apiGroups).toEqual(expect.arrayContaining(['crd.projectcalico.org', 'projectcalico.org']))
    // exactly what --kube lists: nothing more (least privilege), nothing less (a 403: agents without the truth)
    expect([...calico.resources].sort()).toEqual([...CALICO_PLURALS].sort())
    expect(role.rules.find((r: any) => r.apiGroups.includes('')).resources).toEqual(['nodes'])
  })

  it('a headless Service and a ServiceMonitor on its metrics port', () => {
    const svc = find(base, 'Service')
    expect(svc.spec.clusterIP).toBe('None')
    expect(svc.spec.ports[0]).toMatchObject({name: 'metrics', port: DEFAULT_PORT})
    const sm = find(base, 'ServiceMonitor')
    expect(sm.spec.endpoints[0].port).toBe('metrics')
    expect(sm.spec.selector.matchLabels).toEqual(svc.spec.selector)
  })

  it('the PrometheusRule holds exactly the groups of prometheus/rules.yaml', () => {
    const rules = parse(readFileSync(path.join(DEPLOY, 'prometheus/rules.yaml'), 'utf8'))
    expect(find(base, 'PrometheusRule').spec.groups).toEqual(rules.groups)
    const alerts = rules.groups.flatMap((g: any) => g.rules.map((r: any) => r.alert))
    expect(alerts).toEqual(['RoutedoctorBlocksMisrouted', 'RoutedoctorNodeBroken', 'RoutedoctorBgpSessionsDown', 'RoutedoctorBgpPeerDown',
      'RoutedoctorFlapping', 'RoutedoctorAgentDown', 'RoutedoctorSourceFailing'])
  })

  const rules = () => parse(readFileSync(path.join(DEPLOY, 'prometheus/rules.yaml'), 'utf8')).groups.flatMap((g: any) => g.rules)

  it('the alerts ask for metrics `watch --listen` serves, by their label names, and keep the ServiceMonitor\'s node label', async () => {
    const agent = {
      state: emptyState(), routeFlaps: {current: new Set()}, peerFlaps: {current: new Set()}, overlayRoutes: 0,
      counters: {verdictChanges: 0, sessionFlaps: 0, diagnoses: 0}, sources: () => new Map(),
    } as unknown as WatchAgent
    const {registry} = agentMetrics(agent, '0')
    const served = new Set((await registry.getMetricsAsJSON()).map((m) => m.name))
    const labelsOf = (name: string) => new Set<string>((registry.getSingleMetric(name) as any).labelNames)
    const node = find(base, 'ServiceMonitor').spec.endpoints[0].relabelings.find((r: any) => r.targetLabel === 'node')
    expect(node).toBeDefined()
    for (const r of rules()) {
      for (const m of r.expr.matchAll(/(routedoctor_\w+)(?:\{([^}]*)\})?/g)) {
        expect(served.has(m[1]), `${r.alert}: ${m[1]}`).toBe(true)
        const names = [...(m[2] ?? '').matchAll(/(\w+)\s*[!=]~?/g)].map((x) => x[1])
        const known = labelsOf(m[1])
        for (const n of names) expect(known.has(n), `${r.alert}: ${m[1]}{${n}}`).toBe(true)
      }
      // an aggregation that drops `node` pages with an address where the node's name was there to say; the cluster's
      // alert (one for every node that lost a peer) counts nodes by job, and says no address either
      for (const by of r.expr.matchAll(/by \(([^)]*)\)/g)) {
        if (r.alert === 'RoutedoctorBgpPeerDown' && by[1] === 'job') continue
        expect(by[1].split(/,\s*/), r.alert).toContain('node')
      }
    }
  })

  it('every verdict is either one RoutedoctorBlocksMisrouted pages for or a healthy one (a new verdict is a decision)', () => {
    const expr = rules().find((r: any) => r.alert === 'RoutedoctorBlocksMisrouted').expr
    const paged = new Set(/verdict=~"([^"]+)"/.exec(expr)![1].split('|'))
    const healthy = new Set(['ok', 'local', 'not-in-pool'])
    for (const v of VERDICTS) expect(paged.has(v) !== healthy.has(v), v).toBe(true)
    expect([...paged].every((v) => VERDICTS.includes(v))).toBe(true)
  })

  it('every node-wide error finding pages: RoutedoctorNodeBroken, or peer-down through RoutedoctorBgpSessionsDown', () => {
    const expr = rules().find((r: any) => r.alert === 'RoutedoctorNodeBroken').expr
    const paged = /id=~"([^"]+)"/.exec(expr)![1].split('|').sort()
    const hostErrors = hostRules.map((r) => r.id).filter((id) => SEVERITY[id] === 'error' && id !== 'peer-down')
    expect(paged).toEqual([...new Set(hostErrors)].sort())
  })

  it('the node-problem-detector plugin config follows its rules (permanent rule on a default condition, timeouts, 80 bytes)', () => {
    const [cm] = build(path.join(DEPLOY, 'node-problem-detector'))
    validateAll([cm])
    const config = JSON.parse((cm as any).data['routedoctor-plugin.json'])
    // node-problem-detector's field names (pkg/custompluginmonitor/types): a misspelt one is silently a default
    expect(Object.keys(config).every((k) => ['plugin', 'source', 'metricsReporting', 'pluginConfig', 'conditions', 'rules'].includes(k))).toBe(true)
    const global = ['invoke_interval', 'timeout', 'max_output_length', 'concurrency', 'enable_message_change_based_condition_update', 'skip_initial_status']
    expect(Object.keys(config.pluginConfig).every((k) => global.includes(k))).toBe(true)
    expect(config.plugin).toBe('custom')
    expect(config.pluginConfig.max_output_length).toBe(80)
    const seconds = (d: string) => {
      expect(d).toMatch(/^\d+s$/)
      return parseInt(d, 10)
    }
    const rule = config.rules[0]
    expect(Object.keys(rule).every((k) => ['type', 'condition', 'reason', 'path', 'args', 'timeout', 'invoke_interval'].includes(k))).toBe(true)
    expect(rule.type).toBe('permanent')
    expect(config.conditions.map((c: any) => c.type)).toContain(rule.condition)
    expect(seconds(rule.timeout)).toBeLessThanOrEqual(seconds(config.pluginConfig.timeout))
    expect(seconds(config.pluginConfig.timeout)).toBeLessThan(seconds(config.pluginConfig.invoke_interval))
    expect(rule.args.slice(0, 2)).toEqual(['check', '--npd'])
    // routedoctor where the image puts it (node-problem-detector's image gets that directory: docs/watch.md)
    const docker = readFileSync(path.join(DEPLOY, 'Dockerfile'), 'utf8').split(/^FROM .*$/m).at(-1)!
    expect(rule.path).toBe(path.posix.join(/^WORKDIR (\S+)$/m.exec(docker)![1], 'bin/run.js'))
    // what it reads comes with it: the ConfigMap, mounted at /etc/routedoctor (docs/watch.md), holds the pools
    const pools = rule.args[rule.args.indexOf('--ippools') + 1]
    expect(path.dirname(pools)).toBe('/etc/routedoctor')
    expect(Object.keys((cm as any).data)).toContain(path.basename(pools))
    expect(parse((cm as any).data[path.basename(pools)]).items.length).toBeGreaterThan(0)
  })

  it('the Dockerfile: Node 20 slim, production dependencies only', () => {
    const text = readFileSync(path.join(DEPLOY, 'Dockerfile'), 'utf8')
    const froms = [...text.matchAll(/^FROM (\S+)/gm)].map((m) => m[1])
    expect(froms.every((f) => /^node:20[-.\w]*-slim$/.test(f))).toBe(true)
    expect(text).toMatch(/npm ci --omit=dev/)
  })

  // the image's build stage as docker would run it: only what its COPYs bring, then `npm run build`
  it('the Dockerfile\'s build stage has every file `npm run build` reads, and makes what the image copies', async () => {
    const text = readFileSync(path.join(DEPLOY, 'Dockerfile'), 'utf8')
    const [buildStage, runtimeStage] = text.split(/^FROM .*$/m).slice(1)
    const dir = tempDir('rd-docker-build-')
    for (const m of buildStage.matchAll(/^COPY (?!--)(.+)$/gm)) {
      const words = m[1].trim().split(/\s+/)
      const dest = words.pop()!
      for (const src of words) {
        const to = dest.endsWith('/') && words.length > 1 ? path.join(dir, dest, path.basename(src)) : path.join(dir, dest)
        mkdirSync(path.dirname(to), {recursive: true})
        cpSync(path.join(ROOT, src), dest === './' ? path.join(dir, src) : to, {recursive: true})
      }
    }
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules')) // the stage's `npm ci`
    const r = await execa('npm', ['run', 'build'], {cwd: dir, reject: false})
    expect(r.exitCode, r.stdout + r.stderr).toBe(0)
    for (const m of runtimeStage.matchAll(/^COPY --from=build \/src\/(\S+)/gm)) expect(existsSync(path.join(dir, m[1])), m[1]).toBe(true)
  }, 120_000)

  it.runIf(existsSync('/usr/bin/kubectl'))('kubectl kustomize builds the same objects, where kubectl is installed', async () => {
    for (const [dir, ours] of [['base', base], ['overlays/reconcile', reconcile]] as const) {
      const r = await execa('kubectl', ['kustomize', path.join(DEPLOY, dir)])
      const theirs = parseAllDocuments(r.stdout).map((d) => d.toJS() as Obj)
      const key = (o: Obj) => `${o.kind}/${o.metadata.name}`
      expect(theirs.map(key).sort()).toEqual(ours.map(key).sort())
      for (const o of theirs) expect(o, key(o)).toEqual(ours.find((x) => key(x) === key(o)))
    }
  })
})

describe('alert rules (promtool)', () => {
  it('check rules and the unit tests of every alert pass', async () => {
    const check = await execa('promtool', ['check', 'rules', path.join(DEPLOY, 'prometheus/rules.yaml')], {reject: false})
    expect(check.exitCode, check.stdout + check.stderr).toBe(0)
    const test = await execa('promtool', ['test', 'rules', path.join(DEPLOY, 'prometheus/rules.test.yaml')], {reject: false})
    expect(test.exitCode, test.stdout + test.stderr).toBe(0)
    const tested = new Set([...readFileSync(path.join(DEPLOY, 'prometheus/rules.test.yaml'), 'utf8').matchAll(/alertname: (\w+)/g)].map((m) => m[1]))
    expect([...tested].sort()).toEqual(['RoutedoctorAgentDown', 'RoutedoctorBgpPeerDown', 'RoutedoctorBgpSessionsDown', 'RoutedoctorBlocksMisrouted',
      'RoutedoctorFlapping', 'RoutedoctorNodeBroken', 'RoutedoctorSourceFailing'])
  })
})
