// The overlay plan (DESIGN §5) and the findings about routedoctor's own routes, on real captures edited in
// memory: a correction in force and right, one gone stale (the block moved; BIRD's own route right now), a
// correction of an earlier version in `main` that BIRD learnt and advertises, and the refusals.
import {describe, expect, it} from 'vitest'

import {diagnosePrefix} from '../../src/diagnose/engine.js'
import {buildSnapshot} from '../../src/snapshot/build.js'
import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import {RouteDoctorError} from '../../src/model/errors.js'
import type {SourceFile} from '../../src/model/types.js'
import {parseBirdConf} from '../../src/parse/bird-conf.js'
import {parseIpRule} from '../../src/parse/ip-rule.js'
import {explainReport} from '../../src/report/report.js'
import {planFix} from '../../src/services/fix.js'
import {BIRD16, BIRD2, LAB_HEALTHY, PEER_DOWN, editFile, editJsonRoutes, expectRealEvidence, fileText, loadFiles, replaceOnce} from '../diagnose/helpers.js'

const BLOCK = '192.168.110.128/26'
const RULES = '0:\tfrom all lookup local\n32000:\tfrom all to 192.168.0.0/16 lookup 1158\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default\n'
const ours = (gateway: string, table = '1158', metric?: number) => ({
  type: 'unicast', dst: BLOCK, gateway, dev: 'tunl0', table, protocol: '158', scope: 'global', ...(metric !== undefined ? {metric} : {}), flags: ['onlink'],
})
const withRules = (files: SourceFile[]) => [...files.filter((f) => f.name !== 'ip-rule.txt'), {name: 'ip-rule.txt', text: RULES}]
const ctxOf = (files: SourceFile[], opts = {}) => new SnapshotIndex(buildSnapshot(files), opts)
const idsOf = (ctx: SnapshotIndex, prefix = BLOCK) => diagnosePrefix(ctx, prefix).findings.map((f) => f.id)

/** Calico's export filter (DESIGN §8): accepts every pool prefix, whatever its source. */
const calicoShaped = (files: SourceFile[]) => editFile(files, 'bird.conf', (t) => replaceOnce(t,
  'filter calico_export_to_bgp_peers {\n  if net ~ [ 192.168.0.0/16{26,32} ] && source = RTS_STATIC then accept;\n  reject;\n}',
  'function calico_aggr() {\n  if ( net = 192.168.162.128/26 ) then { accept; }\n  if ( net ~ 192.168.162.128/26 ) then { reject; }\n}\n' +
  'filter calico_export_to_bgp_peers {\n  calico_aggr();\n  if ( net ~ 192.168.0.0/16 ) then { accept; }\n  reject;\n}'))

