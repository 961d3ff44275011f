// Redaction for support bundles (DESIGN §6): addresses, MACs and host names get stable pseudonyms
// across every file of one bundle, while a redacted bundle still diagnoses the same.
//
// The address map is a binary-trie automorphism (Crypto-PAn's shape): output bit i is input bit i
// XOR swap(first i input bits), with swap() a keyed PRF. Such a map is a bijection and preserves
// the exact common-prefix length of any two addresses, so A ∈ P ⇔ red(A) ∈ red(P) for every prefix.
//
// What it cannot do by itself is keep network addresses canonical: 192.168.110.128/26 needs
// red(192.168.110.128) to have its 6 host bits zero, and *every* address is the network address of
// some prefix (x with bit i = 0 is the network of x/i), so the only automorphism keeping all of them
// canonical is the identity. Hence swaps are switched off ("frozen") exactly where needed:
//  - IPv4: below /24 (the last octet is kept). Every /24../32 network and broadcast address stays one
//    without knowing the prefixes, and gateways keep their recognisable `.1`. Trade-off: the host
//    octet is not hidden. IPv6 keeps nothing statically: the low 64 bits often embed the MAC (EUI-64).
//  - anchors: for each prefix seen in the bundle (a CIDR anywhere in any file, or an ip -j addr
//    local/prefixlen pair), the nodes below it on the path of its network and of its broadcast
//    address. Then red(N)/len has zero host bits and red(broadcast) is the broadcast of red(N)/len.
//    Hence the redactor is built from the whole bundle at once (redactFiles scans first, then maps).
//  - special ranges the diagnosis recognises: kept as they are (127/8, 0.0.0.0, 255.255.255.255,
//    224/4, ::, ::1, ff00::/8) or kept as a prefix with the rest pseudonymised (fe80::/64 so a
//    link-local address stays link-local, 169.254/16, ::ffff:0:0/96). Freezing a range's ancestors
//    makes the automorphism map the range onto itself, so nothing else can land in it either.
// Freezing only removes swaps, so the map stays an automorphism (bijective, prefix-preserving).
import {createHmac, randomBytes} from 'node:crypto'

import ipaddr from 'ipaddr.js'

import type {SourceFile} from '../model/types.js'
import type {BundleInput} from './tarball.js'

type Fam = 4 | 6

interface Special {
  fam: Fam
  net: bigint
  len: number
  keep: 'all' | 'prefix'
}

const SPECIALS: Special[] = [
  sp('0.0.0.0/32', 'all'),
  sp('127.0.0.0/8', 'all'),
  sp('224.0.0.0/4', 'all'),
  sp('255.255.255.255/32', 'all'),
  sp('169.254.0.0/16', 'prefix'),
  sp('::/128', 'all'),
  sp('::1/128', 'all'),
  sp('ff00::/8', 'all'),
  sp('fe80::/64', 'prefix'),
  sp('::ffff:0:0/96', 'prefix'),
]

function sp(cidr: string, keep: Special['keep']): Special {
  const [a, len] = ipaddr.parseCIDR(cidr)
  const fam: Fam = a.kind() === 'ipv4' ? 4 : 6
  return {fam, net: toBig(a.toByteArray()), len, keep}
}

const width = (fam: Fam): number => (fam === 4 ? 32 : 128)

function toBig(bytes: number[]): bigint {
  let v = 0n
  for (const b of bytes) v = (v << 8n) | BigInt(b)
  return v
}

function fromBig(v: bigint, fam: Fam): string {
  const n = fam === 4 ? 4 : 16
  const bytes: number[] = []
  for (let i = n - 1; i >= 0; i--) bytes[i] = Number((v >> BigInt(8 * (n - 1 - i))) & 0xffn)
  // IPv4-mapped IPv6 in iproute2's spelling (::ffff:1.2.3.4), not ipaddr.js's (::ffff:102:304)
  if (fam === 6 && v >> 32n === 0xffffn) return `::ffff:${bytes.slice(12).join('.')}`
  return ipaddr.fromByteArray(bytes).toString()
}

