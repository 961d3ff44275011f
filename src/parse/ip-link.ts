// `ip -j -d link show` and `ip -d link show` -> Link[].
import {ParseError} from '../model/errors.js'
import type {Link} from '../model/types.js'
import {Fields, isRecord, parseJsonArray, splitLines} from './ip-common.js'

/** `eth0@if2`, `tunl0@NONE`, `eth0.100@eth0` -> the name before `@`. */
function baseName(ifname: string): string {
  const at = ifname.indexOf('@')
  return at > 0 ? ifname.slice(0, at) : ifname
}

export function parseIpLinkJson(text: string, file = 'ip-j-d-link.json'): Link[] {
  return parseJsonArray(text, file, 'links').map(({value, pos}) => {
    if (!isRecord(value)) throw new ParseError(file, pos.line, 'a link object', JSON.stringify(value))
    const f = new Fields(value, pos, 'link')
    const ifindex = f.num('ifindex')
    if (ifindex === undefined) throw new ParseError(file, pos.line, 'link field "ifindex" to be a number', 'undefined')
    const link: Link = {
      ifindex,
      ifname: baseName(f.reqStr('ifname')),
      flags: f.strs('flags') ?? [],
      mtu: f.num('mtu') ?? 0,
      operstate: f.str('operstate') ?? 'UNKNOWN',
      pos,
    }
    const linkinfo = f.rec('linkinfo')
    if (linkinfo) {
      const kind = new Fields(linkinfo, pos, 'linkinfo').str('info_kind')
      if (kind !== undefined) link.kind = kind
    }
    const address = f.str('address')
    if (address !== undefined) link.address = address
    return link
  })
}

// First words of `-d` detail lines that are not a link kind.
const NOT_A_KIND = new Set([
  'addrgenmode',
  'altname',
  'alias',
  'vf',
  'prop',
  'numtxqueues',
  'promiscuity',
  'RX:',
  'TX:',
  'RX',
  'TX',
])

const HEADER = /^(\d+):\s+(\S+?):\s+<([^>]*)>(.*)$/

/**
 * Text form. A link is its `N: name: <FLAGS> mtu ... state S` header plus indented lines: `link/TYPE [MAC]
 * ...`, then with `-d` a line that starts with the kind (`veth ...`, `tun type tun pi off ...`, `ipip ipip
 * remote any ...`) when the device has one, or a `bridge_slave`-style line, `altname`, ...
 */
export function parseIpLinkText(text: string, file = 'ip-d-link.txt'): Link[] {
  const links: Link[] = []
  let current: Link | undefined
  let afterLinkLine = false // the next indented line is where `-d` prints the kind
  splitLines(text).forEach((line, i) => {
    const lineNo = i + 1
    if (line.trim() === '') return
    const header = HEADER.exec(line)
    if (header) {
      const [, index, name, flags, rest] = header
      const words = rest.trim().split(/\s+/)
      const after = (key: string): string | undefined => {
        const k = words.indexOf(key)
        return k >= 0 ? words[k + 1] : undefined
      }
      const mtu = after('mtu')
      current = {
        ifindex: Number(index),
        ifname: baseName(name),
        flags: flags === '' ? [] : flags.split(','),
        mtu: mtu !== undefined && /^\d+$/.test(mtu) ? Number(mtu) : 0,
        operstate: after('state') ?? 'UNKNOWN',
        pos: {file, line: lineNo, endLine: lineNo},
      }
      links.push(current)
      afterLinkLine = false
      return
    }
    if (!current || !/^\s/.test(line))
      throw new ParseError(file, lineNo, 'a link header "N: NAME: <FLAGS> mtu N ..." or an indented detail line', line)
    current.pos.endLine = lineNo
    const words = line.trim().split(/\s+/)
    if (words[0].startsWith('link/')) {
      // `link/ether MAC brd ...`, `link/none`, `link/ipip 0.0.0.0 brd 0.0.0.0`
      const addr = words[1]
      if (addr !== undefined && addr !== 'brd' && addr !== 'promiscuity' && !words[0].startsWith('link/none'))
        current.address = addr
      afterLinkLine = true
      return
    }
    if (afterLinkLine) {
      afterLinkLine = false
      const w = words[0]
      if (!NOT_A_KIND.has(w) && !w.endsWith('_slave') && /^[a-z][a-z0-9_-]*$/.test(w)) current.kind = w
    }
  })
  return links
}