describe('ip rule and policy routing', () => {
  it('parses selectors and actions', () => {
    const rules = parseIpRule(RULES + '100:\tfrom 10.0.0.0/8 lookup 7\n200:\tfrom all fwmark 0x1 lookup 8\n300:\tnot from all to 10.1.0.0/16 lookup 9\n')
    const overlay = rules.find((r) => r.priority === 32000)!
    expect([overlay.to, overlay.table, overlay.action, overlay.otherSelectors]).toEqual(['192.168.0.0/16', '1158', 'lookup', undefined])
    expect(rules.find((r) => r.priority === 100)!.from).toBe('10.0.0.0/8')
    expect(rules.find((r) => r.priority === 200)!.otherSelectors).toBe(true)
    expect(rules.find((r) => r.priority === 300)!.otherSelectors).toBe(true)
  })

  it('the route in force follows the rules: the overlay table before main, main when the overlay lacks the prefix', () => {
    const files = withRules(editJsonRoutes(loadFiles(BIRD2), {}, [ours('172.31.20.5')]))
    const ctx = ctxOf(files)
    const f = ctx.facts(BLOCK)
    expect([f.effective?.table, f.effective?.protocol, f.rule?.priority]).toEqual(['1158', '158', 32000])
    expect(ctx.facts('192.168.82.0/26').effective?.table).toBe('main')
    expect(ctx.fib.lookup('192.168.110.130').tableId).toBe(1158)
    expect(ctx.fib.lookup('172.31.20.5').tableId).toBe(254)
    // without the rule the overlay table is never looked up
    expect(ctxOf(editJsonRoutes(loadFiles(BIRD2), {}, [ours('172.31.20.5')])).facts(BLOCK).effective?.table).toBe('main')
  })

  it('explain shows the rule step when a rule decides', () => {
    const files = withRules(editJsonRoutes(loadFiles(BIRD2), {}, [ours('172.31.20.5')]))
    const r = explainReport(ctxOf(files), BLOCK)
    const rule = r.chain.find((s) => s.step === 'rule')!
    expect(rule.summary).toContain('32000: from all to 192.168.0.0/16 lookup 1158')
    expect(rule.evidence.map((e) => [e.file, e.line])).toEqual([['ip-rule.txt', 2]])
    expect(r.chain.find((s) => s.step === 'kernel')!.summary.split('\n')[0]).toContain('table 1158')
    // no rule step when the kernel's own rules decide
    expect(explainReport(ctxOf(loadFiles(BIRD2)), BLOCK).chain.map((s) => s.step)).not.toContain('rule')
  })
})

