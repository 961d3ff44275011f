// The live collector's sources one by one, on a fake /proc/sys tree, a fake `ip`, config files with
// includes, and a fake BIRD; plus the snapshot writer. The real node/namespace run is live-bird.test.ts.

import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { collectBird, collectBirdConfig, collectIp, collectLive, collectSysctl, readBirdConfig } from '../../src/collect/live.js'
import { ERRORS_FILE, SNAPSHOT_FILE_NAMES, grownBuffer, writeSnapshotDir, type SnapshotErrorEntry } from '../../src/collect/snapshot-files.js'
import { requireKernelRoutes } from '../../src/services/load.js'
import { sourceFlags } from '../../src/cli/base.js'

const dir = mkdtempSync(path.join(os.tmpdir(), 'h3-live-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function put(rel: string, text: string): string {
  const p = path.join(dir, rel)
  mkdirSync(path.dirname(p), { recursive: true })
  writeFileSync(p, text)
  return p
}

describe('collectSysctl', () => {
  it('prints `name = value` for forwarding, hash policy and every device rp_filter, all and default first', async () => {
    const root = path.join(dir, 'proc1')
    put('proc1/net/ipv4/ip_forward', '1\n')
    put('proc1/net/ipv4/fib_multipath_hash_policy', '2\n')
    put('proc1/net/ipv4/fib_multipath_use_neigh', '0\n')
    const devs: [string, string][] = [['tunl0', '1'], ['default', '1'], ['eth0.100', '2'], ['all', '0'], ['eth0', '0']]
    for (const [d, v] of devs) put(`proc1/net/ipv4/conf/${d}/rp_filter`, `${v}\n`)
    const f = await collectSysctl({ procSys: root })
    expect(f.error).toBeUndefined()
    expect(f.exitStatus).toBe(0)
    const lines = f.text!.trimEnd().split('\n')
    expect(lines.slice(0, 3)).toEqual(['net.ipv4.ip_forward = 1', 'net.ipv4.fib_multipath_hash_policy = 2', 'net.ipv4.fib_multipath_use_neigh = 0'])
    expect(lines[3]).toBe('net.ipv4.conf.all.rp_filter = 0')
    expect(lines[4]).toBe('net.ipv4.conf.default.rp_filter = 1')
    // sysctl writes a dot inside a device name as `/`.
    expect(lines.slice(5).sort()).toEqual(['net.ipv4.conf.eth0.rp_filter = 0', 'net.ipv4.conf.eth0/100.rp_filter = 2', 'net.ipv4.conf.tunl0.rp_filter = 1'])
  })

  it('leaves out an entry the kernel lacks and fails only when nothing is readable', async () => {
    put('proc2/net/ipv4/ip_forward', '0\n')
    mkdirSync(path.join(dir, 'proc2/net/ipv4/conf'), { recursive: true })
    const f = await collectSysctl({ procSys: path.join(dir, 'proc2') })
    expect(f.text).toBe('net.ipv4.ip_forward = 0\n')
    const g = await collectSysctl({ procSys: path.join(dir, 'proc-none') })
    expect(g.text).toBeUndefined()
    expect(g.error).toContain(path.join(dir, 'proc-none'))
  })
})

describe('collectIp', () => {
  const fakeIp = put('bin/fake-ip', '#!/bin/sh\nif [ "$1" = "fail" ]; then echo "Error: argument is wrong" >&2; exit 255; fi\nprintf \'%s|\' "$@"\n')
  chmodSync(fakeIp, 0o755)

  it('runs ip with the argument array (no shell) and records command, exit status and duration', async () => {
    const f = await collectIp('ip-rule.txt', ['rule', 'show', '$(x) ;a'], { ipBinary: fakeIp })
    expect(f.error).toBeUndefined()
    expect(f.text).toBe('rule|show|$(x) ;a|')
    expect(f.command).toBe('ip rule show $(x) ;a')
    expect(f.exitStatus).toBe(0)
    expect(f.durationMs).toBeGreaterThanOrEqual(0)
  })

  it('reports a non-zero exit with its stderr', async () => {
    const f = await collectIp('ip-rule.txt', ['fail'], { ipBinary: fakeIp })
    expect(f.text).toBeUndefined()
    expect(f.exitStatus).toBe(255)
    expect(f.error).toMatch(/`ip fail` exited with status 255: Error: argument is wrong/)
  })

  it("reads a full table's output whole (more than execa's 100 MB default), and refuses one over its limit clearly", async () => {
    // ~120 MB, as `ip -j -d route show table all` prints ~700k routes; non-ASCII at the end is kept as UTF-8
    const big = put('bin/big-ip', '#!/bin/sh\nhead -c 120000000 /dev/zero | tr \'\\000\' x\nprintf \'na\\303\\257ve\\n\'\n')
    chmodSync(big, 0o755)
    const f = await collectIp('ip-j-d-route.json', ['-j', '-d', 'route', 'show', 'table', 'all'], { ipBinary: big })
    expect(f.error).toBeUndefined()
    expect(f.exitStatus).toBe(0)
    expect(f.text!.length).toBe(120_000_000 + 'naïve\n'.length)
    expect(f.text!.endsWith('xxnaïve\n')).toBe(true)
    const g = await collectIp('ip-j-d-route.json', ['route'], { ipBinary: big, ipMaxOutput: 4096 })
    expect(g.text).toBeUndefined()
    expect(g.error).toBe('`ip route` printed more than 4096 bytes, more than routedoctor reads')
  }, 60_000)

  it('grows the buffer a source is read into to twice its size, or to what the next chunk needs', () => {
    const buf = Buffer.from('abcdef')
    const doubled = grownBuffer(buf, 4, 3)
    expect(doubled.length).toBe(12)
    expect(doubled.subarray(0, 4).toString()).toBe('abcd')
    const needed = grownBuffer(buf, 4, 100)
    expect(needed.length).toBe(104)
    expect(needed.subarray(0, 4).toString()).toBe('abcd')
  })

  it('waits for a dump that takes long while it keeps printing, and gives up on one that falls silent', async () => {
    // a full table on a busy node: longer than the limit in all, never silent that long
    const slow = put('bin/slow-ip', '#!/bin/sh\nfor i in 1 2 3 4 5 6; do printf "$i"; sleep 0.2; done\n')
    chmodSync(slow, 0o755)
    const f = await collectIp('ip-j-d-route.json', ['route'], { ipBinary: slow, ipTimeoutMs: 700 })
    expect(f.error).toBeUndefined()
    expect(f.text).toBe('123456')
    const stuck = put('bin/stuck-ip', '#!/bin/sh\nprintf "["; exec sleep 5\n')
    chmodSync(stuck, 0o755)
    const g = await collectIp('ip-j-d-route.json', ['route'], { ipBinary: stuck, ipTimeoutMs: 300 })
    expect(g.text).toBeUndefined()
    expect(g.error).toBe('`ip route` printed nothing for 300 ms')
    expect(g.durationMs).toBeLessThan(3000)
  })

  it('reports an ip binary that cannot run', async () => {
    const f = await collectIp('ip-rule.txt', ['rule', 'show'], { ipBinary: path.join(dir, 'bin/missing-ip') })
    expect(f.text).toBeUndefined()
    expect(f.error).toMatch(/^`ip rule show` could not run: .*ENOENT/)
  })
})

describe('collectBirdConfig', () => {
  it('reads the explicit path over the defaults and inlines includes relative to the including file', async () => {
    const main = put('cfg/confd/bird.cfg', 'router id 10.0.0.1;\ninclude "bird_ipam.cfg";\n  include "parts/*.conf"; # glob\nprotocol device {}\n')
    put('cfg/confd/bird_ipam.cfg', 'filter calico_kernel_programming {\n  if ( net ~ 192.168.0.0/16 ) then { krt_tunnel = "tunl0"; accept; }\n}')
    put('cfg/confd/parts/b.conf', 'protocol static b {}\n')
    put('cfg/confd/parts/a.conf', 'include "../nested.inc";\n')
    put('cfg/confd/nested.inc', 'protocol static nested {}\n')
    const other = put('cfg/other.conf', 'router id 9.9.9.9;\n')
    const f = await collectBirdConfig({ birdConfig: main, birdConfigCandidates: [other] })
    expect(f.error).toBeUndefined()
    expect(f.command).toBe(`read ${main}`)
    const t = f.text!
    const at = (s: string) => {
      const i = t.indexOf(s)
      expect(i, s).toBeGreaterThanOrEqual(0)
      return i
    }
    expect(t.startsWith('router id 10.0.0.1;\n')).toBe(true)
    expect(at('krt_tunnel = "tunl0"')).toBeLessThan(at('protocol static nested'))
    expect(at('protocol static nested')).toBeLessThan(at('protocol static b {}'))
    expect(at('protocol static b {}')).toBeLessThan(at('protocol device {}'))
    // No live include directive is left: BIRD's parser would otherwise look for the files again.
    expect(t.split('\n').filter((l) => /^\s*include\s/.test(l))).toEqual([])
    expect(t).not.toContain('9.9.9.9')
  })

  it('takes the first default that exists and records which', async () => {
    const second = put('cfg2/bird.conf', 'router id 1.2.3.4;\n')
    const f = await collectBirdConfig({ birdConfigCandidates: [path.join(dir, 'cfg2/none.cfg'), second] })
    expect(f.text).toBe('router id 1.2.3.4;\n')
    expect(f.command).toBe(`read ${second}`)
  })

  it('names every path tried when none exists, and the explicit path when it is missing', async () => {
    const tried = [path.join(dir, 'x1.conf'), path.join(dir, 'x2.conf')]
    const f = await collectBirdConfig({ birdConfigCandidates: tried })
    for (const p of tried) expect(f.error).toContain(p)
    // the hint names the flag the commands have
    expect(f.error).toMatch(/pass --bird-conf PATH$/)
    expect(Object.keys(sourceFlags)).toContain('bird-conf')
    const g = await collectBirdConfig({ birdConfig: tried[0]!, birdConfigCandidates: [put('cfg3/bird.conf', 'x')] })
    expect(g.text).toBeUndefined()
    expect(g.error).toContain(tried[0]!)
  })

  it('marks an include it cannot find instead of failing', async () => {
    const p = put('cfg4/bird.conf', 'include "gone.conf";\nrouter id 1.1.1.1;\n')
    const t = await readBirdConfig(p)
    expect(t).toContain(path.join(dir, 'cfg4/gone.conf'))
    expect(t).toContain('router id 1.1.1.1;')
    expect(t.split('\n')[0]).toMatch(/^# /)
  })
})

describe('collectBird', () => {
  it('makes all three BIRD files errors naming the socket when nothing listens', async () => {
    const sock = path.join(dir, 'no-bird.ctl')
    const files = await collectBird({ birdSocket: sock, birdTimeoutMs: 500 })
    expect(files.map((f) => f.name)).toEqual(['birdc-show-status.txt', 'birdc-show-route-all.txt', 'birdc-show-protocols-all.txt'])
    for (const f of files) {
      expect(f.text).toBeUndefined()
      expect(f.error).toContain(sock)
    }
  })

  it('stores birdc-printed text with the banner, and fails only the command BIRD rejects', async () => {
    const sock = path.join(dir, 'fake-bird.ctl')
    const server = net.createServer((conn) => {
      conn.write('0001 BIRD 1.6.8 ready.\n')
      let buf = ''
      conn.on('data', (d) => {
        buf += d.toString()
        for (let nl; (nl = buf.indexOf('\n')) >= 0; ) {
          const cmd = buf.slice(0, nl)
          buf = buf.slice(nl + 1)
          if (cmd === 'show status') conn.write('1000-BIRD 1.6.8\n1011-Router ID is 10.0.0.2\n Current server time is x\n0013 Daemon is up and running\n')
          else if (cmd === 'show route all') conn.write('1007-10.2.0.0/24        dev dB [direct1 15:45:52] * (240)\n1008-\tType: device unicast univ\n0000 \n')
          else conn.write('8003 No protocols match\n')
        }
      })
    })
    await new Promise<void>((r) => server.listen(sock, r))
    try {
      const [status, routes, protocols] = await collectBird({ birdSocket: sock })
      expect(status!.text).toBe('BIRD 1.6.8 ready.\nBIRD 1.6.8\nRouter ID is 10.0.0.2\nCurrent server time is x\nDaemon is up and running\n')
      expect(routes!.text).toBe('BIRD 1.6.8 ready.\n10.2.0.0/24        dev dB [direct1 15:45:52] * (240)\n\tType: device unicast univ\n')
      expect(status!.command).toContain(sock)
      expect(protocols!.text).toBeUndefined()
      expect(protocols!.error).toMatch(/show protocols all.*8003 No protocols match/)
    } finally {
      await new Promise((r) => server.close(r))
    }
  })
})

describe('collectLive', () => {
  it('returns every live source in DESIGN §3 order, each independent of the others', async () => {
    const files = await collectLive({
      ipBinary: path.join(dir, 'bin/missing-ip'),
      procSys: path.join(dir, 'proc2'),
      birdSocket: path.join(dir, 'no-bird.ctl'),
      birdTimeoutMs: 500,
      birdConfigCandidates: [put('cfg5/bird.conf', 'router id 5.5.5.5;\n')],
    })
    const names = files.map((f) => f.name)
    expect(names).toEqual(SNAPSHOT_FILE_NAMES.filter((n) => names.includes(n)))
    expect(new Set(names)).toEqual(new Set(SNAPSHOT_FILE_NAMES.filter((n) => !n.startsWith('ippools'))))
    const byName = new Map(files.map((f) => [f.name, f]))
    expect(byName.get('ip-j-d-route.json')!.error).toMatch(/could not run/)
    expect(byName.get('sysctl.txt')!.text).toBe('net.ipv4.ip_forward = 0\n')
    expect(byName.get('bird.conf')!.text).toBe('router id 5.5.5.5;\n')
    expect(byName.get('birdc-show-status.txt')!.error).toContain('no-bird.ctl')
    // the node's name travels with its sources (a snapshot directory or bundle made of them knows it)
    expect(byName.get('hostname')!.text).toBe(`${os.hostname()}\n`)
  })
})

describe('collectLive for a diagnosis', () => {
  // an ip that logs each invocation; with FAIL_JSON set, `ip -j -d route` fails
  const log = path.join(dir, 'ip-calls.log')
  const loggingIp = put('bin/logging-ip', `#!/bin/sh\necho "$*" >> ${log}\nif [ -n "$FAIL_JSON" ] && [ "$1 $3" = "-j route" ]; then echo boom >&2; exit 1; fi\nif [ -n "$FAIL_LINK" ] && [ "$1 $3" = "-j link" ]; then echo boom >&2; exit 1; fi\necho '[]'\n`)
  chmodSync(loggingIp, 0o755)
  const base = {ipBinary: loggingIp, procSys: path.join(dir, 'proc2'), birdSocket: path.join(dir, 'no-bird.ctl'), birdTimeoutMs: 500, birdConfigCandidates: []}
  const calls = () => readFileSync(log, 'utf8').trim().split('\n')

  it('reads the text route table only when the JSON one could not be read; a bundle reads both', async () => {
    rmSync(log, {force: true})
    const lean = await collectLive({...base, routeText: 'fallback'})
    expect(calls()).not.toContain('-d route show table all')
    expect(lean.map((f) => f.name)).not.toContain('ip-d-route.txt')
    expect(lean.find((f) => f.name === 'ip-j-d-route.json')!.text).toBe('[]\n')

    rmSync(log, {force: true})
    process.env.FAIL_JSON = '1'
    try {
      const failed = await collectLive({...base, routeText: 'fallback'})
      expect(calls()).toContain('-d route show table all')
      expect(failed.find((f) => f.name === 'ip-d-route.txt')!.text).toBe('[]\n')
      // in DESIGN §3 order still
      const names = failed.map((f) => f.name)
      expect(names).toEqual(SNAPSHOT_FILE_NAMES.filter((n) => names.includes(n)))
    } finally {
      delete process.env.FAIL_JSON
    }

    rmSync(log, {force: true})
    const every = await collectLive(base)
    expect(calls()).toContain('-d route show table all')
    expect(every.find((f) => f.name === 'ip-d-route.txt')!.text).toBe('[]\n')
  })

  it('reads the text link list only when the JSON one could not be read; a bundle reads both', async () => {
    rmSync(log, {force: true})
    const lean = await collectLive({...base, routeText: 'fallback'})
    expect(calls()).not.toContain('-d link show')
    expect(lean.map((f) => f.name)).not.toContain('ip-d-link.txt')
    rmSync(log, {force: true})
    process.env.FAIL_LINK = '1'
    try {
      const failed = await collectLive({...base, routeText: 'fallback'})
      expect(calls()).toContain('-d link show')
      expect(failed.find((f) => f.name === 'ip-d-link.txt')!.text).toBe('[]\n')
      const names = failed.map((f) => f.name)
      expect(names).toEqual(SNAPSHOT_FILE_NAMES.filter((n) => names.includes(n)))
    } finally {
      delete process.env.FAIL_LINK
    }
    rmSync(log, {force: true})
    await collectLive(base)
    expect(calls()).toContain('-d link show')
  })

  it('when neither route dump could be collected, a diagnosis is refused naming the commands and their errors', async () => {
    const failingIp = put('bin/failing-route-ip', '#!/bin/sh\nif [ "$1 $3" = "-j route" ] || [ "$1 $2" = "-d route" ]; then ' +
      'echo "Error: ipv4: FIB table does not exist." >&2; exit 2; fi\necho \'[]\'\n')
    chmodSync(failingIp, 0o755)
    const files = await collectLive({...base, ipBinary: failingIp, routeText: 'fallback'})
    const source = {files, origin: {kind: 'live' as const}}
    expect(() => requireKernelRoutes(source)).toThrow('no kernel routes: ' +
      '`ip -j -d route show table all` exited with status 2: Error: ipv4: FIB table does not exist.; ' +
      '`ip -d route show table all` exited with status 2: Error: ipv4: FIB table does not exist.; nothing can be judged without them')
    // the UI and watch show them as failed sources instead
    expect(files.filter((f) => f.error !== undefined && f.name.startsWith('ip')).map((f) => f.name)).toEqual(['ip-j-d-route.json', 'ip-d-route.txt'])
    // one that printed an empty table is data
    const empty = await collectLive({...base, routeText: 'fallback'})
    expect(() => requireKernelRoutes({files: empty, origin: {kind: 'live'}})).not.toThrow()
  })

  it('without the route tables (a targeted explanation\'s collection) runs no `ip route` at all', async () => {
    rmSync(log, {force: true})
    const files = await collectLive({...base, routeText: 'fallback', routeTables: false})
    expect(calls().filter((c) => c.includes('route'))).toEqual([])
    expect(files.map((f) => f.name).filter((n) => n.includes('route') && n.startsWith('ip'))).toEqual([])
  })
})

describe('writeSnapshotDir', () => {
  it('writes each collected text under its name and the failures to errors.json', async () => {
    const out = path.join(dir, 'snap')
    const written = await writeSnapshotDir(
      [
        { name: 'ip-rule.txt', text: '0:\tfrom all lookup local\n', command: 'ip rule show', exitStatus: 0, durationMs: 3 },
        { name: 'birdc-show-status.txt', error: 'BIRD control socket /x does not exist', command: 'show status (BIRD control socket /x)' },
        { name: 'ip-j-d-route.json', error: '`ip -j -d route show table all` exited with status 1: boom', exitStatus: 1, durationMs: 4 },
      ],
      out,
    )
    expect(written.sort()).toEqual([ERRORS_FILE, 'ip-rule.txt'].sort())
    expect(readdirSync(out).sort()).toEqual([ERRORS_FILE, 'ip-rule.txt'].sort())
    expect(readFileSync(path.join(out, 'ip-rule.txt'), 'utf8')).toBe('0:\tfrom all lookup local\n')
    const errors = JSON.parse(readFileSync(path.join(out, ERRORS_FILE), 'utf8')) as SnapshotErrorEntry[]
    expect(errors).toEqual([
      { name: 'birdc-show-status.txt', error: 'BIRD control socket /x does not exist', command: 'show status (BIRD control socket /x)' },
      { name: 'ip-j-d-route.json', error: '`ip -j -d route show table all` exited with status 1: boom', exitStatus: 1, durationMs: 4 },
    ])
  })

  it('writes an empty errors.json when nothing failed and refuses names that are paths', async () => {
    const out = path.join(dir, 'snap2')
    await writeSnapshotDir([{ name: 'sysctl.txt', text: 'net.ipv4.ip_forward = 1\n' }], out)
    expect(JSON.parse(readFileSync(path.join(out, ERRORS_FILE), 'utf8'))).toEqual([])
    await expect(writeSnapshotDir([{ name: '../evil.txt', text: 'x' }], out)).rejects.toThrow(/refusing/)
  })
})
