// Collects the DESIGN §3 sources from the live node (or the network namespace this process runs in):
// iproute2 through execa (argument arrays, no shell), sysctls from /proc/sys, BIRD over its control
// socket, and the BIRD config file. Every source is independent: one that fails becomes a SourceFile
// with `error` and the others are still collected.

import os from 'node:os'
import {readdir, readFile, stat} from 'node:fs/promises'
import path from 'node:path'
import {execa} from 'execa'
import type {SourceFile} from '../model/types.js'
import {BirdError, BirdSocket, DEFAULT_BIRD_SOCKETS, DEFAULT_BIRD_TIMEOUT_MS, findBirdSocket} from './bird-socket.js'
import {SNAPSHOT_FILES, SNAPSHOT_FILE_NAMES, decodeText, grownBuffer} from './snapshot-files.js'

export const DEFAULT_BIRD_CONFIGS = [
  '/etc/calico/confd/config/bird.cfg',
  '/etc/bird/bird.conf',
  '/etc/bird.conf',
  '/usr/local/etc/bird.conf',
]

export interface CollectLiveOptions {
  birdSocket?: string
  /** Accepted for symmetry with the other collectors: every device's link and rp_filter is collected anyway. */
  tunnelDev?: string
  /** The BIRD config file; wins over DEFAULT_BIRD_CONFIGS (BIRD has no command that names its config). */
  birdConfig?: string
  birdTimeoutMs?: number
  /** Longest silence tolerated from one `ip` command (reset by every chunk it prints; default 30 s). */
  ipTimeoutMs?: number
  /** Longest output of one `ip` command read (bytes; default 512 MiB). */
  ipMaxOutput?: number
  /**
   * `ip -d route show table all` and `ip -d link show` (the text forms): 'always' (a bundle keeps every source), or
   * 'fallback': each only when its JSON form could not be read (a diagnosis reads the JSON one).
   */
  routeText?: 'always' | 'fallback'
  /**
   * false: none of the kernel's route tables (a targeted collection asks the kernel for the routes it reads itself).
   */
  routeTables?: boolean
  /** BIRD's command for its routes (default `show route all`): `show route PREFIX all` for a targeted collection. */
  birdRoutesCommand?: string
  /** BIRD's sources, already being collected (collectBird): a targeted collection reads them before the rest is in. */
  birdFiles?: Promise<SourceFile[]>
  // Test seams: where things are looked up.
  ipBinary?: string
  procSys?: string
  birdSocketCandidates?: string[]
  birdConfigCandidates?: string[]
}

const IP_SOURCES: [name: string, args: string[]][] = [
  [SNAPSHOT_FILES.ipRouteJson, ['-j', '-d', 'route', 'show', 'table', 'all']],
  [SNAPSHOT_FILES.ipRouteText, ['-d', 'route', 'show', 'table', 'all']],
  [SNAPSHOT_FILES.ipLinkJson, ['-j', '-d', 'link', 'show']],
  [SNAPSHOT_FILES.ipLinkText, ['-d', 'link', 'show']],
  [SNAPSHOT_FILES.ipAddrJson, ['-j', 'addr', 'show']],
  [SNAPSHOT_FILES.ipNeighJson, ['-j', 'neigh', 'show']],
  [SNAPSHOT_FILES.ip6RouteText, ['-6', '-d', 'route', 'show', 'table', 'all']],
  [SNAPSHOT_FILES.ipRuleText, ['rule', 'show']],
]

const ROUTE_TEXT = IP_SOURCES.find(([name]) => name === SNAPSHOT_FILES.ipRouteText)!
const LINK_TEXT = IP_SOURCES.find(([name]) => name === SNAPSHOT_FILES.ipLinkText)!
const ROUTE_TABLES: readonly string[] = [
  SNAPSHOT_FILES.ipRouteJson,
  SNAPSHOT_FILES.ipRouteText,
  SNAPSHOT_FILES.ip6RouteText,
]

const BIRD_SOURCES: [name: string, cmd: string][] = [
  [SNAPSHOT_FILES.birdStatus, 'show status'],
  [SNAPSHOT_FILES.birdRoutes, 'show route all'],
  [SNAPSHOT_FILES.birdProtocols, 'show protocols all'],
]

