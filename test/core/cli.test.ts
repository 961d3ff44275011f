// The binary as a user runs it: exit statuses, clear errors without stack traces, fix and bundle.
import {constants} from 'node:buffer'
import {cpSync, mkdirSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync} from 'node:fs'
import path from 'node:path'

import {execa} from 'execa'
import {describe, expect, it} from 'vitest'

import {BIN, FIXTURES, ROOT, tempDir} from '../helpers.js'

const run = (args: string[], opts: {input?: string} = {}) => execa('node', [BIN, ...args], {reject: false, cwd: ROOT, env: {NO_COLOR: '1'}, ...opts})
const ecmp = path.join(FIXTURES, 'bird2-ecmp-not-tunneled')

describe('bad input', () => {
  it('a broken file names the file and line, exits 2, no stack trace', async () => {
    const dir = tempDir('rd-bad-')
    cpSync(ecmp, dir, {recursive: true})
    writeFileSync(path.join(dir, 'sysctl.txt'), 'net.ipv4.ip_forward = 1\nthis is not a sysctl line\n')
    const res = await run(['check', '--from', dir])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toMatch(/sysctl\.txt:2/)
    expect(res.stderr).not.toMatch(/\n\s+at /)
  })

  it('a truncated JSON route dump is a parse error with the file named', async () => {
    const dir = tempDir('rd-bad-')
    cpSync(ecmp, dir, {recursive: true})
    const text = readFileSync(path.join(dir, 'ip-j-d-route.json'), 'utf8')
    writeFileSync(path.join(dir, 'ip-j-d-route.json'), text.slice(0, text.length / 2))
    const res = await run(['check', '--from', dir, '--json'])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toContain('ip-j-d-route.json')
    expect(JSON.parse(res.stdout).error.code).toBe('E_PARSE')
  })

  it('a snapshot file that cannot be read (here a directory by its name) is named, exit 2, no stack trace', async () => {
    const dir = tempDir('rd-bad-')
    cpSync(ecmp, dir, {recursive: true})
    const sysctl = path.join(dir, 'sysctl.txt')
    rmSync(sysctl)
    mkdirSync(sysctl)
    const res = await run(['check', '--from', dir])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toContain(`${sysctl}: cannot read (EISDIR)`)
    expect(res.stderr).not.toMatch(/\n\s+at /)
  })

  it('a snapshot file too long for one text is refused by its size, named, exit 2', async () => {
    const dir = tempDir('rd-bad-')
    cpSync(ecmp, dir, {recursive: true})
    const dump = path.join(dir, 'birdc-show-route-all.txt')
    truncateSync(dump, constants.MAX_STRING_LENGTH + 1) // sparse: nothing is read, the size alone decides
    const res = await run(['check', '--from', dir])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toContain(`${dump}: ${constants.MAX_STRING_LENGTH + 1} bytes, more than one text can hold here`)
    expect(res.stderr).not.toMatch(/\n\s+at /)
  })

  it('usage errors exit 2: a nonexistent --from, a bad prefix, a bad --pool', async () => {
    expect((await run(['check', '--from', '/nonexistent/dir'])).exitCode).toBe(2)
    const badPrefix = await run(['explain', 'not-a-prefix', '--from', ecmp])
    expect(badPrefix.exitCode).toBe(2)
    expect(badPrefix.stderr).toContain('not-a-prefix')
    const badPool = await run(['check', '--from', ecmp, '--pool', '10.0.0.0/8=gre'])
    expect(badPool.exitCode).toBe(2)
    expect((await run(['check', '--no-such-flag'])).exitCode).toBe(2)
  })

  it('one --pool CIDR given with two modes is refused; given twice alike, it is one pool', async () => {
    const both = await run(['check', '--from', ecmp, '--pool', '192.168.0.0/16', '--pool', '192.168.0.0/16=vxlan'])
    expect(both.exitCode).toBe(2)
    expect(both.stderr).toBe(
      'routedoctor: --pool 192.168.0.0/16 and --pool 192.168.0.0/16=vxlan: one pool, two modes; give it once',
    )
    const twice = await run(['check', '--from', ecmp, '--pool', '192.168.0.0/16', '--pool', '192.168.0.0/16=ipip', '--json'])
    expect(JSON.parse(twice.stdout).node.pools.map((p: {cidr: string}) => p.cidr)).toEqual(['192.168.0.0/16'])
  })

  it('a prefix with an octet left out is refused as no prefix, not read as inet_aton would (192.168.0.110/26)', async () => {
    const typo = await run(['explain', '192.168.110/26', '--from', ecmp])
    expect(typo.exitCode).toBe(2)
    expect(typo.stderr).toBe(
      'routedoctor: 192.168.110/26: expected a prefix (192.168.110.128/26) or an address (192.168.110.130)',
    )
    expect((await run(['fix', '192.168.110', '--from', ecmp])).exitCode).toBe(2)
  })
})

