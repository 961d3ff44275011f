// Answers that must be right (CLI, JSON, bundles): each behaviour on the shipped example AND every shared fixture.
import {cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import path from 'node:path'

import {execa} from 'execa'
import {describe, expect, it} from 'vitest'

import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import {coveringPrefix} from '../../src/model/prefix.js'
import {palette} from '../../src/render/style.js'
import {renderExplain, renderFix, renderNode} from '../../src/render/text.js'
import {explainExitCode, loadExplainReport} from '../../src/services/explain.js'
import {FIX_INDEX_OPTIONS, planFix} from '../../src/services/fix.js'
import {loadBulkHealthySnapshot, type SourceOptions} from '../../src/services/load.js'
import {loadSnapshot} from '../load-snapshot.js'
import {checkReport, explainReport, nodeSummary} from '../../src/report/report.js'
import {BIN, ROOT, scenarioDirs, tempDir} from '../helpers.js'

const EXAMPLE = path.join(ROOT, 'examples/bird2-ecmp-not-tunneled')
// the shipped example and the copies of the shared fixtures (test/fixtures)
// the overlay captures hold routedoctor's own routes, whose withdrawal every plan includes (test/plan/overlay.test.ts)
const CAPTURES = [EXAMPLE, ...scenarioDirs().filter((d) => !d.includes('overlay'))]
const name = (dir: string) => path.relative(ROOT, dir)
const plain = palette(false)
const run = (args: string[]) => execa('node', [BIN, ...args], {reject: false, cwd: ROOT, env: {NO_COLOR: '1'}})

/** A copy of a capture to damage. */
function copyOf(dir: string): string {
  const copy = tempDir('rd-answers-')
  cpSync(dir, copy, {recursive: true})
  return copy
}

async function checkOf(opts: SourceOptions) {
  return checkReport(new SnapshotIndex(await loadSnapshot(opts)))
}

const verdicts = (r: ReturnType<typeof checkReport>) =>
  r.prefixes.map((p) => [p.prefix, p.verdict, p.findings.map((f) => f.id).sort()])

/** explain as the command makes it: the snapshot separated for the query. */
async function explainOf(opts: SourceOptions, query: string) {
  return explainReport(new SnapshotIndex(await loadBulkHealthySnapshot(opts, query)), query)
}

async function fixOf(opts: SourceOptions, only?: string) {
  return planFix(new SnapshotIndex(await loadBulkHealthySnapshot(opts, only), FIX_INDEX_OPTIONS), only).report
}

describe.each(CAPTURES.map((d) => [name(d), d]))('%s', (_n, dir) => {
  it('an empty JSON dump is read as its text form, and the header says so; with no other form the empty file is named', async () => {
    const original = await checkOf({from: dir})
    for (const [json, text] of [['ip-j-d-route.json', 'ip-d-route.txt'], ['ip-j-d-link.json', 'ip-d-link.txt']]) {
      const copy = copyOf(dir)
      writeFileSync(path.join(copy, json), '')
      const r = await checkOf({from: copy})
      expect(verdicts(r), json).toEqual(verdicts(original))
      expect(r.host.findings.map((f) => f.id)).toEqual(original.host.findings.map((f) => f.id))
      expect(renderNode(r.node, plain)).toContain(`${json}: empty; ${text} was read instead`)
      // the text form empty, the JSON one good: nothing changes but the header
      const other = copyOf(dir)
      writeFileSync(path.join(other, text), '\n')
      const o = await checkOf({from: other})
      expect(verdicts(o), text).toEqual(verdicts(original))
      expect(renderNode(o.node, plain)).toContain(`${text}: empty`)
      // the JSON form empty, no text form: named; an empty route dump is data (an empty table), an empty link list is
      // not
      rmSync(path.join(copy, text))
      const none = await checkOf({from: copy})
      expect(renderNode(none.node, plain)).toContain(`${json}: empty`)
      if (json === 'ip-j-d-link.json') expect(none.host.findings.map((f) => f.id)).not.toContain('tunnel-device-missing')
      else expect(renderNode(none.node, plain)).toContain(`${json}: empty: read as an empty table`)
    }
  })

  it('a pool, a prefix wider than a block, and the default route are no tunnel prefixes, never local', async () => {
    const ctx = new SnapshotIndex(await loadSnapshot({from: dir}))
    const pool = ctx.snapshot.pools[0]
    const block = ctx.poolPrefixes().find((p) => p.endsWith('/26'))!
    const wide = `${block.split('.').slice(0, 3).join('.')}.0/24`
    for (const [query, kind] of [[pool.cidr, 'pool'], [wide, 'wider-than-block'], ['0.0.0.0/0', 'outside-pools'], ['10.99.0.0/16', 'outside-pools']]) {
      const r = await explainOf({from: dir}, query)
      expect(r.verdict, query).toBe('not-in-pool')
      expect(r.scope?.kind, query).toBe(kind)
      expect(r.findings).toEqual([])
      const text = renderExplain(r, plain)
      expect(text, query).toContain('NOT A TUNNEL PREFIX')
      expect(text).not.toMatch(/LOCAL|originates on this node/)
    }
    const r = await explainOf({from: dir}, pool.cidr)
    expect(r.scope!.insideCount).toBe(checkReport(ctx).prefixes.length)
    expect(r.scope!.inside).toContain(block)
  })

  it('a prefix or an address inside a block resolves to the block in explain and fix; host bits are a usage error', async () => {
    const report = await checkOf({from: dir})
    const blocks = report.prefixes.filter((p) => p.prefix.endsWith('/26'))
    expect(blocks.length).toBeGreaterThan(0)
    for (const b of blocks) {
      const [network] = b.prefix.split('/')
      const last = network.split('.').map(Number)
      const address = [...last.slice(0, 3), last[3] + 2].join('.')
      for (const query of [`${network}/27`, `${network}/28`, address]) {
        const r = await explainOf({from: dir}, query)
        expect([r.prefix, r.verdict], `${b.prefix} by ${query}`).toEqual([b.prefix, b.verdict])
        const f = await fixOf({from: dir}, query)
        expect([...f.entries, ...f.skipped].map((e) => e.prefix).every((p) => p === b.prefix), `fix ${query}`).toBe(true)
        expect(f.entries.map((e) => e.prefix)).toEqual(b.plan ? [b.prefix] : [])
      }
      await expect(explainOf({from: dir}, `${address}/26`)).rejects.toThrow(`host bits set in a prefix; give the prefix ${b.prefix}`)
      // the UI's search resolves by the same function
      expect(coveringPrefix(report.prefixes.map((p) => p.prefix), address)).toBe(b.prefix)
    }
  })

  it('nothing is planned through a tunnel device that does not exist, and the reason is given', async () => {
    const f = await fixOf({from: dir, tunnelDev: 'nosuch'})
    expect(f.routes).toEqual([])
    // what had a plan through tunl0 is skipped now, with the reason (prefixes through tunl0 are off `nosuch` too)
    const broken = (await checkOf({from: dir})).prefixes.filter((p) => p.plan)
    const skipped = f.skipped.map((s) => s.prefix)
    for (const p of broken) expect(skipped).toContain(p.prefix)
    for (const s of f.skipped.filter((x) => x.verdict !== 'missing')) expect(s.reason).toContain('there is no nosuch device')
    for (const p of broken) {
      const r = await explainOf({from: dir, tunnelDev: 'nosuch'}, p.prefix)
      expect(r.plan).toBeNull()
      expect(renderExplain(r, plain)).toContain('none: there is no nosuch device')
    }
  })

  it('why a route is off the tunnel follows the node\'s BIRD and its kernel filter', async () => {
    const ctx = new SnapshotIndex(await loadSnapshot({from: dir}))
    const status = ctx.snapshot.bird.status!
    for (const p of checkReport(ctx).prefixes) {
      for (const f of p.findings.filter((x) => x.id === 'tunnel-bypassed-by-ecmp' || x.id === 'tunnel-not-programmed')) {
        if (status.major === 2) expect(f.detail).toContain(`BIRD ${status.version}'s kernel export filter rewrites nothing`)
        if (status.major === 1) expect(f.detail).toContain(`BIRD ${status.version} (upstream, not Calico's fork) has neither krt_tunnel nor onlink`)
        expect(f.detail).not.toContain('Calico\'s BIRD')
      }
    }
    // the same node on Calico's fork, and on BIRD 3.0
    for (const [version, says] of [['v0.3.3+birdv1.6.8', 'the fork\'s krt_tunnel'], ['3.0.5', 'BIRD 3.0.5 has no onlink attribute']]) {
      const copy = copyOf(dir)
      const file = path.join(copy, 'birdc-show-status.txt')
      writeFileSync(file, readFileSync(file, 'utf8').replaceAll(status.version, version))
      const r = await checkOf({from: copy})
      for (const f of r.prefixes.flatMap((p) => p.findings).filter((x) => x.id === 'tunnel-bypassed-by-ecmp')) expect(f.detail).toContain(says)
    }
  })

  it('without BIRD\'s routes, no advice names an empty gateway, and explain says why nothing is planned', async () => {
    const copy = copyOf(dir)
    rmSync(path.join(copy, 'birdc-show-route-all.txt'))
    const r = await checkOf({from: copy})
    for (const p of r.prefixes.filter((x) => x.verdict !== 'ok' && x.verdict !== 'local')) {
      const e = await explainOf({from: copy}, p.prefix)
      for (const f of e.findings) expect(f.fix ?? '', f.id).not.toMatch(/via\s+dev|via ,/)
      expect(e.planNote).toContain('no BIRD routes')
      expect(renderExplain(e, plain)).toContain('nothing can be planned without BIRD\'s BGP paths')
    }
  })

  it('vxlan and no-encapsulation pools are shown as not checked, not judged ok', async () => {
    const ctx = new SnapshotIndex(await loadSnapshot({from: dir}))
    const pool = ctx.snapshot.pools[0].cidr
    for (const mode of ['vxlan', 'none']) {
      const r = await checkOf({from: dir, pools: [`${pool}=${mode}`]})
      expect(r.prefixes).toEqual([])
      expect(r.node.uncheckedPools?.map((p) => p.cidr)).toEqual([pool])
      expect(renderNode(r.node, plain)).toContain(`pool ${pool} (${mode}) not checked`)
      const block = ctx.poolPrefixes()[0]
      const e = await explainOf({from: dir, pools: [`${pool}=${mode}`]}, block)
      expect(e.scope?.kind).toBe('unchecked-pool')
    }
  })

  it('a bad ipipMode, an IPv6 IP-in-IP pool and a sysctl that is no number are refused with the file and line', async () => {
    const copy = copyOf(dir)
    const pools = path.join(copy, 'ippools.yaml')
    const text = readFileSync(pools, 'utf8')
    const line = text.split('\n').findIndex((l) => l.includes('ipipMode')) + 1
    writeFileSync(pools, text.replace(/ipipMode: \w+/, 'ipipMode: Sometimes'))
    await expect(checkOf({from: copy})).rejects.toThrow(`ippools.yaml:${line}: expected ipipMode Always, CrossSubnet or Never, found "Sometimes"`)
    const cidrLine = text.split('\n').findIndex((l) => /cidr: /.test(l)) + 1
    writeFileSync(pools, text.replace(/cidr: \S+/, 'cidr: fd00:10:244::/64'))
    await expect(checkOf({from: copy})).rejects.toThrow(`ippools.yaml:${cidrLine}: expected an IPv6 pool without IP-in-IP (Calico has no IPv6 IP-in-IP)`)
    writeFileSync(pools, text)
    const sysctl = path.join(copy, 'sysctl.txt')
    const lines = readFileSync(sysctl, 'utf8').split('\n')
    const at = lines.findIndex((l) => l.includes('rp_filter'))
    lines[at] = lines[at].replace(/=\s*\S+/, '= banana')
    writeFileSync(sysctl, lines.join('\n'))
    // named as the user gave it: the snapshot directory and the file in it
    await expect(checkOf({from: copy})).rejects.toThrow(new RegExp(`^${escapeRegExp(copy)}/sysctl\\.txt:${at + 1}: expected an integer value for \\S+rp_filter, found "banana"`))
    await expect(checkOf({from: dir, pools: ['192.168.1.5/16']})).rejects.toThrow('--pool 192.168.1.5/16: host bits set in 192.168.1.5/16 (the network is 192.168.0.0/16)')
    await expect(checkOf({from: dir, pools: ['fd00::/64=ipip']})).rejects.toThrow('Calico has no IPv6 IP-in-IP')
  })

  it('fix of a prefix outside the pools says none lies inside it; fix of a pool plans the blocks inside it', async () => {
    const f = await fixOf({from: dir}, '10.0.0.0/8')
    expect(f.scope).toBe('no tunnel prefix lies inside 10.0.0.0/8')
    expect(renderFix(f, plain)).toContain('Nothing to fix: no tunnel prefix lies inside 10.0.0.0/8.')
    expect(renderFix(f, plain)).not.toContain('every tunnel prefix is healthy')
    const all = await fixOf({from: dir})
    const ctx = new SnapshotIndex(await loadSnapshot({from: dir}))
    const pool = await fixOf({from: dir}, ctx.snapshot.pools[0].cidr)
    expect(pool.routes).toEqual(all.routes)
  })

  it('with no kernel route for a block, fix and explain do not speak of BIRD\'s route beside it', async () => {
    const broken = (await checkOf({from: dir})).prefixes.filter((p) => p.plan && p.verdict !== 'missing')
    if (broken.length === 0) return
    const copy = copyOf(dir)
    const file = path.join(copy, 'ip-j-d-route.json')
    const gone = new Set(broken.map((p) => p.prefix))
    writeFileSync(file, JSON.stringify(JSON.parse(readFileSync(file, 'utf8')).filter((r: {dst: string}) => !gone.has(r.dst) && !gone.has(`${r.dst}/32`))))
    rmSync(path.join(copy, 'ip-d-route.txt'), {force: true})
    const f = await fixOf({from: copy})
    const text = renderFix(f, plain)
    for (const p of gone) expect(f.entries.map((e) => e.prefix)).toContain(p)
    expect(text).toContain('the kernel has no route for it')
    expect(text).not.toContain('BIRD\'s route is left as it is')
    const e = await explainOf({from: copy}, broken[0].prefix)
    expect(renderExplain(e, plain)).not.toContain('beside BIRD\'s route')
  })

  it('16, 17: the node\'s name comes from the snapshot\'s hostname file; the header speaks of sources, not of a snapshot, one line per reason', async () => {
    const copy = copyOf(dir)
    writeFileSync(path.join(copy, 'hostname'), 'node-a7\n')
    const s = await loadSnapshot({from: copy})
    expect(nodeSummary(new SnapshotIndex(s)).host).toBe('node-a7')
    const live = {...s, origin: {kind: 'live' as const}, files: [...s.files.filter((f) => !f.name.startsWith('birdc-')),
      ...['birdc-show-status.txt', 'birdc-show-route-all.txt', 'birdc-show-protocols-all.txt'].map((n) => ({name: n, error: 'connect ENOENT /run/bird.ctl'}))],
    missing: ['birdc-show-status.txt', 'ip-rule.txt']}
    const header = renderNode(nodeSummary(new SnapshotIndex(live)), plain)
    expect(header).toContain('missing sources: ip-rule.txt')
    expect(header).not.toContain('not in the snapshot')
    expect(header.match(/ENOENT/g)).toHaveLength(1)
    expect(header).toContain('could not collect birdc-show-status.txt, birdc-show-route-all.txt, birdc-show-protocols-all.txt: connect ENOENT')
  })

  it('explain cites a kernel route by its line in the text dump, else by its element in the JSON one', async () => {
    const cited = async (from: string, query: string) => {
      const ctx = new SnapshotIndex(await loadBulkHealthySnapshot({from, routeTextToo: true}, query), {
        kernelLines: true,
      })
      return explainReport(ctx, query)
        .chain.filter((s) => s.step === 'kernel' || s.step === 'resolution')
        .flatMap((s) => s.evidence)
    }
    const noText = copyOf(dir)
    rmSync(path.join(noText, 'ip-d-route.txt'))
    const elements = JSON.parse(readFileSync(path.join(dir, 'ip-j-d-route.json'), 'utf8')) as Array<{dst: string}>
    const lines = readFileSync(path.join(dir, 'ip-d-route.txt'), 'utf8').split('\n')
    for (const p of (await checkOf({from: dir})).prefixes) {
      const withText = await cited(dir, p.prefix)
      expect(withText.length).toBeGreaterThan(0)
      for (const e of withText) {
        expect(e.file, p.prefix).toBe('ip-d-route.txt')
        expect(e.text.split('\n')[0]).toBe(lines[e.line - 1])
      }
      const withoutText = await cited(noText, p.prefix)
      expect(withoutText.map((e) => e.file)).toEqual(withText.map(() => 'ip-j-d-route.json'))
      for (const e of withoutText) {
        expect(e.element, p.prefix).toBeDefined()
        expect(e.text.split('\n')[0].split(' ')).toContain(elements[e.element!].dst)
      }
    }
    const first = (await checkOf({from: dir})).prefixes[0].prefix
    const text = renderExplain(
      explainReport(
        new SnapshotIndex(await loadBulkHealthySnapshot({from: noText}, first), {kernelLines: true}),
        first,
      ),
      plain,
    )
    expect(text).toMatch(/ip-j-d-route\.json\[\d+\]/)
    expect(text).not.toContain('ip-j-d-route.json:1')
  })

  it('explain cites BIRD\'s lines once, and hash-policy-l3 only for a prefix whose next hop crosses an ECMP route', async () => {
    const report = await checkOf({from: dir})
    for (const p of report.prefixes) {
      const r = await explainOf({from: dir}, p.prefix)
      const text = renderExplain(r, plain)
      for (const b of r.bird) {
        const where = `${b.pos.file}:${b.pos.line}${b.pos.endLine !== b.pos.line ? `-${b.pos.endLine}` : ''}  `
        expect(text.split(where).length - 1, `${p.prefix} ${where}`).toBeLessThanOrEqual(1)
      }
      const ecmp = r.chain.some((s) => s.step === 'resolution' && s.summary.includes('(ECMP:'))
      if (!ecmp) expect(r.findings.map((f) => f.id), p.prefix).not.toContain('hash-policy-l3')
      else if (report.host.findings.some((f) => f.id === 'hash-policy-l3') && p.verdict !== 'local') expect(r.findings.map((f) => f.id)).toContain('hash-policy-l3')
    }
  })
})

describe('an address or prefix that no route holds', () => {
  const peerDown = path.join(ROOT, 'test/fixtures/bird2-peer-down')

  it('resolves to the block of its pool (spec.blockSize, else /26), so explain says missing and why (the fixture\'s expected.json)', async () => {
    for (const query of ['192.168.82.5', '192.168.82.0/28']) {
      const r = await explainOf({from: peerDown}, query)
      expect([r.prefix, r.verdict], query).toEqual(['192.168.82.0/26', 'missing'])
      expect(r.findings.map((f) => f.id)).toEqual(expect.arrayContaining(['prefix-missing', 'peer-down']))
      expect(r.findings.find((f) => f.id === 'prefix-missing')!.fix).toBe('Bring the BGP session back up (see peer-down).')
      const f = await fixOf({from: peerDown}, query)
      expect([...f.entries, ...f.skipped].map((e) => e.prefix)).toEqual(['192.168.82.0/26'])
    }
    const copy = copyOf(peerDown)
    const pools = path.join(copy, 'ippools.yaml')
    writeFileSync(pools, readFileSync(pools, 'utf8').replace('blockSize: 26', 'blockSize: 28'))
    expect((await explainOf({from: copy}, '192.168.82.21')).prefix).toBe('192.168.82.16/28')
    // a pool without IP-in-IP has no tunnel blocks: the address stays as asked
    expect((await explainOf({from: peerDown, pools: ['192.168.0.0/16=vxlan']}, '192.168.82.5')).prefix).toBe('192.168.82.5/32')
  })

  it('a blockSize Calico would refuse, or wider than its pool, is refused naming the file and line', async () => {
    const copy = copyOf(peerDown)
    const pools = path.join(copy, 'ippools.yaml')
    const text = readFileSync(pools, 'utf8')
    const line = text.split('\n').findIndex((l) => l.includes('blockSize')) + 1
    for (const [bad, range] of [['40', '20-32'], ['"26"', '20-32']] as const) {
      writeFileSync(pools, text.replace('blockSize: 26', `blockSize: ${bad}`))
      await expect(checkOf({from: copy})).rejects.toThrow(`ippools.yaml:${line}: expected spec.blockSize to be a block prefix length ${range}`)
    }
    writeFileSync(pools, text.replace('blockSize: 26', 'blockSize: 20').replace(/cidr: \S+/, 'cidr: 192.168.0.0/24'))
    await expect(checkOf({from: copy})).rejects.toThrow(`ippools.yaml:${line}: expected spec.blockSize to be a block prefix length 24-32`)
  })
})

describe('the CLI', () => {
  it('the replay command in bundle --help works; flags without a command run check; unknown commands get a suggestion', async () => {
    const help = await run(['bundle', '--help'])
    const replay = help.stdout.match(/`(routedoctor [^`]*--from BUNDLE\.tar\.gz)`/)?.[1]
    expect(replay).toBeDefined()
    const out = tempDir('rd-answers-')
    for (const dir of [EXAMPLE, scenarioDirs()[0]]) {
      const bundle = path.join(out, `${path.basename(dir)}.tar.gz`)
      expect((await run(['bundle', '--from', dir, '-o', bundle])).exitCode).toBe(0)
      const direct = await run(['check', '--from', dir])
      const replayed = await run([...replay!.split(' ').slice(1).map((a) => (a === 'BUNDLE.tar.gz' ? bundle : a))])
      expect(replayed.exitCode).toBe(direct.exitCode)
      expect(replayed.stdout).toContain(direct.stdout.split('\n').find((l) => l.includes('VERDICT')))
      const bare = await run(['--from', bundle])
      expect(bare.exitCode).toBe(direct.exitCode)
      expect(bare.stderr).not.toContain('not found')
    }
    const typo = await run(['chek', '--from', EXAMPLE])
    expect(typo.exitCode).toBe(2)
    expect(typo.stderr).toBe('routedoctor: unknown command `chek`. Did you mean `routedoctor check`? Commands: bundle, check, explain, fix, fleet, ui, watch; `routedoctor --help` lists them.')
    expect((await run(['help', 'explain'])).stdout).toContain('PREFIX or ADDRESS')
  })

  it('explain without its argument says what is missing, not how --pool takes values', async () => {
    const res = await run(['explain', '--from', EXAMPLE])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toContain('Missing 1 required arg')
    expect(res.stderr).not.toContain('--pool allows multiple values')
  })

  it('an empty --tunnel-dev is a usage error', async () => {
    const res = await run(['fix', '--from', EXAMPLE, '--tunnel-dev', ''])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toContain('--tunnel-dev "": expected an interface name')
  })

  it('a bad IPPool file exits 2 naming the file and line', async () => {
    const copy = copyOf(EXAMPLE)
    const pools = path.join(copy, 'ippools.yaml')
    writeFileSync(pools, readFileSync(pools, 'utf8').replace('ipipMode: Always', 'ipipMode: Sometimes'))
    const res = await run(['check', '--from', copy])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toMatch(new RegExp(`^routedoctor: ${escapeRegExp(copy)}/ippools\\.yaml:\\d+: expected ipipMode Always, CrossSubnet or Never, found "Sometimes"$`))
  })

  it('a redacted bundle\'s manifest holds no local path; --mapping-file without --redact exits 2', async () => {
    const out = tempDir('rd-answers-')
    for (const dir of [EXAMPLE, scenarioDirs()[1]]) {
      const bundle = path.join(out, 'r.tar.gz')
      const mapping = path.join(out, 'map.json')
      const res = await run(['bundle', '--from', dir, '-o', bundle, '--redact', '--mapping-file', mapping])
      expect(res.exitCode, res.stderr).toBe(0)
      const x = path.join(out, 'x')
      mkdirSync(x, {recursive: true})
      await execa('tar', ['xzf', bundle, '-C', x])
      const manifest = readFileSync(path.join(x, 'manifest.json'), 'utf8')
      for (const local of [out, dir, path.basename(dir), ROOT, 'map.json']) expect(manifest).not.toContain(local)
      expect(JSON.parse(manifest).command).toEqual(['bundle', '--from', 'PATH', '-o', 'PATH', '--redact', '--mapping-file', 'PATH'])
      rmSync(x, {recursive: true})
      rmSync(bundle) // an existing bundle is not overwritten
    }
    const res = await run(['bundle', '--from', EXAMPLE, '-o', path.join(out, 'n.tar.gz'), '--mapping-file', path.join(out, 'm.json')])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toContain('--mapping-file keeps the pseudonyms of --redact')
    expect(existsSync(path.join(out, 'n.tar.gz'))).toBe(false)
  })

  it('a bundle of a snapshot is named after its node, not after this machine', async () => {
    const copy = copyOf(scenarioDirs().find((d) => d.includes('bird16'))!)
    writeFileSync(path.join(copy, 'hostname'), 'node-b16\n')
    const out = tempDir('rd-answers-')
    const res = await run(['bundle', '--from', copy, '-o', out, '--json'])
    const written = JSON.parse(res.stdout).path as string
    expect(path.basename(written)).toMatch(/^routedoctor-node-b16-\d{8}-\d{6}\.tar\.gz$/)
    const replay = await run(['check', '--from', written, '--json'])
    expect(JSON.parse(replay.stdout).node.host).toBe('node-b16')
  })

  it('explain exits as check does; every JSON has one shape (fix --bird-config too)', async () => {
    for (const dir of [EXAMPLE, ...scenarioDirs()]) {
      const r = await checkOf({from: dir})
      const broken = r.prefixes.find((p) => p.findings.some((f) => f.severity === 'error'))
      const ok = r.prefixes.find((p) => p.verdict === 'ok' || p.verdict === 'local')
      const hostFine = r.host.findings.every((f) => f.severity !== 'error')
      // the exit status as the command computes it on every capture; the command itself on the example
      const status = async (prefix: string) => dir === EXAMPLE
        ? (await run(['explain', prefix, '--from', dir])).exitCode
        : explainExitCode(await loadExplainReport({from: dir}, prefix, {citeRouteLines: true}))
      if (broken) expect(await status(broken.prefix), `${name(dir)} ${broken.prefix}`).toBe(1)
      if (ok && hostFine) expect(await status(ok.prefix), `${name(dir)} ${ok.prefix}`).toBe(0)
      if (dir !== EXAMPLE) continue
      expect(broken && ok && hostFine).toBeTruthy()
      const bird = (await run(['fix', '--bird-config', '--json', '--from', dir])).stdout
      const check = (await run(['check', '--json', '--from', dir])).stdout
      // the same shape: top-level keys a line each, nested values compact
      expect(bird).toMatch(/^ {2}"node": \{"host"/m)
      expect(check).toMatch(/^ {2}"node": \{"host"/m)
      expect(bird).not.toMatch(/^ {6}"/m)
    }
    expect((await run(['explain', '--help'])).stdout).toContain('Exit status, as check\'s')
  })

  it('check --from an extracted bundle suggests its snapshot directory', async () => {
    const out = tempDir('rd-answers-')
    await run(['bundle', '--from', EXAMPLE, '-o', path.join(out, 'b.tar.gz')])
    await execa('tar', ['xzf', path.join(out, 'b.tar.gz'), '-C', out])
    const res = await run(['check', '--from', out])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toContain(`try --from ${path.join(out, 'snapshot')}`)
    expect((await run(['check', '--from', path.join(out, 'snapshot')])).exitCode).toBe(1)
  })
})

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