describe('the overlay plan', () => {
  it('plans the correction into the overlay table with its rule; nothing goes into main', () => {
    const {report} = planFix(ctxOf(loadFiles(BIRD2)))
    const route = report.routes.find((r) => r.dst === BLOCK)!
    expect([route.action, route.table, route.metric, route.protocol]).toEqual(['replace', 1158, 0, '158'])
    expect(route.nexthops).toEqual([{gateway: '172.31.20.5', dev: 'tunl0', onlink: true, weight: 1}])
    expect(report.routes.every((r) => r.table === 1158)).toBe(true)
    expect(report.rules).toEqual([{action: 'add', priority: 32000, to: '192.168.0.0/16', table: 1158}])
    expect(report.ruleLines).toEqual(['ip rule add priority 32000 to 192.168.0.0/16 lookup 1158'])
  })

  it('a correction in force and right: overlay-active, verdict ok, nothing to do', () => {
    const files = withRules(editJsonRoutes(loadFiles(BIRD2), {}, [ours('172.31.20.5', '1158', 0)]))
    const ctx = ctxOf(files)
    const d = diagnosePrefix(ctx, BLOCK)
    expect(d.verdict).toBe('ok')
    expect(d.findings.map((f) => f.id)).toEqual(['overlay-active'])
    expectRealEvidence(ctx, d.findings[0])
    const {report} = planFix(ctxOf(files))
    expect(report.routes.filter((r) => r.dst === BLOCK)).toEqual([])
    expect(report.rules).toEqual([])
    expect(report.kept).toBe(1)
  })

  it('the block moved (the correction names the old owner): misrouted, overlay-stale; the plan and explain point at the owner BIRD names', () => {
    const files = withRules(editJsonRoutes(loadFiles(BIRD2), {}, [ours('172.31.30.6', '1158', 0)]))
    const ctx = ctxOf(files)
    const d = diagnosePrefix(ctx, BLOCK)
    expect(d.verdict).toBe('misrouted')
    expect(d.findings.map((f) => f.id)).toContain('overlay-stale')
    for (const f of d.findings) expectRealEvidence(ctx, f)
    expect(explainReport(ctx, BLOCK).plan?.nexthops.map((n) => n.gateway)).toEqual(['172.31.20.5'])
    // the chain's kernel step says why a route through the tunnel is wrong: its endpoint
    expect(explainReport(ctx, BLOCK).chain.find((s) => s.step === 'kernel')!.summary.split('\n').at(-1)).toBe(
      '→ through tunl0, to 172.31.30.6, which BIRD\'s best paths do not name (they name 172.31.20.5)',
    )
    const {report} = planFix(ctxOf(files))
    expect(report.routes.filter((r) => r.dst === BLOCK).map((r) => [r.action, r.nexthops[0].gateway])).toEqual([['replace', '172.31.20.5']])
    expect(report.rules).toEqual([]) // the rule is there already
  })

  // `fix --apply --rule-priority 100` put the pool's rule at 100: a later fix, or watch --reconcile, without the flag
  // recognises it as the pool's rule; asked for another priority, it moves it there (one rule either way)
  it('a pool\'s rule at another priority is the pool\'s rule unless --rule-priority asks for another', () => {
    const at100 = RULES.replace('32000:\tfrom all to 192.168.0.0/16 lookup 1158', '100:\tfrom all to 192.168.0.0/16 lookup 1158 proto 158')
    const files = [...editJsonRoutes(loadFiles(BIRD2), {}, [ours('172.31.30.6', '1158', 0)]).filter((f) => f.name !== 'ip-rule.txt'),
      {name: 'ip-rule.txt', text: at100}]
    expect(planFix(ctxOf(files)).report.rules).toEqual([])
    expect(planFix(ctxOf(files), undefined, {rulePriority: 100}).report.rules).toEqual([])
    expect(planFix(ctxOf(files), undefined, {rulePriority: 32000}).report.rules).toEqual([
      {action: 'add', priority: 32000, to: '192.168.0.0/16', table: 1158},
      {action: 'delete', priority: 100, to: '192.168.0.0/16', table: 1158},
    ])
    // two rules for the pool: the one at the priority (the default's when none is asked for) stays, the other goes
    const both = [...files.filter((f) => f.name !== 'ip-rule.txt'), {name: 'ip-rule.txt', text: at100 + RULES.split('\n')[1] + '\n'}]
    expect(planFix(ctxOf(both)).report.rules).toEqual([{action: 'delete', priority: 100, to: '192.168.0.0/16', table: 1158}])
    expect(planFix(ctxOf(both), undefined, {rulePriority: 100}).report.rules).toEqual([
      {action: 'delete', priority: 32000, to: '192.168.0.0/16', table: 1158},
    ])
  })

  // a rule written by hand after main's (32766): main's own route for a block answers first, the overlay is never read
  it('a pool\'s rule after main\'s is not kept: it moves to the default priority', () => {
    const after = RULES.replace('32000:\tfrom all to 192.168.0.0/16 lookup 1158', '40000:\tfrom all to 192.168.0.0/16 lookup 1158')
    expect(after).not.toBe(RULES)
    const files = [...editJsonRoutes(loadFiles(BIRD2), {}, [ours('172.31.30.6', '1158', 0)]).filter((f) => f.name !== 'ip-rule.txt'),
      {name: 'ip-rule.txt', text: after}]
    expect(planFix(ctxOf(files)).report.rules).toEqual([
      {action: 'add', priority: 32000, to: '192.168.0.0/16', table: 1158},
      {action: 'delete', priority: 40000, to: '192.168.0.0/16', table: 1158},
    ])
  })

  it('BIRD\'s own route is right (the durable fix landed): the correction is withdrawn, and the rule with the last route', () => {
    const files = withRules(editJsonRoutes(loadFiles(LAB_HEALTHY), {}, [ours('172.31.20.5', '1158', 0)]))
    const ctx = ctxOf(files)
    expect(idsOf(ctx)).toContain('overlay-stale')
    expect(idsOf(ctx)).not.toContain('overlay-active')
    const {report} = planFix(ctxOf(files))
    expect(report.routes.map((r) => [r.action, r.dst, r.table])).toEqual([['delete', BLOCK, 1158]])
    expect(report.rules).toEqual([{action: 'delete', priority: 32000, to: '192.168.0.0/16', table: 1158}])
    expect(report.entries[0].ipRoute).toBe(`ip route del ${BLOCK} table 1158 proto 158 metric 0`)
  })

  it('a correction of an earlier version in main, learnt by BIRD once the owner withdrew the block: leaked, stale, learnable; the plan deletes it', () => {
    // BIRD's BGP path is gone; its kernel protocol learnt routedoctor's route (Kernel.source: 158) and made it best
    let files = calicoShaped(editJsonRoutes(loadFiles(LAB_HEALTHY), {[BLOCK]: ours('172.31.20.5', 'main', 31)}))
    files = editFile(files, 'birdc-show-route-all.txt', (t) => {
      const lines = t.split('\n')
      const at = lines.findIndex((l) => l.startsWith(`${BLOCK} `))
      let end = at + 1
      while (lines[end]?.startsWith('\t')) end++
      lines.splice(at, end - at, `${BLOCK}   unicast [kernel1 17:20:01.001] * (10)`, '\tvia 172.31.20.5 on tunl0 onlink', '\tType: inherit univ',
        '\tKernel.source: 158', '\tKernel.metric: 31')
      return lines.join('\n')
    })
    const ctx = ctxOf(files)
    const d = diagnosePrefix(ctx, BLOCK)
    expect(d.verdict).toBe('misrouted')
    expect(d.findings.map((f) => f.id)).toEqual(expect.arrayContaining(['overlay-stale', 'overlay-learnable', 'route-leaked-to-bgp']))
    const leak = d.findings.find((f) => f.id === 'route-leaked-to-bgp')!
    expectRealEvidence(ctx, leak)
    // it cites BIRD's kernel-learnt path and the export filter's lines in bird.conf
    expect(leak.evidence.map((e) => e.file)).toEqual(['birdc-show-route-all.txt', 'bird.conf'])
    expect(leak.evidence[1].text).toContain('filter calico_export_to_bgp_peers')
    const {report} = planFix(ctxOf(files))
    expect(report.routes.map((r) => [r.action, r.dst, r.table, r.metric])).toEqual([['delete', BLOCK, 254, 31]])
    // the advice says what the plan does: withdraw it, not move it into the overlay
    expect(d.findings.find((f) => f.id === 'overlay-learnable')!.fix).toBe(
      'routedoctor fix --apply withdraws it: no correction is wanted for the prefix today.',
    )
    expect(explainReport(ctx, BLOCK).planNote).toBe('BIRD\'s only path is one it learnt from the kernel: no BGP path names an owner')
    // with BIRD's stricter filter (source = RTS_STATIC) it is not leaked, still stale and learnable
    const strict = editFile(files, 'bird.conf', () => fileText(loadFiles(LAB_HEALTHY), 'bird.conf'))
    expect(idsOf(ctxOf(strict))).not.toContain('route-leaked-to-bgp')
    expect(idsOf(ctxOf(strict))).toEqual(expect.arrayContaining(['overlay-stale', 'overlay-learnable']))
  })

  it('BIRD 1.6 (krt_source): a correction of an earlier version that replaced BIRD\'s metric-0 route is leaked the same way', () => {
    let files = editFile(loadFiles(BIRD16), 'bird.conf', (t) => replaceOnce(t,
      'filter calico_export_to_bgp_peers {\n  if net ~ [ 192.168.0.0/16{26,32} ] && source = RTS_STATIC then accept;\n  reject;\n}',
      'filter calico_export_to_bgp_peers {\n  if ( net ~ 192.168.0.0/16 ) then { accept; }\n  reject;\n}'))
    files = editJsonRoutes(files, {[BLOCK]: ours('172.31.20.5', 'main')})
    files = editFile(files, 'birdc-show-route-all.txt', (t) => {
      const lines = t.split('\n')
      const at = lines.findIndex((l) => l.startsWith(`${BLOCK} `))
      let end = at + 1
      while (lines[end]?.startsWith('\t')) end++
      lines.splice(at, end - at, `${BLOCK} via 172.31.20.5 on tunl0 [kernel1 16:50:22] * (10)`, '\tType: inherit unicast univ', '\tkrt_source: 158', '\tkrt_metric: 0')
      return lines.join('\n')
    })
    const ctx = ctxOf(files)
    expect(diagnosePrefix(ctx, BLOCK).verdict).toBe('misrouted')
    expect(idsOf(ctx)).toEqual(expect.arrayContaining(['overlay-stale', 'overlay-learnable', 'route-leaked-to-bgp']))
    const {report} = planFix(ctxOf(files))
    expect(report.routes.filter((r) => r.dst === BLOCK).map((r) => [r.action, r.table, r.metric])).toEqual([['delete', 254, 0]])
  })

  it('a correction of an earlier version in main that is still right is moved into the overlay', () => {
    const files = editJsonRoutes(loadFiles(BIRD2), {}, [ours('172.31.20.5', 'main', 31)])
    const ctx = ctxOf(files)
    expect(idsOf(ctx)).toContain('overlay-learnable')
    expect(diagnosePrefix(ctx, BLOCK).findings.find((f) => f.id === 'overlay-learnable')!.fix).toBe(
      'routedoctor fix --apply moves it into the overlay table 1158, which BIRD never learns.',
    )
    const {report} = planFix(ctxOf(files))
    expect(report.routes.filter((r) => r.dst === BLOCK).map((r) => [r.action, r.table, r.metric])).toEqual([['replace', 1158, 0], ['delete', 254, 31]])
  })

  it('Felix tunnelling a block to an endpoint BIRD does not name: tunnel-endpoint-mismatch, misrouted', () => {
    const files = editJsonRoutes(loadFiles(LAB_HEALTHY), {[BLOCK]: {...ours('172.31.30.6', 'main'), protocol: '80'}})
    const ctx = ctxOf(files)
    expect(diagnosePrefix(ctx, BLOCK).verdict).toBe('misrouted')
    expect(idsOf(ctx)).toContain('tunnel-endpoint-mismatch')
  })
})

