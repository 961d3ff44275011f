// `fix`'s flags (DESIGN §2), beside the source flags every command takes (--protocol and --table among them).
import {Flags} from '@oclif/core'

import {DEFAULT_JOURNAL_DIR, DEFAULT_RULE_PRIORITY, DEFAULT_WATCH_SECONDS} from '../model/snapshot-index.js'
import {sourceFlags} from './base.js'

// commands check a duration flag as watch does
export {parseSeconds} from '../model/seconds.js'

export const fixFlags = {
  ...sourceFlags,
  apply: Flags.boolean({
    description: 'program the planned routes through rtnetlink (needs CAP_NET_ADMIN)',
    default: false,
  }),
  revert: Flags.string({description: 'undo an apply from its journal', helpValue: 'JOURNAL'}),
  yes: Flags.boolean({char: 'y', description: 'do not ask; required to write when there is no TTY', default: false}),
  'bird-config': Flags.boolean({description: 'print the durable BIRD kernel filter for this node\'s BIRD version', default: false}),
  'rule-priority': Flags.integer({
    description: 'priority of the overlay\'s `ip rule to POOL lookup TABLE` (1-32765: before main\'s 32766)',
    default: DEFAULT_RULE_PRIORITY, helpValue: 'PRIORITY',
  }),
  'journal-dir': Flags.string({description: 'where journals (and the apply lock) are written', default: DEFAULT_JOURNAL_DIR, helpValue: 'DIR'}),
  watch: Flags.integer({
    description: 'seconds to watch for a route war after writing',
    default: DEFAULT_WATCH_SECONDS, min: 0, helpValue: 'SECONDS',
  }),
}
