import {type ChildProcess, spawn, spawnSync} from 'node:child_process'
import {existsSync, readFileSync, readlinkSync, statSync, utimesSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {createInterface} from 'node:readline'

import {afterEach, describe, expect, it, vi} from 'vitest'

import {
  LOCK_LEASE_MS, LOCK_NAME, LOCK_REFRESH_MS, type LockHolder, acquireLock, lockText, parseLock, selfHolder,
} from '../../src/netlink/lock.js'
import {ROOT, tempDir} from '../helpers.js'

const tmp = (): string => tempDir('lk-lock-')
afterEach(() => {
  vi.useRealTimers()
})

const me = selfHolder()
const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
const startOf = (pid: number): number => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[19])
const deadPid = (): number => Number(spawnSync(process.execPath, ['-e', 'console.log(process.pid)']).stdout.toString())
/** Write a lock naming `h`, its mtime `ageMs` ago. */
function lockOf(dir: string, h: LockHolder | string, ageMs = 0): string {
  const path = join(dir, LOCK_NAME)
  writeFileSync(path, typeof h === 'string' ? h : lockText(h))
  const t = new Date(Date.now() - ageMs)
  utimesSync(path, t, t)
  return path
}
function takenOver(dir: string): void {
  const release = acquireLock(dir)
  expect(parseLock(readFileSync(join(dir, LOCK_NAME), 'utf8'))).toEqual(me)
  release()
  expect(existsSync(join(dir, LOCK_NAME))).toBe(false)
}
const other = {pid: 1, pidns: 'pid:[4026599999]', start: 42, boot: bootId}

describe('apply lock across pid namespaces', () => {
  it('names this process by pid namespace, pid, start time and boot', () => {
    expect(me).toEqual({pid: process.pid, pidns: readlinkSync('/proc/self/ns/pid'), start: startOf(process.pid), boot: bootId})
    const dir = tmp()
    const release = acquireLock(dir)
    expect(parseLock(readFileSync(join(dir, LOCK_NAME), 'utf8'))).toEqual(me)
    release()
  })

  it('a lock of another pid namespace is held within the lease, whatever its pid means here', () => {
    const dir = tmp()
    // pid 1 is init here, and a dead pid is none: neither says anything of the other namespace's holder
    for (const pid of [1, deadPid()]) {
      const path = lockOf(dir, {...other, pid}, LOCK_LEASE_MS - 60_000)
      expect(() => acquireLock(dir)).toThrow(
        `another routedoctor apply is running (pid ${pid} in pid namespace pid:[4026599999], not this one, ` +
          `${me.pidns}; lock ${path}, refreshed 60 s ago; taken over once not refreshed for 120 s); wait for it to finish`,
      )
      expect(parseLock(readFileSync(path, 'utf8'))).toEqual({...other, pid})
    }
  })

  it('a lock of another pid namespace not refreshed for the lease is taken over', () => {
    const dir = tmp()
    lockOf(dir, other, LOCK_LEASE_MS + 5000)
    takenOver(dir)
  })

  it('a lock of another boot is taken over at once', () => {
    const dir = tmp()
    lockOf(dir, {...other, boot: '00000000-0000-0000-0000-000000000000'})
    takenOver(dir)
  })

  it('in our namespace: a holder alive is held; a dead pid, or a pid reused since (another start time), is taken over', () => {
    const dir = tmp()
    const child = spawn('sleep', ['60'])
    try {
      const pid = child.pid!
      const alive = {pid, pidns: me.pidns, start: startOf(pid), boot: bootId}
      lockOf(dir, alive, LOCK_LEASE_MS * 10) // its age does not matter here
      expect(() => acquireLock(dir)).toThrow(`another routedoctor apply is running (pid ${pid}, lock `)
      lockOf(dir, {...alive, start: alive.start - 1})
      takenOver(dir)
    } finally {
      child.kill()
    }
    lockOf(dir, {pid: deadPid(), pidns: me.pidns, start: 1, boot: bootId})
    takenOver(dir)
    // our own pid, not held by this process: an earlier process's (the agent is PID 1 at every restart)
    lockOf(dir, {...me, start: 1})
    takenOver(dir)
  })

  it('a lock of an earlier version (a pid only) is judged by its pid as before', () => {
    const dir = tmp()
    const child = spawn('sleep', ['60'])
    try {
      lockOf(dir, `${child.pid}\n`, LOCK_LEASE_MS * 10)
      expect(() => acquireLock(dir)).toThrow(`another routedoctor apply is running (pid ${child.pid}, lock `)
    } finally {
      child.kill()
    }
    lockOf(dir, `${deadPid()}\n`)
    takenOver(dir)
    lockOf(dir, `${process.pid}\n`)
    takenOver(dir)
    lockOf(dir, 'garbage\n')
    takenOver(dir)
  })

  it('the holder keeps its lock fresh until it releases it', () => {
    vi.useFakeTimers({toFake: ['setInterval', 'clearInterval']})
    const dir = tmp()
    const path = join(dir, LOCK_NAME)
    const release = acquireLock(dir)
    const old = new Date(Date.now() - LOCK_LEASE_MS * 2)
    utimesSync(path, old, old)
    vi.advanceTimersByTime(LOCK_REFRESH_MS)
    expect(statSync(path).mtimeMs).toBeGreaterThan(old.getTime() + LOCK_LEASE_MS)
    release()
    expect(vi.getTimerCount()).toBe(0)
  })
})

