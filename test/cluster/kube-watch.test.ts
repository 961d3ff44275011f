// `watch --kube` with the Kubernetes API server down when the agent starts (a stand-in server, kube-server.ts): the
// agent stays up and diagnoses the node without the truth, reports the `calico` source failing, reads again with a
// back-off and takes the truth once the server answers. `check --kube` against the same dead server exits 2.
import {mkdtempSync, rmSync} from 'node:fs'
import {createServer} from 'node:net'
import os from 'node:os'
import path from 'node:path'

import {execa} from 'execa'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {BIN, ROOT} from '../helpers.js'
import {fixtureDir, LAB_HEALTHY} from '../diagnose/helpers.js'
import {until} from '../integration/watch-agent.js'
import {KubeServer} from './kube-server.js'

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as {port: number}).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

describe('--kube with the API server down', () => {
  let tmp: string
  let api: KubeServer
  let apiPort: number

  beforeAll(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'rd-kube-down-'))
    api = await KubeServer.make(tmp)
    apiPort = await freePort()
  })
  afterAll(async () => {
    await api?.close()
    rmSync(tmp, {recursive: true, force: true})
  })
  const env = () => ({NO_COLOR: '1', KUBECONFIG: api.kubeconfig(undefined, apiPort), HOME: tmp})

  it('check --kube exits 2 naming the server and what it could not list', async () => {
    const r = await execa('node', [BIN, 'check', '--from', fixtureDir(LAB_HEALTHY), '--kube'],
      {reject: false, cwd: ROOT, stdin: 'ignore', env: env(), extendEnv: false, timeout: 60_000})
    expect(r.exitCode).toBe(2)
    expect(String(r.stderr)).toMatch(new RegExp(`^routedoctor: --kube: https://127\\.0\\.0\\.1:${apiPort}: cannot list the API groups \\(.*ECONNREFUSED.*\\)$`))
  }, 60_000)

  it('watch keeps diagnosing the node, reports calico failing, and takes the truth once the server is back', async () => {
    const listen = `127.0.0.1:${await freePort()}`
    // the live node (its routes are only read), BIRD's socket absent (a failing source too)
    const agent = execa('node', [BIN, 'watch', '--kube', '--node', 'n1', '--json', '--listen', listen, '--interval', '1',
      '--bird-socket', path.join(tmp, 'no-bird.ctl')], {reject: false, cwd: ROOT, stdin: 'ignore', env: env(), extendEnv: false,
      forceKillAfterDelay: false})
    const lines: Array<Record<string, unknown>> = []
    let stderr = ''
    let buffered = ''
    agent.stdout!.on('data', (chunk: Buffer) => {
      const parts = (buffered + chunk.toString()).split('\n')
      buffered = parts.pop()!
      for (const l of parts) if (l) lines.push(JSON.parse(l))
    })
    agent.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const get = async (p: string) => {
      const r = await fetch(`http://${listen}${p}`)
      return {status: r.status, text: await r.text()}
    }
    const calicoUp = async () => /^routedoctor_source_up\{source="calico"\} (\d)$/m.exec((await get('/metrics')).text)?.[1]
    try {
      await until('the started line', () => lines.find((l) => l.kind === 'started'))
      expect(lines).toContainEqual(expect.objectContaining({kind: 'source', source: 'calico', op: 'failed',
        error: expect.stringMatching(`--kube: https://127.0.0.1:${apiPort}: cannot list the API groups`)}))
      expect(await calicoUp()).toBe('0')
      expect((await get('/healthz')).status).toBe(200)
      expect((await get('/readyz')).status).toBe(200)
      // the node diagnosed without the truth: no Kubernetes node name in the report
      const before = JSON.parse((await get('/report')).text)
      expect(before.node.kubeNode).toBeUndefined()

      await api.listen(apiPort)
      await until('calico read', async () => ((await calicoUp()) === '1' ? true : undefined))
      expect(lines).toContainEqual(expect.objectContaining({kind: 'source', source: 'calico', op: 'recovered'}))
      expect(api.requests.map((q) => q.url.split('?')[0])).toContain('/api/v1/nodes')
      const after = JSON.parse((await get('/report')).text)
      expect(after.node.kubeNode).toBe('n1')
      expect(agent.exitCode).toBeNull()
    } finally {
      agent.kill('SIGTERM')
      const r = await agent
      expect(r.exitCode, stderr).toBe(0)
    }
  }, 120_000)

  it('check --kube against a server that takes the request and never answers gives up after 30 s (exit 2)', async () => {
    if (api.port === 0) await api.listen(apiPort)
    api.hang = true
    try {
      const r = await execa('node', [BIN, 'check', '--from', fixtureDir(LAB_HEALTHY), '--kube'],
        {reject: false, cwd: ROOT, stdin: 'ignore', env: env(), extendEnv: false, timeout: 90_000})
      expect(r.exitCode).toBe(2)
      expect(String(r.stderr)).toBe(`routedoctor: --kube: https://127.0.0.1:${apiPort}: cannot list the API groups (no answer within 30 s)`)
    } finally {
      api.hang = false
    }
  }, 120_000)

  it('watch stops at once on SIGTERM while a read of the truth waits for an API server that does not answer', async () => {
    api.hang = false
    if (api.port === 0) await api.listen(apiPort) // listening since the last test, or now
    const agent = execa('node', [BIN, 'watch', '--kube', '--node', 'n1', '--json', '--interval', '1', '--truth-interval', '1',
      '--bird-socket', path.join(tmp, 'no-bird.ctl')], {reject: false, cwd: ROOT, stdin: 'ignore', env: env(), extendEnv: false,
      forceKillAfterDelay: false})
    let stdout = ''
    agent.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    try {
      await until('the started line', () => (stdout.includes('"kind":"started"') ? true : undefined))
      api.hang = true
      const asked = api.requests.length
      await until('a read the server holds', () => (api.requests.length > asked ? true : undefined))
    } finally {
      agent.kill('SIGTERM')
    }
    // the read gives up on its own only after 30 s, past the DaemonSet's terminationGracePeriodSeconds (10)
    const ended = await Promise.race([agent.then((r) => r.exitCode),
      new Promise((resolve) => setTimeout(() => resolve('still running 15 s after SIGTERM'), 15_000).unref())])
    if (ended !== 0) agent.kill('SIGKILL')
    expect(ended).toBe(0)
    api.hang = false
  }, 120_000)
})

