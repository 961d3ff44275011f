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
//    link-local address stays link-local, 169.254/16, ::ffff:0:0/96), and the private ranges
//    (RFC 1918's 10/8, 172.16/12, 192.168/16, RFC 6598's 100.64/10, RFC 4193's fc00::/7): a private
//    address stays private, in its own range, and no public address becomes private. Freezing a
//    range's ancestors makes the automorphism map the range onto itself, so nothing else can land in it.
// Freezing only removes swaps, so the map stays an automorphism (bijective, prefix-preserving).
// The price of canonical prefixes: an address sharing almost all bits with a kept network address is
// pinned near it (fe80::1 next to the kept fe80::/64 stays fe80::1), and inside an anchored prefix
// an address keeps the host bits it shares with the network or broadcast address (20.0.0.5 in
// 20.0.0.0/8 becomes N.0.0.5; the prefix bits N still change, unless it is a private range).
// Pseudonyms are stable for one key and one set of anchors; the PRF is Crypto-PAn's (AES over the
// prefix padded with secret bits).
import {createCipheriv, createHmac, randomBytes} from 'node:crypto'

import ipaddr from 'ipaddr.js'

import type {SourceFile} from '../model/types.js'
import type {BundleInput} from './tarball.js'

type Fam = 4 | 6

// Addresses are handled as bit strings ('0'/'1', 32 or 128 long): a trie node is then simply a
// prefix of that string, cheap to slice and to look up (BigInt keys in a Set are far slower).
interface Special {
  fam: Fam
  bits: string // the prefix's first len bits
  len: number
  // all: the address as it is; prefix, range: the range's bits, the rest pseudonymised. A range (a private one) has few
  // bits left to hide (192.168/16: the third octet), so one of its addresses may map onto itself by chance: that is no
  // leak (without the key nobody can tell), and the mapping lists it all the same.
  keep: 'all' | 'prefix' | 'range'
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
  // private ranges: a bundle of a private network must not name public addresses (somebody's)
  sp('10.0.0.0/8', 'range'),
  sp('172.16.0.0/12', 'range'),
  sp('192.168.0.0/16', 'range'),
  sp('100.64.0.0/10', 'range'),
  sp('fc00::/7', 'range'),
]

function sp(cidr: string, keep: Special['keep']): Special {
  const [a, len] = ipaddr.parseCIDR(cidr)
  return {fam: a.kind() === 'ipv4' ? 4 : 6, bits: toBits(a.toByteArray()).slice(0, len), len, keep}
}

const width = (fam: Fam): number => (fam === 4 ? 32 : 128)
const V4MAPPED = '0'.repeat(80) + '1'.repeat(16)

function toBits(bytes: number[]): string {
  let out = ''
  for (const b of bytes) out += b.toString(2).padStart(8, '0')
  return out
}

function toBytes(bits: string): number[] {
  const out: number[] = []
  for (let i = 0; i < bits.length; i += 8) out.push(parseInt(bits.slice(i, i + 8), 2))
  return out
}

function fromBits(bits: string, fam: Fam): string {
  const bytes = toBytes(bits)
  // IPv4-mapped IPv6 in iproute2's spelling (::ffff:1.2.3.4), not ipaddr.js's (::ffff:102:304)
  if (fam === 6 && bits.startsWith(V4MAPPED)) return `::ffff:${bytes.slice(12).join('.')}`
  return ipaddr.fromByteArray(bytes).toString()
}

function parseAddr(text: string): {fam: Fam; bits: string} | undefined {
  const bare = text.replace(/%.*$/, '')
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) return {fam: 4, bits: toBits(ipaddr.IPv4.parse(bare).toByteArray())}
  if (ipaddr.IPv6.isValid(bare)) return {fam: 6, bits: toBits(ipaddr.IPv6.parse(bare).toByteArray())}
  return undefined
}

/** The network bits (first len) of a prefix, for anchoring; undefined when not a prefix. */
function parseNet(addr: string, len: number): {fam: Fam; bits: string; len: number} | undefined {
  const a = parseAddr(addr)
  if (!a || !Number.isInteger(len) || len < 0 || len > width(a.fam)) return undefined
  return {fam: a.fam, bits: a.bits.slice(0, len), len}
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
    if (n) out.add(`${fromBits(n.bits.padEnd(width(n.fam), '0'), n.fam)}/${n.len}`)
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
  'main local default all none kernel bird boot static device direct up down link host global site nowhere unicast blackhole unreachable prohibit broadcast multicast dev via proto table metric src lo eth0 eth1 tunl0 master master4 master6 bgp ospf bfd pipe ipv4 ipv6 inet inet6 true false null'.split(
    ' ',
  ),
)

