import {Flags} from '@oclif/core'

import {BaseCommand, judged, sourceFlags, sourceOptions} from '../cli/base.js'
import {loadCheckRun} from '../services/load.js'

export default class Check extends BaseCommand {
  static summary = 'Every prefix inside the tunnel pools, one line each, then host findings'
  static description = 'Exit status: 0 no finding of severity error, 1 findings of severity error, 2 bad input or usage.'
  static examples = ['<%= config.bin %> check --from examples/bird2-ecmp-not-tunneled', '<%= config.bin %> check --bird-socket /var/run/calico/bird.ctl --pool 192.168.0.0/16=ipip --json']
  static flags = {
    ...sourceFlags,
    npd: Flags.boolean({description: 'node-problem-detector plugin: one line of at most 80 characters; exit 0 ok, 1 problem, 3 unknown', default: false, exclusive: ['json']}),
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Check)
    this.jsonOutput = flags.json
    if (flags.npd) {
      const {npdResult, npdUnknown} = await import('../render/npd.js')
      // node-problem-detector shows stdout only: an input error is its Unknown, in one line there too
      const {line, exitCode} = await loadCheckRun(judged(sourceOptions(flags)), false).then(npdResult, npdUnknown)
      this.print(line)
      process.exitCode = exitCode
      return
    }
    process.exitCode = await this.writeCheck(await loadCheckRun(judged(sourceOptions(flags)), flags.json), flags.json)
  }
}
