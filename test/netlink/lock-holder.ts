// Runs in a pid namespace of its own (`unshare --pid --fork --mount-proc node --import tsx lock-holder.ts DIR`): takes
// the apply lock in DIR (or prints why not), then on a stdin line "release" releases it; "crash" exits holding it.
import {createInterface} from 'node:readline'

import {acquireLock} from '../../src/netlink/lock.js'
import {RouteDoctorError} from '../../src/model/errors.js'

let release: (() => void) | undefined
try {
  release = acquireLock(process.argv[2])
  console.log(JSON.stringify({held: true, pid: process.pid}))
} catch (error) {
  if (!(error instanceof RouteDoctorError)) throw error
  console.log(JSON.stringify({held: false, message: error.message}))
  process.exit(0)
}
for await (const line of createInterface({input: process.stdin})) {
  if (line === 'release') release?.()
  process.exit(0)
}
