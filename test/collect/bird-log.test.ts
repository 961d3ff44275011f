import {writeFileSync} from 'node:fs'
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {birdLogPaths, collectBirdLog} from '../../src/collect/bird-log.js'
import {tempDir} from '../helpers.js'

describe('BIRD log for bundles', () => {
  it('finds log files named in the config', () => {
    expect(birdLogPaths('router id 1.2.3.4;\nlog "/var/log/bird.log" all;\nlog syslog all;\n  log "/tmp/b.log" { warning };\n')).toEqual(['/var/log/bird.log', '/tmp/b.log'])
    expect(birdLogPaths('log syslog all;')).toEqual([])
  })

  it('keeps the last whole lines of the first readable log', async () => {
    const dir = tempDir('rd-log-')
    const file = path.join(dir, 'bird.log')
    writeFileSync(file, Array.from({length: 1000}, (_, i) => `2026-11-29 16:50:${String(i % 60).padStart(2, '0')} <INFO> line ${i}`).join('\n') + '\n')
    const log = await collectBirdLog(`log "${path.join(dir, 'missing.log')}" all;\nlog "${file}" all;`, 200)
    expect(log?.text?.split('\n')[0]).toMatch(/^2026-11-29 .* line \d+$/)
    expect(log?.text).toContain('line 999')
    expect(log?.text?.length).toBeLessThanOrEqual(200)
  })

  it('says why when no log can be read', async () => {
    const log = await collectBirdLog('log "/nonexistent/bird.log" all;')
    expect(log?.error).toContain('/nonexistent/bird.log: ENOENT')
    expect(await collectBirdLog('log syslog all;')).toBeUndefined()
  })
})