/** Host names a snapshot reveals: BIRD's `Hostname is NAME` (show status, BIRD 2/3). */
export function detectHostnames(files: Iterable<{text?: string}>): string[] {
  const out = new Set<string>()
  for (const f of files)
    for (const m of (f.text ?? '').matchAll(/^(?:\d{4}[- ]|[ \t]+)?Hostname is (\S+)/gm)) out.add(m[1])
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
  /**
   * Pseudonym of a prefix `ADDR/LEN` (same length; canonical when its network is canonical and anchored or IPv4 /24 or
   * longer).
   */
  prefix(cidr: string): string
  mac(mac: string): string
  hostname(name: string): string
  /** Redact every address, MAC and host name in a text. Never changes the number of lines. */
  text(text: string): string
  /** original → pseudonym for everything redacted so far. Give it to the user; never bundle it. */
  mapping(): Record<string, string>
  /**
   * Addresses that happened to map onto themselves (a permutation has fixed points) where another key would not have:
   * they would leak. Not those kept by design (special ranges, a private range's anchored network or broadcast).
   */
  unchanged(): string[]
}

/**
 * A redactor with its own key (random when absent). One redactor per bundle: every file through the
 * same one. The anchors are fixed here because adding one later would change the map.
 */
export function createRedactor(key: Buffer = randomBytes(32), opts: RedactorOptions = {}): Redactor {
  // anchors[fam].get(len): the anchored prefixes of that length (their first len bits)
  const anchors = {4: new Map<number, Set<string>>(), 6: new Map<number, Set<string>>()}
  for (const a of opts.anchors ?? []) {
    const slash = a.indexOf('/')
    let n = slash < 0 ? undefined : parseNet(a.slice(0, slash), Number(a.slice(slash + 1)))
    if (!n) continue
    // inside ::ffff:0:0/96 the IPv4 map applies (see address()), so anchor the IPv4 prefix
    if (n.fam === 6 && n.len >= 96 && n.bits.startsWith(V4MAPPED)) n = {fam: 4, bits: n.bits.slice(96), len: n.len - 96}
    if (n.fam === 4 && n.len >= 24) continue // IPv4 /24 and longer are canonical anyway (last octet kept)
    const m = anchors[n.fam]
    if (!m.has(n.len)) m.set(n.len, new Set())
    m.get(n.len)!.add(n.bits)
  }

  // The PRF, as in Crypto-PAn: swap(first d bits) = first bit of AES_k(first d bits ‖ pad[d..]),
  // with a secret pad per family. One ECB call per address computes all of its depths at once.
  const sub = (label: string) => createHmac('sha256', key).update(label).digest().subarray(0, 16)
  const cipher = createCipheriv('aes-128-ecb', sub('routedoctor-redact-aes'), null).setAutoPadding(false)
  const pads = {4: sub('pad4'), 6: sub('pad6')}
  const prfBits = (fam: Fam, bits: string): Buffer => {
    const w = width(fam)
    const addr = Buffer.alloc(16)
    Buffer.from(toBytes(bits)).copy(addr)
    const pad = pads[fam]
    const blocks = Buffer.alloc(16 * w)
    for (let d = 0; d < w; d++) {
      const off = 16 * d
      pad.copy(blocks, off)
      addr.copy(blocks, off, 0, d >> 3)
      if (d & 7) {
        const hi = (0xff << (8 - (d & 7))) & 0xff
        blocks[off + (d >> 3)] = (addr[d >> 3] & hi) | (pad[d >> 3] & ~hi & 0xff)
      }
    }
    return cipher.update(blocks)
  }

  // Output bit d = input bit d XOR swap(node), node = first d input bits; swap is 0 when frozen:
  //  - IPv4 d >= 24;
  //  - node on the path to a special range (d < len, node a prefix of it), or inside a kept one;
  //  - node on the network or broadcast path below an anchor (node = P ‖ 0…0 or P ‖ 1…1).
  // free: some depth of the address's path was not frozen, so another key could have given it another pseudonym
  const mapBits = (fam: Fam, bits: string): {out: string; free: boolean} => {
    const w = width(fam)
    const prf = prfBits(fam, bits)
    const specials = SPECIALS.filter((s) => s.fam === fam).map((s) => {
      let c = 0
      while (c < s.len && bits[c] === s.bits[c]) c++
      return {s, c} // c: common prefix length with the special range (capped at its length)
    })
    const anchorLens = anchors[fam]
    let out = ''
    let free = false
    let run = 0 // how many bits at the end of the node (bits[0..d)) are equal
    for (let d = 0; d < w; d++) {
      if (d > 0) run = d > 1 && bits[d - 1] === bits[d - 2] ? run + 1 : 1
      let swap = prf[16 * d] >> 7
      if (swap || !free) {
        let frozen = fam === 4 && d >= 24
        for (const {s, c} of specials) if (!frozen && ((d < s.len && c >= d) || (s.keep === 'all' && c === s.len))) frozen = true
        for (let len = Math.max(0, d - run); anchorLens.size && len <= d && !frozen; len++) {
          if (anchorLens.get(len)?.has(bits.slice(0, len))) frozen = true
        }
        if (frozen) swap = 0
        else free = true
      }
      out += bits[d] === (swap ? '0' : '1') ? '1' : '0'
    }
    return {out, free}
  }

  const map = new Map<string, string>() // original (canonical) -> pseudonym, for mapping()
  const same = new Set<string>()
  const addrCache = new Map<string, string>()
  const address = (text: string): string => {
    const zone = /%.*$/.exec(text)?.[0] ?? ''
    const a = parseAddr(text)
    if (!a) return text
    const canon = fromBits(a.bits, a.fam)
    let out = addrCache.get(canon)
    if (out === undefined) {
      // ::ffff:a.b.c.d takes the IPv4 pseudonym so both spellings of one host agree
      let free = false
      if (a.fam === 6 && a.bits.startsWith(V4MAPPED)) out = `::ffff:${address(fromBits(a.bits.slice(96), 4))}`
      else {
        const mapped = mapBits(a.fam, a.bits)
        out = fromBits(mapped.out, a.fam)
        free = mapped.free
      }
      addrCache.set(canon, out)
      const special = SPECIALS.find((sp) => sp.fam === a.fam && a.bits.startsWith(sp.bits))
      if (out !== canon || special?.keep === 'range') map.set(canon, out)
      // onto itself by chance (another key would map it elsewhere), outside the ranges kept by design: it would leak
      if (out === canon && free && (!special || special.keep === 'range')) same.add(canon)
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
  const hostRe = plain.length
    ? new RegExp(`(?<![\\w.-])(?:${plain.map(escapeRe).join('|')})(?![\\w-])`, 'gi')
    : undefined
  const keywordNames = [...names].filter((n) => KEYWORDS.has(n.toLowerCase()))
  const statusRe = keywordNames.length
    ? new RegExp(`(Hostname is )(${keywordNames.map(escapeRe).join('|')})(?!\\S)`, 'g')
    : undefined

  const replaceToken = (m: string, g: Record<string, string | undefined>, noV6: boolean): string => {
    if (g.mac !== undefined) return mac(g.mac)
    if (g.v6 !== undefined) {
      if (!ipaddr.IPv6.isValid(g.v6))
        return noV6 ? m : m.replace(TOKEN_NO_V6_RE, (...a) => replaceToken(a[0], a.at(-1), true))
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

  return {address, prefix, mac, hostname, text, mapping: () => Object.fromEntries(map), unchanged: () => [...same]}
}

// ------------------------------------------------------------------------------------ passwords

/**
 * BIRD config with every `password "…"` value removed (BGP/OSPF/BFD authentication). Applied to
 * every bundle, redacted or not. Line count is kept so evidence line numbers still match.
 */
export function removeBirdPasswords(text: string): string {
  return text.replace(
    /\bpassword(\s+)"((?:[^"\\]|\\.)*)"/g,
    (_m, sp: string, v: string) => `password${sp}"<removed>"${'\n'.repeat((v.match(/\n/g) ?? []).length)}`,
  )
}

/** Files as they go into any bundle: BIRD configs without passwords. */
export function scrubSecrets(files: SourceFile[]): SourceFile[] {
  return files.map((f) =>
    f.text !== undefined && /(^|\/)bird[^/]*\.conf$/.test(f.name) ? {...f, text: removeBirdPasswords(f.text)} : f,
  )
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
export function redactFiles(
  files: SourceFile[],
  opts: RedactOptions = {},
): {files: SourceFile[]; mapping: Record<string, string>; redactor: Redactor} {
  const clean = scrubSecrets(files)
  const attempts = redactAttempts(clean.reduce((n, f) => n + (f.text?.length ?? 0), 0))
  // with a random key, draw again when an address happens to map onto itself (it would leak)
  for (let attempt = 1; ; attempt++) {
    const redactor = bundleRedactor(clean, [], opts)
    const out = clean.map((f) => redactSource(redactor, f))
    const done = redactor.unchanged().length === 0 || opts.key !== undefined || attempt >= attempts
    if (done) return {files: out, mapping: redactor.mapping(), redactor}
  }
}

// A private range keeps few bits to change (192.168/16: 8), so a large bundle has some address that maps onto itself
// whatever the key: drawing again would only redact it all again, so a large one is redacted once.
const SMALL_BUNDLE_CHARS = 16 * 2 ** 20

function redactAttempts(chars: number): number {
  return chars <= SMALL_BUNDLE_CHARS ? 16 : 1
}

function bundleRedactor(files: SourceFile[], texts: string[], opts: RedactOptions): Redactor {
  const all = [...files.flatMap((f) => [f.text ?? '', f.error ?? '', f.command ?? '']), ...texts]
  const hostnames = [...detectHostnames(all.map((text) => ({text}))), ...(opts.hostnames ?? [])]
  return createRedactor(opts.key, {anchors: collectAnchors(all), hostnames})
}

function redactSource(redactor: Redactor, f: SourceFile): SourceFile {
  const r: SourceFile = {...f}
  if (f.text !== undefined) r.text = redactor.text(f.text)
  if (f.error !== undefined) r.error = redactor.text(f.error)
  if (f.command !== undefined) r.command = redactor.text(f.command)
  return r
}

/** Every string in a JSON-like value (keys too). */
function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v)
  else if (Array.isArray(v)) for (const x of v) strings(x, out)
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) {
    out.push(k)
    strings(x, out)
  }
  return out
}

