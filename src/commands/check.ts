import {Flags} from '@oclif/core'

import {BaseCommand, judged, sourceFlags, sourceOptions} from '../cli/base.js'
import {npdUnknown} from '../render/npd.js'
import {loadCheckRun, npdCheck} from '../services/check.js'

export default class Check extends BaseCommand {
  static summary = 'Every prefix inside the tunnel pools, one line each, then host findings'
  static description =
    'Exit status: 0 no finding of severity error, 1 findings of severity error, 2 bad input or usage.'
  static examples = [
    '<%= config.bin %> check --from examples/bird2-ecmp-not-tunneled',
    '<%= config.bin %> check --bird-socket /var/run/calico/bird.ctl --pool 192.168.0.0/16=ipip --json',
  ]
  static flags = {
    ...sourceFlags,
    npd: Flags.boolean({
      description: 'node-problem-detector plugin: one line of at most 80 characters; exit 0 ok, 1 problem, 3 unknown',
      default: false,
      exclusive: ['json'],
    }),
  }

  async run(): Promise<void> {
    // node-problem-detector shows stdout only: with --npd a bad flag is its one line too (unknown, not exit 2)
    const parsed = await this.parse(Check).then((p) => ({flags: p.flags, source: judged(sourceOptions(p.flags))}))
      .catch((error: Error) => {
        if (this.argv.includes('--npd')) return npdUnknown(error)
        throw error
      })
    if (!('flags' in parsed)) {
      this.print(parsed.line)
      process.exitCode = parsed.exitCode
      return
    }
    const {flags, source} = parsed
    this.jsonOutput = flags.json
    if (flags.npd) {
      const {line, exitCode} = await npdCheck(source)
      this.print(line)
      process.exitCode = exitCode
    } else {
      process.exitCode = await this.writeCheck(await loadCheckRun(source, flags.json), flags.json)
    }
  }
}
