// Huge pages for a large input (src/runtime/hugepages.ts): when bin/run.js runs the CLI again with
// glibc.malloc.hugetlb=1, what it decides from, and the re-run as a user sees it (the same output and
// exit status, signals passed on).
import {spawn, spawnSync} from 'node:child_process'
import {cpSync, existsSync, readFileSync, rmSync, truncateSync, writeFileSync} from 'node:fs'
import path from 'node:path'

import {execa} from 'execa'
import {describe, expect, it, onTestFinished} from 'vitest'

import {HUGE_INPUT_BYTES, HUGE_LIVE_PREFIXES, type HugePageFacts, largestFibTable, fromFlag, hugePageEnv, probeMachine, snapshotInputBytes, thpMode} from '../../src/runtime/hugepages.js'
import {BIN, FIXTURES, ROOT, tempDir} from '../helpers.js'

const TUNABLE = 'glibc.malloc.hugetlb=1'
const BIG = HUGE_INPUT_BYTES

function facts(over: Partial<HugePageFacts> = {}): HugePageFacts {
  return {
    argv: ['check', '--from', '/snap'],
    env: {PATH: '/usr/bin'},
    thpEnabled: () => 'always [madvise] never\n',
    glibcVersion: () => '2.36',
    inputBytes: () => BIG,
    liveFibStat: () => undefined,
    isTTY: false,
    ...over,
  }
}

