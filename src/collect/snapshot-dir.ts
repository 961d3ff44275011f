// Reads a snapshot directory (DESIGN §3): one file per source, every file optional.
import {readdir, readFile, stat} from 'node:fs/promises'
import path from 'node:path'

import {RouteDoctorError} from '../model/errors.js'
import type {SourceFile} from '../model/types.js'
import {loadYaml} from '../parse/load-yaml.js'
import {decodeText, ERRORS_FILE, SNAPSHOT_FILE_NAMES} from './snapshot-files.js'

export async function readSnapshotDir(dir: string): Promise<SourceFile[]> {
  let names: string[]
  try {
    if (!(await stat(dir)).isDirectory()) throw new RouteDoctorError(`${dir}: not a snapshot directory (expected a directory of DESIGN §3 files or a .tar.gz bundle)`, 2, 'E_FROM')
    names = await readdir(dir)
  } catch (error) {
    if (error instanceof RouteDoctorError) throw error
    throw new RouteDoctorError(`${dir}: cannot read the snapshot (${(error as NodeJS.ErrnoException).code ?? String(error)})`, 2, 'E_FROM')
  }
  const known = new Set<string>(SNAPSHOT_FILE_NAMES)
  const wanted = names.sort().filter((name) => known.has(name))
  // One at a time: a full table's two dumps read at once had both their bytes and both their texts resident
  // together (1M routes: 1.09 GB peak instead of 0.78). While the first is read, this thread loads the YAML
  // parser an IPPool file will need.
  const files: SourceFile[] = []
  for (let i = 0; i < wanted.length; i++) {
    const reading = readFile(path.join(dir, wanted[i]))
    if (i === 0 && wanted.includes('ippools.yaml')) {
      try {
        loadYaml()
      } catch {
        // the IPPool parser asks again, and reports it
      }
    }
    files.push({name: wanted[i], text: decodeText(await reading)})
  }
  // sources that failed when the snapshot was taken (written by writeSnapshotDir)
  if (names.includes(ERRORS_FILE)) {
    try {
      const failed = JSON.parse(await readFile(path.join(dir, ERRORS_FILE), 'utf8')) as Array<{name?: string; file?: string; error?: string}>
      for (const f of Array.isArray(failed) ? failed : []) {
        const name = f.name ?? f.file
        if (name && !files.some((x) => x.name === name)) files.push({name, error: f.error ?? 'failed'})
      }
    } catch {
      throw new RouteDoctorError(`${path.join(dir, ERRORS_FILE)}:1: expected a JSON list of failed sources`, 2, 'E_PARSE')
    }
  }
  if (files.length === 0) throw new RouteDoctorError(`${dir}: no snapshot files found (expected e.g. ip-j-d-route.json, birdc-show-route-all.txt)`, 2, 'E_FROM')
  return files
}
