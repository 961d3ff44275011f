// Large inputs are mostly memory that is touched once: a full table's snapshot is read into buffers
// and copied into strings. On a virtual machine whose free memory goes back to the host (virtio-balloon
// free page reporting), each fresh 4 KiB page costs the host a fault; transparent huge pages cost far
// fewer. With THP in "madvise" mode only memory that asks gets them, and V8's heap never asks, but
// glibc's malloc does when started with the tunable glibc.malloc.hugetlb=1 (glibc 2.35+) — and Node's
// buffers and external strings, where the file texts live, come from malloc. glibc reads tunables only
// when a process starts, so bin/run.js runs this first: for a large input it runs the CLI again as a
// child with the tunable and passes its exit on. The second start is paid only above HUGE_INPUT_BYTES,
// where it saves more than it costs (docs/performance.md). This module is loaded before the CLI's
// bundle: it imports Node's built-ins and the snapshot's file names only.
import {readdirSync, readFileSync, statSync} from 'node:fs'
import path from 'node:path'

import {SNAPSHOT_FILE_NAMES} from '../collect/snapshot-files.js'

/** Snapshot bytes from which a re-run with huge pages pays for its second start. */
export const HUGE_INPUT_BYTES = 128 * 1024 * 1024
/**
 * A live node's routes (its largest table) from which the same holds: about HUGE_INPUT_BYTES of BIRD and kernel text.
 */
export const HUGE_LIVE_PREFIXES = 250_000
/** A bundle's compressed size understates its snapshot by about this factor for these texts. */
const BUNDLE_EXPANSION = 3
const TUNABLE = 'glibc.malloc.hugetlb'
const COMMANDS = new Set(['check', 'explain', 'fix', 'bundle', 'ui'])
const IPV4_QUERY = /^\d{1,3}(\.\d{1,3}){3}(\/\d{1,2})?$/

/** What the decision needs to know of the machine and the input; read by `probeMachine`. */
export interface HugePageFacts {
  argv: readonly string[] // the CLI's arguments (process.argv without node and the script)
  env: Readonly<Record<string, string | undefined>>
  thpEnabled: () => string | undefined // /sys/kernel/mm/transparent_hugepage/enabled
  glibcVersion: () => string | undefined // glibc at run time (undefined: musl or not Linux)
  inputBytes: (from: string) => number | undefined // a snapshot directory's or bundle's bytes
  liveFibStat: () => string | undefined // /proc/net/fib_triestat of this network namespace
  isTTY: boolean
}

/** The mode the kernel's THP setting selects: the bracketed word of "always [madvise] never". */
export function thpMode(text: string | undefined): string | undefined {
  return /\[(\w+)\]/.exec(text ?? '')?.[1]
}

/**
 * The routes of the largest FIB table in /proc/net/fib_triestat (its "Prefixes:" lines). Not their
 * sum: until a policy rule is added, the kernel keeps the local and main tables in one trie and
 * prints it under both names.
 */
export function largestFibTable(text: string): number {
  let largest = 0
  for (const m of text.matchAll(/^\s*Prefixes:\s*(\d+)/gm)) largest = Math.max(largest, Number(m[1]))
  return largest
}

/** The value of --from in the CLI's arguments, as oclif reads it (`--from X` or `--from=X`). */
export function fromFlag(argv: readonly string[]): string | undefined {
  let from: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--') break
    if (a === '--from' && i + 1 < argv.length) from = argv[++i]
    else if (a.startsWith('--from=')) from = a.slice('--from='.length)
  }
  return from
}

function versionAtLeast(version: string | undefined, major: number, minor: number): boolean {
  const m = /^(\d+)\.(\d+)/.exec(version ?? '')
  return m !== null && (Number(m[1]) > major || (Number(m[1]) === major && Number(m[2]) >= minor))
}

/**
 * The environment to run the CLI again with (the tunable added to GLIBC_TUNABLES), or undefined to
 * run it here: when the command reads a node's tables, the input is large, THP is in madvise mode
 * (with "always" malloc's memory gets huge pages anyway, with "never" it cannot), glibc knows the
 * tunable, and neither the user nor an earlier start set it. ROUTEDOCTOR_HUGEPAGES=0 never re-runs;
 * =1 re-runs whatever the input's size (where THP and glibc allow).
 */
