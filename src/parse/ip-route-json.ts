// `ip -j -d route show table all` (and `ip -j route`, which omits defaults) -> KernelRoute[].
import {ParseError} from '../model/errors.js'
import type {Family, KernelRoute, SourcePos} from '../model/types.js'
import {Fields, buildRoute, isRecord, forEachJsonElement, type RawGateway, type RawNexthop, type RawRoute} from './ip-common.js'

export interface IpRouteParseOptions {
  /** Family of a route whose family nothing on it reveals (`default dev wg0`): e.g. inet6 for `ip -6` output. */
  family?: Family
}

function rawGateway(f: Fields): RawGateway | undefined {
  const gw = f.str('gateway')
  if (gw !== undefined) return {host: gw}
  const via = f.rec('via')
  if (via === undefined) return undefined
  const v = new Fields(via, f.pos, 'via')
  return {family: v.str('family'), host: v.reqStr('host')}
}

function rawNexthop(value: unknown, pos: SourcePos): RawNexthop {
  if (!isRecord(value)) throw new ParseError(pos.file, pos.line, 'a next hop object in "nexthops"', JSON.stringify(value))
  const f = new Fields(value, pos, 'nexthop')
  const nh: RawNexthop = {flags: f.strs('flags') ?? []}
  const gw = rawGateway(f)
  if (gw) nh.gateway = gw
  const dev = f.str('dev')
  if (dev !== undefined) nh.dev = dev
  const weight = f.num('weight')
  if (weight !== undefined) nh.weight = weight
  return nh
}

export function parseIpRouteJson(text: string, file = 'ip-j-d-route.json', opts: IpRouteParseOptions = {}): KernelRoute[] {
  const routes: KernelRoute[] = []
  forEachJsonElement(text, file, 'routes', (value, pos) => {
    if (!isRecord(value)) throw new ParseError(file, pos.line, 'a route object', JSON.stringify(value))
    const f = new Fields(value, pos, 'route')
    const raw: RawRoute = {
      type: f.str('type'),
      dst: f.reqStr('dst'),
      gateway: rawGateway(f),
      dev: f.str('dev'),
      table: f.name('table'),
      protocol: f.name('protocol'),
      scope: f.name('scope'),
      metric: f.num('metric'),
      prefsrc: f.str('prefsrc'),
      tos: f.name('tos'),
      pref: f.str('pref'),
      flags: f.strs('flags') ?? [],
      nexthops: f.list('nexthops')?.map((nh) => rawNexthop(nh, pos)),
    }
    routes.push(buildRoute(raw, pos, opts.family))
  })
  return routes
}