function parseAddr(text: string): {fam: Fam; v: bigint} | undefined {
  const bare = text.replace(/%.*$/, '')
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) return {fam: 4, v: toBig(ipaddr.IPv4.parse(bare).toByteArray())}
  if (ipaddr.IPv6.isValid(bare)) return {fam: 6, v: toBig(ipaddr.IPv6.parse(bare).toByteArray())}
  return undefined
}

const mask = (len: number, w: number): bigint => (len === 0 ? 0n : ((1n << BigInt(len)) - 1n) << BigInt(w - len))

/** Canonical network of a prefix, for anchoring; undefined when not a prefix. */
function parseNet(addr: string, len: number): {fam: Fam; net: bigint; len: number} | undefined {
  const a = parseAddr(addr)
  if (!a || !Number.isInteger(len) || len < 0 || len > width(a.fam)) return undefined
  return {fam: a.fam, net: a.v & mask(len, width(a.fam)), len}
}

// ------------------------------------------------------------------------------------ text tokens

const OCT = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)'
const HEX = '[0-9A-Fa-f]'
const PART = {
  mac: `(?<![\\w:.-])(?<mac>${HEX}{2}(?::${HEX}{2}){5})(?![\\w:])`,
  // a loose IPv6 candidate (validated afterwards); at least two colons
  v6: `(?<![\\w:.])(?<v6>(?:${HEX}{0,4}:){2,8}(?:${HEX}{1,4}|(?:${OCT}\\.){3}${OCT})?)(?:/(?<v6len>\\d{1,3}))?(?![\\w:]|\\.\\d)`,
  v4: `(?<![\\w.])(?<v4>(?:${OCT}\\.){3}${OCT})(?:/(?<v4len>\\d{1,2}))?(?!\\w|\\.\\d)`,
  // Calico's protocol names embed the peer: Mesh_172_31_20_5, Node_fd00__5
  e4: `(?<=^|[^\\w]|[A-Za-z]_)(?<e4>(?:${OCT}_){3}${OCT})(?!\\w)`,
  e6: `(?<=[A-Za-z]_)(?<e6>${HEX}{0,4}(?:_${HEX}{0,4}){2,8})(?!\\w)`,
}
const TOKEN_RE = new RegExp([PART.mac, PART.v6, PART.v4, PART.e4, PART.e6].join('|'), 'g')
const TOKEN_NO_V6_RE = new RegExp([PART.mac, PART.v4, PART.e4].join('|'), 'g')
const JSON_LOCAL_RE = /"local"\s*:\s*"([^"]+)"\s*,\s*"prefixlen"\s*:\s*(\d+)/g

/** Every prefix a text names: CIDRs anywhere, and `ip -j addr`'s local/prefixlen pairs. */
export function collectAnchors(texts: Iterable<string>): string[] {
  const out = new Set<string>()
  const add = (addr: string, len: string | undefined) => {
    if (len === undefined) return
    const n = parseNet(addr, Number(len))
    if (n) out.add(`${fromBig(n.net, n.fam)}/${n.len}`)
  }
  for (const text of texts) {
    for (const m of text.matchAll(TOKEN_RE)) {
      const g = m.groups!
      if (g.v6 !== undefined) add(g.v6, g.v6len)
      else if (g.v4 !== undefined) add(g.v4, g.v4len)
    }
    for (const m of text.matchAll(JSON_LOCAL_RE)) add(m[1], m[2])
  }
  return [...out].sort()
}

// ------------------------------------------------------------------------------------ host names

// Words that are also keywords of iproute2/BIRD output: a host called `main` must not turn
// `table main` into `table host-…`. Such names are redacted only on BIRD's `Hostname is` line.
const KEYWORDS = new Set(
  'main local default all none kernel bird boot static device direct up down link host global site nowhere unicast blackhole unreachable prohibit broadcast multicast dev via proto table metric src lo eth0 eth1 tunl0 master master4 master6 bgp ospf bfd pipe ipv4 ipv6 inet inet6 true false null'.split(' '),
)

