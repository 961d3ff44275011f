// `ip rule show` (also `ip -6 rule`) -> IpRule[]: `0:\tfrom all lookup local`, `32000:\tfrom all to 192.168.0.0/16
// lookup 1158`.
import {ParseError} from '../model/errors.js'
import {canonicalPrefix} from '../model/prefix.js'
import type {IpRule} from '../model/types.js'
import {splitLines} from './ip-common.js'

const RULE = /^\s*(\d+):\s*(.*?)\s*$/
// words that take one argument and select packets a destination lookup cannot be said to match
const OTHER_SELECTORS = new Set([
  'iif',
  'oif',
  'fwmark',
  'tos',
  'dsfield',
  'uidrange',
  'ipproto',
  'sport',
  'dport',
  'l3mdev',
  'realms',
])
const TERMINAL_ACTIONS = new Set(['blackhole', 'unreachable', 'prohibit', 'nop'])

function prefixOf(word: string, file: string, line: number, text: string): string | undefined {
  if (word === 'all') return undefined
  const v6 = word.includes(':')
  const p = canonicalPrefix(word.includes('/') ? word : v6 ? `${word}/128` : `${word}/32`, v6 ? 'inet6' : 'inet')
  if (p === undefined) throw new ParseError(file, line, 'an address or prefix after from/to', text)
  return p
}

export function parseIpRule(text: string, file = 'ip-rule.txt'): IpRule[] {
  const rules: IpRule[] = []
  splitLines(text).forEach((line, i) => {
    if (line.trim() === '') return
    const m = RULE.exec(line)
    if (!m || m[2] === '') throw new ParseError(file, i + 1, 'a rule "PRIORITY:\\tSELECTOR ACTION"', line)
    const rule: IpRule = {priority: Number(m[1]), text: m[2], action: 'other', pos: {file, line: i + 1, endLine: i + 1}}
    const words = m[2].split(/\s+/)
    for (let k = 0; k < words.length; k++) {
      const w = words[k]
      const next = words[k + 1]
      if (w === 'from' && next !== undefined) {
        const p = prefixOf(next, file, i + 1, line)
        if (p !== undefined) rule.from = p
        k++
      } else if (w === 'to' && next !== undefined) {
        const p = prefixOf(next, file, i + 1, line)
        if (p !== undefined) rule.to = p
        k++
      } else if ((w === 'lookup' || w === 'table') && next !== undefined) {
        // `lookup T` (ip prints `lookup`; `table T` is accepted on input and printed by old versions)
        rule.table = next
        rule.action = 'lookup'
        k++
      } else if (w === 'goto' && next !== undefined) {
        rule.action = 'goto'
        k++
      } else if (w === 'proto' && next !== undefined) {
        rule.protocol = next
        k++
      } else if (w === 'not') {
        rule.otherSelectors = true
      } else if (OTHER_SELECTORS.has(w)) {
        rule.otherSelectors = true
        k++
      } else if (TERMINAL_ACTIONS.has(w)) {
        rule.action = w as IpRule['action']
      }
    }
    rules.push(rule)
  })
  return rules
}