describe('when the CLI is run again with huge pages', () => {
  it('a snapshot or bundle at the threshold, THP in madvise mode, glibc 2.35+: the tunable is added, the rest of the environment kept', () => {
    expect(hugePageEnv(facts())).toEqual({PATH: '/usr/bin', GLIBC_TUNABLES: TUNABLE})
    expect(hugePageEnv(facts({argv: ['explain', '10.0.0.1', '--from=/snap']}))).toMatchObject({GLIBC_TUNABLES: TUNABLE})
    expect(hugePageEnv(facts({glibcVersion: () => '2.35'}))).toMatchObject({GLIBC_TUNABLES: TUNABLE})
    // the user's own tunables stay, ours appended
    expect(hugePageEnv(facts({env: {GLIBC_TUNABLES: 'glibc.malloc.arena_max=2'}}))?.GLIBC_TUNABLES).toBe(`glibc.malloc.arena_max=2:${TUNABLE}`)
  })

  it('not for a smaller input, another THP mode, an older glibc or musl, or a tunable already set (the re-run itself)', () => {
    expect(hugePageEnv(facts({inputBytes: () => BIG - 1}))).toBeUndefined()
    expect(hugePageEnv(facts({inputBytes: () => undefined}))).toBeUndefined()
    expect(hugePageEnv(facts({thpEnabled: () => '[always] madvise never'}))).toBeUndefined()
    expect(hugePageEnv(facts({thpEnabled: () => 'always madvise [never]'}))).toBeUndefined()
    expect(hugePageEnv(facts({thpEnabled: () => undefined}))).toBeUndefined()
    expect(hugePageEnv(facts({glibcVersion: () => '2.34'}))).toBeUndefined()
    expect(hugePageEnv(facts({glibcVersion: () => '2.31'}))).toBeUndefined()
    expect(hugePageEnv(facts({glibcVersion: () => undefined}))).toBeUndefined()
    expect(hugePageEnv(facts({env: {GLIBC_TUNABLES: TUNABLE}}))).toBeUndefined()
    expect(hugePageEnv(facts({env: {GLIBC_TUNABLES: 'glibc.malloc.hugetlb=0'}}))).toBeUndefined()
  })

  it('only for the commands that read a node\'s tables, and not for help, versions, a revert or the BIRD snippet', () => {
    for (const command of ['check', 'explain', 'fix', 'bundle', 'ui']) expect(hugePageEnv(facts({argv: [command, '--from', '/snap']})), command).toBeDefined()
    for (const argv of [['--version'], ['help', 'check'], ['check', '--help', '--from', '/snap'], ['fix', '--revert', 'j.json', '--from', '/snap'], ['fix', '--bird-config', '--from', '/snap'], ['check', '-h']]) {
      expect(hugePageEnv(facts({argv})), argv.join(' ')).toBeUndefined()
    }
    // a bare routedoctor is the UI on a terminal, and oclif's usage otherwise
    expect(hugePageEnv(facts({argv: [], isTTY: true, liveFibStat: () => `Main:\n\tPrefixes:\t${HUGE_LIVE_PREFIXES}\n`}))).toBeDefined()
    expect(hugePageEnv(facts({argv: [], isTTY: false, liveFibStat: () => `Main:\n\tPrefixes:\t${HUGE_LIVE_PREFIXES}\n`}))).toBeUndefined()
  })

  it('live, by the routes of this namespace\'s largest FIB table', () => {
    const live = (n: number) => facts({argv: ['check'], liveFibStat: () => `Id 100:\n\tPrefixes:\t${n}\nMain:\n\tPrefixes:\t7\nLocal:\n\tPrefixes:\t7\n`})
    expect(hugePageEnv(live(HUGE_LIVE_PREFIXES))).toBeDefined()
    expect(hugePageEnv(live(HUGE_LIVE_PREFIXES - 1))).toBeUndefined()
    expect(hugePageEnv(facts({argv: ['check']}))).toBeUndefined() // no fib_triestat
  })

  it('not for a live explain of an IPv4 block or address (it collects that block\'s routes): the FIB is not even read', () => {
    let read = 0
    const big = () => {
      read++
      return `Main:\n\tPrefixes:\t${HUGE_LIVE_PREFIXES}\n`
    }
    expect(hugePageEnv(facts({argv: ['explain', '10.48.212.0/26', '--bird-socket', '/run/bird.ctl'], liveFibStat: big}))).toBeUndefined()
    expect(hugePageEnv(facts({argv: ['explain', '--json', '10.48.212.7'], liveFibStat: big}))).toBeUndefined()
    expect(read).toBe(0)
    // an IPv6 query collects the tables, as check does
    expect(hugePageEnv(facts({argv: ['explain', 'fd00:10::/122'], liveFibStat: big}))).toBeDefined()
  })

  it('ROUTEDOCTOR_HUGEPAGES=1 re-runs whatever the size (where THP and glibc allow); =0 never', () => {
    expect(hugePageEnv(facts({inputBytes: () => 10, env: {ROUTEDOCTOR_HUGEPAGES: '1'}}))).toMatchObject({GLIBC_TUNABLES: TUNABLE})
    expect(hugePageEnv(facts({argv: ['check'], env: {ROUTEDOCTOR_HUGEPAGES: '1'}}))).toMatchObject({GLIBC_TUNABLES: TUNABLE})
    expect(hugePageEnv(facts({inputBytes: () => 10, thpEnabled: () => 'always madvise [never]', env: {ROUTEDOCTOR_HUGEPAGES: '1'}}))).toBeUndefined()
    expect(hugePageEnv(facts({env: {ROUTEDOCTOR_HUGEPAGES: '0'}}))).toBeUndefined()
  })

  it('reads --from as oclif does, the THP mode, and a fib_triestat', () => {
    expect(fromFlag(['check', '--from', 'a', '--json'])).toBe('a')
    expect(fromFlag(['check', '--json', '--from=b'])).toBe('b')
    expect(fromFlag(['check', '--from'])).toBeUndefined()
    expect(fromFlag(['explain', '--', '--from', 'c'])).toBeUndefined()
    expect(thpMode('always [madvise] never\n')).toBe('madvise')
    expect(thpMode('[always] madvise never')).toBe('always')
    expect(thpMode('')).toBeUndefined()
    // this machine's own file has the kernel's layout: every table's prefixes, counted
    if (existsSync('/proc/net/fib_triestat')) expect(largestFibTable(readFileSync('/proc/net/fib_triestat', 'latin1'))).toBeGreaterThan(0)
  })

  it('a snapshot directory\'s files are summed (sparse ones by their size, unknown ones not at all); a bundle counts three times its size', () => {
    const dir = tempDir('rd-huge-')
    cpSync(path.join(FIXTURES, 'bird2-ecmp-not-tunneled'), dir, {recursive: true})
    const small = snapshotInputBytes(dir)!
    expect(small).toBeGreaterThan(1000)
    expect(small).toBeLessThan(BIG)
    writeFileSync(path.join(dir, 'notes.bin'), Buffer.alloc(5000))
    expect(snapshotInputBytes(dir)).toBe(small)
    truncateSync(path.join(dir, 'birdc-show-route-all.txt'), BIG)
    expect(snapshotInputBytes(dir)).toBeGreaterThan(BIG)
    const bundle = path.join(dir, 'b.tar.gz')
    writeFileSync(bundle, Buffer.alloc(1000))
    expect(snapshotInputBytes(bundle)).toBe(3000)
    expect(snapshotInputBytes(path.join(dir, 'nonexistent'))).toBeUndefined()
  })
})

