// Support bundles (DESIGN §6): a .tar.gz of snapshot/<§3 files>, model.json, report.md, report.json
// and manifest.json. A small ustar writer/reader over node:zlib, streamed both ways: a full table's bundle
// holds several hundred MB of text, and its model more than fits in one string, so members are written
// in chunks and read as the archive streams by. The output is byte-for-byte deterministic for the same
// input, and reading never writes to the disk, so a hostile archive cannot write anywhere (traversal and
// absolute paths are rejected anyway).
import {createHash, randomBytes} from 'node:crypto'
import {once} from 'node:events'
import {closeSync, createReadStream, createWriteStream, openSync, readSync, rmSync, writeSync} from 'node:fs'
import {open, rename, rm} from 'node:fs/promises'
import {pipeline} from 'node:stream/promises'
import {createGunzip, createGzip} from 'node:zlib'

import {RouteDoctorError} from '../model/errors.js'
import type {SourceFile} from '../model/types.js'
import {type Manifest, type ManifestFile, type ManifestSource, manifestProblem, sourceEntry} from './manifest.js'
import {scrubSecrets} from './redact.js'
import {decodeText} from '../collect/snapshot-files.js'
import {jsonPieces, Utf8Chunks} from '../render/json.js'

export const SNAPSHOT_DIR = 'snapshot/'
export const ERRORS_FILE = 'errors.json' // snapshot/errors.json: the sources that failed and why


export interface BundleInput {
  files: SourceFile[] // as collected (or redacted); BIRD passwords are removed here in any case
  model: unknown
  reportMd: string | Iterable<string> // the text, or its pieces (a full table's is larger than one string)
  reportJson: unknown
  manifest: Manifest // tool, time, host, command, redacted; sources and files are recomputed
}

export interface Bundle {
  files: SourceFile[] // in manifest order, with command/exit status/duration/error from the manifest
  manifest: Manifest
  // model.json, report.json, report.md: undefined when missing, not JSON (see warnings), or larger than
  // MAX_REPORT_READ (a full table's: not read, only checksummed)
  model: unknown
  reportJson: unknown
  reportMd?: string
  warnings: string[] // checksum mismatches, missing report files: the bundle still replays
}

/** `routedoctor-HOST-YYYYMMDD-HHMMSS.tar.gz`, the time in UTC (the manifest's collectedAt is UTC too). */
export function defaultBundleName(host: string, date: Date = new Date()): string {
  const safe = host.replace(/[^A-Za-z0-9.-]+/g, '_').replace(/^[.-]+/, '') || 'unknown'
  const p = (n: number) => String(n).padStart(2, '0')
  const d = `${date.getUTCFullYear()}${p(date.getUTCMonth() + 1)}${p(date.getUTCDate())}`
  const t = `${p(date.getUTCHours())}${p(date.getUTCMinutes())}${p(date.getUTCSeconds())}`
  return `routedoctor-${safe}-${d}-${t}.tar.gz`
}

// ------------------------------------------------------------------------------------ writing

/**
 * An archive member: its bytes in chunks (a full table's model is larger than one string), or in a spool
 * file (writeBundle's members over its spool size), or neither: a directory.
 */
interface Entry {
  path: string
  chunks?: Buffer[]
  spool?: string // removed by writeBundle once the member is written
  size: number
  sha256: string
}

/**
 * Where writeBundle puts a member larger than `at` bytes while it is made (a tar header needs the size
 * before the bytes): a full table's model.json is over a GB, which held in memory was most of a bundle's
 * peak, and as a GB of buffers made V8 collect its whole heap again and again.
 */
interface Spool {
  at: number
  file: (member: string) => string
  made: string[]
}

function fileEntry(path: string, chunks: Buffer[]): Entry {
  const hash = createHash('sha256')
  let size = 0
  for (const c of chunks) {
    hash.update(c)
    size += c.length
  }
  return {path, chunks, size, sha256: hash.digest('hex')}
}

