// The apply engine's fast paths give exactly what the slow ones gave, and the pipelined
// writes attribute a failure to its route and restore exactly, against an in-memory kernel.
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import fc from 'fast-check'
import {afterEach, describe, expect, it} from 'vitest'

import {canonicalPrefix} from '../../src/model/prefix.js'
import type {PlannedRoute} from '../../src/model/types.js'
import {WRITE_WINDOW, applyPlan, matchesPlanned, plannedSpec, specMatchesPlanned, type PlanItem} from '../../src/netlink/apply.js'
import {type DumpedRoute, NetlinkError, type RouteClient, netlinkError} from '../../src/netlink/client.js'
import {
  type RouteSpec, encodeRoute, encodeRouteMessages, parseRouteMessage, routeKeyText, routeMessageKey, toKernelRoute,
} from '../../src/netlink/codec.js'
import {journalText, newJournal, readJournal, setJournalState, writeJournal} from '../../src/netlink/journal.js'

const dirs: string[] = []
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'h12-fp-'))
  dirs.push(d)
  return d
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, {recursive: true, force: true})
})

const octet = fc.integer({min: 0, max: 255})
const quad = fc.tuple(octet, octet, octet, octet).map((o) => o.join('.'))

const links = new Map([[2, 'tunl0'], [3, 'eth0']])
const pos = {file: 'rtnetlink', line: 1, endLine: 1}

describe('specMatchesPlanned', () => {
  const gw = fc.constantFrom('172.20.0.10', '172.20.1.11', 'fe80::1')
  const nh = fc.record({
    gateway: gw,
    ifindex: fc.constantFrom(2, 3, 9),
    onlink: fc.boolean(),
    weight: fc.integer({min: 1, max: 3}),
  })
  const spec = fc
    .record({
      type: fc.constantFrom(1, 1, 1, 6, 0),
      protocol: fc.constantFrom(158, 12, 252),
      nexthops: fc.array(nh, {minLength: 0, maxLength: 3}),
    })
    .map((r): RouteSpec => ({
      family: 'inet',
      dst: '10.0.0.64/26',
      tableId: 254,
      metric: 31,
      scope: 0,
      flags: r.nexthops.length === 1 && r.nexthops[0].onlink ? 4 : 0,
      ...r,
    }))
  const planned = fc
    .record({
      protocol: fc.constantFrom('158', 'bird', '12', '252', 'nonesuch'),
      nexthops: fc.array(
        fc.record({
          gateway: gw,
          dev: fc.constantFrom('tunl0', 'eth0', 'if9'),
          onlink: fc.boolean(),
          weight: fc.integer({min: 1, max: 3}),
        }),
        {minLength: 1, maxLength: 3},
      ),
    })
    .map((r): PlannedRoute => ({dst: '10.0.0.64/26', table: 'main', tableId: 254, metric: 31, ...r}))

  it('agrees with matchesPlanned on the route the spec decodes to', () => {
    fc.assert(fc.property(spec, planned, (s, p) => {
      // as dumpRoutes leaves a spec: next-hop devs named where known
      for (const n of s.nexthops) if (n.ifindex) n.dev = links.get(n.ifindex)
      expect(specMatchesPlanned(s, p)).toBe(matchesPlanned(toKernelRoute(s, links, pos), p))
    }), {numRuns: 2000})
  })

  it('a written plan matches itself after the wire', () => {
    const p: PlannedRoute = {dst: '10.0.0.64/26', table: 'main', tableId: 254, metric: 31, protocol: '158', nexthops: [{gateway: '172.20.0.10', dev: 'tunl0', onlink: true, weight: 1}]}
    const back = parseRouteMessage(encodeRoute(plannedSpec(p, (d) => (d === 'tunl0' ? 2 : undefined))))
    for (const n of back.nexthops) if (n.ifindex) n.dev = links.get(n.ifindex)
    expect(specMatchesPlanned(back, p)).toBe(true)
    expect(matchesPlanned(toKernelRoute(back, links, pos), p)).toBe(true)
  })
})

