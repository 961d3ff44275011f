import {Args} from '@oclif/core'

import {BaseCommand, judged, sourceFlags, sourceOptions} from '../cli/base.js'
import {palette} from '../render/style.js'
import {renderExplain} from '../render/text.js'
import {explainExitCode, loadExplainReport} from '../services/explain.js'

export default class Explain extends BaseCommand {
  static summary = 'Why one prefix (or the prefix covering an address) is or is not reachable through the tunnel'
  static description =
    'Walks the chain BGP session → BIRD paths → next-hop resolution in the kernel FIB → kernel route → tunnel device, citing the input lines each step rests on, then lists the findings and the corrected route.\n' +
    'Exit status, as check\'s: 0 no finding of severity error, 1 findings of severity error, 2 bad input or usage.'
  static examples = [
    '<%= config.bin %> explain 192.168.110.128/26 --from examples/bird2-ecmp-not-tunneled',
    '<%= config.bin %> explain 192.168.110.130 --json',
  ]
  static args = {target: Args.string({description: 'PREFIX or ADDRESS', required: true})}
  static flags = {...sourceFlags}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Explain)
    this.jsonOutput = flags.json
    const report = await loadExplainReport(judged(sourceOptions(flags)), args.target, {citeRouteLines: true})
    if (flags.json) this.printJson(report)
    else this.print(renderExplain(report, palette()))
    process.exitCode = explainExitCode(report)
  }
}
