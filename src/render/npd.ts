// `check --npd`: node-problem-detector's custom-plugin protocol. One line of at most 80 bytes on stdout (NPD cuts
// max_output_length in bytes, which would split a UTF-8 character), and the exit status: 0 ok (the condition is
// False), 1 a problem (True), 3 unknown (what the diagnosis rests on could not be read).
import {counted} from '../model/format.js'
import {keyPrefix} from '../model/prefix-key.js'
import {isBulkBrokenPrefixes, isBulkHealthyPrefixes, type CheckRun} from '../report/report.js'
import {readInstead} from '../snapshot/build.js'

export const NPD_MAX = 80
export const NPD_UNKNOWN = 3

// without these a diagnosis says nothing about the node's routes (the kernel's in either form)
const ESSENTIAL = ['ip-j-d-route.json', 'birdc-show-route-all.txt', 'birdc-show-protocols-all.txt']
const KERNEL_TEXT = 'ip-d-route.txt'

const ELLIPSIS = '…'

/** One line (an error's own line breaks become spaces) of at most NPD_MAX UTF-8 bytes, `…` where it was cut. */
export function npdLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim()
  if (Buffer.byteLength(line) <= NPD_MAX) return line
  const room = NPD_MAX - Buffer.byteLength(ELLIPSIS)
  let out = ''
  let bytes = 0
  for (const ch of line) {
    bytes += Buffer.byteLength(ch)
    if (bytes > room) break
    out += ch
  }
  return out + ELLIPSIS
}

export function npdResult(run: CheckRun): {line: string; exitCode: 0 | 1 | typeof NPD_UNKNOWN} {
  // the JSON route dump failed, and the text one was read instead: the kernel's routes are known
  const textRead = (f: {file: string; error: string}) => f.file === 'ip-j-d-route.json' && f.error.endsWith(readInstead(KERNEL_TEXT))
  const failed = run.node.failed.find((f) => ESSENTIAL.includes(f.file) && !textRead(f))
  // a source not there is no more known than one that failed (a snapshot without BIRD's files says nothing of BIRD)
  const missing = run.node.missing.filter((f) => ESSENTIAL.includes(f))
  const broken = new Map<string, {first: string; count: number}>() // verdict → prefixes with an error finding
  const add = (verdict: string, prefix: () => string, count: number) => {
    const seen = broken.get(verdict)
    if (seen === undefined) broken.set(verdict, {first: prefix(), count})
    else seen.count += count
  }
  for (const l of run.lines) {
    // a run reported broken in bulk: each prefix with an error finding
    if (isBulkBrokenPrefixes(l)) add(l.broken.verdict, () => keyPrefix(l.keys[l.from]), l.to - l.from)
    else if (!isBulkHealthyPrefixes(l) && l.findings.some((f) => f.severity === 'error')) add(l.verdict, () => l.prefix, 1)
  }
  const summary = run.summary()
  if (failed) return {line: npdLine(`unknown: cannot read ${failed.file}: ${failed.error}`), exitCode: NPD_UNKNOWN}
  if (missing.length > 0) return {line: npdLine(`unknown: no ${missing.join(', ')}`), exitCode: NPD_UNKNOWN}
  const {up, total} = run.node.sessions
  if (summary.errors === 0) return {line: npdLine(`ok: ${counted(summary.prefixes, 'prefix', 'prefixes')}, BGP ${up}/${total} Established`), exitCode: 0}
  const parts = [...broken].map(([verdict, {first, count}]) => `${count} ${verdict} (${first}${count > 1 ? ' …' : ''})`)
  const host = [...new Set(run.host.findings.filter((f) => f.severity === 'error').map((f) => f.id))]
  return {line: npdLine([...parts, ...host].join('; ')), exitCode: 1}
}

export function npdUnknown(error: Error): {line: string; exitCode: typeof NPD_UNKNOWN} {
  return {line: npdLine(`unknown: ${error.message}`), exitCode: NPD_UNKNOWN}
}
