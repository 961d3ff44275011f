import {BaseCommand, sourceFlags, sourceOptions} from '../cli/base.js'
import {Context} from '../model/context.js'
import {loadSnapshot} from '../services/load.js'
import {checkRun} from '../services/report.js'
import {palette} from '../render/style.js'
import {renderCheckLines} from '../render/text.js'

export default class Check extends BaseCommand {
  static summary = 'Every prefix inside the tunnel pools, one line each, then host findings'
  static description = 'Exit status: 0 no finding of severity error, 1 findings of severity error, 2 bad input or usage.'
  static examples = ['<%= config.bin %> check --from examples/bird2-ecmp-not-tunneled', '<%= config.bin %> check --bird-socket /var/run/calico/bird.ctl --pool 192.168.0.0/16=ipip --json']
  static flags = {...sourceFlags}

  async run(): Promise<void> {
    const {flags} = await this.parse(Check)
    this.jsonOutput = flags.json
    // each prefix is diagnosed as it is written: a full table's findings are never all in memory
    const run = checkRun(new Context(await loadSnapshot(sourceOptions(flags))))
    if (flags.json) await this.streamJson({schema: run.schema, node: run.node, prefixes: run.prefixes, host: run.host, summary: run.summary})
    else await this.streamLines(renderCheckLines(run, palette()))
    process.exitCode = run.summary().exitCode
  }
}
