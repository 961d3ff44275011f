// Fixture discovery for the kernel-side parser tests.
import {existsSync, readFileSync, readdirSync, statSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {ParseError} from '../../src/model/errors.js'

export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures')

/** Every fixture folder that holds all of `files`. */
export function foldersWith(...files: string[]): string[] {
  return readdirSync(FIXTURES)
    .filter((d) => statSync(join(FIXTURES, d)).isDirectory())
    .filter((d) => files.every((f) => existsSync(join(FIXTURES, d, f))))
    .sort()
}

export function fixture(folder: string, file: string): string {
  return readFileSync(join(FIXTURES, folder, file), 'utf8')
}

/** Drop `pos` so two parsers of the same data compare equal. */
export function withoutPos<T extends {pos?: unknown}>(items: T[]): Array<Omit<T, 'pos'>> {
  return items.map(({pos: _pos, ...rest}) => rest)
}

/** The ParseError `fn` throws (anything else fails the test). */
export function parseError(fn: () => unknown): ParseError {
  try {
    fn()
  } catch (error) {
    if (error instanceof ParseError) return error
    throw error
  }
  throw new Error('expected a ParseError')
}
