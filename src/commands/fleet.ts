import {Args} from '@oclif/core'

import {BaseCommand} from '../cli/base.js'
import {fleetFlags, fleetOptions} from '../cli/flags.js'

export default class Fleet extends BaseCommand {
  static summary = 'Many nodes at once: one bundle or snapshot directory per node, joined with Calico\'s truth'
  static description = 'A node × node matrix (from each node, the worst verdict of the other node\'s blocks) ' +
    'and the cluster findings no single node can see.\n' +
    'Exit status: 0 every pair ok, 1 a pair broken or a cluster finding of severity error, 2 bad input or usage.'
  static examples = [
    '<%= config.bin %> fleet n1.tar.gz n2.tar.gz n3.tar.gz',
    '<%= config.bin %> fleet --calico calico/ bundles/*.tar.gz --html fleet.html',
  ]
  static strict = false
  static args = {
    sources: Args.string({description: 'bundles (.tar.gz) or snapshot directories, one per node', required: true}),
  }
  static flags = fleetFlags

  async run(): Promise<void> {
    const {argv, flags} = await this.parse(Fleet)
    this.jsonOutput = flags.json
    const {fleetReport} = await import('../services/fleet.js')
    const {report, text, exitCode} = await fleetReport(fleetOptions(flags, argv as string[]))
    if (flags.json)
      await this.streamJson(report) // a large fleet's report is no one string
    else this.print(text)
    process.exitCode = exitCode
  }
}
