// The benches' memory hook (src/runtime/memory-report.ts): installed only when ROUTEDOCTOR_MEMORY_REPORT is set; then
// SIGUSR2 writes one JSON line with the process's memory before and after a full collection.
import {afterEach, describe, expect, it, vi} from 'vitest'

import {reportMemoryOnSignal} from '../../src/runtime/memory-report.js'

describe('reportMemoryOnSignal', () => {
  afterEach(() => {
    process.removeAllListeners('SIGUSR2')
    vi.unstubAllEnvs()
    vi.restoreAllMocks()
  })

  it('does nothing without ROUTEDOCTOR_MEMORY_REPORT', () => {
    vi.stubEnv('ROUTEDOCTOR_MEMORY_REPORT', '')
    reportMemoryOnSignal()
    expect(process.listenerCount('SIGUSR2')).toBe(0)
  })

  it('writes the memory before and after a full collection on SIGUSR2', () => {
    vi.stubEnv('ROUTEDOCTOR_MEMORY_REPORT', '1')
    const written: string[] = []
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk))
      return true
    })
    reportMemoryOnSignal()
    process.emit('SIGUSR2', 'SIGUSR2')
    expect(written).toHaveLength(1)
    const {memory} = JSON.parse(written[0])
    for (const m of [memory.before, memory.after]) {
      expect(m.rss).toBeGreaterThan(0)
      expect(m.heapUsed).toBeGreaterThan(0)
      expect(m.spaces.new_space).toBeGreaterThan(0)
    }
  })
})
