import {spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {afterEach, describe, expect, it} from 'vitest'

import type {KernelRoute, PlannedRoute} from '../../src/model/types.js'
import {matchesPlanned, routeIdentity} from '../../src/netlink/apply.js'
import {ipRouteReplace as toIpRouteReplace} from '../../src/model/format.js'
import {LOCK_NAME, acquireLock, newJournal, newJournalPath, readJournal, setJournalState, writeJournal} from '../../src/netlink/journal.js'

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
    expect(() => readJournal(path)).toThrow(/not JSON/)
  })
})

describe('apply lock', () => {
  it('a second apply cannot take the lock while the first holds it', () => {
    const dir = tmp()
    const release = acquireLock(dir)
    expect(readFileSync(join(dir, LOCK_NAME), 'utf8').trim()).toBe(String(process.pid))
    expect(() => acquireLock(dir)).toThrow(/another routedoctor apply is running/)
    release()
    expect(existsSync(join(dir, LOCK_NAME))).toBe(false)
    acquireLock(dir)()
  })
  it('a lock left by a process that is gone is stale and taken over', () => {
    const dir = tmp()
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)']).stdout.toString().trim()
    writeFileSync(join(dir, LOCK_NAME), `${dead}\n`)
    const release = acquireLock(dir)
    expect(readFileSync(join(dir, LOCK_NAME), 'utf8').trim()).toBe(String(process.pid))
    release()
  })
})
