// The last lines of BIRD's log, for support bundles: BIRD names its log file in its config
// (`log "/var/log/bird.log" all;`); syslog or stderr logs are not readable from here.
import {open} from 'node:fs/promises'

import type {SourceFile} from '../model/types.js'

export const BIRD_LOG_FILE = 'bird.log'

/** Log files named by `log "PATH" ...;` statements, in config order. */
export function birdLogPaths(config: string): string[] {
  const paths: string[] = []
  for (const m of config.matchAll(/^\s*log\s+"([^"]+)"/gm)) paths.push(m[1])
  return paths
}

/** The last `maxBytes` of the first readable log file (whole lines only), or a SourceFile saying why not. */
export async function collectBirdLog(
  config: string | undefined,
  maxBytes = 64 * 1024,
): Promise<SourceFile | undefined> {
  const paths = config ? birdLogPaths(config) : []
  if (paths.length === 0) return undefined
  const errors: string[] = []
  for (const path of paths) {
    const started = Date.now()
    try {
      const handle = await open(path, 'r')
      try {
        const {size} = await handle.stat()
        const length = Math.min(size, maxBytes)
        const buffer = Buffer.alloc(length)
        await handle.read(buffer, 0, length, size - length)
        let text = buffer.toString('utf8')
        if (length < size) text = text.slice(text.indexOf('\n') + 1) // drop the cut first line
        return {name: BIRD_LOG_FILE, text, command: `tail of ${path}`, exitStatus: 0, durationMs: Date.now() - started}
      } finally {
        await handle.close()
      }
    } catch (error) {
      errors.push(`${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
    }
  }
  return {
    name: BIRD_LOG_FILE,
    error: `BIRD's log is not readable (${errors.join('; ')})`,
    command: `tail of ${paths.join(', ')}`,
  }
}