describe('watch --kube and the API server answering', () => {
  let tmp: string
  let api: KubeServer

  beforeAll(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'rd-kube-watch-'))
    api = await KubeServer.make(tmp)
    await api.listen()
  })
  afterAll(async () => {
    await api?.close()
    rmSync(tmp, {recursive: true, force: true})
  })
  const watch = (...args: string[]) =>
    execa('node', [BIN, 'watch', '--kube', '--node', 'n1', '--json', '--interval', '1',
      '--bird-socket', path.join(tmp, 'no-bird.ctl'), ...args], {reject: false, cwd: ROOT, stdin: 'ignore',
      env: {NO_COLOR: '1', KUBECONFIG: api.kubeconfig(), HOME: tmp}, extendEnv: false, forceKillAfterDelay: false})
  const ended = (agent: ReturnType<typeof watch>) => Promise.race([agent.then((r) => r.exitCode ?? r.signal),
    new Promise((resolve) => setTimeout(() => resolve('still running 15 s after SIGTERM'), 15_000).unref())])

  it('SIGTERM during the first read of the truth, before the agent starts, is a clean stop (exit 0)', async () => {
    api.hang = true
    api.requests = []
    const agent = watch()
    try {
      await until('a read the server holds', () => (api.requests.length > 0 ? true : undefined))
    } finally {
      agent.kill('SIGTERM')
    }
    const r = await ended(agent)
    if (r !== 0) agent.kill('SIGKILL')
    api.hang = false
    expect(r).toBe(0)
  }, 60_000)

  it('discovers the Calico API group once, and again when the group kept answers 404', async () => {
    api.served = ['crd.projectcalico.org/v1']
    api.requests = []
    const agent = watch('--truth-interval', '1')
    const paths = () => api.requests.map((q) => q.url.split('?')[0])
    const count = (p: string) => paths().filter((x) => x === p).length
    try {
      await until('three reads of the truth', () => (count('/apis/crd.projectcalico.org/v1/ippools') >= 3 ? true : undefined))
      expect(count('/apis')).toBe(1)
      // Calico's API server installed, the CRDs gone: the kept group answers 404, discovery finds the other one
      api.served = ['projectcalico.org/v3']
      await until('a read of projectcalico.org/v3', () => (count('/apis/projectcalico.org/v3/ipamblocks') >= 2 ? true : undefined))
      expect(count('/apis')).toBe(2)
      expect(agent.exitCode).toBeNull()
    } finally {
      agent.kill('SIGTERM')
    }
    const r = await ended(agent)
    if (r !== 0) agent.kill('SIGKILL')
    expect(r).toBe(0)
  }, 120_000)

  it('an answer that does not parse: exit 2 at start naming the server and resource; after start a failing source', async () => {
    api.served = ['crd.projectcalico.org/v1']
    const bad = JSON.stringify({kind: 'Status', apiVersion: 'v1'})
    const said = `--kube: https://127.0.0.1:${api.port}: ipamblocks.crd.projectcalico.org, as calico/ipamblocks.json:1: ` +
      'expected a List of IPAMBlock (kubectl get … -o json), found "\\"Status\\""'
    api.answers = {'/apis/crd.projectcalico.org/v1/ipamblocks': bad}
    const first = await watch()
    expect(first.exitCode).toBe(2)
    expect(String(first.stderr)).toBe(`routedoctor: ${said}`)

    api.answers = {}
    const agent = watch('--truth-interval', '1')
    let stdout = ''
    agent.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    const lines = () => stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>)
    try {
      await until('the started line', () => lines().find((l) => l.kind === 'started'))
      api.answers = {'/apis/crd.projectcalico.org/v1/ipamblocks': bad}
      const failed = await until('calico failing', () => lines().find((l) => l.source === 'calico' && l.op === 'failed'))
      expect(failed.error).toBe(said)
      api.answers = {}
      await until('calico recovered', () => lines().find((l) => l.source === 'calico' && l.op === 'recovered'))
      expect(agent.exitCode).toBeNull()
    } finally {
      api.answers = {}
      agent.kill('SIGTERM')
    }
    const r = await ended(agent)
    if (r !== 0) agent.kill('SIGKILL')
    expect(r).toBe(0)
  }, 120_000)
})
