import {spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {basename, join} from 'node:path'

import {afterEach, describe, expect, it} from 'vitest'

import {RouteDoctorError} from '../../src/model/errors.js'
import type {KernelRoute, PlannedRoute} from '../../src/model/types.js'
import {matchesPlanned, plannedSpec, routeIdentity} from '../../src/netlink/apply.js'
import {ipRouteReplace as toIpRouteReplace} from '../../src/model/format.js'
import {
  JournalFile, LOCK_NAME, acquireLock, changeKey, journalText, newJournal, newJournalPath, pruneJournals, readJournal,
  setJournalState, writeJournal,
} from '../../src/netlink/journal.js'
import {parseLock} from '../../src/netlink/lock.js'

const dirs: string[] = []
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'h5-jt-'))
  dirs.push(d)
  return d
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, {recursive: true, force: true})
})

const pos = {file: 'rtnetlink', line: 1, endLine: 1}
const plannedMulti: PlannedRoute = {
  dst: '192.168.200.10/32', table: 'main', tableId: 254, metric: 31, protocol: '252',
  nexthops: [
    {gateway: '172.31.20.5', dev: 'tunl0', onlink: true, weight: 1},
    {gateway: '172.31.30.6', dev: 'tunl0', onlink: true, weight: 1},
  ],
}
const kernelMulti: KernelRoute = {
  family: 'inet', type: 'unicast', dst: '192.168.200.10/32', table: 'main', tableId: 254, protocol: '252', scope: 'global', metric: 31,
  flags: ['linkdown'], pos,
  nexthops: [
    {gateway: {family: 'inet', address: '172.31.30.6'}, dev: 'tunl0', weight: 1, flags: ['onlink', 'linkdown']},
    {gateway: {family: 'inet', address: '172.31.20.5'}, dev: 'tunl0', weight: 1, flags: ['onlink', 'linkdown']},
  ],
}

describe('toIpRouteReplace', () => {
  it('prints the multipath line a person can paste', () => {
    expect(toIpRouteReplace(plannedMulti)).toBe(
      'ip route replace 192.168.200.10/32 proto 252 metric 31 nexthop via 172.31.20.5 dev tunl0 weight 1 onlink nexthop via 172.31.30.6 dev tunl0 weight 1 onlink',
    )
  })
  it('single path, table number, IPv6 gateway as `via inet6`', () => {
    expect(toIpRouteReplace({...plannedMulti, table: '1000', tableId: 1000, nexthops: [{gateway: 'fe80::1', dev: 'eth0', onlink: false, weight: 1}]})).toBe(
      'ip route replace 192.168.200.10/32 table 1000 proto 252 metric 31 via inet6 fe80::1 dev eth0',
    )
  })
})

describe('matchesPlanned / routeIdentity', () => {
  it('next-hop order and link state do not matter; gateway, weight, onlink, metric, protocol do', () => {
    expect(matchesPlanned(kernelMulti, plannedMulti)).toBe(true)
    expect(matchesPlanned({...kernelMulti, metric: 32}, plannedMulti)).toBe(false)
    expect(matchesPlanned({...kernelMulti, protocol: 'bird'}, plannedMulti)).toBe(false)
    const noOnlink = {...kernelMulti, nexthops: kernelMulti.nexthops.map((n, i) => (i ? n : {...n, flags: ['linkdown']}))}
    expect(matchesPlanned(noOnlink, plannedMulti)).toBe(false)
    const weighted = {...kernelMulti, nexthops: kernelMulti.nexthops.map((n, i) => (i ? n : {...n, weight: 3}))}
    expect(matchesPlanned(weighted, plannedMulti)).toBe(false)
    expect(matchesPlanned({...kernelMulti, nexthops: kernelMulti.nexthops.slice(1)}, plannedMulti)).toBe(false)
  })
  it('identity ignores linkdown and source position, not the type', () => {
    const up = {...kernelMulti, flags: [], pos: {...pos, line: 9}, nexthops: kernelMulti.nexthops.map((n) => ({...n, flags: ['onlink']}))}
    expect(routeIdentity(up)).toBe(routeIdentity(kernelMulti))
    expect(routeIdentity({...kernelMulti, type: 'blackhole'})).not.toBe(routeIdentity(kernelMulti))
  })
})