describe('a parse error names the file as the user gave it (evidence keeps the snapshot names)', () => {
  it('a nexthop line with neither dev nor via in a text-only snapshot: exit 2, DIR/ip-d-route.txt:LINE', async () => {
    const dir = tempDir('rd-nh-')
    cpSync(ecmp, dir, {recursive: true})
    rmSync(path.join(dir, 'ip-j-d-route.json'))
    const lines = readFileSync(path.join(dir, 'ip-d-route.txt'), 'utf8').split('\n')
    const at = lines.findIndex((l) => l.startsWith('\tnexthop')) + 1
    lines[at - 1] = '\tnexthop blah blah'
    writeFileSync(path.join(dir, 'ip-d-route.txt'), lines.join('\n'))
    const res = await run(['explain', '192.168.110.128/26', '--from', dir])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toContain(`${dir}/ip-d-route.txt:${at}: expected a next hop "nexthop via GW dev IF" or "nexthop dev IF", found "nexthop blah blah"`)
    expect(res.stdout).not.toContain('undefined')
  })

  it('--ippools PATH and --calico DIR are named by the path given', async () => {
    const dir = tempDir('rd-paths-')
    const pools = path.join(dir, 'ippools.yaml')
    writeFileSync(pools, readFileSync(path.join(ecmp, 'ippools.yaml'), 'utf8').replace('cidr: 192.168.0.0/16', 'cidr: nope'))
    const a = await run(['check', '--from', ecmp, '--ippools', pools])
    expect(a.exitCode).toBe(2)
    expect(a.stderr).toMatch(new RegExp(`^routedoctor: ${pools}:\\d+: expected spec\\.cidr`, 'm'))
    const cal = path.join(dir, 'cal')
    mkdirSync(cal)
    writeFileSync(path.join(cal, 'ippools.json'), '{"kind": "IPPoolList", "items": [')
    const b = await run(['check', '--from', ecmp, '--calico', cal, '--json'])
    expect(b.exitCode).toBe(2)
    expect(JSON.parse(b.stdout).error).toMatchObject({code: 'E_PARSE', message: expect.stringMatching(new RegExp(`^${cal}/ippools\\.json:1: expected kubectl -o json output \\(an IPPoolList\\)`))})
  })

  it('fleet names the broken source; a bundle names its member', async () => {
    const dir = tempDir('rd-fleet-')
    for (const n of ['a', 'b', 'c']) cpSync(ecmp, path.join(dir, n), {recursive: true})
    writeFileSync(path.join(dir, 'b', 'ip-j-d-route.json'), '[{')
    const res = await run(['fleet', ...['a', 'b', 'c'].map((n) => path.join(dir, n)), '--json'])
    expect(res.exitCode).toBe(2)
    expect(JSON.parse(res.stdout).error).toMatchObject({code: 'E_PARSE', message: expect.stringMatching(new RegExp(`^${dir}/b/ip-j-d-route\\.json:\\d+: expected`))})
    // a bundle whose sysctl.txt was broken after it was written (repacked by tar)
    const good = path.join(dir, 'good.tar.gz')
    expect((await run(['bundle', '--from', ecmp, '-o', good])).exitCode).toBe(0)
    const x = path.join(dir, 'x')
    mkdirSync(x)
    await execa('tar', ['xzf', good, '-C', x])
    writeFileSync(path.join(x, 'snapshot', 'sysctl.txt'), 'net.ipv4.ip_forward = 1\nthis is not a sysctl line\n')
    const bad = path.join(dir, 'bad.tar.gz')
    await execa('tar', ['czf', bad, '-C', x, '.'])
    const replay = await run(['check', '--from', bad])
    expect(replay.exitCode).toBe(2)
    expect(replay.stderr).toContain(`${bad}:snapshot/sysctl.txt:2: expected`)
  })
})