/** Host names a snapshot reveals: BIRD's `Hostname is NAME` (show status, BIRD 2/3). */
export function detectHostnames(files: Iterable<{text?: string}>): string[] {
  const out = new Set<string>()
  for (const f of files) for (const m of (f.text ?? '').matchAll(/^(?:\d{4}[- ])?Hostname is (\S+)/gm)) out.add(m[1])
  return [...out]
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

// ------------------------------------------------------------------------------------ redactor

export interface RedactorOptions {
  /** Prefixes that must stay canonical (network and broadcast kept as such); see collectAnchors. */
  anchors?: Iterable<string>
  /** Host names to replace (whole words). A name `a.b.c` also redacts its first label `a`. */
  hostnames?: Iterable<string>
}

export interface Redactor {
  /** Pseudonym of an address (IPv4, IPv6, `%zone` kept); text that is no address is returned as is. */
  address(addr: string): string
  /** Pseudonym of a prefix `ADDR/LEN` (same length; canonical when its network is canonical and anchored or IPv4 /24 or longer). */
  prefix(cidr: string): string
  mac(mac: string): string
  hostname(name: string): string
  /** Redact every address, MAC and host name in a text. Never changes the number of lines. */
  text(text: string): string
  /** original → pseudonym for everything redacted so far. Give it to the user; never bundle it. */
  mapping(): Record<string, string>
}

/**
 * A redactor with its own key (random when absent). One redactor per bundle: every file through the
 * same one. The anchors are fixed here because adding one later would change the map.
 */
export function createRedactor(key: Buffer = randomBytes(32), opts: RedactorOptions = {}): Redactor {
  const frozen = {4: new Set<string>(), 6: new Set<string>()}
  const nodeKey = (d: number, node: bigint) => `${d}:${node.toString(16)}`
  const freezePath = (fam: Fam, v: bigint, from: number, to: number) => {
    const w = width(fam)
    for (let d = from; d < to; d++) frozen[fam].add(nodeKey(d, d === 0 ? 0n : v >> BigInt(w - d)))
  }
  const identity = SPECIALS.filter((s) => s.keep === 'all')
  for (const s of SPECIALS) freezePath(s.fam, s.net, 0, s.len) // ancestors: the range maps onto itself
  for (const a of opts.anchors ?? []) {
    const slash = a.indexOf('/')
    let n = slash < 0 ? undefined : parseNet(a.slice(0, slash), Number(a.slice(slash + 1)))
    if (!n) continue
    // inside ::ffff:0:0/96 the IPv4 map applies (see address()), so anchor the IPv4 prefix
    if (n.fam === 6 && n.len >= 96 && n.net >> 32n === 0xffffn) n = {fam: 4, net: n.net & 0xffffffffn, len: n.len - 96}
    const w = width(n.fam)
    // below the prefix, the leftmost (network) and rightmost (broadcast) paths never swap
    freezePath(n.fam, n.net, n.len, w)
    freezePath(n.fam, n.net | ((1n << BigInt(w - n.len)) - 1n), n.len, w)
  }

  const prfCache = new Map<string, number>()
  const swap = (fam: Fam, d: number, node: bigint): number => {
    if (fam === 4 && d >= 24) return 0
    const k = nodeKey(d, node)
    if (frozen[fam].has(k)) return 0
    for (const s of identity) if (s.fam === fam && d >= s.len && node >> BigInt(d - s.len) === s.net >> BigInt(width(fam) - s.len)) return 0
    const ck = `${fam}/${k}`
    let bit = prfCache.get(ck)
    if (bit === undefined) {
      bit = createHmac('sha256', key).update(`addr${fam}/${ck}`).digest()[0] & 1
      prfCache.set(ck, bit)
    }
    return bit
  }
  const mapBits = (fam: Fam, v: bigint): bigint => {
    const w = width(fam)
    let out = 0n
    for (let d = 0; d < w; d++) {
      const bit = Number((v >> BigInt(w - 1 - d)) & 1n)
      out = (out << 1n) | BigInt(bit ^ swap(fam, d, d === 0 ? 0n : v >> BigInt(w - d)))
    }
    return out
  }

  const map = new Map<string, string>() // original (canonical) -> pseudonym, for mapping()
  const addrCache = new Map<string, string>()
  const address = (text: string): string => {
    const zone = /%.*$/.exec(text)?.[0] ?? ''
    const a = parseAddr(text)
    if (!a) return text
    const canon = fromBig(a.v, a.fam)
    let out = addrCache.get(canon)
    if (out === undefined) {
      const v4mapped = a.fam === 6 && a.v >> 32n === 0xffffn
      // ::ffff:a.b.c.d takes the IPv4 pseudonym so both spellings of one host agree
      out = v4mapped ? `::ffff:${address(fromBig(a.v & 0xffffffffn, 4))}` : fromBig(mapBits(a.fam, a.v), a.fam)
      addrCache.set(canon, out)
      if (out !== canon) map.set(canon, out)
    }
    return out + zone
  }
  const prefix = (cidr: string): string => {
    const slash = cidr.indexOf('/')
    return slash < 0 ? address(cidr) : `${address(cidr.slice(0, slash))}${cidr.slice(slash)}`
  }

  const macs = new Map<string, string>()
  const macTaken = new Set<string>()
  const mac = (text: string): string => {
    const m = text.toLowerCase()
    const first = parseInt(m.slice(0, 2), 16)
    // multicast/broadcast MACs (I/G bit) and all-zero say nothing about the host
    if (!/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(m) || first & 1 || m === '00:00:00:00:00:00') return text
    let out = macs.get(m)
    for (let i = 0; out === undefined; i++) {
      const h = createHmac('sha256', key).update(`mac/${m}/${i}`).digest()
      h[0] = (h[0] & 0xfc) | (first & 0x02) // keep the locally-administered bit, stay unicast
      const cand = [...h.subarray(0, 6)].map((b) => b.toString(16).padStart(2, '0')).join(':')
      if (!macTaken.has(cand) && cand !== '00:00:00:00:00:00') {
        out = cand
        macTaken.add(cand)
        macs.set(m, cand)
        map.set(m, cand)
      }
    }
    return out
  }

  const hostMap = new Map<string, string>() // lower-case name -> pseudonym
  const hostname = (name: string): string => {
    const k = name.toLowerCase()
    let out = hostMap.get(k)
    if (out === undefined) {
      out = `host-${createHmac('sha256', key).update(`host/${k}`).digest('hex').slice(0, 8)}`
      hostMap.set(k, out)
      map.set(name, out)
    }
    return out
  }
  const names = new Set<string>()
  for (const n of opts.hostnames ?? []) {
    if (!n) continue
    names.add(n)
    if (n.includes('.') && !parseAddr(n)) names.add(n.split('.')[0])
  }
  const plain = [...names].filter((n) => !KEYWORDS.has(n.toLowerCase())).sort((a, b) => b.length - a.length)
  // whole words only: `vm` must not touch `vmlinuz`, `vm-2` or `a.vm`; `vm.example.com` keeps its domain
  const hostRe = plain.length ? new RegExp(`(?<![\\w.-])(?:${plain.map(escapeRe).join('|')})(?![\\w-])`, 'gi') : undefined
  const keywordNames = [...names].filter((n) => KEYWORDS.has(n.toLowerCase()))
  const statusRe = keywordNames.length ? new RegExp(`(Hostname is )(${keywordNames.map(escapeRe).join('|')})(?!\\S)`, 'g') : undefined

  const replaceToken = (m: string, g: Record<string, string | undefined>, noV6: boolean): string => {
    if (g.mac !== undefined) return mac(g.mac)
    if (g.v6 !== undefined) {
      if (!ipaddr.IPv6.isValid(g.v6)) return noV6 ? m : m.replace(TOKEN_NO_V6_RE, (...a) => replaceToken(a[0], a.at(-1), true))
      return address(g.v6) + (g.v6len === undefined ? '' : `/${g.v6len}`)
    }
    if (g.v4 !== undefined) return address(g.v4) + (g.v4len === undefined ? '' : `/${g.v4len}`)
    if (g.e4 !== undefined) return address(g.e4.replaceAll('_', '.')).replaceAll('.', '_')
    if (g.e6 !== undefined) {
      const a = g.e6.replaceAll('_', ':')
      return ipaddr.IPv6.isValid(a) ? address(a).replaceAll(':', '_') : m
    }
    return m
  }
  const text = (t: string): string => {
    let out = t.replace(TOKEN_RE, (...a) => replaceToken(a[0], a.at(-1), false))
    if (hostRe) out = out.replace(hostRe, (m) => hostname(m))
    if (statusRe) out = out.replace(statusRe, (_m, pre: string, n: string) => pre + hostname(n))
    return out
  }

  return {address, prefix, mac, hostname, text, mapping: () => Object.fromEntries(map)}
}

// ------------------------------------------------------------------------------------ passwords

/**
 * BIRD config with every `password "…"` value removed (BGP/OSPF/BFD authentication). Applied to
 * every bundle, redacted or not. Line count is kept so evidence line numbers still match.
 */
export function removeBirdPasswords(text: string): string {
  return text.replace(/\bpassword(\s+)"((?:[^"\\]|\\.)*)"/g, (_m, sp: string, v: string) => `password${sp}"<removed>"${'\n'.repeat((v.match(/\n/g) ?? []).length)}`)
}

