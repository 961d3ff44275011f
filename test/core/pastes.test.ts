// Real output as users paste it, from lab captures in test/fixtures/pastes and the snapshot
// folders lab-bird16-plain-show-route and lab-bird2-crosssubnet (test/lab/capture-pastes.ts made them).
import {readFileSync} from 'node:fs'
import path from 'node:path'

import {execa} from 'execa'
import {describe, expect, it} from 'vitest'

import {buildSnapshot} from '../../src/snapshot/build.js'
import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import {ParseError} from '../../src/model/errors.js'
import type {SourceFile} from '../../src/model/types.js'
import {parseBirdProtocols} from '../../src/parse/bird-protocols.js'
import {parseBirdRoutes} from '../../src/parse/bird-routes.js'
import {parseBirdStatus} from '../../src/parse/bird-status.js'
import {parseIpRouteText} from '../../src/parse/ip-route-text.js'
import {renderCheck, renderExplain} from '../../src/render/text.js'
import {palette} from '../../src/render/style.js'
import {buildBulkSnapshot} from '../../src/bulk/build.js'
import {checkReport, explainReport} from '../../src/report/report.js'
import {dropFile, editFile, editJsonArray, loadFiles, replaceOnce} from '../diagnose/helpers.js'
import {BIN, FIXTURES} from '../helpers.js'

const paste = (name: string) => readFileSync(path.join(FIXTURES, 'pastes', name), 'utf8')
const ctxOf = (files: SourceFile[]) => new SnapshotIndex(buildSnapshot(files))
const withoutLine = (text: string, line: string) => replaceOnce(text, `${line}\n`, '\n') // blank: the same line numbers
const withFile = (files: SourceFile[], name: string, text: string) => [
  ...files.filter((f) => f.name !== name),
  {name, text},
]
const BIRD_FILES = ['birdc-show-status.txt', 'birdc-show-route-all.txt', 'birdc-show-protocols-all.txt', 'bird.conf']
const withoutBird = (files: SourceFile[]) => files.filter((f) => !BIRD_FILES.includes(f.name))

describe('show status during graceful-restart recovery', () => {
  it('is read, birdc and raw socket (code 0024 and continuation lines), BIRD 2 and 1.6', () => {
    const cases: Array<[string, object]> = [
      ['bird2-gr-show-status.txt', {waiting: 3, unit: 'channels', remaining: 239.885, wait: 240}],
      ['bird2-gr-show-status-raw.txt', {waiting: 3, unit: 'channels', remaining: 239.88, wait: 240}],
      ['bird16-gr-show-status.txt', {waiting: 2, unit: 'protocols', remaining: 240, wait: 240}],
      ['bird16-gr-show-status-raw.txt', {waiting: 2, unit: 'protocols', remaining: 240, wait: 240}],
    ]
    for (const [file, gr] of cases) {
      const s = parseBirdStatus(paste(file))
      expect(s.gracefulRestart, file).toMatchObject(gr)
      expect(s.gracefulRestart!.pos.endLine - s.gracefulRestart!.pos.line, file).toBe(2)
      expect(s.routerId, file).toBe('172.31.10.4')
    }
    // a status without recovery has none
    expect(parseBirdStatus(paste('bird2-restricted-show-status.txt')).gracefulRestart).toBeUndefined()
  })

  it('an indented line that is not one of the recovery lines is still refused with its line', () => {
    const text = paste('bird2-gr-show-status.txt').replace('  Wait timer is', '  Wait clock is')
    expect(() => parseBirdStatus(text)).toThrow(ParseError)
    try {
      parseBirdStatus(text)
    } catch (error) {
      expect((error as ParseError).line).toBe(10)
    }
  })

  it('appears in the node summary, as text and as JSON, because it explains stale routes', async () => {
    const files = withFile(loadFiles('lab-bird2-ecmp'), 'birdc-show-status.txt', paste('bird2-gr-show-status.txt'))
    const report = checkReport(ctxOf(files))
    expect(report.node.gracefulRestart).toEqual({waiting: 3, unit: 'channels', remaining: 239.885, wait: 240})
    expect(JSON.parse(JSON.stringify(report)).node.gracefulRestart.waiting).toBe(3)
    const text = renderCheck(report, palette(false))
    expect(text).toContain('BIRD graceful restart recovery in progress, waiting for 3 channels to recover, wait timer 239.885/240 s')
    expect(renderExplain(explainReport(ctxOf(files), '192.168.82.0/26'), palette(false))).toContain('graceful restart recovery in progress')
    // without recovery, the summary says nothing of it
    expect(checkReport(ctxOf(loadFiles('lab-bird2-ecmp'))).node.gracefulRestart).toBeUndefined()
  })
})

