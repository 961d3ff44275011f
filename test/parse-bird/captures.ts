// Access to the real BIRD captures in test/fixtures/bird-captures (BIRD 1.6.8, 2.0.12, 3.0.5 and
// 3.2.3 run in network namespaces; see bird-output-formats.md §0). The birdc captures hold one
// section per command (`### $ birdc -s SOCK CMD` … `### (end)`); the *-rawsocket captures are a
// raw control-socket transcript where `>>> CMD` lines separate the replies.
import {readFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'

export const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url))

export function fixture(path: string): string {
  return readFileSync(FIXTURES + path, 'utf8')
}

/** The birdc output of `cmd` in a capture file (banner included, section markers excluded). */
export function capture(file: string, cmd: string): string {
  const lines = fixture(`bird-captures/${file}`).split('\n')
  const start = lines.indexOf(`### $ birdc -s SOCK ${cmd}`)
  if (start < 0) throw new Error(`no section "${cmd}" in ${file}`)
  const end = lines.indexOf('### (end)', start)
  return lines.slice(start + 1, end).join('\n') + '\n'
}

/** Every birdc section of every capture: [file, command, text]. */
export function allCaptureSections(): [string, string, string][] {
  const out: [string, string, string][] = []
  for (const file of CAPTURE_FILES) {
    if (file.includes('rawsocket')) continue
    const lines = fixture(`bird-captures/${file}`).split('\n')
    for (let i = 0; i < lines.length; i++) {
      if (!lines[i]!.startsWith('### $ birdc -s SOCK ')) continue
      const end = lines.indexOf('### (end)', i)
      out.push([file, lines[i]!.slice('### $ birdc -s SOCK '.length), lines.slice(i + 1, end).join('\n') + '\n'])
    }
  }
  return out
}

/** The raw socket reply to `cmd` (reply-code framing), from a *-rawsocket capture. */
export function rawCapture(file: string, cmd: string): string {
  const lines = fixture(`bird-captures/${file}`).split('\n')
  const start = lines.indexOf(`>>> ${cmd}`)
  if (start < 0) throw new Error(`no raw reply "${cmd}" in ${file}`)
  let end = start + 1
  while (end < lines.length && !lines[end]!.startsWith('>>> ')) end++
  return lines.slice(start + 1, end).join('\n') + '\n'
}

export const CAPTURE_FILES = [
  'bird1.6.8-B16-established.txt',
  'bird1.6.8-B16-holdexpired.txt',
  'bird1.6.8-B16-isolong.txt',
  'bird1.6.8-B16-longattrs.txt',
  'bird1.6.8-B16-rawsocket.txt',
  'bird1.6.8-B16-received-shutdown.txt',
  'bird1.6.8-B16v6-disabled.txt',
  'bird1.6.8-B16v6-established.txt',
  'bird2.0.12-A2-established.txt',
  'bird2.0.12-A2-holdexpired.txt',
  'bird2.0.12-A2-isolong.txt',
  'bird2.0.12-A2-longattrs.txt',
  'bird2.0.12-A2-rawsocket.txt',
  'bird2.0.12-A2-received-shutdown.txt',
  'bird2.0.12-A2-showroutefor-covering.txt',
  'bird2.0.12-B2-established.txt',
  'bird3.0.5-B30-errors.txt',
  'bird3.0.5-B30-established.txt',
  'bird3.0.5-B30-rawsocket.txt',
  'bird3.0.5-B30-showroutefor-covering.txt',
  'bird3.2.3-B3-errors.txt',
  'bird3.2.3-B3-established.txt',
  'bird3.2.3-B3-longattrs.txt',
  'bird3.2.3-B3-rawsocket.txt',
  'bird3.2.3-B3-showroutefor-covering.txt',
  'bird3.2.3-B3-v2-longattrs.txt',
  'bird3.2.3-B3-v2attributes.txt',
  'states-series.txt',
  'states-series2.txt',
  'states-series3.txt',
]

export const SCENARIOS = ['bird16-ecmp-not-tunneled', 'bird16-ipv6-ll-underlay-unreachable', 'bird2-ecmp-not-tunneled', 'bird2-peer-down']

/**
 * birdc text -> the same reply as the control socket sends it, line for line (so line numbers
 * match): the greeting gets code 0001, each payload line either a fresh code or a continuation
 * (chosen by `fresh`), and `0000 ` ends the reply.
 */
export function toRawSocket(birdc: string, fresh: (index: number) => boolean = (i) => i === 0, code = '1007'): string {
  const lines = birdc.split('\n')
  if (lines[lines.length - 1] === '') lines.pop()
  const out: string[] = []
  let first = true
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!
    if (/^BIRD \S+ ready\.$/.test(l)) {
      out.push(`0001 ${l}`)
      continue
    }
    if (l === '') {
      out.push(' ') // an empty payload line is a continuation with nothing after the marker
      continue
    }
    out.push(first || fresh(i) ? `${code}-${l}` : ` ${l}`)
    first = false
  }
  out.push('0000 ')
  return out.join('\n') + '\n'
}
