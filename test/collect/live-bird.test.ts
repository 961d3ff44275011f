// Real daemons: BIRD 2 (Debian bird2) and BIRD 1.6.8 (Debian bird, unpacked by test/lab/get-bird16.sh)
// in two network namespaces joined by a veth pair, peering over BGP. BirdSocket must print what
// birdc prints on the same socket, and collectLive, run inside a namespace, must return that
// namespace's kernel state and BIRD's replies.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execa } from 'execa'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BirdError, BirdSocket } from '../../src/collect/bird-socket.js'
import { SNAPSHOT_FILE_NAMES } from '../../src/collect/snapshot-files.js'
import type { SourceFile } from '../../src/model/types.js'

const ROOT = path.resolve(import.meta.dirname, '../..')
const BIRD2 = { bird: '/usr/sbin/bird', birdc: '/usr/sbin/birdc' }
const BIRD16_DIR = process.env.BIRD16_DIR ?? '/tmp/bird16'
const BIRD16 = { bird: `${BIRD16_DIR}/usr/sbin/bird`, birdc: `${BIRD16_DIR}/usr/sbin/birdc` }

function skipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root: network namespaces need CAP_NET_ADMIN'
  if (!existsSync(BIRD2.bird) || !existsSync(BIRD2.birdc)) return `BIRD 2 not installed (${BIRD2.bird}; apt-get install bird2)`
  if (!existsSync(BIRD16.bird)) {
    // Idempotent download+unpack of Debian's `bird` package; CI calls it too.
    spawnSync('bash', [path.join(ROOT, 'test/lab/get-bird16.sh'), BIRD16_DIR], { stdio: 'ignore', timeout: 180_000 })
  }
  if (!existsSync(BIRD16.bird) || !existsSync(BIRD16.birdc)) return `BIRD 1.6.8 not unpacked at ${BIRD16_DIR} (test/lab/get-bird16.sh failed)`
  return undefined
}
const skip = skipReason()
if (skip) console.warn(`live-bird.test.ts skipped: ${skip}`)

const tag = `h3-${process.pid}`
const NS_A = `${tag}-a` // BIRD 2, 10.33.0.1 on h3a
const NS_B = `${tag}-b` // BIRD 1.6, 10.33.0.2 on h3b
let dir = ''
const daemons: ChildProcess[] = []

interface Daemon {
  sock: string
  conf: string
  birdc: string
  version: RegExp
}
let b2: Daemon
let b16: Daemon

function sh(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr || r.error?.message}`)
}

async function startBird(ns: string, bin: string, conf: string, sock: string): Promise<void> {
  const child = spawn('ip', ['netns', 'exec', ns, bin, '-f', '-c', conf, '-s', sock, '-P', `${sock}.pid`], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  daemons.push(child)
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`${bin} exited ${child.exitCode}: ${stderr}`)
    try {
      ;(await BirdSocket.connect(sock, { timeoutMs: 1000 })).close()
      return
    } catch {
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  throw new Error(`${bin} did not open ${sock}: ${stderr}`)
}

async function teardown(): Promise<void> {
  for (const d of daemons.splice(0)) {
    if (d.exitCode !== null || d.signalCode !== null) continue
    const gone = new Promise((r) => d.once('exit', r))
    d.kill('SIGTERM')
    const t = setTimeout(() => d.kill('SIGKILL'), 3000)
    await gone
    clearTimeout(t)
  }
  for (const ns of [NS_A, NS_B]) spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' })
  if (dir) rmSync(dir, { recursive: true, force: true })
}

async function setup(): Promise<void> {
  dir = mkdtempSync(path.join(os.tmpdir(), `${tag}-`))
  sh('ip', ['netns', 'add', NS_A])
  sh('ip', ['netns', 'add', NS_B])
  sh('ip', ['-n', NS_A, 'link', 'add', 'h3a', 'type', 'veth', 'peer', 'name', 'h3b', 'netns', NS_B])
  sh('ip', ['-n', NS_A, 'addr', 'add', '10.33.0.1/24', 'dev', 'h3a'])
  sh('ip', ['-n', NS_B, 'addr', 'add', '10.33.0.2/24', 'dev', 'h3b'])
  for (const [ns, dev] of [[NS_A, 'h3a'], [NS_B, 'h3b']] as const) {
    sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up'])
    sh('ip', ['-n', ns, 'link', 'set', dev, 'up'])
  }
  // Values that differ from a default host, so the driver test can tell it read the namespace.
  sh('ip', ['netns', 'exec', NS_A, 'sysctl', '-qw', 'net.ipv4.ip_forward=1', 'net.ipv4.conf.h3a.rp_filter=2'])

  const b2conf = path.join(dir, 'b2.conf')
  writeFileSync(path.join(dir, 'b2-static.conf'), 'protocol static s4 { ipv4; route 10.33.10.0/24 blackhole; route 10.33.12.0/24 via 10.33.0.2 via 10.33.0.3; }\n')
  writeFileSync(
    b2conf,
    `router id 10.33.0.1;