export async function collectLive(opts: CollectLiveOptions = {}): Promise<SourceFile[]> {
  // the text route table says what the JSON one says: for a diagnosis, read only when the JSON could not be
  // (a full table's is as large again, and as slow to print)
  const fallback = opts.routeText === 'fallback'
  const tables = opts.routeTables ?? true
  const ipSources = IP_SOURCES.filter(
    (s) => !(fallback && (s === ROUTE_TEXT || s === LINK_TEXT)) && (tables || !ROUTE_TABLES.includes(s[0])),
  )
  const groups = await Promise.all([
    ...ipSources.map(([name, args]) => collectIp(name, args, opts).then((f) => [f])),
    collectSysctl(opts).then((f) => [f]),
    opts.birdFiles ?? collectBird(opts),
    collectBirdConfig(opts).then((f) => [f]),
  ])
  const files = groups.flat()
  // the node's name: uname(2), as `hostname` prints it
  files.push({
    name: SNAPSHOT_FILES.hostname,
    text: `${os.hostname()}\n`,
    command: 'hostname',
    exitStatus: 0,
    durationMs: 0,
  })
  const failed = (name: string) => files.find((f) => f.name === name)?.text === undefined
  if (fallback && tables && failed(SNAPSHOT_FILES.ipRouteJson)) files.push(await collectIp(...ROUTE_TEXT, opts))
  if (fallback && failed(SNAPSHOT_FILES.ipLinkJson)) files.push(await collectIp(...LINK_TEXT, opts))
  const order = (n: string) => {
    const i = (SNAPSHOT_FILE_NAMES as readonly string[]).indexOf(n)
    return i < 0 ? SNAPSHOT_FILE_NAMES.length : i
  }
  return files.sort((a, b) => order(a.name) - order(b.name))
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e)
}

// ---------------------------------------------------------------- iproute2

// What one `ip` command may print: a longer text could not be one string. execa's default is smaller than a
// full table's `ip -j -d route`, which it would cut off, losing the kernel's routes.
const MAX_IP_OUTPUT = 512 * 2 ** 20
// what one `ip` command's output is first read into (grown as it fills)
const FIRST_READ = 2 ** 16

export async function collectIp(name: string, args: string[], opts: CollectLiveOptions = {}): Promise<SourceFile> {
  const bin = opts.ipBinary ?? 'ip'
  const command = ['ip', ...args].join(' ')
  const max = opts.ipMaxOutput ?? MAX_IP_OUTPUT
  const t0 = performance.now()
  // stdout is copied into one buffer as it arrives, doubled when full (execa's buffering grows one array buffer by
  // each chunk, copying it again and again; chunks joined after the last one are a copy then), then
  // decoded once as the snapshot reader decodes a file (latin1 when ASCII, which is cheaper than UTF-8)
  const subprocess = execa(bin, args, { reject: false, stripFinalNewline: false, encoding: 'buffer', buffer: { stdout: false } })
  // a full table's dump takes long on a busy node while it keeps printing: only a silence ends it, as for BIRD's socket
  const timeoutMs = opts.ipTimeoutMs ?? 30_000
  let silent = false
  const timer = setTimeout(() => {
    silent = true
    subprocess.kill()
  }, timeoutMs)
  let out: Buffer = Buffer.allocUnsafe(FIRST_READ)
  let size = 0
  let tooLong = false
  subprocess.stdout?.on('data', (chunk: Buffer) => {
    timer.refresh()
    if (tooLong) return
    if (size + chunk.length > max) {
      tooLong = true
      out = Buffer.alloc(0)
      subprocess.kill()
      return
    }
    if (size + chunk.length > out.length) out = grownBuffer(out, size, chunk.length)
    chunk.copy(out, size)
    size += chunk.length
  })
  const r = await subprocess
  clearTimeout(timer)
  const durationMs = Math.round(performance.now() - t0)
  const file: SourceFile = { name, command, durationMs }
  if (r.exitCode !== undefined) file.exitStatus = r.exitCode
  if (tooLong) {
    file.error = `\`${command}\` printed more than ${max >= 2 ** 20 ? `${Math.round(max / 2 ** 20)} MiB` : `${max} bytes`}, more than routedoctor reads`
  } else if (silent) {
    file.error = `\`${command}\` printed nothing for ${timeoutMs} ms`
  } else if (r.exitCode === undefined) {
    // Could not start (no ip binary) or was killed by a signal.
    const why = r.signal ? `killed by ${r.signal}` : (r.cause instanceof Error ? r.cause.message : r.shortMessage)
    file.error = `\`${command}\` could not run: ${why}`
  } else if (r.exitCode !== 0) {
    const stderr = bytesOf(r.stderr).toString('utf8').trim().split('\n')[0] ?? ''
    file.error = `\`${command}\` exited with status ${r.exitCode}${stderr ? `: ${stderr}` : ''}`
  } else {
    file.text = decodeText(out.subarray(0, size))
  }
  return file
}

