// Counts in the presenters' sentences agree with their nouns ("1 prefix"), and a revert names the table of what it
// removed (routedoctor's routes live in the overlay table, not main).
import {Chalk} from 'chalk'
import {describe, expect, it} from 'vitest'

import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import {checkReport, checkRun, explainReport} from '../../src/report/report.js'
import {renderRevert} from '../../src/render/apply.js'
import {npdResult} from '../../src/render/npd.js'
import {renderCheck, renderExplain, renderFix} from '../../src/render/text.js'
import {watchLineText} from '../../src/render/watch.js'
import {planFix} from '../../src/services/fix.js'
import {buildSnapshot} from '../../src/snapshot/build.js'
import {LAB_HEALTHY, editJsonRoutes, fixtureExists, healthyFiles, loadFiles, tunnelRoute} from '../diagnose/helpers.js'

const plain = new Chalk({level: 0})
const oneBlock = () => new SnapshotIndex(buildSnapshot(loadFiles(LAB_HEALTHY), {pools: ['192.168.82.0/26']}))

describe('one prefix is "1 prefix"', () => {
  it.skipIf(!fixtureExists(LAB_HEALTHY))('in check\'s summary line and check --npd', () => {
    expect(renderCheck(checkReport(oneBlock()), plain).split('\n').at(-1)).toBe('1 prefix (1 ok); 0 errors, 0 warnings.')
    expect(npdResult(checkRun(oneBlock())).line).toBe('ok: 1 prefix, BGP 2/2 Established')
  })

  it('in watch\'s first line', () => {
    const line = watchLineText({at: '12:00:00', kind: 'started', prefixes: 1, verdicts: {ok: 1},
      sessions: {up: 2, total: 2, known: true}}, plain)
    expect(line).toBe('12:00:00 watching: 1 prefix (1 ok), BGP sessions 2/2 Established')
  })

  it('in watch\'s first line when BIRD\'s protocols could not be read: check\'s words, not "0/0 Established"', () => {
    const line = watchLineText({at: '12:00:00', kind: 'started', prefixes: 0, verdicts: {},
      sessions: {up: 0, total: 0, known: false}}, plain)
    expect(line).toBe('12:00:00 watching: 0 prefixes, BGP sessions unknown (no BIRD protocols)')
  })
})

describe('fix --revert', () => {
  it('names the overlay table of a route it removed', () => {
    const out = renderRevert({
      journal: 'j.json', restored: [], errors: [], verified: true,
      deleted: [{dst: '192.168.82.0/26', table: '1158', tableId: 1158, metric: 0, protocol: '158', nexthops: []}],
    } as unknown as Parameters<typeof renderRevert>[0], plain)
    expect(out.split('\n')[0]).toBe('removed 192.168.82.0/26 table 1158 proto 158 metric 0')
  })
})

describe('the routes routedoctor\'s correction leaves beside it', () => {
  it('are named by their owner: Felix\'s proto 80 route is not "BIRD\'s route"', () => {
    const felix = {...tunnelRoute('192.168.82.0/26', '172.31.20.5'), protocol: '80'}
    const ctx = new SnapshotIndex(buildSnapshot(editJsonRoutes(healthyFiles(), {'192.168.82.0/26': felix})))
    const fix = renderFix(planFix(ctx, '192.168.82.0/26').report, plain)
    expect(fix).toContain('\n    in the overlay table 1158, which BIRD never learns; the proto 80 route stays as it is\n')
    expect(renderExplain(explainReport(ctx, '192.168.82.0/26'), plain)).toContain(
      '(in routedoctor\'s overlay table 1158, which BIRD never learns; the proto 80 route stays as it is; routedoctor fix --apply programs it)',
    )
  })
})

describe('what the input lacks is said of where it came from', () => {
  const noBird = () => loadFiles(LAB_HEALTHY).filter((f) => !f.name.startsWith('birdc-'))
  const explained = (origin: {kind: 'live' | 'dir'}) => {
    const ctx = new SnapshotIndex(buildSnapshot(noBird(), {origin}))
    return [renderExplain(explainReport(ctx, '192.168.50.1'), plain), renderExplain(explainReport(ctx, '192.168.110.128/26'), plain)].join('\n')
  }

  it.skipIf(!fixtureExists(LAB_HEALTHY))('live: "read from this node", never "the snapshot"; offline: "in the snapshot"', () => {
    const live = explained({kind: 'live'})
    expect(live).toContain('no BIRD data read from this node')
    expect(live).toContain('no BIRD routes read from this node')
    expect(live).toContain('No BGP session data read from this node')
    expect(live).not.toMatch(/snapshot/i)
    const dir = explained({kind: 'dir'})
    expect(dir).toContain('no BIRD data in the snapshot')
    expect(dir).toContain('no BIRD routes in the snapshot')
  })
})
