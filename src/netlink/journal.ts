// The apply journal (DESIGN §5): written and fsynced before the first route write, so whatever
// happens next, every route routedoctor touched can be put back exactly.
import {
  closeSync,
  fdatasyncSync,
  fstatSync,
  fsync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import {hostname} from 'node:os'
import {dirname, join} from 'node:path'

import {RouteDoctorError} from '../model/errors.js'
import {canonicalPrefix, familyOf} from '../model/prefix.js'
import type {Family, KernelRoute, PlannedRoute} from '../model/types.js'
import type {RouteSpec, RuleSpec} from './codec.js'
import {acquireLock} from './lock.js'

export {acquireLock, LOCK_NAME} from './lock.js'

export type PlanMode = 'beside' | 'replace' | 'overlay' | 'delete'

/** The kernel's identity of a route for replace and delete (IPv4: table, dst, tos, metric). */
export interface RouteKey {
  family: Family
  tableId: number
  dst: string
  metric: number
}

// One planned route in the journal, a line of the file: {"mode":…,"planned":…,"before":[…]}.
export interface JournalChange {
  mode: PlanMode
  planned: PlannedRoute
  // every route at the planned key before the write, as the kernel held it (fresh dump); put back on restore
  before: Array<{route: KernelRoute; spec: RouteSpec}>
  // journals of schema 1 also hold `key` (the planned route's key, which changeKey derives), `ipRoute`
  // (its `ip route replace` line), `write` (the RTM_NEWROUTE spec, which the planned route and the
  // links give again) and `replaces` (the route the plan corrects: in 'replace' mode it is in
  // `before` too, in 'beside' mode it is not touched)
  key?: RouteKey
  ipRoute?: string
  write?: RouteSpec
  replaces?: {route: KernelRoute; spec: RouteSpec}
}

const derivedKeys = new WeakMap<JournalChange, RouteKey>()

/**
 * Where the change's planned route is written (the kernel's key of it): its family, canonical
 * destination, table and metric, as plannedSpec makes them. A journal of schema 1 holds it as `key`.
 */
export function changeKey(change: JournalChange): RouteKey {
  if (change.key) return change.key
  let key = derivedKeys.get(change)
  if (!key) {
    const p = change.planned
    const family = familyOf(p.dst)
    key = {family, tableId: p.tableId, dst: canonicalPrefix(p.dst, family) ?? p.dst, metric: p.metric}
    derivedKeys.set(change, key)
  }
  return key
}

export type JournalState = 'pending' | 'applied' | 'restored' | 'reverted' | 'failed'

/** One `ip rule` an apply adds or deletes, and whether the kernel held it before (what a restore puts back). */
export interface JournalRule {
  action: 'add' | 'delete'
  rule: RuleSpec
  existed: boolean
}

// Key order is file order: the changes, written once, come before state and history, which an
// update rewrites in place (JournalFile.setState) without touching the bytes before them.
export interface Journal {
  schema: 1 | 2 | 3 // 2: changes without key and ipRoute; 3: `rules` too (the overlay's); all are read
  tool: 'routedoctor'
  time: string // ISO, when the journal was first written
  host: string
  pid: number
  rules?: JournalRule[] // before the changes: written once, with the head
  changes: JournalChange[]
  state: JournalState
  history: Array<{time: string; state: JournalState; note?: string}>
  // indices of `rules` an add found already there (EEXIST: written by another since the rules were read): present
  // before, as if `existed`, so that no restore removes them; in the tail, as it is learnt after the head is written
  rulesPresent?: number[]
}

export function newJournalPath(dir: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')
  return join(dir, `routedoctor-journal-${stamp}-${process.pid}.json`)
}

// The journal's text: pretty JSON, except that each change is one compact line (a large plan's
// journal stays a few hundred bytes a route, and a person can still read it a route per line).
const CHANGES_MARK = '\u0000routedoctor-changes\u0000'
// Where the changes end in the file: no change line holds a raw newline (JSON escapes it), so the
// first "\n  ]," after the head closes the array; the empty array is "[],".
const CHANGES_END = /\n {2}\],\n|"changes": \[\],\n/
// Changes are stringified this many at a time (one call per change costs more than its text; one
// for all builds a string the size of the journal, which the garbage collector copies around)
const CHUNK = 512

