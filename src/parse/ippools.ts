// Calico IPPool lists (YAML or JSON; `kind: IPPoolList` with items, a single IPPool, a bare list, `calicoctl get
// ippools -o yaml`, kubectl's `kind: List`, and calicoctl v1 `kind: ipPool` with metadata.cidr) -> Pool[].
import type * as YamlModule from 'yaml'
import type {Node} from 'yaml'

import {ParseError} from '../model/errors.js'
import {canonicalPrefix, familyOf} from '../model/prefix.js'
import {blockSizeProblem} from '../model/calico.js'
import type {Pool, PoolMode} from '../model/types.js'
import {isRecord} from './ip-common.js'
import {loadYaml} from './load-yaml.js'

function isEncapOn(mode: unknown): boolean {
  return typeof mode === 'string' && /^(always|crosssubnet|cross-subnet)$/i.test(mode)
}

function poolMode(spec: Record<string, unknown>): PoolMode {
  if (isEncapOn(spec.ipipMode)) return 'ipip'
  // calicoctl v1: `ipip: {enabled: true, mode: always|cross-subnet}`
  if (isRecord(spec.ipip) && spec.ipip.enabled !== false && (spec.ipip.enabled === true || isEncapOn(spec.ipip.mode)))
    return 'ipip'
  if (isEncapOn(spec.vxlanMode)) return 'vxlan'
  return 'none'
}

const MODES = /^(always|crosssubnet|never)$/i

/**
 * ipipMode and vxlanMode hold Always, CrossSubnet or Never (Calico refuses anything else); v1's ipip.mode always or
 * cross-subnet.
 */
function checkModes(spec: Record<string, unknown>, file: string, lineOf: KeyLine): void {
  for (const key of ['ipipMode', 'vxlanMode']) {
    const v = spec[key]
    if (v !== undefined && v !== null && (typeof v !== 'string' || !MODES.test(v))) {
      throw new ParseError(file, lineOf(['spec', key]), `${key} Always, CrossSubnet or Never`, String(v))
    }
  }
  if (
    isRecord(spec.ipip) &&
    spec.ipip.mode !== undefined &&
    (typeof spec.ipip.mode !== 'string' || !/^(always|cross-?subnet)$/i.test(spec.ipip.mode))
  ) {
    throw new ParseError(
      file,
      lineOf(['spec', 'ipip', 'mode']),
      'ipip.mode always or cross-subnet',
      String(spec.ipip.mode),
    )
  }
}

/** The line of a key of the item (its first line when the key is not found). */
type KeyLine = (keys: string[]) => number

function toPool(item: unknown, file: string, line: number, lineOf: KeyLine = () => line): Pool | undefined {
  if (!isRecord(item)) throw new ParseError(file, line, 'an IPPool object', JSON.stringify(item) ?? String(item))
  if (typeof item.kind === 'string' && !/^ippool$/i.test(item.kind)) return undefined // another resource in the list
  const spec = isRecord(item.spec) ? item.spec : {}
  const metadata = isRecord(item.metadata) ? item.metadata : {}
  const rawCidr = spec.cidr ?? metadata.cidr
  if (typeof rawCidr !== 'string')
    throw new ParseError(file, line, 'an IPPool with spec.cidr', JSON.stringify(item).slice(0, 80))
  const cidr = rawCidr.includes('/') ? canonicalPrefix(rawCidr) : undefined
  if (cidr === undefined) throw new ParseError(file, line, 'spec.cidr to be a CIDR', rawCidr)
  checkModes(spec, file, lineOf)
  const pool: Pool = {cidr, mode: poolMode(spec), origin: 'ippools', pos: {file, line, endLine: line}}
  if (pool.mode === 'ipip' && familyOf(cidr) === 'inet6') {
    throw new ParseError(
      file,
      lineOf(['spec', 'cidr']),
      'an IPv6 pool without IP-in-IP (Calico has no IPv6 IP-in-IP)',
      rawCidr,
    )
  }
  const ipipMode = typeof spec.ipipMode === 'string' ? spec.ipipMode : isRecord(spec.ipip) ? spec.ipip.mode : undefined
  if (pool.mode === 'ipip' && typeof ipipMode === 'string' && /^cross-?subnet$/i.test(ipipMode)) pool.crossSubnet = true
  if (spec.blockSize !== undefined) {
    const problem = blockSizeProblem(spec.blockSize, cidr)
    if (problem !== undefined) throw new ParseError(file, lineOf(['spec', 'blockSize']), problem, JSON.stringify(spec.blockSize))
    pool.blockSize = spec.blockSize as number
  }
  if (typeof metadata.name === 'string') pool.name = metadata.name
  return pool
}

/** The pool items of one document root: a list, a `*List` with items, or one pool. */
function itemNodes(root: Node): unknown[] {
  const {isMap, isSeq} = yaml()
  if (isSeq(root)) return root.items
  if (isMap(root) && root.has('items')) {
    const items = root.get('items', true)
    if (isSeq(items)) return items.items
    if (items === null || items === undefined) return []
    return [items]
  }
  return [root]
}

// yaml is loaded on first use: most runs have no IPPool file, and start-up time matters.
let yamlModule: typeof YamlModule | undefined
function yaml(): typeof YamlModule {
  return (yamlModule ??= loadYaml())
}

export function parseIpPools(text: string, file = 'ippools.yaml'): Pool[] {
  const {LineCounter, parseAllDocuments} = yaml()
  const lineCounter = new LineCounter()
  const docs = parseAllDocuments(text, {lineCounter, prettyErrors: false})
  const lineOf = (offset: number | undefined): number => (offset === undefined ? 1 : lineCounter.linePos(offset).line)
  const pools: Pool[] = []
  for (const doc of Array.isArray(docs) ? docs : []) {
    const err = doc.errors[0]
    if (err)
      throw new ParseError(
        file,
        err.linePos?.[0].line ?? lineOf(err.pos[0]),
        `YAML or JSON (${err.code})`,
        err.message.split('\n')[0],
      )
    const root = doc.contents
    if (root === null) continue
    for (const node of itemNodes(root as Node)) {
      const range = (node as {range?: [number, number, number]} | null)?.range
      const line = lineOf(range?.[0])
      let value: unknown
      try {
        value =
          node !== null && typeof node === 'object' && 'toJSON' in node
            ? (node as {toJSON: () => unknown}).toJSON()
            : node
      } catch (error) {
        // e.g. an alias bomb: yaml refuses to expand it
        throw new ParseError(file, line, 'an IPPool object', error instanceof Error ? error.message : String(error))
      }
      const keyLine: KeyLine = (keys) => {
        const at = (node as {getIn?: (path: string[], keepScalar: boolean) => unknown} | null)?.getIn?.(keys, true) as
          {range?: [number, number, number]} | undefined
        return at?.range ? lineOf(at.range[0]) : line
      }
      const pool = toPool(value, file, line, keyLine)
      if (pool) {
        if (range) {
          // the node's range takes in the newline after it; end at its last visible character
          let end = range[1]
          while (end > range[0] && /\s/.test(text[end - 1] ?? '')) end--
          pool.pos = {file, line, endLine: Math.max(line, lineOf(Math.max(range[0], end - 1)))}
        }
        pools.push(pool)
      }
    }
  }
  return pools
}
