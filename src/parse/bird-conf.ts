// bird.conf -> BirdConfig: the tunnel pools of the kernel export filter, `merge paths`, kernel `metric`, `kernel
// table`. Not a BIRD grammar: a tolerant scan for the few shapes Calico's templates (and the BIRD 2/3 ifname fix) use.
// It never throws: a config it does not understand simply yields no pools.
import {canonicalPrefix} from '../model/prefix.js'
import type {BgpExport, BirdConfig, Pool} from '../model/types.js'
import {lineAt} from './ip-common.js'

export interface BirdConfOptions {
  /** The tunnel device an `ifname = "..."` filter must name (default tunl0). */
  tunnelDev?: string
}

/** Blank out `# ...` and C comments, keeping every offset and newline so line numbers stay true. */
export function stripBirdComments(text: string): string {
  let out = ''
  let i = 0
  while (i < text.length) {
    const c = text[i]
    if (c === '"') {
      // a string: copy through its closing quote (backslash escapes)
      let j = i + 1
      while (j < text.length && text[j] !== '"' && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1
      out += text.slice(i, Math.min(j + 1, text.length))
      i = j + 1
    } else if (c === '#') {
      let j = i
      while (j < text.length && text[j] !== '\n') j++
      out += ' '.repeat(j - i)
      i = j
    } else if (c === '/' && text[i + 1] === '*') {
      const close = text.indexOf('*/', i + 2)
      const j = close < 0 ? text.length : close + 2
      out += text.slice(i, j).replace(/[^\n]/g, ' ')
      i = j
    } else {
      out += c
      i++
    }
  }
  return out.slice(0, text.length)
}

/** Offset just past the `}` that closes the `{` at `open` (or the end of the text). */
function closeBrace(s: string, open: number): number {
  let depth = 0
  for (let i = open; i < s.length; i++) {
    if (s[i] === '"') {
      i++
      while (i < s.length && s[i] !== '"') i += s[i] === '\\' ? 2 : 1
    } else if (s[i] === '{') depth++
    else if (s[i] === '}' && --depth === 0) return i + 1
  }
  return s.length
}

/** The statement body after `then` / `else` at `at`: a `{ ... }` block or one statement up to `;`. */
function statementAt(s: string, at: number): [number, number] {
  let i = at
  while (i < s.length && /\s/.test(s[i])) i++
  if (s[i] === '{') return [i, closeBrace(s, i)]
  const semi = s.indexOf(';', i)
  return [i, semi < 0 ? s.length : semi + 1]
}

const ID = '[A-Za-z_][A-Za-z0-9_]*'

/** Does `body` set the tunnel (directly or through a called function)? */
function setsTunnel(
  body: string,
  functions: Map<string, string>,
  tunnelDev: string,
  seen = new Set<string>(),
): boolean {
  if (krtTunnelSet(body) || ifnameSet(body, tunnelDev)) return true
  for (const m of body.matchAll(new RegExp(`\\b(${ID})\\s*\\(`, 'g'))) {
    const name = m[1]
    const fn = functions.get(name)
    if (fn !== undefined && !seen.has(name)) {
      seen.add(name)
      if (setsTunnel(fn, functions, tunnelDev, seen)) return true
    }
  }
  return false
}

// Assignments are statements (after `{`, `;`, `then`, `else` or the start); in a condition `=` compares.
const STMT = String.raw`(?:^|[;{}]|\bthen\b|\belse\b)\s*`
function krtTunnelSet(body: string): boolean {
  // `krt_tunnel = ""` switches the tunnel off (CrossSubnet, same subnet); any other name switches it on
  return new RegExp(`${STMT}krt_tunnel\\s*=\\s*"[^"]+"\\s*;`).test(body)
}
function ifnameSet(body: string, dev: string): boolean {
  return new RegExp(`${STMT}ifname\\s*=\\s*"${dev.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"\\s*;`).test(body)
}

/** Base prefixes of a `net ~` operand: `10.0.0.0/8`, `[ 10.0.0.0/8{26,32}, 192.168.0.0/16+ ]` or a `define`d name. */
function operandPrefixes(operand: string, defines: Map<string, string>, depth = 0): string[] {
  const t = operand.trim()
  if (new RegExp(`^${ID}$`).test(t)) {
    const v = defines.get(t)
    return v !== undefined && depth < 5 ? operandPrefixes(v, defines, depth + 1) : []
  }
  const out: string[] = []
  for (const m of t.matchAll(/([0-9A-Fa-f:.]+\/\d{1,3})/g)) {
    const p = canonicalPrefix(m[1])
    if (p !== undefined && /[.:]/.test(m[1])) out.push(p)
  }
  return out
}

const CALICO_SELF = new RegExp(
  String.raw`^[ \t]*# For peer /(?:bgp/v1/)?host/([^/\s]+)/ip_addr_v[46][ \t]*\r?\n` +
    String.raw`(?:[ \t]*\r?\n)*[ \t]*# Skipping ourselves\b`,
  'm',
)

/**
 * The Calico node a config rendered by calico-node's confd is for: its mesh section names every node's address key,
 * `# For peer /host/NAME/ip_addr_v4` (`/bgp/v1/host/…` in some versions), and the node's own is followed by
 * `# Skipping ourselves (ADDRESS)`. Undefined for any other config.
 */
export function calicoNodeName(text: string): string | undefined {
  return CALICO_SELF.exec(text)?.[1]
}

export function parseBirdConf(text: string, file = 'bird.conf', opts: BirdConfOptions = {}): BirdConfig {
  const tunnelDev = opts.tunnelDev ?? 'tunl0'
  const s = stripBirdComments(text)
  const lineCount = Math.max(1, text.split('\n').length - (text.endsWith('\n') ? 1 : 0))
  const config: BirdConfig = {pools: [], kernelTables: [], pos: {file, line: 1, endLine: lineCount}}

  // `function NAME(...) { ... }` bodies and `define NAME = ...;` values, for indirection
  const functions = new Map<string, string>()
  for (const m of s.matchAll(new RegExp(`\\bfunction\\s+(${ID})\\s*\\([^)]*\\)[^{;]*\\{`, 'g'))) {
    const open = m.index + m[0].length - 1
    functions.set(m[1], s.slice(open, closeBrace(s, open)))
  }
  const defines = new Map<string, string>()
  for (const m of s.matchAll(new RegExp(`\\bdefine\\s+(${ID})\\s*=\\s*([^;]*);`, 'g'))) defines.set(m[1], m[2])

  // `if COND then BODY [else BODY]` whose COND has `net ~ X` and whose body points routes at the tunnel
  const seen = new Set<string>()
  const thenRe = /\bthen\b/g
  for (const m of s.matchAll(/\bif\b/g)) {
    const start = m.index + 2
    thenRe.lastIndex = start
    const thenMatch = thenRe.exec(s)
    if (!thenMatch) break
    const cond = s.slice(start, thenMatch.index)
    // not a condition if a statement ends before `then` (prefix patterns like {26,32} sit inside [ ])
    if (/[{};]/.test(cond.replace(/\[[^\]]*\]/g, ''))) continue
    const bodyStart = thenMatch.index + 4
    const [, bodyEnd] = statementAt(s, bodyStart)
    let body = s.slice(bodyStart, bodyEnd)
    const elseRe = /\s*else\b/y
    elseRe.lastIndex = bodyEnd
    const elseMatch = elseRe.exec(s)
    if (elseMatch) body += ' ' + s.slice(bodyEnd, statementAt(s, bodyEnd + elseMatch[0].length)[1])
    if (!setsTunnel(body, functions, tunnelDev)) continue
    for (const n of cond.matchAll(/\bnet\s*~\s*(\[[^\]]*\]|[^\s&|)]+)/g)) {
      for (const cidr of operandPrefixes(n[1], defines)) {
        if (seen.has(cidr)) continue
        seen.add(cidr)
        const line = lineAt(s, start + n.index)
        const pool: Pool = {cidr, mode: 'ipip', origin: 'bird.conf', pos: {file, line, endLine: lineAt(s, bodyEnd)}}
        // Calico's CrossSubnet template switches the tunnel off (`krt_tunnel = ""`) for next hops on the node's subnet
        if (/\bkrt_tunnel\s*=\s*""/.test(body)) pool.crossSubnet = true
        config.pools.push(pool)
      }
    }
  }

  // how the config points routes at the tunnel
  if (ifnameSet(s, tunnelDev)) {
    const onlink = new RegExp(`${STMT}onlink\\s*=\\s*(true|yes|on)\\s*;`).test(s)
    const gw = new RegExp(`${STMT}gw\\s*=\\s*bgp_next_hop\\s*;`).test(s)
    config.tunnelFilter = onlink && gw ? 'ifname-onlink' : 'ifname'
  } else if (krtTunnelSet(s)) config.tunnelFilter = 'krt_tunnel'

  // kernel protocol options (protocol or template; BIRD 2 channels are nested blocks inside)
  for (const m of s.matchAll(/\b(?:protocol|template)\s+kernel\b[^{;]*\{/g)) {
    const open = m.index + m[0].length - 1
    const block = s.slice(open, closeBrace(s, open))
    const merge = /\bmerge\s+paths\b\s*(on|yes|off|no|true|false|[01])?/.exec(block)
    if (merge) {
      // BIRD's `bool` treats silence as agreement: `merge paths;` is on
      const on = merge[1] === undefined || /^(on|yes|true|1)$/.test(merge[1])
      config.mergePaths = (config.mergePaths ?? false) || on
    }
    const metric = new RegExp(`${STMT}metric\\s+(\\d+)\\s*;`).exec(block)
    if (metric && config.kernelMetric === undefined) config.kernelMetric = Number(metric[1])
    for (const t of block.matchAll(/\bkernel\s+table\s+(\d+)/g))
      if (!config.kernelTables.includes(t[1])) config.kernelTables.push(t[1])
  }
  config.bgpExports = bgpExports(s, file, functions)
  return config
}

// A condition on where a route came from: a filter that tests one can tell a kernel-learnt route from a BGP or static
// one
const SOURCE_TEST = /\b(source|proto|krt_source|Kernel\.source|from)\b\s*(=|!=|~)/

/** Can `body` accept a route whatever its source: it accepts somewhere, and never tests where a route came from? */
function acceptsAnySource(body: string, functions: Map<string, string>): boolean {
  let text = body
  for (const m of body.matchAll(new RegExp(`\\b(${ID})\\s*\\(`, 'g'))) text += functions.get(m[1]) ?? ''
  return /\baccept\b/.test(text) && !SOURCE_TEST.test(text)
}

/** The export of every BGP protocol and template (BIRD 1.6 at the top of the block, 2/3 inside the channel). */
function bgpExports(s: string, file: string, functions: Map<string, string>): BgpExport[] {
  const filters = new Map<string, {body: string; start: number; end: number}>()
  for (const m of s.matchAll(new RegExp(`\\bfilter\\s+(${ID})\\s*\\{`, 'g'))) {
    const open = m.index + m[0].length - 1
    const end = closeBrace(s, open)
    filters.set(m[1], {body: s.slice(open, end), start: m.index, end})
  }
  const out: BgpExport[] = []
  for (const m of s.matchAll(new RegExp(`\\b(?:protocol|template)\\s+bgp\\s+(${ID})?[^{;]*\\{`, 'g'))) {
    const open = m.index + m[0].length - 1
    const block = s.slice(open, closeBrace(s, open))
    for (const e of block.matchAll(/\bexport\s+(filter\s+([A-Za-z_][A-Za-z0-9_]*)|all|none|where\s+([^;]*))\s*;/g)) {
      const at = open + e.index
      const line = lineAt(s, at)
      const name = m[1] ?? 'bgp'
      if (e[2] !== undefined) {
        const f = filters.get(e[2])
        out.push({
          protocol: name,
          filter: e[2],
          acceptsKernelRoutes: f !== undefined && acceptsAnySource(f.body, functions),
          pos:
            f !== undefined
              ? {file, line: lineAt(s, f.start), endLine: lineAt(s, Math.max(f.start, f.end - 1))}
              : {file, line, endLine: line},
        })
      } else {
        const accepts = e[1] === 'all' || (e[3] !== undefined && !SOURCE_TEST.test(e[3]))
        out.push({
          protocol: name,
          filter: e[1].replace(/\s+/g, ' '),
          acceptsKernelRoutes: accepts,
          pos: {file, line, endLine: line},
        })
      }
    }
  }
  return out
}