describe('birdc in restricted mode (birdc -r)', () => {
  it('"Access restricted" after the banner is accepted by every BIRD parser, birdc and raw socket', () => {
    for (const v of ['bird2', 'bird16']) {
      const status = paste(`${v}-restricted-show-status.txt`)
      const {pos: _a, ...read} = parseBirdStatus(status)
      const {pos: _b, ...plain} = parseBirdStatus(withoutLine(status, 'Access restricted'))
      expect(read).toEqual(plain)
      const protocols = paste(`${v}-restricted-show-protocols-all.txt`)
      const parsed = parseBirdProtocols(protocols)
      expect(parsed.filter((p) => p.proto === 'BGP').map((p) => p.name)).toEqual(['Mesh_172_31_20_5', 'Mesh_172_31_30_6'])
      expect(parsed).toEqual(parseBirdProtocols(withoutLine(protocols, 'Access restricted')))
      const routes = paste(`${v}-restricted-show-route-all.txt`)
      expect(parseBirdRoutes(routes).length).toBeGreaterThan(4)
      expect(JSON.stringify(parseBirdRoutes(routes))).toBe(JSON.stringify(parseBirdRoutes(withoutLine(routes, 'Access restricted'))))
      // the raw socket: `restrict` answered `0016 Access restricted`, then `show protocols`
      const raw = paste(`${v}-restricted-raw.txt`)
      expect(raw).toContain('0016 Access restricted')
      expect(parseBirdProtocols(raw).filter((p) => p.proto === 'BGP').map((p) => p.info.trim())).toEqual(['Established', 'Established'])
    }
  })

  it('a snapshot taken with birdc -r diagnoses as one taken without', () => {
    const plain = loadFiles('lab-bird2-ecmp')
    let restricted = plain
    for (const f of ['birdc-show-status.txt', 'birdc-show-route-all.txt', 'birdc-show-protocols-all.txt']) {
      restricted = editFile(restricted, f, (t) => t.replace(/^(BIRD \S+ ready\.\n)/, '$1Access restricted\n'))
    }
    const verdicts = (files: SourceFile[]) => checkReport(ctxOf(files)).prefixes.map((p) => `${p.prefix} ${p.verdict} ${p.findings.map((f) => f.id)}`)
    expect(verdicts(restricted)).toEqual(verdicts(plain))
  })
})

describe('an indented ip route dump (a quoted paste)', () => {
  const text = readFileSync(path.join(FIXTURES, 'lab-bird2-ecmp', 'ip-d-route.txt'), 'utf8')
  const indented = text
    .split('\n')
    .map((l) => (l === '' ? l : `    ${l}`))
    .join('\n')
  const shape = (routes: ReturnType<typeof parseIpRouteText>) =>
    routes.map((r) => JSON.stringify({...r, pos: r.pos.line}))

  it('is read whole: common indentation is stripped, multipath continuation lines stay continuations', () => {
    const plain = parseIpRouteText(text)
    expect(plain.length).toBeGreaterThan(20)
    expect(plain.some((r) => r.nexthops.length > 1)).toBe(true)
    expect(shape(parseIpRouteText(indented))).toEqual(shape(plain))
  })

  it('whitespace-led lines that are routes of their own are routes, not continuations of the one before', () => {
    // only some lines indented (a paste that lost the first line's indentation)
    const ragged = text.split('\n').map((l, i) => (i === 0 || l === '' ? l : `  ${l}`)).join('\n')
    expect(shape(parseIpRouteText(ragged))).toEqual(shape(parseIpRouteText(text)))
  })

  it('an indented line that is neither a route nor a line ip prints under one is refused with its line number', () => {
    const bad = indented.replace(/\n/, '\n      some words here\n')
    try {
      parseIpRouteText(bad)
      throw new Error('accepted')
    } catch (error) {
      expect(error).toBeInstanceOf(ParseError)
      expect((error as ParseError).line).toBe(2)
      expect((error as ParseError).file).toBe('ip-d-route.txt')
    }
  })

  it('check gives the same verdicts from the indented dump as from the plain one (no route dropped)', () => {
    const base = dropFile(loadFiles('lab-bird2-ecmp'), 'ip-j-d-route.json')
    const verdicts = (files: SourceFile[]) => checkReport(ctxOf(files)).prefixes.map((p) => `${p.prefix} ${p.verdict}`)
    const want = verdicts(base)
    expect(want.some((v) => v.endsWith('not-tunneled'))).toBe(true)
    expect(verdicts(editFile(base, 'ip-d-route.txt', () => indented))).toEqual(want)
  })
})

