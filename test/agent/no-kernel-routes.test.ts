// `watch --listen` on a node whose `ip route` dumps fail: /explain and /report refuse as `explain` and `check` do
// (E_NO_KERNEL_ROUTES, HTTP 503) instead of judging every block `missing`. The agent runs in a network namespace
// created here, with an `ip` first on its PATH that fails the route dumps and runs the real `ip` for the rest.
import {spawnSync} from 'node:child_process'
import {chmodSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {execa, type ResultPromise} from 'execa'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {BIN, ROOT} from '../helpers.js'

const isRoot = process.getuid?.() === 0
const realIp = spawnSync('sh', ['-c', 'command -v ip'], {encoding: 'utf8'}).stdout.trim()
const netnsWorks = isRoot && realIp !== '' && spawnSync('ip', ['netns', 'list']).status === 0
const skip = netnsWorks ? '' : ` (skipped: ${!isRoot ? 'not root: creating a network namespace needs CAP_NET_ADMIN' : 'no working `ip netns`'})`
const NS = `l30-nokr-${process.pid}`
const PORT = 21179

describe.skipIf(!netnsWorks)(`watch --listen without the kernel's routes${skip}`, {timeout: 60_000}, () => {
  let dir: string
  let agent: ResultPromise | undefined
  let stdout = ''

  /** An HTTP GET from inside the namespace: {status, body}. */
  async function get(url: string): Promise<{status: number; body: string}> {
    const r = await execa('ip', ['netns', 'exec', NS, process.execPath, path.join(dir, 'get.mjs'), url])
    return JSON.parse(r.stdout)
  }

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rd-nokr-'))
    writeFileSync(path.join(dir, 'get.mjs'), `const r = await fetch(process.argv[2]).catch((e) => ({status: 0, text: async () => e.message}))
process.stdout.write(JSON.stringify({status: r.status, body: await r.text()}))
`)
    const ip = path.join(dir, 'bin', 'ip')
    spawnSync('mkdir', ['-p', path.dirname(ip)])
    writeFileSync(ip, `#!/bin/sh\ncase " $* " in *" route show table all "*) echo "Error: ipv4: FIB table does not exist." >&2; exit 2;; esac\nexec ${realIp} "$@"\n`)
    chmodSync(ip, 0o755)
    await execa('ip', ['netns', 'add', NS])
    await execa('ip', ['-n', NS, 'link', 'set', 'lo', 'up'])
    agent = execa('ip', ['netns', 'exec', NS, 'env', `PATH=${path.dirname(ip)}:${process.env.PATH}`, process.execPath, BIN, 'watch',
      '--pool', '192.168.0.0/16=ipip', '--bird-socket', path.join(dir, 'no-bird.ctl'), '--interval', '1', '--listen', `127.0.0.1:${PORT}`, '--json'],
    {reject: false, cwd: ROOT, env: {NO_COLOR: '1'}, stdin: 'ignore'})
    agent.stdout!.on('data', (data: Buffer) => (stdout += data.toString()))
    const end = Date.now() + 30_000
    while ((await get(`http://127.0.0.1:${PORT}/healthz`)).status !== 200) {
      if (Date.now() > end || agent.exitCode !== null) throw new Error(`the agent did not start: ${(await agent).stderr}`)
      await new Promise((r) => setTimeout(r, 250))
    }
  })

  afterAll(async () => {
    agent?.kill('SIGTERM')
    await agent
    await execa('ip', ['netns', 'del', NS], {reject: false})
    if (dir) rmSync(dir, {recursive: true, force: true})
  })

  it('/explain (a query collected in full) is refused with E_NO_KERNEL_ROUTES and 503, naming the failed command', async () => {
    const r = await get(`http://127.0.0.1:${PORT}/explain?prefix=fd00:10::/64`)
    expect(r.status).toBe(503)
    const {error} = JSON.parse(r.body)
    expect(error.code).toBe('E_NO_KERNEL_ROUTES')
    expect(error.message).toBe('no kernel routes: `ip -j -d route show table all` exited with status 2: Error: ipv4: FIB table does not exist.; ' +
      '`ip -d route show table all` exited with status 2: Error: ipv4: FIB table does not exist.; nothing can be judged without them')
    expect(r.body).not.toContain('"verdict"')
  })

  it('the first line claims nothing of BGP sessions when BIRD cannot be reached (as check\'s node line)', async () => {
    const end = Date.now() + 30_000
    while (!stdout.includes('"kind":"started"') && Date.now() < end) await new Promise((r) => setTimeout(r, 100))
    const started = stdout.split('\n').map((l) => (l.startsWith('{') ? JSON.parse(l) : {})).find((l) => l.kind === 'started')
    expect(started.sessions).toEqual({up: 0, total: 0, known: false})
  })

  it('/report is refused the same way', async () => {
    const r = await get(`http://127.0.0.1:${PORT}/report`)
    expect(r.status).toBe(503)
    expect(JSON.parse(r.body).error.code).toBe('E_NO_KERNEL_ROUTES')
  })

  it('an IPv4 query, whose routes come from rtnetlink, is explained: the kernel is read', async () => {
    const r = await get(`http://127.0.0.1:${PORT}/explain?prefix=192.168.110.128/26`)
    expect(r.status, r.body).toBe(200)
    expect(JSON.parse(r.body)).toMatchObject({schema: 1, prefix: '192.168.110.128/26'})
  })
})
