import {BaseCommand, sourceFlags, sourceOptions} from '../cli/base.js'
import {loadCheckRun} from '../services/load.js'

export default class Check extends BaseCommand {
  static summary = 'Every prefix inside the tunnel pools, one line each, then host findings'
  static description = 'Exit status: 0 no finding of severity error, 1 findings of severity error, 2 bad input or usage.'
  static examples = ['<%= config.bin %> check --from examples/bird2-ecmp-not-tunneled', '<%= config.bin %> check --bird-socket /var/run/calico/bird.ctl --pool 192.168.0.0/16=ipip --json']
  static flags = {...sourceFlags}

  async run(): Promise<void> {
    const {flags} = await this.parse(Check)
    this.jsonOutput = flags.json
    process.exitCode = await this.writeCheck(await loadCheckRun(sourceOptions(flags), flags.json), flags.json)
  }
}
