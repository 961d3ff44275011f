// The apply journal (DESIGN §5): written and fsynced before the first route write, so whatever
// happens next, every route routedoctor touched can be put back exactly. Also the apply lock.
import {closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync} from 'node:fs'
import {hostname} from 'node:os'
import {dirname, join} from 'node:path'

import {RouteDoctorError} from '../model/errors.js'
import type {Family, KernelRoute, PlannedRoute} from '../model/types.js'
import type {RouteSpec} from './codec.js'

export type PlanMode = 'beside' | 'replace'

/** The kernel's identity of a route for replace and delete (IPv4: table, dst, tos, metric). */
export interface RouteKey {
  family: Family
  tableId: number
  dst: string
  metric: number
}

export interface JournalChange {
  mode: PlanMode
  key: RouteKey // where the planned route is written
  planned: PlannedRoute
  write: RouteSpec // exactly what is sent (RTM_NEWROUTE, NLM_F_CREATE|NLM_F_REPLACE)
  ipRoute: string // the same as an `ip route replace` line
  // every route at `key` before the write, as the kernel held it (fresh dump); put back on restore
  before: Array<{route: KernelRoute; spec: RouteSpec}>
  // the route the plan corrects, as it is now; in 'replace' mode it is also in `before`, in
  // 'beside' mode it is left alone and watched so its return can be told from a route war
  replaces?: {route: KernelRoute; spec: RouteSpec}
}

export type JournalState = 'pending' | 'applied' | 'restored' | 'reverted' | 'failed'

export interface Journal {
  schema: 1
  tool: 'routedoctor'
  time: string // ISO, when the journal was first written
  host: string
  pid: number
  state: JournalState
  changes: JournalChange[]
  history: Array<{time: string; state: JournalState; note?: string}>
}

export const LOCK_NAME = 'routedoctor.lock'

export function newJournalPath(dir: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')
  return join(dir, `routedoctor-journal-${stamp}-${process.pid}.json`)
}

// The journal's text: pretty JSON, except that each change is one compact line (a large plan's
// journal stays a few hundred bytes a route, and a person can still read it a route per line). The
// changes never change after the first write while the state is rewritten, so their encoded text
// (the bulk of a large journal) is kept, keyed by the array and its length.
const changesText = new WeakMap<JournalChange[], {count: number; bytes: Buffer}>()
const CHANGES_MARK = '\u0000routedoctor-changes\u0000'

/** The journal file's content, in pieces to write one after the other. */
function journalPieces(journal: Journal): Buffer[] {
  let cached = changesText.get(journal.changes)
  if (!cached || cached.count !== journal.changes.length) {
    const lines = journal.changes.map((c) => `    ${JSON.stringify(c)}`)
    cached = {count: journal.changes.length, bytes: Buffer.from(lines.length > 0 ? `[\n${lines.join(',\n')}\n  ]` : '[]')}
    changesText.set(journal.changes, cached)
  }
  const head = JSON.stringify({...journal, changes: CHANGES_MARK}, null, 2) + '\n'
  const at = head.indexOf(JSON.stringify(CHANGES_MARK))
  return [Buffer.from(head.slice(0, at)), cached.bytes, Buffer.from(head.slice(at + JSON.stringify(CHANGES_MARK).length))]
}

/** The journal file's text. */
export function journalText(journal: Journal): string {
  return Buffer.concat(journalPieces(journal)).toString()
}

/** Write durably: a temporary file, fsync, rename over the target, fsync the directory. */
export function writeJournal(path: string, journal: Journal): void {
  mkdirSync(dirname(path), {recursive: true})
  const tmp = `${path}.tmp-${process.pid}`
  const fd = openSync(tmp, 'w', 0o600)
  try {
    for (const piece of journalPieces(journal)) {
      for (let off = 0; off < piece.length; ) off += writeSync(fd, piece, off, piece.length - off)
    }
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, path)
  try {
    const dfd = openSync(dirname(path), 'r')
    try {
      fsyncSync(dfd)
    } finally {
      closeSync(dfd)
    }
  } catch {
    // some filesystems refuse fsync on a directory; the file itself is already synced
  }
}

export function setJournalState(path: string, journal: Journal, state: JournalState, note?: string): void {
  journal.state = state
  journal.history.push({time: new Date().toISOString(), state, ...(note ? {note} : {})})
  writeJournal(path, journal)
}

export function readJournal(path: string): Journal {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new RouteDoctorError(`cannot read journal ${path}: ${(error as Error).message}`, 2, 'E_JOURNAL')
  }
  let j: Journal
  try {
    j = JSON.parse(text) as Journal
  } catch (error) {
    throw new RouteDoctorError(`journal ${path} is not JSON: ${(error as Error).message}`, 2, 'E_JOURNAL')
  }
  if (j?.tool !== 'routedoctor' || j.schema !== 1 || !Array.isArray(j.changes)) {
    throw new RouteDoctorError(`${path} is not a routedoctor journal (schema 1)`, 2, 'E_JOURNAL')
  }
  return j
}

export function newJournal(changes: JournalChange[]): Journal {
  const time = new Date().toISOString()
  return {schema: 1, tool: 'routedoctor', time, host: hostname(), pid: process.pid, state: 'pending', changes, history: [{time, state: 'pending'}]}
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
 * Take the apply lock in `dir`: a file created with O_EXCL holding our pid. A lock whose pid no
 * longer runs (a crashed apply) is stale and taken over. Returns the release function.
 */
export function acquireLock(dir: string): () => void {
  mkdirSync(dir, {recursive: true})
  const path = join(dir, LOCK_NAME)
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600)
      writeSync(fd, `${process.pid}\n`)
      fsyncSync(fd)
      closeSync(fd)
      return () => {
        try {
          if (readFileSync(path, 'utf8').trim() === String(process.pid)) unlinkSync(path)
        } catch {
          // already gone
        }
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    let holder: number | undefined
    try {
      const n = Number(readFileSync(path, 'utf8').trim())
      holder = Number.isInteger(n) && n > 0 ? n : undefined
    } catch {
      continue // removed between our open and read: try again
    }
    if (holder !== undefined && pidAlive(holder)) {
      throw new RouteDoctorError(`another routedoctor apply is running (pid ${holder}, lock ${path}); wait for it to finish`, 1, 'E_LOCKED')
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