describe('codec fast paths', () => {
  const base = {family: 'inet' as const, tableId: 254, protocol: 158, metric: 31, type: 1, scope: 0}

  it('encodeRouteMessages is each route\'s encodeRoute behind its own header', () => {
    const routes: RouteSpec[] = [
      {...base, dst: '10.0.0.64/26', nexthops: [{gateway: '172.20.0.10', ifindex: 2, onlink: true, weight: 1}]},
      {...base, dst: '10.0.1.0/24', tableId: 1000, nexthops: [{gateway: '172.20.0.10', ifindex: 2, onlink: true, weight: 2}, {gateway: 'fe80::1', ifindex: 3, weight: 1}]},
      {...base, dst: '0.0.0.0/0', nexthops: [{gateway: '10.1.2.3', ifindex: 3}]},
    ]
    const buf = encodeRouteMessages(routes, 'new', (i) => ({type: 24, flags: 0x501 + i, seq: 100 + i, port: 77}))
    let o = 0
    routes.forEach((r, i) => {
      const payload = encodeRoute(r)
      expect(buf.readUInt32LE(o)).toBe(16 + payload.length)
      expect([
        buf.readUInt16LE(o + 4),
        buf.readUInt16LE(o + 6),
        buf.readUInt32LE(o + 8),
        buf.readUInt32LE(o + 12),
      ]).toEqual([24, 0x501 + i, 100 + i, 77])
      expect(buf.subarray(o + 16, o + 16 + payload.length).toString('hex')).toBe(payload.toString('hex'))
      o += 16 + payload.length
    })
    expect(o).toBe(buf.length)
  })

  it('routeMessageKey is the key of the decoded route; none for a TOS route', () => {
    fc.assert(
      fc.property(
        quad,
        fc.integer({min: 0, max: 32}),
        fc.integer({min: 0, max: 2 ** 32 - 1}),
        fc.constantFrom(254, 255, 1000),
        (addr, len, metric, tableId) => {
          const dst = canonicalPrefix(`${addr}/${len}`, 'inet')!
          const payload = encodeRoute({
            ...base,
            dst,
            metric,
            tableId,
            nexthops: [{gateway: '172.20.0.10', ifindex: 2, onlink: true, weight: 1}],
          })
          const s = parseRouteMessage(payload)
          expect(routeMessageKey(payload)).toBe(routeKeyText(s.family, s.tableId, s.dst, s.metric))
        },
      ),
    )
    const tos = encodeRoute({...base, dst: '10.0.0.64/26', tos: 0x10, nexthops: []})
    expect(routeMessageKey(tos)).toBeUndefined()
  })
})

describe('journal text', () => {
  it('parses back to the journal, before and after a state change (the changes\' text is reused)', () => {
    const p: PlannedRoute = {dst: '10.0.0.64/26', table: 'main', tableId: 254, metric: 31, protocol: '158', nexthops: [{gateway: '172.20.0.10', dev: 'tunl0', onlink: true, weight: 1}]}
    const write = plannedSpec(p, () => 2)
    const changes = [0, 1, 2].map(() => ({mode: 'beside' as const, key: {family: 'inet' as const, tableId: 254, dst: write.dst, metric: 31}, planned: p, write, ipRoute: 'ip route replace …', before: []}))
    const j = newJournal(changes)
    expect(JSON.parse(journalText(j))).toEqual(JSON.parse(JSON.stringify(j)))
    expect(journalText(j).split('\n').filter((l) => l.startsWith('    {"mode"'))).toHaveLength(3) // a change a line
    const path = join(tmp(), 'j.json')
    writeJournal(path, j)
    setJournalState(path, j, 'applied', 'done')
    expect(readJournal(path)).toEqual(JSON.parse(JSON.stringify(j)))
    expect(readFileSync(path, 'utf8').endsWith('}\n')).toBe(true)
    const empty = newJournal([])
    expect(journalText(empty)).toBe(`${JSON.stringify(empty, null, 2)}\n`)
  })
})

// ------------------------------------------------------------------ the engine on an in-memory kernel

