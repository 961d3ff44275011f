// Support bundles (DESIGN §6): a .tar.gz of snapshot/<§3 files>, model.json, report.md, report.json
// and manifest.json. A small in-memory ustar writer/reader over node:zlib: bundles are a few hundred
// kB, the output is byte-for-byte deterministic for the same input, and reading never touches the
// disk, so a hostile archive cannot write anywhere (traversal and absolute paths are rejected anyway).
import {randomBytes} from 'node:crypto'
import {readFile, rename, rm, writeFile} from 'node:fs/promises'
import {gunzipSync, gzipSync} from 'node:zlib'

import {RouteDoctorError} from '../model/errors.js'
import type {SourceFile} from '../model/types.js'
import {type Manifest, type ManifestSource, manifestProblem, sha256, sourceEntry} from './manifest.js'
import {scrubSecrets} from './redact.js'
import {decodeText} from '../collect/snapshot-files.js'

export const SNAPSHOT_DIR = 'snapshot/'
export const ERRORS_FILE = 'errors.json' // snapshot/errors.json: the sources that failed and why

// A bundle never legitimately decompresses to this much; the limit stops a gzip bomb.
const MAX_UNPACKED = 512 * 1024 * 1024

export interface BundleInput {
  files: SourceFile[] // as collected (or redacted); BIRD passwords are removed here in any case
  model: unknown
  reportMd: string
  reportJson: unknown
  manifest: Manifest // tool, time, host, command, redacted; sources and files are recomputed
}

export interface Bundle {
  files: SourceFile[] // in manifest order, with command/exit status/duration/error from the manifest
  manifest: Manifest
  model: unknown // undefined when model.json is missing or not JSON (see warnings)
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

interface Entry {
  path: string
  data?: Buffer // undefined: a directory
}

/** The archive members of a bundle, and the manifest that describes them. Pure. */
export function bundleEntries(input: BundleInput): {entries: Entry[]; manifest: Manifest} {
  const files = scrubSecrets(input.files)
  const seen = new Set<string>()
  for (const f of files) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(f.name) || f.name === ERRORS_FILE) {
      throw new RouteDoctorError(`cannot bundle a source named ${JSON.stringify(f.name)}: not a snapshot file name`, 2, 'E_BUNDLE')
    }
    if (seen.has(f.name)) throw new RouteDoctorError(`cannot bundle two sources named ${f.name}`, 2, 'E_BUNDLE')
    seen.add(f.name)
  }
  const entries: Entry[] = [{path: SNAPSHOT_DIR}]
  for (const f of files) if (f.text !== undefined) entries.push({path: SNAPSHOT_DIR + f.name, data: Buffer.from(f.text, 'utf8')})
  const failed = files.filter((f) => f.error !== undefined).map((f) => ({file: f.name, error: f.error, command: f.command, exitStatus: f.exitStatus}))
  if (failed.length) entries.push({path: SNAPSHOT_DIR + ERRORS_FILE, data: Buffer.from(JSON.stringify(failed, null, 2) + '\n')})
  entries.push({path: 'model.json', data: Buffer.from(JSON.stringify(input.model ?? null, null, 2) + '\n')})
  entries.push({path: 'report.md', data: Buffer.from(input.reportMd, 'utf8')})
  entries.push({path: 'report.json', data: Buffer.from(JSON.stringify(input.reportJson ?? null, null, 2) + '\n')})
  const manifest: Manifest = {
    ...input.manifest,
    schema: 1,
    sources: files.map(sourceEntry),
    files: entries.filter((e) => e.data).map((e) => ({path: e.path, size: e.data!.length, sha256: sha256(e.data!)})),
  }
  entries.unshift({path: 'manifest.json', data: Buffer.from(JSON.stringify(manifest, null, 2) + '\n')})
  return {entries, manifest}
}

/** The gzip-compressed tar of a bundle. Pure and deterministic. */
export function packBundle(input: BundleInput): {data: Buffer; manifest: Manifest} {
  const {entries, manifest} = bundleEntries(input)
  const t = Date.parse(input.manifest.collectedAt)
  const mtime = Number.isFinite(t) ? Math.floor(t / 1000) : 0
  return {data: gzipSync(packTar(entries, mtime), {level: 9}), manifest}
}

