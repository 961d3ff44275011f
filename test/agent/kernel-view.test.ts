// KernelView.close: a read of the kernel's routes queued behind the one under way never starts after it, and the
// handlers hear nothing more. The notifications and the reads are replaced here (no socket is opened).
import {describe, expect, it, vi} from 'vitest'

vi.mock('../../src/netlink/events.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../src/netlink/events.js')>()),
  watchKernel: async () => ({close() {}}),
}))

const {KernelView} = await import('../../src/agent/kernel-view.js')

// the promise callbacks of a read's end run (a read started then would be counted)
const flush = () => new Promise((resolve) => setImmediate(resolve))

describe('KernelView', () => {
  it('starts no read again once closed, and calls no handler', async () => {
    const heard: string[] = []
    const view = new KernelView(252, {
      events: () => heard.push('events'),
      lost: () => heard.push('lost'),
      reread: () => heard.push('reread'),
      failed: () => heard.push('failed'),
    })
    const reads: Array<() => void> = []
    view.store.load = vi.fn(() => new Promise<Set<number>>((resolve) => reads.push(() => resolve(new Set()))))
    const starting = view.start()
    await vi.waitFor(() => expect(reads).toHaveLength(1))
    reads[0]()
    await starting
    view.reread() // under way
    view.reread() // queued behind it
    expect(reads).toHaveLength(2)
    heard.length = 0
    view.close()
    reads[1]()
    await flush()
    view.reread()
    await flush()
    expect(reads).toHaveLength(2)
    expect(heard).toEqual([])
  })
})