/** The head (up to the changes array) and the tail (after it: state and history) of the journal's text. */
function headAndTail(journal: Journal): [string, string] {
  const mark = JSON.stringify(CHANGES_MARK)
  const text = JSON.stringify({...journal, changes: CHANGES_MARK}, null, 2) + '\n'
  const at = text.indexOf(mark)
  return [text.slice(0, at), text.slice(at + mark.length)]
}

/**
 * The changes array's text, a chunk at a time, to `emit`: a line per change. Every change starts
 * {"mode": and inside a JSON string every quote is escaped, so the raw },{"mode": occurs only
 * between two changes (were it ever inside one, the line would break there, which JSON allows).
 */
function changesText(changes: readonly JournalChange[], emit: (text: string) => void): void {
  if (changes.length === 0) {
    emit('[]')
    return
  }
  for (let i = 0; i < changes.length; i += CHUNK) {
    const json = JSON.stringify(i === 0 && changes.length <= CHUNK ? changes : changes.slice(i, i + CHUNK))
    // emitted apart, so that no piece is a concatenation the writer would first copy flat
    emit(i === 0 ? '[\n    ' : ',\n    ')
    emit(json.slice(1, -1).replaceAll('},{"mode":', '},\n    {"mode":'))
  }
  emit('\n  ]')
}

/** The journal's text, in pieces, to `emit`; the length in bytes of what comes before the tail. */
function emitJournal(journal: Journal, emit: (text: string) => number | void): number {
  const [head, tail] = headAndTail(journal)
  let before = 0
  const count = (text: string): void => {
    const n = emit(text)
    before += typeof n === 'number' ? n : Buffer.byteLength(text)
  }
  count(head)
  changesText(journal.changes, count)
  emit(tail)
  return before
}

/** The journal file's text. */
export function journalText(journal: Journal): string {
  const parts: string[] = []
  emitJournal(journal, (text) => {
    parts.push(text)
  })
  return parts.join('')
}

/**
 * Write `text` at the file's current position, all of it; its length in bytes. The string goes to
 * the file as it is (Node encodes it outside the JavaScript heap); only a short write, which a
 * regular file hardly ever makes, has the rest encoded and written again.
 */
function writeText(fd: number, text: string): number {
  const written = writeSync(fd, text)
  const length = Buffer.byteLength(text)
  if (written < length) {
    const buf = Buffer.from(text)
    for (let off = written; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off)
  }
  return length
}

function fsyncDir(dir: string): void {
  try {
    const dfd = openSync(dir, 'r')
    try {
      fsyncSync(dfd)
    } finally {
      closeSync(dfd)
    }
  } catch {
    // some filesystems refuse fsync on a directory; the file itself is synced
  }
}

/** Write durably: a temporary file, fsync, rename over the target, fsync the directory. */
export function writeJournal(path: string, journal: Journal): void {
  mkdirSync(dirname(path), {recursive: true})
  const tmp = `${path}.tmp-${process.pid}`
  const fd = openSync(tmp, 'w', 0o600)
  try {
    emitJournal(journal, (text) => writeText(fd, text))
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, path)
  fsyncDir(dirname(path))
}

export function setJournalState(path: string, journal: Journal, state: JournalState, note?: string): void {
  journal.state = state
  journal.history.push({time: new Date().toISOString(), state, ...(note ? {note} : {})})
  writeJournal(path, journal)
}

const fsyncAsync = (fd: number): Promise<void> =>
  new Promise((resolve, reject) => fsync(fd, (error) => (error ? reject(error) : resolve())))

/** fsync a directory (its entries) on the thread pool; the open is synchronous, so the sync starts now. */
function fsyncDirAsync(dir: string): Promise<void> {
  let dfd: number
  try {
    dfd = openSync(dir, 'r')
  } catch {
    return Promise.resolve() // cannot open it: the file itself is synced
  }
  return new Promise((resolve) =>
    fsync(dfd, () => {
      // some filesystems refuse fsync on a directory; the file itself is synced
      closeSync(dfd)
      resolve()
    }))
}