/** execa's output bytes as a Buffer (no copy). */
function bytesOf(out: Uint8Array | undefined): Buffer {
  return out === undefined ? Buffer.alloc(0) : Buffer.from(out.buffer, out.byteOffset, out.byteLength)
}

// ---------------------------------------------------------------- sysctl

const SYSCTLS = ['net.ipv4.ip_forward', 'net.ipv4.fib_multipath_hash_policy', 'net.ipv4.fib_multipath_use_neigh']

/** `name = value` lines, as `sysctl` prints them. Device names with a dot use `/` in the name, as sysctl does. */
export async function collectSysctl(opts: CollectLiveOptions = {}): Promise<SourceFile> {
  const root = opts.procSys ?? '/proc/sys'
  const t0 = performance.now()
  const names = [...SYSCTLS]
  const file: SourceFile = {
    name: SNAPSHOT_FILES.sysctl,
    command: `read ${root}/net/ipv4/{ip_forward,fib_multipath_*,conf/*/rp_filter}`,
  }
  let devs: string[] = []
  try {
    devs = await readdir(path.join(root, 'net/ipv4/conf'))
  } catch (e) {
    file.error = `cannot list ${path.join(root, 'net/ipv4/conf')}: ${message(e)}`
  }
  const rest = devs.filter((d) => d !== 'all' && d !== 'default').sort()
  for (const d of [...devs.filter((d) => d === 'all'), ...devs.filter((d) => d === 'default'), ...rest]) {
    names.push(`net.ipv4.conf.${d.replaceAll('.', '/')}.rp_filter`)
  }
  const values = await Promise.all(
    names.map(async (n) => {
      // net.ipv4.conf.eth0/100.rp_filter -> net/ipv4/conf/eth0.100/rp_filter
      const rel = n.split('.').map((part) => part.replaceAll('/', '.')).join('/')
      try {
        return { n, v: (await readFile(path.join(root, rel), 'utf8')).trim() }
      } catch (e) {
        return { n, err: message(e) }
      }
    }),
  )
  const lines = values.filter((x) => x.v !== undefined).map((x) => `${x.n} = ${x.v}\n`)
  file.durationMs = Math.round(performance.now() - t0)
  if (lines.length === 0) {
    file.error ??= `no sysctl readable under ${root}: ${values[0]?.err ?? 'nothing to read'}`
  } else {
    // A missing entry (an old kernel without fib_multipath_hash_policy) just leaves its line out.
    file.text = lines.join('')
    file.exitStatus = 0
    delete file.error
  }
  return file
}

// ---------------------------------------------------------------- BIRD

// BIRD's reply to `show route PREFIX all` when it holds nothing there
const NETWORK_NOT_FOUND = 8001

export async function collectBird(opts: CollectLiveOptions = {}): Promise<SourceFile[]> {
  const routesCommand = opts.birdRoutesCommand
  const sources =
    routesCommand === undefined
      ? BIRD_SOURCES
      : BIRD_SOURCES.map(([name, cmd]): [string, string] => [
          name,
          name === SNAPSHOT_FILES.birdRoutes ? routesCommand : cmd,
        ])
  const failAll = (e: unknown, command?: (cmd: string) => string) =>
    sources.map(([name, cmd]) => {
      const f: SourceFile = { name, error: message(e) }
      if (command) f.command = command(cmd)
      return f
    })
  let sockPath: string
  try {
    sockPath = findBirdSocket(opts.birdSocket, opts.birdSocketCandidates ?? DEFAULT_BIRD_SOCKETS)
  } catch (e) {
    return failAll(e)
  }
  const described = (cmd: string) => `${cmd} (BIRD control socket ${sockPath})`
  let bird: BirdSocket
  try {
    bird = await BirdSocket.connect(sockPath, { timeoutMs: opts.birdTimeoutMs ?? DEFAULT_BIRD_TIMEOUT_MS })
  } catch (e) {
    return failAll(e, described)
  }
  const files: SourceFile[] = []
  try {
    for (const [name, cmd] of sources) {
      const t0 = performance.now()
      const f: SourceFile = { name, command: described(cmd) }
      try {
        // birdc's printed form, banner first, so the parsers see what `birdc CMD > file` gives.
        f.text = await bird.command(cmd, `${bird.hello}\n`) // one string: the parsers take a file's text whole
        f.exitStatus = 0
      } catch (e) {
        // nothing at that prefix: the routes BIRD holds there are none
        if (
          e instanceof BirdError &&
          e.birdCode === NETWORK_NOT_FOUND &&
          name === SNAPSHOT_FILES.birdRoutes &&
          routesCommand !== undefined
        ) {
          f.text = `${bird.hello}\n`
          f.exitStatus = 0
        } else f.error = message(e)
      }
      f.durationMs = Math.round(performance.now() - t0)
      files.push(f)
    }
  } finally {
    bird.close()
  }
  return files
}