describe('explain: next hops without a device', () => {
  it('an ECMP underlay whose next hops carry no dev is shown as via GW, never "dev undefined"', async () => {
    const dir = tempDir('rd-nodev-')
    cpSync(ecmp, dir, {recursive: true})
    const file = path.join(dir, 'ip-j-d-route.json')
    const routes = JSON.parse(readFileSync(file, 'utf8')) as Array<{nexthops?: Array<{dev?: string}>}>
    for (const r of routes) for (const n of r.nexthops ?? []) delete n.dev
    writeFileSync(file, JSON.stringify(routes))
    const res = await run(['explain', '192.168.110.128/26', '--from', dir])
    expect(res.exitCode).toBe(1)
    expect(res.stdout).toContain('(ECMP: via 172.31.11.1, via 172.31.12.1)')
    expect(res.stdout).not.toContain('undefined')
  })
})

describe('no kernel routes: nothing is judged', () => {
  const why = (dir: string) => `snapshot ${dir} has no kernel routes (expected ip-j-d-route.json or ip-d-route.txt from \`ip -j -d route show table all\`)`

  it('check, explain and fix refuse a snapshot without either route dump (exit 2, one line); bundle writes what it got', async () => {
    const dir = tempDir('rd-nokernel-')
    cpSync(ecmp, dir, {recursive: true})
    rmSync(path.join(dir, 'ip-j-d-route.json'))
    rmSync(path.join(dir, 'ip-d-route.txt'), {force: true})
    for (const args of [['check'], ['check', '--npd'], ['explain', '192.168.110.128/26'], ['fix'], ['fix', '192.168.110.128/26']]) {
      const res = await run([...args, '--from', dir])
      if (args.includes('--npd')) {
        // node-problem-detector's Unknown, on stdout
        expect(res.exitCode).toBe(3)
        expect(res.stdout).toContain('no kernel routes')
        continue
      }
      expect(res.exitCode, args.join(' ')).toBe(2)
      expect(res.stderr.trim(), args.join(' ')).toBe(`routedoctor: ${why(dir)}`)
      expect(res.stdout, args.join(' ')).toBe('')
      const json = await run([...args, '--from', dir, '--json'])
      expect(json.exitCode).toBe(2)
      expect(JSON.parse(json.stdout).error).toEqual({code: 'E_NO_KERNEL_ROUTES', message: why(dir)})
    }
    const out = tempDir('rd-nokernel-bundle-')
    const b = await run(['bundle', '--from', dir, '-o', path.join(out, 'b.tar.gz')])
    expect(b.exitCode, b.stderr).toBe(0)
    const replay = await run(['check', '--from', path.join(out, 'b.tar.gz')])
    expect(replay.exitCode).toBe(2)
    expect(replay.stderr).toContain(`bundle ${path.join(out, 'b.tar.gz')} has no kernel routes`)
  })

  it('an empty route dump is data: BIRD\'s blocks are missing, with an error, exit 1', async () => {
    const dir = tempDir('rd-emptykernel-')
    cpSync(ecmp, dir, {recursive: true})
    rmSync(path.join(dir, 'ip-j-d-route.json'))
    writeFileSync(path.join(dir, 'ip-d-route.txt'), '')
    const res = await run(['check', '--from', dir])
    expect(res.exitCode).toBe(1)
    expect(res.stdout).toContain('ip-d-route.txt: empty: read as an empty table')
    expect(res.stdout).toMatch(/192\.168\.110\.128\/26\s+missing\s+bird-kernel-mismatch/)
  })
})

