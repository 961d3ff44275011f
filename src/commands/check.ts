import {Errors, Flags} from '@oclif/core'

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
    const {flags} = await this.parse(Check)
    this.jsonOutput = flags.json
    const source = judged(sourceOptions(flags))
    if (flags.npd) {
      const {line, exitCode} = await npdCheck(source)
      this.print(line)
      process.exitCode = exitCode
    } else {
      process.exitCode = await this.writeCheck(await loadCheckRun(source, flags.json), flags.json)
    }
  }

  // node-problem-detector reads stdout only: with --npd a failure (a bad flag too) is its one line, unknown, not exit 2
  async catch(error: Error & {exitCode?: number; oclif?: {exit?: number}; code?: string}): Promise<void> {
    if (!this.argv.includes('--npd') || error instanceof Errors.ExitError) return super.catch(error)
    const {line, exitCode} = npdUnknown(error)
    this.print(line)
    process.exitCode = exitCode
  }
}
