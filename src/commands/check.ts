import {BaseCommand, sourceFlags, sourceOptions} from '../cli/base.js'
import {loadCheckContext} from '../services/load.js'
import {checkRun} from '../services/report.js'

export default class Check extends BaseCommand {
  static summary = 'Every prefix inside the tunnel pools, one line each, then host findings'
  static description = 'Exit status: 0 no finding of severity error, 1 findings of severity error, 2 bad input or usage.'
  static examples = ['<%= config.bin %> check --from examples/bird2-ecmp-not-tunneled', '<%= config.bin %> check --bird-socket /var/run/calico/bird.ctl --pool 192.168.0.0/16=ipip --json']
  static flags = {...sourceFlags}

  async run(): Promise<void> {
    const {flags} = await this.parse(Check)
    this.jsonOutput = flags.json
    // the text report shows verdicts and finding ids: no evidence, texts or plans are made for it
    const detail = flags.json
    const ctx = await loadCheckContext(sourceOptions(flags), {evidence: detail, texts: detail})
    process.exitCode = await this.writeCheck(checkRun(ctx, {plans: detail}), flags.json)
  }
}
