import {existsSync, mkdtempSync, readdirSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {onTestFinished} from 'vitest'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const FIXTURES = path.join(ROOT, 'test/fixtures')
export const BIN = path.join(ROOT, 'bin/run.js')

/** Snapshot folders (those with an expected.json), captured from real BIRD. */
export function scenarioDirs(): string[] {
  return readdirSync(FIXTURES).filter((d) => existsSync(path.join(FIXTURES, d, 'expected.json'))).map((d) => path.join(FIXTURES, d))
}

export interface Expected {
  check_exit: number
  prefixes: Record<
    string,
    {
      verdict: string
      findings?: string[]
      plan: null | {nexthops: Array<{gateway: string; dev: string; onlink: boolean}>}
    }
  >
  host_findings?: string[]
  explain?: Record<string, {verdict: string; findings?: string[]; plan: null}>
}

/** A fresh directory under the system temp dir, removed when the test that made it finishes. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix))
  onTestFinished(() => rmSync(dir, {recursive: true, force: true}))
  return dir
}
