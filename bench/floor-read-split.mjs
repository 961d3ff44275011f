// The floors `check --from DIR` is measured against: read every snapshot file (readFileSync, utf8),
// split it into lines, keep it all alive until the end (the tool holds its input too), print a one-line
// summary: the floor. With --json-parse, also JSON.parse the JSON files (a second, higher floor).
// Usage: node bench/floor-read-split.mjs DIR [--json-parse]
import {readdirSync, readFileSync} from 'node:fs'
import path from 'node:path'

const dir = process.argv[2]
const jsonParse = process.argv.includes('--json-parse')
if (!dir) {
  console.error('usage: node bench/floor-read-split.mjs DIR [--json-parse]')
  process.exit(2)
}
const kept = []
let lines = 0
let bytes = 0
for (const name of readdirSync(dir).sort()) {
  if (!/\.(txt|json|yaml|conf)$/.test(name)) continue
  const text = readFileSync(path.join(dir, name), 'utf8')
  bytes += text.length
  const split = text.split('\n')
  lines += split.length
  kept.push(text, split)
  if (jsonParse && name.endsWith('.json')) kept.push(JSON.parse(text))
}
process.stdout.write(`${JSON.stringify({files: kept.length, lines, chars: bytes})}\n`)
