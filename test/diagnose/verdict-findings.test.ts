// The invariant between verdicts and findings: a prefix whose verdict is not ok (nor local, nor not-in-pool)
// carries at least one error finding, and check's exit status is 1 exactly when some finding is an error.
// Held over every captured snapshot, and over those snapshots with sources left out and routes damaged at random.
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {generateSnapshot} from '../../bench/gen-snapshot.mjs'
import {readSnapshotDir} from '../../src/collect/snapshot-dir.js'
import {buildSnapshot, haveKernelRoutes} from '../../src/snapshot/build.js'
import {RouteDoctorError} from '../../src/model/errors.js'
import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import type {BirdRoute, KernelRoute, Snapshot, SourceFile} from '../../src/model/types.js'
import {requireKernelRoutes} from '../../src/services/load.js'
import {checkReport, explainReport, type CheckReport} from '../../src/report/report.js'
import {loadFiles} from './helpers.js'
import {scenarioDirs} from '../helpers.js'

const FINE = new Set(['ok', 'local', 'not-in-pool'])

function holds(report: CheckReport, what: string): void {
  for (const p of report.prefixes) {
    if (FINE.has(p.verdict)) continue
    expect(p.findings.filter((f) => f.severity === 'error').map((f) => f.id), `${what}: ${p.prefix} is ${p.verdict}`).not.toEqual([])
  }
  const errors = [...report.prefixes.flatMap((p) => p.findings), ...report.host.findings].some((f) => f.severity === 'error')
  expect(report.summary.exitCode, `${what}: exit status`).toBe(errors ? 1 : 0)
}

// Without either kernel route dump nothing says whether the kernel routes a prefix: such a snapshot is refused
// (exit 2, services/load.ts requireKernelRoutes), never judged.
const DROPPABLE = ['birdc-show-route-all.txt', 'birdc-show-protocols-all.txt', 'birdc-show-status.txt', 'bird.conf', 'ip-j-d-route.json', 'ip-d-route.txt', 'ip-j-addr.json', 'ip-j-d-link.json', 'ip-d-link.txt', 'sysctl.txt']

/** The snapshot `files` of `name` is judged (true), or refused for want of the kernel's routes, naming it and them. */
function judged(files: SourceFile[], name: string): boolean {
  if (haveKernelRoutes(files)) return true
  expect(() => requireKernelRoutes({files, origin: {kind: 'dir', path: name}}), name).toThrow(
    `snapshot ${name} has no kernel routes (expected ip-j-d-route.json or ip-d-route.txt from \`ip -j -d route show table all\`)`)
  return false
}
const KERNEL_DAMAGE = ['delete', 'unreachable', 'blackhole', 'prohibit', 'other-owner', 'eth0', 'no-onlink', 'far-gateway', 'no-nexthops'] as const
const BIRD_DAMAGE = ['delete', 'unreachable', 'blackhole', 'static', 'no-next-hop', 'far-next-hop', 'not-primary'] as const

type Damage<K> = {kind: K; at: number}

function damageKernel(routes: KernelRoute[], damage: Damage<(typeof KERNEL_DAMAGE)[number]>[], pool = '192.168.'): KernelRoute[] {
  const out = routes.map((r) => ({...r, nexthops: r.nexthops.map((n) => ({...n, flags: [...n.flags]}))}))
  for (const {kind, at} of damage) {
    const held = out.flatMap((r, i) => (r.dst.startsWith(pool) && r.tableId !== 255 ? [i] : []))
    if (held.length === 0) break
    const i = held[at % held.length]!
    const r = out[i]!
    switch (kind) {
      case 'delete': out.splice(i, 1); break
      case 'unreachable': case 'blackhole': case 'prohibit': out[i] = {...r, type: kind, nexthops: []}; break
      case 'other-owner': r.protocol = at % 2 === 0 ? 'static' : '80'; break
      case 'eth0': for (const n of r.nexthops) n.dev = 'eth0'; break
      case 'no-onlink': for (const n of r.nexthops) n.flags = n.flags.filter((f) => f !== 'onlink'); break
      case 'far-gateway': for (const n of r.nexthops) n.gateway = {family: 'inet', address: '198.51.100.9'}; break
      case 'no-nexthops': out[i] = {...r, nexthops: [{weight: 1, flags: [], dev: 'eth0'}]}; break
    }
  }
  return out
}

