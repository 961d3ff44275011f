// Shared by the lab tests of `watch`: the built agent started in n1's namespace, its JSON change lines collected
// as they come, and a wait for what they (or anything else) will show.
import {execa, type ResultPromise} from 'execa'

import {BIN, ROOT} from '../helpers.js'
import type {Lab} from '../lab/lab.js'
import {liveFlags, POOL, sleep} from './live.js'

export interface WatchAgentRun {
  process: ResultPromise
  lines: any[] // the JSON change lines so far
  stderr(): string
}

/** `routedoctor watch --json` with n1's live flags, the lab's pool and `args`, running in n1's namespace. */
// `node`: its flags instead of the live flags and the pool (as the DaemonSet runs it), and its environment
export function startWatchAgent(
  lab: Lab,
  args: string[],
  node?: {flags: string[]; env: Record<string, string>},
): WatchAgentRun {
  const flags = node?.flags ?? [...liveFlags(lab), ...POOL]
  const process = execa('ip', ['netns', 'exec', lab.ns('n1'), 'node', BIN, 'watch', ...flags, '--json', ...args], {
    // a SIGTERM is the test's to follow up (the agent may take seconds to withdraw what it wrote), not execa's
    reject: false, cwd: ROOT, env: {NO_COLOR: '1', ...node?.env}, stdin: 'ignore', forceKillAfterDelay: false,
  })
  const lines: any[] = []
  let stderr = ''
  process.stdout!.setEncoding('utf8')
  let buffered = ''
  process.stdout!.on('data', (chunk: string) => {
    buffered += chunk
    const parts = buffered.split('\n')
    buffered = parts.pop()!
    for (const l of parts) if (l) lines.push(JSON.parse(l))
  })
  process.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return {process, lines, stderr: () => stderr}
}

/** `get()` until it gives something (its errors retried), at most `timeoutMs`. */
export async function until<T>(
  what: string,
  get: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 60_000,
): Promise<T> {
  const end = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await get()
      if (v !== undefined) return v
    } catch (error) {
      last = error
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`)
    await sleep(250)
  }
}
