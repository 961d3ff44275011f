// Shared by the live integration tests: run the BUILT routedoctor inside a lab namespace, as a user
// would (`ip netns exec NS node bin/run.js …`), and compare kernel tables. Build first:
// `npx tsc -p tsconfig.build.json`.
import {existsSync, readFileSync} from 'node:fs'
import path from 'node:path'

import {execa} from 'execa'

import {BIN, FIXTURES, ROOT, type Expected} from '../helpers.js'
import {labUnavailableReason, type KernelRoute, type Lab, type ScenarioName} from '../lab/lab.js'

export const POOL = ['--pool', '192.168.0.0/16=ipip']

/** Why these tests cannot run here (no root, no BIRD, not built), or null. */
export function liveUnavailableReason(scenario: ScenarioName): string | null {
  const lab = labUnavailableReason(scenario)
  if (lab) return lab
  if (!existsSync(path.join(ROOT, 'dist/app/cli.js'))) return 'routedoctor is not built: run `npm run build` first'
  return null
}

export interface RunResult {
  stdout: string
  stderr: string
  exitCode: number
}

export interface RunOptions {
  /** prefix the command (inside the namespace), e.g. setpriv … */
  wrap?: string[]
  cwd?: string
}

/** `ip netns exec <n1> node bin/run.js ARGS` with stdin not a TTY, NO_COLOR. */
export async function rd(lab: Lab, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  const r = await execa('ip', ['netns', 'exec', lab.ns('n1'), ...(opts.wrap ?? []), 'node', BIN, ...args], {
    reject: false,
    stdin: 'ignore',
    cwd: opts.cwd ?? ROOT,
    env: {NO_COLOR: '1', FORCE_COLOR: '0'},
    timeout: 60_000,
  })
  return {stdout: String(r.stdout), stderr: String(r.stderr), exitCode: r.exitCode ?? -1}
}

/** routedoctor offline (`--from`), outside any namespace. */
export async function rdOffline(args: string[]): Promise<RunResult> {
  const r = await execa('node', [BIN, ...args], {reject: false, stdin: 'ignore', cwd: ROOT, env: {NO_COLOR: '1', FORCE_COLOR: '0'}, timeout: 60_000})
  return {stdout: String(r.stdout), stderr: String(r.stderr), exitCode: r.exitCode ?? -1}
}

/** The live-source flags for n1: its BIRD socket and its own config (not the host's /etc/bird). */
export const liveFlags = (lab: Lab): string[] => ['--bird-socket', lab.birdSocket('n1'), '--bird-conf', lab.birdConfigPath('n1')]

export function parseJson<T = any>(r: RunResult, what: string): T {
  try {
    return JSON.parse(r.stdout) as T
  } catch {
    throw new Error(`${what}: stdout is not JSON (exit ${r.exitCode})\nstdout: ${r.stdout.slice(0, 2000)}\nstderr: ${r.stderr.slice(0, 2000)}`)
  }
}

export function expectedFor(scenario: ScenarioName): Expected {
  return JSON.parse(readFileSync(path.join(FIXTURES, `lab-${scenario}`, 'expected.json'), 'utf8')) as Expected
}

export interface CheckJson {
  schema: number
  node: {
    pools: Array<{cidr: string; mode: string; origin?: string}>
    poolOrigin?: string
    missing: string[]
    failed: Array<{file: string; error: string}>
    [k: string]: unknown
  }
  prefixes: Array<{
    prefix: string
    verdict: string
    findings: Array<{id: string; severity: string}>
    plan: null | {nexthops: Hop[]}
  }>
  host: {findings: Array<{id: string; severity: string}>}
  summary: {exitCode: number; errors: number; [k: string]: unknown}
}

export interface Hop {
  gateway: string
  dev: string
  onlink: boolean
}

/** prefix → {verdict, finding ids (sorted)} */
export function verdicts(c: CheckJson): Record<string, {verdict: string; findings: string[]}> {
  return Object.fromEntries(
    c.prefixes.map((p) => [p.prefix, {verdict: p.verdict, findings: p.findings.map((f) => f.id).sort()}]),
  )
}

export const sortHops = (hops: Hop[]): Hop[] =>
  hops.map((h) => ({gateway: h.gateway, dev: h.dev, onlink: Boolean(h.onlink)})).sort((a, b) => `${a.gateway}|${a.dev}`.localeCompare(`${b.gateway}|${b.dev}`))

/** The next hops of a kernel route (`ip -j`), as {gateway, dev, onlink}, sorted. */
export function kernelHops(r: KernelRoute): Hop[] {
  const hops = r.nexthops ?? [r]
  return sortHops(hops.map((h) => ({gateway: h.gateway ?? h.via?.host ?? '', dev: h.dev ?? '', onlink: (h.flags ?? []).includes('onlink')})))
}

/** `ip -j` writes a /32 without its length. */
export const normDst = (dst: string): string => (dst === 'default' ? '0.0.0.0/0' : dst.includes('/') ? dst : `${dst}/32`)

/** Routes of the main table for a prefix, lowest metric (the effective one) first. */
export function mainRoutesFor(routes: KernelRoute[], prefix: string): KernelRoute[] {
  return routes
    .filter((r) => normDst(r.dst) === prefix && (r.table === undefined || r.table === 'main'))
    .sort((a, b) => (a.metric ?? 0) - (b.metric ?? 0))
}

/** Key-order independent JSON of one route. */
export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`
  if (v && typeof v === 'object')
    return `{${Object.keys(v as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`
  return JSON.stringify(v)
}

/** The multiset difference a - b of normalised routes. */
export function routeDiff(a: KernelRoute[], b: KernelRoute[]): string[] {
  const rest = b.map(stableJson)
  const out: string[] = []
  for (const r of a.map(stableJson)) {
    const i = rest.indexOf(r)
    if (i >= 0) rest.splice(i, 1)
    else out.push(r)
  }
  return out.sort()
}

/** Healthy node's routes as BIRD 2.0.12 with the onlink filter programmed them (captured). */
export function healthyHops(prefix: string): Hop[] | undefined {
  const routes = JSON.parse(readFileSync(path.join(FIXTURES, 'lab-bird2-healthy/ip-j-d-route.json'), 'utf8')) as KernelRoute[]
  const r = mainRoutesFor(routes, prefix)[0]
  return r ? kernelHops(r) : undefined
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
