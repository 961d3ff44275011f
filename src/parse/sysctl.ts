// `name = value` lines (sysctl output or sysctl.conf style) -> SysctlEntry[].
import {ParseError} from '../model/errors.js'
import type {SysctlEntry} from '../model/types.js'
import {splitLines} from './ip-common.js'

// Names are dotted keys; interface names may carry `/` (for a dot in the name), `-`, `@`, `:`.
const ENTRY = /^\s*-?([A-Za-z0-9_][A-Za-z0-9_.\-/@:+]*)\s*=\s*(.*?)\s*$/

// what `sysctl -a 2>&1` run as a user writes for the keys only root may read (procps: `permission denied on key`,
// `reading key`): no setting, so passed over like a comment
const UNREADABLE_KEY = /^sysctl: (permission denied on key|reading key) /

// the settings routedoctor judges: integers, each
const NUMERIC = /(^|\.)(ip_forward|forwarding|rp_filter|fib_multipath_hash_policy|fib_multipath_use_neigh|mtu)$/

export function parseSysctl(text: string, file = 'sysctl.txt'): SysctlEntry[] {
  const out: SysctlEntry[] = []
  splitLines(text).forEach((line, i) => {
    const t = line.trim()
    if (t === '' || t.startsWith('#') || t.startsWith(';') || UNREADABLE_KEY.test(t)) return
    const m = ENTRY.exec(line)
    if (!m) throw new ParseError(file, i + 1, 'a "name = value" line', line)
    if (NUMERIC.test(m[1]) && !/^-?\d+$/.test(m[2]))
      throw new ParseError(file, i + 1, `an integer value for ${m[1]}`, m[2])
    out.push({name: m[1], value: m[2], pos: {file, line: i + 1, endLine: i + 1}})
  })
  return out
}