describe('an unreachable block BIRD installed, with no BIRD data beside it', () => {
  const files = withoutBird(loadFiles('lab-bird16-ipv6-ll'))

  it('is unreachable with an error finding, and check exits 1', async () => {
    const report = checkReport(ctxOf(files))
    const line = report.prefixes.find((p) => p.prefix === '192.168.110.128/26')!
    expect(line.verdict).toBe('unreachable')
    expect(line.findings.filter((f) => f.severity === 'error').map((f) => f.id)).toEqual(['nexthop-unresolvable-by-bird'])
    expect(report.summary.exitCode).toBe(1)
    const why = explainReport(ctxOf(files), '192.168.110.128/26').findings[0]!
    expect(why.detail).toContain('No BIRD routes in the snapshot')
    expect(why.evidence.map((e) => e.text)).toContain('unreachable 192.168.110.128/26 proto bird')
  })

  it('another owner\'s unreachable or prohibit route in the pool is a prefix with no usable route', () => {
    for (const type of ['unreachable', 'prohibit']) {
      const edited = editJsonArray(files, 'ip-j-d-route.json', (o) => (o.dst === '192.168.110.128/26' ? {...o, type, protocol: 'static'} : o))
      const line = checkReport(ctxOf(edited)).prefixes.find((p) => p.prefix === '192.168.110.128/26')!
      expect(line.verdict, type).toBe('unreachable')
      expect(line.findings.map((f) => f.id), type).toContain('prefix-missing')
    }
  })
})