/** A routing table keyed like the kernel's (family, table, dst, metric), replace/delete as RTM_*ROUTE. */
class FakeKernel implements RouteClient {
  table = new Map<string, RouteSpec[]>()
  writes: RouteSpec[] = []
  failAt = new Map<string, number>() // dst → errno for its write
  batches: number[] = []
  // batched: replaceRoutes and prepareReplaces
  constructor(private readonly batched: boolean) {
    if (!batched) (this as {replaceRoutes?: unknown}).replaceRoutes = undefined
    if (!batched) (this as {prepareReplaces?: unknown}).prepareReplaces = undefined
  }
  private key = (s: RouteSpec): string => routeKeyText(s.family, s.tableId, s.dst, s.metric)
  async links(): Promise<Map<number, string>> {
    return new Map(links)
  }
  async linkIndex(name: string): Promise<number | undefined> {
    return [...links].find(([, n]) => n === name)?.[0]
  }
  async dumpRoutes(): Promise<{routes: DumpedRoute[]; undecodable: []}> {
    const routes = [...this.table.values()].flat().map((s) => {
      const spec = parseRouteMessage(encodeRoute(s)) // through the wire, as the kernel gives it back
      for (const n of spec.nexthops) if (n.ifindex) n.dev = links.get(n.ifindex)
      return {spec, route: toKernelRoute(spec, links, pos)}
    })
    return {routes, undecodable: []}
  }
  async scanRoutes(
    _family: unknown,
    visit: (buf: Buffer, start: number, end: number, index: number) => void,
  ): Promise<void> {
    ;[...this.table.values()].flat().forEach((s, i) => {
      const buf = encodeRoute(s) // the wire bytes, as the kernel gives them back
      visit(buf, 0, buf.length, i)
    })
  }
  prepareReplaces(specs: RouteSpec[]): {
    count: number
    send(from: number, to: number): Promise<Array<Error | undefined>>
  } {
    return {count: specs.length, send: (from, to) => this.replaceRoutes(specs.slice(from, to))}
  }
  async replaceRoute(spec: RouteSpec): Promise<void> {
    this.writes.push(spec)
    const errno = this.failAt.get(spec.dst)
    if (errno) throw netlinkError(errno, 'RTM_NEWROUTE', spec)
    this.table.set(this.key(spec), [{...spec, flags: undefined}])
  }
  async replaceRoutes(specs: RouteSpec[]): Promise<Array<Error | undefined>> {
    this.batches.push(specs.length)
    const out: Array<Error | undefined> = []
    for (const s of specs) out.push(await this.replaceRoute(s).then(() => undefined, (e: Error) => e))
    return out
  }
  async addRoute(spec: RouteSpec): Promise<void> {
    await this.replaceRoute(spec)
  }
  async deleteRoute(spec: RouteSpec): Promise<void> {
    if (!this.table.delete(this.key(spec))) throw netlinkError(3, 'RTM_DELROUTE', spec)
  }
  close(): void {}
  snapshot(): string[] {
    return [...this.table.values()].flat().map((s) => encodeRoute(s).toString("hex")).sort() // as the wire has it
  }
}

function items(n: number): PlanItem[] {
  return Array.from({length: n}, (_, i) => {
    const v = 10 * 2 ** 24 + (i + 1) * 64
    const dst = `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}/26`
    return {action: 'replace', mode: 'beside', planned: {dst, table: 'main', tableId: 254, metric: 31, protocol: '158', nexthops: [{gateway: `172.20.0.${10 + (i % 50)}`, dev: 'tunl0', onlink: true, weight: 1}]}}
  })
}

function prefill(k: FakeKernel, plan: PlanItem[]): void {
  // BIRD's routes at metric 32 (left alone), and an older route of ours at metric 31 for a few
  plan.forEach((it, i) => {
    const bird = plannedSpec({...it.planned, protocol: 'bird', metric: 32}, () => 2)
    k.table.set(routeKeyText('inet', 254, bird.dst, 32), [bird])
    if (i % 97 === 0) {
      const old = plannedSpec({...it.planned, nexthops: [{gateway: '172.20.9.9', dev: 'tunl0', onlink: true, weight: 1}]}, () => 2)
      k.table.set(routeKeyText('inet', 254, old.dst, 31), [old])
    }
  })
}

