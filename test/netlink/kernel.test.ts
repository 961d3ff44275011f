// The codec, client and apply engine against the real kernel, inside network namespaces created
// here (h5-…). Node cannot setns, so the code under test runs in ./driver.ts under `ip netns exec`.
import {spawnSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join, resolve} from 'node:path'

import {execa, type ResultPromise} from 'execa'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {canonicalAddress, canonicalPrefix, familyOf} from '../../src/model/prefix.js'
import type {KernelRoute, PlannedRoute} from '../../src/model/types.js'

const repo = resolve(import.meta.dirname, '../..')
const isRoot = process.getuid?.() === 0
const netnsWorks = isRoot && spawnSync('ip', ['netns', 'list']).status === 0
const skipNote = netnsWorks
  ? ''
  : ` (skipped: ${!isRoot ? 'not root; creating network namespaces needs CAP_NET_ADMIN' : 'the `ip netns` command does not work here'})`
if (!netnsWorks) console.warn(`test/netlink/kernel.test.ts${skipNote}`)
// every case runs the driver several times; each is a fresh node process inside the namespace
const SLOW = {timeout: 180_000}

const created: string[] = []
const journalDir = mkdtempSync(join(tmpdir(), 'h5-journal-'))
let counter = 0

async function ip(ns: string, ...args: string[]): Promise<string> {
  return (await execa('ip', ['-n', ns, ...args])).stdout
}