// a real second pid namespace, as the agent's container is: unshare as root
const canUnshare = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']).status === 0
describe.runIf(canUnshare)('apply lock with a holder in a real second pid namespace', () => {
  interface Holder {
    child: ChildProcess
    first: {held: boolean; pid?: number; message?: string}
  }
  async function holderIn(dir: string): Promise<Holder> {
    const child = spawn(
      'unshare',
      ['--pid', '--fork', '--mount-proc', process.execPath, '--import', 'tsx', 'test/netlink/lock-holder.ts', dir],
      {cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit']},
    )
    for await (const line of createInterface({input: child.stdout!})) return {child, first: JSON.parse(line)}
    throw new Error('the holder printed nothing')
  }
  const ended = (c: ChildProcess) => new Promise((resolve) => c.once('close', resolve))

  it('the other namespace\'s holder (its PID 1) keeps the lock; once gone, the lock is held until the lease ends', async () => {
    const dir = tmp()
    const h = await holderIn(dir)
    expect(h.first).toEqual({held: true, pid: 1})
    const lock = parseLock(readFileSync(join(dir, LOCK_NAME), 'utf8'))!
    expect(lock.pidns).not.toBe(me.pidns)
    expect(() => acquireLock(dir)).toThrow(`another routedoctor apply is running (pid 1 in pid namespace ${lock.pidns}, not this one`)
    h.child.stdin!.write('crash\n') // exits holding it, as a killed apply would
    await ended(h.child)
    expect(() => acquireLock(dir)).toThrow(/pid 1 in pid namespace/)
    const old = new Date(Date.now() - LOCK_LEASE_MS - 1000)
    utimesSync(join(dir, LOCK_NAME), old, old)
    takenOver(dir)
  }, 30_000)

  it('our lock is held against the other namespace, where our pid names nothing', async () => {
    const dir = tmp()
    const release = acquireLock(dir)
    try {
      const h = await holderIn(dir)
      await ended(h.child)
      expect(h.first.held).toBe(false)
      expect(h.first.message).toContain(`another routedoctor apply is running (pid ${process.pid} in pid namespace ${me.pidns}`)
    } finally {
      release()
    }
    const h = await holderIn(dir) // released: the other namespace takes it, and releases it
    expect(h.first).toEqual({held: true, pid: 1})
    h.child.stdin!.write('release\n')
    await ended(h.child)
    expect(existsSync(join(dir, LOCK_NAME))).toBe(false)
  }, 30_000)
})