export function hugePageEnv(facts: HugePageFacts): Record<string, string | undefined> | undefined {
  const {argv, env} = facts
  const knob = env.ROUTEDOCTOR_HUGEPAGES
  if (knob === '0') return undefined
  // set already: by the user, or this is the re-run
  if ((env.GLIBC_TUNABLES ?? '').includes(`${TUNABLE}=`)) return undefined
  const command = argv.length === 0 ? (facts.isTTY ? 'ui' : undefined) : argv[0]
  if (!command || !COMMANDS.has(command)) return undefined
  if (
    argv.some(
      (a) =>
        a === '--help' ||
        a === '-h' ||
        a === '--version' ||
        a === '--revert' ||
        a.startsWith('--revert=') ||
        a === '--bird-config',
    )
  )
    return undefined
  if (thpMode(facts.thpEnabled()) !== 'madvise') return undefined
  const from = fromFlag(argv)
  if (knob === '1') {
    // asked for: the size does not matter
  } else if (from === undefined) {
    // a live explain of an IPv4 block or address collects that block's routes, not the tables (services/targeted.ts)
    if (command === 'explain' && argv.some((a) => IPV4_QUERY.test(a))) return undefined
    const fib = facts.liveFibStat()
    if (fib === undefined || largestFibTable(fib) < HUGE_LIVE_PREFIXES) return undefined
  } else {
    const bytes = facts.inputBytes(from)
    if (bytes === undefined || bytes < HUGE_INPUT_BYTES) return undefined
  }
  if (!versionAtLeast(facts.glibcVersion(), 2, 35)) return undefined // older glibc ignores the tunable
  const tunables = env.GLIBC_TUNABLES ? `${env.GLIBC_TUNABLES}:${TUNABLE}=1` : `${TUNABLE}=1`
  return {...env, GLIBC_TUNABLES: tunables}
}

/**
 * A snapshot directory's bytes (the files it is read for), a bundle's estimated from its compressed size; undefined if
 * unreadable.
 */
export function snapshotInputBytes(from: string): number | undefined {
  try {
    const st = statSync(from)
    if (st.isFile()) return st.size * BUNDLE_EXPANSION
    if (!st.isDirectory()) return undefined
    const known = new Set<string>(SNAPSHOT_FILE_NAMES)
    let total = 0
    for (const name of readdirSync(from)) {
      if (known.has(name)) total += statSync(path.join(from, name)).size
    }
    return total
  } catch {
    return undefined // the CLI itself names what it cannot read
  }
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'latin1')
  } catch {
    return undefined
  }
}

/** This process's facts. */
export function probeMachine(argv: readonly string[] = process.argv.slice(2)): HugePageFacts {
  return {
    argv,
    env: process.env,
    thpEnabled: () =>
      process.platform === 'linux' ? readText('/sys/kernel/mm/transparent_hugepage/enabled') : undefined,
    glibcVersion: () =>
      (process.report?.getReport() as {header?: {glibcVersionRuntime?: string}} | undefined)?.header
        ?.glibcVersionRuntime,
    inputBytes: snapshotInputBytes,
    liveFibStat: () => readText('/proc/net/fib_triestat'),
    isTTY: Boolean(process.stdout.isTTY && process.stdin.isTTY),
  }
}

/**
 * Run the CLI again as a child with huge pages when that pays (hugePageEnv), its stdio this
 * process's, and end this process as the child ended (its exit status, or its signal). Resolves
 * false at once when the CLI should run here.
 */
export async function rerunWithHugePages(facts: HugePageFacts = probeMachine()): Promise<boolean> {
  const env = hugePageEnv(facts)
  if (!env) return false
  // loaded only here: node:child_process is a few milliseconds of every start otherwise
  const [{spawn}, {constants}] = await Promise.all([import('node:child_process'), import('node:os')])
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1], ...facts.argv], {stdio: 'inherit', env})
  // Signals sent to this process are passed on, and none ends it before the child has ended (the
  // terminal's Ctrl-C reaches both: the child may see it twice, and ends at the first).
  const forward = (signal: NodeJS.Signals): void => {
    child.kill(signal)
  }
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT']
  for (const s of signals) process.on(s, forward)
  const ended = await new Promise<{code: number | null; signal: NodeJS.Signals | null} | undefined>((resolve) => {
    child.once('error', () => resolve(undefined)) // could not start: run here instead
    child.once('exit', (code, signal) => resolve({code, signal}))
  })
  for (const s of signals) process.off(s, forward)
  if (!ended) return false
  if (ended.signal) {
    // as a shell reports it, if the signal is ignored here
    process.exitCode = 128 + (constants.signals[ended.signal] ?? 0)
    process.kill(process.pid, ended.signal) // die as the child died
    return true
  }
  process.exitCode = ended.code ?? 1
  return true
}
