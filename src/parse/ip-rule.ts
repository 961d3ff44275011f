// `ip rule show` (also `ip -6 rule`) -> IpRule[]: `0:\tfrom all lookup local`.
import {ParseError} from '../model/errors.js'
import type {IpRule} from '../model/types.js'
import {splitLines} from './ip-common.js'

const RULE = /^\s*(\d+):\s*(.*?)\s*$/

export function parseIpRule(text: string, file = 'ip-rule.txt'): IpRule[] {
  const rules: IpRule[] = []
  splitLines(text).forEach((line, i) => {
    if (line.trim() === '') return
    const m = RULE.exec(line)
    if (!m || m[2] === '') throw new ParseError(file, i + 1, 'a rule "PRIORITY:\\tSELECTOR ACTION"', line)
    const rule: IpRule = {priority: Number(m[1]), text: m[2], pos: {file, line: i + 1, endLine: i + 1}}
    // `lookup T` (ip prints `lookup`; `table T` is accepted on input and printed by old versions)
    const words = m[2].split(/\s+/)
    const k = words.findIndex((w) => w === 'lookup' || w === 'table')
    if (k >= 0 && words[k + 1] !== undefined) rule.table = words[k + 1]
    rules.push(rule)
  })
  return rules
}