describe('journal', () => {
  it('round-trips through disk and records state changes', () => {
    const dir = tmp()
    const path = newJournalPath(dir)
    const j = newJournal([])
    writeJournal(path, j)
    setJournalState(path, j, 'applied')
    const back = readJournal(path)
    expect(back.state).toBe('applied')
    expect(back.history.map((h) => h.state)).toEqual(['pending', 'applied'])
    expect(existsSync(`${path}.tmp-${process.pid}`)).toBe(false)
  })
  it('refuses a file that is not a routedoctor journal', () => {
    const path = join(tmp(), 'x.json')
    writeFileSync(path, '{"hello": 1}')
    expect(() => readJournal(path)).toThrow(/not a routedoctor journal/)
    writeFileSync(path, 'nope')
    expect(() => readJournal(path)).toThrow(/not a routedoctor journal .*does not parse as JSON/)
    // one line naming the journal and what was expected, not V8's message (which quotes the text, newlines and all)
    writeFileSync(path, 'line one\nline two\n')
    expect(() => readJournal(path)).toThrow(
      new RouteDoctorError(`${path}: not a routedoctor journal (expected the JSON that fix --apply writes; this does not parse as JSON)`, 2, 'E_JOURNAL'))
  })
})

describe('journal schemas', () => {
  it('a change\'s key is the key plannedSpec writes at; schema 1 journals carry it', () => {
    for (const dst of ['10.0.0.64/26', '10.0.0.65/26', '192.168.200.10', '2001:db8::1/64', 'fd00::/8']) {
      const planned = {...plannedMulti, dst, tableId: 1000, metric: 7}
      const spec = plannedSpec(planned, () => 2)
      expect(changeKey({mode: 'beside', planned, before: []})).toEqual({family: spec.family, tableId: 1000, dst: spec.dst, metric: 7})
    }
    const path = join(tmp(), 'old.json')
    const key = {family: 'inet', tableId: 254, dst: '192.168.200.10/32', metric: 31}
    writeFileSync(path, JSON.stringify({
      schema: 1, tool: 'routedoctor', time: 't', host: 'h', pid: 1, state: 'applied',
      changes: [{mode: 'beside', key, planned: plannedMulti, write: {}, ipRoute: 'ip route replace …', before: []}], history: [],
    }))
    const old = readJournal(path)
    expect(old.schema).toBe(1)
    expect(changeKey(old.changes[0])).toEqual(key)
  })
})

describe('journal file of an apply', () => {
  const change = (i: number) => ({
    mode: 'beside' as const,
    key: {family: 'inet' as const, tableId: 254, dst: `10.0.${i}.0/24`, metric: 31},
    planned: {...plannedMulti, dst: `10.0.${i}.0/24`},
    ipRoute: `ip route replace 10.0.${i}.0/24 …`,
    before: i % 3 ? [] : [{route: kernelMulti, spec: {family: 'inet' as const, dst: `10.0.${i}.0/24`, tableId: 254, protocol: 12, metric: 31, type: 1, scope: 0, nexthops: []}}],
  })

  it('is written whole before it is durable, states rewrite only its tail, in place', async () => {
    const path = join(tmp(), 'j.json')
    const changes = Array.from({length: 1200}, (_, i) => change(i)) // more than one chunk of changes
    const j = newJournal(changes)
    const {file, durable} = JournalFile.create(path, j)
    await durable
    expect(readFileSync(path, 'utf8')).toBe(journalText(j))
    expect(readJournal(path)).toEqual(JSON.parse(JSON.stringify(j)))
    const head = readFileSync(path, 'utf8').split('"state"')[0]
    file.setState('applied')
    file.setState('failed', 'a long note that makes the tail longer than it was before, with "quotes" and \n')
    file.setState('restored')
    file.close()
    const text = readFileSync(path, 'utf8')
    expect(text.startsWith(head)).toBe(true)
    expect(text).toBe(journalText(j))
    const back = readJournal(path)
    expect(back.state).toBe('restored')
    expect(back.history.map((h) => h.state)).toEqual(['pending', 'applied', 'failed', 'restored'])
    expect(back.changes).toHaveLength(1200)
    expect(() => JournalFile.create(path, j)).toThrow(/EEXIST/) // a journal is never overwritten
  })

  it('a tail cut short by a crash still gives the changes, as pending', async () => {
    const path = join(tmp(), 'j.json')
    const j = newJournal([change(0), change(1)])
    const {file, durable} = JournalFile.create(path, j)
    await durable
    file.setState('applied')
    file.close()
    const whole = statSync(path).size
    truncateSync(path, whole - 30) // inside the history
    const back = readJournal(path)
    expect(back.changes).toEqual(JSON.parse(JSON.stringify(j.changes)))
    expect(back.state).toBe('pending')
    expect(back.history[0].note).toMatch(/not recorded whole/)
    // cut inside the changes: nothing to recover
    truncateSync(path, readFileSync(path, 'utf8').indexOf('"planned"') + 5)
    expect(() => readJournal(path)).toThrow(/not a routedoctor journal .*does not parse as JSON/)
  })
})