describe('a source that is there but says nothing is said, not read as zero', () => {
  const copy = (prefix: string) => {
    const dir = tempDir(prefix)
    cpSync(ecmp, dir, {recursive: true})
    return dir
  }

  it('a `show protocols all` cut before its first protocol: sessions unknown, the file named; --npd unknown', async () => {
    const dir = copy('rd-cutprotocols-')
    writeFileSync(path.join(dir, 'birdc-show-protocols-all.txt'), 'BIRD 2.0.12 ready.\nName       Proto      Table      State  Since         Info\n')
    const res = await run(['check', '--from', dir])
    expect(res.stdout).toContain('sessions unknown (no BIRD protocols)')
    expect(res.stdout).toContain('birdc-show-protocols-all.txt: holds no protocol (cut short?): BGP sessions unknown')
    const json = JSON.parse((await run(['check', '--from', dir, '--json'])).stdout)
    expect(json.node.failed.map((f: {file: string}) => f.file)).toContain('birdc-show-protocols-all.txt')
    const npd = await run(['check', '--npd', '--from', dir])
    expect(npd.exitCode).toBe(3)
    expect(npd.stdout).toMatch(/^unknown: cannot read birdc-show-protocols-all\.txt/)
  })

  it('a JSON route dump of `[]` is named in the header as an empty source; beside a text dump, the text is read', async () => {
    const alone = copy('rd-emptyjson-')
    writeFileSync(path.join(alone, 'ip-j-d-route.json'), '[]\n')
    rmSync(path.join(alone, 'ip-d-route.txt'), {force: true})
    const res = await run(['check', '--from', alone])
    expect(res.stdout).toContain('ip-j-d-route.json: empty ([]): read as an empty table')
    const npd = await run(['check', '--npd', '--from', alone])
    expect(npd.exitCode).toBe(3)
    expect(npd.stdout).toMatch(/^unknown: cannot read ip-j-d-route\.json/)
    const both = copy('rd-emptyjson-')
    writeFileSync(path.join(both, 'ip-j-d-route.json'), '[]\n')
    const direct = JSON.parse((await run(['check', '--from', ecmp, '--json'])).stdout)
    const json = JSON.parse((await run(['check', '--from', both, '--json'])).stdout)
    expect(json.node.failed).toEqual([{file: 'ip-j-d-route.json', error: 'the file is empty ([]); ip-d-route.txt was read instead'}])
    const verdicts = (r: {prefixes: Array<{prefix: string; verdict: string}>}) => r.prefixes.map((p) => `${p.prefix} ${p.verdict}`)
    expect(verdicts(json)).toEqual(verdicts(direct))
  })

  it('check --npd without BIRD\'s files is unknown (exit 3), one line of at most 80 bytes naming them', async () => {
    const dir = copy('rd-nobird-')
    for (const f of readdirSync(dir)) if (f.startsWith('birdc-')) rmSync(path.join(dir, f))
    const npd = await run(['check', '--npd', '--from', dir])
    expect(npd.exitCode).toBe(3)
    expect(npd.stdout.trim()).toBe('unknown: no birdc-show-route-all.txt, birdc-show-protocols-all.txt')
    expect(Buffer.byteLength(npd.stdout.trim())).toBeLessThanOrEqual(80)
  })
})

