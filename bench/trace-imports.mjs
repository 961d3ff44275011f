// Which modules a routedoctor command loads, and when: a module.register() resolve hook that logs
// every resolved file: URL (first time) with ms since start, to stderr as `IMPORT ms url`.
// Usage: node --import ./bench/trace-imports.mjs bin/run.js explain … 2> imports.txt
import {register} from 'node:module'

register('data:text/javascript,' + encodeURIComponent(`
const seen = new Set()
const t0 = Date.now()
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context)
  if (!seen.has(r.url)) { seen.add(r.url); process.stderr.write('IMPORT ' + (Date.now() - t0) + ' ' + r.url + '\\n') }
  return r
}`))
