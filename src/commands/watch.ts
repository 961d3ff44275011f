import {Flags} from '@oclif/core'

import {BaseCommand, sourceFlags, sourceOptions} from '../cli/base.js'
import {
  DEFAULT_FIX_PROTOCOL_NUMBER, DEFAULT_JOURNAL_DIR, DEFAULT_OVERLAY_TABLE, DEFAULT_TUNNEL_DEV,
} from '../model/snapshot-index.js'

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

export default class Watch extends BaseCommand {
  static summary = 'Keep the diagnosis current: one line per change; --listen serves Prometheus metrics and health'
  static description =
    'Runs until SIGTERM or SIGINT. The kernel\'s route, link, address and rule notifications (rtnetlink) ' +
    'and a poll of BIRD\'s `show protocols all` every --interval seconds trigger a diagnosis of the prefixes a change ' +
    'touched (of the whole node when it touched everything); ' +
    'each change (a verdict, a finding, a BGP session, a source) is printed with its time.\n' +
    '--listen ADDR:PORT serves /metrics, /healthz, /readyz, and /report, /explain?prefix= and /state ' +
    'to loopback clients or with the bearer token of --token-file.'
  static examples = [
    '<%= config.bin %> watch --bird-socket /var/run/calico/bird.ctl --pool 192.168.0.0/16',
    '<%= config.bin %> watch --listen 0.0.0.0:21179 --token-file /etc/routedoctor/token --json',
  ]
  static flags = {
    ...liveSourceFlags,
    interval: Flags.string({description: 'seconds between polls of BIRD\'s socket', default: '5', helpValue: 'SECONDS'}),
    listen: Flags.string({description: 'serve /metrics, /healthz, /readyz, /report, /explain (default port 21179)', helpValue: 'ADDR:PORT'}),
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
    'journal-dir': Flags.string({
      description: 'with --reconcile: where each write\'s journal goes',
      default: DEFAULT_JOURNAL_DIR,
      helpValue: 'DIR',
    }),
    'cleanup-on-exit': Flags.boolean({
      description: 'with --reconcile: withdraw what this run wrote when it stops',
      default: false,
    }),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Watch)
    this.jsonOutput = flags.json
    const {runWatch} = await import('../agent/run.js')
    await runWatch({
      source: sourceOptions(flags),
      json: flags.json,
      interval: flags.interval,
      listen: flags.listen,
      tokenFile: flags['token-file'],
      flapCount: flags['flap-count'],
      flapWindow: flags['flap-window'],
      fixProtocol: flags.protocol,
      version: this.config.version,
      reconcile: flags.reconcile,
      settle: flags.settle,
      writeInterval: flags['write-interval'],
      journalDir: flags['journal-dir'],
      cleanupOnExit: flags['cleanup-on-exit'],
    })
  }
}