/** A namespace with tunl0 (TUN, up, an address) and a veth uplink eth0 (172.31.11.10/24). */
async function makeNamespace(): Promise<string> {
  const ns = `h5-nl-${process.pid}-${++counter}`
  await execa('ip', ['netns', 'add', ns])
  created.push(ns)
  await ip(ns, 'link', 'set', 'lo', 'up')
  await ip(ns, 'tuntap', 'add', 'tunl0', 'mode', 'tun')
  await ip(ns, 'link', 'set', 'tunl0', 'up')
  await ip(ns, 'addr', 'add', '172.31.10.10/32', 'dev', 'tunl0')
  await ip(ns, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0p')
  await ip(ns, 'link', 'set', 'eth0', 'up')
  await ip(ns, 'link', 'set', 'eth0p', 'up')
  await ip(ns, 'addr', 'add', '172.31.11.10/24', 'dev', 'eth0')
  // wait for IPv6 DAD so the table does not change under a comparison
  for (let i = 0; i < 50 && (await ip(ns, '-6', 'addr')).includes('tentative'); i++) await new Promise((r) => setTimeout(r, 100))
  return ns
}

/** BIRD-like routes, as `ip route add` makes them. */
async function addBirdRoutes(ns: string): Promise<void> {
  await ip(ns, 'route', 'add', '192.168.200.10/32', 'via', '172.31.20.5', 'dev', 'tunl0', 'onlink', 'proto', 'bird', 'metric', '32')
  await ip(ns, 'route', 'add', '192.168.110.128/26', 'proto', 'bird', 'metric', '32', 'nexthop', 'via', '172.31.20.5', 'dev', 'tunl0', 'weight', '3', 'onlink', 'nexthop', 'via', '172.31.30.6', 'dev', 'tunl0', 'weight', '1', 'onlink')
  await ip(ns, 'route', 'add', '192.168.120.0/26', 'proto', 'bird', 'metric', '0', 'nexthop', 'via', '172.31.11.1', 'dev', 'eth0', 'nexthop', 'via', '172.31.11.2', 'dev', 'eth0')
  await ip(ns, 'route', 'add', 'unreachable', '192.168.130.0/26', 'proto', 'bird', 'metric', '32')
}

// `wrap` runs the driver under another command, e.g. setpriv dropping CAP_NET_ADMIN
async function driver<T = any>(ns: string, cmd: string, input: unknown = null, wrap: string[] = []): Promise<T> {
  const r = await execa('ip', ['netns', 'exec', ns, ...wrap, process.execPath, '--import', 'tsx', join(repo, 'test/netlink/driver.ts'), cmd], {cwd: repo, input: JSON.stringify(input), reject: false})
  const line = r.stdout.trim().split('\n').pop() ?? ''
  if (!line.startsWith('{')) throw new Error(`driver ${cmd} failed (exit ${r.exitCode}): ${r.stderr || r.stdout}`)
  return JSON.parse(line) as T
}

/** The whole table as `ip -j -d route show table all` prints it, both families. */
async function fullTable(ns: string): Promise<unknown[]> {
  return [...JSON.parse(await ip(ns, '-4', '-j', '-d', 'route', 'show', 'table', 'all')), ...JSON.parse(await ip(ns, '-6', '-j', '-d', 'route', 'show', 'table', 'all'))]
}

async function routesAt(ns: string, dst: string): Promise<any[]> {
  return JSON.parse(await ip(ns, '-j', '-d', 'route', 'show', 'table', 'all', 'exact', dst))
}

/** ip's JSON route in the KernelRoute vocabulary, to compare with what the decoder returns. */
function fromIpJson(r: any): unknown {
  const family = r.dst.includes(':') ? 'inet6' : 'inet' // these namespaces have no IPv6 default route
  const gw = (x: any) =>
    x.gateway
      ? {family: familyOf(x.gateway), address: canonicalAddress(x.gateway)}
      : x.via
        ? {family: x.via.family, address: canonicalAddress(x.via.host)}
        : undefined
  const nexthops = r.nexthops
    ? r.nexthops.map((n: any) => ({gateway: gw(n), dev: n.dev, weight: n.weight, flags: n.flags ?? []}))
    : r.gateway || r.via || r.dev
      ? [{gateway: gw(r), dev: r.dev, weight: 1, flags: r.flags ?? []}]
      : []
  return {
    family,
    type: r.type,
    dst: canonicalPrefix(r.dst, family),
    table: r.table,
    protocol: r.protocol,
    scope: r.scope,
    metric: r.metric ?? 0,
    prefsrc: r.prefsrc,
    flags: r.flags ?? [],
    nexthops,
  }
}

function comparable(r: KernelRoute): unknown {
  return {
    family: r.family,
    type: r.type,
    dst: r.dst,
    table: r.table,
    protocol: r.protocol,
    scope: r.scope,
    metric: r.metric,
    prefsrc: r.prefsrc,
    flags: r.flags,
    nexthops: r.nexthops.map((n) => ({gateway: n.gateway, dev: n.dev, weight: n.weight, flags: n.flags})),
  }
}

const sortJson = (xs: unknown[]): string[] => xs.map((x) => JSON.stringify(x)).sort()

function planned(
  dst: string,
  metric: number,
  nexthops: Array<[string, string, number?]>,
  extra: Partial<PlannedRoute> = {},
): PlannedRoute {
  return {
    dst,
    table: 'main',
    tableId: 254,
    metric,
    protocol: '252',
    nexthops: nexthops.map(([gateway, dev, weight]) => ({gateway, dev, onlink: true, weight: weight ?? 1})),
    ...extra,
  }
}

afterAll(async () => {
  for (const ns of created) await execa('ip', ['netns', 'del', ns], {reject: false})
  rmSync(journalDir, {recursive: true, force: true})
})

describe.skipIf(!netnsWorks)(`rtnetlink in a network namespace${skipNote}`, () => {
  let ns: string
  beforeAll(async () => {
    ns = await makeNamespace()
  })

  it('decodes what `ip route add` created exactly as `ip -j -d route show table all` prints it', SLOW, async () => {
    await addBirdRoutes(ns)
    await ip(ns, 'route', 'add', '172.31.20.0/23', 'via', 'inet6', 'fe80::1', 'dev', 'eth0')
    await ip(ns, 'route', 'add', '172.31.22.0/23', 'nexthop', 'via', 'inet6', 'fe80::1', 'dev', 'eth0', 'nexthop', 'via', 'inet6', 'fe80::2', 'dev', 'eth0', 'weight', '2')
    await ip(ns, 'route', 'add', '10.50.0.0/24', 'via', '172.31.11.1', 'dev', 'eth0', 'table', '1000')
    await ip(ns, 'route', 'add', '10.51.0.0/24', 'via', '172.31.20.5', 'dev', 'tunl0', 'onlink', 'proto', '80')
    await ip(ns, 'route', 'add', 'blackhole', '10.52.0.0/24')

    const dump = await driver<{routes: KernelRoute[]; undecodable: unknown[]}>(ns, 'dump')
    const table = await fullTable(ns)
    expect(dump.undecodable).toEqual([])
    expect(sortJson(dump.routes.map(comparable))).toEqual(sortJson(table.map(fromIpJson)))

    // and the interesting ones are really there (the comparison above is not vacuous)
    const at = (dst: string) => dump.routes.find((r) => r.dst === dst)!
    expect(at('172.31.20.0/23').nexthops[0].gateway).toEqual({family: 'inet6', address: 'fe80::1'})
    expect(at('172.31.22.0/23').nexthops.map((n) => [n.gateway?.address, n.weight])).toEqual([['fe80::1', 1], ['fe80::2', 2]])
    expect(at('192.168.110.128/26').nexthops.map((n) => [n.weight, n.flags.includes('onlink')])).toEqual([[3, true], [1, true]])
    expect(at('10.50.0.0/24')).toMatchObject({table: '1000', tableId: 1000})
    expect(at('10.51.0.0/24').protocol).toBe('80')
    expect(at('192.168.130.0/26')).toMatchObject({type: 'unreachable', protocol: 'bird', nexthops: []})
    expect(at('10.52.0.0/24')).toMatchObject({type: 'blackhole', nexthops: []})
  })

  it('a targeted dump keeps, of every table (ids above 255 too), the local table, the routes at the prefixes and those holding the addresses', SLOW, async () => {
    const t = await makeNamespace()
    await ip(t, 'route', 'add', '10.60.0.0/26', 'via', '172.31.11.1', 'dev', 'eth0', 'proto', 'bird', 'metric', '32')
    await ip(t, 'route', 'add', '10.60.0.0/26', 'via', '172.31.20.5', 'dev', 'tunl0', 'onlink', 'table', '1158', 'proto', '158')
    await ip(t, 'route', 'add', '10.60.0.0/26', 'via', '172.31.11.2', 'dev', 'eth0', 'table', '100')
    await ip(t, 'route', 'add', '10.60.0.64/26', 'via', '172.31.11.1', 'dev', 'eth0', 'table', '1158')
    await ip(t, 'route', 'add', 'default', 'via', '172.31.11.1', 'dev', 'eth0', 'table', '1000')
    await ip(t, 'route', 'add', '172.31.20.0/24', 'via', '172.31.11.1', 'dev', 'eth0', 'table', '2000')
    await ip(t, 'route', 'add', '172.31.21.0/24', 'via', '172.31.11.1', 'dev', 'eth0', 'table', '2000')
    const {kept, all} = await driver<{kept: KernelRoute[]; all: KernelRoute[]}>(t, 'routes-for', {prefixes: ['10.60.0.0/26'], addresses: ['172.31.20.5']})
    const holds = (r: KernelRoute, a: string) => {
      const [net, len] = r.dst === 'default' ? ['0.0.0.0', 0] : [r.dst.split('/')[0], Number(r.dst.split('/')[1] ?? 32)]
      const v = (x: string) => x.split('.').reduce((n, o) => n * 256 + Number(o), 0)
      return Math.floor(v(a) / 2 ** (32 - len)) === Math.floor(v(net) / 2 ** (32 - len))
    }
    const wanted = all.filter((r) => r.table === 'local' || r.dst === '10.60.0.0/26' || holds(r, '172.31.20.5'))
    expect(sortJson(kept.map(comparable))).toEqual(sortJson(wanted.map(comparable)))
    const tables = kept.filter((r) => r.dst === '10.60.0.0/26').map((r) => r.table).sort()
    expect(tables).toEqual(['100', '1158', 'main'])
    expect(kept.some((r) => r.table === '1000' && (r.dst === 'default' || r.dst === '0.0.0.0/0'))).toBe(true)
    expect(kept.some((r) => r.table === '2000' && r.dst === '172.31.20.0/24')).toBe(true)
    expect(kept.some((r) => r.dst === '10.60.0.64/26' || r.dst === '172.31.21.0/24')).toBe(false)
  })

  it('encode → replace: `ip -j -d route` shows exactly the planned route, single and multipath onlink', SLOW, async () => {
    const single = planned('192.168.201.0/26', 31, [['172.31.20.5', 'tunl0']])
    expect(await driver(ns, 'write', {op: 'replace', planned: single})).toEqual({ok: true})
    expect(await routesAt(ns, '192.168.201.0/26')).toEqual([
      {type: 'unicast', dst: '192.168.201.0/26', gateway: '172.31.20.5', dev: 'tunl0', table: 'main', protocol: '252', scope: 'global', metric: 31, flags: ['onlink', 'linkdown']},
    ])

    const multi = planned('192.168.201.0/26', 31, [['172.31.20.5', 'tunl0', 3], ['172.31.30.6', 'tunl0', 1]])
    expect(await driver(ns, 'write', {op: 'replace', planned: multi})).toEqual({ok: true})
    // replaced in place: still one route at the key
    expect(await routesAt(ns, '192.168.201.0/26')).toEqual([
      {
        type: 'unicast', dst: '192.168.201.0/26', table: 'main', protocol: '252', scope: 'global', metric: 31, flags: ['linkdown'],
        nexthops: [
          {gateway: '172.31.20.5', dev: 'tunl0', weight: 3, flags: ['onlink', 'linkdown']},
          {gateway: '172.31.30.6', dev: 'tunl0', weight: 1, flags: ['onlink', 'linkdown']},
        ],
      },
    ])

    const t1000 = planned('192.168.202.0/26', 5, [['172.31.20.5', 'tunl0']], {table: '1000', tableId: 1000})
    expect(await driver(ns, 'write', {op: 'replace', planned: t1000})).toEqual({ok: true})
    expect((await routesAt(ns, '192.168.202.0/26'))[0]).toMatchObject({table: '1000', protocol: '252', metric: 5, gateway: '172.31.20.5'})
  })

  it('kernel errors carry the errno name and the route', SLOW, async () => {
    const r = planned('192.168.203.0/26', 31, [['172.31.20.5', 'tunl0']])
    expect(await driver(ns, 'write', {op: 'add', planned: r})).toEqual({ok: true})
    const again = await driver(ns, 'write', {op: 'add', planned: r})
    expect(again).toMatchObject({ok: false, name: 'NetlinkError', errno: 'EEXIST', code: 'E_NETLINK_EEXIST', route: {dst: '192.168.203.0/26', metric: 31}})
    expect(again.message).toContain('192.168.203.0/26')

    const notOnlink = {...planned('192.168.204.0/26', 31, [['172.31.99.1', 'eth0']]), nexthops: [{gateway: '172.31.99.1', dev: 'eth0', onlink: false, weight: 1}]}
    expect(await driver(ns, 'write', {op: 'replace', planned: notOnlink})).toMatchObject({ok: false, errno: 'ENETUNREACH'})

    expect(await driver(ns, 'write', {op: 'delete', planned: planned('192.168.205.0/26', 31, [['172.31.20.5', 'tunl0']])})).toMatchObject({ok: false, errno: 'ESRCH'})
    expect(await driver(ns, 'write', {op: 'delete', planned: r})).toEqual({ok: true})
    expect(await routesAt(ns, '192.168.203.0/26')).toEqual([])
  })

  it('without CAP_NET_ADMIN: a clear message, and apply leaves the table as it was', SLOW, async () => {
    const noNetAdmin = ['setpriv', '--bounding-set', '-net_admin']
    const r = planned('192.168.206.0/26', 31, [['172.31.20.5', 'tunl0']])
    const res = await driver(ns, 'write', {op: 'replace', planned: r}, noNetAdmin)
    expect(res).toMatchObject({ok: false, name: 'NetlinkPermissionError', errno: 'EPERM'})
    expect(res.message).toMatch(/needs CAP_NET_ADMIN; run as root .*ip netns exec/)

    const before = await fullTable(ns)
    const applied = await driver(ns, 'apply', {items: [{mode: 'beside', planned: r}], journalDir, watchSeconds: 0}, noNetAdmin)
    expect(applied.errors[0]).toMatchObject({errno: 'EPERM', code: 'E_NETLINK_EPERM'})
    expect(applied.errors[0].message).toContain('CAP_NET_ADMIN')
    expect(applied).toMatchObject({verified: false, restored: true, applied: []})
    expect(await fullTable(ns)).toEqual(before)
  })
})

describe.skipIf(!netnsWorks)(`apply and revert${skipNote}`, () => {
  it('beside: adds at the lower metric, leaves BIRD alone; revert gives back the exact table', SLOW, async () => {
    const ns = await makeNamespace()
    await addBirdRoutes(ns)
    const before = await fullTable(ns)
    const items = [
      {mode: 'beside', planned: planned('192.168.200.10/32', 31, [['172.31.20.5', 'tunl0'], ['172.31.30.6', 'tunl0']])},
      {mode: 'beside', planned: planned('192.168.110.128/26', 31, [['172.31.20.5', 'tunl0']])},
    ]
    const res = await driver(ns, 'apply', {items, journalDir, watchSeconds: 1})
    expect(res).toMatchObject({verified: true, errors: []})
    expect(res.applied).toHaveLength(2)
    expect(res.restored).toBeUndefined()
    const at = await routesAt(ns, '192.168.200.10/32')
    expect(at.map((r) => [r.metric, r.protocol])).toEqual([[31, '252'], [32, 'bird']])
    expect(at[0].nexthops.map((n: any) => n.gateway)).toEqual(['172.31.20.5', '172.31.30.6'])

    const journal = JSON.parse(readFileSync(res.journal, 'utf8'))
    expect(journal).toMatchObject({schema: 2, state: 'applied'})
    expect(journal.changes[0].before).toEqual([]) // nothing at metric 31 before
    expect(journal.changes[0].planned).toEqual(items[0].planned) // a line per planned route, as planned
    expect(journal.changes.map((c: any) => Object.keys(c))).toEqual([['mode', 'planned', 'before'], ['mode', 'planned', 'before']])

    const rev = await driver(ns, 'revert', {journal: res.journal})
    expect(rev).toMatchObject({verified: true, errors: []})
    expect(rev.deleted).toHaveLength(2)
    expect(await fullTable(ns)).toEqual(before)
    expect(JSON.parse(readFileSync(res.journal, 'utf8')).state).toBe('reverted')
  })

  it('the overlay: a rule and routes in table 1158 written, a routedoctor route of an earlier version in main withdrawn; revert and a failure put routes and rules back exactly', SLOW, async () => {
    const ns = await makeNamespace()
    await addBirdRoutes(ns)
    await ip(ns, 'route', 'add', '192.168.140.0/26', 'via', '172.31.20.5', 'dev', 'tunl0', 'onlink', 'proto', '158', 'metric', '31')
    const before = await fullTable(ns)
    const rulesBefore = await ip(ns, 'rule', 'show')
    const old = (JSON.parse(await ip(ns, '-j', '-d', 'route', 'show', 'table', 'all')) as any[]).find((r) => r.dst === '192.168.140.0/26')
    expect(old.protocol).toBe('158')
    const overlay = (dst: string, gws: string[]) => planned(dst, 0, gws.map((g) => [g, 'tunl0']), {action: 'replace', table: '1158', tableId: 1158, protocol: '158'})
    const withdraw = {...planned('192.168.140.0/26', 31, [['172.31.20.5', 'tunl0']]), action: 'delete', protocol: '158'}
    const plan = {
      settings: {table: 1158, rulePriority: 32000, protocol: '158'},
      items: [
        {action: 'replace', mode: 'overlay', planned: overlay('192.168.110.128/26', ['172.31.20.5'])},
        {action: 'replace', mode: 'overlay', planned: overlay('192.168.140.0/26', ['172.31.30.6'])},
        {action: 'delete', mode: 'delete', planned: withdraw},
      ],
      rules: [{action: 'add', priority: 32000, to: '192.168.0.0/16', table: 1158}],
      kept: 0,
    }
    const res = await driver(ns, 'apply', {plan, journalDir, watchSeconds: 1})
    expect(res).toMatchObject({verified: true, errors: []})
    expect(res.rules).toEqual(['added 32000: from all to 192.168.0.0/16 lookup 1158'])
    expect(await ip(ns, 'rule', 'show')).toContain('32000:\tfrom all to 192.168.0.0/16 lookup 1158 proto 158')
    expect((await routesAt(ns, '192.168.140.0/26')).map((r) => [r.table, r.protocol, r.gateway])).toEqual([['1158', '158', '172.31.30.6']])
    // the kernel follows the rule into the overlay table, and falls through to main where the overlay has nothing
    expect(JSON.parse(await ip(ns, '-j', 'route', 'get', '192.168.110.130'))[0]).toMatchObject({gateway: '172.31.20.5', dev: 'tunl0'})
    expect(JSON.parse(await ip(ns, '-j', 'route', 'get', '192.168.200.10'))[0]).toMatchObject({gateway: '172.31.20.5', dev: 'tunl0'})
    const journal = JSON.parse(readFileSync(res.journal, 'utf8'))
    expect(journal).toMatchObject({schema: 3, state: 'applied', rules: [{action: 'add', existed: false}]})
    expect(journal.changes.map((c: any) => [c.mode, c.before.length])).toEqual([['overlay', 0], ['overlay', 0], ['delete', 1]])

    const rev = await driver(ns, 'revert', {journal: res.journal})
    expect(rev).toMatchObject({verified: true, errors: []})
    expect(rev.rules).toEqual(['removed 32000: from all to 192.168.0.0/16 lookup 1158'])
    expect(await fullTable(ns)).toEqual(before)
    expect(await ip(ns, 'rule', 'show')).toBe(rulesBefore)

    // a failure after the first route write: the rule and every route as they were
    const failed = await driver(ns, 'apply', {plan, journalDir, watchSeconds: 0, failAfter: 1})
    expect(failed.errors[0]).toMatchObject({code: 'E_INJECTED'})
    expect(failed).toMatchObject({restored: true, verified: false})
    expect(await fullTable(ns)).toEqual(before)
    expect(await ip(ns, 'rule', 'show')).toBe(rulesBefore)

    // a rule removed (the overlay emptied) is put back by revert, with its protocol
    await ip(ns, 'rule', 'add', 'priority', '32000', 'to', '192.168.0.0/16', 'lookup', '1158', 'proto', '158')
    const withRule = await ip(ns, 'rule', 'show')
    const empty = {...plan, items: [], rules: [{action: 'delete', priority: 32000, to: '192.168.0.0/16', table: 1158}]}
    const del = await driver(ns, 'apply', {plan: empty, journalDir, watchSeconds: 0})
    expect(del).toMatchObject({verified: true, errors: [], rules: ['removed 32000: from all to 192.168.0.0/16 lookup 1158']})
    expect(await ip(ns, 'rule', 'show')).toBe(rulesBefore)
    expect(await driver(ns, 'revert', {journal: del.journal})).toMatchObject({verified: true, errors: []})
    expect(await ip(ns, 'rule', 'show')).toBe(withRule)
  })

  it('a rule another writer adds between the journal\'s read and the apply\'s write (EEXIST) is journaled as present before: no restore or revert removes it', SLOW, async () => {
    const ns = await makeNamespace()
    await addBirdRoutes(ns)
    const before = await fullTable(ns)
    const rulesBefore = await ip(ns, 'rule', 'show')
    const overlay = planned('192.168.110.128/26', 0, [['172.31.20.5', 'tunl0']], {action: 'replace', table: '1158', tableId: 1158, protocol: '158'})
    const plan = {
      settings: {table: 1158, rulePriority: 32000, protocol: '158'},
      items: [{action: 'replace', mode: 'overlay', planned: overlay}],
      rules: [{action: 'add', priority: 32000, to: '192.168.0.0/16', table: 1158}],
      kept: 0,
    }
    // the same rule as routedoctor writes it (another routedoctor, or watch --reconcile), just before the apply's add
    const ruleRace = {index: 0, rule: ['priority', '32000', 'to', '192.168.0.0/16', 'lookup', '1158', 'proto', '158']}
    const theirs = '32000:\tfrom all to 192.168.0.0/16 lookup 1158 proto 158'

    // the write fails after it: the restore puts the route back and leaves their rule
    const failed = await driver(ns, 'apply', {plan, journalDir, watchSeconds: 0, failAfter: 1, ruleRace})
    expect(failed.errors[0]).toMatchObject({code: 'E_INJECTED'})
    expect(failed).toMatchObject({restored: true, verified: false})
    expect(await fullTable(ns)).toEqual(before)
    expect(await ip(ns, 'rule', 'show')).toContain(theirs)
    const j = JSON.parse(readFileSync(failed.journal, 'utf8'))
    expect(j.rulesPresent).toEqual([0])
    await ip(ns, 'rule', 'del', 'priority', '32000')
    expect(await ip(ns, 'rule', 'show')).toBe(rulesBefore)

    // the write succeeds: verified; the revert withdraws the route and leaves their rule
    const res = await driver(ns, 'apply', {plan, journalDir, watchSeconds: 0, ruleRace})
    expect(res).toMatchObject({verified: true, errors: []})
    // what `fix --apply --json` gives as appliedRules: nothing was added, the rule was there
    expect(res.rules).toEqual(['present 32000: from all to 192.168.0.0/16 lookup 1158'])
    expect(JSON.parse(readFileSync(res.journal, 'utf8'))).toMatchObject({state: 'applied', rules: [{action: 'add'}], rulesPresent: [0]})
    const rev = await driver(ns, 'revert', {journal: res.journal})
    expect(rev).toMatchObject({verified: true, errors: []})
    expect(rev.rules).toBeUndefined()
    expect(await fullTable(ns)).toEqual(before)
    expect(await ip(ns, 'rule', 'show')).toContain(theirs)
  })

  it('replace: overwrites BIRD 1.6 style metric-0 routes; revert puts them back exactly', SLOW, async () => {
    const ns = await makeNamespace()
    await addBirdRoutes(ns)
    const before = await fullTable(ns)
    const bird = (await driver<{routes: KernelRoute[]}>(ns, 'dump')).routes.find((r) => r.dst === '192.168.120.0/26')!
    const items = [
      {mode: 'replace', replaces: bird, planned: planned('192.168.120.0/26', 0, [['172.31.20.5', 'tunl0'], ['172.31.30.6', 'tunl0']])},
      {mode: 'replace', planned: planned('192.168.130.0/26', 32, [['172.31.20.5', 'tunl0']])}, // over the unreachable one
    ]
    const res = await driver(ns, 'apply', {items, journalDir, watchSeconds: 1})
    expect(res).toMatchObject({verified: true, errors: []})
    const at = await routesAt(ns, '192.168.120.0/26')
    expect(at).toHaveLength(1)
    expect(at[0]).toMatchObject({protocol: '252', nexthops: [{gateway: '172.31.20.5', dev: 'tunl0'}, {gateway: '172.31.30.6', dev: 'tunl0'}]})
    expect((await routesAt(ns, '192.168.130.0/26'))[0]).toMatchObject({type: 'unicast', protocol: '252', gateway: '172.31.20.5'})

    const journal = JSON.parse(readFileSync(res.journal, 'utf8'))
    expect(journal.changes[0].before.map((b: any) => b.route.protocol)).toEqual(['bird'])
    expect(journal.changes[1].before[0].route.type).toBe('unreachable')

    expect(await driver(ns, 'revert', {journal: res.journal})).toMatchObject({verified: true, errors: []})
    expect(await fullTable(ns)).toEqual(before)
  })

  it('a next-hop device that vanishes between planning and apply: ENODEV, table exactly as it was', SLOW, async () => {
    const ns = await makeNamespace()
    await addBirdRoutes(ns)
    await ip(ns, 'link', 'add', 'eth9', 'type', 'veth', 'peer', 'name', 'eth9p')
    await ip(ns, 'link', 'set', 'eth9', 'up')
    await ip(ns, 'link', 'set', 'eth9p', 'up')
    const before = JSON.parse(await ip(ns, '-4', '-j', '-d', 'route', 'show', 'table', 'all'))
    const items = [
      {mode: 'beside', planned: planned('192.168.200.10/32', 31, [['172.31.20.5', 'tunl0']])},
      {mode: 'beside', planned: planned('192.168.110.128/26', 31, [['172.31.20.5', 'eth9']])},
      {mode: 'replace', planned: planned('192.168.130.0/26', 32, [['172.31.20.5', 'tunl0']])},
    ]
    const res = await driver(ns, 'apply', {items, journalDir, watchSeconds: 0, vanish: {index: 1, dev: 'eth9'}})
    expect(res.errors[0]).toMatchObject({errno: 'ENODEV', dst: '192.168.110.128/26'})
    expect(res).toMatchObject({verified: false, restored: true, applied: []})
    // eth9 had no IPv4 address, so no IPv4 route went with it
    expect(JSON.parse(await ip(ns, '-4', '-j', '-d', 'route', 'show', 'table', 'all'))).toEqual(before)
    expect(JSON.parse(readFileSync(res.journal, 'utf8')).state).toBe('restored')
  })

  it('a kernel error on the 2nd of 3 routes, or an injected failure after 2 writes: table exactly as it was', SLOW, async () => {
    const ns = await makeNamespace()
    await addBirdRoutes(ns)
    const before = await fullTable(ns)
    const bad = {...planned('192.168.110.128/26', 31, []), nexthops: [{gateway: '172.31.99.1', dev: 'eth0', onlink: false, weight: 1}]}
    const items = [
      {mode: 'replace', planned: planned('192.168.130.0/26', 32, [['172.31.20.5', 'tunl0']])},
      {mode: 'beside', planned: bad},
      {mode: 'beside', planned: planned('192.168.200.10/32', 31, [['172.31.20.5', 'tunl0']])},
    ]
    const res = await driver(ns, 'apply', {items, journalDir, watchSeconds: 0})
    expect(res.errors[0]).toMatchObject({errno: 'ENETUNREACH', dst: '192.168.110.128/26'})
    expect(res).toMatchObject({restored: true, verified: false})
    expect(await fullTable(ns)).toEqual(before)

    const good = [items[0], {mode: 'beside', planned: planned('192.168.110.128/26', 31, [['172.31.20.5', 'tunl0']])}, items[2]]
    const injected = await driver(ns, 'apply', {items: good, journalDir, watchSeconds: 0, failAfter: 2})
    expect(injected.errors[0]).toMatchObject({code: 'E_INJECTED'})
    expect(injected).toMatchObject({restored: true, verified: false})
    expect(await fullTable(ns)).toEqual(before)
  })

  it('pipelined writes: 600 routes in batches, a kernel error on #400 is named and the table put back exactly; a clean 600 applies and reverts exactly', SLOW, async () => {
    const ns = await makeNamespace()
    await addBirdRoutes(ns)
    const before = await fullTable(ns)
    const many = Array.from({length: 600}, (_, i) => ({mode: 'beside', planned: planned(`10.${50 + (i >> 8)}.${i & 255}.0/24`, 31, [['172.31.20.5', 'tunl0']])}))
    const bad = {mode: 'beside', planned: {...many[400].planned, nexthops: [{gateway: '172.31.99.1', dev: 'eth0', onlink: false, weight: 1}]}}
    const res = await driver(ns, 'apply', {items: [...many.slice(0, 400), bad, ...many.slice(401)], journalDir, watchSeconds: 0})
    expect(res.errors[0]).toMatchObject({errno: 'ENETUNREACH', dst: bad.planned.dst})
    expect(res).toMatchObject({restored: true, verified: false, applied: []})
    expect(await fullTable(ns)).toEqual(before)

    const ok = await driver(ns, 'apply', {items: many, journalDir, watchSeconds: 0})
    expect(ok).toMatchObject({verified: true, errors: []})
    expect(ok.applied).toHaveLength(600)
    expect(JSON.parse(await ip(ns, '-j', 'route', 'show', 'proto', '252'))).toHaveLength(600)
    const rev = await driver(ns, 'revert', {journal: ok.journal})
    expect(rev).toMatchObject({verified: true, errors: []})
    expect(await fullTable(ns)).toEqual(before)
  })

  it('routes sharing one frozen next-hop list, as the planner makes them: each written with its own destination; a missing device fails every route through it, nothing written', SLOW, async () => {
    const ns = await makeNamespace()
    await addBirdRoutes(ns)
    const before = await fullTable(ns)
    const via = (i: number): Array<[string, string]> => (i % 3 === 0 ? [['172.31.20.5', 'tunl0']] : i % 3 === 1 ? [['172.31.30.6', 'tunl0']] : [['172.31.20.5', 'tunl0'], ['172.31.30.6', 'tunl0']])
    const many = Array.from({length: 300}, (_, i) => ({mode: 'beside', planned: planned(`10.${60 + (i >> 8)}.${i & 255}.0/24`, 31, via(i))}))
    const ok = await driver(ns, 'apply', {items: many, journalDir, watchSeconds: 0, shareNexthops: true})
    expect(ok).toMatchObject({verified: true, errors: []})
    const written = JSON.parse(await ip(ns, '-j', 'route', 'show', 'proto', '252')) as any[]
    expect(written).toHaveLength(300)
    // every route under its own destination, with the next hops of its own list
    const hopsOf = (r: any) => (r.nexthops ?? [r]).map((n: any) => n.gateway).sort().join(',')
    expect(new Map(written.map((r) => [r.dst, hopsOf(r)]))).toEqual(new Map(many.map((m, i) => [m.planned.dst, via(i).map(([g]) => g).sort().join(',')])))
    expect(await driver(ns, 'revert', {journal: ok.journal})).toMatchObject({verified: true, errors: []})
    expect(await fullTable(ns)).toEqual(before)

    // a third of them through a device that is not there: each of those fails (not only the first), nothing is written
    const gone = many.map((m, i) => (i % 3 === 1 ? {...m, planned: {...m.planned, nexthops: [{gateway: '172.31.30.6', dev: 'eth7', onlink: true, weight: 1}]}} : m))
    const res = await driver(ns, 'apply', {items: gone, journalDir, watchSeconds: 0, shareNexthops: true})
    expect(res).toMatchObject({verified: false, applied: []})
    expect(res.errors).toHaveLength(100)
    expect(res.errors.map((e: any) => e.dst)).toEqual(gone.filter((_m, i) => i % 3 === 1).map((m) => m.planned.dst))
    expect(res.errors.every((e: any) => e.code === 'E_NETLINK_ENODEV')).toBe(true)
    expect(await fullTable(ns)).toEqual(before)
  })

  async function withLoop<T>(ns: string, script: string, fn: () => Promise<T>): Promise<T> {
    const loop: ResultPromise = execa('ip', ['netns', 'exec', ns, 'sh', '-c', `while :; do ${script}; sleep 0.3; done`], {detached: true, reject: false, stdio: 'ignore'})
    try {
      return await fn()
    } finally {
      if (loop.pid) process.kill(-loop.pid, 'SIGTERM')
      await loop
    }
  }

  it('a route war (the replaced route re-installed) is detected, reported with the durable fix, and restored', SLOW, async () => {
    const ns = await makeNamespace()
    await addBirdRoutes(ns)
    const before = await fullTable(ns)
    const items = [{mode: 'replace', planned: planned('192.168.130.0/26', 32, [['172.31.20.5', 'tunl0']])}]
    const res = await withLoop(ns, 'ip route replace unreachable 192.168.130.0/26 proto bird metric 32', () => driver(ns, 'apply', {items, journalDir, watchSeconds: 3}))
    expect(res.routeWar?.[0]).toMatchObject({dst: '192.168.130.0/26', kind: 'reinstalled', by: 'bird'})
    expect(res.routeWar[0].advice).toContain('onlink = true')
    expect(res).toMatchObject({verified: false, restored: true})
    expect(await fullTable(ns)).toEqual(before)
  })

  it('a route war (ours deleted) is detected and the table restored', SLOW, async () => {
    const ns = await makeNamespace()
    await addBirdRoutes(ns)
    const before = await fullTable(ns)
    const items = [{mode: 'beside', planned: planned('192.168.200.10/32', 31, [['172.31.20.5', 'tunl0']])}]
    const res = await withLoop(ns, 'ip route del 192.168.200.10/32 metric 31 proto 252 2>/dev/null', () => driver(ns, 'apply', {items, journalDir, watchSeconds: 3}))
    expect(res.routeWar?.[0]).toMatchObject({dst: '192.168.200.10/32', kind: 'removed'})
    expect(res.restored).toBe(true)
    expect(await fullTable(ns)).toEqual(before)
  })
})