/** A member written in pieces of text (UTF-8), never joined into one string; to `spool` once it outgrows it. */
function textEntry(path: string, write: (emit: (text: string) => void) => void, spool?: Spool): Entry {
  const hash = createHash('sha256')
  let size = 0
  let chunks: Buffer[] | undefined = []
  let file: string | undefined
  let fd: number | undefined
  const out = new Utf8Chunks((c) => {
    hash.update(c)
    size += c.length
    if (chunks !== undefined) {
      chunks.push(c)
      if (spool === undefined || size <= spool.at) return false
      file = spool.file(path)
      spool.made.push(file)
      fd = openSync(file, 'wx', 0o600)
      for (const held of chunks) writeAll(fd, held)
      chunks = undefined
      return false // that buffer was held: the next chunk gets a fresh one
    }
    writeAll(fd!, c)
    return true
  })
  try {
    write((text) => out.add(text))
    out.flush()
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
  return {path, chunks, spool: file, size, sha256: hash.digest('hex')}
}

function writeAll(fd: number, data: Buffer): void {
  for (let at = 0; at < data.length; ) at += writeSync(fd, data, at)
}

/**
 * The archive members of a bundle, in archive order, each made when it is reached (a full table's model
 * alone is over a GB: one member at a time is in memory, or in `spool`'s file), manifest.json last, as it
 * lists the others' checksums; `manifest` receives it. Pure without a spool.
 */
function* bundleEntries(input: BundleInput, manifest: (m: Manifest) => void, spool?: Spool): Generator<Entry> {
  const files = scrubSecrets(input.files)
  const seen = new Set<string>()
  for (const f of files) {
    // one level of folder: Calico's truth travels as snapshot/calico/*.json
    if (!/^(calico\/)?[A-Za-z0-9][A-Za-z0-9._-]*$/.test(f.name) || f.name === ERRORS_FILE) {
      throw new RouteDoctorError(
        `cannot bundle a source named ${JSON.stringify(f.name)}: not a snapshot file name`,
        2,
        'E_BUNDLE',
      )
    }
    if (seen.has(f.name)) throw new RouteDoctorError(`cannot bundle two sources named ${f.name}`, 2, 'E_BUNDLE')
    seen.add(f.name)
  }
  const listed: ManifestFile[] = []
  const sources: ManifestSource[] = []
  const member = (e: Entry): Entry => {
    if (e.chunks || e.spool) listed.push({path: e.path, size: e.size, sha256: e.sha256})
    return e
  }
  yield {path: SNAPSHOT_DIR, size: 0, sha256: ''}
  for (const f of files) {
    const bytes = Buffer.from(f.text ?? '', 'utf8') // encoded once: for its entry and its manifest line
    sources.push(sourceEntry(f, bytes))
    if (f.text !== undefined) yield member(fileEntry(SNAPSHOT_DIR + f.name, [bytes]))
  }
  const failed = files
    .filter((f) => f.error !== undefined)
    .map((f) => ({file: f.name, error: f.error, command: f.command, exitStatus: f.exitStatus}))
  if (failed.length)
    yield member(fileEntry(SNAPSHOT_DIR + ERRORS_FILE, [Buffer.from(JSON.stringify(failed, null, 2) + '\n')]))
  yield member(textEntry('model.json', (emit) => jsonPieces(input.model ?? null, emit), spool))
  yield member(
    textEntry(
      'report.md',
      (emit) => {
        if (typeof input.reportMd === 'string') emit(input.reportMd)
        else for (const piece of input.reportMd) emit(piece)
      },
      spool,
    ),
  )
  yield member(textEntry('report.json', (emit) => jsonPieces(input.reportJson ?? null, emit), spool))
  const m: Manifest = {...input.manifest, schema: 1, sources, files: listed}
  manifest(m)
  yield fileEntry('manifest.json', [Buffer.from(JSON.stringify(m, null, 2) + '\n')])
}

// zlib's and the file streams' piece size, both ways: with their defaults (16 and 64 KiB) a full table's
// archive goes through in hundreds of thousands of round trips between this thread and zlib's, each
// waiting for the other
const STREAM_CHUNK = 2 ** 20

// writeBundle's members larger than this are spooled to a file beside the output while they are made
const SPOOL_AT = 64 * 2 ** 20

// A full table's bundle is a few GB of text: zlib's level 3 compresses it much faster than the default
// (6), for a somewhat larger file
const GZIP_LEVEL = 3

function mtimeOf(input: BundleInput): number {
  const t = Date.parse(input.manifest.collectedAt)
  return Number.isFinite(t) ? Math.floor(t / 1000) : 0
}

/**
 * Write a bundle to outPath, streamed through gzip a member at a time (via a temporary file and a rename);
 * returns the manifest written. The same input always makes the same file.
 */
export async function writeBundle(
  input: BundleInput,
  outPath: string,
  opts: {spoolAt?: number} = {},
): Promise<Manifest> {
  const tmp = `${outPath}.${randomBytes(4).toString('hex')}.tmp`
  const spool: Spool = {
    at: opts.spoolAt ?? SPOOL_AT,
    file: (member) => `${tmp}.${member.replace(/[^\w.-]/g, '_')}`,
    made: [],
  }
  let manifest: Manifest | undefined
  try {
    const gzip = createGzip({level: GZIP_LEVEL, chunkSize: STREAM_CHUNK})
    const written = pipeline(gzip, createWriteStream(tmp, {flags: 'wx', highWaterMark: STREAM_CHUNK}))
    written.catch(() => undefined) // awaited below; a write error also fails gzip.write's wait
    const mtime = mtimeOf(input)
    const buffers = new ReadBuffers()
    const consumed = (b: Buffer) => () => buffers.give(b)
    for (const e of bundleEntries(input, (m) => (manifest = m), spool)) {
      // a member is compressed before the next one is made: only one is ever in memory (or spooled)
      for (const b of tarBlocks(e, mtime, buffers))
        if (!gzip.write(b, consumed(b))) await Promise.race([once(gzip, 'drain'), written])
      if (e.spool) rmSync(e.spool, {force: true})
    }
    gzip.end(END_OF_ARCHIVE)
    await written
    await rename(tmp, outPath)
  } catch (error) {
    await rm(tmp, {force: true})
    if (error instanceof RouteDoctorError) throw error
    throw new RouteDoctorError(
      `${outPath}: cannot write the bundle (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      2,
      'E_BUNDLE',
    )
  } finally {
    for (const f of spool.made) rmSync(f, {force: true})
  }
  return manifest!
}

const END_OF_ARCHIVE = Buffer.alloc(1024)

/** An entry's tar blocks (ustar; a pax header first for a path ustar cannot hold); a spool read into `buffers`. */
function* tarBlocks(e: Entry, mtime: number, buffers?: ReadBuffers): Generator<Buffer> {
  let name = e.path
  let prefix = ''
  if (Buffer.byteLength(name) > 100) {
    // ustar: split at a '/' into prefix (155) and name (100), else a pax header carries the path
    const cut = name.lastIndexOf('/', name.length - 2)
    if (cut > 0 && Buffer.byteLength(name.slice(0, cut)) <= 155 && Buffer.byteLength(name.slice(cut + 1)) <= 100) {
      prefix = name.slice(0, cut)
      name = name.slice(cut + 1)
    } else {
      const pax = paxRecord('path', e.path)
      yield header('PaxHeader', pax.length, 'x', mtime, '')
      yield pax
      if (pax.length % 512 !== 0) yield Buffer.alloc(512 - (pax.length % 512))
      name = name.slice(0, 100)
    }
  }
  yield header(name, e.size, e.chunks || e.spool ? '0' : '5', mtime, prefix)
  for (const c of e.chunks ?? []) if (c.length > 0) yield c
  if (e.spool) yield* spooled(e.spool, e.size, buffers ?? new ReadBuffers())
  if (e.size % 512 !== 0) yield Buffer.alloc(512 - (e.size % 512))
}

/**
 * STREAM_CHUNK buffers to read a spool file into, each taken back once gzip has consumed it (its write
 * callback), never before: gzip holds a buffer until it has compressed it. Fresh buffers for a full table's
 * model.json were a GB of external memory, to which V8 answered with full collections of its heap.
 */
class ReadBuffers {
  private readonly free: Buffer[] = []
  private readonly own = new WeakSet<Buffer>()

  take(): Buffer {
    const b = this.free.pop() ?? Buffer.allocUnsafe(STREAM_CHUNK)
    this.own.add(b)
    return b
  }

  /** `b` is no longer read by anyone (a buffer not taken here is ignored). */
  give(b: Buffer): void {
    if (this.own.delete(b)) this.free.push(b)
  }
}

/** A spool file's bytes in STREAM_CHUNK pieces, read into `buffers`' (the last piece may be a part of one). */
function* spooled(file: string, size: number, buffers: ReadBuffers): Generator<Buffer> {
  const fd = openSync(file, 'r')
  try {
    let read = 0
    while (read < size) {
      const whole = buffers.take()
      // a part is not taken back: the last
      const buf = size - read < whole.length ? whole.subarray(0, size - read) : whole
      const n = readSync(fd, buf, 0, buf.length, read)
      if (n === 0) throw new Error(`${file} ended at ${read} of its ${size} bytes`)
      read += n
      yield n === buf.length ? buf : buf.subarray(0, n)
    }
  } finally {
    closeSync(fd)
  }
}

function paxRecord(key: string, value: string): Buffer {
  const rest = ` ${key}=${value}\n`
  let len = Buffer.byteLength(rest) + 1
  while (String(len).length + Buffer.byteLength(rest) !== len) len = String(len).length + Buffer.byteLength(rest)
  return Buffer.from(`${len}${rest}`)
}

function header(name: string, size: number, type: string, mtime: number, prefix: string): Buffer {
  const h = Buffer.alloc(512)
  const put = (s: string, off: number, len: number) => h.write(s, off, len, 'utf8')
  const oct = (n: number, len: number) => n.toString(8).padStart(len - 1, '0') + '\0'
  put(name, 0, 100)
  put(oct(type === '5' ? 0o755 : 0o644, 8), 100, 8)
  put(oct(0, 8), 108, 8)
  put(oct(0, 8), 116, 8)
  put(oct(size, 12), 124, 12)
  put(oct(mtime, 12), 136, 12)
  put('        ', 148, 8)
  put(type, 156, 1)
  put('ustar\0', 257, 6)
  put('00', 263, 2)
  put('root', 265, 32)
  put('root', 297, 32)
  put(prefix, 345, 155)
  let sum = 0
  for (const b of h) sum += b
  put(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8)
  return h
}

// ------------------------------------------------------------------------------------ reading

// What a bundle may unpack to before it is refused (a gzip bomb otherwise runs for ever: streamed, it
// cannot fill the memory), and the largest model.json, report.json and report.md read into memory: a full
// table's are hundreds of MB that a replay does not need (their checksums are still checked).
const MAX_UNPACKED = 16 * 2 ** 30
const MAX_REPORT_READ = 64 * 2 ** 20
// A member held in memory (a snapshot file, the manifest) larger than this is refused before it is
// buffered: its text could not be one string anyway.
const MAX_KEPT = 2 ** 30

export interface ReadOptions {
  /** model.json, report.json and report.md larger than this are checksummed, not read (default 64 MiB). */
  reportReadLimit?: number
  /** readBundle: the gunzipped archive is fed to the tar reader in pieces of at most this many bytes (tests). */
  pieceSize?: number
  /**
   * Of the snapshot files the archive holds, those to leave out of `files` (still checksummed): not decoded into text.
   */
  unread?: (present: ReadonlySet<string>) => ReadonlySet<string>
}

/**
 * Read and check a bundle, streamed from the file. Every way it can be wrong is a RouteDoctorError naming the file
 * (exit 2).
 */
export async function readBundle(path: string, opts: ReadOptions = {}): Promise<Bundle> {
  const fail = failFor(path)
  const cannot = (error: NodeJS.ErrnoException): never =>
    fail(`cannot read the bundle (${error.code === 'ENOENT' ? 'no such file' : (error.code ?? error.message)})`)
  const magic = Buffer.alloc(2)
  const fh = await open(path).catch(cannot)
  try {
    const {bytesRead} = await fh.read(magic, 0, 2, 0)
    checkGzipMagic(magic.subarray(0, bytesRead), fail)
  } finally {
    await fh.close()
  }
  const tar = new TarReader(fail, opts.reportReadLimit)
  const piece = opts.pieceSize ?? Infinity
  let refused: unknown // what the reader refused: pipeline may reject with the abort it causes instead
  try {
    await pipeline(
      createReadStream(path, {highWaterMark: STREAM_CHUNK}),
      createGunzip({chunkSize: STREAM_CHUNK}),
      async (source: AsyncIterable<Buffer>) => {
        try {
          for await (const chunk of source)
            for (let at = 0; at < chunk.length; at += piece)
              tar.feed(piece >= chunk.length ? chunk : chunk.subarray(at, at + piece))
        } catch (error) {
          if (error instanceof RouteDoctorError) refused ??= error
          throw error
        }
      },
    )
  } catch (error) {
    if (refused !== undefined) throw refused
    if (error instanceof RouteDoctorError) throw error
    const e = error as NodeJS.ErrnoException
    if (e.syscall !== undefined) cannot(e)
    fail(`corrupt or truncated gzip data (${e.message})`)
  }
  return bundleOf(tar.end(), fail, opts)
}

type Fail = (why: string) => never

function failFor(name: string): Fail {
  return (why: string): never => {
    throw new RouteDoctorError(`${name}: ${why}`, 2, 'E_BUNDLE')
  }
}

function checkGzipMagic(head: Buffer, fail: Fail): void {
  if (head.length < 2 || head[0] !== 0x1f || head[1] !== 0x8b)
    fail('not a routedoctor bundle (not gzip-compressed; expected a .tar.gz written by `routedoctor bundle`)')
}

/** An archive member as read: its bytes when kept (undefined for a directory or one only checksummed), its sha256. */
interface Member {
  data?: Buffer
  sha256?: string // of a file's bytes
  size: number
}

/** The members of a bundle's archive: path -> member. */
type Members = Map<string, Member>

function bundleOf(members: Members, fail: Fail, opts: ReadOptions = {}): Bundle {
  // A bundle re-packed from its extracted folder has one top-level directory: look inside it.
  if (!members.has('manifest.json')) {
    const tops = new Set([...members.keys()].map((p) => p.split('/')[0]))
    const [top] = tops
    if (tops.size === 1 && members.has(`${top}/manifest.json`)) {
      const inner: Members = new Map()
      for (const [p, m] of members)
        if (p.startsWith(`${top}/`) && p.length > top.length + 1) inner.set(p.slice(top.length + 1), m)
      members.clear()
      for (const [p, m] of inner) members.set(p, m)
    }
  }

  const manifestData = members.get('manifest.json')?.data
  if (!manifestData) fail('not a routedoctor bundle: manifest.json is missing')
  if (![...members.keys()].some((p) => p.startsWith(SNAPSHOT_DIR)))
    fail('not a routedoctor bundle: the snapshot/ folder is missing')
  let manifest: Manifest
  try {
    manifest = JSON.parse(manifestData!.toString('utf8')) as Manifest
  } catch (error) {
    manifest = fail(`manifest.json is not valid JSON (${(error as Error).message})`)
  }
  const problem = manifestProblem(manifest)
  if (problem) fail(problem)

  const warnings: string[] = []
  const text = (p: string) => members.get(p)?.data?.toString('utf8')
  const json = (p: string, optional = false): unknown => {
    const m = members.get(p)
    if (m === undefined || m.sha256 === undefined) {
      if (!optional) warnings.push(`${p} is missing`)
      return undefined
    }
    if (m.data === undefined) return undefined // too large to be worth reading: a replay needs only snapshot/
    try {
      return JSON.parse(m.data.toString('utf8'))
    } catch {
      warnings.push(`${p} is not valid JSON`)
      return undefined
    }
  }

  // the recorded failures: from the manifest, else from snapshot/errors.json
  const errorsFile = json(SNAPSHOT_DIR + ERRORS_FILE, true) // absent when nothing failed
  const errors = new Map<string, Partial<ManifestSource>>()
  if (Array.isArray(errorsFile)) for (const e of errorsFile) if (e && typeof e.file === 'string') errors.set(e.file, e)

  const files: SourceFile[] = []
  const listed = new Set<string>()
  const held = new Set<string>()
  // an empty member does not stand for its source: the other form of it is read (snapshot/build.ts markEmpty)
  for (const [p, m] of members)
    if (p.startsWith(SNAPSHOT_DIR) && m.data !== undefined && m.data.length > 64) held.add(p.slice(SNAPSHOT_DIR.length))
  const unread = opts.unread?.(held)
  const add = (src: Partial<ManifestSource> & {file: string}) => {
    listed.add(src.file)
    const f: SourceFile = {name: src.file}
    const member = members.get(SNAPSHOT_DIR + src.file)
    const data = member?.data
    if (data && src.sha256 !== undefined && member!.sha256 !== src.sha256)
      warnings.push(`snapshot/${src.file} does not match its sha256 in manifest.json (edited after collection?)`)
    if (data && unread?.has(src.file)) return // checked, not read
    if (data) {
      try {
        f.text = decodeText(data)
      } catch {
        fail(`snapshot/${src.file} is too large to read (${data.length} bytes)`)
      }
    }
    const err = src.error ?? errors.get(src.file)?.error
    if (src.command !== undefined) f.command = src.command
    if (src.exitStatus !== undefined) f.exitStatus = src.exitStatus
    if (src.durationMs !== undefined) f.durationMs = src.durationMs
    if (err !== undefined) f.error = err
    if (!data && err === undefined && (src.size ?? 0) > 0)
      warnings.push(`snapshot/${src.file} is listed in manifest.json but missing from the archive`)
    files.push(f)
  }
  for (const s of manifest.sources) add(s)
  for (const [file, e] of errors) if (!listed.has(file)) add({...e, file})
  const extra = [...members.keys()]
    .filter((p) => p.startsWith(SNAPSHOT_DIR) && members.get(p)!.data !== undefined && p !== SNAPSHOT_DIR + ERRORS_FILE)
    .map((p) => p.slice(SNAPSHOT_DIR.length))
    .filter((f) => !listed.has(f) && !f.includes('/'))
    .sort()
  for (const f of extra) {
    warnings.push(`snapshot/${f} is not listed in manifest.json`)
    add({file: f})
  }
  for (const m of manifest.files ?? []) {
    const member = members.get(m.path)
    if (member?.sha256 !== undefined && m.path.startsWith(SNAPSHOT_DIR) === false && member.sha256 !== m.sha256)
      warnings.push(`${m.path} does not match its sha256 in manifest.json`)
  }

  const reportMd = text('report.md')
  if (members.get('report.md')?.sha256 === undefined) warnings.push('report.md is missing')
  return {files, manifest, model: json('model.json'), reportJson: json('report.json'), reportMd, warnings}
}

/** Which members are kept in memory: everything a replay reads; the model and the reports only when not too large. */
function kept(path: string, size: number, reportReadLimit: number): boolean {
  const base = path.slice(path.lastIndexOf('/') + 1)
  if (base === 'model.json' || base === 'report.json' || base === 'report.md') return size <= reportReadLimit
  return true
}

const NOT_TAR = 'the gzip data is not a tar archive (expected a .tar.gz written by `routedoctor bundle`)'

/**
 * A tar archive read as it streams by (chunks of any size): each member checksummed, and kept when
 * `kept` says so. Rejects anything that could escape a folder.
 */
class TarReader {
  private readonly members: Members = new Map()
  private head = Buffer.alloc(512) // the header being read
  private headAt = 0
  private member:
    | {
        path: string
        left: number
        chunks?: Buffer[]
        hash?: ReturnType<typeof createHash>
        meta?: 'x' | 'L'
        size: number
      }
    | undefined
  private skip = 0 // padding after a member's data, being skipped
  private pendingPadding = 0 // padding after the current member's data, skipped once it ends
  private nextPath: string | undefined // from a pax 'x' or GNU 'L' header, for the next entry
  private sawEnd = false
  private offset = 0 // of the next header, for messages
  private unpacked = 0

  constructor(private readonly fail: Fail, private readonly reportReadLimit = MAX_REPORT_READ) {}

  feed(chunk: Buffer): void {
    this.unpacked += chunk.length
    if (this.unpacked > MAX_UNPACKED) this.fail(`unpacks to more than ${MAX_UNPACKED / 2 ** 30} GiB, refusing`)
    let at = 0
    while (at < chunk.length && !this.sawEnd) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - at)
        this.skip -= n
        at += n
      } else if (this.member) {
        const m = this.member
        const n = Math.min(m.left, chunk.length - at)
        const piece = chunk.subarray(at, at + n)
        m.hash?.update(piece)
        m.chunks?.push(piece)
        m.left -= n
        at += n
        if (m.left === 0) this.endMember()
      } else {
        const n = Math.min(512 - this.headAt, chunk.length - at)
        chunk.copy(this.head, this.headAt, at, at + n)
        this.headAt += n
        at += n
        if (this.headAt === 512) {
          this.headAt = 0
          this.header()
        }
      }
    }
  }

  end(): Members {
    if (this.offset === 0 && !this.sawEnd) this.fail(NOT_TAR) // not one whole header
    if (this.member || this.headAt > 0 || this.skip > 0) this.fail('truncated tar archive (an entry runs past the end)')
    if (!this.sawEnd) this.fail('truncated tar archive (no end-of-archive marker)')
    return this.members
  }

  private header(): void {
    const h = this.head
    const off = this.offset
    if (h.every((b) => b === 0)) {
      this.sawEnd = true
      return
    }
    const stored = parseOctal(h.subarray(148, 156))
    let sum = 0
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : h[i]
    if (stored === undefined || stored !== sum)
      this.fail(off === 0 ? NOT_TAR : `corrupt tar archive (bad header checksum at offset ${off})`)
    const size = parseOctal(h.subarray(124, 136))
    if (size === undefined) this.fail(`corrupt tar archive (bad size field at offset ${off})`)
    const type = String.fromCharCode(h[156] || 0x30)
    this.offset = off + 512 + Math.ceil(size! / 512) * 512
    const padding = (512 - (size! % 512)) % 512
    if (type === 'x' || type === 'L') {
      // a path, not data
      if (size! > 2 ** 20) this.fail(`corrupt tar archive (a ${size} byte path header at offset ${off})`)
      this.begin({path: '', left: size!, size: size!, chunks: [], meta: type}, padding)
      return
    }
    if (type === 'g') {
      this.begin({path: '', left: size!, size: size!}, padding) // global pax header: nothing a bundle needs
      return
    }
    let path = this.nextPath ?? ustarPath(h)
    this.nextPath = undefined
    path = safePath(path, this.fail)
    if (type === '5') {
      if (path !== '') this.members.set(path.endsWith('/') ? path : `${path}/`, {size: 0}) // '' is `./` itself
      this.begin({path: '', left: size!, size: size!}, padding)
      return
    }
    if (path === '' || path.endsWith('/'))
      this.fail(`file entry without a name (${JSON.stringify(ustarPath(h))}) in the archive`)
    if (type !== '0' && type !== '7')
      this.fail(
        `unsupported entry ${JSON.stringify(path)} in the archive (tar type ${JSON.stringify(type)}; a bundle holds only files and folders)`,
      )
    const keep = kept(path, size!, this.reportReadLimit)
    if (keep && size! > MAX_KEPT)
      this.fail(
        `${path} is ${Math.round(size! / 2 ** 20)} MiB, more than routedoctor reads (${MAX_KEPT / 2 ** 20} MiB)`,
      )
    this.begin({path, left: size!, size: size!, hash: createHash('sha256'), ...(keep ? {chunks: []} : {})}, padding)
  }

  private begin(member: NonNullable<TarReader['member']>, padding: number): void {
    this.member = member
    this.pendingPadding = padding
    if (member.left === 0) this.endMember()
  }

  private endMember(): void {
    const m = this.member!
    this.member = undefined
    this.skip = this.pendingPadding
    if (m.meta !== undefined) {
      const data = Buffer.concat(m.chunks!)
      this.nextPath = m.meta === 'x' ? (parsePax(data).path ?? this.nextPath) : cString(data)
      return
    }
    if (m.hash === undefined) return // a directory's or a global header's data: nothing kept
    const member: Member = {size: m.size, sha256: m.hash.digest('hex')}
    if (m.chunks) member.data = m.chunks.length === 1 ? m.chunks[0] : Buffer.concat(m.chunks)
    this.members.set(m.path, member)
  }
}

function cString(b: Buffer): string {
  const z = b.indexOf(0)
  return b.subarray(0, z < 0 ? b.length : z).toString('utf8')
}

function ustarPath(h: Buffer): string {
  const name = cString(h.subarray(0, 100))
  const magic = h.subarray(257, 262).toString('latin1')
  const prefix = magic === 'ustar' ? cString(h.subarray(345, 500)) : ''
  return prefix ? `${prefix}/${name}` : name
}

function parseOctal(b: Buffer): number | undefined {
  if (b[0] & 0x80) return undefined // base-256 sizes: far beyond any bundle
  const s = cString(b).trim()
  if (!/^[0-7]*$/.test(s)) return undefined
  return s === '' ? 0 : parseInt(s, 8)
}

function parsePax(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {}
  let i = 0
  while (i < data.length) {
    const sp = data.indexOf(0x20, i)
    if (sp < 0) break
    const len = Number(data.subarray(i, sp).toString('latin1'))
    if (!Number.isInteger(len) || len <= 0 || i + len > data.length) break
    const rec = data.subarray(sp + 1, i + len - 1).toString('utf8')
    const eq = rec.indexOf('=')
    if (eq > 0) out[rec.slice(0, eq)] = rec.slice(eq + 1)
    i += len
  }
  return out
}

/** `./snapshot/x` -> `snapshot/x`, `./` -> ''; absolute paths and `..` are refused, never normalised away. */
function safePath(p: string, fail: (why: string) => never): string {
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p) || p.includes('\\') || p.includes('\0'))
    fail(`unsafe entry path ${JSON.stringify(p)} in the archive (absolute path)`)
  const parts = p.split('/')
  if (parts.includes('..')) fail(`unsafe entry path ${JSON.stringify(p)} in the archive (path traversal)`)
  const trailing = p.endsWith('/') ? '/' : ''
  const out = parts.filter((s) => s !== '.' && s !== '').join('/')
  return out === '' ? '' : out + trailing
}
