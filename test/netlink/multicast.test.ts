// openMulticastSocket: a subscription that fails (here a group the kernel has not: 0) closes the socket it opened
// before saying so. Counted by this process's open socket descriptors (/proc/self/fd).
import {readdirSync, readlinkSync} from 'node:fs'

import {describe, expect, it} from 'vitest'

import {openMulticastSocket} from '../../src/netlink/client.js'

const sockets = (): number =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith('socket:')
    } catch {
      return false // the directory's own descriptor, gone by now
    }
  }).length

describe.skipIf(process.platform !== 'linux')('openMulticastSocket', () => {
  it('closes its socket when a subscription fails', async () => {
    const open = await openMulticastSocket([1], () => undefined, () => undefined)
    open.close() // the module and its native binding loaded: only the socket counts from here
    const before = sockets()
    await expect(openMulticastSocket([1, 0], () => undefined, () => undefined)).rejects.toThrow(
      /cannot subscribe to rtnetlink notifications/,
    )
    expect(sockets()).toBe(before)
  })
})