function damageBird(routes: BirdRoute[], damage: Damage<(typeof BIRD_DAMAGE)[number]>[], pool = '192.168.'): BirdRoute[] {
  const out: BirdRoute[] = routes.map((r) => Object.assign(Object.create(Object.getPrototypeOf(r)) as BirdRoute, r))
  for (const {kind, at} of damage) {
    const held = out.flatMap((r, i) => (r.prefix.startsWith(pool) ? [i] : []))
    if (held.length === 0) break
    const i = held[at % held.length]!
    const r = out[i]!
    switch (kind) {
      case 'delete': out.splice(i, 1); break
      case 'unreachable': case 'blackhole': r.dest = kind; r.nexthops = []; break
      case 'static': r.source = 'static'; break
      case 'no-next-hop': r.bgpNextHop = undefined; break
      case 'far-next-hop': r.bgpNextHop = '198.51.100.7'; break
      case 'not-primary': r.primary = false; break
    }
  }
  return out
}

const fixtures = scenarioDirs().map((d) => path.basename(d))

describe('a verdict that is not ok carries an error finding, and check exits by the errors', () => {
  it('on every captured snapshot, as it is, and without its BIRD sources or its session data', () => {
    expect(fixtures.length).toBeGreaterThan(8)
    for (const name of fixtures) {
      const files = loadFiles(name)
      holds(checkReport(new SnapshotIndex(buildSnapshot(files))), name)
      for (const drop of [['birdc-show-route-all.txt', 'birdc-show-protocols-all.txt', 'birdc-show-status.txt', 'bird.conf'], ['birdc-show-protocols-all.txt']]) {
        holds(checkReport(new SnapshotIndex(buildSnapshot(files.filter((f) => !drop.includes(f.name))))), `${name} without ${drop.join(', ')}`)
      }
    }
  })

  it('on those snapshots with sources left out, the pool CrossSubnet or Always, and routes damaged at random', () => {
    const base = new Map(fixtures.map((n) => [n, loadFiles(n)]))
    const kernel = fc.record({kind: fc.constantFrom(...KERNEL_DAMAGE), at: fc.nat()})
    const bird = fc.record({kind: fc.constantFrom(...BIRD_DAMAGE), at: fc.nat()})
    fc.assert(
      fc.property(
        fc.constantFrom(...fixtures),
        fc.subarray(DROPPABLE, {maxLength: 4}),
        fc.boolean(),
        fc.array(kernel, {maxLength: 4}),
        fc.array(bird, {maxLength: 4}),
        (name, drop, crossSubnet, kd, bd) => {
          let files: SourceFile[] = base.get(name)!.filter((f) => !drop.includes(f.name))
          if (!judged(files, name)) return
          if (crossSubnet)
            files = files.map((f) =>
              f.name === 'ippools.yaml'
                ? {...f, text: f.text!.replace('ipipMode: Always', 'ipipMode: CrossSubnet')}
                : f,
            )
          const built = buildSnapshot(files)
          const snapshot: Snapshot = {
            ...built,
            kernelRoutes: damageKernel(built.kernelRoutes, kd),
            bird: {...built.bird, routes: damageBird(built.bird.routes, bd)},
          }
          const ctx = new SnapshotIndex(snapshot)
          const what = `${name} -${drop.join(',')} ${crossSubnet ? 'CrossSubnet ' : ''}${JSON.stringify(kd)} ${JSON.stringify(bd)}`
          const report = checkReport(ctx)
          holds(report, what)
          // explain says the same of each prefix
          for (const p of report.prefixes) {
            const r = explainReport(ctx, p.prefix)
            expect(r.verdict, `${what}: explain ${p.prefix}`).toBe(p.verdict)
            if (!FINE.has(r.verdict))
              expect(
                r.findings.some((f) => f.severity === 'error'),
                `${what}: explain ${p.prefix}`,
              ).toBe(true)
          }
        },
      ),
      {numRuns: 300},
    )
  })

  it("on the bench's synthetic table (pool 10.0.0.0/8), Always or CrossSubnet, with routes damaged at random", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rd-invariant-'))
    let files: SourceFile[]
    try {
      await generateSnapshot(200, dir)
      files = await readSnapshotDir(dir)
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
    const kernel = fc.record({kind: fc.constantFrom(...KERNEL_DAMAGE), at: fc.nat()})
    const bird = fc.record({kind: fc.constantFrom(...BIRD_DAMAGE), at: fc.nat()})
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.array(kernel, {maxLength: 8}),
        fc.array(bird, {maxLength: 8}),
        (crossSubnet, kd, bd) => {
          const fs = crossSubnet
            ? files.map((f) =>
                f.name === 'ippools.yaml' ? {...f, text: f.text!.replace(/ipipMode: \w+/, 'ipipMode: CrossSubnet')} : f,
              )
            : files
          const built = buildSnapshot(fs)
          const snapshot: Snapshot = {
            ...built,
            kernelRoutes: damageKernel(built.kernelRoutes, kd, '10.'),
            bird: {...built.bird, routes: damageBird(built.bird.routes, bd, '10.')},
          }
          holds(
            checkReport(new SnapshotIndex(snapshot)),
            `synthetic ${crossSubnet ? 'CrossSubnet ' : ''}${JSON.stringify(kd)} ${JSON.stringify(bd)}`,
          )
        },
      ),
      {numRuns: 40},
    )
  })

  it('a pasted shape: an unreachable proto bird block with nothing else, from a plain ip route paste', () => {
    const route = readFileSync(path.join(path.dirname(scenarioDirs()[0]!), 'lab-bird16-ipv6-ll', 'ip-d-route.txt'), 'utf8')
    const files: SourceFile[] = [
      {name: 'ip-d-route.txt', text: route},
      {name: 'ippools.yaml', text: 'items:\n- spec:\n    cidr: 192.168.0.0/16\n    ipipMode: Always\n'},
    ]
    const report = checkReport(new SnapshotIndex(buildSnapshot(files)))
    expect(report.prefixes.find((p) => p.prefix === '192.168.110.128/26')?.verdict).toBe('unreachable')
    holds(report, 'ip route and pools only')
    expect(report.summary.exitCode).toBe(1)
  })

  it('without any kernel route dump, nothing is judged: refused (exit 2), naming the snapshot or the failure recorded', () => {
    for (const name of fixtures) {
      const files = loadFiles(name).filter((f) => f.name !== 'ip-j-d-route.json' && f.name !== 'ip-d-route.txt')
      expect(judged(files, name)).toBe(false)
      // a source that failed when the snapshot was taken is named with why
      const failed = [...files, {name: 'ip-j-d-route.json', error: '`ip -j -d route show table all` exited with status 1: boom'}]
      try {
        requireKernelRoutes({files: failed, origin: {kind: 'bundle', path: `${name}.tar.gz`}})
        throw new Error('not refused')
      } catch (error) {
        expect(error).toBeInstanceOf(RouteDoctorError)
        expect((error as RouteDoctorError).exit).toBe(2)
        expect((error as Error).message).toBe(`bundle ${name}.tar.gz has no kernel routes: when collected, ip-j-d-route.json failed ` +
          '(`ip -j -d route show table all` exited with status 1: boom) (expected ip-j-d-route.json or ip-d-route.txt from `ip -j -d route show table all`)')
      }
      // live: the failed commands and their errors
      expect(() => requireKernelRoutes({files: failed, origin: {kind: 'live'}})).toThrow(
        'no kernel routes: `ip -j -d route show table all` exited with status 1: boom; nothing can be judged without them')
    }
  })

  it('an existing but empty kernel route dump is data, an empty table: BIRD\'s blocks are missing, with an error, exit 1', () => {
    for (const name of fixtures) {
      for (const [empty, text] of [['ip-j-d-route.json', ''], ['ip-j-d-route.json', '[]\n'], ['ip-d-route.txt', ''], ['ip-d-route.txt', '\n']]) {
        const files = [...loadFiles(name).filter((f) => f.name !== 'ip-j-d-route.json' && f.name !== 'ip-d-route.txt'), {name: empty, text}]
        expect(judged(files, name)).toBe(true)
        const snapshot = buildSnapshot(files)
        expect(snapshot.kernelRoutes.filter((r) => r.family === 'inet'), `${name} ${empty}`).toEqual([])
        const report = checkReport(new SnapshotIndex(snapshot))
        holds(report, `${name} with ${empty} ${JSON.stringify(text)}`)
        const missing = report.prefixes.filter((p) => p.verdict === 'missing')
        if (snapshot.bird.routes.some((r) => r.bgpNextHop !== undefined && r.dest === 'unicast')) expect(missing.length, name).toBeGreaterThan(0)
        if (text.trim() === '') expect(report.node.failed, name).toContainEqual({file: empty, error: 'the file is empty: read as an empty table'})
      }
    }
  })
})