protocol device { scan time 10; }
protocol direct { ipv4; interface "h3*"; }
protocol kernel { ipv4 { import all; export none; }; learn; scan time 10; }
include "b2-static.conf";
protocol bgp peer16 {
  local 10.33.0.1 as 65001; neighbor 10.33.0.2 as 65002;
  connect delay time 1; connect retry time 2; hold time 240;
  ipv4 { import all; export all; };
}
protocol bgp nobody { local 10.33.0.1 as 65001; neighbor 10.33.0.9 as 65009; ipv4 { import all; export none; }; }
`,
  )
  const b16conf = path.join(dir, 'b16.conf')
  writeFileSync(
    b16conf,
    `router id 10.33.0.2;
protocol device { scan time 10; }
protocol direct { interface "h3*"; }
protocol kernel { learn; scan time 10; import all; export none; }
protocol static s4 { route 10.33.20.0/24 blackhole; route 10.33.22.0/24 multipath via 10.33.0.1 via 10.33.0.3; }
protocol bgp peer2 {
  local 10.33.0.2 as 65002; neighbor 10.33.0.1 as 65001;
  connect delay time 1; connect retry time 2; hold time 240;
  import all; export all;
}
`,
  )
  b2 = { sock: path.join(dir, 'b2.ctl'), conf: b2conf, birdc: BIRD2.birdc, version: /^BIRD 2\.\d+\.\d+ ready\.$/ }
  b16 = { sock: path.join(dir, 'b16.ctl'), conf: b16conf, birdc: BIRD16.birdc, version: /^BIRD 1\.6\.\d+ ready\.$/ }
  await startBird(NS_A, BIRD2.bird, b2.conf, b2.sock)
  await startBird(NS_B, BIRD16.bird, b16.conf, b16.sock)
  // Wait for the session, so routes with BGP attributes (1012 continuation lines) are in both tables.
  const bird = await BirdSocket.connect(b2.sock)
  try {
    for (let i = 0; i < 60; i++) {
      if (/BGP state:\s+Established/.test(await bird.command('show protocols all peer16'))) break
      await new Promise((r) => setTimeout(r, 250))
    }
  } finally {
    bird.close()
  }
}

async function birdc(d: Daemon, cmd: string): Promise<string> {
  // birdc 2 exits 1 after an error reply; its output is what counts here.
  const r = await execa(d.birdc, ['-s', d.sock, ...cmd.split(' ')], { stripFinalNewline: false, reject: false })
  if (r.exitCode === undefined) throw new Error(`${d.birdc} could not run: ${r.message}`)
  return r.stdout
}

// Timers and clocks tick between two queries; digits are masked when two answers cannot agree exactly.
const mask = (s: string) => s.replace(/\d+/g, '0')

/** Our text (banner + reply) against birdc's, bracketed by two birdc runs; retried so a tick does not decide. */
async function compare(d: Daemon, cmd: string): Promise<{ exact: boolean; ours: string; theirs: string }> {
  const bird = await BirdSocket.connect(d.sock)
  try {
    let ours = ''
    let theirs = ''
    for (let i = 0; i < 5; i++) {
      const before = await birdc(d, cmd)
      ours = `${bird.hello}\n${await bird.command(cmd)}`
      theirs = await birdc(d, cmd)
      if (ours === before || ours === theirs) return { exact: true, ours, theirs: ours }
    }
    return { exact: false, ours, theirs }
  } finally {
    bird.close()
  }
}

describe.skipIf(skip !== undefined)('against real BIRD 2 and BIRD 1.6 daemons', () => {
  beforeAll(async () => {
    try {
      await setup()
    } catch (e) {
      await teardown()
      throw e
    }
  })
  afterAll(teardown)

  const daemonsUnderTest = () => [
    ['BIRD 2', b2],
    ['BIRD 1.6', b16],
  ] as const

  it('greets with the version birdc shows', async () => {
    for (const [, d] of daemonsUnderTest()) {
      const bird = await BirdSocket.connect(d.sock)
      bird.close()
      expect(bird.hello).toMatch(d.version)
      expect((await birdc(d, 'show status')).split('\n')[0]).toBe(bird.hello)
    }
  })

  it('prints `show route all` exactly as birdc does', async () => {
    for (const [name, d] of daemonsUnderTest()) {
      const r = await compare(d, 'show route all')
      expect(r.exact, `${name}: ${r.ours} vs ${r.theirs}`).toBe(true)
      // The lab's routes are there: statics and, over BGP, the peer's (with attribute continuation lines).
      expect(r.ours).toMatch(name === 'BIRD 2' ? /10\.33\.12\.0\/24/ : /10\.33\.22\.0\/24/)
      expect(r.ours).toMatch(name === 'BIRD 2' ? /10\.33\.20\.0\/24/ : /10\.33\.10\.0\/24/)
      expect(r.ours).toMatch(/\tBGP\.as_path: 6500\d/)
    }
  })

  it('prints `show status` and `show protocols all` as birdc does (clock digits masked if they ticked)', async () => {
    for (const [name, d] of daemonsUnderTest()) {
      for (const cmd of ['show status', 'show protocols all']) {
        const r = await compare(d, cmd)
        expect(r.ours.split('\n').length, `${name} ${cmd}`).toBe(r.theirs.split('\n').length)
        expect(mask(r.ours), `${name} ${cmd}`).toBe(mask(r.theirs))
      }
    }
    const proto = (await compare(b2, 'show protocols all')).ours
    expect(proto).toMatch(/BGP state:\s+Established/)
    expect(proto).toMatch(/\n\n/) // protocols separated by an empty line: a continuation with an empty payload
  })

  it('turns BIRD error replies into BirdError with the text birdc prints', async () => {
    for (const [, d] of daemonsUnderTest()) {
      const bird = await BirdSocket.connect(d.sock)
      try {
        for (const [cmd, cls] of [['show route bogus', 9], ['show route for 10.99.99.99', 8]] as const) {
          const err = await bird.command(cmd).catch((e: unknown) => e)
          expect(err, cmd).toBeInstanceOf(BirdError)
          expect(Math.floor((err as BirdError).birdCode / 1000), cmd).toBe(cls)
          expect((await birdc(d, cmd)).split('\n')[1], cmd).toBe((err as BirdError).text)
          expect((err as Error).message).toContain(d.sock)
        }
        // The connection is still good after an error reply.
        expect(await bird.command('show status')).toMatch(/Daemon is up and running\n$/)
      } finally {
        bird.close()
      }
    }
  })

  async function driver(ns: string, opts: object): Promise<SourceFile[]> {
    const r = await execa('ip', ['netns', 'exec', ns, 'npx', 'tsx', 'test/collect/driver.ts', JSON.stringify(opts)], { cwd: ROOT })
    return JSON.parse(r.stdout) as SourceFile[]
  }

  it('collectLive inside a namespace returns that namespace and its BIRD', async () => {
    const files = await driver(NS_A, { birdSocket: b2.sock, birdConfig: b2.conf })
    const by = new Map(files.map((f) => [f.name, f]))
    expect(files.map((f) => f.name)).toEqual(SNAPSHOT_FILE_NAMES.filter((n) => by.has(n)))
    for (const f of files) {
      expect(f.error, f.name).toBeUndefined()
      expect(f.exitStatus, f.name).toBe(0)
      expect(typeof f.durationMs, f.name).toBe('number')
      expect(f.command, f.name).toBeTruthy()
    }
    expect(by.get('ip-j-d-route.json')!.command).toBe('ip -j -d route show table all')
    const routes = JSON.parse(by.get('ip-j-d-route.json')!.text!) as { dst: string; dev?: string; table?: string }[]
    expect(routes.some((r) => r.dst === '10.33.0.0/24' && r.dev === 'h3a')).toBe(true)
    // Only the namespace's devices: every route is on lo or h3a.
    expect(routes.every((r) => r.dev === undefined || r.dev === 'lo' || r.dev === 'h3a')).toBe(true)
    expect(by.get('ip-d-route.txt')!.text).toMatch(/10\.33\.0\.0\/24 dev h3a/)
    const links = JSON.parse(by.get('ip-j-d-link.json')!.text!) as { ifname: string; linkinfo?: { info_kind?: string } }[]
    expect(links.map((l) => l.ifname).sort()).toEqual(['h3a', 'lo'])
    expect(links.find((l) => l.ifname === 'h3a')!.linkinfo?.info_kind).toBe('veth')
    expect(by.get('ip-d-link.txt')!.text).toMatch(/h3a@if\d+:.*\n(.*\n)*\s+veth/)
    expect(JSON.parse(by.get('ip-j-addr.json')!.text!)).toEqual(expect.arrayContaining([expect.objectContaining({ ifname: 'h3a' })]))
    expect(() => JSON.parse(by.get('ip-j-neigh.json')!.text!)).not.toThrow()
    expect(by.get('ip-rule.txt')!.text).toMatch(/^0:\tfrom all lookup local$/m)
    const sysctl = by.get('sysctl.txt')!.text!
    expect(sysctl).toMatch(/^net\.ipv4\.ip_forward = 1$/m)
    expect(sysctl).toMatch(/^net\.ipv4\.conf\.h3a\.rp_filter = 2$/m)
    expect(sysctl).toMatch(/^net\.ipv4\.conf\.all\.rp_filter = \d$/m)
    expect(sysctl).not.toMatch(/conf\.eth0\./)

    expect(by.get('birdc-show-status.txt')!.text).toMatch(/^BIRD 2\.\d+\.\d+ ready\.\nBIRD 2\.\d+\.\d+\nRouter ID is 10\.33\.0\.1\n/)
    const routeAll = by.get('birdc-show-route-all.txt')!.text!
    expect(routeAll.split('\n')[0]).toMatch(b2.version)
    expect(routeAll).toMatch(/^10\.33\.20\.0\/24 +unicast \[peer16 /m)
    expect(routeAll).not.toMatch(/^\d{4}[ -]/m)
    expect(by.get('birdc-show-protocols-all.txt')!.text).toMatch(/^nobody +BGP /m)
    const conf = by.get('bird.conf')!
    expect(conf.command).toBe(`read ${b2.conf}`)
    expect(conf.text).toContain('route 10.33.12.0/24 via 10.33.0.2 via 10.33.0.3;') // from the included file
  }, 60_000)

  it('collectLive keeps the other sources when BIRD is unreachable', async () => {
    const gone = path.join(dir, 'gone.ctl')
    const files = await driver(NS_B, { birdSocket: gone, birdConfig: path.join(dir, 'nope.conf'), birdTimeoutMs: 1000 })
    const by = new Map(files.map((f) => [f.name, f]))
    for (const n of ['birdc-show-status.txt', 'birdc-show-route-all.txt', 'birdc-show-protocols-all.txt']) {
      expect(by.get(n)!.text).toBeUndefined()
      expect(by.get(n)!.error).toContain(gone)
    }
    expect(by.get('bird.conf')!.error).toContain('nope.conf')
    expect(by.get('ip-d-route.txt')!.error).toBeUndefined()
    expect(by.get('ip-d-route.txt')!.text).toMatch(/10\.33\.0\.0\/24 dev h3b/)
    expect(by.get('sysctl.txt')!.text).toMatch(/^net\.ipv4\.conf\.h3b\.rp_filter = \d$/m)
  }, 60_000)
})
