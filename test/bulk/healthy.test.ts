// check's bulk path (bulk/deferred.ts, bulk/healthy.ts) against the rules: whatever the snapshot, a
// report made with routes deferred and reported in bulk is the report the rules make on every route,
// byte for byte, as JSON and as text. Real captures, the bench's synthetic table, and that table with
// random damage to BIRD's paths and the kernel's routes.
import {mkdtempSync, readdirSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import fc from 'fast-check'
import {beforeAll, describe, expect, it} from 'vitest'

import {asBird16, generateSnapshot} from '../../bench/gen-snapshot.mjs'
import {readSnapshotDir} from '../../src/collect/snapshot-dir.js'
import {keyPrefix, keyPrefixLength, prefixKey} from '../../src/model/prefix-key.js'
import {buildSnapshot} from '../../src/snapshot/build.js'
import {separateHealthy} from '../../src/bulk/healthy.js'
import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import {MULTIPATH_LOST, type SourceFile} from '../../src/model/types.js'
import {renderCheck, renderCheckLines, renderExplain} from '../../src/render/text.js'
import {npdResult} from '../../src/render/npd.js'
import {palette} from '../../src/render/style.js'
import {buildBulkSnapshot, Deferral} from '../../src/bulk/build.js'
import {bulkHealthySource, type BulkHealthySource} from '../../src/services/load.js'
import {FIX_INDEX_OPTIONS, planFix} from '../../src/services/fix.js'
import {checkReport, checkRun, explainReport, type CheckReport} from '../../src/report/report.js'
import {ROOT, scenarioDirs} from '../helpers.js'

function both(files: SourceFile[]): {
  rules: string
  bulk: string
  rulesText: string
  leanText: string
  healthy: number
  broken: number
} {
  const render = (ctx: SnapshotIndex) => {
    const report = checkReport(ctx)
    return `${JSON.stringify(report)}\n${renderCheck(report, palette(false))}`
  }
  // bad input: the same error either way (file, line, what was expected)
  const attempt = (make: () => string) => {
    try {
      return make()
    } catch (error) {
      return `error: ${(error as Error).message}`
    }
  }
  let healthy = 0
  let broken = 0
  // check's text report, as the rules make it: the text part of `rules` (or the same error)
  let rulesText = ''
  const rules = attempt(() => {
    const report = checkReport(new SnapshotIndex(buildSnapshot(files)))
    rulesText = renderCheck(report, palette(false))
    return `${JSON.stringify(report)}\n${rulesText}`
  })
  if (rules.startsWith('error: ')) rulesText = rules
  return {
    rules,
    bulk: attempt(() => {
      // as check makes it: separated, and its big texts dropped (it consumes the list: a copy)
      const separated = buildBulkSnapshot([...files], {}, 'check')
      healthy = separated.healthy?.keys.length ?? 0
      return render(new SnapshotIndex(separated))
    }),
    rulesText,
    // check's text report, made as check makes it: no evidence, no plans (it shows neither), and the prefixes BIRD
    // routes off the tunnel reported in bulk too
    leanText: attempt(() => {
      const separated = buildBulkSnapshot([...files], {}, 'check-text')
      broken = separated.broken?.keys.length ?? 0
      return [
        ...renderCheckLines(
          checkRun(new SnapshotIndex(separated, {evidence: false, texts: false}), {plans: false}),
          palette(false),
        ),
      ].join('\n')
    }),
    get healthy() {
      return healthy
    },
    get broken() {
      return broken
    },
  }
}

// the random-damage properties build many tables; on a loaded machine they run past vitest's default limit
const RANDOM_DAMAGE_TIMEOUT = 180_000

describe('prefix keys', () => {
  it('round-trip canonical IPv4 prefixes, and refuse anything else', () => {
    fc.assert(fc.property(fc.integer({min: 0, max: 2 ** 32 - 1}), fc.integer({min: 0, max: 32}), (v, len) => {
      const network = v - (v % 2 ** (32 - len))
      const text = `${Math.floor(network / 2 ** 24)}.${Math.floor(network / 2 ** 16) % 256}.${Math.floor(network / 256) % 256}.${network % 256}/${len}`
      const key = prefixKey(text)
      expect(keyPrefix(key)).toBe(text)
      expect(keyPrefixLength(key)).toBe(text.length)
    }))
    for (const bad of ['10.0.0.1/26', '10.0.0.0', '10.0.0.0/33', '010.0.0.0/8', 'fd00::/64', '10.0.0.0/08']) expect(prefixKey(bad)).toBe(-1)
  })
})

describe('check separates healthy prefixes in bulk exactly as the rules would', () => {
  it('on every captured snapshot', async () => {
    const dirs = [...scenarioDirs(), ...readdirSync(path.join(ROOT, 'examples')).map((d) => path.join(ROOT, 'examples', d))]
    expect(dirs.length).toBeGreaterThan(5)
    // (small tables: the kernel scan keeps a route's shape, and defers routes, only once shapes repeat)
    for (const dir of dirs) {
      const r = both(await readSnapshotDir(dir))
      expect(r.bulk, dir).toBe(r.rules)
      expect(r.leanText, dir).toBe(r.rulesText)
    }
  })

  let base: Map<string, string>
  let base16: Map<string, string>
  beforeAll(async () => {
    base = await syntheticTexts(400)
    base16 = await syntheticTexts(400, false, true)
  })

  it("on the bench's synthetic table, where most prefixes are reported in bulk", () => {
    const r = both(filesOf(base))
    expect(r.healthy).toBeGreaterThan(250)
    expect(r.bulk).toBe(r.rules)
    expect(r.leanText).toBe(r.rulesText)
  })

  it("on the bench's broken-heavy table, where the prefixes routed over the ECMP underlay or unreachable are reported in bulk", async () => {
    const texts = await syntheticTexts(400, true)
    const r = both(filesOf(texts))
    expect(r.broken).toBeGreaterThan(100) // 30 % of the blocks: multipath over the underlay, unreachable
    expect(r.bulk).toBe(r.rules)
    expect(r.leanText).toBe(r.rulesText)
    expect(r.leanText).toMatch(/not-tunneled {4}tunnel-bypassed-by-ecmp/)
    expect(r.leanText).toMatch(/unreachable {5}nexthop-unresolvable-by-bird/)
    // check --npd reads the same run
    const npd = npdResult(checkRun(new SnapshotIndex(buildBulkSnapshot(filesOf(texts), {}, 'check-text'), {evidence: false, texts: false}), {plans: false}))
    expect(npd).toEqual(npdResult(checkRun(new SnapshotIndex(buildSnapshot(filesOf(texts))))))
    expect(npd.line).toMatch(/\d+ not-tunneled \(10\.\S+ …\)/)
  })

  // Calico's BIRD is the 1.6 fork: its `show route all` takes other parse paths to the same deferrals
  it("on the bench's synthetic tables in BIRD 1.6's format, healthy and broken-heavy", async () => {
    const healthy = both(filesOf(base16))
    expect(healthy.healthy).toBeGreaterThan(250)
    expect(healthy.bulk).toBe(healthy.rules)
    expect(healthy.leanText).toBe(healthy.rulesText)
    const r = both(filesOf(await syntheticTexts(400, true, true)))
    expect(r.healthy).toBeGreaterThan(200)
    expect(r.broken).toBeGreaterThan(100)
    expect(r.bulk).toBe(r.rules)
    expect(r.leanText).toBe(r.rulesText)
    expect(r.leanText).toMatch(/not-tunneled {4}tunnel-bypassed-by-ecmp/)
    expect(r.leanText).toMatch(/unreachable {5}nexthop-unresolvable-by-bird/)
    expect(r.leanText).toMatch(/multipath-lost {2}multipath-lost/)
    expect(r.rules).toContain('BIRD 1.6.8')
  })

  it('where BIRD wrote every route through the underlay, single-path (tunnel-not-programmed), some next hops unreachable', () => {
    const texts = new Map(base)
    const routes = JSON.parse(texts.get(KERNEL_FILE)!) as Array<Record<string, unknown>>
    for (const r of routes) {
      if (r.dev !== 'tunl0' || r.protocol !== 'bird') continue
      r.gateway = '172.31.11.1'
      r.dev = 'eth0'
      r.flags = []
    }
    texts.set(KERNEL_FILE, JSON.stringify(routes))
    const r = both(filesOf(texts))
    expect(r.broken).toBeGreaterThan(250)
    expect(r.leanText).toBe(r.rulesText)
    expect(r.leanText).toMatch(/not-tunneled {4}tunnel-not-programmed/)
    // a next hop the kernel cannot reach: those prefixes go to the rules (nexthop-unreachable, unreachable)
    const far = new Map(texts)
    for (let at = 100; at < 110; at++) far.set(BIRD_FILE, damageBird(far.get(BIRD_FILE)!, [{kind: 'nexthop-far', at}]))
    const f = both(filesOf(far))
    expect(f.broken).toBeLessThan(r.broken)
    expect(f.leanText).toBe(f.rulesText)
    expect(f.leanText).toMatch(/unreachable +nexthop-unreachable/)
  })

  it('when a path deferred is parsed after all, with lines the framer drops inside it', () => {
    // a next hop the kernel cannot reach (no default route): deferred while parsing, then not separated, and read again
    for (const inside of ['async-inside', 'banner-inside', 'blank-inside'] as const) {
      // most blocks are healthy ones, deferred (not the first few, whose kernel routes the scan built): a few of them
      for (const at of [100, 102, 105]) {
        const texts = new Map(base)
        texts.set(BIRD_FILE, damageBird(texts.get(BIRD_FILE)!, [{kind: 'nexthop-far', at}, {kind: inside, at}]))
        const r = both(filesOf(texts))
        expect(r.bulk, `${inside} at ${at}`).toBe(r.rules)
      }
    }
  })

  it('with most of the table outside the pools, which check does not keep (a route reflector full table outside them)', () => {
    // 16 of the 400 blocks in the pool: the other routes are read only if they resolve a next hop (none does)
    const texts = new Map(base)
    texts.set('ippools.yaml', texts.get('ippools.yaml')!.replace('cidr: 10.0.0.0/8', 'cidr: 10.0.0.0/22'))
    const r = both(filesOf(texts))
    expect(r.bulk).toBe(r.rules)
    expect(r.leanText).toBe(r.rulesText)
    const kept = buildBulkSnapshot(filesOf(texts), {}, 'check')
    const outside = (dst: string) => dst.startsWith('10.') && !dst.startsWith('10.0.0.') && !dst.startsWith('10.0.1.') && !dst.startsWith('10.0.2.') && !dst.startsWith('10.0.3.')
    expect(kept.kernelRoutes.filter((k) => outside(k.dst))).toEqual([])
    expect(kept.bird.routes.filter((b) => outside(b.prefix))).toEqual([])
    // BIRD's single BGP paths out there were never built: deferred while parsing, and not read back when separated
    // (a network with several paths is built, and let go of after)
    const deferral = new Deferral()
    const separated = separateHealthy(buildSnapshot(filesOf(texts), {defer: deferral, consume: true}), deferral.routes)
    const builtOutside = separated.bird.routes.filter((b) => outside(b.prefix))
    expect(buildSnapshot(filesOf(texts)).bird.routes.filter((b) => outside(b.prefix)).length).toBeGreaterThan(300)
    expect(builtOutside.length).toBeLessThan(20)
    for (const b of builtOutside)
      expect(separated.bird.routes.filter((o) => o.prefix === b.prefix).length, b.prefix).toBeGreaterThan(1)
    // what resolves the next hops stays: the underlay's routes to the nodes, and the links those go through
    const full = buildSnapshot(filesOf(texts))
    const underlay = full.kernelRoutes.filter((k) => k.dst.startsWith('172.'))
    expect(underlay.length).toBeGreaterThan(4)
    expect(kept.kernelRoutes.filter((k) => k.dst.startsWith('172.')).map((k) => k.dst)).toEqual(underlay.map((k) => k.dst))
  })

  it("with the kernel's routes outside the pools, deferred, unbuilt: only those that resolve a next hop, in turn, are built", () => {
    // a rack's route goes via 198.51.150.9, which 198.51.150.0/24 resolves via 192.0.40.1, which 192.0.40.0/24 holds:
    // routes of two shapes repeated 200 and 50 times, deferred once the scan keeps their shape
    const texts = new Map(base)
    texts.set('ippools.yaml', texts.get('ippools.yaml')!.replace('cidr: 10.0.0.0/8', 'cidr: 10.0.0.0/22'))
    const routes = JSON.parse(texts.get(KERNEL_FILE)!) as Array<Record<string, unknown>>
    const rack = routes.find((r) => r.dst === '172.20.2.0/24')!
    expect(rack.gateway).toBeDefined()
    rack.gateway = '198.51.150.9'
    for (let i = 0; i < 200; i++) routes.push({type: 'unicast', dst: `198.51.${i}.0/24`, gateway: '192.0.40.1', dev: 'eth0', table: 'main', protocol: 'static', scope: 'global', flags: []})
    for (let i = 0; i < 50; i++) routes.push({type: 'unicast', dst: `192.0.${i}.0/24`, dev: 'eth0', table: 'main', protocol: 'static', scope: 'link', flags: []})
    texts.set(KERNEL_FILE, JSON.stringify(routes))
    const r = both(filesOf(texts))
    expect(r.bulk).toBe(r.rules)
    expect(r.leanText).toBe(r.rulesText)

    const added = (dst: string) => dst.startsWith('198.51.') || dst.startsWith('192.0.')
    expect(buildSnapshot(filesOf(texts)).kernelRoutes.filter((k) => added(k.dst))).toHaveLength(250)
    const deferral = new Deferral()
    const built = buildSnapshot(filesOf(texts), {defer: deferral, consume: true})
    expect(built.kernelRoutes.filter((k) => added(k.dst)).map((k) => k.dst)).not.toContain('198.51.150.0/24')
    expect(built.kernelRoutes.filter((k) => added(k.dst)).length).toBeLessThan(40) // before the scan keeps a shape
    expect(deferral.routes.outsidePool?.size).toBeGreaterThan(210)
    // separated: read back where the chain leads, in the file's order; check then keeps that chain only
    const separated = separateHealthy(built, deferral.routes).kernelRoutes
    const dsts = separated.filter((k) => added(k.dst)).map((k) => k.dst)
    expect(dsts.length).toBeLessThan(40)
    expect(dsts.indexOf('198.51.150.0/24')).toBeGreaterThan(-1)
    expect(dsts.indexOf('192.0.40.0/24')).toBe(dsts.length - 1) // the file's last of those, after every 198.51
    expect(dsts.indexOf('198.51.150.0/24')).toBe(dsts.findIndex((d) => d.startsWith('192.')) - 1)
    expect(separated.map((k) => k.dst).indexOf('198.51.150.0/24')).toBeGreaterThan(separated.map((k) => k.dst).indexOf('172.20.9.0/24'))
    const kept = buildBulkSnapshot(filesOf(texts), {}, 'check').kernelRoutes.filter((k) => added(k.dst)).map((k) => k.dst)
    expect(kept).toEqual(['198.51.150.0/24', '192.0.40.0/24'])
  })

  it('reports the same error first when the pools and the kernel routes are both wrong (check reads the pools first)', () => {
    const texts = new Map(base)
    texts.set('ippools.yaml', texts.get('ippools.yaml')!.replace('cidr: 10.0.0.0/8', 'cidr: 10.0.0.0/88'))
    const pools = both(filesOf(texts))
    expect(pools.bulk).toMatch(/^error: .*ippools\.yaml/)
    expect(pools.bulk).toBe(pools.rules)
    texts.set(KERNEL_FILE, texts.get(KERNEL_FILE)!.replace('"dst":"10.0.0.64/26"', '"dst":"10.0.0.64/2x"'))
    const r = both(filesOf(texts))
    expect(r.rules).toMatch(/^error: .*ip-j-d-route\.json/)
    expect(r.bulk).toBe(r.rules)
    expect(r.leanText).toBe(r.rulesText)
  })

  it(
    'on that table with BIRD paths and kernel routes damaged at random, its pool whole or holding only a part of it',
    () => {
      const birdDamage = fc.record({kind: fc.constantFrom(...BIRD_DAMAGE), at: fc.nat()})
      const kernelDamage = fc.record({kind: fc.constantFrom(...KERNEL_DAMAGE), at: fc.nat()})
      // a pool of /8 holds every block; from /20 most are outside it, where only the underlay resolving next hops is
      // read
      const poolLength = fc.constantFrom(8, 20, 22, 23, 24, 25)
      fc.assert(
        fc.property(
          fc.array(birdDamage, {maxLength: 5}),
          fc.array(kernelDamage, {maxLength: 5}),
          poolLength,
          fc.boolean(),
          fc.boolean(),
          (bird, kernel, len, rule, bird16) => {
            const texts = new Map(base)
            // the overlay's rule: a prefix the overlay table holds is then in force from there
            if (rule)
              texts.set(
                'ip-rule.txt',
                '0:\tfrom all lookup local\n32000:\tfrom all to 10.0.0.0/8 lookup 1158\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default\n',
              )
            texts.set('ippools.yaml', texts.get('ippools.yaml')!.replace('cidr: 10.0.0.0/8', `cidr: 10.0.0.0/${len}`))
            texts.set(BIRD_FILE, damageBird(texts.get(BIRD_FILE)!, bird))
            texts.set(KERNEL_FILE, damageKernel(texts.get(KERNEL_FILE)!, kernel))
            if (bird16) {
              // the same damage, as BIRD 1.6 prints the routes
              for (const name of ['birdc-show-status.txt', 'birdc-show-protocols-all.txt']) texts.set(name, base16.get(name)!)
              texts.set(BIRD_FILE, asBird16(texts.get(BIRD_FILE)!))
            }
            const r = both(filesOf(texts))
            expect(r.bulk).toBe(r.rules)
            expect(r.leanText).toBe(r.rulesText)
          },
        ),
        {numRuns: 40},
      )
    },
    RANDOM_DAMAGE_TIMEOUT,
  )
})

const rulesIndexes = new WeakMap<SourceFile[], SnapshotIndex | Error>()

/** The rules' SnapshotIndex of `files`, built once for every query about them, or the error building it gives. */
function rulesIndex(files: SourceFile[]): SnapshotIndex {
  let ctx = rulesIndexes.get(files)
  if (ctx === undefined) {
    try {
      ctx = new SnapshotIndex(buildSnapshot(files))
    } catch (error) {
      ctx = error as Error
    }
    rulesIndexes.set(files, ctx)
  }
  if (ctx instanceof Error) throw ctx
  return ctx
}

describe("check's text report separates multipath-lost prefixes in bulk exactly as the rules would", () => {
  let broken: Map<string, string>
  beforeAll(async () => {
    broken = await syntheticTexts(400, true)
  })
  const multipathLost = (texts: Map<string, string>) =>
    buildBulkSnapshot(filesOf(texts), {}, 'check-text').broken?.kinds.filter((k) => k === MULTIPATH_LOST).length ?? 0

  it("on the bench's broken-heavy table: two equal paths, the kernel's tunnel route to one of them", () => {
    const r = both(filesOf(broken))
    expect(multipathLost(broken)).toBeGreaterThan(30) // 10 % of the blocks
    expect(r.leanText).toBe(r.rulesText)
    expect(r.leanText).toMatch(/multipath-lost {2}multipath-lost/)
    // the kernel's route to the other path's next hop: the same finding
    const texts = new Map(broken)
    texts.set(KERNEL_FILE, damageMultipathLost(texts, [{kind: 'kernel-to-second', at: 0}, {kind: 'kernel-to-second', at: 5}]))
    expect(multipathLost(texts)).toBe(multipathLost(broken))
    const k = both(filesOf(texts))
    expect(k.leanText).toBe(k.rulesText)
  })

  it(
    'on that table with the second paths, and the kernel routes of their prefixes, damaged at random',
    () => {
      const damage = fc.record({kind: fc.constantFrom(...SECOND_PATH_DAMAGE), at: fc.nat()})
      const birdDamage = fc.record({kind: fc.constantFrom(...BIRD_DAMAGE), at: fc.nat()})
      const kernelDamage = fc.record({kind: fc.constantFrom(...KERNEL_DAMAGE), at: fc.nat()})
      fc.assert(
        fc.property(
          fc.array(damage, {minLength: 1, maxLength: 6}),
          fc.array(birdDamage, {maxLength: 2}),
          fc.array(kernelDamage, {maxLength: 2}),
          (second, bird, kernel) => {
            const texts = new Map(broken)
            texts.set(KERNEL_FILE, damageMultipathLost(texts, second.filter((d) => d.kind.startsWith('kernel-'))))
            texts.set(BIRD_FILE, damageSecondPaths(texts.get(BIRD_FILE)!, second.filter((d) => !d.kind.startsWith('kernel-'))))
            texts.set(BIRD_FILE, damageBird(texts.get(BIRD_FILE)!, bird))
            texts.set(KERNEL_FILE, damageKernel(texts.get(KERNEL_FILE)!, kernel))
            const r = both(filesOf(texts))
            expect(r.leanText).toBe(r.rulesText)
          },
        ),
        {numRuns: 25},
      )
    },
    RANDOM_DAMAGE_TIMEOUT,
  )
})

/**
 * `explain QUERY` as the rules make it on every route, and as explain makes it (everything separated but QUERY's
 * prefixes): the JSON report and its text, or the same error.
 */
function explainBoth(
  files: SourceFile[],
  query: string,
  held: BulkHealthySource | Error = heldOf(files),
): {rules: string; separated: string; held: string} {
  const render = (ctx: SnapshotIndex) => {
    try {
      const report = explainReport(ctx, query)
      return `${JSON.stringify(report)}\n${renderExplain(report, palette(false))}`
    } catch (error) {
      return `error: ${(error as Error).message}`
    }
  }
  const build = (make: () => SnapshotIndex) => {
    try {
      return render(make())
    } catch (error) {
      return `error: ${(error as Error).message}`
    }
  }
  return {rules: build(() => rulesIndex(files)), separated: build(() => new SnapshotIndex(buildBulkSnapshot(files, {}, 'query').keeping(query))), held: build(() => snapshotIndexOf(held, query))}
}

/**
 * The interactive UI's BulkHealthySource of `files` (one parse, separated again per query), or the error its parse
 * gives.
 */
function heldOf(files: SourceFile[]): BulkHealthySource | Error {
  try {
    return bulkHealthySource(buildBulkSnapshot(files, {}, 'query'))
  } catch (error) {
    return error as Error
  }
}

function snapshotIndexOf(held: BulkHealthySource | Error, query: string): SnapshotIndex {
  if (held instanceof Error) throw held
  return held.indexFor(query)
}

/** What the UI's list shows of a check report: verdicts, finding ids and severities, plans; host findings' texts. */
function listOf(report: CheckReport): string {
  return JSON.stringify({
    prefixes: report.prefixes.map((p) => ({
      prefix: p.prefix,
      verdict: p.verdict,
      findings: p.findings.map((f) => `${f.severity} ${f.id} ${f.prefix ?? ''}`),
      plan: p.plan,
    })),
    host: report.host.findings.map((f) => ({
      id: f.id,
      severity: f.severity,
      title: f.title,
      detail: f.detail,
      fix: f.fix,
    })),
    summary: report.summary,
  })
}

/** The list as the rules make it, and as the UI makes it (BulkHealthySource.list), or the same error. */
function listBoth(files: SourceFile[], held: BulkHealthySource | Error): {rules: string; held: string} {
  const list = (make: () => SnapshotIndex) => {
    try {
      return listOf(checkReport(make()))
    } catch (error) {
      return `error: ${(error as Error).message}`
    }
  }
  return {rules: list(() => rulesIndex(files)), held: list(() => {
    if (held instanceof Error) throw held
    return held.list
  })}
}

/**
 * `fix [PREFIX]`'s plan as the rules make it on every route (with every finding's texts and evidence), and as fix
 * makes it (separated but PREFIX, no texts or evidence): report and items, or the same error.
 */
function fixBoth(
  files: SourceFile[],
  only?: string,
  held?: BulkHealthySource | Error,
): {rules: string; separated: string; held?: string} {
  const plan = (make: () => SnapshotIndex) => {
    try {
      const {report, items} = planFix(make(), only)
      return JSON.stringify({report, items})
    } catch (error) {
      return `error: ${(error as Error).message}`
    }
  }
  const rules = plan(() => rulesIndex(files))
  const separated = plan(
    () => new SnapshotIndex(buildBulkSnapshot(files, {}, 'query').keeping(only), FIX_INDEX_OPTIONS),
  )
  return held === undefined || only === undefined
    ? {rules, separated}
    : {rules, separated, held: plan(() => snapshotIndexOf(held, only))}
}

/**
 * Queries about a table's prefixes: each prefix, an address inside it, its network address, and some that match
 * nothing.
 */
function queriesOf(files: SourceFile[]): string[] {
  let prefixes: string[] = []
  try {
    prefixes = checkReport(rulesIndex(files)).prefixes.map((p) => p.prefix)
  } catch {
    prefixes = ['10.0.0.64/26', '10.0.1.0/26'] // bad input: explain gives the same error either way
  }
  const out = ['203.0.113.0/24', '203.0.113.9', 'fd00::/64', '10.255.255.255']
  for (const p of prefixes) {
    out.push(p)
    const [addr] = p.split('/')
    if (!addr.includes(':')) out.push(addr, addr.replace(/\.(\d+)$/, (_, o: string) => `.${Number(o) + 1}`))
  }
  return out
}

describe('explain, fix and the UI separate every prefix but the one asked about, and list, explain and plan as the rules do', () => {
  it('on every captured snapshot, for each of its prefixes and addresses inside them', async () => {
    const dirs = [...scenarioDirs(), ...readdirSync(path.join(ROOT, 'examples')).map((d) => path.join(ROOT, 'examples', d))]
    for (const dir of dirs) {
      const files = await readSnapshotDir(dir)
      const held = heldOf(files) // the UI's: one for every query, as the UI keeps it
      const list = listBoth(files, held)
      expect(list.held, `list ${dir}`).toBe(list.rules)
      for (const q of queriesOf(files)) {
        const r = explainBoth(files, q, held)
        expect(r.separated, `${dir} ${q}`).toBe(r.rules)
        expect(r.held, `ui ${dir} ${q}`).toBe(r.rules)
        if (q.includes('/')) {
          const f = fixBoth(files, q, held)
          expect(f.separated, `fix ${dir} ${q}`).toBe(f.rules)
          expect(f.held, `ui fix ${dir} ${q}`).toBe(f.rules)
        }
      }
      const all = fixBoth(files)
      expect(all.separated, `fix ${dir}`).toBe(all.rules)
    }
  })

  let texts: Map<string, string>
  beforeAll(async () => {
    texts = await syntheticTexts(300)
  })

  it(
    "on the bench's synthetic table, damaged at random, for prefixes and addresses healthy or not",
    () => {
      const birdDamage = fc.record({kind: fc.constantFrom(...BIRD_DAMAGE), at: fc.nat()})
      const kernelDamage = fc.record({kind: fc.constantFrom(...KERNEL_DAMAGE), at: fc.nat()})
      let bulkSome = false
      fc.assert(
        fc.property(
          fc.array(birdDamage, {maxLength: 4}),
          fc.array(kernelDamage, {maxLength: 4}),
          fc.array(fc.nat(), {minLength: 6, maxLength: 6}),
          (bird, kernel, picks) => {
            const t = new Map(texts)
            t.set(BIRD_FILE, damageBird(t.get(BIRD_FILE)!, bird))
            t.set(KERNEL_FILE, damageKernel(t.get(KERNEL_FILE)!, kernel))
            const files = filesOf(t)
            const queries = queriesOf(files)
            const held = heldOf(files)
            const list = listBoth(files, held)
            expect(list.held, 'list').toBe(list.rules)
            for (const n of picks) {
              const q = queries[n % queries.length]
              const r = explainBoth(files, q, held)
              expect(r.separated, q).toBe(r.rules)
              expect(r.held, `ui ${q}`).toBe(r.rules)
              if (q.includes('/')) {
                const f = fixBoth(files, q, held)
                expect(f.separated, `fix ${q}`).toBe(f.rules)
                expect(f.held, `ui fix ${q}`).toBe(f.rules)
              }
            }
            const all = fixBoth(files)
            expect(all.separated, 'fix').toBe(all.rules)
            try {
              bulkSome ||= (buildBulkSnapshot(files, {}, 'query').keeping(queries[0]).healthy?.keys.length ?? 0) > 200
            } catch {
              // bad input: compared above, as the same error
            }
          },
        ),
        {numRuns: 10},
      )
      expect(bulkSome).toBe(true) // most of the table really was separated around the prefix explained
    },
    RANDOM_DAMAGE_TIMEOUT,
  )
})

const BIRD_FILE = 'birdc-show-route-all.txt'
const KERNEL_FILE = 'ip-j-d-route.json'

/** The bench's synthetic snapshot of `count` routes, file name -> text. */
async function syntheticTexts(count: number, broken = false, bird16 = false): Promise<Map<string, string>> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rd-healthy-'))
  try {
    await generateSnapshot(count, dir, {broken, bird16})
    return new Map((await readSnapshotDir(dir)).map((f) => [f.name, f.text ?? '']))
  } finally {
    rmSync(dir, {recursive: true, force: true})
  }
}

