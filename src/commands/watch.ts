import {BaseCommand} from '../cli/base.js'
import {watchFlags, watchOptions} from '../cli/flags.js'

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
  static flags = watchFlags

  async run(): Promise<void> {
    const {flags} = await this.parse(Watch)
    this.jsonOutput = flags.json
    const {runWatch} = await import('../agent/run.js')
    await runWatch(watchOptions(flags, this.config.version))
  }
}