/**
 * A journal being written by an apply: created at its final path (a new name: a crash before it is
 * durable leaves an unreadable file, and no route was changed yet), kept open so that a state
 * change rewrites only the tail after the changes, in place.
 */
export class JournalFile {
  private constructor(
    readonly path: string,
    readonly journal: Journal,
    private fd: number | undefined,
    private readonly tailAt: number, // byte offset of the tail: head and changes before it never change
    private tailLength: number,
  ) {}

  /**
   * Write `journal` at `path` (which must not exist). The file is open and its text written when
   * this returns; `durable` resolves once it and its directory entry are synced, and rejects if
   * that fails. The syncs run on the thread pool, started before this returns, so the caller can
   * work meanwhile.
   */
  static create(path: string, journal: Journal): {file: JournalFile; durable: Promise<void>} {
    const dir = dirname(path)
    mkdirSync(dir, {recursive: true})
    const fd = openSync(path, 'wx', 0o600)
    let tailAt: number
    let tailLength = 0
    try {
      // written as it is made, a chunk of changes at a time
      tailAt = emitJournal(journal, (text) => {
        const n = writeText(fd, text)
        tailLength = n // the last piece written is the tail
        return n
      })
    } catch (error) {
      closeSync(fd)
      throw error
    }
    const file = new JournalFile(path, journal, fd, tailAt, tailLength)
    // the file's data and its directory entry, synced side by side
    const durable = Promise.all([fsyncAsync(fd), fsyncDirAsync(dir)]).then(() => undefined)
    durable.catch(() => undefined) // the caller awaits it; never an unhandled rejection meanwhile
    return {file, durable}
  }

  /** Record a state: the tail (state and history) rewritten in place, then fdatasync. */
  setState(state: JournalState, note?: string): void {
    const journal = this.journal
    journal.state = state
    journal.history.push({time: new Date().toISOString(), state, ...(note ? {note} : {})})
    this.writeTail()
  }

  /** Record that rule `index` was there when the apply came to add it: present before (see Journal.rulesPresent). */
  rulePresent(index: number): void {
    const journal = this.journal
    const rule = journal.rules?.[index]
    if (rule === undefined) throw new Error(`rulePresent: the journal has no rule ${index}`)
    rule.existed = true // as a restore of this apply reads it
    ;(journal.rulesPresent ??= []).push(index)
    this.writeTail()
  }

  private writeTail(): void {
    const journal = this.journal
    if (this.fd === undefined) {
      writeJournal(this.path, journal)
      return
    }
    const tail = Buffer.from(headAndTail(journal)[1])
    let off = 0
    while (off < tail.length) off += writeSync(this.fd, tail, off, tail.length - off, this.tailAt + off)
    if (tail.length < this.tailLength) ftruncateSync(this.fd, this.tailAt + tail.length)
    this.tailLength = tail.length
    fdatasyncSync(this.fd)
  }

  close(): void {
    if (this.fd === undefined) return
    try {
      closeSync(this.fd)
    } finally {
      this.fd = undefined
    }
  }
}

export function readJournal(path: string): Journal {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why = code === 'ENOENT'
      ? 'no such file (fix --apply prints the path of the journal it writes, under --journal-dir)'
      : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'a directory, not a journal' : (error as Error).message
    throw new RouteDoctorError(`cannot read journal ${path}: ${why}`, 2, 'E_JOURNAL')
  }
  let j: Journal
  try {
    j = JSON.parse(text) as Journal
  } catch {
    const recovered = recoverJournal(text)
    if (!recovered)
      throw new RouteDoctorError(
        `${path}: not a routedoctor journal (expected the JSON that fix --apply writes; this does not parse as JSON)`,
        2,
        'E_JOURNAL',
      )
    j = recovered
  }
  if (j?.tool !== 'routedoctor' || (j.schema !== 1 && j.schema !== 2 && j.schema !== 3) || !Array.isArray(j.changes) ||
    (j.rules !== undefined && !Array.isArray(j.rules))) {
    throw new RouteDoctorError(`${path} is not a routedoctor journal (schema 1 to 3)`, 2, 'E_JOURNAL')
  }
  for (const i of Array.isArray(j.rulesPresent) ? j.rulesPresent : []) {
    const rule = j.rules?.[i]
    if (rule !== undefined) rule.existed = true
  }
  return j
}