/** Write a bundle to outPath (via a temporary file and a rename); returns the manifest written. */
export async function writeBundle(input: BundleInput, outPath: string): Promise<Manifest> {
  const {data, manifest} = packBundle(input)
  const tmp = `${outPath}.${randomBytes(4).toString('hex')}.tmp`
  try {
    await writeFile(tmp, data, {flag: 'wx'})
    await rename(tmp, outPath)
  } catch (error) {
    await rm(tmp, {force: true})
    throw new RouteDoctorError(`${outPath}: cannot write the bundle (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, 2, 'E_BUNDLE')
  }
  return manifest
}

function packTar(entries: Entry[], mtime: number): Buffer {
  const blocks: Buffer[] = []
  for (const e of entries) {
    const body = e.data ?? Buffer.alloc(0)
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
        blocks.push(header('PaxHeader', pax.length, 'x', mtime, ''), pad(pax))
        name = name.slice(0, 100)
      }
    }
    blocks.push(header(name, body.length, e.data ? '0' : '5', mtime, prefix), pad(body))
  }
  blocks.push(Buffer.alloc(1024))
  return Buffer.concat(blocks)
}

function paxRecord(key: string, value: string): Buffer {
  const rest = ` ${key}=${value}\n`
  let len = Buffer.byteLength(rest) + 1
  while (String(len).length + Buffer.byteLength(rest) !== len) len = String(len).length + Buffer.byteLength(rest)
  return Buffer.from(`${len}${rest}`)
}

function pad(b: Buffer): Buffer {
  const r = b.length % 512
  return r === 0 ? b : Buffer.concat([b, Buffer.alloc(512 - r)])
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

/** Read and check a bundle. Every way it can be wrong is a RouteDoctorError naming the file (exit 2). */
export async function readBundle(path: string): Promise<Bundle> {
  const raw = await readFile(path).catch((error: NodeJS.ErrnoException) => {
    throw new RouteDoctorError(`${path}: cannot read the bundle (${error.code === 'ENOENT' ? 'no such file' : error.code ?? error.message})`, 2, 'E_BUNDLE')
  })
  return parseBundle(raw, path)
}

/** parseBundle for bytes already in memory; `name` is what error messages call the file. */
export function parseBundle(raw: Buffer, name: string): Bundle {
  const fail = (why: string): never => {
    throw new RouteDoctorError(`${name}: ${why}`, 2, 'E_BUNDLE')
  }
  if (raw.length < 2 || raw[0] !== 0x1f || raw[1] !== 0x8b) fail('not a routedoctor bundle (not gzip-compressed; expected a .tar.gz written by `routedoctor bundle`)')
  let tar: Buffer
  try {
    tar = gunzipSync(raw, {maxOutputLength: MAX_UNPACKED})
  } catch (error) {
    const e = error as NodeJS.ErrnoException
    tar = fail(e.code === 'ERR_BUFFER_TOO_LARGE' || e instanceof RangeError ? `unpacks to more than ${MAX_UNPACKED >> 20} MiB, refusing` : `corrupt or truncated gzip data (${e.message})`)
  }
  const members = unpackTar(tar, fail)

  // A bundle re-packed from its extracted folder has one top-level directory: look inside it.
  if (!members.has('manifest.json')) {
    const tops = new Set([...members.keys()].map((p) => p.split('/')[0]))
    const [top] = tops
    if (tops.size === 1 && members.has(`${top}/manifest.json`)) {
      const inner = new Map<string, Buffer | undefined>()
      for (const [p, d] of members) if (p.startsWith(`${top}/`) && p.length > top.length + 1) inner.set(p.slice(top.length + 1), d)
      members.clear()
      for (const [p, d] of inner) members.set(p, d)
    }
  }

  const manifestData = members.get('manifest.json')
  if (!manifestData) fail('not a routedoctor bundle: manifest.json is missing')
  if (![...members.keys()].some((p) => p.startsWith(SNAPSHOT_DIR))) fail('not a routedoctor bundle: the snapshot/ folder is missing')
  let manifest: Manifest
  try {
    manifest = JSON.parse(manifestData!.toString('utf8')) as Manifest
  } catch (error) {
    manifest = fail(`manifest.json is not valid JSON (${(error as Error).message})`)
  }
  const problem = manifestProblem(manifest)
  if (problem) fail(problem)

  const warnings: string[] = []
  const text = (p: string) => members.get(p)?.toString('utf8')
  const json = (p: string, optional = false): unknown => {
    const t = text(p)
    if (t === undefined) {
      if (!optional) warnings.push(`${p} is missing`)
      return undefined
    }
    try {
      return JSON.parse(t)
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
  const add = (src: Partial<ManifestSource> & {file: string}) => {
    listed.add(src.file)
    const f: SourceFile = {name: src.file}
    const data = members.get(SNAPSHOT_DIR + src.file)
    if (data) f.text = decodeText(data)
    const err = src.error ?? errors.get(src.file)?.error
    if (src.command !== undefined) f.command = src.command
    if (src.exitStatus !== undefined) f.exitStatus = src.exitStatus
    if (src.durationMs !== undefined) f.durationMs = src.durationMs
    if (err !== undefined) f.error = err
    if (data && src.sha256 !== undefined && sha256(data) !== src.sha256) warnings.push(`snapshot/${src.file} does not match its sha256 in manifest.json (edited after collection?)`)
    if (!data && err === undefined && (src.size ?? 0) > 0) warnings.push(`snapshot/${src.file} is listed in manifest.json but missing from the archive`)
    files.push(f)
  }
  for (const s of manifest.sources) add(s)
  for (const [file, e] of errors) if (!listed.has(file)) add({...e, file})
  const extra = [...members.keys()]
    .filter((p) => p.startsWith(SNAPSHOT_DIR) && members.get(p) !== undefined && p !== SNAPSHOT_DIR + ERRORS_FILE)
    .map((p) => p.slice(SNAPSHOT_DIR.length))
    .filter((f) => !listed.has(f) && !f.includes('/'))
    .sort()
  for (const f of extra) {
    warnings.push(`snapshot/${f} is not listed in manifest.json`)
    add({file: f})
  }
  for (const m of manifest.files ?? []) {
    const data = members.get(m.path)
    if (data && m.path.startsWith(SNAPSHOT_DIR) === false && sha256(data) !== m.sha256) warnings.push(`${m.path} does not match its sha256 in manifest.json`)
  }

  const reportMd = text('report.md')
  if (reportMd === undefined) warnings.push('report.md is missing')
  return {files, manifest, model: json('model.json'), reportJson: json('report.json'), reportMd, warnings}
}

/** Archive path -> data (undefined for a directory). Rejects anything that could escape a folder. */
function unpackTar(tar: Buffer, fail: (why: string) => never): Map<string, Buffer | undefined> {
  const out = new Map<string, Buffer | undefined>()
  let off = 0
  let nextPath: string | undefined // from a pax 'x' or GNU 'L' header, for the next entry
  let sawEnd = false
  while (off + 512 <= tar.length) {
    const h = tar.subarray(off, off + 512)
    if (h.every((b) => b === 0)) {
      sawEnd = true
      break
    }
    const stored = parseOctal(h.subarray(148, 156))
    let sum = 0
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : h[i]
    if (stored === undefined || stored !== sum) fail(`corrupt tar archive (bad header checksum at offset ${off})`)
    const size = parseOctal(h.subarray(124, 136))
    if (size === undefined) fail(`corrupt tar archive (bad size field at offset ${off})`)
    const type = String.fromCharCode(h[156] || 0x30)
    const start = off + 512
    const end = start + size!
    if (end > tar.length) fail('truncated tar archive (an entry runs past the end)')
    const data = tar.subarray(start, end)
    off = start + Math.ceil(size! / 512) * 512

    if (type === 'x') {
      nextPath = parsePax(data).path ?? nextPath
      continue
    }
    if (type === 'L') {
      nextPath = cString(data)
      continue
    }
    if (type === 'g') continue // global pax header: nothing a bundle needs
    let path = nextPath ?? ustarPath(h)
    nextPath = undefined
    path = safePath(path, fail)
    if (type === '5') {
      if (path !== '') out.set(path.endsWith('/') ? path : `${path}/`, undefined) // '' is `./` itself
      continue
    }
    if (path === '' || path.endsWith('/')) fail(`file entry without a name (${JSON.stringify(ustarPath(h))}) in the archive`)
    if (type !== '0' && type !== '7') fail(`unsupported entry ${JSON.stringify(path)} in the archive (tar type ${JSON.stringify(type)}; a bundle holds only files and folders)`)
    out.set(path, Buffer.from(data))
  }
  if (!sawEnd) fail('truncated tar archive (no end-of-archive marker)')
  return out
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
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p) || p.includes('\\') || p.includes('\0')) fail(`unsafe entry path ${JSON.stringify(p)} in the archive (absolute path)`)
  const parts = p.split('/')
  if (parts.includes('..')) fail(`unsafe entry path ${JSON.stringify(p)} in the archive (path traversal)`)
  const trailing = p.endsWith('/') ? '/' : ''
  const out = parts.filter((s) => s !== '.' && s !== '').join('/')
  return out === '' ? '' : out + trailing
}