describe('BIRD 1.6 plain show route (no "all")', () => {
  const files = loadFiles('lab-bird16-plain-show-route')

  it('reads each path as fully as its line allows: destination, protocol, from, primary; a BGP protocol makes it a BGP path', () => {
    const routes = buildSnapshot(files).bird.routes
    const p = routes.find((r) => r.prefix === '192.168.110.128/26')!
    expect(p).toMatchObject({dest: 'unreachable', protocol: 'Mesh_172_31_20_5', from: '172.31.20.5', primary: true, source: 'BGP'})
    const secondary = routes.filter((r) => r.prefix === '192.168.200.10/32')
    expect(secondary.map((r) => [r.dest, r.primary, r.source])).toEqual([['unicast', true, 'BGP'], ['unreachable', false, 'BGP']])
    expect(routes.find((r) => r.prefix === '192.168.162.128/26')?.source).toBe('static') // protocol blocks is Static
    expect(routes.find((r) => r.prefix === '192.168.162.129/32')?.source).toBe('inherit') // kernel1: learnt from the kernel
  })

  it('shows seed failure 2 on BIRD\'s side: the path is unreachable in BIRD, though the kernel reaches the peer', () => {
    const r = explainReport(ctxOf(files), '192.168.110.128/26')
    expect(r.verdict).toBe('unreachable')
    const f = r.findings.find((x) => x.id === 'nexthop-unresolvable-by-bird')!
    expect(f.title).toContain('172.31.20.5')
    expect(f.detail).toContain('IPv6 link-local')
    expect(f.evidence[0]!.text).toMatch(/^192\.168\.110\.128\/26 unreachable \[Mesh_172_31_20_5/)
    expect(r.findings.map((x) => x.id)).not.toContain('prefix-missing')
  })
})

describe('sessions when there is no session data', () => {
  const missingPrefix = (files: SourceFile[]) => explainReport(ctxOf(files), '192.168.5.0/26').findings.find((f) => f.id === 'prefix-missing')!

  it('with every session up it says so, with how many', () => {
    expect(missingPrefix(loadFiles('lab-bird2-ecmp')).detail).toContain('All 2 BGP sessions are Established')
  })

  it('without a protocols file it does not claim the sessions are Established', () => {
    const files = dropFile(loadFiles('lab-bird2-ecmp'), 'birdc-show-protocols-all.txt')
    const f = missingPrefix(files)
    expect(f.detail).not.toContain('Established')
    expect(f.detail).toContain('No BGP session data in the snapshot')
    expect(renderCheck(checkReport(ctxOf(files)), palette(false))).toContain('sessions unknown (no BIRD protocols)')
  })

  it('with the protocols source failed (no BIRD socket) it does not claim 0/0 Established either', () => {
    const files = dropFile(loadFiles('lab-bird2-ecmp'), 'birdc-show-protocols-all.txt')
    files.push({name: 'birdc-show-protocols-all.txt', error: 'BIRD control socket /x.ctl does not exist'})
    const text = renderCheck(checkReport(ctxOf(files)), palette(false))
    expect(text).toContain('sessions unknown (no BIRD protocols)')
    expect(text).not.toContain('0/0 Established')
  })

  it('with 0 BGP sessions it says BIRD has none', () => {
    const files = editFile(loadFiles('lab-bird2-ecmp'), 'birdc-show-protocols-all.txt', (t) => t.split(/\n(?=Mesh_)/)[0]! + '\n')
    expect(buildSnapshot(files).bird.protocols.some((p) => p.proto === 'BGP')).toBe(false)
    const f = missingPrefix(files)
    expect(f.detail).not.toContain('Established')
    expect(f.detail).toContain('BIRD has no BGP sessions')
  })
})

describe('IP-in-IP CrossSubnet', () => {
  const files = loadFiles('lab-bird2-crosssubnet')
  const lineOf = (fs: SourceFile[], prefix: string) => checkReport(ctxOf(fs)).prefixes.find((p) => p.prefix === prefix)!

  it('a block whose next hop is on this node\'s subnet, routed directly, is right; with and without BIRD\'s data', () => {
    for (const fs of [files, withoutBird(files)]) {
      const l = lineOf(fs, '192.168.50.0/26')
      expect(l.verdict).toBe('ok')
      expect(l.findings).toEqual([])
      expect(l.plan).toBeNull()
    }
    expect(explainReport(ctxOf(withoutBird(files)), '192.168.50.0/26').plan).toBeNull()
    // check's own path (routes outside the pools read only where they resolve a gateway) says the same
    const bulk = checkReport(new SnapshotIndex(buildBulkSnapshot(withoutBird(files), {}, 'check'))).prefixes.map((p) => `${p.prefix} ${p.verdict}`)
    expect(bulk).toEqual(checkReport(ctxOf(withoutBird(files))).prefixes.map((p) => `${p.prefix} ${p.verdict}`))
    expect(bulk).toContain('192.168.50.0/26 ok')
  })

  it('a next hop off every local subnet must still go through the tunnel, with or without BIRD\'s data', () => {
    expect(lineOf(files, '192.168.82.0/26').verdict).toBe('not-tunneled') // BGP next hop 172.31.30.6, off-subnet
    const offSubnet = editJsonArray(withoutBird(files), 'ip-j-d-route.json', (o) =>
      o.dst === '192.168.50.0/26' ? {...o, gateway: '172.31.30.6', flags: ['onlink']} : o)
    expect(lineOf(offSubnet, '192.168.50.0/26').verdict).toBe('not-tunneled')
  })

  it('the same direct route in an Always pool is not tunneled', () => {
    const always = editFile(files, 'ippools.yaml', (t) => t.replace('ipipMode: CrossSubnet', 'ipipMode: Always'))
    expect(lineOf(always, '192.168.50.0/26').verdict).toBe('not-tunneled')
  })

  it('the binary: check and fix agree (nothing planned for the same-subnet block)', async () => {
    const dir = path.join(FIXTURES, 'lab-bird2-crosssubnet')
    const fix = await execa('node', [BIN, 'fix', '--from', dir, '--json'], {reject: false})
    const routes = JSON.parse(fix.stdout).routes as Array<{dst: string}>
    expect(routes.map((r) => r.dst).sort()).toEqual(['192.168.110.128/26', '192.168.200.10/32', '192.168.82.0/26'])
  })
})
