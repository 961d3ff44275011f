// time(1) around a measured command: its peak RSS and CPU seconds, shared by run.mjs and fix-apply-lab.mjs.
import {existsSync, readFileSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

export const TIME = ['/usr/bin/time', '/bin/time'].find((p) => existsSync(p))

/** argv through time(1) when there is one, and the file it writes its figures to. */
export function timed(argv) {
  if (!TIME) return {cmd: argv, timeFile: undefined}
  const timeFile = path.join(os.tmpdir(), `rdbench-time-${process.pid}-${Math.random().toString(36).slice(2)}`)
  return {cmd: [TIME, '-f', '%e %M %U %S', '-o', timeFile, ...argv], timeFile}
}

/**
 * What time(1) wrote to `timeFile` (then removed): peak RSS (bytes), CPU seconds in user space and in the kernel
 * (for apply: how much of a run is the kernel's work), the signal that ended the command; {} without it.
 */
export function timeOf(timeFile) {
  if (!timeFile) return {}
  try {
    const text = readFileSync(timeFile, 'utf8')
    // GNU time writes "Command exited with non-zero status N" / "Command terminated by signal N" first
    const sig = /terminated by signal (\d+)/.exec(text)
    const last = text.trim().split('\n').pop().trim().split(/\s+/)
    return {rss: Number(last[1]) * 1024, user: Number(last[2]), sys: Number(last[3]), signal: sig ? `SIG${sig[1]}` : undefined}
  } catch {
    return {} // killed before time wrote it
  } finally {
    rmSync(timeFile, {force: true})
  }
}

