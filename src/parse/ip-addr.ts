// `ip -j addr show` -> Address[]: one entry per addr_info element, positioned at its link's object.
import {ParseError} from '../model/errors.js'
import {canonicalAddress} from '../model/prefix.js'
import type {Address} from '../model/types.js'
import {Fields, isRecord, parseJsonArray} from './ip-common.js'

export function parseIpAddrJson(text: string, file = 'ip-j-addr.json'): Address[] {
  const out: Address[] = []
  for (const {value, pos} of parseJsonArray(text, file, 'links with addr_info')) {
    if (!isRecord(value)) throw new ParseError(file, pos.line, 'a link object', JSON.stringify(value))
    const link = new Fields(value, pos, 'link')
    // `ip addr` prints links without addresses too; they have an empty or absent addr_info
    const ifname = link.str('ifname') ?? ''
    for (const info of link.list('addr_info') ?? []) {
      if (!isRecord(info)) throw new ParseError(file, pos.line, 'an addr_info object', JSON.stringify(info))
      const f = new Fields(info, pos, 'addr_info')
      const family = f.reqStr('family')
      if (family !== 'inet' && family !== 'inet6') continue // e.g. mpls: not an IP address
      const raw = f.reqStr('local')
      const local = canonicalAddress(raw)
      if (local === undefined) throw new ParseError(file, pos.line, 'addr_info "local" to be an address', raw)
      const prefixlen = f.num('prefixlen')
      if (prefixlen === undefined)
        throw new ParseError(file, pos.line, 'addr_info field "prefixlen" to be a number', 'undefined')
      out.push({ifname: ifname.replace(/@.*$/, ''), family, local, prefixlen, scope: f.name('scope') ?? 'global', pos})
    }
  }
  return out
}
