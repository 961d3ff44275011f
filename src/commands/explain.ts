import {Args} from '@oclif/core'

import {BaseCommand, judged, sourceFlags, sourceOptions} from '../cli/base.js'
import {Context} from '../model/context.js'
import {loadExplainSnapshot, ownRoutes} from '../services/load.js'
import {explainReport} from '../report/report.js'
import {palette} from '../render/style.js'
import {renderExplain} from '../render/text.js'

export default class Explain extends BaseCommand {
  static summary = 'Why one prefix (or the prefix covering an address) is or is not reachable through the tunnel'
  static description = 'Walks the chain BGP session → BIRD paths → next-hop resolution in the kernel FIB → kernel route → tunnel device, citing the input lines each step rests on, then lists the findings and the corrected route.\n' +
    'Exit status, as check\'s: 0 no finding of severity error, 1 findings of severity error, 2 bad input or usage.'
  static examples = ['<%= config.bin %> explain 192.168.110.128/26 --from examples/bird2-ecmp-not-tunneled', '<%= config.bin %> explain 192.168.110.130 --json']
  static args = {target: Args.string({description: 'PREFIX or ADDRESS', required: true})}
  static flags = {...sourceFlags}

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Explain)
    this.jsonOutput = flags.json
    // routes are cited by their line in the text route dump, or their element in the JSON one
    const source = judged(sourceOptions(flags))
    const snapshot = await loadExplainSnapshot({...source, routeTextToo: true}, args.target)
    const report = explainReport(new Context(snapshot, {...ownRoutes(source), kernelLines: true}), args.target)
    if (flags.json) this.printJson(report)
    else this.print(renderExplain(report, palette()))
    process.exitCode = report.findings.some((f) => f.severity === 'error') ? 1 : 0
  }
}
