// The apply lock: a file of the journal directory made with O_EXCL (Node has no flock). The agent (its container's own
// pid namespace) and a host's `fix` share that directory, so a pid alone names another process, or none, on the
// other side: the lock names its holder's pid namespace, pid, start time and boot, and keeps its mtime fresh.
import {closeSync, mkdirSync, openSync, readFileSync, readlinkSync, statSync, unlinkSync, utimesSync, writeSync} from 'node:fs'
import {join} from 'node:path'

import {RouteDoctorError} from '../model/errors.js'

export const LOCK_NAME = 'routedoctor.lock'
/** How often a holder sets its lock's mtime to now: the event loop runs this timer between an apply's steps. */
export const LOCK_REFRESH_MS = 10_000
/**
 * A lock of another pid namespace whose mtime is older than this is stale (its holder cannot be asked whether it
 * lives). Whatever --watch is, a live holder refreshes it every LOCK_REFRESH_MS; only a step that holds the event loop
 * for the lease would miss it, and an apply's longest synchronous step (a full table's journal text) takes seconds.
 */
export const LOCK_LEASE_MS = 120_000

/** Who holds a lock; `pidns` absent: a lock of an earlier version (its pid only), judged by that pid as ever. */
export interface LockHolder {
  pid: number
  pidns?: string // readlink /proc/self/ns/pid: "pid:[4026531836]"
  start?: number // /proc/PID/stat field 22: clock ticks after boot, so a reused pid is not taken for the holder
  boot?: string // /proc/sys/kernel/random/boot_id: no holder outlives a reboot
}

/** A process's start time (/proc/PID/stat field 22); undefined when /proc has no such process. */
function startOf(pid: number | 'self'): {pid: number; start: number} | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // the command (field 2) is in parentheses and may hold spaces and parentheses: the fields after it follow the last )
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  const start = Number(fields[19])
  const own = Number.parseInt(text, 10)
  return Number.isSafeInteger(start) && own > 0 ? {pid: own, start} : undefined
}

let self: LockHolder | null | undefined
/** This process as a lock names it; just its pid where /proc cannot tell (not Linux, or /proc of another namespace). */
export function selfHolder(): LockHolder {
  if (self === undefined) {
    self = null
    try {
      const stat = startOf('self')
      // /proc mounted for another pid namespace names us by another pid: its other entries are not our pids either
      if (stat && stat.pid === process.pid) {
        const pidns = readlinkSync('/proc/self/ns/pid')
        const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
        self = {pid: process.pid, pidns, start: stat.start, boot}
      }
    } catch {
      self = null
    }
  }
  return self ?? {pid: process.pid}
}

export function lockText(h: LockHolder): string {
  return h.pidns === undefined
    ? `${h.pid}\n`
    : `${JSON.stringify({pid: h.pid, pidns: h.pidns, start: h.start, boot: h.boot})}\n`
}

/** The holder a lock's text names; undefined for anything else (garbage: stale). */
export function parseLock(text: string): LockHolder | undefined {
  const t = text.trim()
  if (/^\d+$/.test(t)) {
    const pid = Number(t)
    return Number.isSafeInteger(pid) && pid > 0 ? {pid} : undefined
  }
  try {
    const v = JSON.parse(t) as Record<string, unknown>
    const {pid, pidns, start, boot} = v
    if (
      Number.isSafeInteger(pid) && (pid as number) > 0 && typeof pidns === 'string' &&
      Number.isSafeInteger(start) && typeof boot === 'string'
    )
      return {pid: pid as number, pidns, start: start as number, boot}
  } catch {
    // not JSON
  }
  return undefined
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' // exists, owned by someone else
  }
}

/**
 * Why the lock's holder still holds it, or undefined when the lock is stale. `ours`: a lock naming our pid that this
 * process does not hold is an earlier process's (the agent is PID 1 of its container at every restart).
 */
function holding(h: LockHolder, me: LockHolder, ours: boolean, ageMs: number, path: string): string | undefined {
  const busy = `another routedoctor apply is running (pid ${h.pid}`
  if (h.pidns === undefined) return ours || !pidAlive(h.pid) ? undefined : `${busy}, lock ${path})`
  if (me.pidns !== undefined && h.boot !== me.boot) return undefined // rebooted since
  if (me.pidns !== undefined && h.pidns === me.pidns) {
    if (ours) return undefined
    return startOf(h.pid)?.start === h.start ? `${busy}, lock ${path})` : undefined // gone, or its pid reused
  }
  if (ageMs > LOCK_LEASE_MS) return undefined
  const here = me.pidns === undefined ? 'this one unknown' : `not this one, ${me.pidns}`
  return (
    `${busy} in pid namespace ${h.pidns}, ${here}; lock ${path}, refreshed ${Math.max(0, Math.round(ageMs / 1000))} s ` +
    `ago; taken over once not refreshed for ${LOCK_LEASE_MS / 1000} s)`
  )
}

// the locks this process holds (applies, reverts and retention run on the main thread, never in a worker): a lock
// file naming our pid that is not one of them is an earlier process's
const heldLocks = new Set<string>()

/**
 * Take the apply lock in `dir`: a file created with O_EXCL naming this process. A stale lock is taken over: its
 * holder, in our pid namespace, no longer runs (a crashed apply; a pid since reused starts at another time), or it
 * names our own pid and this process does not hold it; or it is of another boot; or of another pid namespace and
 * not refreshed for LOCK_LEASE_MS. A lock of an earlier version (a pid only) is judged by that pid.
 * Returns the release function.
 */
export function acquireLock(dir: string): () => void {
  mkdirSync(dir, {recursive: true})
  const path = join(dir, LOCK_NAME)
  const me = selfHolder()
  const text = lockText(me)
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      // O_EXCL makes the lock; it need not survive a crash (its holder would not), so no fsync
      const fd = openSync(path, 'wx', 0o600)
      try {
        writeSync(fd, text)
      } finally {
        closeSync(fd)
      }
      return held(path, text)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    let holder: LockHolder | undefined
    let ageMs: number
    try {
      ageMs = Date.now() - statSync(path).mtimeMs
      holder = parseLock(readFileSync(path, 'utf8'))
    } catch {
      continue // removed between our open and read: try again
    }
    if (holder !== undefined) {
      const ours = holder.pid === me.pid && !heldLocks.has(path)
      const busy = holding(holder, me, ours, ageMs, path)
      if (busy !== undefined) throw new RouteDoctorError(`${busy}; wait for it to finish`, 1, 'E_LOCKED')
    }
    // stale: the holder is gone (or the file is garbage)
    try {
      unlinkSync(path)
    } catch {
      // someone else removed it first
    }
  }
  throw new RouteDoctorError(`cannot take the apply lock ${path}`, 1, 'E_LOCKED')
}

/** Our lock at `path`, holding `text`: kept fresh until released. */
function held(path: string, text: string): () => void {
  heldLocks.add(path)
  const mine = (): boolean => {
    try {
      return readFileSync(path, 'utf8') === text
    } catch {
      return false
    }
  }
  const timer = setInterval(() => {
    try {
      if (mine()) utimesSync(path, new Date(), new Date())
    } catch {
      // gone: nothing to keep fresh
    }
  }, LOCK_REFRESH_MS)
  timer.unref()
  return () => {
    clearInterval(timer)
    heldLocks.delete(path)
    try {
      if (mine()) unlinkSync(path)
    } catch {
      // already gone
    }
  }
}