describe('pools', () => {
  it('--pool overrides the snapshot: outside it every prefix is not-in-pool', async () => {
    const res = await run(['check', '--from', ecmp, '--pool', '10.244.0.0/16=ipip', '--json'])
    expect(res.exitCode).toBe(0)
    expect(JSON.parse(res.stdout).prefixes).toEqual([])
  })

  it('pools come from bird.conf when nothing else names them (Calico krt_tunnel filter)', async () => {
    const dir = tempDir('rd-pool-')
    cpSync(ecmp, dir, {recursive: true})
    await execa('rm', ['-f', path.join(dir, 'ippools.yaml')])
    writeFileSync(path.join(dir, 'bird.conf'), readFileSync(path.join(dir, 'bird.conf'), 'utf8').replace(
      'filter calico_kernel_programming { accept; }',
      'filter calico_kernel_programming {\n  if ( net ~ 192.168.0.0/16 ) then {\n    krt_tunnel = "tunl0";\n    accept;\n  }\n  accept;\n}'))
    const res = await run(['check', '--from', dir, '--json'])
    const json = JSON.parse(res.stdout)
    expect(json.node.poolOrigin).toBe('bird.conf')
    expect(json.prefixes.find((p: {prefix: string}) => p.prefix === '192.168.110.128/26').verdict).toBe('not-tunneled')
  })
})

describe('fix', () => {
  it('dry run prints the planned routes and paste-able ip route and ip rule lines', async () => {
    const res = await run(['fix', '--from', ecmp])
    expect(res.exitCode).toBe(0)
    expect(res.stdout).toContain('ip route replace 192.168.110.128/26 table 1158 proto 158 metric 0 via 172.31.20.5 dev tunl0 onlink')
    expect(res.stdout).toMatch(/nexthop via 172\.31\.20\.5 dev tunl0 weight 1 onlink nexthop via 172\.31\.30\.6 dev tunl0 weight 1 onlink/)
    expect(res.stdout).toContain('ip rule add priority 32000 to 192.168.0.0/16 lookup 1158')
  })

  it('--json routes follow DESIGN §4: the overlay table, BIRD\'s routes left where they are, the rule', async () => {
    const json = JSON.parse((await run(['fix', '--from', ecmp, '--json'])).stdout)
    expect(json.schema).toBe(1)
    const r = json.routes.find((x: {dst: string}) => x.dst === '192.168.200.10/32')
    // a route's table and a rule's are the table's number alike
    expect([r.action, r.table, r.metric, r.protocol]).toEqual(['replace', 1158, 0, '158'])
    expect(json.routes.every((x: {table: unknown}) => typeof x.table === 'number')).toBe(true)
    // explain's and check's plan is shaped like a fix route, the same route
    const explained = JSON.parse((await run(['explain', '192.168.200.10/32', '--from', ecmp, '--json'])).stdout)
    expect(explained.plan).toEqual(r)
    const checked = JSON.parse((await run(['check', '--from', ecmp, '--json'])).stdout)
    expect(checked.prefixes.find((p: {prefix: string}) => p.prefix === '192.168.200.10/32').plan).toEqual(r)
    expect(r.nexthops.map((n: {gateway: string}) => n.gateway)).toEqual(['172.31.20.5', '172.31.30.6'])
    expect(json.rules).toEqual([{action: 'add', priority: 32000, to: '192.168.0.0/16', table: 1158}])
    expect(json.replaced.every((k: {protocol: string; metric: number}) => k.protocol === 'bird' && k.metric === 32)).toBe(true)
    expect(json.birdConfig.supported).toBe(true)
  })

  it('BIRD 1.6 says no filter can do it; the overlay is the same', async () => {
    const json = JSON.parse((await run(['fix', '--from', path.join(FIXTURES, 'bird16-ecmp-not-tunneled'), '--json'])).stdout)
    expect(json.routes.every((r: {metric: number; table: number}) => r.metric === 0 && r.table === 1158)).toBe(true)
    expect(json.birdConfig.supported).toBe(false)
    expect(json.birdConfig.reason).toContain('1.6.8')
  })

  it('--table inside 1-255, or BIRD\'s own, and --rule-priority not below main\'s: exit 2, a clear message, no stack', async () => {
    for (const [flags, message] of [
      [['--table', '100'], /--table 100: expected a table outside 1-255/],
      [['--rule-priority', '32766'], /--rule-priority 32766: expected 1-32765/],
    ] as const) {
      const res = await run(['fix', '--from', ecmp, ...flags])
      expect(res.exitCode).toBe(2)
      expect(res.stderr).toMatch(message)
      expect(res.stderr).not.toMatch(/\n\s+at /)
    }
  })

  it('--bird-config prints the kernel filter in the order BIRD 3.2 needs', async () => {
    const res = await run(['fix', '--from', ecmp, '--bird-config'])
    const s = res.stdout
    expect(s.indexOf('ifname = "tunl0"')).toBeLessThan(s.indexOf('onlink = true'))
    expect(s.indexOf('onlink = true')).toBeLessThan(s.indexOf('gw = bgp_next_hop'))
    expect(s).toContain('192.168.0.0/16+')
  })

  it('--apply refuses offline snapshots and refuses without --yes on a non-TTY', async () => {
    const offline = await run(['fix', '--from', ecmp, '--apply'])
    expect(offline.exitCode).toBe(2)
    expect(offline.stderr).toContain('--from')
  })
})