/** Files as they go into any bundle: BIRD configs without passwords. */
export function scrubSecrets(files: SourceFile[]): SourceFile[] {
  return files.map((f) => (f.text !== undefined && /(^|\/)bird[^/]*\.conf$/.test(f.name) ? {...f, text: removeBirdPasswords(f.text)} : f))
}

// ------------------------------------------------------------------------------------ files

export interface RedactOptions {
  /** More host names to replace, besides those detected (BIRD's `Hostname is`). Typically os.hostname(). */
  hostnames?: string[]
  /** Key of the pseudonym map; random when absent (pseudonyms then differ from bundle to bundle). */
  key?: Buffer
}

/**
 * Redact every file of a bundle with one redactor, so pseudonyms agree across files. Pass everything
 * that goes into the bundle (snapshot files, and model.json / report.md / report.json as
 * `{name, text}` entries) in one call. Passwords are removed too. The returned mapping is for the
 * user only: it must never be written into the bundle.
 */
export function redactFiles(files: SourceFile[], opts: RedactOptions = {}): {files: SourceFile[]; mapping: Record<string, string>; redactor: Redactor} {
  const clean = scrubSecrets(files)
  const texts = clean.flatMap((f) => [f.text ?? '', f.error ?? ''])
  const redactor = createRedactor(opts.key, {anchors: collectAnchors(texts), hostnames: [...detectHostnames(clean), ...(opts.hostnames ?? [])]})
  const out = clean.map((f) => {
    const r: SourceFile = {...f}
    if (f.text !== undefined) r.text = redactor.text(f.text)
    if (f.error !== undefined) r.error = redactor.text(f.error)
    if (f.command !== undefined) r.command = redactor.text(f.command)
    return r
  })
  return {files: out, mapping: redactor.mapping(), redactor}
}