describe('apply lock', () => {
  it('a second apply cannot take the lock while the first holds it', () => {
    const dir = tmp()
    const release = acquireLock(dir)
    expect(parseLock(readFileSync(join(dir, LOCK_NAME), 'utf8'))?.pid).toBe(process.pid)
    expect(() => acquireLock(dir)).toThrow(/another routedoctor apply is running/)
    release()
    expect(existsSync(join(dir, LOCK_NAME))).toBe(false)
    acquireLock(dir)()
  })
  // the DaemonSet's agent is PID 1 of its container at every restart: an agent killed while applying (OOM) left a lock
  // naming 1, which the next one would take for its own holder alive, and never apply nor prune again
  it('a lock naming our own pid that this process does not hold is an earlier process\'s: taken over', () => {
    const dir = tmp()
    writeFileSync(join(dir, LOCK_NAME), `${process.pid}\n`)
    const release = acquireLock(dir)
    expect(() => acquireLock(dir)).toThrow(/another routedoctor apply is running/) // held now: by us
    release()
    expect(existsSync(join(dir, LOCK_NAME))).toBe(false)
  })
  it('a lock left by a process that is gone is stale and taken over', () => {
    const dir = tmp()
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)']).stdout.toString().trim()
    writeFileSync(join(dir, LOCK_NAME), `${dead}\n`)
    const release = acquireLock(dir)
    expect(parseLock(readFileSync(join(dir, LOCK_NAME), 'utf8'))?.pid).toBe(process.pid)
    release()
  })
})

describe('journal retention (watch --reconcile --journal-keep)', () => {
  const change = (i: number) => ({mode: 'overlay' as const, planned: {...plannedMulti, dst: `10.1.${i}.0/24`}, before: []})
  /** A journal of an apply at minute `minute`, in `state`, as the apply leaves it (its tail rewritten in place). */
  async function journalAt(dir: string, minute: number, state: 'applied' | 'pending' | 'restored' | 'failed') {
    const path = newJournalPath(dir, new Date(Date.UTC(2026, 11, 5, 10, minute)))
    const {file, durable} = JournalFile.create(path, newJournal(Array.from({length: 600}, (_, i) => change(i))))
    await durable
    if (state !== 'pending') file.setState(state)
    file.close()
    return path
  }

  it('keeps the newest N, every one an apply left pending, and the protected; removes the rest; the kept revert whole', async () => {
    const dir = tmp()
    const paths: string[] = []
    for (let m = 0; m < 8; m++) paths.push(await journalAt(dir, m, m === 1 ? 'pending' : m === 2 ? 'failed' : 'applied'))
    const cut = await journalAt(dir, 8, 'applied') // the newest, its tail cut by a crash: counted, kept
    truncateSync(cut, statSync(cut).size - 30)
    writeFileSync(join(dir, 'notes.txt'), 'not a journal\n')
    const texts = new Map(paths.map((p) => [p, readFileSync(p, 'utf8')]))
    const r = pruneJournals(dir, 3, new Set([paths[0]]))
    // the newest three (minutes 8, 7, 6) stay; of the older: 1 pending, 2 failed (an apply whose restore failed, or
    // a revert that failed: `fix --revert` of it is what puts the node back), 0 protected
    expect(r.removed.sort()).toEqual([paths[3], paths[4], paths[5]].sort())
    const left = readdirSync(dir).sort()
    expect(left).toEqual(['notes.txt', ...[paths[0], paths[1], paths[2], paths[6], paths[7], cut].map((p) => basename(p))].sort())
    for (const p of [paths[0], paths[1], paths[2], paths[6], paths[7]]) {
      expect(readFileSync(p, 'utf8')).toBe(texts.get(p)) // untouched: `fix --revert` reads what the apply wrote
      expect(readJournal(p).changes).toHaveLength(600)
    }
    expect(existsSync(join(dir, LOCK_NAME))).toBe(false)
  })

  it('removes nothing while an apply or a revert holds the lock', async () => {
    const dir = tmp()
    for (let m = 0; m < 4; m++) await journalAt(dir, m, 'applied')
    const release = acquireLock(dir)
    try {
      expect(pruneJournals(dir, 1)).toEqual({removed: [], busy: true})
    } finally {
      release()
    }
    expect(readdirSync(dir).filter((n) => n.endsWith('.json'))).toHaveLength(4)
    expect(pruneJournals(dir, 1).removed).toHaveLength(3)
  })
})
