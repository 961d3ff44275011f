// `routedoctor watch --listen` on a live node: bird-lab.mjs's lab with COUNT blocks (n1's BIRD 2 learnt them over
// iBGP and exported them to its kernel, not through the tunnel). Measured, against the issue's goals:
//   idle    the agent's CPU (user + system, /proc) over IDLE seconds with nothing changing: share of one core (≤ 2%)
//   scrape  GET /metrics, best and median of 20 (≤ 50 ms)
//   event   one block's route corrected (a route via tunl0 onlink at a lower metric): from the write until /metrics
//           counts it ok (≤ 2 s at 100k)
//   route   ROUTES blocks' routes changed one at a time (a correction added, a debounce apart): the agent's mean time
//           to re-diagnose the prefix a change touched (its `prefixes` diagnoses, from the duration histogram; ≤ 50 ms
//           at 1M), against its diagnosis of the whole node at start (the `node` one), and no whole-node diagnosis
//   rss     the agent's RSS over BATCHES (≥ 3) batches of EVENTS route changes (each block's correction added, then
//           removed, by one `ip -batch`; the same routes each batch), sampled before the first and after each: the
//           first batch is the warm-up (`cold`: its growth from start-up), growth is over the second (≤ 10%),
//           growthAgain over the third; beside each sample the agent's heap before and after a full collection
//           (its ROUTEDOCTOR_MEMORY_REPORT hook; WATCH_LAB_NO_MEMORY=1 leaves it out) and its RSS every second
// Prints one JSON line: {count, idle: {cpuShare}, scrape: {best, median}, event: {seconds},
// route: {seconds, node, ...}, rss: {cold, before, after, growth, ...}}. Needs root, ip(8) and BIRD 2 (bird-lab.mjs).
// Usage: node bench/watch-lab.mjs [COUNT] [IDLE] [EVENTS] [ROUTES] [BATCHES]
import {spawn} from 'node:child_process'
import {readFileSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {blockOf} from './apply-routes.mjs'
import {labScript, must, sh, startLab} from './bird-lab.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
if (process.argv.includes('--help')) {
  // this file's opening comment
  const text = readFileSync(fileURLToPath(import.meta.url), 'utf8')
  console.log(text.slice(0, text.indexOf('\nimport ')).replaceAll(/^\/\/ ?/gm, ''))
  process.exit(0)
}
const BIN = path.join(HERE, '..', 'bin', 'run.js')
const count = Number(process.argv[2] ?? 100000)
const idleSeconds = Number(process.argv[3] ?? 10)
const events = Number(process.argv[4] ?? 10000)
const routes = Number(process.argv[5] ?? 20)
const batches = Math.max(3, Number(process.argv[6] ?? 3))
const PORT = 21179
const TICK = 100 // clock ticks a second (USER_HZ)

const dir = labScript('rdwatch')
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** GET from inside n1 (its loopback is its own): {status, body, ms}. */
function get(ns, url) {
  const r = sh('ip', ['netns', 'exec', ns, process.execPath, '-e',
    `const t=performance.now();fetch(${JSON.stringify(url)}).then(async r=>{const b=await r.text();` +
    'process.stdout.write(JSON.stringify({status:r.status,ms:performance.now()-t,body:b}))})'])
  return JSON.parse(r.stdout || '{"status":0,"body":""}')
}

// run inside n1, so that neither a process start nor a namespace switch is measured: 20 scrapes, then one route
// written and /metrics polled until it counts the block ok
const PROBE = `import {execFileSync} from 'node:child_process'
const [url, ...write] = process.argv.slice(2)
const scrape = async () => { const t = performance.now(); const b = await (await fetch(url)).text(); return {ms: performance.now() - t, b} }
const ok = (b) => Number(/^routedoctor_prefixes\\{verdict="ok"\\} (\\d+)/m.exec(b)?.[1] ?? -1)
const times = []
for (let i = 0; i < 21; i++) times.push((await scrape()).ms)
times.shift() // the first pays for fetch's own start
times.sort((a, b) => a - b)
const before = ok((await scrape()).b)
const t0 = performance.now()
execFileSync('ip', write)
let after
let scrapes = 0
try {
  while ((after = ok((await scrape()).b)) === before && performance.now() - t0 < 120000) {
    scrapes++
    await new Promise((r) => setTimeout(r, 20))
  }
} catch (error) {
  const why = error.cause?.code ?? error.message
  const s = ((performance.now() - t0) / 1000).toFixed(2)
  console.log(JSON.stringify({error: '/metrics failed ' + s + ' s after the write, after ' + scrapes + ' scrapes: ' + why}))
  process.exit(0)
}
console.log(JSON.stringify({scrape: {best: times[0] / 1000, median: times[10] / 1000}, event: {seconds: (performance.now() - t0) / 1000, okBefore: before, okAfter: after}}))
`

const cpuTicks = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return Number(f[11]) + Number(f[12]) // utime, stime
}
const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024
// the duration histogram's count and sum of one scope (node: the whole node; prefixes: those a change touched)
const histogram = (body, scope) => ({
  count: Number(new RegExp(`^routedoctor_diagnosis_duration_seconds_count\\{scope="${scope}"\\} (\\S+)`, 'm').exec(body)?.[1] ?? NaN),
  sum: Number(new RegExp(`^routedoctor_diagnosis_duration_seconds_sum\\{scope="${scope}"\\} (\\S+)`, 'm').exec(body)?.[1] ?? NaN),
})
const diagnoses = (body) => histogram(body, 'node').count + histogram(body, 'prefixes').count