describe.each([true, false])('applyPlan, pipelined writes (client with replaceRoutes: %s)', (batched) => {
  const n = WRITE_WINDOW * 2 + 37

  it('writes every route in plan order, verifies, journals', async () => {
    const k = new FakeKernel(batched)
    const plan = items(n)
    prefill(k, plan)
    const res = await applyPlan(plan, {journalDir: tmp(), watchSeconds: 0, client: k})
    expect(res).toMatchObject({verified: true, errors: []})
    expect(res.applied).toHaveLength(n)
    expect(k.writes.map((w) => w.dst)).toEqual(plan.map((p) => p.planned.dst))
    if (batched) expect(k.batches).toEqual([WRITE_WINDOW, WRITE_WINDOW, 37])
    const journal = readJournal(res.journal)
    expect(journal.state).toBe('applied')
    expect(journal.changes.filter((c) => c.before.length > 0)).toHaveLength(Math.ceil(n / 97))
  })

  it('a kernel error in the middle of a batch: that route is named, nothing after its batch is sent, the table is restored exactly', async () => {
    const k = new FakeKernel(batched)
    const plan = items(n)
    prefill(k, plan)
    const before = k.snapshot()
    const bad = WRITE_WINDOW + 5
    k.failAt.set(plan[bad].planned.dst, 101) // ENETUNREACH
    const res = await applyPlan(plan, {journalDir: tmp(), watchSeconds: 0, client: k})
    expect(res.errors[0]).toMatchObject({errno: 'ENETUNREACH', dst: plan[bad].planned.dst})
    expect(res).toMatchObject({verified: false, restored: true, applied: []})
    // the batch holding the bad route went out whole; the next one never did
    const sent = k.writes.slice(0, batched ? 2 * WRITE_WINDOW : undefined).map((w) => w.dst)
    expect(sent.slice(0, 2 * WRITE_WINDOW)).toEqual(plan.slice(0, 2 * WRITE_WINDOW).map((p) => p.planned.dst))
    expect(k.writes.slice(2 * WRITE_WINDOW).every((w) => w.protocol === 158 && w.nexthops[0].gateway === '172.20.9.9')).toBe(true) // only restores
    expect(k.snapshot()).toEqual(before)
    expect(readJournal(res.journal).state).toBe('restored')
  })

  it('an injected failure after N writes: exactly N go out, then the table is restored', async () => {
    const k = new FakeKernel(batched)
    const plan = items(n)
    prefill(k, plan)
    const before = k.snapshot()
    const res = await applyPlan(plan, {journalDir: tmp(), watchSeconds: 0, client: k, failAfter: WRITE_WINDOW + 3})
    expect(res.errors[0]).toMatchObject({code: 'E_INJECTED'})
    expect(res.errors[0].message).toContain(`after ${WRITE_WINDOW + 3} route write`)
    expect(k.writes.slice(0, WRITE_WINDOW + 3).map((w) => w.dst)).toEqual(
      plan.slice(0, WRITE_WINDOW + 3).map((p) => p.planned.dst),
    )
    expect(k.writes.slice(WRITE_WINDOW + 3).every((w) => w.nexthops[0].gateway === '172.20.9.9')).toBe(true) // only restores
    expect(res.restored).toBe(true)
    expect(k.snapshot()).toEqual(before)
  })

  it('beforeWrite runs before each route, each write landed before the next hook', async () => {
    const k = new FakeKernel(batched)
    const plan = items(5)
    const seen: number[] = []
    const res = await applyPlan(plan, {
      journalDir: tmp(), watchSeconds: 0, client: k,
      beforeWrite: (i) => {
        expect(k.writes).toHaveLength(i)
        seen.push(i)
      },
    })
    expect(res.verified).toBe(true)
    expect(seen).toEqual([0, 1, 2, 3, 4])
  })

  it('a route gone right after its write is caught by the read-back, and the table restored', async () => {
    const k = new FakeKernel(batched)
    const plan = items(40)
    prefill(k, plan)
    const before = k.snapshot()
    const write = k.replaceRoute.bind(k)
    k.replaceRoute = async (spec) => {
      await write(spec)
      if (spec.dst === plan[17].planned.dst && spec.protocol === 158 && spec.metric === 31) k.table.delete(routeKeyText('inet', 254, spec.dst, 31))
    }
    const res = await applyPlan(plan, {journalDir: tmp(), watchSeconds: 0, client: k})
    expect(res.errors[0]).toMatchObject({code: 'E_VERIFY'})
    expect(res.routeWar).toEqual([expect.objectContaining({dst: plan[17].planned.dst, kind: 'removed'})])
    expect(res.restored).toBe(true)
    expect(k.snapshot()).toEqual(before)
  })
})

describe('read-back', () => {
  it('a route of another protocol at our key right after the write is a route war; the restore leaves it alone', async () => {
    const k = new FakeKernel(true)
    const plan = items(40)
    prefill(k, plan)
    const before = k.snapshot()
    const write = k.replaceRoute.bind(k)
    k.replaceRoute = async (spec) => {
      await write(spec)
      if (spec.dst === plan[23].planned.dst && spec.protocol === 158 && spec.metric === 31) {
        k.table.set(routeKeyText('inet', 254, spec.dst, 31), [{...spec, protocol: 12}]) // BIRD's, at our key
      }
    }
    const res = await applyPlan(plan, {journalDir: tmp(), watchSeconds: 0, client: k})
    expect(res.errors[0]).toMatchObject({code: 'E_VERIFY'})
    expect(res.routeWar).toEqual([expect.objectContaining({dst: plan[23].planned.dst, kind: 'replaced', by: 'bird'})])
    // every other key is put back; that one holds another owner's route, which is not ours to delete
    expect(res.restored).toBe(false)
    expect(res.errors.at(-1)?.message).toContain(`${plan[23].planned.dst} table main metric 31 is not as the journal saved it`)
    k.table.delete(routeKeyText('inet', 254, plan[23].planned.dst, 31))
    expect(k.snapshot()).toEqual(before)
  })
})

it('NetlinkError carries its route', () => {
  const e = netlinkError(101, 'RTM_NEWROUTE', {family: 'inet', dst: '10.0.0.64/26', tableId: 254, protocol: 158, metric: 31, type: 1, scope: 0, nexthops: []})
  expect(e).toBeInstanceOf(NetlinkError)
  expect(e.route?.dst).toBe('10.0.0.64/26')
})
