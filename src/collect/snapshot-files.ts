// DESIGN §3: the snapshot directory's file names, and a writer that lays collected sources out so
// `--from DIR` (src/collect/snapshot-dir.ts) can read them back.

import { constants, isAscii } from 'node:buffer'
import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import type { SourceFile } from '../model/types.js'

export const SNAPSHOT_FILES = {
  ipRouteJson: 'ip-j-d-route.json',
  ipRouteText: 'ip-d-route.txt',
  ipLinkJson: 'ip-j-d-link.json',
  ipLinkText: 'ip-d-link.txt',
  ipAddrJson: 'ip-j-addr.json',
  ipNeighJson: 'ip-j-neigh.json',
  ip6RouteText: 'ip-6-d-route.txt',
  ipRuleText: 'ip-rule.txt',
  birdStatus: 'birdc-show-status.txt',
  birdRoutes: 'birdc-show-route-all.txt',
  birdProtocols: 'birdc-show-protocols-all.txt',
  sysctl: 'sysctl.txt',
  birdConfig: 'bird.conf',
  ippoolsYaml: 'ippools.yaml',
  ippoolsJson: 'ippools.json',
  hostname: 'hostname', // the node's name, as the collecting host saw it
} as const

export type SnapshotFileName = (typeof SNAPSHOT_FILES)[keyof typeof SNAPSHOT_FILES]

/** Every DESIGN §3 file name, in the table's order. */
export const SNAPSHOT_FILE_NAMES: readonly SnapshotFileName[] = Object.values(SNAPSHOT_FILES)

/** Where the failed sources of a written snapshot are recorded. */
export const ERRORS_FILE = 'errors.json'

/** One entry of errors.json: a source that could not be collected, and why. */
export interface SnapshotErrorEntry {
  name: string
  error: string
  command?: string
  exitStatus?: number
  durationMs?: number
}

/**
 * Writes each collected file's text under its name, and `errors.json` listing the sources that
 * failed (always written, `[]` when none failed, so a reader can tell "nothing failed" from an
 * older snapshot). A file that failed but still has text (partial output) is written too.
 * Names are used as plain file names: one with a path separator is refused.
 */
export async function writeSnapshotDir(files: SourceFile[], dir: string): Promise<string[]> {
  await mkdir(dir, { recursive: true })
  const written: string[] = []
  const errors: SnapshotErrorEntry[] = []
  for (const f of files) {
    if (
      f.name === '' ||
      f.name !== path.basename(f.name) ||
      f.name === '.' ||
      f.name === '..' ||
      f.name === ERRORS_FILE
    ) {
      throw new Error(`writeSnapshotDir: refusing file name ${JSON.stringify(f.name)}`)
    }
    if (f.text !== undefined) {
      await writeFile(path.join(dir, f.name), f.text)
      written.push(f.name)
    }
    if (f.error !== undefined) {
      const e: SnapshotErrorEntry = { name: f.name, error: f.error }
      if (f.command !== undefined) e.command = f.command
      if (f.exitStatus !== undefined) e.exitStatus = f.exitStatus
      if (f.durationMs !== undefined) e.durationMs = f.durationMs
      errors.push(e)
    }
  }
  await writeFile(path.join(dir, ERRORS_FILE), JSON.stringify(errors, null, 2) + '\n')
  written.push(ERRORS_FILE)
  return written
}

/**
 * A collected file's bytes as text. Route dumps are ASCII: decoded as latin1 (a plain copy into a
 * one-byte string, much cheaper than UTF-8 decoding); anything else as UTF-8.
 */
export function decodeText(bytes: Buffer): string {
  return isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8')
}

/**
 * A buffer holding the first `used` bytes of `buf` with room for `more` after them, at least twice `buf`'s size: a
 * source read as it arrives is copied O(its size) times in all. No room is reserved ahead: Node reports a large
 * buffer's size to V8 as it is allocated, untouched pages or not, and V8 answers with full collections.
 */
export function grownBuffer(buf: Buffer, used: number, more: number): Buffer {
  const bigger = Buffer.allocUnsafe(Math.max(2 * buf.length, used + more))
  buf.copy(bigger, 0, 0, used)
  return bigger
}

/** Can `size` bytes be one text? V8's longest string is constants.MAX_STRING_LENGTH characters. */
export function fitsOneText(size: number): boolean {
  return size <= constants.MAX_STRING_LENGTH
}

/** How a source too long for one text is named to the user, after what it is: "N bytes, more than …". */
export function tooLongForOneText(size: number): string {
  return `${size} bytes, more than one text can hold here (${constants.MAX_STRING_LENGTH} bytes: V8's longest string)`
}