/**
 * A whole bundle redacted with one redactor: the snapshot files, model.json, both reports, the
 * manifest's host and command line. Marks the manifest `redacted: true`. (Re-running the diagnosis
 * on the redacted files gives the same report modulo pseudonyms; redacting the report text here
 * saves that and keeps the bundle self-consistent.)
 */
export function redactBundleInput(input: BundleInput, opts: RedactOptions = {}): {input: BundleInput; mapping: Record<string, string>} {
  const extra: SourceFile[] = [
    {name: '\0model.json', text: JSON.stringify(input.model ?? null)},
    {name: '\0report.md', text: input.reportMd},
    {name: '\0report.json', text: JSON.stringify(input.reportJson ?? null)},
    {name: '\0command', text: JSON.stringify(input.manifest.command)},
  ]
  const host = input.manifest.host
  const {files, mapping, redactor} = redactFiles([...input.files, ...extra], {...opts, hostnames: [...(opts.hostnames ?? []), ...(host ? [host] : [])]})
  const n = input.files.length
  const text = (i: number) => files[n + i].text!
  return {
    input: {
      files: files.slice(0, n),
      model: JSON.parse(text(0)),
      reportMd: text(1),
      reportJson: JSON.parse(text(2)),
      manifest: {...input.manifest, host: host ? redactor.hostname(host) : host, command: JSON.parse(text(3)), redacted: true},
    },
    mapping: {...mapping, ...redactor.mapping()},
  }
}
