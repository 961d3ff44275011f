import {Args, Flags} from '@oclif/core'

import {BaseCommand, sourceFlags} from '../cli/base.js'

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
  static flags = {
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

  async run(): Promise<void> {
    const {argv, flags} = await this.parse(Fleet)
    this.jsonOutput = flags.json
    const {fleetReport} = await import('../services/fleet.js')
    const {report, text, exitCode} = await fleetReport({
      sources: argv as string[], calico: flags.calico, kube: flags.kube, pools: flags.pool, tunnelDev: flags['tunnel-dev'], html: flags.html,
      fixProtocol: flags.protocol, overlayTable: flags.table, jobs: flags.jobs,
      // on stderr, as bundle says what it wrote: stdout is the report (the JSON alone with --json)
      written: (file, bytes) => process.stderr.write(`wrote ${file} (${bytes} bytes)\n`),
    })
    if (flags.json)
      await this.streamJson(report) // a large fleet's report is no one string
    else this.print(text)
    process.exitCode = exitCode
  }
}