// The kernel's own count, in a namespace of the test's: the routes it adds are the prefixes counted.
const root = process.getuid?.() === 0 && spawnSync('ip', ['netns', 'list']).status === 0
describe.skipIf(!root)(`/proc/net/fib_triestat in a namespace${root ? '' : ' (skipped: needs root and ip netns)'}`, () => {
  it('counts the routes of the largest table, main (which shares its trie with local) or another', () => {
    const ns = `rd-hp-${process.pid}`
    expect(spawnSync('ip', ['netns', 'add', ns]).status).toBe(0)
    onTestFinished(() => {
      spawnSync('ip', ['netns', 'del', ns])
    })
    expect(spawnSync('ip', ['-n', ns, 'link', 'set', 'lo', 'up']).status).toBe(0)
    const largest = () => largestFibTable(spawnSync('ip', ['netns', 'exec', ns, 'cat', '/proc/net/fib_triestat'], {encoding: 'latin1'}).stdout)
    const add = (n: number, table: string, second: number) => {
      const batch = Array.from({length: n}, (_, i) => `route add 10.${second}.${i >> 8}.${i & 255}/32 dev lo table ${table}\n`).join('')
      expect(spawnSync('ip', ['-n', ns, '-batch', '-'], {input: batch}).status).toBe(0)
    }
    const before = largest()
    expect(before).toBeGreaterThan(0) // lo's local routes
    add(300, 'main', 1)
    expect(largest() - before).toBe(300)
    add(700, '100', 2)
    expect(largest()).toBe(700)
    // what the CLI reads run inside the namespace (ip netns exec … routedoctor): that namespace's tables
    const script = `import(${JSON.stringify(path.join(ROOT, 'dist/runtime/hugepages.js'))}).then((m) => console.log(m.largestFibTable(m.probeMachine(['check']).liveFibStat())))`
    const inside = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e', script], {encoding: 'utf8'})
    expect(inside.stdout.trim(), inside.stderr).toBe('700')
  })
})

// The re-run as a user sees it. It needs what it needs on a node: THP in madvise mode and glibc 2.35+.
const machine = probeMachine(['check'])
const reason = thpMode(machine.thpEnabled()) !== 'madvise' ? `THP is not in madvise mode here (${machine.thpEnabled()?.trim()})` : hugePageEnv({...machine, env: {ROUTEDOCTOR_HUGEPAGES: '1'}}) ? undefined : `glibc ${machine.glibcVersion()} does not know ${TUNABLE}`