// ---------------------------------------------------------------- BIRD config

/** The first config that exists (an explicit path always wins), with `include` files inlined. */
export async function collectBirdConfig(opts: CollectLiveOptions = {}): Promise<SourceFile> {
  const t0 = performance.now()
  const candidates =
    opts.birdConfig !== undefined ? [opts.birdConfig] : (opts.birdConfigCandidates ?? DEFAULT_BIRD_CONFIGS)
  let found: string | undefined
  for (const c of candidates) {
    if (await isFile(c)) {
      found = c
      break
    }
  }
  if (found === undefined) {
    const error =
      opts.birdConfig !== undefined
        ? `BIRD config ${opts.birdConfig} does not exist or is not a file`
        : `no BIRD config found (tried ${candidates.join(', ')}); pass --bird-conf PATH`
    return { name: SNAPSHOT_FILES.birdConfig, error, durationMs: Math.round(performance.now() - t0) }
  }
  const file: SourceFile = { name: SNAPSHOT_FILES.birdConfig, command: `read ${found}` }
  try {
    file.text = await readBirdConfig(found)
    file.exitStatus = 0
  } catch (e) {
    file.error = `cannot read BIRD config ${found}: ${message(e)}`
  }
  file.durationMs = Math.round(performance.now() - t0)
  return file
}

async function isFile(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile()
  } catch {
    return false
  }
}

const INCLUDE = /^(\s*)include\s+"([^"]+)"\s*;\s*(#.*)?$/
const MAX_INCLUDE_DEPTH = 8

/**
 * Reads a BIRD config and inlines its `include "FILE";` lines (Calico's bird.cfg keeps the pool
 * filter in an included bird_ipam.cfg). Paths are relative to the including file's directory, as
 * BIRD resolves them; a `*`/`?`/`[..]` pattern in the last component expands in sorted order.
 * The include line stays, commented, with begin/end markers around the inlined text.
 */
export async function readBirdConfig(file: string, depth = 0): Promise<string> {
  const text = await readFile(file, 'utf8')
  if (depth >= MAX_INCLUDE_DEPTH || !/^\s*include\s/m.test(text)) return text
  const out: string[] = []
  const lines = text.split('\n')
  for (const [i, line] of lines.entries()) {
    const m = INCLUDE.exec(line)
    const eol = i < lines.length - 1 ? '\n' : ''
    if (!m) {
      out.push(line + eol)
      continue
    }
    const [, indent, target] = m as unknown as [string, string, string]
    const resolved = path.resolve(path.dirname(file), target)
    const matches = await expandGlob(resolved)
    if (matches.length === 0) {
      out.push(`${indent}# routedoctor: ${line.trim()}  (not found: ${resolved})${eol}`)
      continue
    }
    for (const inc of matches) {
      out.push(`${indent}# routedoctor: begin ${line.trim()}  (${inc})\n`)
      try {
        const body = await readBirdConfig(inc, depth + 1)
        out.push(body.endsWith('\n') || body === '' ? body : body + '\n')
      } catch (e) {
        out.push(`${indent}# routedoctor: cannot read ${inc}: ${message(e)}\n`)
      }
      out.push(`${indent}# routedoctor: end ${line.trim()}${eol || '\n'}`)
    }
  }
  return out.join('')
}

async function expandGlob(p: string): Promise<string[]> {
  const base = path.basename(p)
  if (!/[*?[]/.test(base)) return (await isFile(p)) ? [p] : []
  const dir = path.dirname(p)
  const re = new RegExp(
    '^' +
      base.replace(/[.+^${}()|\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]') +
      '$',
  )
  let names: string[]
  try {
    names = await readdir(dir)
  } catch {
    return []
  }
  const hits = names.filter((n) => re.test(n)).sort().map((n) => path.join(dir, n))
  const files: string[] = []
  for (const h of hits) if (await isFile(h)) files.push(h)
  return files
}