/**
 * A journal whose tail (state and history, rewritten in place after the changes) was cut short by
 * a crash: its head and changes, synced before the first route write, are whole. Its state is
 * unknown, so it reads as 'pending', with a note.
 */
function recoverJournal(text: string): Journal | undefined {
  const end = CHANGES_END.exec(text)
  if (!end) return undefined
  const changesEnd = end.index + end[0].length - 2 // through the "]"
  try {
    const j = JSON.parse(`${text.slice(0, changesEnd)}\n}`) as Journal
    j.state = 'pending'
    j.history = [
      {
        time: j.time,
        state: 'pending',
        note: 'the state after this was not recorded whole (interrupted); the changes are',
      },
    ]
    return j
  } catch {
    return undefined
  }
}

export function newJournal(changes: JournalChange[], rules?: JournalRule[]): Journal {
  const time = new Date().toISOString()
  const head = {tool: 'routedoctor' as const, time, host: hostname(), pid: process.pid}
  const tail = {state: 'pending' as const, history: [{time, state: 'pending' as const}]}
  return rules === undefined ? {schema: 2, ...head, changes, ...tail} : {schema: 3, ...head, rules, changes, ...tail}
}

// what newJournalPath names: the stamp orders them, the pid tells apart two of one second
const JOURNAL_NAME = /^routedoctor-journal-(\d{8}T\d{6}Z)-(\d+)\.json$/
// the tail (state, history) is rewritten in place at the end of the file: its top-level state is in the last bytes
const TAIL_BYTES = 65_536
const TOP_STATE = /\n {2}"state": "(\w+)"/g

/** A journal's recorded state, read from the end of the file; undefined when it cannot be told (a tail cut short). */
function stateOnFile(path: string): JournalState | undefined {
  const fd = openSync(path, 'r')
  try {
    const size = fstatSync(fd).size
    const length = Math.min(size, TAIL_BYTES)
    const buf = Buffer.alloc(length)
    readSync(fd, buf, 0, length, size - length)
    let state: string | undefined
    for (const m of buf.toString('utf8').matchAll(TOP_STATE)) state = m[1]
    return state as JournalState | undefined
  } finally {
    closeSync(fd)
  }
}

export interface PruneResult {
  removed: string[]
  busy?: true // another apply or revert holds the lock: nothing was looked at
}

/**
 * Journal retention (`watch --reconcile --journal-keep`): the routedoctor journals in `dir` past the newest `keep` are
 * removed, except one whose apply never recorded its end (`pending`: what restores that node), one `failed` (an
 * apply whose restore failed, or a revert that did: `fix --revert` of it is still owed) and those in `protect`
 * (what this run's --cleanup-on-exit reverts). Under the apply lock, so a `fix --apply` or `fix --revert` under way
 * (it holds the lock while it reads and rewrites its journal) keeps every file; then nothing is removed this time.
 */
export function pruneJournals(dir: string, keep: number, protect: ReadonlySet<string> = new Set()): PruneResult {
  let release: () => void
  try {
    release = acquireLock(dir)
  } catch (error) {
    if (error instanceof RouteDoctorError && error.code === 'E_LOCKED') return {removed: [], busy: true}
    throw error
  }
  try {
    const journals = readdirSync(dir).flatMap((name) => {
      const m = JOURNAL_NAME.exec(name)
      return m ? [{name, stamp: m[1], pid: Number(m[2])}] : []
    }).sort((a, b) => (a.stamp < b.stamp ? 1 : a.stamp > b.stamp ? -1 : b.pid - a.pid)) // newest first
    const removed: string[] = []
    for (const j of journals.slice(keep)) {
      const path = join(dir, j.name)
      if (protect.has(path)) continue
      let state: JournalState | undefined
      try {
        state = stateOnFile(path)
      } catch {
        continue // gone, or unreadable: not ours to judge
      }
      // pending or cut short: the apply never ended; failed: its restore, or a revert of it, did not put the node back
      if (state === undefined || state === 'pending' || state === 'failed') continue
      unlinkSync(path)
      removed.push(path)
    }
    if (removed.length > 0) fsyncDir(dir)
    return {removed}
  } finally {
    release()
  }
}