describe.skipIf(reason !== undefined)(`the re-run${reason ? ` (skipped: ${reason})` : ''}`, () => {
  // Each Node process of a run records its pid, its parent and its GLIBC_TUNABLES (NODE_OPTIONS reaches both).
  function probe(dir: string): {file: string; env: Record<string, string>} {
    const file = path.join(dir, 'processes.txt')
    const script = path.join(dir, 'probe.cjs')
    writeFileSync(script, `require('fs').appendFileSync(${JSON.stringify(file)}, JSON.stringify({pid: process.pid, ppid: process.ppid, tunables: process.env.GLIBC_TUNABLES ?? null}) + '\\n')\n`)
    return {file, env: {NODE_OPTIONS: `--require ${script}`}}
  }
  const processes = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as {pid: number; ppid: number; tunables: string | null}) : [])

  it('runs the CLI as a child with the tunable, whose output and exit status are the command\'s own', async () => {
    const dir = tempDir('rd-huge-')
    const snapshot = path.join(FIXTURES, 'bird2-ecmp-not-tunneled')
    const runs = []
    for (const knob of ['1', '0']) {
      const p = probe(dir)
      rmSync(p.file, {force: true})
      for (const args of [['check', '--from', snapshot, '--json'], ['explain', '192.168.110.128/26', '--from', snapshot]]) {
        const res = await execa('node', [BIN, ...args], {reject: false, cwd: ROOT, env: {NO_COLOR: '1', ROUTEDOCTOR_HUGEPAGES: knob, GLIBC_TUNABLES: '', ...p.env}})
        runs.push({knob, args, exitCode: res.exitCode, stdout: res.stdout, stderr: res.stderr})
      }
      const seen = processes(p.file)
      if (knob === '1') {
        // per command: the parent without the tunable, its child with it
        expect(seen).toHaveLength(4)
        for (let i = 0; i < 4; i += 2) {
          expect(seen[i].tunables ?? '').not.toContain('hugetlb')
          expect(seen[i + 1]).toMatchObject({ppid: seen[i].pid, tunables: TUNABLE})
        }
      } else {
        expect(seen).toHaveLength(2)
        for (const s of seen) expect(s.tunables ?? '').not.toContain('hugetlb')
      }
    }
    const [withCheck, withExplain, withoutCheck, withoutExplain] = runs
    expect(withCheck.exitCode).toBe(1) // the capture's findings are errors
    expect(withCheck.exitCode).toBe(withoutCheck.exitCode)
    expect(withCheck.stdout).toBe(withoutCheck.stdout)
    expect(JSON.parse(withCheck.stdout).schema).toBe(1)
    expect(withExplain.exitCode).toBe(withoutExplain.exitCode)
    expect(withExplain.stdout).toBe(withoutExplain.stdout)
    expect(withExplain.stdout).toContain('192.168.110.128/26')
  })

  it('a large snapshot is re-run by its size alone, and a bad input\'s message and exit status 2 come through', async () => {
    const dir = tempDir('rd-huge-')
    cpSync(path.join(FIXTURES, 'bird2-ecmp-not-tunneled'), dir, {recursive: true})
    writeFileSync(path.join(dir, 'sysctl.txt'), 'net.ipv4.ip_forward = 1\nthis is not a sysctl line\n')
    // large by the sparse text form of the route table, counted though not read (the JSON form is there)
    truncateSync(path.join(dir, 'ip-d-route.txt'), HUGE_INPUT_BYTES)
    const p = probe(dir)
    const env: Record<string, string | undefined> = {...process.env, NO_COLOR: '1', GLIBC_TUNABLES: '', ...p.env}
    delete env.ROUTEDOCTOR_HUGEPAGES
    const res = await execa('node', [BIN, 'check', '--from', dir], {reject: false, cwd: ROOT, env, extendEnv: false})
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toMatch(/sysctl\.txt:2/)
    expect(res.stderr).not.toMatch(/\n\s+at /)
    const seen = processes(p.file)
    expect(seen).toHaveLength(2)
    expect(seen[1]).toMatchObject({ppid: seen[0].pid, tunables: TUNABLE})
  })

  it('a signal sent to the parent reaches the child, and the parent ends by it', async () => {
    const dir = tempDir('rd-huge-')
    const snapshot = path.join(dir, 'snap')
    cpSync(path.join(FIXTURES, 'bird2-ecmp-not-tunneled'), snapshot, {recursive: true})
    // a FIFO nobody writes: the child blocks opening it, until the signal
    rmSync(path.join(snapshot, 'sysctl.txt'))
    expect(spawnSync('mkfifo', [path.join(snapshot, 'sysctl.txt')]).status).toBe(0)
    const p = probe(dir)
    const parent = spawn('node', [BIN, 'check', '--from', snapshot], {cwd: ROOT, env: {...process.env, ROUTEDOCTOR_HUGEPAGES: '1', GLIBC_TUNABLES: '', ...p.env}, stdio: 'ignore'})
    const ended = new Promise<{code: number | null; signal: NodeJS.Signals | null}>((resolve) => parent.once('exit', (code, signal) => resolve({code, signal})))
    onTestFinished(() => {
      // nothing outlives a failed test
      for (const pid of processes(p.file).map((x) => x.pid)) {
        try {
          process.kill(pid, 'SIGKILL')
        } catch {
          // gone
        }
      }
    })
    let seen = processes(p.file)
    for (let i = 0; i < 200 && seen.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 50))
      seen = processes(p.file)
    }
    expect(seen).toHaveLength(2)
    const child = seen[1]
    expect(child.ppid).toBe(parent.pid)
    await new Promise((r) => setTimeout(r, 300)) // the child reaches the FIFO
    parent.kill('SIGTERM')
    expect(await ended).toEqual({code: null, signal: 'SIGTERM'})
    const alive = (() => {
      try {
        process.kill(child.pid, 0)
        return true
      } catch {
        return false
      }
    })()
    expect(alive).toBe(false)
  })
})
