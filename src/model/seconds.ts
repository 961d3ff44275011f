// A duration given in seconds on the command line (`--interval 2.5`): the same check for every command that takes one.
import {UsageError} from './errors.js'

/** `text` as a number of seconds greater than 0 and at most `max`; a usage error (exit 2) naming `--flag` otherwise. */
export function parseSeconds(flag: string, text: string, max: number): number {
  const n = Number(text)
  if (text.trim() === '' || !Number.isFinite(n) || n <= 0 || n > max) {
    throw new UsageError(`--${flag} ${text}: expected a number of seconds greater than 0 and at most ${max}`)
  }
  return n
}