function filesOf(texts: Map<string, string>): SourceFile[] {
  return [...texts].map(([name, text]) => ({name, text}))
}

const BIRD_DAMAGE = ['delete', 'secondary', 'again-later', 'nexthop-far', 'nexthop-v6', 'nexthop-other', 'nexthop-in-pool', 'static', 'unreachable', 'not-primary', 'sync-failed', 'other-table',
  'continuation', 'crlf', 'blank-inside', 'nexthop-twice', 'nexthop-pair', 'bad-via', 'no-colon', 'odd-indent', 'async-inside', 'banner-inside',
  'kernel-learnt'] as const

/** Damage the pool networks' blocks of a birdc dump (a header line and its TAB lines). */
function damageBird(text: string, damage: Array<{kind: (typeof BIRD_DAMAGE)[number]; at: number}>): string {
  const lines = text.split('\n')
  for (const {kind, at} of damage) {
    const heads = lines.flatMap((l, i) => (l.startsWith('10.') ? [i] : []))
    if (heads.length === 0) break
    const h = heads[at % heads.length]
    let end = h + 1
    while (end < lines.length && lines[end].startsWith('\t')) end++
    const block = lines.slice(h, end)
    const prefix = block[0].slice(0, block[0].indexOf(' '))
    const edit = (from: RegExp, to: string) => lines.splice(h, end - h, ...block.map((l) => l.replace(from, to)))
    switch (kind) {
      case 'delete': lines.splice(h, end - h); break
      case 'secondary': lines.splice(end, 0, ' '.repeat(prefix.length) + block[0].slice(prefix.length).replace(' * ', ' '), ...block.slice(1)); break
      case 'again-later': lines.push('Table master4:', ...block); break
      case 'nexthop-far': edit(/^\tBGP\.next_hop: .*/, '\tBGP.next_hop: 198.51.100.7'); break
      case 'nexthop-v6': edit(/^\tBGP\.next_hop: .*/, '\tBGP.next_hop: 2001:db8::7'); break
      case 'nexthop-other': edit(/^\tBGP\.next_hop: .*/, '\tBGP.next_hop: 172.20.5.20'); break
      case 'nexthop-in-pool': {
        // an address inside another pool block: the kernel resolves it through that block's tunnel route
        const other = lines[heads[(at * 7 + 3) % heads.length]]
        edit(/^\tBGP\.next_hop: .*/, `\tBGP.next_hop: ${other.slice(0, other.indexOf('/')).replace(/\.(\d+)$/, (_, o: string) => `.${Number(o) + 1}`)}`)
        break
      }
      case 'static': edit(/^\tType: BGP/, '\tType: static'); break
      case 'unreachable': edit(/^(\S+\s+)unicast/, '$1unreachable'); break
      case 'not-primary': edit(/\] \* \(/, '] ('); break
      case 'sync-failed': edit(/\] \* \(/, '] ! ('); break
      case 'other-table': lines.splice(h, end - h); lines.push('Table t_other:', ...block); break
      case 'continuation': lines.splice(end, 0, '\t\t(64512,1) (64512,2)'); break
      case 'crlf': lines.splice(h, end - h, ...block.map((l) => `${l}\r`)); break
      case 'blank-inside': lines.splice(h + 2, 0, ''); break
      case 'nexthop-twice': lines.splice(end, 0, '\tBGP.next_hop: 172.20.5.20'); break
      case 'nexthop-pair': edit(/^\tBGP\.next_hop: (.*)/, '\tBGP.next_hop: $1 fe80::1'); break
      case 'bad-via': lines.splice(h + 1, 0, '\tvia 999.1.1.1 on eth0'); break
      case 'no-colon': lines.splice(end, 0, '\tgarbage'); break
      case 'odd-indent': lines.splice(end, 0, '\t BGP.med: 5'); break
      // what the framer drops inside a network's lines: birdc's rendering of an asynchronous message, a banner
      case 'async-inside': lines.splice(h + 2, 0, '>>> Reconfigured'); break
      case 'banner-inside': lines.splice(h + 2, 0, 'BIRD 2.0.12 ready.'); break
      // a path BIRD's kernel protocol learnt (a routedoctor route of an earlier version), not a BGP path
      case 'kernel-learnt':
        lines.splice(h, end - h, block[0].replace(/\[\S+/, '[kernel1').replace(/\(\d+(\/\?)?\)( \[\S+\])?/, '(10)'),
          ...block.slice(1).filter((l) => !l.startsWith('\tBGP.')).map((l) => l.replace(/^\tType: BGP.*/, '\tType: inherit univ')), '\tKernel.source: 158')
        break
    }
  }
  return lines.join('\n')
}

const KERNEL_DAMAGE = ['delete', 'dev', 'no-onlink', 'linkdown', 'felix', 'felix-too', 'static', 'table', 'unreachable', 'metric', 'gateway', 'host-bits', 'prefsrc', 'cover-nexthops', 'local-copy',
  'overlay', 'overlay-other', 'ours-in-main'] as const

/** Damage the pool routes of a one-line `ip -j -d route` dump (iproute2's key order kept). */
function damageKernel(text: string, damage: Array<{kind: (typeof KERNEL_DAMAGE)[number]; at: number}>): string {
  const routes = JSON.parse(text) as Array<Record<string, unknown>>
  for (const {kind, at} of damage) {
    const pool = routes.flatMap((r, i) => (String(r.dst).startsWith('10.') ? [i] : []))
    if (pool.length === 0) break
    const i = pool[at % pool.length]
    const r = routes[i]
    switch (kind) {
      case 'delete': routes.splice(i, 1); break
      case 'dev': r.dev = 'eth0'; break
      case 'no-onlink': r.flags = []; break
      case 'linkdown': r.flags = ['onlink', 'linkdown']; break
      case 'felix': r.protocol = '80'; break
      case 'felix-too': routes.push({...r, protocol: '80', metric: 1}); break
      case 'static': r.protocol = 'static'; break
      case 'table': r.table = '1000'; break
      case 'unreachable': routes[i] = {type: 'unreachable', dst: r.dst, table: 'main', protocol: 'bird', scope: 'global', metric: 32, flags: []}; break
      case 'metric': r.metric = 7; break
      case 'gateway': r.gateway = '198.51.100.9'; break
      case 'host-bits': r.dst = String(r.dst).replace(/\.(\d+)\//, (_, o: string) => `.${Number(o) + 1}/`); break
      case 'prefsrc': r.prefsrc = '10.0.0.1'; break
      // BIRD's tunnel shape, covering BGP next hops: it takes part in resolving them
      case 'cover-nexthops': routes.splice(i, 0, {type: 'unicast', dst: '172.20.0.0/16', gateway: '172.31.11.1', dev: 'tunl0', table: 'main', protocol: 'bird', scope: 'global', metric: 32, flags: ['onlink']}); break
      case 'local-copy': routes.push({type: 'local', dst: r.dst, dev: 'lo', table: 'local', protocol: 'kernel', scope: 'host', prefsrc: '10.0.0.1', flags: []}); break
      // routedoctor's routes: in the overlay table (right, or to another endpoint), and one of an earlier version in
      // main
      case 'overlay': routes.push({...r, table: '1158', protocol: '158', metric: undefined}); break
      case 'overlay-other': routes.push({...r, gateway: '172.20.5.20', table: '1158', protocol: '158', metric: undefined}); break
      case 'ours-in-main': routes.push({...r, protocol: '158', metric: 31}); break
    }
  }
  return JSON.stringify(routes)
}

const SECOND_PATH_DAMAGE = ['local-pref', 'as-path', 'med', 'preference', 'same-hop', 'far', 'own', 'v6-hop', 'unreachable',
  'static', 'primary-too', 'third', 'delete', 'kernel-to-second', 'kernel-elsewhere', 'kernel-both'] as const

/** Damage the second paths of a birdc dump (an indented header and its TAB lines): of two equal paths, one. */
function damageSecondPaths(
  text: string,
  damage: Array<{kind: (typeof SECOND_PATH_DAMAGE)[number]; at: number}>,
): string {
  const lines = text.split('\n')
  for (const {kind, at} of damage) {
    const heads = lines.flatMap((l, i) => (l.startsWith(' ') && l.trimStart().startsWith('unicast') ? [i] : []))
    if (heads.length === 0) break
    const h = heads[at % heads.length]
    let end = h + 1
    while (end < lines.length && lines[end].startsWith('\t')) end++
    const block = lines.slice(h, end)
    const edit = (from: RegExp, to: string) => lines.splice(h, end - h, ...block.map((l) => l.replace(from, to)))
    const hop = (to: string) => edit(/^\tBGP\.next_hop: .*/, `\tBGP.next_hop: ${to}`)
    switch (kind) {
      case 'local-pref': edit(/^\tBGP\.local_pref: .*/, '\tBGP.local_pref: 200'); break
      case 'as-path': edit(/^\tBGP\.as_path: .*/, '\tBGP.as_path: 64513'); break
      case 'med': lines.splice(end, 0, '\tBGP.med: 5'); break
      case 'preference': edit(/\(100\/\?\)/, '(90/?)'); break
      case 'same-hop': {
        let p = h - 1
        while (p > 0 && !/^\tBGP\.next_hop: /.test(lines[p])) p--
        hop(lines[p].slice('\tBGP.next_hop: '.length))
        break
      }
      case 'far': hop('198.51.100.7'); break
      case 'own': hop('172.31.11.3'); break
      case 'v6-hop': hop('2001:db8::7'); break
      case 'unreachable': edit(/^( +)unicast/, '$1unreachable'); break
      case 'static': edit(/^\tType: BGP/, '\tType: static'); break
      case 'primary-too': edit(/\] \(/, '] * ('); break
      case 'third': lines.splice(end, 0, ...block.map((l) => l.replace(/^\tBGP\.next_hop: .*/, '\tBGP.next_hop: 172.20.7.30'))); break
      case 'delete': lines.splice(h, end - h); break
      default: break
    }
  }
  return lines.join('\n')
}

/**
 * The kernel's routes of prefixes whose BIRD paths are two (a primary header, then an indented one), damaged: to the
 * second path's next hop, to a node neither names, or multipath to both.
 */
function damageMultipathLost(
  texts: Map<string, string>,
  damage: Array<{kind: (typeof SECOND_PATH_DAMAGE)[number]; at: number}>,
): string {
  const routes = JSON.parse(texts.get(KERNEL_FILE)!) as Array<Record<string, unknown>>
  if (damage.length === 0) return JSON.stringify(routes)
  const lines = texts.get(BIRD_FILE)!.split('\n')
  const second = new Map<string, string>() // prefix -> the second path's next hop
  let prefix = ''
  let inSecond = false
  for (const l of lines) {
    if (l.startsWith('10.')) [prefix, inSecond] = [l.slice(0, l.indexOf(' ')), false]
    else if (l.startsWith(' ')) inSecond = true
    else if (inSecond && l.startsWith('\tBGP.next_hop: ')) second.set(prefix, l.slice('\tBGP.next_hop: '.length))
  }
  const at = routes.flatMap((r, i) => (second.has(String(r.dst)) ? [i] : []))
  for (const {kind, at: k} of damage) {
    if (at.length === 0) break
    const r = routes[at[k % at.length]]
    const n2 = second.get(String(r.dst))!
    switch (kind) {
      case 'kernel-to-second': r.gateway = n2; break
      case 'kernel-elsewhere': r.gateway = '172.20.7.30'; break
      case 'kernel-both': {
        const hops = [r.gateway, n2].map((g) => ({gateway: g, dev: 'tunl0', weight: 1, flags: ['onlink']}))
        delete r.gateway
        delete r.dev
        r.flags = []
        r.nexthops = hops
        break
      }
      default: break
    }
  }
  return JSON.stringify(routes)
}