describe('refusals (exit 2, before anything is planned or written)', () => {
  const refuse = (files: SourceFile[], opts: {table?: number; rulePriority?: number}) => {
    try {
      planFix(ctxOf(files, opts.table !== undefined ? {overlayTable: opts.table} : {}), undefined, opts)
    } catch (error) {
      expect(error).toBeInstanceOf(RouteDoctorError)
      expect((error as RouteDoctorError).exit).toBe(2)
      return (error as Error).message
    }
    throw new Error('not refused')
  }

  it('a table inside 1-255, a priority not below main\'s, BIRD\'s own kernel table, a table of another owner', () => {
    expect(refuse(loadFiles(BIRD2), {table: 100})).toMatch(/--table 100: expected a table outside 1-255/)
    expect(refuse(loadFiles(BIRD2), {table: 254})).toMatch(/outside 1-255/)
    expect(refuse(loadFiles(BIRD2), {rulePriority: 32766})).toMatch(/--rule-priority 32766: expected 1-32765/)
    const birdTable = editFile(loadFiles(LAB_HEALTHY), 'bird.conf', (t) => t.replace('learn; persist;', 'kernel table 2000; learn; persist;'))
    expect(parseBirdConf(fileText(birdTable, 'bird.conf')).kernelTables).toEqual(['2000'])
    expect(refuse(birdTable, {table: 2000})).toMatch(/--table 2000: it is the table BIRD's kernel protocol syncs/)
    const foreign = editJsonRoutes(loadFiles(BIRD2), {}, [{type: 'unicast', dst: '10.9.0.0/16', dev: 'eth0', table: '1158', protocol: 'static', scope: 'link', flags: []}])
    expect(refuse(foreign, {})).toMatch(/holds a route of another owner/)
  })
})

describe('bird.conf: the BGP export filter', () => {
  it('tells a filter that accepts by prefix (Calico\'s) from one that tests the source', () => {
    const strict = parseBirdConf(fileText(loadFiles(LAB_HEALTHY), 'bird.conf'))
    expect(strict.bgpExports?.map((e) => [e.protocol, e.filter, e.acceptsKernelRoutes])).toEqual([['mesh', 'calico_export_to_bgp_peers', false]])
    const calico = parseBirdConf(fileText(calicoShaped(loadFiles(LAB_HEALTHY)), 'bird.conf'))
    expect(calico.bgpExports?.map((e) => [e.filter, e.acceptsKernelRoutes])).toEqual([['calico_export_to_bgp_peers', true]])
  })
})

describe('the lab\'s captures after a move and after a leak', () => {
  const load = (name: string) => new SnapshotIndex(buildSnapshot(loadFiles(name)))

  it('after the move: check exits 1 with the block misrouted and overlay-stale; explain\'s plan points at the new owner', () => {
    const ctx = load('lab-bird2-overlay-moved')
    const d = diagnosePrefix(ctx, BLOCK)
    expect(d.verdict).toBe('misrouted')
    expect(d.findings.find((f) => f.id === 'overlay-stale')?.severity).toBe('error')
    expect(ctx.facts(BLOCK).effective?.nexthops.map((n) => n.gateway?.address)).toEqual(['172.31.20.5'])
    expect(ctx.facts(BLOCK).bgpNextHops).toEqual(['172.31.30.6'])
    const e = explainReport(ctx, '192.168.110.130')
    expect(e.plan?.nexthops.map((n) => [n.gateway, n.dev, n.onlink])).toEqual([['172.31.30.6', 'tunl0', true]])
    expect(e.chain.map((s) => s.step)).toContain('rule')
    const {report} = planFix(load('lab-bird2-overlay-moved'))
    expect(report.routes.map((r) => [r.action, r.dst, r.table, r.nexthops.map((n) => n.gateway)])).toEqual([['replace', BLOCK, 1158, ['172.31.30.6']]])
    expect(report.rules).toEqual([])
  })

  it('after the leak: the block shows overlay-stale and route-leaked-to-bgp, and fix plans action delete for it', () => {
    const ctx = load('lab-bird2-overlay-leak')
    const d = diagnosePrefix(ctx, BLOCK)
    expect(d.verdict).toBe('misrouted')
    expect(d.findings.map((f) => f.id)).toEqual(expect.arrayContaining(['overlay-stale', 'route-leaked-to-bgp']))
    for (const f of d.findings) expectRealEvidence(ctx, f)
    const leak = d.findings.find((f) => f.id === 'route-leaked-to-bgp')!
    expect(leak.evidence[0].text).toMatch(/\[kernel1 .*\] \* \(10\)/)
    expect(leak.evidence[0].text).toContain('Kernel.source: 158')
    expect(leak.evidence[1].text).toMatch(/^filter calico_export_to_bgp_peers \{\n {2}calico_aggr\(\);/)
    const {report} = planFix(load('lab-bird2-overlay-leak'))
    expect(report.routes.filter((r) => r.dst === BLOCK).map((r) => [r.action, r.table, r.metric, r.protocol])).toEqual([['delete', 254, 31, '158']])
  })
})

describe('why nothing is planned for a block without a BGP path', () => {
  it('names the session that is down where one is, and says no peer announces it where all are Established', () => {
    const down = ctxOf(loadFiles(PEER_DOWN))
    expect(explainReport(down, '192.168.82.0/26').planNote).toBe(
      'no BGP path: its owner\'s session may be the one down (Mesh_172_31_30_6)',
    )
    expect(explainReport(ctxOf(loadFiles(BIRD2)), '192.168.50.1').planNote).toBe(
      'no BGP path: no peer announces it, over sessions that are all Established',
    )
  })
})
