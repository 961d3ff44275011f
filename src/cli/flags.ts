// The flags of fix, watch, fleet, bundle and ui (DESIGN §2) beside the source flags every command takes, and the
// mapping of each command's parsed flags to its service's options.
import {Flags, type Interfaces} from '@oclif/core'

import {
  DEFAULT_FIX_PROTOCOL_NUMBER, DEFAULT_JOURNAL_DIR, DEFAULT_OVERLAY_TABLE, DEFAULT_RULE_PRIORITY, DEFAULT_TUNNEL_DEV,
  DEFAULT_WATCH_SECONDS,
} from '../model/snapshot-index.js'
import type {RunWatchOptions} from '../agent/run.js'
import type {BundleOptions} from '../services/bundle.js'
import type {FleetOptions} from '../services/fleet.js'
import type {FixCommandRequest} from '../services/fix.js'
import {sourceFlags, sourceOptions} from './base.js'
import {checkOverlayTable} from '../snapshot/build.js'

// commands check a duration flag as watch does
export {parseSeconds} from '../model/seconds.js'

// fix's and watch --reconcile's: one meaning. Not given, a pool's rule already there stays at its priority.
const rulePriorityFlag = Flags.integer({
  description: 'priority of the overlay\'s `ip rule to POOL lookup TABLE` (1-32765: before main\'s 32766); given, ' +
    `a pool's rule at another priority moves here; not given, one before main's stays there [default: ${DEFAULT_RULE_PRIORITY}]`,
  helpValue: 'PRIORITY',
})

// watch's and ui's: how old Calico's truth may grow before it is read again (the whole cluster's IPAM, per node)
const truthIntervalFlag = (when: string) => Flags.string({
  description: `with --kube or --calico: seconds between reads of Calico's truth ${when}`,
  default: '300',
  helpValue: 'SECONDS',
})

export const fixFlags = {
  ...sourceFlags,
  apply: Flags.boolean({
    description: 'program the planned routes through rtnetlink (needs CAP_NET_ADMIN)',
    default: false,
  }),
  revert: Flags.string({description: 'undo an apply from its journal', helpValue: 'JOURNAL'}),
  yes: Flags.boolean({char: 'y', description: 'do not ask; required to write when there is no TTY', default: false}),
  'bird-config': Flags.boolean({description: 'print the durable BIRD kernel filter for this node\'s BIRD version', default: false}),
  'rule-priority': rulePriorityFlag,
  'journal-dir': Flags.string({description: 'where journals (and the apply lock) are written', default: DEFAULT_JOURNAL_DIR, helpValue: 'DIR'}),
  watch: Flags.integer({
    description: 'seconds to watch for a route war after writing',
    default: DEFAULT_WATCH_SECONDS, min: 0, helpValue: 'SECONDS',
  }),
}

export function fixRequest(flags: Interfaces.InferredFlags<typeof fixFlags>, prefix?: string): FixCommandRequest {
  return {
    source: flags.revert ? {} : sourceOptions(flags), // --revert reads its journal only
    revert: flags.revert,
    prefix,
    apply: flags.apply,
    birdConfig: flags['bird-config'],
    json: flags.json,
    fixProtocol: flags.protocol,
    table: flags.table,
    rulePriority: flags['rule-priority'],
    journalDir: flags['journal-dir'],
    watchSeconds: flags.watch,
  }
}

// watch diagnoses the live node only: --from is not offered, only kept to be refused with a hint (agent/run.ts)
const liveSourceFlags = {
  ...sourceFlags, from: Flags.string({hidden: true}),
  protocol: Flags.integer({
    description: `protocol number routedoctor's routes carry [default: ${DEFAULT_FIX_PROTOCOL_NUMBER}]`,
    min: 1, max: 255, helpValue: 'NUMBER',
  }),
  table: Flags.integer({description: `the overlay table routedoctor's routes live in [default: ${DEFAULT_OVERLAY_TABLE}]`,
    helpValue: 'TABLE'}),
  'tunnel-dev': Flags.string({description: `the tunnel device [default: ${DEFAULT_TUNNEL_DEV}]`, helpValue: 'NAME'}),
}

