// `routedoctor bundle` on a table too big to explain every broken prefix: report.md explains the first
// EXPLAINED and says how many more there are, and the bundle still replays to the directory's report.
import {mkdtempSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {generateSnapshot} from '../../bench/gen-snapshot.mjs'
import {readBundle} from '../../src/bundle/tarball.js'
import {createBundle, EXPLAINED} from '../../src/services/bundle.js'
import {loadSnapshot} from '../load-snapshot.js'
import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import {checkReport} from '../../src/report/report.js'

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rd-bundle-scale-'))
afterAll(() => rmSync(tmp, {recursive: true, force: true}))

describe('a bundle of a large table', () => {
  it('explains the first broken prefixes in report.md, counts the rest, and replays to the same report', async () => {
    const dir = path.join(tmp, 'snap')
    await generateSnapshot(10_000, dir) // a fifth of its prefixes bypass the tunnel: ~1900 broken
    const out = path.join(tmp, 'b.tar.gz')
    const result = await createBundle({from: dir, out, command: ['bundle'], toolVersion: '0.0.0'})
    const direct = checkReport(new SnapshotIndex(await loadSnapshot({from: dir})))
    const broken = direct.prefixes.filter((p) => p.verdict !== 'ok' && p.verdict !== 'local').length
    expect(broken).toBeGreaterThan(EXPLAINED)
    expect(result.summary).toEqual(direct.summary)

    const bundle = await readBundle(out)
    expect(bundle.warnings).toEqual([])
    const md = bundle.reportMd!
    // one fenced explanation per explained prefix, after the check table's own fence
    const explained = md.match(/^```\n\d+\.\d+\.\d+\.\d+\/\d+(?: \(covers [^)]*\))?: [A-Z-]+$/gm) ?? []
    expect(explained).toHaveLength(EXPLAINED)
    expect(md).toContain(`\n${broken - EXPLAINED} more broken prefixes are in the table above, not explained here: \`routedoctor explain PREFIX --from b.tar.gz\` explains any of them.\n`)
    expect(checkReport(new SnapshotIndex(await loadSnapshot({from: out})))).toEqual(direct)
  }, 120_000)
})
