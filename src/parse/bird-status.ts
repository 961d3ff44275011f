// `show status` of BIRD 1.6, 2.x, 3.x and Calico's fork (reference: bird-output-formats.md §2.1, §3.1, §4.1).
import {ParseError} from '../model/errors.js'
import {canonicalAddress} from '../model/prefix.js'
import type {BirdStatus, GracefulRestartStatus} from '../model/types.js'
import {frameBirdText, isErrorCode} from './bird-framing.js'

// Lines of the status report other than the version and router id; the last one is the daemon
// state (`Daemon is up and running`, `Reconfiguration in progress`, `Shutdown in progress`, ...).
const KNOWN_PREFIXES = [
  'Hostname is ',
  'Current server time is ',
  'Last reboot on ',
  'Last reconfiguration on ',
  'Daemon is ',
  'Graceful restart ',
]

/**
 * "2.0.12" -> 2; Calico's fork prints its own version with the BIRD it is based on
 * (`v0.3.3+birdv1.6.8`), and the BIRD part decides the output format.
 */
export function birdVersionInfo(version: string): {major: number; calicoFork: boolean} {
  const plus = version.indexOf('+bird')
  const calicoFork = plus >= 0
  let base = calicoFork ? version.slice(plus + 5) : version
  if (base.startsWith('v')) base = base.slice(1)
  const major = Number.parseInt(base, 10)
  return {major: Number.isNaN(major) ? 0 : major, calicoFork}
}

/** The indented lines under `Graceful restart recovery in progress` (raw socket: code 0024 continuations). */
function gracefulRestartLine(gr: GracefulRestartStatus, line: string): boolean {
  const waiting = /^Waiting for (\d+) (\S+) to recover$/.exec(line)
  if (waiting) {
    gr.waiting = Number(waiting[1])
    gr.unit = waiting[2]
    return true
  }
  const timer = /^Wait timer is (\d+(?:\.\d+)?)\/(\d+(?:\.\d+)?)$/.exec(line)
  if (timer) {
    gr.remaining = Number(timer[1])
    gr.wait = Number(timer[2])
    return true
  }
  return false
}

export function parseBirdStatus(text: string, file = 'birdc-show-status.txt'): BirdStatus {
  let version: string | undefined
  let routerId: string | undefined
  let first: number | undefined
  let last = 1
  let gr: GracefulRestartStatus | undefined
  const framer = frameBirdText(text, file, (line, lineNo, code) => {
    if (isErrorCode(code)) throw new ParseError(file, lineNo, 'a status report', `BIRD error ${code}: ${line}`)
    first ??= lineNo
    last = lineNo
    if (line.startsWith('BIRD ') && version === undefined) {
      const v = line.slice(5).trim()
      if (v.length > 0 && !v.includes(' ')) {
        version = v
        return
      }
    }
    if (line.startsWith('Router ID is ')) {
      const id = line.slice(13).trim()
      routerId = canonicalAddress(id) ?? id
      return
    }
    if (line === 'Graceful restart recovery in progress') {
      gr = {pos: {file, line: lineNo, endLine: lineNo}}
      return
    }
    if (gr !== undefined && gracefulRestartLine(gr, line.trim())) {
      gr.pos.endLine = lineNo
      return
    }
    if (KNOWN_PREFIXES.some((p) => line.startsWith(p)) || line.endsWith(' in progress')) return
    throw new ParseError(
      file,
      lineNo,
      'a status line ("BIRD x.y.z", "Router ID is ...", "Daemon is up and running", ...)',
      line,
    )
  })
  version ??= framer.banner?.version
  if (version === undefined)
    throw new ParseError(file, first ?? 1, 'a "BIRD x.y.z" version line or a "BIRD x.y.z ready." greeting')
  const {major, calicoFork} = birdVersionInfo(version)
  const startLine =
    framer.banner !== undefined ? Math.min(framer.banner.line, first ?? framer.banner.line) : (first ?? 1)
  const status: BirdStatus = {
    version,
    major,
    calicoFork,
    pos: {file, line: startLine, endLine: Math.max(last, startLine)},
  }
  if (routerId !== undefined) status.routerId = routerId
  if (gr !== undefined) status.gracefulRestart = gr
  return status
}
