// loadSnapshot releases the text of sources that are only cited rendered (the kernel's JSON route dump):
// what check and explain report must not change, and the file must still count as present.
import {describe, expect, it} from 'vitest'

import {readSnapshotDir} from '../../src/collect/snapshot-dir.js'
import {buildSnapshot} from '../../src/model/build.js'
import {Context} from '../../src/model/context.js'
import {loadSnapshot} from '../../src/services/load.js'
import {checkReport, explainReport} from '../../src/services/report.js'
import {scenarioDirs} from '../helpers.js'

describe('loadSnapshot', () => {
  it.each(scenarioDirs())('%s: check and explain of every prefix are the same without the route dump text', async (dir) => {
    const full = new Context(buildSnapshot(await readSnapshotDir(dir)))
    const snapshot = await loadSnapshot({from: dir})
    const lean = new Context(snapshot)
    const dump = snapshot.files.find((f) => f.name === 'ip-j-d-route.json')
    if (dump) {
      expect(dump.text).toBe('')
      expect(full.snapshot.files.find((f) => f.name === 'ip-j-d-route.json')!.text!.length).toBeGreaterThan(0)
      expect(lean.haveKernel).toBe(true)
    }
    const report = checkReport(lean)
    expect(report).toEqual(checkReport(full))
    for (const line of report.prefixes) expect(explainReport(lean, line.prefix)).toEqual(explainReport(full, line.prefix))
  })
})
