// Reads a snapshot directory (DESIGN §3): one file per source, every file optional.
import {open, readdir, readFile, stat, type FileHandle} from 'node:fs/promises'
import path from 'node:path'

import {RouteDoctorError} from '../model/errors.js'
import type {SourceFile} from '../model/types.js'
import {CALICO_DIR, CALICO_FILES, NODE_NAME_FILE} from '../model/calico.js'
import {OVERLAY_SETTINGS_FILE} from '../model/snapshot-index.js'
import {decodeText, ERRORS_FILE, fitsOneText, SNAPSHOT_FILE_NAMES, tooLongForOneText} from './snapshot-files.js'

export interface ReadSnapshotOptions {
  /** Of the snapshot files present, those not to read (a diagnosis does not read a text form beside its JSON form). */
  unread?: (present: ReadonlySet<string>) => ReadonlySet<string>
  calico?: boolean // false: the calico/ folder is not read
}

export async function readSnapshotDir(dir: string, opts: ReadSnapshotOptions = {}): Promise<SourceFile[]> {
  let names: string[]
  try {
    if (!(await stat(dir)).isDirectory())
      throw new RouteDoctorError(
        `${dir}: not a snapshot directory (expected a directory of DESIGN §3 files or a .tar.gz bundle)`,
        2,
        'E_FROM',
      )
    names = await readdir(dir)
  } catch (error) {
    if (error instanceof RouteDoctorError) throw error
    throw new RouteDoctorError(
      `${dir}: cannot read the snapshot (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      2,
      'E_FROM',
    )
  }
  // and the node's name and overlay settings, when the snapshot records them (bundle)
  const known = new Set<string>([...SNAPSHOT_FILE_NAMES, NODE_NAME_FILE, OVERLAY_SETTINGS_FILE])
  const present = names.sort().filter((name) => known.has(name))
  // an empty file does not stand for its source: the other form of it is read (snapshot/build.ts markEmpty)
  // (a few bytes may be only whitespace)
  const sizeOf = async (name: string) => (await stat(path.join(dir, name)).catch(() => undefined))?.size ?? 65
  const sized = await Promise.all(present.map(async (name) => (await sizeOf(name)) > 64))
  const unread = opts.unread?.(new Set(present.filter((_, i) => sized[i])))
  const wanted = unread ? present.filter((name) => !unread.has(name)) : present
  // One at a time: two large dumps read at once would hold both their bytes and both their texts resident together.
  const files: SourceFile[] = []
  for (const name of wanted) files.push({name, text: decodeText(await readWhole(path.join(dir, name)))})
  // Calico's cluster truth, when the snapshot carries it
  if (names.includes('calico') && opts.calico !== false) files.push(...await readCalicoDir(path.join(dir, 'calico')))
  // sources that failed when the snapshot was taken (written by writeSnapshotDir)
  if (names.includes(ERRORS_FILE)) {
    try {
      const failed = JSON.parse(await readFile(path.join(dir, ERRORS_FILE), 'utf8')) as Array<{
        name?: string
        file?: string
        error?: string
      }>
      for (const f of Array.isArray(failed) ? failed : []) {
        const name = f.name ?? f.file
        if (name && !files.some((x) => x.name === name)) files.push({name, error: f.error ?? 'failed'})
      }
    } catch {
      throw new RouteDoctorError(
        `${path.join(dir, ERRORS_FILE)}:1: expected a JSON list of failed sources`,
        2,
        'E_PARSE',
      )
    }
  }
  if (files.length === 0) {
    // an extracted bundle: its snapshot is one level down
    const inner =
      names.includes('snapshot') && names.includes('manifest.json')
        ? ` (an extracted bundle? try --from ${path.join(dir, 'snapshot')})`
        : ''
    throw new RouteDoctorError(
      `${dir}: no snapshot files found (expected e.g. ip-j-d-route.json, birdc-show-route-all.txt)${inner}`,
      2,
      'E_FROM',
    )
  }
  return files
}

/**
 * Calico's truth files in DIR (`kubectl get RESOURCE -o json` output, DESIGN §3), named `calico/<file>`; every file
 * is optional. A DIR that cannot be read is bad input (exit 2).
 */
export async function readCalicoDir(dir: string): Promise<SourceFile[]> {
  let names: string[]
  try {
    names = await readdir(dir)
  } catch (error) {
    throw new RouteDoctorError(
      `${dir}: cannot read Calico's truth (${(error as NodeJS.ErrnoException).code ?? String(error)}; expected a directory of kubectl -o json files)`,
      2,
      'E_FROM',
    )
  }
  const files: SourceFile[] = []
  for (const name of CALICO_FILES) {
    if (names.includes(name))
      files.push({
        name: CALICO_DIR + name,
        path: path.join(dir, name),
        text: decodeText(await readWhole(path.join(dir, name))),
      })
  }
  return files
}

/**
 * A snapshot file's bytes, read by one read(2) of its size where it can be: readFile reads in fixed pieces,
 * each a round trip through the thread pool. A file that cannot be read is bad input (exit 2), named.
 */
async function readWhole(file: string): Promise<Buffer> {
  let handle: FileHandle | undefined
  try {
    handle = await open(file, 'r')
    const {size} = await handle.stat()
    if (size === 0) return await handle.readFile() // not a regular file's size (procfs, a pipe): to its end
    if (!fitsOneText(size)) throw new RouteDoctorError(`${file}: ${tooLongForOneText(size)}`, 2, 'E_FROM')
    const bytes = Buffer.allocUnsafe(size)
    let n = 0
    while (n < size) {
      const {bytesRead} = await handle.read(bytes, n, size - n, n)
      if (bytesRead === 0) break // it shrank meanwhile
      n += bytesRead
    }
    return n === size ? bytes : bytes.subarray(0, n)
  } catch (error) {
    if (error instanceof RouteDoctorError) throw error
    throw new RouteDoctorError(
      `${file}: cannot read (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      2,
      'E_FROM',
    )
  } finally {
    await handle?.close()
  }
}