/** A JSON-like value with every string (and key) redacted: structure, numbers and booleans untouched. */
function redactValue(r: Redactor, v: unknown): unknown {
  if (typeof v === 'string') return r.text(v)
  if (Array.isArray(v)) return v.map((x) => redactValue(r, x))
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [r.text(k), redactValue(r, x)]))
  return v
}

/**
 * A whole bundle redacted with one redactor: the snapshot files, model.json, both reports, the
 * manifest's host and command line. Marks the manifest `redacted: true`. model and reportJson are
 * redacted string by string (not as JSON text, where `\n` escapes would hide word boundaries).
 * The mapping is for the user only; never put it in the bundle.
 */
export function redactBundleInput(
  input: BundleInput,
  opts: RedactOptions = {},
): {input: BundleInput; mapping: Record<string, string>} {
  const files = scrubSecrets(input.files)
  const host = input.manifest.host
  const reportMd = typeof input.reportMd === 'string' ? input.reportMd : [...input.reportMd].join('')
  const texts = [reportMd, ...strings(input.model), ...strings(input.reportJson), ...input.manifest.command]
  const attempts = redactAttempts(files.reduce((n, f) => n + (f.text?.length ?? 0), reportMd.length))
  for (let attempt = 1; ; attempt++) {
    const redactor = bundleRedactor(files, texts, {
      ...opts,
      hostnames: [...(opts.hostnames ?? []), ...(host ? [host] : [])],
    })
    const result = redactInputWith(redactor, {...input, reportMd}, files, host)
    if (redactor.unchanged().length === 0 || opts.key !== undefined || attempt >= attempts) return result
  }
}

function redactInputWith(
  redactor: Redactor,
  input: BundleInput & {reportMd: string},
  files: SourceFile[],
  host: string,
): {input: BundleInput; mapping: Record<string, string>} {
  const out: BundleInput = {
    files: files.map((f) => redactSource(redactor, f)),
    model: redactValue(redactor, input.model),
    reportMd: redactor.text(input.reportMd),
    reportJson: redactValue(redactor, input.reportJson),
    manifest: {
      ...input.manifest,
      host: host ? redactor.hostname(host) : host,
      command: input.manifest.command.map((c) => redactor.text(c)),
      redacted: true,
    },
  }
  return {input: out, mapping: redactor.mapping()}
}
