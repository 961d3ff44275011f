// `watch` in the lab: the agent runs in n1's namespace against real BIRD; a real Prometheus server
// (Debian's `prometheus`) in the same namespace scrapes it every second and evaluates deploy/'s alert rules
// (a test copy whose `for:` is 2 s instead of minutes, and a 1 s evaluation interval). A route breaks; the test
// reads the agent's change lines, the series and the firing alert from Prometheus' HTTP API, the report refused
// to another namespace without the token, `promtool check metrics` on a scrape; the agent stays idle when
// nothing changes, survives BIRD going away, and stops with exit 0 on SIGTERM.
import {existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {execa, type ResultPromise} from 'execa'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {parse, stringify} from 'yaml'

import {ROOT} from '../helpers.js'
import {cleanupStaleLabs, type Lab, startLab} from '../lab/lab.js'
import {liveUnavailableReason, sleep} from './live.js'
import {startWatchAgent, until} from './watch-agent.js'

const PORT = 21179
const PROM = '127.0.0.1:19090' // inside n1's namespace only
const N1_ETH0 = '172.31.11.3' // n1's address on the link to tor1
const N2_BLOCK = '192.168.110.128/26'
const TOKEN = 'lab-token-0123456789'
// a route beside BIRD's, at a lower metric, not through tunl0: the kernel uses it, so the block is not tunneled
const BREAK = [N2_BLOCK, 'via', '172.31.11.1', 'dev', 'eth0', 'metric', '10', 'proto', 'static']

const reason = liveUnavailableReason('bird2-healthy') ?? (existsSync('/usr/bin/prometheus') ? null : 'no /usr/bin/prometheus (Debian\'s prometheus package)')
if (reason) console.warn(`watch in the lab skipped: ${reason}`)

// each request from a namespace starts a Node process: seconds apiece on a busy machine
describe.skipIf(reason !== null)('watch in the lab, scraped by a real Prometheus', {timeout: 120_000}, () => {
  let lab: Lab
  let dir: string
  let agent: ResultPromise
  let prometheus: ResultPromise
  let lines: any[] = []
  let stderr = () => ''

  /** An HTTP GET from inside a namespace: {status, body}. */
  async function get(node: 'n1' | 'tor1', url: string, token?: string): Promise<{status: number; body: string}> {
    const r = await execa('ip', ['netns', 'exec', lab.ns(node), 'node', path.join(dir, 'get.mjs'), url, token ?? ''])
    return JSON.parse(r.stdout)
  }

  async function promQuery(q: string): Promise<any[]> {
    const r = await get('n1', `http://${PROM}/api/v1/query?query=${encodeURIComponent(q)}`)
    return JSON.parse(r.body).data.result
  }

  const value = async (q: string): Promise<number | undefined> => {
    const result = await promQuery(q)
    return result.length === 1 ? Number(result[0].value[1]) : undefined
  }

  beforeAll(async () => {
    await cleanupStaleLabs()
    dir = mkdtempSync(path.join(os.tmpdir(), 'rd-watch-'))
    writeFileSync(path.join(dir, 'get.mjs'), `const [url, token] = process.argv.slice(2)
const r = await fetch(url, {headers: token ? {authorization: 'Bearer ' + token} : {}})
process.stdout.write(JSON.stringify({status: r.status, body: await r.text()}))
`)
    writeFileSync(path.join(dir, 'token'), `${TOKEN}\n`)
    lab = await startLab('bird2-healthy')
    const run = startWatchAgent(lab, ['--interval', '1', '--listen', `0.0.0.0:${PORT}`, '--token-file', path.join(dir, 'token'), '--flap-count', '3'])
    ;({process: agent, lines, stderr} = run)
    // the shipped rules, with `for:` cut to 2 s so that a test need not wait minutes
    const rules = parse(readFileSync(path.join(ROOT, 'deploy/prometheus/rules.yaml'), 'utf8'))
    for (const g of rules.groups) for (const r of g.rules) r.for = '2s'
    writeFileSync(path.join(dir, 'rules.yaml'), stringify(rules))
    writeFileSync(path.join(dir, 'prometheus.yml'), stringify({
      global: {scrape_interval: '1s', evaluation_interval: '1s'},
      rule_files: [path.join(dir, 'rules.yaml')],
      scrape_configs: [{job_name: 'routedoctor', static_configs: [{targets: [`127.0.0.1:${PORT}`]}]}],
    }))
    prometheus = execa('ip', ['netns', 'exec', lab.ns('n1'), 'prometheus', `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'tsdb')}`, `--web.listen-address=${PROM}`, '--log.level=warn'], {reject: false, stdin: 'ignore'})
    await until('the agent ready', async () => ((await get('n1', `http://127.0.0.1:${PORT}/readyz`)).status === 200 ? true : undefined))
    await until('Prometheus scraping the agent', () => value('up{job="routedoctor"} == 1'))
  }, 120_000)

  afterAll(async () => {
    prometheus?.kill('SIGTERM')
    agent?.kill('SIGKILL')
    await Promise.allSettled([prometheus, agent])
    await lab?.teardown()
    if (dir) rmSync(dir, {recursive: true, force: true})
  })

  it('starts with every block ok, said in a started line, and Prometheus sees the series', async () => {
    const started = await until('the started line', async () => lines.find((l) => l.kind === 'started'))
    expect(started).toMatchObject({schema: 1, kind: 'started', verdicts: {ok: 3, local: 2}, sessions: {up: 2, total: 2}})
    expect(await until('ok blocks in Prometheus', () => value('routedoctor_prefixes{verdict="ok"}'))).toBe(3)
    expect(await value('routedoctor_bgp_sessions{state="Established"}')).toBe(2)
    expect(await value('routedoctor_build_info')).toBe(1)
  })

  it('is idle when nothing changes: no diagnosis and no line while the node is still', async () => {
    // the lab just started (IPv6 addresses leaving tentative, BIRD's kernel scans): first, a still node
    let count = -1
    await until('three quiet seconds', async () => {
      const now = await value('sum(routedoctor_diagnosis_duration_seconds_count)')
      if (now === count) return true
      count = now ?? -1
      await sleep(3000)
      return undefined
    })
    const before = lines.length
    await sleep(5000) // five BIRD polls
    expect(lines.slice(before)).toEqual([])
    expect(await value('sum(routedoctor_diagnosis_duration_seconds_count)')).toBe(count)
  })

  it('a route that breaks: a change line, the metrics within seconds, and the misrouted/not-tunneled alert firing', async () => {
    await lab.exec('n1', ['ip', 'route', 'add', ...BREAK])
    const moved = await until('the verdict change line', async () => lines.find((l) => l.kind === 'verdict' && l.prefix === N2_BLOCK))
    expect(moved).toMatchObject({from: 'ok', to: 'not-tunneled'})
    expect(Date.parse(moved.at)).not.toBeNaN()
    await until('the finding line', async () =>
      lines.find((l) => l.kind === 'finding' && l.op === 'appeared' && l.id === 'tunnel-not-programmed' && l.prefix === N2_BLOCK && l.severity === 'error'))
    expect(await until('not-tunneled in Prometheus', () => value('routedoctor_prefixes{verdict="not-tunneled"} == 1'))).toBe(1)
    expect(await value('routedoctor_verdict_changes_total')).toBe(1)
    const alert = await until('the firing alert', async () => {
      const r = JSON.parse((await get('n1', `http://${PROM}/api/v1/alerts`)).body)
      return r.data.alerts.find((a: any) => a.labels.alertname === 'RoutedoctorBlocksMisrouted' && a.state === 'firing')
    })
    expect(alert.labels).toMatchObject({severity: 'critical', job: 'routedoctor'})
    expect(Number(alert.value)).toBe(1)
  })

  it('/report and /explain: refused to another namespace (tor1) without the right token, served with it and on loopback', async () => {
    const remote = `http://${N1_ETH0}:${PORT}`
    expect((await get('tor1', `${remote}/report`)).status).toBe(401)
    expect((await get('tor1', `${remote}/report`, 'wrong-token')).status).toBe(403)
    expect((await get('tor1', `${remote}/explain?prefix=192.168.110.130`)).status).toBe(401)
    const metrics = await get('tor1', `${remote}/metrics`)
    expect(metrics.status).toBe(200) // metrics need no token
    const report = await get('tor1', `${remote}/report`, TOKEN)
    expect(report.status).toBe(200)
    const json = JSON.parse(report.body)
    expect(json.schema).toBe(1)
    expect(json.prefixes.find((p: any) => p.prefix === N2_BLOCK).verdict).toBe('not-tunneled')
    const explained = await get('tor1', `${remote}/explain?prefix=192.168.110.130`, TOKEN)
    expect(JSON.parse(explained.body)).toMatchObject({prefix: N2_BLOCK, verdict: 'not-tunneled'})
    const bad = await get('tor1', `${remote}/explain?prefix=not-a-prefix`, TOKEN)
    expect(bad.status).toBe(400)
    expect(JSON.parse(bad.body).error.message).toMatch(/expected a prefix/)
    const local = await get('n1', `http://127.0.0.1:${PORT}/report`)
    expect(local.status).toBe(200)
  })

  it('promtool check metrics accepts a real scrape', async () => {
    const scrape = await get('n1', `http://127.0.0.1:${PORT}/metrics`)
    const r = await execa('promtool', ['check', 'metrics'], {input: scrape.body, reject: false})
    expect(r.exitCode, r.stdout + r.stderr).toBe(0)
    // bounded cardinality: no series names a prefix or a peer
    expect(scrape.body).not.toMatch(/192\.168\.|172\.31\.|Mesh_/)
  })

  it('the repaired route is a change too, and the alert resolves', async () => {
    await lab.exec('n1', ['ip', 'route', 'del', ...BREAK])
    await until('the verdict back to ok', async () => lines.find((l) => l.kind === 'verdict' && l.prefix === N2_BLOCK && l.to === 'ok'))
    await until('the alert gone', async () => {
      const r = JSON.parse((await get('n1', `http://${PROM}/api/v1/alerts`)).body)
      return r.data.alerts.some((a: any) => a.labels.alertname === 'RoutedoctorBlocksMisrouted') ? undefined : true
    })
  })

  it('BIRD going away is a source failure and a session change, never the end of the agent', async () => {
    await lab.stopBird('n1')
    const failed = await until('the source failure line', async () => lines.find((l) => l.kind === 'source' && l.op === 'failed' && l.source === 'bird-socket'))
    expect(failed.error).toBeTruthy()
    expect(await until('source_up 0 in Prometheus', () => value('routedoctor_source_up{source="bird-socket"} == 0'))).toBe(0)
    expect((await get('n1', `http://127.0.0.1:${PORT}/healthz`)).status).toBe(200)
    expect(agent.exitCode).toBeNull() // still running
  })

  it('stops with exit 0 on SIGTERM', async () => {
    agent.kill('SIGTERM')
    const r = await Promise.race([agent, sleep(10_000).then(() => undefined)])
    expect(r, 'the agent exited within 10 s of SIGTERM').toBeDefined()
    expect(r!.exitCode, stderr()).toBe(0)
    expect(stderr()).toBe('')
  })
})