export const watchFlags = {
  ...liveSourceFlags,
  interval: Flags.string({description: 'seconds between polls of BIRD\'s socket', default: '5', helpValue: 'SECONDS'}),
  'truth-interval': truthIntervalFlag('(sooner when a block turns misrouted or missing, or after a failed read)'),
  listen: Flags.string({
    description: 'serve /metrics, /healthz, /readyz, /report, /explain at ADDR:PORT, [ADDR]:PORT (either family) or :PORT ' +
      '(default port 21179)',
    helpValue: 'ADDR:PORT',
  }),
  'token-file': Flags.string({description: 'bearer token /report and /explain require from non-loopback clients', helpValue: 'FILE'}),
  'flap-count': Flags.integer({
    description: 'a verdict or session changing more than this often within --flap-window is flapping',
    default: 3, min: 1, helpValue: 'COUNT',
  }),
  'flap-window': Flags.string({description: 'seconds', default: '600', helpValue: 'SECONDS'}),
  reconcile: Flags.boolean({
    description: 'keep routedoctor\'s own routes equal to the fix plan (needs CAP_NET_ADMIN)',
    default: false,
  }),
  settle: Flags.string({
    description: 'with --reconcile: seconds a plan must hold before it is written',
    default: '10',
    helpValue: 'SECONDS',
  }),
  'write-interval': Flags.string({
    description: 'with --reconcile: least seconds between two writes',
    default: '30',
    helpValue: 'SECONDS',
  }),
  'rule-priority': rulePriorityFlag,
  'journal-dir': Flags.string({
    description: 'with --reconcile: where each write\'s journal goes',
    default: DEFAULT_JOURNAL_DIR,
    helpValue: 'DIR',
  }),
  'journal-keep': Flags.integer({
    description: 'with --reconcile: the newest journals kept in --journal-dir; older ones are removed after each write ' +
      '(never one an apply left unfinished or failed, nor, with --cleanup-on-exit, one of this run)',
    default: 100, min: 1, helpValue: 'COUNT',
  }),
  'cleanup-on-exit': Flags.boolean({
    description: 'with --reconcile: withdraw what this run wrote when it stops',
    default: false,
  }),
}

export function watchOptions(flags: Interfaces.InferredFlags<typeof watchFlags>, version: string): RunWatchOptions {
  return {
    source: sourceOptions(flags),
    json: flags.json,
    interval: flags.interval,
    truthInterval: flags['truth-interval'],
    listen: flags.listen,
    tokenFile: flags['token-file'],
    flapCount: flags['flap-count'],
    flapWindow: flags['flap-window'],
    fixProtocol: flags.protocol,
    version,
    reconcile: flags.reconcile,
    settle: flags.settle,
    writeInterval: flags['write-interval'],
    rulePriority: flags['rule-priority'],
    journalDir: flags['journal-dir'],
    journalKeep: flags['journal-keep'],
    cleanupOnExit: flags['cleanup-on-exit'],
  }
}

export const fleetFlags = {
  calico: sourceFlags.calico,
  kube: sourceFlags.kube,
  pool: sourceFlags.pool,
  'tunnel-dev': sourceFlags['tunnel-dev'],
  json: sourceFlags.json,
  protocol: sourceFlags.protocol,
  table: sourceFlags.table,
  html: Flags.string({description: 'also write the report as one self-contained HTML page', helpValue: 'FILE'}),
  jobs: Flags.integer({
    description: 'nodes loaded and diagnosed at once, each in a worker thread [default: the number of CPUs]', min: 1, helpValue: 'N',
  }),
}

export function fleetOptions(
  flags: Interfaces.InferredFlags<typeof fleetFlags>,
  sources: string[],
): FleetOptions & {html?: string; written: (file: string, bytes: number) => void} {
  return {
    sources, calico: flags.calico, kube: flags.kube, pools: flags.pool, tunnelDev: flags['tunnel-dev'], html: flags.html,
    fixProtocol: flags.protocol, jobs: flags.jobs,
    overlayTable: checkOverlayTable(flags.table),
    // on stderr, as bundle says what it wrote: stdout is the report (the JSON alone with --json)
    written: (file, bytes) => process.stderr.write(`wrote ${file} (${bytes} bytes)\n`),
  }
}

export const bundleFlags = {
  ...sourceFlags,
  output: Flags.string({
    char: 'o',
    description: 'bundle file (.tar.gz) or directory; default routedoctor-HOST-YYYYMMDD-HHMMSS.tar.gz here',
    helpValue: 'FILE|DIR',
  }),
  force: Flags.boolean({description: 'overwrite the bundle file if it exists (refused otherwise)', default: false}),
  redact: Flags.boolean({
    description: 'pseudonymise addresses, host names and MACs consistently across every file',
    default: false,
  }),
  'mapping-file': Flags.string({
    description: 'with --redact: keep the pseudonym mapping in this local file (never in the bundle)',
    helpValue: 'FILE',
  }),
}

export function bundleOptions(
  flags: Interfaces.InferredFlags<typeof bundleFlags>,
  argv: string[],
  toolVersion: string,
): BundleOptions {
  return {
    ...sourceOptions(flags), out: flags.output, force: flags.force, redact: flags.redact, mappingFile: flags['mapping-file'],
    command: ['bundle', ...argv], toolVersion,
    progress: (line) => process.stderr.write(`${line}\n`),
  }
}

export const uiFlags = {
  ...sourceFlags,
  interval: Flags.string({description: 'live: seconds between refreshes (as watch --interval)', default: '5',
    helpValue: 'SECONDS'}),
  'truth-interval': truthIntervalFlag('(a refresh reads it again once it is this old, `r` at once; as watch --truth-interval)'),
}