async function main() {
  const lab = await startLab(count, {prefix: `rdwatch-${process.pid}`})
  const {ns, sock, nexthop} = lab
  const agent = spawn('ip', ['netns', 'exec', ns.n1, process.execPath, BIN, 'watch', '--bird-socket', sock.n1, '--pool', '10.0.0.0/8=ipip',
    '--listen', `127.0.0.1:${PORT}`, '--json'], {stdio: ['ignore', 'pipe', 'pipe'],
    env: {...process.env, ROUTEDOCTOR_MEMORY_REPORT: '1'}})
  const pid = agent.pid // ip netns exec runs node in its own process
  let agentErr = ''
  let errPartial = ''
  const memoryWaiters = []
  agent.stderr.on('data', (d) => {
    const lines = (errPartial + d.toString()).split('\n')
    errPartial = lines.pop()
    for (const l of lines) {
      if (l.startsWith('{"memory"')) memoryWaiters.shift()?.(JSON.parse(l).memory)
      else agentErr = (agentErr + l + '\n').slice(-2000)
    }
  })
  // the agent's memory (its hook, src/runtime/memory-report.ts): as it is and after a full collection, in MiB
  const MiB = (n) => Math.round((n / 2 ** 20) * 10) / 10
  const memoryOf = async () => {
    if (process.env.WATCH_LAB_NO_MEMORY) return undefined // the hook's own collection left out of the samples
    const got = new Promise((resolve) => memoryWaiters.push(resolve))
    process.kill(pid, 'SIGUSR2')
    const m = await Promise.race([got, sleep(30000).then(() => undefined)])
    if (!m) return undefined
    const brief = (u) => ({rss: MiB(u.rss), heapTotal: MiB(u.heapTotal), heapUsed: MiB(u.heapUsed),
      external: MiB(u.external), arrayBuffers: MiB(u.arrayBuffers), newSpace: MiB(u.spaces.new_space ?? 0),
      oldSpace: MiB(u.spaces.old_space ?? 0), lo: MiB(u.spaces.large_object_space ?? 0)})
    return {before: brief(m.before), after: brief(m.after)}
  }
  // the agent's source lines (a notification overflow shows as rtnetlink failed, then recovered)
  const sources = []
  let partial = ''
  agent.stdout.on('data', (d) => {
    const lines = (partial + d.toString()).split('\n')
    partial = lines.pop()
    for (const l of lines) if (l.includes('"kind":"source"')) sources.push(JSON.parse(l))
  })
  const ended = new Promise((resolve) => agent.once('close', (code, signal) => resolve({code, signal})))
  process.once('exit', () => agent.kill('SIGKILL')) // ended by a signal: the agent goes with the lab
  const metrics = `http://127.0.0.1:${PORT}/metrics`
  // the agent's RSS every second (MiB), with what the bench was doing: where the samples below sit in its course
  const timeline = []
  let phase = 'start'
  const t00 = Date.now()
  const sampler = setInterval(() => {
    try {
      timeline.push([Math.round((Date.now() - t00) / 1000), phase, MiB(rssOf(pid))])
    } catch {
      // the agent has ended
    }
  }, 1000)
  try {
    const deadline = Date.now() + 600_000
    while (get(ns.n1, `http://127.0.0.1:${PORT}/readyz`).status !== 200) {
      if (Date.now() > deadline || agent.exitCode !== null) throw new Error('the agent never became ready')
      await sleep(500)
    }
    await sleep(3000) // BIRD's kernel scan after start
    // idle
    phase = 'idle'
    const d0 = diagnoses(get(ns.n1, metrics).body)
    const t0 = cpuTicks(pid)
    await sleep(idleSeconds * 1000)
    const idle = {
      cpuShare: (cpuTicks(pid) - t0) / TICK / idleSeconds,
      diagnoses: diagnoses(get(ns.n1, metrics).body) - d0,
    }
    // scrape, and one event until /metrics shows it
    const fix = (i, op) => [
      'route',
      op,
      blockOf(i),
      'via',
      nexthop,
      'dev',
      'tunl0',
      'onlink',
      'metric',
      '10',
      'proto',
      'static',
    ]
    phase = 'probe'
    writeFileSync(path.join(dir, 'probe.mjs'), PROBE)
    const probe = JSON.parse(
      must('ip', ['netns', 'exec', ns.n1, process.execPath, path.join(dir, 'probe.mjs'), metrics, ...fix(1, 'add')]),
    )
    if (probe.error) throw new Error(probe.error)
    const {scrape, event} = probe
    must('ip', ['-n', ns.n1, ...fix(1, 'del')])
    // one route at a time: each change's own re-diagnosis
    phase = 'routes'
    await sleep(2000)
    const m0 = get(ns.n1, metrics).body
    for (let i = 2; i < 2 + routes; i++) {
      must('ip', ['-n', ns.n1, ...fix(i, 'add')])
      await sleep(1500) // the agent's debounce (0.5 s) and its diagnosis
    }
    const m1 = get(ns.n1, metrics).body
    const [p0, p1, n0, n1] = [histogram(m0, 'prefixes'), histogram(m1, 'prefixes'), histogram(m0, 'node'), histogram(m1, 'node')]
    const route = {changes: routes, diagnoses: p1.count - p0.count, seconds: (p1.sum - p0.sum) / (p1.count - p0.count),
      node: n0.sum / n0.count, nodeDiagnoses: n1.count - n0.count}
    const batch = path.join(dir, 'batch')
    writeFileSync(batch, Array.from({length: routes}, (_, j) => fix(2 + j, 'del').join(' ')).join('\n') + '\n')
    must('ip', ['-n', ns.n1, '-batch', batch])
    // RSS over many route changes: sampled before the first batch of EVENTS and after each batch (the same routes
    // each time); the memory hook's figures beside each sample, taken after it
    await sleep(3000)
    const first = 2 + routes
    const lines = []
    for (let i = first; i < first + events / 2; i++) lines.push(fix(i, 'add').join(' '), fix(i, 'del').join(' '))
    writeFileSync(batch, lines.join('\n') + '\n')
    const samples = [rssOf(pid)]
    const memory = [await memoryOf()]
    const d1 = diagnoses(get(ns.n1, metrics).body)
    for (let b = 0; b < batches; b++) {
      phase = `batch ${b + 1}`
      must('ip', ['-n', ns.n1, '-batch', batch])
      await sleep(5000)
      samples.push(rssOf(pid))
      memory.push(await memoryOf())
    }
    // the first batch warms the agent up (its heap grows back to its working size: see docs/performance.md) and is
    // shown as `cold`; growth is over the second, growthAgain over the third (whether it goes on), fromWarm over all
    // after the first
    const rss = {
      events,
      cold: {before: samples[0], after: samples[1], growth: samples[1] / samples[0] - 1},
      before: samples[1],
      after: samples[2],
      growth: samples[2] / samples[1] - 1,
      again: samples[3],
      growthAgain: samples[3] / samples[2] - 1,
      fromWarm: samples.at(-1) / samples[1] - 1,
      samplesMiB: samples.map(MiB),
      memory,
      timeline,
      diagnoses: diagnoses(get(ns.n1, metrics).body) - d1,
    }
    const m = get(ns.n1, metrics).body
    const diagnosis = {count: diagnoses(m), node: histogram(m, 'node'), prefixes: histogram(m, 'prefixes')}
    console.log(JSON.stringify({count, idle, scrape, event, route, rss, diagnosis, sources, loadavg: os.loadavg()}))
  } catch (error) {
    // spawnSync (the probe) held this process: the agent's end and its last words are read only now
    const end = await Promise.race([ended, sleep(5000).then(() => undefined)])
    const how = end === undefined ? '; the agent was still running' : `; the agent ended (${end.signal ?? `exit ${end.code}`})`
    throw new Error(`${error.message}${agentErr ? `; the agent's stderr: ${agentErr}` : ''}${how}; its source lines: ${JSON.stringify(sources)}`,
      {cause: error})
  } finally {
    clearInterval(sampler)
    agent.kill('SIGTERM')
    await ended
    lab.teardown()
  }
}

try {
  await main()
} catch (error) {
  console.log(JSON.stringify({error: error.message})) // a report, not a test: exit 0
}