describe('bundle', () => {
  it('writes a tar.gz that tar lists and that replays to the same report', async () => {
    const dir = tempDir('rd-bundle-')
    const out = path.join(dir, 'b.tar.gz')
    const res = await run(['bundle', '--from', ecmp, '-o', out])
    expect(res.exitCode).toBe(0)
    expect(res.stdout.trim()).toBe(out)
    const list = (await execa('tar', ['-tzf', out])).stdout.split('\n')
    for (const f of ['manifest.json', 'model.json', 'report.md', 'report.json', 'snapshot/birdc-show-route-all.txt']) expect(list).toContain(f)
    const direct = JSON.parse((await run(['check', '--from', ecmp, '--json'])).stdout)
    const replay = JSON.parse((await run(['check', '--from', out, '--json'])).stdout)
    expect(replay.prefixes.map((p: {prefix: string; verdict: string}) => [p.prefix, p.verdict])).toEqual(
      direct.prefixes.map((p: {prefix: string; verdict: string}) => [p.prefix, p.verdict]),
    )
  })

  it('names a missing output directory before collecting anything, exit 2', async () => {
    const dir = tempDir('rd-bundle-')
    for (const out of [path.join(dir, 'nope'), path.join(dir, 'nope', 'b.tar.gz')]) {
      const res = await run(['bundle', '--from', ecmp, '-o', out])
      expect(res.exitCode).toBe(2)
      expect(res.stderr).toContain(`-o ${out}: ${path.join(dir, 'nope')} is not a directory here`)
      expect(res.stderr).not.toContain('reading') // nothing was read
      expect(res.stderr).not.toMatch(/\n\s+at /) // no stack trace
    }
    expect(readdirSync(dir)).toEqual([])
  })

  it('refuses to overwrite an existing -o file before collecting, exit 2 naming it; --force overwrites', async () => {
    const dir = tempDir('rd-bundle-')
    const out = path.join(dir, 'b.tar.gz')
    writeFileSync(out, 'an earlier bundle\n')
    const res = await run(['bundle', '--from', ecmp, '-o', out])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toContain(`-o ${out}: the file exists (give --force to overwrite it, or another name)`)
    expect(res.stderr).not.toContain('reading') // nothing was read
    expect(readFileSync(out, 'utf8')).toBe('an earlier bundle\n')
    expect((await run(['bundle', '--from', ecmp, '-o', out, '--force'])).exitCode).toBe(0)
    expect((await execa('tar', ['-tzf', out])).stdout.split('\n')).toContain('manifest.json')
  })

  it('a bad --pool is refused before anything is collected, exit 2', async () => {
    const dir = tempDir('rd-bundle-')
    const res = await run(['bundle', '--from', ecmp, '--pool', '10.0.0.0/8=gre', '-o', path.join(dir, 'b.tar.gz')])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toContain('--pool 10.0.0.0/8=gre: mode must be ipip, vxlan or none')
    expect(res.stderr).not.toContain('reading') // nothing was read
    expect(readdirSync(dir)).toEqual([])
  })

  it('a replay says which files of the bundle were edited after collection', async () => {
    const dir = tempDir('rd-bundle-')
    const out = path.join(dir, 'b.tar.gz')
    expect((await run(['bundle', '--from', ecmp, '-o', out])).exitCode).toBe(0)
    const clean = JSON.parse((await run(['check', '--from', out, '--json'])).stdout)
    expect(clean.node.bundleWarnings).toEqual([])
    // re-packed from its extracted folder, with one source edited
    const x = path.join(dir, 'x')
    mkdirSync(x)
    await execa('tar', ['-xzf', out, '-C', x])
    writeFileSync(path.join(x, 'snapshot/sysctl.txt'), readFileSync(path.join(x, 'snapshot/sysctl.txt'), 'utf8') + '# edited\n')
    const edited = path.join(dir, 'edited.tar.gz')
    await execa('tar', ['-czf', edited, '-C', dir, 'x'])
    const warning = 'snapshot/sysctl.txt does not match its sha256 in manifest.json (edited after collection?)'
    const json = JSON.parse((await run(['check', '--from', edited, '--json'])).stdout)
    expect(json.node.bundleWarnings).toEqual([warning])
    const text = await run(['check', '--from', edited])
    expect(text.stdout.split('\n').slice(0, 6)).toContain(`bundle: ${warning}`)
    expect((await run(['explain', '192.168.110.128/26', '--from', edited])).stdout).toContain(`bundle: ${warning}`)
    expect((await run(['fix', '--from', edited])).stdout).toContain(`bundle: ${warning}`)
  })

  it('a diagnosis reads a text form only without its JSON form; a bundle keeps both', async () => {
    const verdicts = (stdout: string) =>
      JSON.parse(stdout).prefixes.map((p: {prefix: string; verdict: string; findings: Array<{id: string}>}) => [
        p.prefix,
        p.verdict,
        p.findings.map((f) => f.id),
      ])
    const direct = await run(['check', '--from', ecmp, '--json'])
    // the text forms cannot be read (directories by their names): the JSON forms beside them are what is read
    const dir = tempDir('rd-forms-')
    cpSync(ecmp, dir, {recursive: true})
    for (const f of ['ip-d-route.txt', 'ip-d-link.txt']) {
      rmSync(path.join(dir, f))
      mkdirSync(path.join(dir, f))
    }
    for (const cmd of [['check'], ['explain', '192.168.110.128/26'], ['fix']]) {
      const res = await run([...cmd, '--from', dir, '--json'])
      const want = await run([...cmd, '--from', ecmp, '--json'])
      expect(res.exitCode, cmd[0]).toBe(want.exitCode)
      // explain cites a kernel route by its line in the text dump when it can read one, else by its JSON element
      const uncited = (stdout: string) => (cmd[0] === 'explain' ? stdout.replace(/"file":"ip-(d-route\.txt|j-d-route\.json)","line":\d+,"endLine":\d+,("element":\d+,)?"text":"[^"]*"/g, 'KERNEL') : stdout)
      expect(uncited(res.stdout), cmd[0]).toBe(uncited(want.stdout))
      if (cmd[0] === 'explain') expect(res.stdout).toContain('"file":"ip-j-d-route.json","line":1,"endLine":1,"element":')
    }
    // a bundle reads every source: there the directory is bad input
    const bad = await run(['bundle', '--from', dir, '-o', path.join(dir, 'b.tar.gz')])
    expect(bad.exitCode).toBe(2)
    expect(bad.stderr).toContain('ip-d-link.txt: cannot read (EISDIR)')
    // without the JSON forms the text forms are read, to the same verdicts
    const text = tempDir('rd-forms-')
    cpSync(ecmp, text, {recursive: true})
    rmSync(path.join(text, 'ip-j-d-route.json'))
    rmSync(path.join(text, 'ip-j-d-link.json'))
    expect(verdicts((await run(['check', '--from', text, '--json'])).stdout)).toEqual(verdicts(direct.stdout))
    // a bundle holds both; its replay checks the text form's sha256 without reading it
    const out = path.join(text, 'b.tar.gz')
    expect((await run(['bundle', '--from', ecmp, '-o', out])).exitCode).toBe(0)
    const x = path.join(text, 'x')
    mkdirSync(x)
    await execa('tar', ['-xzf', out, '-C', x])
    expect(readFileSync(path.join(x, 'snapshot/ip-d-route.txt'), 'utf8')).toBe(readFileSync(path.join(ecmp, 'ip-d-route.txt'), 'utf8'))
    writeFileSync(path.join(x, 'snapshot/ip-d-route.txt'), 'this is not a route\n')
    const edited = path.join(text, 'edited.tar.gz')
    await execa('tar', ['-czf', edited, '-C', x, '.'])
    const replay = await run(['check', '--from', edited, '--json'])
    expect(replay.exitCode).toBe(direct.exitCode)
    expect(verdicts(replay.stdout)).toEqual(verdicts(direct.stdout))
    expect(JSON.parse(replay.stdout).node.bundleWarnings).toEqual(['snapshot/ip-d-route.txt does not match its sha256 in manifest.json (edited after collection?)'])
  })

  it('a redacted bundle holds none of the node addresses and diagnoses the same verdicts', async () => {
    const dir = tempDir('rd-bundle-')
    const out = path.join(dir, 'r.tar.gz')
    const mapFile = path.join(tempDir('rd-map-'), 'map.json') // kept outside the extracted bundle
    expect((await run(['bundle', '--from', ecmp, '-o', out, '--redact', '--mapping-file', mapFile])).exitCode).toBe(0)
    await execa('tar', ['-xzf', out, '-C', dir])
    const all = (await execa('sh', ['-c', `cat ${dir}/snapshot/* ${dir}/*.json ${dir}/report.md`])).stdout
    const mapping = JSON.parse(readFileSync(mapFile, 'utf8')) as Record<string, string>
    // a private address stays in its range, where one may map onto itself by chance (the mapping lists it)
    const changed = (a: string) => mapping[a.replace(/^Mesh_/, '').replaceAll('_', '.')] !== a.replace(/^Mesh_/, '').replaceAll('_', '.')
    for (const a of ['172.31.20.5', '172.31.10.4', '192.168.110.128', '172.31.11.1', 'f2:16:b0:6a:b7:24', 'Mesh_172_31_20_5'].filter(changed)) {
      expect(all.match(new RegExp(`(^|[^0-9.:a-f_])${a.replace(/[.]/g, '\\.')}($|[^0-9a-f])`, 'm'))?.[0], a).toBeUndefined()
    }
    // RFC 1918 in, RFC 1918 out: the pool and its blocks stay in 192.168.0.0/16, the nodes in 172.16.0.0/12
    expect(mapping['192.168.110.128']).toMatch(/^192\.168\.\d+\.128$/)
    expect(mapping['172.31.20.5']).toMatch(/^172\.(1[6-9]|2\d|3[01])\.\d+\.5$/)
    expect(all).toContain('192.168.0.0/16')
    const direct = JSON.parse((await run(['check', '--from', ecmp, '--json'])).stdout)
    const replay = JSON.parse((await run(['check', '--from', out, '--json'])).stdout)
    const verdictOf = (prefix: string) => replay.prefixes.find((p: {prefix: string}) => p.prefix === prefix)?.verdict
    for (const p of direct.prefixes) {
      const [addr, len] = p.prefix.split('/')
      expect(verdictOf(`${mapping[addr]}/${len}`), p.prefix).toBe(p.verdict)
    }
  })

  it('a corrupt archive is refused with exit 2 and the file named', async () => {
    const dir = tempDir('rd-bundle-')
    const bad = path.join(dir, 'bad.tar.gz')
    writeFileSync(bad, Buffer.from('not a gzip file at all'))
    const res = await run(['check', '--from', bad])
    expect(res.exitCode).toBe(2)
    expect(res.stderr).toContain('bad.tar.gz')
  })
})
