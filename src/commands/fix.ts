import {Args} from '@oclif/core'

import {BaseCommand} from '../cli/base.js'
import {fixFlags, fixRequest} from '../cli/flags.js'
import type {FixShown} from '../services/fix.js'

export default class Fix extends BaseCommand {
  static summary = 'Plan the corrected tunnel routes; --apply programs them through rtnetlink'
  static description = `Dry run by default: per prefix the current route, the planned one, and the \`ip route replace|del\` and \`ip rule\` lines a person could paste.
Corrections live in an overlay table BIRD never learns from (--table), reached by one \`ip rule to POOL lookup TABLE\` per IP-in-IP pool (--rule-priority).
--apply writes them (journal first, read back, watch for a route war, restore on any failure); --revert JOURNAL undoes an apply.
--bird-config prints the durable fix: the BIRD kernel export filter for the pools found (BIRD 2.0.12+, 3.2+).`
  static examples = [
    '<%= config.bin %> fix --from examples/bird2-ecmp-not-tunneled',
    '<%= config.bin %> fix --apply --yes',
    '<%= config.bin %> fix --revert /var/lib/routedoctor/routedoctor-journal-20261129T175501Z-4242.json --yes',
    '<%= config.bin %> fix --bird-config',
  ]
  static args = {prefix: Args.string({description: 'only this prefix', required: false})}
  static flags = fixFlags

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Fix)
    this.jsonOutput = flags.json
    // only this command needs them: not at start-up
    const [{fixCommand}, {confirm}] = await Promise.all([import('../services/fix.js'), import('../cli/confirm.js')])
    await fixCommand(fixRequest(flags, args.prefix), {
      confirm: (question) => confirm(question, flags.yes),
      show: (shown) => this.show(shown),
    })
  }

  private async show(shown: FixShown): Promise<void> {
    if (shown.json) await this.streamJson(shown.json)
    else if (shown.text !== undefined) this.print(shown.text)
    process.exitCode = shown.exitCode
  }
}
