// `ip -j neigh show` -> Neighbor[].
import {ParseError} from '../model/errors.js'
import {canonicalAddress} from '../model/prefix.js'
import type {Neighbor} from '../model/types.js'
import {Fields, isRecord, parseJsonArray} from './ip-common.js'

export function parseIpNeighJson(text: string, file = 'ip-j-neigh.json'): Neighbor[] {
  return parseJsonArray(text, file, 'neighbours').map(({value, pos}) => {
    if (!isRecord(value)) throw new ParseError(file, pos.line, 'a neighbour object', JSON.stringify(value))
    const f = new Fields(value, pos, 'neighbour')
    const raw = f.reqStr('dst')
    const dst = canonicalAddress(raw)
    if (dst === undefined) throw new ParseError(file, pos.line, 'neighbour "dst" to be an address', raw)
    // `ip neigh show dev X` omits dev; an INCOMPLETE/FAILED entry has no lladdr
    const neighbor: Neighbor = {dst, dev: f.str('dev') ?? '', state: f.strs('state') ?? [], pos}
    const lladdr = f.str('lladdr')
    if (lladdr !== undefined) neighbor.lladdr = lladdr
    return neighbor
  })
}
